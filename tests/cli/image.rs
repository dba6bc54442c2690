//! The article's image steps for real, on the article's project: `make docker-build`,
//! `make docker-push` and `make deploy IMG=…` with buildah, a local registry and a real control
//! plane; then the built image itself, as the ServiceAccount of a Helm release of the chart,
//! reconciles the article's Application.
//! Needs root, buildah, docker-registry and the stand-in base images: hack/test.sh installs the
//! first two and runs hack/local-images.sh for the last.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::envtest;
use crate::generated::target_dir;
use crate::host::*;
use crate::kubectl::Kubectl;
use crate::support::*;

const MAX_IMAGE_BYTES: u64 = 25_000_000;
const MANAGER_UID: &str = "65532";

/// The environment every container command of this test runs with.
struct Containers {
    /// Marks the local registry as plain HTTP for buildah (Docker trusts localhost itself).
    registries_conf: PathBuf,
}

impl Containers {
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("CONTAINERS_REGISTRIES_CONF", &self.registries_conf);
        // This host's crun cannot start containers (cgroups in hybrid mode); chroot isolation
        // needs nothing but root.
        if std::env::var_os("BUILDAH_ISOLATION").is_none() {
            cmd.env("BUILDAH_ISOLATION", "chroot");
        }
        cmd
    }

    /// Runs `program args` in `dir`, failing the test with its output if it fails; stdout
    /// and stderr.
    fn run(
        &self,
        program: &str,
        args: &[&str],
        dir: &Path,
        env: &[(&str, &Path)],
    ) -> (String, String) {
        let mut cmd = self.command(program);
        cmd.args(args).current_dir(dir);
        for (key, value) in env {
            cmd.env(key, value);
        }
        checked(&mut cmd)
    }

    /// `run`'s stdout.
    fn ok(&self, program: &str, args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> String {
        self.run(program, args, dir, env).0
    }

    fn buildah(&self, args: &[&str]) -> String {
        self.ok("buildah", args, Path::new("."), &[])
            .trim()
            .to_string()
    }

    /// `make target IMG=img CONTAINER_TOOL=buildah` in the project; returns its output (stdout,
    /// then stderr, where cargo writes) and the time.
    fn make(&self, dir: &Path, target: &str, img: &str, env: &[(&str, &Path)]) -> (String, u64) {
        let start = Instant::now();
        let (stdout, stderr) = self.run(
            "make",
            &[target, &format!("IMG={img}"), "CONTAINER_TOOL=buildah"],
            dir,
            env,
        );
        (stdout + &stderr, start.elapsed().as_secs())
    }
}

/// A working container of `image`, removed on drop.
struct WorkingContainer<'a>(String, &'a Containers);

impl<'a> WorkingContainer<'a> {
    fn from(containers: &'a Containers, image: &str) -> Self {
        Self(containers.buildah(&["from", "-q", image]), containers)
    }
}

impl Drop for WorkingContainer<'_> {
    fn drop(&mut self) {
        let _ = self.1.command("buildah").args(["rm", &self.0]).output();
    }
}

/// `docker-registry` (distribution) on a free loopback port, storing into `dir`.
fn start_registry(dir: &Path) -> (Background, u16) {
    let port = free_port();
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            dir.join("blobs").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("docker-registry");
    cmd.arg("serve").arg(&config);
    let registry = Background::spawn(cmd, dir.join("registry.log"));
    wait_for_ok("the registry", port, "/v2/");
    (registry, port)
}

/// Files of the image's root filesystem (mounted at `root`) and their total size.
fn image_files(root: &Path) -> (Vec<String>, u64) {
    let mut files = Vec::new();
    let mut bytes = 0;
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.unwrap();
        if !entry.file_type().is_dir() {
            bytes += entry.metadata().unwrap().len();
            let rel = entry.path().strip_prefix(root).unwrap();
            files.push(format!("/{}", rel.display()));
        }
    }
    files.sort();
    (files, bytes)
}

/// The pid of a process whose command line starts with `prefix`, once there is one.
fn pid_of(prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("pgrep")
            .args(["-f", &format!("^{prefix}")])
            .output()
            .unwrap();
        if let Some(pid) = String::from_utf8_lossy(&out.stdout).lines().next() {
            return pid.to_string();
        }
        assert!(Instant::now() < deadline, "no process `{prefix}…`");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs root, buildah, docker-registry and the control plane; run by hack/test.sh"]
async fn the_article_image_is_built_pushed_deployed_and_runs() {
    let assets = kubebuilder_assets();
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    // With the chart: the image runs under the RBAC a Helm release installs.
    succeed(&dir, &["edit", "--plugins", "helm"]);
    let work = tempfile::tempdir().unwrap();
    let (_registry, port) = start_registry(work.path());
    let containers = Containers {
        registries_conf: work.path().join("registries.conf"),
    };
    std::fs::write(
        &containers.registries_conf,
        format!("[[registry]]\nlocation = \"localhost:{port}\"\ninsecure = true\n"),
    )
    .unwrap();
    let img = format!("localhost:{port}/eminetto/k8s-operator-talk:latest");

    // make docker-build: the generated Dockerfile, unchanged, on the stand-in base images.
    let (_, first) = containers.make(&dir, "docker-build", &img, &[]);
    let controller = "src/controller/application.rs";
    // Unique, so that no earlier run's layer cache holds this source already.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let edited = read(&dir, controller) + &format!("// A one-line edit ({nonce}).\n");
    std::fs::write(dir.join(controller), edited).unwrap();
    let (log, warm) = containers.make(&dir, "docker-build", &img, &[]);
    // The Dockerfile's cache mounts keep target/ between builds: no dependency compiles again.
    let compiled: Vec<&str> = log
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Compiling "))
        .collect();
    assert!(
        compiled.len() == 1 && compiled[0].starts_with("k8s-operator-talk "),
        "after a source edit the image build compiled {compiled:?}, not the project alone:\n{log}"
    );

    // A non-root image holding nothing but the manager, which answers --help.
    let user = containers.buildah(&[
        "inspect",
        "--type",
        "image",
        "--format",
        "{{.OCIv1.Config.User}}",
        &img,
    ]);
    assert_eq!(user, format!("{MANAGER_UID}:{MANAGER_UID}"));
    let ctr = WorkingContainer::from(&containers, &img);
    let root = PathBuf::from(containers.buildah(&["mount", &ctr.0]));
    let (files, bytes) = image_files(&root);
    containers.buildah(&["umount", &ctr.0]);
    assert_eq!(
        files,
        ["/etc/ssl/certs/ca-certificates.crt", "/manager"],
        "files in the image"
    );
    assert!(bytes < MAX_IMAGE_BYTES, "the image holds {bytes} bytes");
    let help = containers.buildah(&["run", &ctr.0, "--", "/manager", "--help"]);
    assert!(help.contains("--leader-elect"), "{help}");
    eprintln!(
        "image: {bytes} bytes; first docker-build {first} s, after a controller edit {warm} s"
    );

    // make docker-push, then the image comes back from the registry.
    let id = || {
        containers.buildah(&[
            "images",
            "--noheading",
            "--no-trunc",
            "--format",
            "{{.ID}}",
            &img,
        ])
    };
    let built = id();
    containers.make(&dir, "docker-push", &img, &[]);
    assert!(
        http_get(port, "/v2/eminetto/k8s-operator-talk/tags/list").contains("\"latest\""),
        "the registry does not list the pushed tag"
    );
    drop(ctr);
    containers.buildah(&["rmi", &img]);
    containers.buildah(&["pull", "-q", &img]);
    assert_eq!(id(), built, "the pulled image differs from the pushed one");

    // make deploy applies the manifests with that image to a real control plane.
    let cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    let kubeconfig = cp.kubeconfig().to_path_buf();
    let (path, targets) = (path_with(&assets), target_dir());
    let cluster_env = [
        ("KUBECONFIG", kubeconfig.as_path()),
        ("PATH", Path::new(&path)),
        ("CARGO_TARGET_DIR", &targets),
    ];
    containers.make(&dir, "deploy", &img, &cluster_env);
    let kubectl = Kubectl {
        bin: assets.join("kubectl"),
        kubeconfig: kubeconfig.clone(),
        dir: dir.clone(),
    };
    let manager = |path: &str| {
        kubectl.ok(&[
            "-n",
            "k8s-operator-talk-system",
            "get",
            "deployment",
            "k8s-operator-talk-controller-manager",
            "-o",
            &format!("jsonpath={{.spec.template.spec{path}}}"),
        ])
    };
    assert_eq!(manager(".containers[0].image"), img);
    assert_eq!(manager(".securityContext.runAsNonRoot"), "true");
    assert_eq!(
        manager(".securityContext.seccompProfile.type"),
        "RuntimeDefault"
    );
    let container = ".containers[0].securityContext";
    assert_eq!(manager(&format!("{container}.runAsUser")), MANAGER_UID);
    assert_eq!(
        manager(&format!("{container}.allowPrivilegeEscalation")),
        "false"
    );
    assert_eq!(
        manager(&format!("{container}.readOnlyRootFilesystem")),
        "true"
    );
    assert_eq!(
        manager(&format!("{container}.capabilities.drop")),
        "[\"ALL\"]"
    );

    // The chart as a second release in its own namespace (the CRDs are make deploy's): the
    // image runs as that release's ServiceAccount, with exactly the RBAC the chart installs
    // (helm_cluster.rs shows it equal to make deploy's).
    let kubeconfig_arg = kubeconfig.display().to_string();
    crate::helm::helm(
        &crate::helm::helm_bin(),
        &dir,
        &args(&format!(
            "install other dist/chart -n elsewhere --create-namespace --set crd.enable=false --kubeconfig {kubeconfig_arg}"
        )),
    );

    // The image itself, on the host network with a kubeconfig of that ServiceAccount mounted
    // (as its Pod would have), reconciles the article's Application (no kubelet here to run
    // the deployed Pod).
    let account = kubectl.account_kubeconfig(
        "elsewhere",
        "other-k8s-operator-talk-controller-manager",
        work.path(),
    );
    let ctr = WorkingContainer::from(&containers, &img);
    let (metrics, probes) = (free_port(), free_port());
    let mut cmd = containers.command("buildah");
    cmd.args(["run", "--network", "host", "-v"])
        .arg(format!("{}:/etc/kubeconfig:ro", account.display()))
        .args([
            "--env",
            "KUBECONFIG=/etc/kubeconfig",
            &ctr.0,
            "--",
            "/manager",
        ])
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"));
    let mut running = Background::spawn(cmd, work.path().join("manager.log"));
    let pid = pid_of(&format!(
        "/manager --metrics-bind-address=127.0.0.1:{metrics}"
    ));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert!(
        uid.split_whitespace().skip(1).all(|id| id == MANAGER_UID),
        "the manager runs as {uid}"
    );
    kubectl.ok(&["apply", "-k", "config/samples"]);
    kubectl.eventually(
        "the sample's Deployment and Service",
        &["get", "deployments,services", "-o", "name"],
        |out| {
            out.contains("deployment.apps/application-sample-deployment")
                && out.contains("service/application-sample-service")
        },
    );
    wait_for_ok("the manager's probes", probes, "/readyz");
    // SIGTERM to the container's process, as the kubelet sends it: a clean exit.
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = running.wait(Duration::from_secs(10));
    assert!(
        status.success(),
        "buildah run exited with {status}:\n{}",
        running.log()
    );
    drop(ctr);
    containers.buildah(&["rmi", &img]);
}
