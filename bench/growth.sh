#!/usr/bin/env bash
# How each operator's cost grows with the number of Applications: for each count in POINTS,
# opsdk's and kubebuilder's managers each against a fresh control plane, and the API server
# alone (the floor) for the same children. One Application per namespace, as in bench/run.sh.
#
#   bench/run.sh && bench/growth.sh
#
# Uses what bench/run.sh built and scaffolded under ~/.cache/opsdk/bench/work (the two managers,
# the CRDs, the harness), so both runs measure the same binaries. Writes
# bench/results/growth-<date>.json and .md, bench/results/growth.svg and the `growth` key of
# bench/results/latest.json. About 25 minutes on 2 cores.
#
# Knobs (environment): POINTS ("250 1000 4000"), STEADY_S (30).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OPSDK_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/bench}
WORK=$CACHE/work
POINTS=${POINTS:-250 1000 4000}
STEADY_S=${STEADY_S:-30}
HARNESS_TARGET=$CACHE/harness-target
RESULTS=$ROOT/bench/results
GROWTH=$WORK/growth

for f in "$WORK/bin/opsdk-manager" "$WORK/bin/kubebuilder-manager" "$WORK/opsdk-commit" \
  "$WORK/opsdk-project/config/crd/bases" "$WORK/kb-project/config/crd/bases"; do
  [ -e "$f" ] || { echo "error: $f is missing" >&2; echo "help: run bench/run.sh first" >&2; exit 1; }
done
for tool in cargo jq; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required" >&2; exit 1; }
done
START_S=$(date +%s)
say() { printf '[%4ds] %s\n' $(($(date +%s) - START_S)) "$*" >&2; }
rm -rf "$GROWTH"
mkdir -p "$GROWTH" "$RESULTS"
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
KUBEBUILDER_ASSETS=$("$ROOT/hack/k8s-assets.sh" | tail -n 1)
export KUBEBUILDER_ASSETS
CARGO_TARGET_DIR="$HARNESS_TARGET" cargo build --quiet --release --manifest-path "$ROOT/bench/harness/Cargo.toml"
HARNESS=$HARNESS_TARGET/release/opsdk-bench-harness

harness() { # NAME FLAGS...
  local name=$1
  shift
  "$HARNESS" "$@" --out="$GROWTH/$name.json" --logs="$GROWTH/logs-$name" >"$GROWTH/$name.log" 2>&1 || {
    echo "error: $name failed; tail of $GROWTH/$name.log:" >&2
    tail -n 30 "$GROWTH/$name.log" >&2
    exit 1
  }
  rm -f "$GROWTH/logs-$name/audit.log"
}
for n in $POINTS; do
  say "$n Applications: opsdk"
  harness "opsdk-$n" --flavor=opsdk --manager="$WORK/bin/opsdk-manager" \
    --crds="$WORK/opsdk-project/config/crd/bases" --group=minetto.dev --apps="$n" --steady="$STEADY_S"
  say "$n Applications: kubebuilder"
  harness "kubebuilder-$n" --flavor=kubebuilder --manager="$WORK/bin/kubebuilder-manager" \
    --crds="$WORK/kb-project/config/crd/bases" --group=apps.minetto.dev --apps="$n" --steady="$STEADY_S"
  say "$n Applications: the API server alone"
  harness "floor-$n" --flavor=floor --apps="$n"
done

# One point per operator and count, with the floor of that count.
points='[]'
for n in $POINTS; do
  for op in opsdk kubebuilder; do
    points=$(jq -c --slurpfile r "$GROWTH/$op-$n.json" --slurpfile f "$GROWTH/floor-$n.json" \
      --arg op "$op" --argjson n "$n" '. + [($r[0]) as $r | {
        applications: $n, operator: $op, converge_s: $r.converge_s,
        floor_s: $f[0].deployments_plus_nodeport_services_s,
        converge_over_floor: (($r.converge_s / $f[0].deployments_plus_nodeport_services_s * 100 | round) / 100),
        rss_mb: $r.rss_1000_mb, rss_anon_mb: $r.rss_anon_1000_mb, rss_peak_mb: $r.rss_peak_mb,
        cpu_s: $r.cpu_s, requests_per_app: $r.requests_per_app, gets_per_app: $r.gets_per_app,
        steady_state_requests_60s: $r.steady_state_requests_60s,
        apiserver_cpu_s: $r.control_plane_cpu_s_from_create_to_end["kube-apiserver"],
        other_processes_cpu_s: $r.other_processes_cpu_s_from_create_to_end}]' <<<"$points")
  done
done
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
MACHINE="$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo) GiB, Linux $(uname -r)"
growth=$(jq -n --argjson points "$points" --arg date "$DATE" --arg machine "$MACHINE" \
  --arg commit "$(cat "$WORK/opsdk-commit")" --arg load "$LOADAVG" --argjson steady "$STEADY_S" \
  '{date: $date, machine: $machine, opsdk_commit: $commit, points: $points,
    notes: ["load average at start: \($load)",
            "one Application per namespace; each operator and the floor on its own fresh control plane (etcd, kube-apiserver, kube-controller-manager, NodePort range widened to 20000-32767 so that 4,000 NodePort Services fit); steady window \($steady) s; figures as in latest.json: converge_s from the first create to every child right, floor_s the API server alone creating the same Deployments and NodePort Services, rss_mb VmRSS after the steady window, cpu_s the manager'"'"'s whole run"]}')
echo "$growth" >"$RESULTS/growth-${DATE%%T*}.json"
"$HARNESS_TARGET/release/growth-chart" "$RESULTS/growth-${DATE%%T*}.json" "$RESULTS/growth.svg"
jq -r '"# Growth: opsdk and kubebuilder operators by number of Applications (\(.date))", "",
  "Machine: \(.machine). opsdk \(.opsdk_commit), kubebuilder v4.16.0. Produced by `bench/growth.sh`; chart: `growth.svg`; every figure in the JSON of the same date. \(.notes | join(". "))", "",
  "| Applications | operator | converge s | floor s | converge / floor | RSS MB | anon RSS MB | CPU s | requests / app | API server CPU s | other processes'"'"' CPU s |",
  "|---|---|---|---|---|---|---|---|---|---|---|",
  (.points[] | "| \(.applications) | \(.operator) | \(.converge_s) | \(.floor_s) | \(.converge_over_floor) | \(.rss_mb) | \(.rss_anon_mb) | \(.cpu_s) | \(.requests_per_app) | \(.apiserver_cpu_s) | \(.other_processes_cpu_s) |")' \
  "$RESULTS/growth-${DATE%%T*}.json" >"$RESULTS/growth-${DATE%%T*}.md"
jq --argjson g "$growth" '.growth = $g.points | .growth_meta = ($g | del(.points))' \
  "$RESULTS/latest.json" >"$GROWTH/latest.json"
mv "$GROWTH/latest.json" "$RESULTS/latest.json"
jq -r '.points[] | [.applications, .operator, .converge_s, .floor_s, .converge_over_floor, .rss_mb, .cpu_s, .requests_per_app] | @tsv' \
  "$RESULTS/growth-${DATE%%T*}.json" | column -t -N apps,operator,converge_s,floor_s,ratio,rss_mb,cpu_s,req/app
say "done: bench/results/growth-${DATE%%T*}.json, bench/results/growth.svg, latest.json .growth"
