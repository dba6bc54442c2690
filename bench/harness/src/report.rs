//! The report: what a run measured, and the operator's requests from the audit log counted
//! over the run's phases, as the JSON that bench/run.sh reads.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::args::Args;
use crate::audit::{AuditRequest, by_verb, by_verb_resource, latency_by_verb_resource};
use crate::control_plane::KCM_CONTROLLERS;
use crate::metrics::{Metric, by_metric_verb, metric_writes};
use crate::sample::Sample;

/// Moments of a run on the audit log's clock, in µs since 1970.
pub struct Wall {
    pub operator_started: i64,
    pub first_create: i64,
    pub converged: i64,
    pub steady_start: i64,
    pub steady_end: i64,
}

impl Wall {
    /// The steady-state window's length, in seconds.
    fn steady_window_s(&self) -> f64 {
        (self.steady_end - self.steady_start) as f64 / 1e6
    }
}

/// What a run measured; durations in seconds from the first create unless named otherwise.
pub struct Measured {
    pub ready_s: f64,
    pub create_s: f64,
    pub converge_s: f64,
    pub deployments_converged_s: f64,
    pub services_converged_s: Option<f64>,
    pub steady_window_starts_after_create_s: f64,
    pub kcm_quiet_before_window: bool,
    pub kcm_last_write_after_create_s: f64,
    pub create_to_end_s: f64,
    pub wall: Wall,
    /// The operator: idle, at convergence, at the steady window's start and end.
    pub idle: Sample,
    pub at_converged: Sample,
    pub before_steady: Sample,
    pub end: Sample,
    /// From the first create to the end, by process name.
    pub control_plane_cpu_s: BTreeMap<String, f64>,
    pub other_processes_cpu_s: f64,
    /// `apiserver_request_total` before the creates, at the steady window's start and end.
    pub metrics: [Metric; 3],
    pub operator_exit: String,
    /// Lines the manager logged, and error lines.
    pub manager_log: (usize, usize),
}

/// The run's JSON: what was measured (`process`) and the requests that were counted
/// (`requests`), in one object.
pub fn report(args: &Args, m: &Measured, requests: &[AuditRequest]) -> Value {
    let mut out = process(args, m);
    if let (Some(out), Value::Object(counts)) = (out.as_object_mut(), counts(args, m, requests)) {
        out.extend(counts);
    }
    out
}

/// Timings, memory and CPU.
fn process(args: &Args, m: &Measured) -> Value {
    let mb = |kb: u64| round(kb as f64 / 1024.0, 1);
    let (idle, end) = (&m.idle, &m.end);
    json!({
        "flavor": format!("{:?}", args.flavor).to_lowercase(),
        "deployed": args.deployed.is_some(),
        "apps": args.apps,
        "image": args.image,
        "kube_controller_manager": KCM_CONTROLLERS,
        "ready_s": round(m.ready_s, 2),
        "create_s": round(m.create_s, 2),
        "converge_s": round(m.converge_s, 2),
        "deployments_converged_s": round(m.deployments_converged_s, 2),
        "services_converged_s": m.services_converged_s.map(|s| round(s, 2)),
        "steady_window_starts_after_create_s": round(m.steady_window_starts_after_create_s, 1),
        "kcm_quiet_before_window": m.kcm_quiet_before_window,
        "kcm_last_write_after_create_s": round(m.kcm_last_write_after_create_s, 1),
        "steady_window_s": round(m.wall.steady_window_s(), 1),
        "rss_idle_mb": mb(idle.rss_kb),
        "rss_converged_mb": mb(m.at_converged.rss_kb),
        "rss_steady_start_mb": mb(m.before_steady.rss_kb),
        "rss_1000_mb": mb(end.rss_kb),
        "rss_anon_idle_mb": mb(idle.anon_kb),
        "rss_anon_1000_mb": mb(end.anon_kb),
        "rss_peak_mb": mb(end.hwm_kb),
        "threads_end": end.threads,
        "cpu_s": round(end.cpu_s, 2),
        "cpu_idle_s": round(idle.cpu_s, 2),
        "cpu_to_converged_s": round(m.at_converged.cpu_s - idle.cpu_s, 2),
        "cpu_steady_s": round(end.cpu_s - m.before_steady.cpu_s, 2),
        "control_plane_cpu_s_from_create_to_end": m.control_plane_cpu_s,
        "other_processes_cpu_s_from_create_to_end": round(m.other_processes_cpu_s, 1),
        "create_to_end_s": round(m.create_to_end_s, 1),
        "operator_exit": m.operator_exit,
        "manager_log_lines": m.manager_log.0,
        "manager_log_error_lines": m.manager_log.1,
    })
}

/// Requests: the operator's from the audit log over the run's phases, and every client's from
/// `apiserver_request_total`.
fn counts(args: &Args, m: &Measured, requests: &[AuditRequest]) -> Value {
    let wall = &m.wall;
    // From the operator's start: the harness's own readiness probes before it carry no user agent.
    let ours: Vec<&AuditRequest> = requests
        .iter()
        .filter(|r| r.who == "operator" && r.at_us >= wall.operator_started)
        .collect();
    let window = |from: i64, to: i64| -> Vec<&AuditRequest> {
        ours.iter()
            .copied()
            .filter(|r| r.at_us >= from && r.at_us < to)
            .collect()
    };
    let startup = window(wall.operator_started, wall.first_create);
    let to_converged = window(wall.first_create, wall.converged + 1);
    let converge = window(wall.first_create, wall.steady_start);
    let steady = window(wall.steady_start, wall.steady_end);
    let steady_writes = steady.iter().filter(|r| r.is_write()).count();
    let gets = converge.iter().filter(|r| r.verb == "get").count();
    let steady_leases = steady.iter().filter(|r| r.is_lease()).count();
    let steady_requests = steady.len() - steady_leases;
    let mut user_agents: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &ours {
        *user_agents.entry(r.user_agent.as_str()).or_default() += 1;
    }
    let mut clients: BTreeMap<&str, usize> = BTreeMap::new();
    for r in requests
        .iter()
        .filter(|r| r.at_us >= wall.first_create && r.at_us < wall.steady_start)
    {
        *clients.entry(r.who).or_default() += 1;
    }
    let per_app = |n: usize| round(n as f64 / args.apps as f64, 2);
    let [m0, m1, m2] = &m.metrics;
    json!({
        "steady_state_writes": steady_writes,
        // Every request in the steady window but leader election's (Leases), as counted and
        // scaled to 60 s of window.
        "steady_state_requests": steady_requests,
        "steady_state_requests_60s": round(steady_requests as f64 * 60.0 / wall.steady_window_s(), 1),
        "steady_state_lease_requests": steady_leases,
        "requests_per_app": per_app(converge.len()),
        "gets_per_app": per_app(gets),
        "operator_requests": {
            "startup_and_idle": by_verb(&startup),
            "create_to_converged": by_verb(&to_converged),
            "create_to_steady_window": by_verb(&converge),
            "steady_window": by_verb(&steady),
        },
        "operator_requests_by_resource": {
            "create_to_steady_window": by_verb_resource(&converge),
            "steady_window": by_verb_resource(&steady),
        },
        "operator_request_latency_ms": {
            "create_to_converged": latency_by_verb_resource(&to_converged),
        },
        "operator_user_agents": user_agents,
        "all_clients_create_to_steady_window": clients,
        "apiserver_request_total": {
            "create_to_steady_window_by_verb": diff_maps(&by_metric_verb(m0), &by_metric_verb(m1)),
            "steady_window_by_verb": diff_maps(&by_metric_verb(m1), &by_metric_verb(m2)),
            "steady_window_writes_by_resource": diff_maps(&metric_writes(m1), &metric_writes(m2)),
        },
    })
}

/// `after - before` for every key of `after`, rounded to 2 digits; keys that did not change are
/// left out.
pub fn diff_maps<K: Ord + Clone + serde::Serialize>(
    before: &BTreeMap<K, f64>,
    after: &BTreeMap<K, f64>,
) -> BTreeMap<K, f64> {
    after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                round(v - before.get(k).copied().unwrap_or(0.0), 2),
            )
        })
        .filter(|(_, v)| *v != 0.0)
        .collect()
}

pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
