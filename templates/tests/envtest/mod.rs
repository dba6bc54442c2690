//! Minimal envtest: a real etcd + kube-apiserver per test, no Go toolchain needed.
//!
//! Binaries come from `$KUBEBUILDER_ASSETS` (`etcd`, `kube-apiserver`). Without it
//! tests skip, unless `ENVTEST_REQUIRED=1` (CI), which turns the skip into an error.
//! `ENVTEST_KEEP=1` keeps the temp dir (logs, certs, kubeconfig) of a failed run.

// Every test binary compiles this module but may use only part of it.
#![allow(dead_code, unused_imports)]

mod certs;
mod rbac;
mod wait;
pub mod webhook;

pub use rbac::{install_policy, policy_enforced};
pub use wait::{TIMEOUT, eventually, install_crds};

use std::fs::File;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tempfile::TempDir;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

pub struct ControlPlane {
    // Fields drop in declaration order: the webhook server, controller-manager, apiserver,
    // etcd, the temp dir.
    webhooks: Option<webhook::Served>,
    controller_manager: Option<Process>,
    apiserver: Process,
    /// How kube-apiserver was started, to start it again (`restart_apiserver`).
    apiserver_args: Vec<String>,
    etcd: Process,
    client: kube::Client,
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until the apiserver is ready.
    /// Returns `None` (test should return early) when `KUBEBUILDER_ASSETS` is unset.
    pub async fn start() -> Result<Option<Self>, Error> {
        let Some(assets) = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from) else {
            if required() {
                return Err("KUBEBUILDER_ASSETS is not set but ENVTEST_REQUIRED=1".into());
            }
            say_skipped("KUBEBUILDER_ASSETS not set");
            return Ok(None);
        };
        for attempt in 1.. {
            let dir = tempfile::Builder::new().prefix("envtest-").tempdir()?;
            match boot(&assets, dir.path()).await {
                Ok((etcd, (apiserver, apiserver_args), client)) => {
                    return Ok(Some(Self {
                        webhooks: None,
                        controller_manager: None,
                        apiserver,
                        apiserver_args,
                        etcd,
                        client,
                        kubeconfig: dir.path().join("kubeconfig"),
                        dir,
                    }));
                }
                // A port found free was taken before etcd or kube-apiserver bound it (by
                // another test's process, or as an outgoing connection's source port): the
                // children are gone already (their guards killed them); boot on fresh ports.
                Err(err) if attempt < 3 && err.to_string().contains("address already in use") => {}
                Err(err) => {
                    print_logs(dir.path());
                    keep_if_requested(dir);
                    return Err(err);
                }
            }
        }
        unreachable!("the loop returns by its third attempt")
    }

    /// Starts a control plane, installs `crds` and spawns `controller` with a client of the
    /// manager's ServiceAccount granted `rules` (the project's `controller::role()`, as in
    /// config/rbac/role.yaml) in every namespace, or when `namespaces` are given only in those
    /// (a namespace-scoped manager's Role, bound in each; they are created), never
    /// as an administrator: what every controller suite needs first. Returns the admin client
    /// for the test's own requests; `None` when skipped (see `start`).
    pub async fn with_controller<F, Fut>(
        crds: Vec<CustomResourceDefinition>,
        rules: &[PolicyRule],
        namespaces: &[&str],
        controller: F,
    ) -> Option<(Self, kube::Client)>
    where
        F: FnOnce(kube::Client) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let cp = Self::start().await.expect("starting the control plane")?;
        let client = cp.client();
        install_crds(&client, crds)
            .await
            .expect("installing the CRDs");
        let kubeconfig = std::fs::read(cp.kubeconfig()).expect("reading the kubeconfig");
        let kubeconfig = serde_json::from_slice(&kubeconfig).expect("the kubeconfig is JSON");
        let account = rbac::service_account_client(&client, &kubeconfig, rules, namespaces)
            .await
            .expect("making the manager's ServiceAccount client");
        tokio::spawn(controller(account));
        Some((cp, client))
    }

    /// Keeps `served` (a webhook server, e.g. from `webhook::serve_conversions`) running as
    /// long as the control plane.
    pub fn keep(&mut self, served: Option<webhook::Served>) {
        self.webhooks = served;
    }

    /// A client of the manager's ServiceAccount, the one `with_controller` runs the
    /// controllers as: for tests of what the manager itself may do.
    pub async fn manager_client(&self) -> kube::Client {
        let kubeconfig = std::fs::read(&self.kubeconfig).expect("reading the kubeconfig");
        let kubeconfig = serde_json::from_slice(&kubeconfig).expect("the kubeconfig is JSON");
        rbac::token_client(&self.client, &kubeconfig, rbac::NAMESPACE)
            .await
            .expect("a token of the manager's ServiceAccount")
    }

    /// Admin client (`system:masters`, bypasses RBAC): for the test's own requests only.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Kubeconfig file for the admin user, e.g. for `kubectl --kubeconfig`.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `start_controller_manager` when the assets folder holds kube-controller-manager (a
    /// folder made by setup-envtest holds only etcd, kube-apiserver and kubectl): `false`, with
    /// a line on stderr, when it does not and ENVTEST_REQUIRED is not 1, so the test can skip.
    pub fn start_controller_manager_if_present(
        &mut self,
        controllers: &[&str],
    ) -> Result<bool, Error> {
        let assets = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from);
        let present = assets.is_some_and(|a| a.join("kube-controller-manager").is_file());
        if !present && !required() {
            say_skipped("no kube-controller-manager in KUBEBUILDER_ASSETS");
            return Ok(false);
        }
        self.start_controller_manager(controllers)?;
        Ok(true)
    }

    /// Also runs kube-controller-manager (from the same assets folder) with `controllers`,
    /// e.g. `garbage-collector-controller` for cascading deletion. Pods still never run:
    /// there is no scheduler and no kubelet.
    pub fn start_controller_manager(&mut self, controllers: &[&str]) -> Result<(), Error> {
        let assets = std::env::var_os("KUBEBUILDER_ASSETS")
            .map(PathBuf::from)
            .ok_or("KUBEBUILDER_ASSETS is not set")?;
        let dir = self.dir.path();
        let process = Process::spawn(
            "kube-controller-manager",
            &assets.join("kube-controller-manager"),
            &[
                format!("--kubeconfig={}", self.kubeconfig.display()),
                format!("--controllers={}", controllers.join(",")),
                "--leader-elect=false".into(),
                // No serving endpoint: nothing scrapes it, and it saves a port.
                "--secure-port=0".into(),
            ],
            dir,
        )?;
        self.controller_manager = Some(process);
        Ok(())
    }
}

impl ControlPlane {
    /// Kills kube-apiserver (SIGKILL, as a crash would), waits `outage`, starts it again on
    /// the same port and waits until it is ready: for tests of what survives a restart.
    pub async fn restart_apiserver(&mut self, outage: Duration) -> Result<(), Error> {
        let assets = std::env::var_os("KUBEBUILDER_ASSETS")
            .map(PathBuf::from)
            .ok_or("KUBEBUILDER_ASSETS is not set")?;
        let _ = self.apiserver.child.kill();
        let _ = self.apiserver.child.wait();
        tokio::time::sleep(outage).await;
        self.apiserver = Process::spawn(
            "kube-apiserver",
            &assets.join("kube-apiserver"),
            &self.apiserver_args,
            self.dir.path(),
        )?;
        wait_ready(&mut self.etcd, &mut self.apiserver, &self.client).await
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if std::thread::panicking() && keep_requested() {
            self.dir.disable_cleanup(true);
            eprintln!("envtest: kept {}", self.dir.path().display());
        }
        // The fields' own Drop impls then stop the processes and remove the dir.
    }
}

async fn boot(
    assets: &Path,
    dir: &Path,
) -> Result<(Process, (Process, Vec<String>), kube::Client), Error> {
    let pki = certs::generate()?;
    for (name, pem) in [
        ("ca.crt", &pki.ca_cert),
        ("apiserver.crt", &pki.serving_cert),
        ("apiserver.key", &pki.serving_key),
        ("sa.key", &pki.sa_key),
        ("sa.pub", &pki.sa_pub),
    ] {
        std::fs::write(dir.join(name), pem)?;
    }

    // Reserve all ports at once so they differ; they are released just before the
    // children bind them (a race that `ControlPlane::start` answers by booting again).
    let [etcd_port, peer_port, api_port] = free_ports()?;
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let path = |name: &str| dir.join(name).display().to_string();

    let mut etcd = Process::spawn(
        "etcd",
        &assets.join("etcd"),
        &[
            format!("--data-dir={}", path("etcd")),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--unsafe-no-fsync".into(),
        ],
        dir,
    )?;
    let apiserver_args = vec![
        format!("--etcd-servers={etcd_url}"),
        format!("--secure-port={api_port}"),
        "--bind-address=127.0.0.1".into(),
        // A loopback advertise address is rejected by the endpoint reconciler
        // unless it is off; leaving the address unset would pick a host interface.
        "--advertise-address=127.0.0.1".into(),
        "--endpoint-reconciler-type=none".into(),
        format!("--tls-cert-file={}", path("apiserver.crt")),
        format!("--tls-private-key-file={}", path("apiserver.key")),
        format!("--client-ca-file={}", path("ca.crt")),
        format!("--cert-dir={}", path("cert-dir")),
        // Room for thousands of Services (a /24 runs out at 254 ClusterIPs).
        "--service-cluster-ip-range=10.0.0.0/16".into(),
        "--service-account-issuer=https://localhost".into(),
        format!("--service-account-key-file={}", path("sa.pub")),
        format!("--service-account-signing-key-file={}", path("sa.key")),
        "--authorization-mode=RBAC".into(),
        // No kube-controller-manager creates the `default` ServiceAccount.
        "--disable-admission-plugins=ServiceAccount".into(),
        // As OpenShift runs by default: an owner reference blocking its owner's deletion needs
        // `update` on the owner's finalizers, which the manager's role must grant.
        "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
        "--allow-privileged=true".into(),
    ];
    let mut apiserver = Process::spawn(
        "kube-apiserver",
        &assets.join("kube-apiserver"),
        &apiserver_args,
        dir,
    )?;

    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "envtest", "cluster": {
            "server": format!("https://127.0.0.1:{api_port}"),
            "certificate-authority-data": base64(&pki.ca_cert),
        }}],
        "users": [{"name": "envtest-admin", "user": {
            "client-certificate-data": base64(&pki.admin_cert),
            "client-key-data": base64(&pki.admin_key),
        }}],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest-admin"}}],
        "current-context": "envtest",
    });
    // JSON is valid YAML, so kubectl reads this file as is.
    std::fs::write(
        dir.join("kubeconfig"),
        serde_json::to_vec_pretty(&kubeconfig)?,
    )?;
    let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = kube::Client::try_from(config)?;

    wait_ready(&mut etcd, &mut apiserver, &client).await?;
    Ok((etcd, (apiserver, apiserver_args), client))
}

/// Waits until kube-apiserver is ready, failing early if it or etcd exits.
async fn wait_ready(
    etcd: &mut Process,
    apiserver: &mut Process,
    client: &kube::Client,
) -> Result<(), Error> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        etcd.ensure_running()?;
        apiserver.ensure_running()?;
        let last_err = match ready(client).await {
            Ok(()) => return Ok(()),
            Err(err) => err,
        };
        if Instant::now() > deadline {
            return Err(
                format!("kube-apiserver not ready after {STARTUP_TIMEOUT:?}: {last_err}").into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `/readyz` is ok and the apiserver has created the `default` namespace.
async fn ready(client: &kube::Client) -> Result<(), Error> {
    // kube::core::Request builds the `http::Request` without a direct `http` dependency.
    let readyz = kube::core::Request::new("").get("readyz", &Default::default())?;
    client.request_text(readyz).await?;
    Api::<Namespace>::all(client.clone()).get("default").await?;
    Ok(())
}

/// ENVTEST_REQUIRED=1 (CI): a missing control plane is an error, not a skip.
fn required() -> bool {
    std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1")
}

/// Says on stderr that the running test is skipped, and `why`. libtest names each test's
/// thread after the test; writing to stderr directly (not eprintln!) bypasses libtest's
/// capture, so skips are visible.
fn say_skipped(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("test");
    let msg = format!("envtest: {why}; skipping {test}\n");
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

fn free_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

fn base64(pem: &str) -> serde_json::Value {
    // ByteString serializes as base64, which spares a `base64` dependency.
    serde_json::to_value(ByteString(pem.as_bytes().to_vec())).expect("base64 string")
}

/// A child process that is killed and reaped when dropped, so neither a failed
/// startup nor a panicking test leaves processes behind.
struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &'static str, bin: &Path, args: &[String], dir: &Path) -> Result<Self, Error> {
        let log = dir.join(format!("{name}.log"));
        // Appended to: a restarted process keeps its earlier log.
        let out = File::options().create(true).append(true).open(&log)?;
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        Ok(Self { name, child, log })
    }

    fn ensure_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!(
                "{} exited early ({status}); last log lines:\n{}",
                self.name,
                tail(&self.log, 3)
            )
            .into()),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SIGKILL: nothing needs a graceful shutdown, and it never hangs.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn print_logs(dir: &Path) {
    for name in ["etcd", "kube-apiserver"] {
        let log = dir.join(format!("{name}.log"));
        eprintln!("envtest: tail of {}:\n{}", log.display(), tail(&log, 20));
    }
}

fn keep_requested() -> bool {
    std::env::var("ENVTEST_KEEP").is_ok_and(|v| v == "1")
}

fn keep_if_requested(dir: TempDir) {
    if keep_requested() {
        eprintln!("envtest: kept {}", dir.keep().display());
    }
}
