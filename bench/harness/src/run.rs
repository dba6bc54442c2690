//! One operator's run, phase by phase: the control plane, the operator, the creates,
//! convergence, the settle and the steady-state window. What it measured goes to the report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Error;
use crate::args::Args;
use crate::audit::{AuditTail, now_us, read_audit};
use crate::control_plane::{self, install_crds};
use crate::converge::Watches;
use crate::deployed;
use crate::metrics::scrape;
use crate::operator::{Operator, log_stats};
use crate::report::{Measured, Wall, diff_maps, report};
use crate::sample::{clock_ticks, control_plane_cpu, cpu_seconds, machine_busy_s, sample};
use crate::workload::{app_names, create_applications, create_namespaces};

/// The steady-state window starts once kube-controller-manager has written nothing for this long.
const KCM_QUIET: Duration = Duration::from_secs(10);

pub async fn run(args: &Args, assets: &Path) -> Result<Value, Error> {
    let ticks = clock_ticks()?;
    let (cp, client) = control_plane::start().await?;
    let kubeconfig = cp.kubeconfig().to_path_buf();
    install_crds(assets, &kubeconfig, &args.crds)?;
    let names = app_names(args.apps);
    create_namespaces(&client, &names).await?;
    let manager_kubeconfig = match &args.deployed {
        Some(config) => deployed::install(assets, &kubeconfig, config, &client, &args.logs).await?,
        None => kubeconfig.clone(),
    };

    let mut operator = Operator::start(args, &manager_kubeconfig)?;
    let pid = operator.pid();
    operator.wait_ready(Duration::from_secs(60)).await?;
    let ready_s = operator.started.elapsed().as_secs_f64();

    // Convergence watches start now, so their initial lists are done long before the creates.
    let watches = Watches::start(&client, args, &names);

    tokio::time::sleep(args.idle).await;
    operator.ensure_running()?;
    let idle = sample(pid, ticks)?;

    // Create the Applications.
    let m0 = scrape(&client).await?;
    let cp0 = control_plane_cpu(ticks);
    let busy0 = machine_busy_s(ticks);
    let self0 = cpu_seconds(std::process::id(), ticks).unwrap_or_default();
    let t0_wall = now_us();
    let t0 = Instant::now();
    create_applications(&client, args, &names).await?;
    let created_s = t0.elapsed().as_secs_f64();

    let converged = watches.wait(args.timeout).await?;
    let t1 = converged.all();
    let t1_wall = t0_wall + (t1 - t0).as_micros() as i64;
    operator.ensure_running()?;
    let at_converged = sample(pid, ticks)?;

    // Settle, then the steady-state window.
    let audit_log = args.logs.join("audit.log");
    let (kcm_quiet, kcm_last_write_us) =
        settle(audit_log.clone(), t1 + args.settle, t0 + args.max_settle).await?;
    let steady_start = Instant::now();
    let m1 = scrape(&client).await?;
    let s0_wall = now_us();
    let before_steady = sample(pid, ticks)?;
    tokio::time::sleep(args.steady).await;
    let m2 = scrape(&client).await?;
    let s1_wall = now_us();
    operator.ensure_running()?;
    let end = sample(pid, ticks)?;
    let cp1 = control_plane_cpu(ticks);
    let busy1 = machine_busy_s(ticks);
    let self1 = cpu_seconds(std::process::id(), ticks).unwrap_or_default();
    let control_plane_cpu_s = diff_maps(&cp0, &cp1);
    let ours_cpu =
        (end.cpu_s - idle.cpu_s) + (self1 - self0) + control_plane_cpu_s.values().sum::<f64>();
    let create_to_end_s = t0.elapsed().as_secs_f64();
    let operator_exit = operator.stop(Duration::from_secs(15));
    drop(cp);

    // The audit log: who sent what, when.
    let requests = read_audit(&audit_log)?;
    let since = |t: Instant| t.duration_since(t0).as_secs_f64();
    let measured = Measured {
        ready_s,
        create_s: created_s,
        converge_s: since(t1),
        deployments_converged_s: since(converged.deployments),
        services_converged_s: converged.services.map(since),
        steady_window_starts_after_create_s: since(steady_start),
        kcm_quiet_before_window: kcm_quiet,
        kcm_last_write_after_create_s: (kcm_last_write_us - t0_wall) as f64 / 1e6,
        create_to_end_s,
        wall: Wall {
            operator_started: operator.started_wall_us,
            first_create: t0_wall,
            converged: t1_wall,
            steady_start: s0_wall,
            steady_end: s1_wall,
        },
        idle,
        at_converged,
        before_steady,
        end,
        control_plane_cpu_s,
        // Busy CPU time of the whole machine over the same span minus the operator's, the
        // control plane's and this harness's: what anything else on the machine used.
        other_processes_cpu_s: busy1 - busy0 - ours_cpu,
        metrics: [m0, m1, m2],
        operator_exit,
        manager_log: log_stats(&args.logs)?,
    };
    Ok(report(args, &measured, &requests))
}

/// Follows the audit log until `earliest` has passed and kube-controller-manager has written
/// nothing for `KCM_QUIET`, or until `latest`. Returns whether it was quiet, and when (µs since
/// 1970) its last write was received.
async fn settle(
    audit_log: PathBuf,
    earliest: Instant,
    latest: Instant,
) -> Result<(bool, i64), Error> {
    let mut tail = AuditTail::new(audit_log);
    let quiet = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        tail.poll()?;
        let now = Instant::now();
        let quiet_us = now_us() - tail.last_kcm_write_us;
        if now >= earliest && quiet_us >= KCM_QUIET.as_micros() as i64 {
            break true;
        }
        if now >= latest {
            break false;
        }
    };
    Ok((quiet, tail.last_kcm_write_us))
}
