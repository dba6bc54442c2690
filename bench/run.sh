#!/usr/bin/env bash
# opsdk beside kubebuilder: scaffolding, the generated project's build, and the operator on a
# real control plane (etcd, kube-apiserver, kube-controller-manager). Not part of CI.
#
#   bench/run.sh
#
# Prints a table and writes bench/results/<date>.md and bench/results/latest.json. Everything
# it builds or scaffolds lives under ~/.cache/opsdk/bench (OPSDK_BENCH_CACHE), outside the repo:
# kubebuilder (go install from the Go module proxy), the bench harness, target dirs, a GOCACHE,
# the scaffolded projects and their logs (work/logs). Needs cargo, go, make, jq; the control
# plane comes from hack/k8s-assets.sh (cached; a cold build takes about 10 minutes).
#
# Knobs (environment): SCAFFOLD_RUNS (10), APPS (1000), STEADY_S (60), CONVERGE_RUNS (3),
# SKIP_RELEASE_INCREMENTAL=1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OPSDK_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/bench}
KB_VERSION=v4.16.0
SCAFFOLD_RUNS=${SCAFFOLD_RUNS:-10}
APPS=${APPS:-1000}
STEADY_S=${STEADY_S:-60}
CONVERGE_RUNS=${CONVERGE_RUNS:-3}
DOMAIN=minetto.dev
REPO=github.com/eminetto/k8s-operator-talk
# kubebuilder's deploy-image controller names its finalizer "<group>.<domain>/finalizer"; with an
# empty group that is ".minetto.dev/finalizer", which the apiserver rejects, so it gets a group.
KB_GROUP=apps
WORK=$CACHE/work
LOGS=$WORK/logs
RESULTS=$ROOT/bench/results

for tool in cargo go make jq git; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required" >&2; exit 1; }
done

# The generated release profile is incremental; CARGO_INCREMENTAL=0 would override it.
unset CARGO_INCREMENTAL
START_S=$(date +%s)
now_ms() { date +%s%3N; }
say() { printf '[%4ds] %s\n' $(($(date +%s) - START_S)) "$*" >&2; }
# step NAME CMD...: runs CMD with its output in $LOGS/NAME.log, records its wall time.
declare -A STEP_S
step() {
  local name=$1 t0 rc=0
  shift
  t0=$(now_ms)
  "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
  STEP_S[$name]=$(( ($(now_ms) - t0) / 1000 ))
  if [ "$rc" -ne 0 ]; then
    echo "error: step $name failed (exit $rc); tail of $LOGS/$name.log:" >&2
    tail -n 30 "$LOGS/$name.log" >&2
    exit "$rc"
  fi
}
# timed CMD...: prints CMD's wall time in ms (rounded); CMD's output goes to $LOGS/timed.log.
# The clock is bash's EPOCHREALTIME: a `date` process inside the interval would add a fork and an
# exec (1-2 ms) to every figure.
timed() {
  local t0 t1
  t0=${EPOCHREALTIME//[!0-9]/}
  "$@" >>"$LOGS/timed.log" 2>&1
  t1=${EPOCHREALTIME//[!0-9]/}
  echo $(((t1 - t0 + 500) / 1000))
}
# stats N...: "median min max" of integers.
stats() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m, a[1], a[NR]}'
}
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
rm -rf "$WORK"
mkdir -p "$LOGS" "$RESULTS"
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average at start: $LOADAVG"

# ---------------------------------------------------------------------------------------------
say "building opsdk (release), the control plane, kubebuilder $KB_VERSION and the harness"
step build-opsdk cargo build --release --manifest-path "$ROOT/Cargo.toml"
OPSDK=$ROOT/target/release/opsdk
# The commit measured; -dirty when src/ or templates/ had uncommitted changes at build time.
OPSDK_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD)
[ -z "$(git -C "$ROOT" status --porcelain -- src templates Cargo.toml Cargo.lock)" ] || OPSDK_COMMIT+=-dirty
echo "$OPSDK_COMMIT" >"$WORK/opsdk-commit"
step k8s-assets "$ROOT/hack/k8s-assets.sh"
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(tail -n 1 "$LOGS/k8s-assets.log")
KB_BIN=$CACHE/kubebuilder-$KB_VERSION/bin
if [ ! -x "$KB_BIN/kubebuilder" ]; then
  # No replace directives in kubebuilder's go.mod, so `go install pkg@version` works.
  step build-kubebuilder env GOBIN="$KB_BIN" go install "sigs.k8s.io/kubebuilder/v4@$KB_VERSION"
fi
KUBEBUILDER=$KB_BIN/kubebuilder
HARNESS_TARGET=$CACHE/harness-target
step build-harness env CARGO_TARGET_DIR="$HARNESS_TARGET" \
  cargo build --release --manifest-path "$ROOT/bench/harness/Cargo.toml"
HARNESS=$HARNESS_TARGET/release/opsdk-bench-harness

scaffold_opsdk() ( # DIR
  mkdir -p "$1" && cd "$1" &&
    "$OPSDK" init --domain "$DOMAIN" --repo "$REPO" &&
    "$OPSDK" create api --version v1alpha1 --kind Application --resource --controller
)
kb_init() { "$KUBEBUILDER" init --domain "$DOMAIN" --repo "$REPO"; }
kb_create() {
  "$KUBEBUILDER" create api --group "$KB_GROUP" --version v1alpha1 --kind Application \
    --plugins deploy-image/v1-alpha --image nginx:latest --image-container-port 80
}
scaffold_kubebuilder() ( # DIR
  mkdir -p "$1" && cd "$1" && kb_init && kb_create
)

# ---------------------------------------------------------------------------------------------
# 1. Scaffolding: init + create api, fresh directory each run, runs interleaved.
say "warming the Go module cache and GOCACHE with one untimed kubebuilder scaffold"
step kb-warmup scaffold_kubebuilder "$WORK/kb-warmup"
say "scaffolding $SCAFFOLD_RUNS times each"
ops_total=() ops_init=() ops_create=() kb_total=() kb_init_ms=() kb_create_ms=()
for i in $(seq 1 "$SCAFFOLD_RUNS"); do
  d=$WORK/scaffold/opsdk-$i
  mkdir -p "$d" && cd "$d"
  a=$(timed "$OPSDK" init --domain "$DOMAIN" --repo "$REPO")
  b=$(timed "$OPSDK" create api --version v1alpha1 --kind Application --resource --controller)
  ops_init+=("$a") ops_create+=("$b") ops_total+=($((a + b)))
  d=$WORK/scaffold/kb-$i
  mkdir -p "$d" && cd "$d"
  a=$(timed kb_init)
  b=$(timed kb_create)
  kb_init_ms+=("$a") kb_create_ms+=("$b") kb_total+=($((a + b)))
done
cd "$WORK"
read -r OPS_MED OPS_MIN OPS_MAX < <(stats "${ops_total[@]}")
read -r KB_MED KB_MIN KB_MAX < <(stats "${kb_total[@]}")
read -r OPS_INIT_MED _ _ < <(stats "${ops_init[@]}")
read -r OPS_CREATE_MED _ _ < <(stats "${ops_create[@]}")
read -r KB_INIT_MED _ _ < <(stats "${kb_init_ms[@]}")
read -r KB_CREATE_MED _ _ < <(stats "${kb_create_ms[@]}")
say "scaffold ms: opsdk median $OPS_MED ($OPS_MIN-$OPS_MAX), kubebuilder median $KB_MED ($KB_MIN-$KB_MAX)"

# 4. The scaffolder's own cost as a project grows: time and peak RSS of the N-th `create api`
# (GNU time's max RSS covers opsdk and the rustfmt it runs).
say "opsdk with 1, 10 and 50 kinds"
SCALING_JSON='[]'
for n in 1 10 50; do
  d=$WORK/scaling/kinds-$n
  mkdir -p "$d" && cd "$d"
  t0=$(now_ms)
  /usr/bin/time -f '%e %M' -o "$LOGS/time-init-$n" "$OPSDK" init --domain "$DOMAIN" --repo "$REPO" >>"$LOGS/scaling.log" 2>&1
  for k in $(seq 1 $((n - 1))); do
    "$OPSDK" create api --version v1alpha1 --kind "Kind$k" >>"$LOGS/scaling.log" 2>&1
  done
  t1=$(now_ms)
  /usr/bin/time -f '%e %M' -o "$LOGS/time-create-$n" "$OPSDK" create api --version v1alpha1 --kind "Kind$n" >>"$LOGS/scaling.log" 2>&1
  t2=$(now_ms)
  read -r _ init_kb <"$LOGS/time-init-$n"
  read -r _ create_kb <"$LOGS/time-create-$n"
  files=$(find . -type f | wc -l)
  SCALING_JSON=$(jq -c --argjson n "$n" --argjson last $((t2 - t1)) --argjson total $((t2 - t0)) \
    --argjson init_kb "$init_kb" --argjson create_kb "$create_kb" --argjson files "$files" \
    '. + [{kinds: $n, last_create_api_ms: $last, init_plus_all_create_api_ms: $total,
           init_max_rss_mb: ($init_kb / 1024 * 10 | round / 10),
           last_create_api_max_rss_mb: ($create_kb / 1024 * 10 | round / 10), files: $files}]' <<<"$SCALING_JSON")
done
cd "$WORK"

# ---------------------------------------------------------------------------------------------
# 2. The generated projects' builds. Clean = dependencies downloaded, empty target dir / GOCACHE.
say "opsdk's generated project: clean release, clean debug, incremental builds"
OPS_PROJECT=$WORK/opsdk-project
KB_PROJECT=$WORK/kb-project
step scaffold-opsdk-project scaffold_opsdk "$OPS_PROJECT"
cd "$OPS_PROJECT"
export CARGO_TARGET_DIR=$CACHE/gen-target
step cargo-fetch cargo fetch
rm -rf "$CARGO_TARGET_DIR"
step ops-clean-release cargo build --release
mkdir -p "$WORK/bin"
cp "$CARGO_TARGET_DIR/release/k8s-operator-talk" "$WORK/bin/opsdk-manager"
OPS_BIN_MB=$(mb "$WORK/bin/opsdk-manager")
if [ "${SKIP_RELEASE_INCREMENTAL:-0}" != 1 ]; then
  sed -i 's/"cleaned up")/"cleaned up (release edit)")/' src/controller/application.rs
  step ops-incremental-release cargo build --release
fi
rm -rf "$CARGO_TARGET_DIR"
step ops-clean-debug cargo build
# What kube-rs itself costs: a controller with nothing of its own (bench/kube-floor), from the
# project's lock, built clean right after the project (its own target dir: the project's stays
# for the incremental build).
cp -r "$ROOT/bench/kube-floor" "$WORK/kube-floor"
cp Cargo.lock "$WORK/kube-floor/"
rm -rf "$CACHE/kube-floor-target"
step kube-floor-clean-debug env CARGO_TARGET_DIR="$CACHE/kube-floor-target" \
  cargo build --offline --manifest-path "$WORK/kube-floor/Cargo.toml"
# The one-line edit: a log message in the controller.
grep -q '"cleaned up' src/controller/application.rs
sed -i 's/"cleaned up[^"]*")/"cleaned up (edited)")/' src/controller/application.rs
step ops-incremental-debug cargo build
step ops-manifests make manifests
unset CARGO_TARGET_DIR

say "kubebuilder's project: clean build, stripped build, incremental build"
step scaffold-kb-project scaffold_kubebuilder "$KB_PROJECT"
cd "$KB_PROJECT"
export GOCACHE=$CACHE/gocache
step go-mod-download go mod download
rm -rf "$GOCACHE"
step kb-clean-build go build -o bin/manager cmd/main.go
KB_BIN_DEFAULT_MB=$(mb bin/manager)
cp bin/manager "$WORK/bin/kubebuilder-manager"
grep -q '"Creating a new Deployment"' internal/controller/application_controller.go
sed -i 's/"Creating a new Deployment"/"Creating a new Deployment (edited)"/' internal/controller/application_controller.go
step kb-incremental-build go build -o bin/manager cmd/main.go
rm -rf "$GOCACHE"
step kb-clean-build-stripped go build -trimpath -ldflags=-s\ -w -o bin/manager-stripped cmd/main.go
KB_BIN_MB=$(mb bin/manager-stripped)
# The same one-line edit, then the stripped build again (Go's counterpart of the release edit loop).
sed -i 's/"Creating a new Deployment[^"]*"/"Creating a new Deployment (release edit)"/' internal/controller/application_controller.go
step kb-incremental-release go build -trimpath -ldflags=-s\ -w -o bin/manager-stripped cmd/main.go
unset GOCACHE
cd "$WORK"

# ---------------------------------------------------------------------------------------------
# 3. Each operator alone against a fresh control plane, same inputs.
say "opsdk's operator against a fresh control plane ($APPS Applications)"
step cp-opsdk "$HARNESS" --flavor=opsdk --manager="$WORK/bin/opsdk-manager" \
  --crds="$OPS_PROJECT/config/crd/bases" --group="$DOMAIN" --apps="$APPS" --steady="$STEADY_S" \
  --out="$WORK/cp-opsdk.json" --logs="$LOGS/cp-opsdk"
say "kubebuilder's operator against a fresh control plane ($APPS Applications)"
step cp-kubebuilder "$HARNESS" --flavor=kubebuilder --manager="$WORK/bin/kubebuilder-manager" \
  --crds="$KB_PROJECT/config/crd/bases" --group="$KB_GROUP.$DOMAIN" --apps="$APPS" \
  --steady="$STEADY_S" --out="$WORK/cp-kubebuilder.json" --logs="$LOGS/cp-kubebuilder"
say "the API server alone: the children created directly, no operator"
step floor "$HARNESS" --flavor=floor --apps="$APPS" --out="$WORK/floor.json" --logs="$LOGS/floor"
# From one fresh control plane to the next, converge and floor each vary by up to 20% here: the
# converge-to-floor ratio is judged on the medians of CONVERGE_RUNS runs of each, interleaved
# (the two above first; the others with a short steady window, as only converge is read).
# opsdk's operator as `make deploy` runs it: under its ServiceAccount and generated roles, with
# config/policy's admission policies on its writes (bench/harness/src/deployed.rs).
deployed_run() {
  say "opsdk's operator as deployed: its ServiceAccount, roles and admission policies ($1 of $CONVERGE_RUNS)"
  step "cp-opsdk-deployed-$1" "$HARNESS" --flavor=opsdk --manager="$WORK/bin/opsdk-manager" \
    --crds="$OPS_PROJECT/config/crd/bases" --group="$DOMAIN" --apps="$APPS" --steady=5 \
    --deployed="$OPS_PROJECT/config/default" \
    --out="$WORK/cp-opsdk-deployed-$1.json" --logs="$LOGS/cp-opsdk-deployed-$1"
  DEPLOYED_RUNS+=("$WORK/cp-opsdk-deployed-$1.json")
}
OPS_RUNS=("$WORK/cp-opsdk.json") FLOOR_RUNS=("$WORK/floor.json") DEPLOYED_RUNS=()
deployed_run 1
for i in $(seq 2 "$CONVERGE_RUNS"); do
  say "the API server alone, then opsdk's operator, again ($i of $CONVERGE_RUNS)"
  step "floor-$i" "$HARNESS" --flavor=floor --apps="$APPS" --out="$WORK/floor-$i.json" \
    --logs="$LOGS/floor-$i"
  step "cp-opsdk-$i" "$HARNESS" --flavor=opsdk --manager="$WORK/bin/opsdk-manager" \
    --crds="$OPS_PROJECT/config/crd/bases" --group="$DOMAIN" --apps="$APPS" --steady=5 \
    --out="$WORK/cp-opsdk-$i.json" --logs="$LOGS/cp-opsdk-$i"
  OPS_RUNS+=("$WORK/cp-opsdk-$i.json") FLOOR_RUNS+=("$WORK/floor-$i.json")
  deployed_run "$i"
done
CONVERGE_RUNS_JSON=$(jq -s -c 'map(.converge_s)' "${OPS_RUNS[@]}")
DEPLOYED_RUNS_JSON=$(jq -s -c 'map(.converge_s)' "${DEPLOYED_RUNS[@]}")
DEPLOYED_REQUESTS_JSON=$(jq -s -c 'map(.requests_per_app)' "${DEPLOYED_RUNS[@]}")
FLOOR_RUNS_JSON=$(jq -s -c 'map(.deployments_plus_nodeport_services_s)' "${FLOOR_RUNS[@]}")
rm -f "$LOGS"/cp-*/audit.log.gz
gzip -f "$LOGS"/cp-*/audit.log

# ---------------------------------------------------------------------------------------------
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
DAY=$(date -u +%Y-%m-%d)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
MEM_GIB=$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)
MACHINE="$(nproc) cores ($CPU_MODEL), $MEM_GIB GiB, Linux $(uname -r)"
TOTAL_S=$(($(date +%s) - START_S))
steps_json=$(for k in "${!STEP_S[@]}"; do printf '%s\t%s\n' "$k" "${STEP_S[$k]}"; done |
  jq -R -s -c 'split("\n") | map(select(length > 0) | split("\t") | {(.[0]): (.[1] | tonumber)}) | add')
versions=$(jq -n -c --arg cargo "$(cargo --version)" --arg go "$(go version)" \
  --arg kb "$("$KUBEBUILDER" version 2>/dev/null | tr -s ' ' | paste -sd ';' -)" \
  --arg opsdk "$("$OPSDK" version 2>/dev/null | paste -sd ';' -)" \
  --arg k8s "$(basename "$KUBEBUILDER_ASSETS")" --arg commit "$OPSDK_COMMIT" \
  '{cargo: $cargo, go: $go, kubebuilder: $kb, opsdk: $opsdk, opsdk_commit: $commit, control_plane: $k8s}')

jq -n \
  --slurpfile ops "$WORK/cp-opsdk.json" --slurpfile kb "$WORK/cp-kubebuilder.json" \
  --slurpfile floor "$WORK/floor.json" \
  --arg date "$DATE" --arg machine "$MACHINE" --arg load "$LOADAVG" \
  --argjson runs "$SCAFFOLD_RUNS" --argjson apps "$APPS" \
  --argjson ops_med "$OPS_MED" --argjson ops_min "$OPS_MIN" --argjson ops_max "$OPS_MAX" \
  --argjson kb_med "$KB_MED" --argjson kb_min "$KB_MIN" --argjson kb_max "$KB_MAX" \
  --argjson ops_init "$OPS_INIT_MED" --argjson ops_create "$OPS_CREATE_MED" \
  --argjson kb_init "$KB_INIT_MED" --argjson kb_create "$KB_CREATE_MED" \
  --argjson ops_dbg "${STEP_S[ops-clean-debug]}" --argjson ops_rel "${STEP_S[ops-clean-release]}" \
  --argjson ops_inc "${STEP_S[ops-incremental-debug]}" --argjson kube_floor_dbg "${STEP_S[kube-floor-clean-debug]}" \
  --argjson ops_inc_rel "${STEP_S[ops-incremental-release]:-null}" \
  --argjson kb_inc_rel "${STEP_S[kb-incremental-release]}" \
  --argjson kb_dbg "${STEP_S[kb-clean-build]}" --argjson kb_rel "${STEP_S[kb-clean-build-stripped]}" \
  --argjson kb_inc "${STEP_S[kb-incremental-build]}" \
  --argjson ops_mb "$OPS_BIN_MB" --argjson kb_mb "$KB_BIN_MB" --argjson kb_mb_default "$KB_BIN_DEFAULT_MB" \
  --argjson scaling "$SCALING_JSON" --argjson steps "$steps_json" --argjson versions "$versions" \
  --argjson total "$TOTAL_S" --arg kbgroup "$KB_GROUP" \
  --argjson converge_runs "$CONVERGE_RUNS_JSON" --argjson floor_runs "$FLOOR_RUNS_JSON" \
  --argjson deployed_runs "$DEPLOYED_RUNS_JSON" --argjson deployed_requests "$DEPLOYED_REQUESTS_JSON" '
  ($ops[0]) as $o | ($kb[0]) as $k | ($floor[0]) as $f |
  def pair(a; b): {opsdk: a, kubebuilder: b};
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  {
    scaffold_ms: pair($ops_med; $kb_med),
    clean_debug_build_s: pair($ops_dbg; $kb_dbg),
    clean_debug_build_kube_floor_s: {floor: $kube_floor_dbg},
    clean_debug_over_kube_floor: {opsdk: ($ops_dbg / $kube_floor_dbg * 100 | round / 100)},
    clean_release_build_s: pair($ops_rel; $kb_rel),
    incremental_build_s: pair($ops_inc; $kb_inc),
    incremental_release_build_s: pair($ops_inc_rel; $kb_inc_rel),
    binary_mb: pair($ops_mb; $kb_mb),
    rss_idle_mb: pair($o.rss_idle_mb; $k.rss_idle_mb),
    rss_1000_mb: pair($o.rss_1000_mb; $k.rss_1000_mb),
    converge_1000_s: pair($o.converge_s; $k.converge_s),
    steady_state_writes_60s: pair($o.steady_state_writes; $k.steady_state_writes),
    steady_state_requests_60s: pair($o.steady_state_requests_60s; $k.steady_state_requests_60s),
    requests_per_app: pair($o.requests_per_app; $k.requests_per_app),
    gets_per_app: pair($o.gets_per_app; $k.gets_per_app),
    floor_1000_s: {floor: $f.deployments_plus_nodeport_services_s},
    converge_1000_runs_s: {opsdk: $converge_runs},
    floor_1000_runs_s: {floor: $floor_runs},
    converge_over_floor: {opsdk: (($converge_runs | median) / ($floor_runs | median) * 100 | round / 100)},
    converge_1000_deployed_runs_s: {opsdk: $deployed_runs},
    converge_deployed_over_floor: {opsdk: (($deployed_runs | median) / ($floor_runs | median) * 100 | round / 100)},
    cpu_s: pair($o.cpu_s; $k.cpu_s),
    date: $date,
    machine: $machine,
    notes: ([
      "load average at start: \($load)",
      "scaffold: wall time of init + create api, median of \($runs) runs each, interleaved, fresh directory each; spread (min-max) opsdk \($ops_min)-\($ops_max) ms, kubebuilder \($kb_min)-\($kb_max) ms. opsdk is the release build and includes its rustfmt pass. kubebuilder \($versions.kubebuilder | split(";")[0] | ltrimstr("KubeBuilder: ")): init --domain minetto.dev --repo github.com/eminetto/k8s-operator-talk; create api --group \($kbgroup) --version v1alpha1 --kind Application --plugins deploy-image/v1-alpha --image nginx:latest --image-container-port 80; its go mod tidy and its controller-gen build (go install, make generate/manifests) run against a warm module cache and a warm GOCACHE (one untimed scaffold first). Medians: opsdk init \($ops_init) ms + create api \($ops_create) ms; kubebuilder init \($kb_init) ms + create api \($kb_create) ms",
      "builds: opsdk project with cargo (registry downloaded by cargo fetch, CARGO_TARGET_DIR removed before each clean build); debug = cargo build (library, manager, crdgen; the generated dev profile: line tables only for the project, no debug info for dependencies), release = cargo build --release (the generated profile: opt-level s, incremental, strip, lto off, panic abort); incremental = cargo build after editing one log message in src/controller/application.rs. kubebuilder project with go build -o bin/manager cmd/main.go (what make build runs after manifests/generate/fmt/vet), GOCACHE emptied before each clean build, module cache warm; its \"release\" is go build -trimpath -ldflags=\"-s -w\"; incremental = go build after editing one log message in internal/controller/application_controller.go",
      "clean_debug_build_kube_floor_s: cargo build of bench/kube-floor (one CustomResource and a Controller on kube with client, derive, runtime and rustls on ring, k8s-openapi, tokio, serde, schemars and futures; the generated dev profile), with the generated project'"'"'s Cargo.lock, target dir removed, right after the project'"'"'s clean debug build: what any kube-rs operator takes to build here; clean_debug_over_kube_floor is the project'"'"'s clean debug build over it",
      "binary_mb: stripped manager binaries (opsdk release profile; go -ldflags=\"-s -w\"); kubebuilder'"'"'s default make build binary (with symbols and DWARF, the one run on the control plane) is \($kb_mb_default) MB",
      "control plane: etcd, kube-apiserver, kube-controller-manager \($versions.control_plane) (controllers: \($o.kube_controller_manager | join(", ")); its client rate limit lifted), fresh for each operator; no scheduler or kubelet, so Pods stay Pending. \($apps) Applications, one per namespace app-NNNN (namespaces made before the operator starts), same image nginx:latest, 1 replica, port 80, created with 32 requests in flight. managers: opsdk'"'"'s release binary, kubebuilder'"'"'s default go build binary (what make build makes), each with KUBECONFIG (admin), metrics off, probes on; kubebuilder'"'"'s with APPLICATION_IMAGE=nginx:latest",
      "converge_1000_s: from the first create to every child existing with the right spec, seen by a watch: opsdk Deployment and NodePort Service (Deployments alone: \($o.deployments_converged_s) s, Services: \($o.services_converged_s) s); kubebuilder Deployment only (its deploy-image controller makes no Service). Until converged, the API server took on average \($o.operator_request_latency_ms.create_to_converged["create services"] // "?") ms to answer opsdk'"'"'s Service creates and \($o.operator_request_latency_ms.create_to_converged["create deployments"] // "?") ms its Deployment creates; kubebuilder'"'"'s Deployment creates \($k.operator_request_latency_ms.create_to_converged["create deployments"] // "?") ms",
      "floor: the API server alone on the same kind of fresh control plane, no operator: the harness server-side applies \($f.apps) Deployments shaped like opsdk'"'"'s (\($f.deployments_s) s), then \($f.apps) NodePort Services (\($f.nodeport_services_s) s), \($f.in_flight) in flight; \($f.apps) more NodePort Services one at a time: \($f.nodeport_services_one_at_a_time_s) s (Service creation does not scale with concurrency). floor_1000_s is the first two added, Deployments + Services (\($f.deployments_plus_nodeport_services_s) s), stored as {\"floor\": n} (no operator, so no opsdk or kubebuilder value). No operator converges faster than that; half of kubebuilder'"'"'s converge time is \(($k.converge_s / 2 * 100 | round) / 100) s",
      "converge_over_floor: the median of opsdk'"'"'s converge times over the median of the floors, \($converge_runs | length) runs of each on fresh control planes, interleaved (floor, opsdk, floor, ...): converge_1000_runs_s \($converge_runs | tostring), floor_1000_runs_s \($floor_runs | tostring). converge_1000_s and floor_1000_s are the first run of each",
      "converge_deployed_over_floor: the same operator run as `make deploy` runs it, not as `make run` does: config/default applied (its Deployment left out, no kubelet here), the manager authenticated as its ServiceAccount, so every request it sends is authorized by the generated roles and every write it makes is judged by config/policy'"'"'s ValidatingAdmissionPolicies, which kubebuilder'"'"'s project does not have; \($deployed_runs | length) runs, one after each floor (floor, opsdk, opsdk as deployed, ...): converge_1000_deployed_runs_s \($deployed_runs | tostring), requests per Application \($deployed_requests | tostring)",
      "rss: VmRSS of the manager 15 s after it is ready (idle) and after the steady-state window (1000); anonymous part idle/1000: opsdk \($o.rss_anon_idle_mb)/\($o.rss_anon_1000_mb) MB, kubebuilder \($k.rss_anon_idle_mb)/\($k.rss_anon_1000_mb) MB; peak (VmHWM) opsdk \($o.rss_peak_mb) MB, kubebuilder \($k.rss_peak_mb) MB",
      "steady state: the window starts \($o.steady_window_starts_after_create_s) s (opsdk) / \($k.steady_window_starts_after_create_s) s (kubebuilder) after the first create: at least 65 s after convergence (kubebuilder requeues one minute after creating a Deployment) and once kube-controller-manager has written nothing for 10 s; writes counted from the apiserver audit log by user agent (the operator'"'"'s only). steady_state_requests_60s: every request the operator sent in the window (same audit log, by when it was received: any verb, get, list, watch starts, creates, updates, patches, deletes) except its leader-election Lease requests (leases in coordination.k8s.io; opsdk \($o.steady_state_lease_requests), kubebuilder \($k.steady_state_lease_requests) left out), times 60 s / the window'"'"'s length (opsdk \($o.steady_window_s) s, kubebuilder \($k.steady_window_s) s); steady_state_writes_60s is the writes counted as they are, not scaled. apiserver_request_total over the same window, all clients, by verb: opsdk \($o.apiserver_request_total.steady_window_by_verb | tostring), kubebuilder \($k.apiserver_request_total.steady_window_by_verb | tostring)",
      "requests_per_app: the operator'"'"'s requests (audit log, by user agent) from the first create to the start of the steady window, divided by \($apps); by verb: opsdk \($o.operator_requests.create_to_steady_window | tostring), kubebuilder \($k.operator_requests.create_to_steady_window | tostring). gets_per_app: the same window and count, verb get only (single-object reads; not list or watch)",
      "cpu_s: utime+stime of the manager over its whole run (start, idle, convergence, settle, steady window); control plane CPU from first create to end: opsdk run \($o.control_plane_cpu_s_from_create_to_end | tostring), kubebuilder run \($k.control_plane_cpu_s_from_create_to_end | tostring); CPU used by anything else on the machine over the same span (busy time in /proc/stat minus operator, control plane and harness): opsdk run \($o.other_processes_cpu_s_from_create_to_end) s of \($o.create_to_end_s) s, kubebuilder run \($k.other_processes_cpu_s_from_create_to_end) s of \($k.create_to_end_s) s",
      "whole run: \($total) s"
    ]),
    details: {
      scaffold_ms_runs: {opsdk: {median: $ops_med, min: $ops_min, max: $ops_max, init_median: $ops_init, create_api_median: $ops_create},
                         kubebuilder: {median: $kb_med, min: $kb_min, max: $kb_max, init_median: $kb_init, create_api_median: $kb_create}},
      opsdk_scaling: $scaling,
      kubebuilder_default_binary_mb: $kb_mb_default,
      step_wall_s: $steps,
      versions: $versions,
      control_plane: {opsdk: $o, kubebuilder: $k},
      floor: $f
    }
  }' >"$WORK/latest.json"

# bench/growth.sh's series (its own keys) stays until growth.sh runs again.
if [ -f "$RESULTS/latest.json" ]; then
  jq -s '.[0] + (.[1] | {growth, growth_meta} | with_entries(select(.value != null)))' \
    "$WORK/latest.json" "$RESULTS/latest.json" >"$WORK/latest-with-growth.json"
  mv "$WORK/latest-with-growth.json" "$WORK/latest.json"
fi
cp "$WORK/latest.json" "$RESULTS/latest.json"

# The table.
MD=$RESULTS/$DAY.md
jq -r -f "$ROOT/bench/table.jq" "$RESULTS/latest.json" >"$MD"
cat "$MD"
say "done in ${TOTAL_S}s; wrote $MD and $RESULTS/latest.json (logs in $LOGS)"
