//! The k8s-operator-talk manager: runs every controller against the cluster in the
//! kubeconfig (or the in-cluster service account), with metrics, health probes and optional
//! leader election, and serves the admission webhooks. Stops gracefully on SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tracing::{error, info, warn};

use k8s_operator_talk::api_client;
use k8s_operator_talk::context::Settings;
use k8s_operator_talk::leader::{self, Leadership, Timings};
use k8s_operator_talk::metrics::Metrics;
use k8s_operator_talk::metrics_auth::Authorizer;
use k8s_operator_talk::server::{self, Ready};
use k8s_operator_talk::shutdown::Shutdown;
use k8s_operator_talk::telemetry::{self, LogFlags};
use k8s_operator_talk::tls::{CertFiles, ServingCert};
use k8s_operator_talk::watches::{Namespaces, Watches};
use k8s_operator_talk::{BLOCKING_THREADS, Context, controller, webhook};

/// How long the controllers may take to finish their reconciles after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the webhooks are still served after SIGTERM: the API server learns that this Pod
/// has left the webhook Service a moment after the kubelet signals it, and calls it until
/// then. With the 5 s drain after it, within the Pod's 10 s grace period.
const WEBHOOK_LINGER: Duration = Duration::from_secs(3);
/// How long the last reconciles' events may take to be recorded at shutdown.
const EVENTS_FLUSH: Duration = Duration::from_secs(2);
/// How often a metrics certificate read from files is checked for a renewal.
const CERT_RELOAD_PERIOD: Duration = Duration::from_secs(10);

#[derive(Debug, Parser)]
// A flag given twice takes its last value, as Go's flag package reads it: the Helm chart and
// kustomize patches append flags to the ones the manifests already pass.
#[command(
    version,
    about = "Runs the k8s-operator-talk controllers",
    args_override_self = true
)]
struct Args {
    /// Address of the Prometheus metrics endpoint, e.g. ":8443" (every interface); "0" disables it
    #[arg(long, default_value = ":8443")]
    metrics_bind_address: String,
    /// Serve metrics over HTTPS to authenticated and authorized clients only (a TokenReview
    /// and a SubjectAccessReview per token); false serves plain HTTP to anyone
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    metrics_secure: bool,
    /// Directory holding the metrics serving certificate; without it a self-signed one is made
    #[arg(long, alias = "metrics-cert-dir")]
    metrics_cert_path: Option<PathBuf>,
    /// File name of the metrics serving certificate in --metrics-cert-path
    #[arg(long, default_value = "tls.crt")]
    metrics_cert_name: String,
    /// File name of the metrics serving certificate's key in --metrics-cert-path
    #[arg(long, default_value = "tls.key")]
    metrics_cert_key: String,
    /// Address of the /healthz and /readyz probes; "0" disables them
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Hold a Lease so that only one replica reconciles at a time
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    leader_elect: bool,
    /// Namespace of the leader-election Lease
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    leader_election_namespace: String,
    /// Objects of one kind reconciled at once
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    max_concurrent_reconciles: u16,
    /// How often a quiet object is checked again against the caches, e.g. 300s, 5m, 1h
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    sync_period: Duration,
    /// How long the watches may take to list their objects before the manager gives up and
    /// exits (a CRD not installed, a verb missing from the role), e.g. 30s, 2m
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    cache_sync_timeout: Duration,
    #[command(flatten)]
    logs: LogFlags,
    /// kubebuilder's flag, taken so that its manifests start: only HTTP/1.1 is served, as with
    /// its default (false), so true is refused
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_parser = http2_off)]
    enable_http2: bool,
    /// Namespaces to watch, comma-separated (a namespace-scoped manager's own, from
    /// config/manager/manager.yaml); every namespace when empty
    #[arg(long, env = "WATCH_NAMESPACE", default_value = "", value_parser = Namespaces::parse)]
    watch_namespace: Namespaces,
    #[command(flatten)]
    webhooks: webhook::Flags,
}

/// `--enable-http2`: false, the only value a manager serving HTTP/1.1 alone can honour.
fn http2_off(text: &str) -> Result<bool, String> {
    match text {
        "false" => Ok(false),
        "true" => Err("HTTP/2 is not served (kubebuilder turns it off by default too, against HTTP/2 Rapid Reset, CVE-2023-44487): drop --enable-http2".into()),
        _ => Err(format!("{text:?}: expected true or false")),
    }
}

/// A whole number of seconds, minutes or hours: `90s`, `5m`, `1h`, at most a week (a later
/// instant would overflow the clock's arithmetic in the schedulers that add it to now).
fn parse_duration(text: &str) -> Result<Duration, String> {
    const MAX_SECONDS: u64 = 7 * 24 * 3600;
    let unit = |suffix: char, scale: u64| text.strip_suffix(suffix).map(|number| (number, scale));
    let Some((number, scale)) = unit('s', 1)
        .or_else(|| unit('m', 60))
        .or_else(|| unit('h', 3600))
    else {
        return Err(format!(
            "{text:?}: expected a number and a unit, s, m or h (e.g. 5m)"
        ));
    };
    match number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(seconds @ 1..=MAX_SECONDS) => Ok(Duration::from_secs(seconds)),
        _ => Err(format!(
            "{text:?}: expected a positive whole number before the unit, at most a week"
        )),
    }
}

// One thread runs the whole manager: controllers, servers, Lease. A reconcile waits on the API
// server, not on the CPU (converging 1,000 Applications costs the manager about 4 s of CPU), and
// a worker thread per core costs each its own malloc arena and stack: about 2 MB of RSS with
// 1,000 Applications, for no faster convergence (measured on 2 cores). A reconciler that
// computes may want `new_multi_thread()` (tokio's rt-multi-thread feature).
fn main() -> ExitCode {
    let args = Args::parse();
    // Written out when main returns, last lines included.
    let _logs = telemetry::init(&args.logs);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build();
    let ran = match runtime {
        Ok(runtime) => {
            let ran = runtime.block_on(run(args));
            // Nothing left on a blocking thread (a review still decoding, a credential
            // plugin that hangs) is of use any more: not waited for.
            runtime.shutdown_background();
            ran
        }
        Err(err) => Err(format!("starting the runtime: {err}").into()),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            error!("{err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let shutdown = Shutdown::on_signals()?;
    let metrics = Arc::new(Metrics::default());
    let client = api_client::connect(&metrics.client_requests).await?;
    // Ready once the controllers are (or stand by for the Lease) and the webhooks are served.
    let (ready, webhooks_listening) = (Ready::default(), Ready::default());
    let metrics_listener = server::bind(&args.metrics_bind_address).await?;
    let (tls, auth) = match (&metrics_listener, args.metrics_secure) {
        (Some(_), true) => {
            let cert = Arc::new(serving_cert(&args)?);
            tokio::spawn(cert.clone().reload_every(CERT_RELOAD_PERIOD));
            (
                Some(cert.server_config()),
                Some(Authorizer::new(client.clone())),
            )
        }
        _ => (None, None),
    };
    let metrics_server = server::serve(
        metrics_listener,
        tls,
        server::connections::METRICS,
        server::metrics_router(metrics.clone(), auth),
        shutdown.clone().requested(),
    );
    let health_server = server::serve(
        server::bind(&args.health_probe_bind_address).await?,
        None,
        server::connections::PROBES,
        server::health_router(vec![ready.clone(), webhooks_listening.clone()]),
        shutdown.clone().requested(),
    );
    let servers = tokio::spawn(async move { tokio::try_join!(metrics_server, health_server) });
    // Every replica serves the webhooks, leading or not.
    // A webhook server that fails (its port taken, its certificate files unreadable) stops
    // the manager: with failurePolicy Fail, running on without it would leave the kind
    // unwritable behind a Pod that looks healthy.
    let (webhook_failed, failure) = tokio::sync::oneshot::channel::<String>();
    // Resolves only on a failure: a server that stops cleanly (no webhooks, or shutdown)
    // drops the sender, and a closed channel must not end the manager nor be polled again.
    let mut webhooks_down = std::pin::pin!(async move {
        match failure.await {
            Ok(failed) => failed,
            Err(_) => std::future::pending().await,
        }
    });
    let webhooks = tokio::spawn({
        let (client, flags) = (client.clone(), args.webhooks.clone());
        let stop = shutdown.clone().requested();
        let stop = async {
            stop.await;
            tokio::time::sleep(WEBHOOK_LINGER).await;
            info!("no longer accepting webhook connections");
        };
        async move {
            let served = webhook::run(client, flags, webhooks_listening, stop).await;
            if let Err(err) = &served {
                let _ = webhook_failed.send(format!("serving the webhooks: {err}"));
            }
            served
        }
    });

    let mut leadership = None;
    if args.leader_elect {
        // A standby is ready: it only waits for the Lease, and a rolling update of the
        // manager's Deployment must not wait for it to lead.
        ready.set();
        let identity = leader::identity();
        info!(namespace = %args.leader_election_namespace, %identity, "waiting for leadership");
        metrics.leading(leader::LEASE, false);
        tokio::select! {
            acquired = Leadership::acquire(client.clone(), &args.leader_election_namespace, leader::LEASE, identity, Timings::DEFAULT) => leadership = Some(acquired?),
            () = shutdown.clone().requested() => return stopped(servers, webhooks).await,
            failed = &mut webhooks_down => return Err(failed.into()),
        }
        info!("leading");
        metrics.leading(leader::LEASE, true);
    }

    let settings = Settings {
        max_concurrent_reconciles: args.max_concurrent_reconciles,
        sync_period: args.sync_period,
        namespaces: args.watch_namespace,
        ..Settings::default()
    };
    info!(namespaces = %settings.namespaces, "watching");
    let ctx = Arc::new(Context::with_settings(client, metrics, settings));
    info!("starting controllers");
    let controllers = stop_within(
        STOP_TIMEOUT,
        &shutdown,
        &ctx.watches,
        controller::run(ctx.clone()),
    );
    // Ready once every watch has listed its objects; exits when one cannot within the
    // timeout, so that a missing CRD or RBAC rule shows as a crash loop, not an idle Pod.
    let started = async {
        ctx.watches.wait(args.cache_sync_timeout).await?;
        info!("caches synced");
        ready.set();
        std::future::pending::<Result<(), Box<dyn std::error::Error>>>().await
    };
    let lost = async {
        match leadership.as_mut() {
            Some(leadership) => leadership.lost().await,
            None => std::future::pending().await,
        }
    };
    let failed: Option<Box<dyn std::error::Error>> = tokio::select! {
        () = controllers => None,
        // As controller-runtime does: never reconcile without the Lease.
        lost = lost => return Err(lost.into()),
        Err(not_started) = started => Some(not_started),
        failed = &mut webhooks_down => Some(failed.into()),
    };
    // Released now (the controllers are stopped: a reconcile still running was dropped), a
    // standby leads within its retry period (2 s) instead of waiting for the Lease to expire
    // (15 s), after a failure too.
    // Both at once, so that the worst case (5 s of reconciles, then 3 s for the Lease and 2 s
    // for the events side by side) stays 2 s inside the Pod's 10 s grace period.
    let release = async {
        if let Some(leadership) = leadership {
            leadership.release().await;
        }
    };
    tokio::join!(release, ctx.events.flush(EVENTS_FLUSH));
    if let Some(failed) = failed {
        return Err(failed);
    }
    stopped(servers, webhooks).await
}

/// Waits for the endpoints to finish serving after a shutdown signal, so that no request in
/// flight (an admission review above all) is cut off.
async fn stopped(
    servers: tokio::task::JoinHandle<std::io::Result<((), ())>>,
    webhooks: tokio::task::JoinHandle<Result<(), webhook::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    servers.await??;
    webhooks
        .await?
        .map_err(|err| -> Box<dyn std::error::Error> { err })?;
    info!("stopped");
    Ok(())
}

/// The metrics serving certificate: from --metrics-cert-path, else self-signed.
fn serving_cert(args: &Args) -> Result<ServingCert, Box<dyn std::error::Error>> {
    let Some(dir) = &args.metrics_cert_path else {
        info!("serving metrics with a self-signed certificate");
        return Ok(ServingCert::self_signed()?);
    };
    info!(dir = %dir.display(), "serving metrics with the certificate in the directory");
    Ok(ServingCert::from_files(CertFiles {
        dir: dir.clone(),
        cert: args.metrics_cert_name.clone(),
        key: args.metrics_cert_key.clone(),
    })?)
}

/// Runs `controllers` until they stop on `shutdown` (SIGTERM), having finished their reconciles, or
/// until `limit` after SIGTERM: then the Lease is still released and the process exits within
/// the Pod's termination grace period (10 s), however long a reconcile would take. Before
/// every watch has listed, nothing is worth waiting for (and kube's controller would not
/// stop): it stops at once.
async fn stop_within(
    limit: Duration,
    shutdown: &Shutdown,
    watches: &Watches,
    controllers: impl Future<Output = ()>,
) {
    let overdue = async {
        shutdown.clone().requested().await;
        if watches.listed() {
            tokio::time::sleep(limit).await;
            warn!("reconciles still running {limit:?} after the signal; stopping without them");
        } else {
            info!("stopping before the watches have listed");
        }
    };
    tokio::select! {
        () = controllers => info!("controllers stopped"),
        () = overdue => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boolean_flags_are_read_as_go_reads_them() {
        for (flags, expected) in [
            (vec![], (false, true, true)),
            (vec!["--leader-elect"], (true, true, true)),
            (
                vec!["--leader-elect=false", "--metrics-secure=false"],
                (false, false, true),
            ),
            (
                vec![
                    "--leader-elect",
                    "--metrics-secure",
                    "--enable-webhooks=false",
                ],
                (true, true, false),
            ),
            (
                vec!["--leader-elect=true", "--metrics-secure", "false"],
                (true, false, true),
            ),
        ] {
            let args = Args::try_parse_from(std::iter::once("manager").chain(flags.clone()))
                .unwrap_or_else(|err| panic!("{flags:?}: {err}"));
            assert_eq!(
                (
                    args.leader_elect,
                    args.metrics_secure,
                    args.webhooks.enable_webhooks
                ),
                expected,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn durations_are_whole_units_up_to_a_week() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("168h"), Ok(Duration::from_secs(604_800)));
        for bad in [
            "",
            "5",
            "0s",
            "-1m",
            "1.5h",
            "169h",
            "18446744073709551615h",
            "5é",
            "ém",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn enable_http2_is_taken_when_false_and_refused_when_true() {
        let parse = |flags: &[&str]| {
            Args::try_parse_from(std::iter::once("manager").chain(flags.iter().copied()))
        };
        assert!(!parse(&["--enable-http2=false"]).unwrap().enable_http2);
        for on in [&["--enable-http2"][..], &["--enable-http2=true"]] {
            let refused = parse(on).unwrap_err().to_string();
            assert!(
                refused.contains("HTTP/2 is not served"),
                "{on:?}: {refused}"
            );
        }
    }

    #[test]
    fn a_flag_given_twice_takes_its_last_value() {
        let flags = [
            "manager",
            "--leader-elect",
            "--metrics-bind-address",
            ":8443",
        ];
        let again = ["--leader-elect=false", "--metrics-bind-address=:9443"];
        let args = Args::try_parse_from(flags.into_iter().chain(again)).unwrap();
        assert!(!args.leader_elect);
        assert_eq!(args.metrics_bind_address, ":9443");
    }
}
