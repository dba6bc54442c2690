//! A namespace-scoped article project (`init --namespaced`) end to end, on one build: it
//! passes its own checks (its envtest suites then run the controller with a Role bound in
//! each namespace they use, and watch those four namespaces merged), and its manager, run
//! as its ServiceAccount with the RBAC `make deploy` installs (a Role, no ClusterRole) and
//! WATCH_NAMESPACE set to its own namespace, reconciles an Application there and leaves one
//! in another namespace alone. Run by hack/test.sh, which builds the control plane.

use std::time::Duration;

use crate::article::{Installed, Manager, NAMESPACE};
use crate::envtest;
use crate::generated::passes_its_own_checks_with;
use crate::support::*;

/// How long an Application outside the watched namespace is watched for a reconcile.
const QUIET: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane and builds the generated project; run by hack/test.sh"]
async fn a_namespaced_manager_reconciles_only_in_its_namespace_with_a_role() {
    let (tmp, dir) = project_dir();
    succeed(
        &dir,
        &["init", "--domain", DOMAIN, "--repo", REPO, "--namespaced"],
    );
    create_api(&dir, &["--version", "v1alpha1", "--kind", "Application"]);
    passes_its_own_checks_with(&dir, &["test"]);
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("kind: Role\n"), "{role}");

    let cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    let project = Installed::built(tmp, dir, cp.kubeconfig());
    project.install();
    let account = project.deploy_rbac();
    let kubectl = &project.kubectl;
    // Role-only: the one ClusterRoleBinding naming the manager's ServiceAccount is the
    // metrics authentication's (TokenReviews and SubjectAccessReviews are cluster-scoped, as
    // in kubebuilder); none grants its controllers' rules.
    let subjects = "jsonpath={range .items[*]}{.metadata.name}: {.subjects[*].name}{\"\\n\"}{end}";
    let bindings = kubectl.ok(&["get", "clusterrolebindings", "-o", subjects]);
    let managers: Vec<&str> = bindings
        .lines()
        .filter(|line| line.contains("k8s-operator-talk"))
        .collect();
    assert_eq!(
        managers,
        ["k8s-operator-talk-metrics-auth-rolebinding: k8s-operator-talk-controller-manager"],
        "{bindings}"
    );
    let roles = kubectl.ok(&["-n", NAMESPACE, "get", "roles,rolebindings", "-o", "name"]);
    assert!(
        roles.contains("role.rbac.authorization.k8s.io/k8s-operator-talk-manager-role"),
        "{roles}"
    );

    let env = [("WATCH_NAMESPACE", NAMESPACE)];
    let manager = Manager::start_with(&project.dir, &account, "namespaced", &env, &[]);
    let yaml = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: elsewhere\n---\n{}---\n{}",
        application("watched", NAMESPACE),
        application("ignored", "elsewhere"),
    );
    kubectl.ok_with_stdin(&["apply", "-f", "-"], Some(&yaml));
    let deployment = [
        "-n",
        NAMESPACE,
        "get",
        "deployment",
        "watched-deployment",
        "-o",
        "name",
    ];
    kubectl.eventually("the watched Application's Deployment", &deployment, |out| {
        !out.trim().is_empty()
    });
    std::thread::sleep(QUIET);
    let elsewhere = kubectl.ok(&[
        "-n",
        "elsewhere",
        "get",
        "deployments,services",
        "-o",
        "name",
    ]);
    assert_eq!(elsewhere.trim(), "", "{}", manager.process.log());
    let finalizers = [
        "-n",
        "elsewhere",
        "get",
        "application",
        "ignored",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ];
    assert_eq!(
        kubectl.ok(&finalizers).trim(),
        "",
        "the ignored Application was reconciled"
    );
    let log = manager.process.log();
    assert!(
        log.contains(NAMESPACE),
        "the manager logs what it watches:\n{log}"
    );
    assert!(!log.contains("forbidden"), "{log}");
}

fn application(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: minetto.dev/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  image: nginx:latest\n  replicas: 1\n  port: 80\n"
    )
}
