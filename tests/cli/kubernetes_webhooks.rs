//! Webhooks on Kubernetes' own kinds (`create webhook --group core --version v1 --kind Pod`):
//! recorded as kubebuilder records them, with no `create api` first, never called where the
//! manager itself must start, and gone from PROJECT with their last webhook.

use crate::support::*;

const POD: &str = "--group core --version v1 --kind Pod";
const DEPLOYMENT: &str = "--group apps --version v1 --kind Deployment";

/// `line` and then `flags`, as arguments.
fn with<'a>(line: &'a str, flags: &'a str) -> Vec<&'a str> {
    [args(line), args(flags)].concat()
}

#[test]
fn a_webhook_on_a_kubernetes_kind_needs_no_api_and_leaves_with_its_last_webhook() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let said = create_webhook(&dir, &with(POD, "--defaulting --programmatic-validation"));
    assert!(
        said.contains("not called in kube-system, kube-node-lease nor the manager's own namespace"),
        "{said}"
    );
    let project = read(&dir, "PROJECT");
    let recorded = "- core: true\n  path: k8s.io/api/core/v1\n  group: core\n  version: v1\n  kind: Pod\n  plural: pods\n  controller: false\n  deployImage: false\n  webhooks:\n    defaulting: true\n    validation: true\n    webhookVersion: v1\n";
    assert!(project.contains(recorded), "{project}");
    let hooks = read(&dir, "src/webhook/core/v1/pod.rs");
    assert!(
        hooks.contains("use k8s_openapi::api::core::v1::Pod;"),
        "{hooks}"
    );
    assert!(hooks.contains("pub fn default(_obj: &mut Pod)"), "{hooks}");
    let registry = read(&dir, "src/webhook/mod.rs");
    for wired in [
        "path: \"/mutate--v1-pod\"",
        "name: \"vpod-v1.kb.io\"",
        "kubernetes_kind: true",
        "group: \"\",",
    ] {
        assert!(registry.contains(wired), "{wired} missing:\n{registry}");
    }
    let suite = read(&dir, "tests/core_pod_v1_webhook.rs");
    assert!(
        suite.contains("fn kubernetes_namespaces_and_the_managers_are_never_held_up()"),
        "{suite}"
    );
    assert!(
        read(&dir, "tests/webhook_certs.rs")
            .contains("use k8s_openapi::api::core::v1::Pod as Webhooked;")
    );

    // A controller joins the same entry, and outlives the webhooks.
    create_api(&dir, &with(POD, "--resource=false"));
    let project = read(&dir, "PROJECT");
    assert_eq!(project.matches("kind: Pod\n").count(), 1, "{project}");
    assert!(
        project.contains(
            "  controller: true\n  deployImage: false\n  webhooks:\n    defaulting: true"
        ),
        "{project}"
    );
    succeed(&dir, &[&["delete", "webhook"], &args(POD)[..]].concat());
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("kind: Pod\n  plural: pods\n  controller: true\n  deployImage: false\n"),
        "{project}"
    );
    assert!(!dir.join("src/webhook/core").exists());

    // A kind recorded for its webhooks alone leaves PROJECT with the last of them.
    create_webhook(&dir, &with(DEPLOYMENT, "--programmatic-validation"));
    assert!(read(&dir, "PROJECT").contains("kind: Deployment\n"));
    let said = succeed(
        &dir,
        &[&["delete", "webhook"], &args(DEPLOYMENT)[..]].concat(),
    );
    assert!(
        said.contains("The validating webhook of apps/v1 Deployment deleted"),
        "{said}"
    );
    assert!(!read(&dir, "PROJECT").contains("Deployment"));
    assert!(!dir.join("tests/apps_deployment_v1_webhook.rs").exists());
    assert!(!dir.join("src/webhook/apps").exists());

    // `delete api` takes a webhooks-only kind whole, and says what went.
    create_webhook(&dir, &with(DEPLOYMENT, "--defaulting"));
    let said = succeed(&dir, &[&["delete", "api"], &args(DEPLOYMENT)[..]].concat());
    assert!(
        said.contains("Webhooks for apps/v1 Deployment deleted"),
        "{said}"
    );
    assert!(!read(&dir, "PROJECT").contains("Deployment"));
}

#[test]
fn webhooks_kubernetes_kinds_cannot_take_are_refused_and_change_nothing() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let refused = |args: &[&str], needle: &str| {
        assert_refused(&dir, &mut create_webhook_cmd(&dir, args), needle)
    };
    refused(
        &with(POD, "--conversion --spoke v2"),
        "Kubernetes converts the versions of its own kinds",
    );
    let policy = "--group admissionregistration --version v1 --kind ValidatingWebhookConfiguration --defaulting";
    refused(
        &args(policy),
        "never calls admission webhooks for ValidatingWebhookConfiguration",
    );
    refused(
        &args("--group core --version v1 --kind ClusterRole --defaulting"),
        "is not a Kubernetes",
    );
    refused(
        &args("--group rbac --version v1 --kind ClusterRole --defaulting"),
        "ClusterRole is cluster-scoped",
    );
    refused(
        &args("--group core --version v1 --kind Event --defaulting"),
        "no test object of Event",
    );
    refused(
        &args("--version v1 --kind Pod --defaulting"),
        "for Kubernetes' Pod, pass --group core",
    );
    refused(
        &args("--group core --version v9 --kind Pod --defaulting"),
        "core/v9 Pod is not a Kubernetes",
    );

    // A namespace-scoped manager's webhooks would be called only where it runs.
    let (_ns, namespaced) = project_dir();
    init_with(&namespaced, &["--namespaced"]);
    let pod = with(POD, "--defaulting");
    assert_refused(
        &namespaced,
        &mut create_webhook_cmd(&namespaced, &pod),
        "only in the manager's own namespace",
    );
    create_webhook(&dir, &pod);
    // An API of the project cannot share the kind's files.
    create_webhook(&dir, &with(DEPLOYMENT, "--programmatic-validation"));
    let own = args("--group apps --version v1beta1 --kind Deployment --resource --controller");
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &own),
        "the project has webhooks for apps/v1 Deployment",
    );
    assert_refused(
        &dir,
        opsdk(&dir).args(["edit", "--namespaced"]),
        "--namespaced would call the webhooks on core/v1 Pod, apps/v1 Deployment only in the manager's own namespace",
    );
}
