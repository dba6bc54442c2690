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
//! rate limit (see `KCM_QPS`).
//!
//! With `--flavor=floor` there is no operator: the harness creates the children itself and
//! times the API server alone (see floor.rs).
//!
//! Usage (bench/run.sh calls it):
//!   opsdk-bench-harness --flavor=opsdk|kubebuilder --manager=BIN --crds=DIR --group=GROUP
//!     --out=FILE.json --logs=DIR [--apps=1000] [--image=nginx:latest] [--idle=15] [--settle=65]
//!     [--max-settle=480] [--steady=60] [--timeout=600]
//!   opsdk-bench-harness --flavor=floor --out=FILE.json --logs=DIR [--apps=1000]

#[path = "../../../templates/tests/envtest/mod.rs"]
mod envtest;
mod floor;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// This harness's own requests carry this user agent, so the audit log tells them apart.
const USER_AGENT: &str = "opsdk-bench-harness";
/// The same controllers as opsdk's end-to-end test: owners' garbage collection, Deployments
/// that get ReplicaSets that get Pods (which stay Pending: no scheduler, no kubelet).
const KCM_CONTROLLERS: &[&str] = &[
    "garbage-collector-controller",
    "deployment-controller",
    "replicaset-controller",
    "namespace-controller",
];
/// kube-controller-manager's client rate limit: its default (20/s) would keep it busy for
/// minutes after 1,000 Deployments appear, so a steady state would come only after the 30 minutes
/// the whole benchmark may take. With this it keeps up as fast as the CPU lets it.
const KCM_QPS: u32 = 500;
/// The steady-state window starts once kube-controller-manager has written nothing for this long.
const KCM_QUIET: Duration = Duration::from_secs(10);
const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const CREATE_CONCURRENCY: usize = 32;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Flavor {
    Opsdk,
    Kubebuilder,
    /// No operator: the API server alone.
    Floor,
}

struct Args {
    flavor: Flavor,
    manager: PathBuf,
    crds: PathBuf,
    group: String,
    apps: usize,
    image: String,
    out: PathBuf,
    logs: PathBuf,
    idle: Duration,
    settle: Duration,
    max_settle: Duration,
    steady: Duration,
    timeout: Duration,
}

fn parse_args() -> Result<Args, Error> {
    let mut map = HashMap::new();
    for arg in std::env::args().skip(1) {
        let (key, value) = arg
            .strip_prefix("--")
            .and_then(|a| a.split_once('='))
            .ok_or_else(|| format!("bad argument {arg:?}: expected --key=value"))?;
        map.insert(key.to_string(), value.to_string());
    }
    let get = |key: &str| -> Result<String, Error> {
        map.get(key)
            .cloned()
            .ok_or_else(|| format!("missing --{key}=...").into())
    };
    let secs = |key: &str, default: u64| -> Result<Duration, Error> {
        let value = map.get(key).map(|v| v.parse::<u64>()).transpose()?;
        Ok(Duration::from_secs(value.unwrap_or(default)))
    };
    let flavor = match get("flavor")?.as_str() {
        "opsdk" => Flavor::Opsdk,
        "kubebuilder" => Flavor::Kubebuilder,
        "floor" => Flavor::Floor,
        other => {
            return Err(format!("--flavor={other}: expected opsdk, kubebuilder or floor").into());
        }
    };
    // The floor runs no operator, so it needs no manager, CRDs or group.
    let operator = flavor != Flavor::Floor;
    let path = |key: &str| -> Result<PathBuf, Error> {
        Ok(if operator {
            std::fs::canonicalize(get(key)?)?
        } else {
            PathBuf::new()
        })
    };
    Ok(Args {
        flavor,
        manager: path("manager")?,
        crds: path("crds")?,
        group: if operator {
            get("group")?
        } else {
            String::new()
        },
        apps: map
            .get("apps")
            .map(|v| v.parse())
            .transpose()?
            .unwrap_or(1000),
        image: map
            .get("image")
            .cloned()
            .unwrap_or_else(|| "nginx:latest".into()),
        out: PathBuf::from(get("out")?),
        logs: PathBuf::from(get("logs")?),
        idle: secs("idle", 15)?,
        settle: secs("settle", 65)?,
        max_settle: secs("max-settle", 480)?,
        steady: secs("steady", 60)?,
        timeout: secs("timeout", 600)?,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(2);
        }
    };
    let result = prepare_assets(&args.logs).and_then(|assets| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(async {
                // Interrupted (Ctrl-C, SIGTERM): dropping `run` stops the operator and the
                // control plane, which would otherwise outlive us.
                let report = async {
                    match args.flavor {
                        Flavor::Floor => floor::floor(&args, &assets).await,
                        _ => run(&args, &assets).await,
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

/// A private assets folder: the real etcd, kube-controller-manager and kubectl, and a
/// kube-apiserver wrapper that adds an audit log and a /16 service range. Points
/// `KUBEBUILDER_ASSETS` at it (before any thread starts) and returns it.
fn prepare_assets(logs: &Path) -> Result<PathBuf, Error> {
    let real =
        PathBuf::from(std::env::var_os("KUBEBUILDER_ASSETS").ok_or(
            "KUBEBUILDER_ASSETS must name the control-plane binaries (hack/k8s-assets.sh)",
        )?);
    std::fs::create_dir_all(logs)?;
    let logs = std::fs::canonicalize(logs)?;
    let assets = logs.join("assets");
    let _ = std::fs::remove_dir_all(&assets);
    std::fs::create_dir_all(&assets)?;
    for bin in ["etcd", "kubectl"] {
        std::os::unix::fs::symlink(real.join(bin), assets.join(bin))?;
    }
    let policy = logs.join("audit-policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
    )?;
    let audit = logs.join("audit.log");
    let _ = std::fs::remove_file(&audit);
    let wrapper = assets.join("kube-apiserver");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n# kube-apiserver with an audit log (who sent each request) and room for 65k Services.\n\
             exec '{}' \"$@\" --audit-policy-file='{}' --audit-log-path='{}' --audit-log-format=json \
             --audit-log-mode=blocking --service-cluster-ip-range=10.0.0.0/16\n",
            real.join("kube-apiserver").display(),
            policy.display(),
            audit.display()
        ),
    )?;
    let kcm = assets.join("kube-controller-manager");
    std::fs::write(
        &kcm,
        format!(
            "#!/bin/sh\n# kube-controller-manager without its client rate limit (20 requests/s by default).\n\
             exec '{}' \"$@\" --kube-api-qps={KCM_QPS} --kube-api-burst={}\n",
            real.join("kube-controller-manager").display(),
            2 * KCM_QPS
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    for script in [&wrapper, &kcm] {
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755))?;
    }
    // SAFETY: no other thread exists yet (the runtime is built after this).
    unsafe { std::env::set_var("KUBEBUILDER_ASSETS", &assets) };
    Ok(assets)
}

async fn run(args: &Args, assets: &Path) -> Result<Value, Error> {
    let ticks = clock_ticks()?;
    let mut cp = envtest::ControlPlane::start()
        .await?
        .ok_or("KUBEBUILDER_ASSETS is not set")?;
    cp.start_controller_manager(KCM_CONTROLLERS)?;
    let kubeconfig = cp.kubeconfig().to_path_buf();
    let client = harness_client(&kubeconfig).await?;
    let kubectl = |argv: &[&str]| -> Result<(), Error> {
        let out = Command::new(assets.join("kubectl"))
            .args(argv)
            .env("KUBECONFIG", &kubeconfig)
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "kubectl {} failed: {}",
                argv.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(())
    };
    let crds = args.crds.display().to_string();
    kubectl(&["apply", "--server-side", "-f", &crds])?;
    kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=60s",
    ])?;

    let names: Vec<String> = (0..args.apps).map(|i| format!("app-{i:04}")).collect();
    create_namespaces(&client, &names).await?;

    // The operator, as `make run` would start it, with metrics off (nothing scrapes them).
    let probe_port = free_port()?;
    let mut cmd = Command::new(&args.manager);
    cmd.args([
        "--metrics-bind-address=0".to_string(),
        format!("--health-probe-bind-address=127.0.0.1:{probe_port}"),
    ])
    .env("KUBECONFIG", &kubeconfig)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(args.logs.join("manager.log"))?)
    .stderr(std::fs::File::create(args.logs.join("manager.err"))?);
    if args.flavor == Flavor::Kubebuilder {
        // kubebuilder's deploy-image controller reads the operand image from the environment
        // (config/manager/manager.yaml sets it in the cluster).
        cmd.env("APPLICATION_IMAGE", &args.image);
    }
    let started_wall = now_us();
    let started = Instant::now();
    let mut operator = Operator(cmd.spawn()?);
    let pid = operator.0.id();
    wait_ready(probe_port, &mut operator, Duration::from_secs(60)).await?;
    let ready_s = started.elapsed().as_secs_f64();

    // Convergence watchers start now, so their initial lists are done long before the creates.
    let children = |suffix: &str| -> HashSet<String> {
        names.iter().map(|n| format!("{n}/{n}{suffix}")).collect()
    };
    let (image, port) = (args.image.clone(), 80);
    let deployments = {
        let want = children(match args.flavor {
            Flavor::Opsdk => "-deployment",
            Flavor::Kubebuilder => "",
            Flavor::Floor => unreachable!("the floor runs no operator"),
        });
        let image = image.clone();
        tokio::spawn(converged(
            Api::<Deployment>::all(client.clone()),
            want,
            move |d: &Deployment| deployment_ok(d, &image, port),
        ))
    };
    let services = (args.flavor == Flavor::Opsdk).then(|| {
        tokio::spawn(converged(
            Api::<Service>::all(client.clone()),
            children("-service"),
            move |s: &Service| service_ok(s, port),
        ))
    });

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
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&args.group, "v1alpha1", "Application"),
        "applications",
    );
    let api_version = format!("{}/v1alpha1", args.group);
    stream::iter(names.iter().cloned())
        .map(|name| {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &name, &resource);
            let spec = match args.flavor {
                Flavor::Opsdk => json!({"image": args.image, "replicas": 1, "port": port}),
                Flavor::Kubebuilder => json!({"size": 1, "containerPort": port}),
                Flavor::Floor => unreachable!("the floor runs no operator"),
            };
            let obj = json!({
                "apiVersion": api_version,
                "kind": "Application",
                "metadata": {"name": name, "namespace": name},
                "spec": spec,
            });
            async move {
                let obj: DynamicObject = serde_json::from_value(obj)?;
                api.create(&PostParams::default(), &obj).await?;
                Ok::<_, Error>(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    let created_s = t0.elapsed().as_secs_f64();

    let deadline = args.timeout;
    let deployments_done = tokio::time::timeout(deadline, deployments)
        .await
        .map_err(|_| format!("Deployments not converged after {deadline:?}"))???;
    let services_done = match services {
        Some(task) => Some(
            tokio::time::timeout(deadline, task)
                .await
                .map_err(|_| format!("Services not converged after {deadline:?}"))???,
        ),
        None => None,
    };
    let t1 = services_done.map_or(deployments_done, |s| s.max(deployments_done));
    let t1_wall = t0_wall + (t1 - t0).as_micros() as i64;
    operator.ensure_running()?;
    let at_converged = sample(pid, ticks)?;

    // Settle, then the steady-state window.
    let earliest = t1 + args.settle;
    let latest = t0 + args.max_settle;
    let mut tail = AuditTail::new(args.logs.join("audit.log"));
    let kcm_quiet = loop {
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
    let steady_start = Instant::now();
    let kcm_last_write_s = (tail.last_kcm_write_us - t0_wall) as f64 / 1e6;
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
    let ours_cpu =
        (end.cpu_s - idle.cpu_s) + (self1 - self0) + diff_maps(&cp0, &cp1).values().sum::<f64>();
    let elapsed_s = t0.elapsed().as_secs_f64();
    let exit = operator.stop(Duration::from_secs(15));
    drop(cp);

    // The audit log: who sent what, when.
    let requests = read_audit(&args.logs.join("audit.log"))?;
    // From the operator's start: the harness's own readiness probes before it carry no user agent.
    let ours: Vec<&AuditRequest> = requests
        .iter()
        .filter(|r| r.who == "operator" && r.at_us >= started_wall)
        .collect();
    let window = |from: i64, to: i64| -> Vec<&AuditRequest> {
        ours.iter()
            .copied()
            .filter(|r| r.at_us >= from && r.at_us < to)
            .collect()
    };
    let startup = window(started_wall, t0_wall);
    let to_converged = window(t0_wall, t1_wall + 1);
    let converge = window(t0_wall, s0_wall);
    let steady = window(s0_wall, s1_wall);
    let steady_writes = steady
        .iter()
        .filter(|r| WRITE_VERBS.contains(&r.verb.as_str()))
        .count();
    let mut user_agents: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &ours {
        *user_agents.entry(r.user_agent.as_str()).or_default() += 1;
    }
    let mut clients: BTreeMap<&str, usize> = BTreeMap::new();
    for r in requests
        .iter()
        .filter(|r| r.at_us >= t0_wall && r.at_us < s0_wall)
    {
        *clients.entry(r.who).or_default() += 1;
    }

    let mb = |kb: u64| round(kb as f64 / 1024.0, 1);
    let (log_lines, log_errors) = log_stats(&args.logs)?;
    Ok(json!({
        "flavor": format!("{:?}", args.flavor).to_lowercase(),
        "apps": args.apps,
        "image": args.image,
        "kube_controller_manager": KCM_CONTROLLERS,
        "ready_s": round(ready_s, 2),
        "create_s": round(created_s, 2),
        "converge_s": round((t1 - t0).as_secs_f64(), 2),
        "deployments_converged_s": round((deployments_done - t0).as_secs_f64(), 2),
        "services_converged_s": services_done.map(|s| round((s - t0).as_secs_f64(), 2)),
        "steady_window_starts_after_create_s": round(steady_start.duration_since(t0).as_secs_f64(), 1),
        "kcm_quiet_before_window": kcm_quiet,
        "kcm_last_write_after_create_s": round(kcm_last_write_s, 1),
        "steady_window_s": round((s1_wall - s0_wall) as f64 / 1e6, 1),
        "rss_idle_mb": mb(idle.rss_kb),
        "rss_converged_mb": mb(at_converged.rss_kb),
        "rss_steady_start_mb": mb(before_steady.rss_kb),
        "rss_1000_mb": mb(end.rss_kb),
        "rss_anon_idle_mb": mb(idle.anon_kb),
        "rss_anon_1000_mb": mb(end.anon_kb),
        "rss_peak_mb": mb(end.hwm_kb),
        "threads_end": end.threads,
        "cpu_s": round(end.cpu_s, 2),
        "cpu_idle_s": round(idle.cpu_s, 2),
        "cpu_to_converged_s": round(at_converged.cpu_s - idle.cpu_s, 2),
        "cpu_steady_s": round(end.cpu_s - before_steady.cpu_s, 2),
        "control_plane_cpu_s_from_create_to_end": diff_maps(&cp0, &cp1),
        // Busy CPU time of the whole machine over the same span minus the operator's, the
        // control plane's and this harness's: what anything else on the machine used.
        "other_processes_cpu_s_from_create_to_end": round(busy1 - busy0 - ours_cpu, 1),
        "create_to_end_s": round(elapsed_s, 1),
        "steady_state_writes": steady_writes,
        "requests_per_app": round(converge.len() as f64 / args.apps as f64, 2),
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
            "create_to_steady_window_by_verb": diff_maps(&by_metric_verb(&m0), &by_metric_verb(&m1)),
            "steady_window_by_verb": diff_maps(&by_metric_verb(&m1), &by_metric_verb(&m2)),
            "steady_window_writes_by_resource": diff_maps(&metric_writes(&m1), &metric_writes(&m2)),
        },
        "operator_exit": exit,
        "manager_log_lines": log_lines,
        "manager_log_error_lines": log_errors,
    }))
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

/// The namespaces `names`, 32 requests in flight.
async fn create_namespaces(client: &Client, names: &[String]) -> Result<(), Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    stream::iter(names.iter().cloned())
        .map(|name| {
            let api = namespaces.clone();
            async move {
                let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
                api.create(&PostParams::default(), &ns).await?;
                Ok::<_, Error>(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// A client that sends this harness's user agent.
async fn harness_client(kubeconfig: &Path) -> Result<Client, Error> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    Ok(Client::try_from(config)?)
}

fn deployment_ok(d: &Deployment, image: &str, port: i32) -> bool {
    let spec = &d.spec;
    let Some(container) = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
    else {
        return false;
    };
    let container_port = container
        .ports
        .as_ref()
        .and_then(|p| p.first())
        .map(|p| p.container_port);
    spec.replicas == Some(1)
        && container.image.as_deref() == Some(image)
        && container_port == Some(port)
}

fn service_ok(s: &Service, port: i32) -> bool {
    s.spec
        .as_ref()
        .and_then(|spec| spec.ports.as_ref())
        .and_then(|ports| ports.first())
        .is_some_and(|p| p.port == port)
}

/// Watches `api` until every object named in `want` (`namespace/name`) satisfies `ok`;
/// returns when that was first seen.
async fn converged<K>(
    api: Api<K>,
    want: HashSet<String>,
    ok: impl Fn(&K) -> bool + Send + 'static,
) -> Result<Instant, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let mut good: HashSet<String> = HashSet::new();
    let mut listing = false;
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        let key = |o: &K| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any());
        match event {
            watcher::Event::Init => {
                good.clear();
                listing = true;
            }
            watcher::Event::InitDone => listing = false,
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                let k = key(&o);
                if want.contains(&k) && ok(&o) {
                    good.insert(k);
                } else {
                    good.remove(&k);
                }
            }
            watcher::Event::Delete(o) => {
                good.remove(&key(&o));
            }
        }
        if !listing && good.len() == want.len() {
            return Ok(Instant::now());
        }
    }
    Err("watch ended".into())
}

/// The operator's process, killed if the run fails before it is stopped.
struct Operator(Child);

impl Operator {
    fn ensure_running(&mut self) -> Result<(), Error> {
        match self.0.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!("the operator exited early: {status}").into()),
        }
    }

    /// SIGTERM, as the kubelet would; SIGKILL after `grace`. Returns how it ended.
    fn stop(&mut self, grace: Duration) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.0.try_wait() {
                return format!("SIGTERM: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        format!("did not stop within {grace:?} of SIGTERM; killed")
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_ready(port: u16, operator: &mut Operator, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        operator.ensure_running()?;
        if http_get(port, "/readyz").is_ok_and(|r| r.starts_with("HTTP/1.1 200")) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the operator was not ready after {timeout:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

struct Sample {
    rss_kb: u64,
    anon_kb: u64,
    hwm_kb: u64,
    threads: u64,
    cpu_s: f64,
}

fn sample(pid: u32, ticks: f64) -> Result<Sample, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok(Sample {
        rss_kb: field("VmRSS:"),
        anon_kb: field("RssAnon:"),
        hwm_kb: field("VmHWM:"),
        threads: field("Threads:"),
        cpu_s: cpu_seconds(pid, ticks).ok_or("cannot read /proc/<pid>/stat")?,
    })
}

/// utime + stime of `pid`, in seconds.
fn cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks)
}

/// Busy CPU seconds of the whole machine since boot (all cores), from /proc/stat.
fn machine_busy_s(ticks: f64) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0.0;
    };
    let f: Vec<f64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    let busy: f64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum();
    busy / ticks
}

fn clock_ticks() -> Result<f64, Error> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// CPU seconds of this process's children by name: etcd, kube-apiserver, kube-controller-manager.
fn control_plane_cpu(ticks: f64) -> BTreeMap<String, f64> {
    let me = std::process::id().to_string();
    let mut cpu = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return cpu;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let ppid = stat[close + 2..].split_whitespace().nth(1);
        if ppid == Some(me.as_str())
            && ["etcd", "kube-apiserver", "kube-controller"].contains(&name)
            && let Some(s) = cpu_seconds(pid, ticks)
        {
            cpu.insert(name.to_string(), s);
        }
    }
    cpu
}

fn diff_maps<K: Ord + Clone + serde::Serialize>(
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

/// `apiserver_request_total` samples: labels and value.
type Metric = Vec<(BTreeMap<String, String>, f64)>;

async fn scrape(client: &Client) -> Result<Metric, Error> {
    let request = kube::core::Request::new("").get("metrics", &Default::default())?;
    let text = client.request_text(request).await?;
    let mut samples = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let mut map = BTreeMap::new();
        for pair in labels.split("\",") {
            if let Some((k, v)) = pair.split_once("=\"") {
                map.insert(k.to_string(), v.trim_end_matches('"').to_string());
            }
        }
        samples.push((map, value.trim().parse()?));
    }
    Ok(samples)
}

fn by_metric_verb(metric: &Metric) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (labels, value) in metric {
        *out.entry(labels.get("verb").cloned().unwrap_or_default())
            .or_default() += value;
    }
    out
}

fn metric_writes(metric: &Metric) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (labels, value) in metric {
        let verb = labels.get("verb").map(String::as_str).unwrap_or_default();
        if [
            "POST",
            "PUT",
            "PATCH",
            "APPLY",
            "DELETE",
            "DELETECOLLECTION",
        ]
        .contains(&verb)
        {
            let label = |k: &str| labels.get(k).map(String::as_str).unwrap_or_default();
            let resource = match label("subresource") {
                "" => label("resource").to_string(),
                sub => format!("{}/{sub}", label("resource")),
            };
            *out.entry(format!("{verb} {resource}")).or_default() += value;
        }
    }
    out
}

/// Follows the audit log while it grows, to see when kube-controller-manager stops writing.
struct AuditTail {
    path: PathBuf,
    offset: u64,
    last_kcm_write_us: i64,
}

impl AuditTail {
    fn new(path: PathBuf) -> Self {
        Self {
            path,
            offset: 0,
            last_kcm_write_us: 0,
        }
    }

    fn poll(&mut self) -> Result<(), Error> {
        use std::io::{Seek, SeekFrom};
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        // Only whole lines: the apiserver may be in the middle of one.
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        self.offset += end as u64 + 1;
        for line in buf[..end].split(|&b| b == b'\n') {
            let event: Value = serde_json::from_slice(line)?;
            let kcm = event["userAgent"]
                .as_str()
                .is_some_and(|ua| who(ua) == "kube-controller-manager");
            let write = event["verb"]
                .as_str()
                .is_some_and(|v| WRITE_VERBS.contains(&v));
            if kcm && write {
                let at = parse_time_us(
                    event["requestReceivedTimestamp"]
                        .as_str()
                        .unwrap_or_default(),
                )
                .unwrap_or_default();
                self.last_kcm_write_us = self.last_kcm_write_us.max(at);
            }
        }
        Ok(())
    }
}

struct AuditRequest {
    at_us: i64,
    /// From received to the audit event's stage (the response, or a watch's start).
    latency_us: i64,
    verb: String,
    resource: String,
    user_agent: String,
    who: &'static str,
}

/// One entry per request (audit ID), stamped with when the apiserver received it.
fn read_audit(path: &Path) -> Result<Vec<AuditRequest>, Error> {
    let file = std::fs::File::open(path)?;
    let mut seen = HashSet::new();
    let mut requests = Vec::new();
    for line in BufReader::new(file).lines() {
        let event: Value = serde_json::from_str(&line?)?;
        let id = event["auditID"].as_str().unwrap_or_default().to_string();
        if !seen.insert(id) {
            continue;
        }
        let user_agent = event["userAgent"].as_str().unwrap_or_default().to_string();
        let object = &event["objectRef"];
        let resource = match (object["resource"].as_str(), object["subresource"].as_str()) {
            (Some(r), Some(s)) => format!("{r}/{s}"),
            (Some(r), None) => r.to_string(),
            _ => event["requestURI"]
                .as_str()
                .unwrap_or_default()
                .split('?')
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        let time = |key: &str| {
            parse_time_us(event[key].as_str().unwrap_or_default())
                .ok_or(format!("bad {key} in the audit log"))
        };
        let at_us = time("requestReceivedTimestamp")?;
        requests.push(AuditRequest {
            at_us,
            latency_us: time("stageTimestamp")? - at_us,
            verb: event["verb"].as_str().unwrap_or_default().to_string(),
            resource,
            who: who(&user_agent),
            user_agent,
        });
    }
    Ok(requests)
}

/// Every client but the operator announces itself; the operator is whatever is left.
fn who(user_agent: &str) -> &'static str {
    if user_agent == USER_AGENT {
        "harness"
    } else if user_agent.starts_with("kube-controller-manager") {
        "kube-controller-manager"
    } else if user_agent.starts_with("kube-apiserver") {
        "kube-apiserver"
    } else if user_agent.starts_with("kubectl") {
        "kubectl"
    } else {
        "operator"
    }
}

fn by_verb(requests: &[&AuditRequest]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in requests {
        *out.entry(r.verb.clone()).or_default() += 1;
    }
    out.insert("total".into(), requests.len());
    out
}

fn by_verb_resource(requests: &[&AuditRequest]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in requests {
        *out.entry(format!("{} {}", r.verb, r.resource)).or_default() += 1;
    }
    out
}

/// Mean time the API server took to answer, in ms, by verb and resource.
fn latency_by_verb_resource(requests: &[&AuditRequest]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.verb != "watch") {
        let (total, n) = sums
            .entry(format!("{} {}", r.verb, r.resource))
            .or_default();
        *total += r.latency_us;
        *n += 1;
    }
    sums.into_iter()
        .map(|(key, (total, n))| (key, round(total as f64 / n as f64 / 1000.0, 1)))
        .collect()
}

/// RFC 3339 in UTC as the audit log writes it (`2026-01-02T03:04:05.123456Z`), in µs since 1970.
fn parse_time_us(s: &str) -> Option<i64> {
    let (date, time) = s.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>());
    let (h, min, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let micros: i64 = format!("{frac:0<6}")[..6].parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + min * 60 + sec) * 1_000_000) + micros)
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn log_stats(logs: &Path) -> Result<(usize, usize), Error> {
    let mut lines = 0;
    let mut errors = 0;
    for name in ["manager.log", "manager.err"] {
        let text = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
        for line in text.lines() {
            lines += 1;
            if line.contains("ERROR") || line.contains("\"level\":\"error\"") {
                errors += 1;
            }
        }
    }
    Ok((lines, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_timestamps() {
        assert_eq!(
            parse_time_us("1970-01-01T00:00:01.000002Z"),
            Some(1_000_002)
        );
        assert_eq!(
            parse_time_us("2026-03-01T12:00:00.5Z"),
            Some(1_772_366_400_500_000)
        );
    }

    #[test]
    fn clients_are_told_apart() {
        assert_eq!(
            who("kube-controller-manager/v1.37.2 (linux/amd64)"),
            "kube-controller-manager"
        );
        assert_eq!(who(USER_AGENT), "harness");
        assert_eq!(who(""), "operator");
        assert_eq!(
            who("manager/v0.0.0 (linux/amd64) kubernetes/$Format"),
            "operator"
        );
    }
}
