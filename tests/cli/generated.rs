//! The generated projects are products too: they must pass rustfmt, clippy with warnings
//! denied, their unit tests, their envtest suites against a real kube-apiserver, and crdgen;
//! and a real API server must accept their CRDs, samples and deployment manifests.
//! These build kube-rs, so they are ignored by `cargo test` and run by `hack/test.sh`, which
//! provides the control plane (KUBEBUILDER_ASSETS) and requires it (ENVTEST_REQUIRED=1).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::envtest::ControlPlane;
use crate::host::{Background, checked};
use crate::kubectl::Kubectl;
use crate::many_kinds::{change_cruiser_schemas, many_kinds_project};
use crate::support::*;

/// One cargo target directory outside the clone, shared by every generated project, so that
/// kube-rs and friends are compiled once per machine. Every generated project is a package
/// named k8s-operator-talk, so two test runs building there at once would replace each other's
/// binaries (a manager started later would be another project's): the first call takes a lock
/// on it, held until this test process ends, and waits while another run holds it.
pub fn target_dir() -> PathBuf {
    static LOCK: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    let dir = std::env::var_os("OPSDK_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/opsdk/target-gen")
        });
    LOCK.get_or_init(|| {
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".opsdk-tests.lock");
        let file = std::fs::File::create(&path).unwrap();
        if file.try_lock().is_err() {
            eprintln!(
                "another test run builds in {}: waiting for it",
                dir.display()
            );
            file.lock().unwrap();
        }
        file
    });
    dir
}

/// Runs `program args` in `dir`, failing the test with its output if it fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let (stdout, stderr) = checked(
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target_dir()),
    );
    format!("{stdout}{stderr}")
}

fn passes_its_own_checks(dir: &Path) {
    passes_its_own_checks_with(dir, &["test"]);
}

/// rustfmt, clippy, `make manifests` and `cargo <test_args>` (`test` runs the envtest suites
/// too, and then they must not be skipped when ENVTEST_REQUIRED=1).
pub fn passes_its_own_checks_with(dir: &Path, test_args: &[&str]) {
    run(dir, "cargo", &["fmt", "--check"]);
    run(
        dir,
        "cargo",
        &args("clippy --locked --all-targets -- -D warnings"),
    );
    run(dir, "make", &["manifests"]);
    let kustomization = read(dir, "config/crd/kustomization.yaml");
    for line in kustomization.lines().filter_map(|l| l.strip_prefix("- ")) {
        assert!(
            dir.join("config/crd").join(line).exists(),
            "make manifests did not write {line}"
        );
    }
    // --locked: the shipped Cargo.lock must be complete and current, or this fails.
    let mut locked = test_args.to_vec();
    locked.insert(1, "--locked");
    let output = run(dir, "cargo", &locked);
    if test_args == ["test"] && std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1") {
        assert!(
            !output.contains("skipping"),
            "envtest suites were skipped:\n{output}"
        );
    }
}

/// What a user applies is accepted by a real API server: the CRDs, the samples against them,
/// and the whole deployment (server-side dry run) in its namespace.
async fn manifests_are_accepted(dir: &Path, spoke_samples: &[&str]) -> ControlPlane {
    let assets = PathBuf::from(
        std::env::var_os("KUBEBUILDER_ASSETS").expect("KUBEBUILDER_ASSETS names the control plane"),
    );
    let cp = ControlPlane::start()
        .await
        .expect("starting the control plane")
        .expect("KUBEBUILDER_ASSETS is set");
    let kubectl = Kubectl {
        bin: assets.join("kubectl"),
        kubeconfig: cp.kubeconfig().to_path_buf(),
        dir: dir.to_path_buf(),
    };
    kubectl.ok(&["apply", "--server-side", "-k", "config/crd"]);
    kubectl.ok(&args(
        "wait --for=condition=Established crd --all --timeout=30s",
    ));
    // A spoke's sample is converted to the stored version by the manager's conversion
    // webhook: those go once the manager serves it, at the end.
    let samples = read(dir, "config/samples/kustomization.yaml");
    let (spokes, others): (Vec<&str>, Vec<&str>) = samples
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .partition(|sample| spoke_samples.contains(sample));
    assert_eq!(spokes.len(), spoke_samples.len(), "{samples}");
    let dry_run = |sample: &str| {
        let path = format!("config/samples/{sample}");
        kubectl.output(
            &args(&format!(
                "apply --server-side --dry-run=server -n default -f {path}"
            )),
            None,
        )
    };
    for sample in others {
        let out = dry_run(sample);
        assert!(out.status.success(), "{sample}: {out:?}");
    }
    kubectl.ok(&["create", "namespace", "k8s-operator-talk-system"]);
    run(
        dir,
        "make",
        &[
            "deploy-overlay",
            "IMG=registry.example/k8s-operator-talk:v0.1.0",
        ],
    );
    kubectl.ok(&args(
        "apply --server-side --dry-run=server -k config/deploy",
    ));
    // Last: the manager registers its webhooks by URL, which config/deploy's would conflict with.
    if !spokes.is_empty() {
        spoke_samples_convert_through_the_manager(dir, &cp, &kubectl, &spokes, dry_run);
    }
    cp
}

/// With the manager running as `WEBHOOK_URL` (`--webhook-url`) runs it (it writes its CA bundle and URL into
/// the CRDs that convert), the API server accepts each of `spokes` (samples of versions that
/// are not stored), which it refuses while the conversion webhook is missing.
fn spoke_samples_convert_through_the_manager(
    dir: &Path,
    cp: &ControlPlane,
    kubectl: &Kubectl,
    spokes: &[&str],
    dry_run: impl Fn(&str) -> std::process::Output,
) {
    for sample in spokes {
        let out = dry_run(sample);
        assert!(
            !out.status.success(),
            "{sample} needs no conversion webhook?"
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(target_dir().join("debug/k8s-operator-talk"));
    cmd.args(args(
        "--metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:0",
    ))
    .arg(format!("--webhook-port={port}"))
    // As the user guide runs it: `WEBHOOK_URL=... make run`.
    .env("WEBHOOK_URL", format!("https://127.0.0.1:{port}"))
    .env("KUBECONFIG", cp.kubeconfig());
    let manager = Background::spawn(cmd, dir.join("manager.log"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for sample in spokes {
        loop {
            let out = dry_run(sample);
            if out.status.success() {
                break;
            }
            if std::time::Instant::now() >= deadline {
                let columns = "custom-columns=CRD:.metadata.name,\
                    URL:.spec.conversion.webhook.clientConfig.url,\
                    SERVICE:.spec.conversion.webhook.clientConfig.service.name";
                let crds = kubectl.output(&["get", "crd", "-o", columns], None);
                panic!(
                    "{sample} refused with the manager running: {out:?}\nCRDs:\n{}\nmanager log:\n{}",
                    String::from_utf8_lossy(&crds.stdout),
                    manager.log()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
}

/// A webhook server that cannot start (here: its certificate files are missing) stops the
/// manager with the cause, rather than leaving a healthy-looking Pod behind which every
/// write of the kind is refused.
fn a_failed_webhook_server_stops_the_manager(dir: &Path, cp: &ControlPlane) {
    let manager = target_dir().join("debug/k8s-operator-talk");
    let mut child = Command::new(manager)
        .args(args(
            "--metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:0",
        ))
        .args(["--webhook-port=0", "--webhook-cert-path"])
        .arg(dir.join("no-such-dir"))
        .env("KUBECONFIG", cp.kubeconfig())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the manager ran on without its webhook server");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let output = child.wait_with_output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("serving the webhooks") && log.contains("no-such-dir"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "builds the generated project; run by hack/test.sh"]
async fn the_article_project_passes_its_own_checks() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    // With the Application webhooks: their envtest suites run with the others.
    succeed(&dir, &[&["create", "webhook"], ARTICLE_WEBHOOKS].concat());
    passes_its_own_checks(&dir);
    crate::cert_manager::the_webhooks_can_use_cert_managers_certificate(&dir, &[]);
    let cp = manifests_are_accepted(&dir, &[]).await;
    a_failed_webhook_server_stops_the_manager(&dir, &cp);
    without_webhooks_the_controllers_run_alone(&dir, &cp);
    webhooks_are_served_a_moment_after_sigterm(&dir, &cp);
    a_verb_missing_from_the_rules_fails_the_suites(&dir);
}

/// `ENABLE_WEBHOOKS=false` (kubebuilder's switch): the manager serves no webhook, so the
/// missing certificate files that stop it above are never read, and it is ready.
fn without_webhooks_the_controllers_run_alone(dir: &Path, cp: &ControlPlane) {
    let missing = format!("--webhook-cert-path={}", dir.join("no-such-dir").display());
    let manager = crate::article::Manager::start_with(
        dir,
        cp.kubeconfig(),
        "manager-without-webhooks",
        &[("ENABLE_WEBHOOKS", "false")],
        &["--metrics-secure=false", &missing],
    );
    crate::host::wait_for_ok("the manager without webhooks", manager.probes, "/readyz");
}

/// After SIGTERM the webhooks answer a moment longer (the API server calls a Pod until it
/// learns that it left the Service), then the manager exits 0.
fn webhooks_are_served_a_moment_after_sigterm(dir: &Path, cp: &ControlPlane) {
    let certs = dir.join("mounted-certs");
    std::fs::create_dir_all(&certs).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(certs.join("tls.crt"), made.cert.pem()).unwrap();
    std::fs::write(certs.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
    let port = crate::host::free_port();
    let mut manager = crate::article::Manager::start_with(
        dir,
        cp.kubeconfig(),
        "manager-stopping",
        &[],
        &[
            "--metrics-secure=false",
            &format!("--webhook-port={port}"),
            &format!("--webhook-cert-path={}", certs.display()),
        ],
    );
    crate::host::wait_for_ok("the manager with webhooks", manager.probes, "/readyz");
    manager.process.sigterm();
    let signalled = std::time::Instant::now();
    // Once the controllers have stopped, the webhooks are still served: any answer will do
    // (no webhook at this path), the server still accepts and serves.
    let deadline = signalled + std::time::Duration::from_secs(10);
    while !manager.process.log().contains("controllers stopped") {
        assert!(
            std::time::Instant::now() < deadline,
            "the controllers did not stop:\n{}",
            manager.process.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let answer = crate::host::https_get(port, "/not-a-webhook", None);
    assert_eq!(answer.status, 404, "{}", answer.body);
    let status = manager.process.wait(std::time::Duration::from_secs(10));
    let (took, log) = (signalled.elapsed(), manager.process.log());
    assert!(status.success(), "{status}:\n{log}");
    // Until the linger (3 s) is over, not only until the controllers stop.
    assert!(
        took >= std::time::Duration::from_secs(3),
        "stopped {took:?} after SIGTERM:\n{log}"
    );
    assert!(
        log.contains("SIGTERM received: stopping")
            && log.contains("no longer accepting webhook connections"),
        "{log}"
    );
}

/// The envtest suite runs the controller with exactly its `RBAC` rules: without `create` on
/// Deployments it fails, and role.yaml, no longer what the rules give, fails the unit tests.
fn a_verb_missing_from_the_rules_fails_the_suites(dir: &Path) {
    let controller = dir.join("src/controller/application.rs");
    let code = read(dir, "src/controller/application.rs");
    let granted = "resources: &[\"deployments\"],\n        verbs: &[\"get\", \"list\", \"watch\", \"create\", ";
    assert!(code.contains(granted), "the Deployment rule moved:\n{code}");
    let without_create = granted.replace("\"create\", ", "");
    std::fs::write(&controller, code.replace(granted, &without_create)).unwrap();
    for suite in [
        &["test", "--lib", "controller::tests"][..],
        &["test", "--test", "application"],
    ] {
        let out = Command::new("cargo")
            .args(suite)
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success(),
            "cargo {suite:?} passed without create on Deployments:\n{log}"
        );
    }
    std::fs::write(&controller, code).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "builds the generated project; run by hack/test.sh"]
async fn a_project_with_many_kinds_passes_its_own_checks() {
    let (_tmp, dir) = project_dir();
    many_kinds_project(&dir);
    change_cruiser_schemas(&dir);
    passes_its_own_checks(&dir);
    let converting = [
        "widgets.minetto.dev",
        "cruisers.ship.minetto.dev",
        "services.apps.minetto.dev",
    ];
    crate::cert_manager::the_webhooks_can_use_cert_managers_certificate(&dir, &converting);
    let spokes = [
        "minetto.dev_v1alpha1_widget.yaml",
        "ship.minetto.dev_v2_cruiser.yaml",
        "apps.minetto.dev_v2_service.yaml",
    ];
    manifests_are_accepted(&dir, &spokes).await;
}

/// A project with no deploy-image kind at all: skeleton controllers, namespaced and
/// cluster-scoped, a kind without a controller, a kind in a group with a dash, controllers
/// for Kubernetes' own types (a core one, a grouped one, which also gets a validating
/// webhook, and Roles, whose group module is named like `crate::rbac`) and for another
/// project's CRD. Nothing of the deploy-image code is there to use
/// the shared helpers, which must not then be dead code.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "builds the generated project; run by hack/test.sh"]
async fn a_project_with_only_skeleton_kinds_passes_its_own_checks() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    for args in [
        &["--version", "v1", "--kind", "Widget"][..],
        &["--version", "v1", "--kind", "Gadget", "--namespaced=false"],
        &["--version", "v1", "--kind", "Gizmo", "--controller=false"],
        &args("--group fleet-ops --version v1 --kind Gear"),
        &args("--group core --version v1 --kind ConfigMap --resource=false"),
        &args("--group apps --version v1 --kind Deployment --resource=false"),
        // The group whose module is named like the generated `crate::rbac`.
        &args("--group rbac --version v1 --kind Role --resource=false"),
        crate::foreign_api::BACKUP,
    ] {
        create_api(&dir, args);
    }
    let webhook = "--group apps --version v1 --kind Deployment --programmatic-validation";
    create_webhook(&dir, &args(webhook));
    // The generic suites cannot make another project's objects; this one makes a Backup.
    std::fs::write(
        dir.join("tests/backup_reconciled.rs"),
        include_str!("fixtures/backup_reconciled.rs"),
    )
    .unwrap();
    passes_its_own_checks(&dir);
}
