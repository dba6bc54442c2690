//! The article's manager in trouble, on a real control plane: started before `make install`
//! it is not ready, stops on SIGTERM, and exits with a hint naming the CRD; run as an account
//! without its role it exits naming the forbidden resource; run as its ServiceAccount it
//! reconciles again within 15 s of kube-apiserver coming back from a crash. Run by
//! hack/test.sh, which builds the control plane.

use std::time::{Duration, Instant};

use crate::article::{APPLICATION_YAML, Manager, build_article_project, deployment_of};
use crate::envtest;
use crate::host::{http_get, wait_for_ok};

/// How soon after kube-apiserver answers again the manager must reconcile.
const RECOVERY: Duration = Duration::from_secs(15);
/// The API server's outage: longer than the watches' longest retry delay (5 s).
const OUTAGE: Duration = Duration::from_secs(10);
/// A start-up deadline short enough for a test.
const SYNC_TIMEOUT: &str = "--cache-sync-timeout=5s";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane and builds the generated project; run by hack/test.sh"]
async fn the_manager_explains_why_it_cannot_start_and_recovers_from_an_api_server_restart() {
    let mut cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    let project = build_article_project(cp.kubeconfig());
    let (dir, kubectl) = (&project.dir, &project.kubectl);

    // Before `make install`: never ready, and SIGTERM stops it at once.
    let mut waiting = Manager::start_with(dir, cp.kubeconfig(), "before-install", &[], &[]);
    let readyz = answer(waiting.probes, "/readyz");
    assert!(readyz.starts_with("HTTP/1.1 503"), "{readyz}");
    std::thread::sleep(Duration::from_secs(2));
    assert!(http_get(waiting.probes, "/readyz").starts_with("HTTP/1.1 503"));
    let sigterm = Instant::now();
    let status = waiting.process.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {}", waiting.process.log());
    assert!(
        sigterm.elapsed() < Duration::from_secs(2),
        "{:?}",
        sigterm.elapsed()
    );

    // With a start-up deadline it gives up, naming the CRD and `make install`.
    let mut missing = Manager::start_with(dir, cp.kubeconfig(), "no-crd", &[], &[SYNC_TIMEOUT]);
    let status = missing.process.wait(Duration::from_secs(30));
    let log = missing.process.log();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("applications.minetto.dev: the API server does not serve"),
        "{log}"
    );
    assert!(log.contains("make install"), "{log}");

    // Installed, but run as an account without the manager's role: it names what it may not do.
    project.install();
    kubectl.ok(&["-n", "default", "create", "serviceaccount", "nobody"]);
    let nobody = project.account_kubeconfig("default", "nobody");
    let mut forbidden = Manager::start_with(dir, &nobody, "forbidden", &[], &[SYNC_TIMEOUT]);
    let status = forbidden.process.wait(Duration::from_secs(30));
    let log = forbidden.process.log();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("may not list and watch applications.minetto.dev"),
        "{log}"
    );

    // As its ServiceAccount, with its role: ready once its caches are in, and reconciling.
    let account = project.deploy_rbac();
    let manager = Manager::start_with(dir, &account, "manager", &[], &[]);
    std::fs::write(dir.join("application.yaml"), APPLICATION_YAML).unwrap();
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    deployment_of(kubectl, "application-sample");
    wait_for_ok("the manager", manager.probes, "/readyz");

    // kube-apiserver crashes and comes back: an Application created then is reconciled
    // within 15 s.
    cp.restart_apiserver(OUTAGE)
        .await
        .expect("restarting kube-apiserver");
    let back = Instant::now();
    let second = APPLICATION_YAML.replace(
        "name: application-sample\n  namespace",
        "name: after-restart\n  namespace",
    );
    kubectl.ok_with_stdin(&["apply", "-f", "-"], Some(&second));
    deployment_of(kubectl, "after-restart");
    let recovered = back.elapsed();
    eprintln!("reconciled {recovered:?} after kube-apiserver was back");
    assert!(
        recovered <= RECOVERY,
        "reconciled {recovered:?} after kube-apiserver was back:\n{}",
        manager.process.log()
    );
}

/// The first answer of the manager's probe endpoint, once it listens.
fn answer(port: u16, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response = http_get(port, path);
        if !response.is_empty() {
            return response;
        }
        assert!(Instant::now() < deadline, "nothing answers on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
