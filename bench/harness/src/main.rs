//! Runs one operator, alone, against a fresh control plane (etcd, kube-apiserver,
//! kube-controller-manager) and measures it the same way for opsdk's and kubebuilder's:
//!
//! 1. start the control plane (the generated projects' own envtest harness, included below),
//!    install the operator's CRDs, create the namespaces `app-0000` .. `app-NNNN`;
//! 2. start the operator's manager binary; once `/readyz` answers, wait `--idle` seconds and
//!    read its RSS (idle, no Applications);
//! 3. create one Application per namespace (32 requests in flight) and watch Deployments (and,
//!    for opsdk, Services) until every child exists with the right spec: that is convergence;
//! 4. let it settle: at least `--settle` seconds after convergence (65 s by default, so that
//!    kubebuilder's one-minute requeue after creating a Deployment is over) and until
//!    kube-controller-manager has written nothing for 10 s (it gives every Deployment a
//!    ReplicaSet and a Pod, and updates their status), at most `--max-settle` seconds after the
//!    first create; then count requests during `--steady` seconds with nothing changing;
//! 5. read RSS and CPU time (utime+stime from /proc/<pid>/stat), stop the operator with SIGTERM.
//!
//! Requests are counted twice: `apiserver_request_total` (every client, by verb, diffed before
//! and after each phase) and the apiserver's audit log, which names each request's user agent,
//! so the operator's own requests are told apart from kube-controller-manager's, kubectl's and
//! this harness's. The audit log comes from a `kube-apiserver` wrapper in a private assets folder
//! (the harness takes its binaries from `KUBEBUILDER_ASSETS`), which adds the audit flags and
//! widens the service IP range to a /16 (the harness's /24 holds 254 Services; opsdk's operator
//! makes one per Application), and a `kube-controller-manager` wrapper that lifts its client
//! rate limit (see control_plane.rs).
//!
//! With `--flavor=floor` there is no operator: the harness creates the children itself and
//! times the API server alone (see floor.rs).
//!
//! Where each part lives: args.rs (flags), control_plane.rs (assets, start, CRDs), workload.rs
//! (namespaces and Applications), operator.rs (the manager's process), converge.rs (the watches),
//! sample.rs (RSS and CPU from /proc), metrics.rs (`apiserver_request_total`), audit.rs (the
//! audit log), run.rs (the phases), report.rs (the JSON), deployed.rs (`--deployed`: the
//! manager under its ServiceAccount, roles and admission policies).
//!
//! Usage (bench/run.sh calls it):
//!   opsdk-bench-harness --flavor=opsdk|kubebuilder --manager=BIN --crds=DIR --group=GROUP
//!     --out=FILE.json --logs=DIR [--apps=1000] [--image=nginx:latest] [--idle=15] [--settle=65]
//!     [--max-settle=480] [--steady=60] [--timeout=600] [--deployed=CONFIG_DEFAULT_DIR]
//!   opsdk-bench-harness --flavor=floor --out=FILE.json --logs=DIR [--apps=1000]

mod args;
mod audit;
mod control_plane;
mod converge;
mod deployed;
#[path = "../../../templates/tests/envtest/mod.rs"]
mod envtest;
mod floor;
mod metrics;
mod operator;
mod report;
mod run;
mod sample;
mod workload;

use std::process::ExitCode;

use args::{Flavor, parse_args};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(2);
        }
    };
    let result = control_plane::prepare_assets(&args.logs).and_then(|assets| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(async {
                // Interrupted (Ctrl-C, SIGTERM): dropping `run` stops the operator and the
                // control plane, which would otherwise outlive us.
                let report = async {
                    match args.flavor {
                        Flavor::Floor => floor::floor(&args, &assets).await,
                        _ => run::run(&args, &assets).await,
                    }
                };
                tokio::select! {
                    report = report => report,
                    () = interrupted() => Err("interrupted".into()),
                }
            })
    });
    match result {
        Ok(report) => {
            let text = serde_json::to_string_pretty(&report).expect("JSON");
            if let Err(err) = std::fs::write(&args.out, format!("{text}\n")) {
                eprintln!("error: writing {}: {err}", args.out.display());
                return ExitCode::FAILURE;
            }
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
