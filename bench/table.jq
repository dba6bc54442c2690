# The Markdown table of bench/results/latest.json, as bench/run.sh writes it to
# bench/results/<date>.md: jq -r -f bench/table.jq bench/results/latest.json
  def r(x): if x == null then "-" elif (x | type) == "number" then (x * 100 | round / 100 | tostring) else (x | tostring) end;
  def ratio(p): if p.kubebuilder == 0 then "-" else (p.opsdk / p.kubebuilder * 1000 | round / 1000 | tostring) end;
  def row(name; p; target; met):
    "| \(name) | \(r(p.opsdk)) | \(r(p.kubebuilder)) | \(ratio(p)) | \(target) | \(met) |";
  def yes(b): if b then "met" else "missed" end;
  "# opsdk vs kubebuilder: benchmark of \(.date)",
  "",
  "Machine: \(.machine). opsdk \(.details.versions.opsdk_commit), kubebuilder v4.16.0. Produced by `bench/run.sh`; the numbers behind each row are in `latest.json` (notes, details).",
  "",
  "| metric | opsdk | kubebuilder | opsdk / kubebuilder | target | |",
  "|---|---|---|---|---|---|",
  row("scaffold: init + create api, median ms"; .scaffold_ms; "ratio <= 0.01"; yes(.scaffold_ms.opsdk <= .scaffold_ms.kubebuilder / 100)),
  row("clean debug build, s"; .clean_debug_build_s; "opsdk <= 60 s"; yes(.clean_debug_build_s.opsdk <= 60)),
  if .clean_debug_build_kube_floor_s then
    "| kube-rs floor: clean debug build of a controller with nothing of its own (bench/kube-floor), same lock, s | \(r(.clean_debug_build_kube_floor_s.floor)) | - | - | | the least a kube-rs operator takes here |",
    "| opsdk clean debug build / kube-rs floor | \(r(.clean_debug_over_kube_floor.opsdk)) | - | - | | |"
  else empty end,
  row("clean release build, s"; .clean_release_build_s; "opsdk <= kubebuilder"; yes(.clean_release_build_s.opsdk <= .clean_release_build_s.kubebuilder)),
  row("release build after a one-line controller edit, s"; .incremental_release_build_s; "opsdk <= 15 s"; yes((.incremental_release_build_s.opsdk // 99) <= 15)),
  row("incremental build after a one-line controller edit, s"; .incremental_build_s; "opsdk <= 15 s"; yes(.incremental_build_s.opsdk <= 15)),
  row("stripped manager binary, MB"; .binary_mb; "opsdk <= 12 MB"; yes(.binary_mb.opsdk <= 12)),
  row("RSS idle, MB"; .rss_idle_mb; "ratio <= 1/3"; yes(.rss_idle_mb.opsdk * 3 <= .rss_idle_mb.kubebuilder)),
  row("RSS with 1,000 Applications, MB"; .rss_1000_mb; "ratio <= 1/3"; yes(.rss_1000_mb.opsdk * 3 <= .rss_1000_mb.kubebuilder)),
  row("converge 1,000 Applications, s"; .converge_1000_s; "ratio <= 1/2"; yes(.converge_1000_s.opsdk * 2 <= .converge_1000_s.kubebuilder)),
  "| floor: 1,000 Deployments + 1,000 NodePort Services created by the API server alone, s | \(r(.floor_1000_s.floor)) | - | - | | no operator: the least opsdk's converge can take |",
  "| opsdk converge / floor, medians of \(.converge_1000_runs_s.opsdk | length) runs each | \(r(.converge_over_floor.opsdk)) | - | - | opsdk <= 1.5 | \(yes(.converge_over_floor.opsdk <= 1.5)) |",
  "| the same, opsdk as deployed (its ServiceAccount, roles and admission policies), medians of \(.converge_1000_deployed_runs_s.opsdk | length) runs | \(r(.converge_deployed_over_floor.opsdk)) | - | - | opsdk <= 1.5 | \(yes(.converge_deployed_over_floor.opsdk <= 1.5)) |",
  row("writes in 60 s of steady state"; .steady_state_writes_60s; "opsdk 0"; yes(.steady_state_writes_60s.opsdk == 0)),
  row("requests in 60 s of steady state, any verb, Lease renewals left out"; .steady_state_requests_60s; ""; ""),
  row("requests per Application to converge"; .requests_per_app; ""; ""),
  row("GET requests per Application to converge"; .gets_per_app; ""; ""),
  row("operator CPU over the run, s"; .cpu_s; ""; ""),
  "",
  "opsdk converge split: Deployments \(.details.control_plane.opsdk.deployments_converged_s) s, Services \(.details.control_plane.opsdk.services_converged_s) s (kubebuilder makes Deployments only). The API server alone, no operator, \(.details.floor.in_flight) in flight: \(.details.floor.apps) Deployments \(.details.floor.deployments_s) s, \(.details.floor.apps) NodePort Services \(.details.floor.nodeport_services_s) s (one at a time: \(.details.floor.nodeport_services_one_at_a_time_s) s).",
  "",
  "opsdk as a project grows (time and peak RSS of the last `create api`, peak RSS includes rustfmt):",
  "",
  "| kinds | last create api, ms | its peak RSS, MB | init + all create api, ms | files |",
  "|---|---|---|---|---|",
  (.details.opsdk_scaling[] | "| \(.kinds) | \(.last_create_api_ms) | \(.last_create_api_max_rss_mb) | \(.init_plus_all_create_api_ms) | \(.files) |"),
  "",
  "Notes:",
  "",
  (.notes[] | "- \(.)")
