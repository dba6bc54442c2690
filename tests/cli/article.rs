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

/// The article's project, built (and, from `install_article_project`, its CRDs installed).
pub struct Installed {
    pub dir: PathBuf,
    pub kubectl: Kubectl,
    _tmp: TempDir,
}

/// The user's steps against the control plane of `kubeconfig`: scaffold, build, `make install`.
pub fn install_article_project(kubeconfig: &Path) -> Installed {
    let project = build_article_project(kubeconfig);
    project.install();
    project
}

/// The article's project scaffolded and built, nothing installed yet.
pub fn build_article_project(kubeconfig: &Path) -> Installed {
    let (tmp, dir) = project_dir();
    article_project(&dir);
    Installed::built(tmp, dir, kubeconfig)
}

impl Installed {
    /// The project scaffolded in `dir` (inside `tmp`), built, for the control plane of
    /// `kubeconfig`; nothing installed yet.
    pub fn built(tmp: TempDir, dir: PathBuf, kubeconfig: &Path) -> Installed {
        run(&dir, "cargo", &["build"]);
        let kubectl = Kubectl {
            bin: kubebuilder_assets().join("kubectl"),
            kubeconfig: kubeconfig.to_path_buf(),
            dir: dir.clone(),
        };
        Installed {
            dir,
            kubectl,
            _tmp: tmp,
        }
    }

    /// `make install`, then waits for the CRD to be established.
    pub fn install(&self) {
        checked(
            Command::new("make")
                .arg("install")
                .current_dir(&self.dir)
                .env("KUBECONFIG", &self.kubectl.kubeconfig)
                .env("PATH", path_with(&kubebuilder_assets()))
                .env("CARGO_TARGET_DIR", target_dir()),
        );
        self.kubectl.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/applications.minetto.dev",
            "--timeout=30s",
        ]);
    }

    /// `make deploy`'s RBAC (with the rest of config/deploy: its Pods never run here), and a
    /// kubeconfig of the manager's ServiceAccount, so that a verb missing from the roles fails.
    pub fn deploy_rbac(&self) -> PathBuf {
        run(
            &self.dir,
            "make",
            &[
                "deploy-overlay",
                "IMG=registry.example/k8s-operator-talk:v0.1.0",
            ],
        );
        self.kubectl.ok(&["create", "namespace", NAMESPACE]);
        self.kubectl
            .ok(&["apply", "--server-side", "-k", "config/deploy"]);
        self.account_kubeconfig(NAMESPACE, "k8s-operator-talk-controller-manager")
    }

    /// A kubeconfig authenticated as the ServiceAccount `namespace/name` (see
    /// `Kubectl::account_kubeconfig`), in the project's directory.
    pub fn account_kubeconfig(&self, namespace: &str, name: &str) -> PathBuf {
        self.kubectl.account_kubeconfig(namespace, name, &self.dir)
    }
}

/// Where `make deploy` puts the manager.
pub const NAMESPACE: &str = "k8s-operator-talk-system";

/// `kubectl` arguments printing who holds the manager's leader-election Lease.
pub const LEASE_HOLDER: &[&str] = &[
    "-n",
    NAMESPACE,
    "get",
    "lease",
    "k8s-operator-talk-leader",
    "-o",
    "jsonpath={.spec.holderIdentity}",
];

/// The manager just built, running with `--leader-elect` as `make run` (and the Deployment)
/// runs it (or with other flags, `start_with`), metrics and probes on free loopback ports, its
/// log in `dir`/`name`.log.
pub struct Manager {
    pub process: Background,
    pub metrics: u16,
    pub probes: u16,
}

impl Manager {
    pub fn start(dir: &Path, kubeconfig: &Path, name: &str, env: &[(&str, &str)]) -> Manager {
        Self::start_with(dir, kubeconfig, name, env, &["--leader-elect"])
    }

    /// The manager with `args` instead of `--leader-elect`.
    pub fn start_with(
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

/// Waits for the Deployment of the Application `name` in application-sample.
pub fn deployment_of(kubectl: &Kubectl, name: &str) {
    let deployment = format!("{name}-deployment");
    let args = [
        "-n",
        "application-sample",
        "get",
        "deployment",
        &deployment,
        "-o",
        "name",
    ];
    kubectl.eventually(&deployment, &args, |out| !out.trim().is_empty());
}
