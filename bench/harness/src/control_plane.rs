//! The control plane: a private assets folder whose kube-apiserver writes an audit log, the
//! control plane's start (etcd, kube-apiserver, kube-controller-manager), this harness's client
//! and the operator's CRDs.

use std::path::{Path, PathBuf};
use std::process::Command;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::{Error, envtest};

/// This harness's own requests carry this user agent, so the audit log tells them apart.
pub const USER_AGENT: &str = "opsdk-bench-harness";
/// The same controllers as opsdk's end-to-end test: owners' garbage collection, Deployments
/// that get ReplicaSets that get Pods (which stay Pending: no scheduler, no kubelet).
pub const KCM_CONTROLLERS: &[&str] = &[
    "garbage-collector-controller",
    "deployment-controller",
    "replicaset-controller",
    "namespace-controller",
];
/// kube-controller-manager's client rate limit: its default (20/s) would keep it busy for
/// minutes after 1,000 Deployments appear, so a steady state would come only after the 30 minutes
/// the whole benchmark may take. With this it keeps up as fast as the CPU lets it.
const KCM_QPS: u32 = 500;

/// A private assets folder: the real etcd, kube-controller-manager and kubectl, and a
/// kube-apiserver wrapper that adds an audit log, a /16 service range and a NodePort range wide
/// enough for bench/growth.sh's 4,000 NodePort Services (the default holds 2,768). Points
/// `KUBEBUILDER_ASSETS` at it (before any thread starts) and returns it.
pub fn prepare_assets(logs: &Path) -> Result<PathBuf, Error> {
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
            "#!/bin/sh\n# kube-apiserver with an audit log (who sent each request) and room for 65k Services (12k NodePorts).\n\
             exec '{}' \"$@\" --audit-policy-file='{}' --audit-log-path='{}' --audit-log-format=json \
             --audit-log-mode=blocking --service-cluster-ip-range=10.0.0.0/16 \
             --service-node-port-range=20000-32767\n",
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

/// A fresh control plane with kube-controller-manager running `KCM_CONTROLLERS`, and a client
/// to it. Dropping the control plane stops it.
pub async fn start() -> Result<(envtest::ControlPlane, Client), Error> {
    let mut cp = envtest::ControlPlane::start()
        .await?
        .ok_or("KUBEBUILDER_ASSETS is not set")?;
    cp.start_controller_manager(KCM_CONTROLLERS)?;
    let client = harness_client(cp.kubeconfig()).await?;
    Ok((cp, client))
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

/// Server-side applies the CRDs in `crds` with kubectl and waits until they are established.
pub fn install_crds(assets: &Path, kubeconfig: &Path, crds: &Path) -> Result<(), Error> {
    let kubectl = |argv: &[&str]| -> Result<(), Error> {
        let out = Command::new(assets.join("kubectl"))
            .args(argv)
            .env("KUBECONFIG", kubeconfig)
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
    let crds = crds.display().to_string();
    kubectl(&["apply", "--server-side", "-f", &crds])?;
    kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=60s",
    ])
}
