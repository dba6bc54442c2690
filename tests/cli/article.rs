//! What the end-to-end tests start from: the article's project scaffolded, built and installed
//! into a control plane (`make install`), and its manager run as `make run` runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::generated::{run, target_dir};
use crate::host::*;
use crate::kubectl::Kubectl;
use crate::support::*;

/// The article's application.yaml: a Namespace and an Application in it.
pub const APPLICATION_YAML: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: application-sample
---
apiVersion: minetto.dev/v1alpha1
kind: Application
metadata:
  name: application-sample
  namespace: application-sample
spec:
  image: nginx:latest
  replicas: 2
  port: 80
";

/// The article's project, built, its CRDs installed and established.
pub struct Installed {
    pub dir: PathBuf,
    pub kubectl: Kubectl,
    _tmp: TempDir,
}

/// The user's steps against the control plane of `kubeconfig`: scaffold, build, `make install`.
pub fn install_article_project(kubeconfig: &Path) -> Installed {
    let assets = kubebuilder_assets();
    let (tmp, dir) = project_dir();
    article_project(&dir);
    run(&dir, "cargo", &["build"]);
    checked(
        Command::new("make")
            .arg("install")
            .current_dir(&dir)
            .env("KUBECONFIG", kubeconfig)
            .env("PATH", path_with(&assets))
            .env("CARGO_TARGET_DIR", target_dir()),
    );
    let kubectl = Kubectl {
        bin: assets.join("kubectl"),
        kubeconfig: kubeconfig.to_path_buf(),
        dir: dir.clone(),
    };
    kubectl.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/applications.minetto.dev",
        "--timeout=30s",
    ]);
    Installed {
        dir,
        kubectl,
        _tmp: tmp,
    }
}

/// The manager just built, running with `--leader-elect` as `make run` (and the Deployment)
/// runs it, metrics and probes on free loopback ports, its log in `dir`/`name`.log, and any
/// further flags in `args`.
pub struct Manager {
    pub process: Background,
    pub metrics: u16,
    pub probes: u16,
}

impl Manager {
    pub fn start(
        dir: &Path,
        kubeconfig: &Path,
        name: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Manager {
        let (metrics, probes) = (free_port(), free_port());
        let mut cmd = Command::new(target_dir().join("debug/k8s-operator-talk"));
        cmd.args([
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            format!("--health-probe-bind-address=127.0.0.1:{probes}"),
            "--leader-elect".into(),
        ])
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .envs(env.iter().copied());
        let process = Background::spawn(cmd, dir.join(format!("{name}.log")));
        Manager {
            process,
            metrics,
            probes,
        }
    }
}
