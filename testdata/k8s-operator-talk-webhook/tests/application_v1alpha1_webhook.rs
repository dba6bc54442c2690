//! The Application (minetto.dev/v1alpha1) webhooks called by a real kube-apiserver: the webhook
//! server runs here as the manager runs it with `--webhook-url` (see `envtest/webhook.rs`).
//! Skipped unless KUBEBUILDER_ASSETS names a folder holding `etcd`, `kube-apiserver` and
//! `kubectl`.

mod envtest;

use std::time::Duration;

use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};

use k8s_operator_talk::api::v1alpha1::Application;
use k8s_operator_talk::webhook::certs::Validity;
use k8s_operator_talk::webhook::configs::{self, Target};
use k8s_operator_talk::webhook::{self, serve};

use envtest::webhook::{NAMESPACE, Served, kubectl, registered, serve_webhooks, webhook_url};
use envtest::{ControlPlane, eventually, install_crds};

/// The sample of config/samples, which the webhooks admit.
const SAMPLE: &str = include_str!("../config/samples/minetto.dev_v1alpha1_application.yaml");

async fn start() -> Option<(ControlPlane, Client, Served)> {
    let cp = ControlPlane::start()
        .await
        .expect("starting the control plane")?;
    let admin = cp.client();
    install_crds(
        &admin,
        k8s_operator_talk::api::crds().expect("merging CRD versions"),
    )
    .await
    .expect("installing the CRDs");
    let (port, url) = webhook_url();
    let options = serve::Options {
        addr: ([127, 0, 0, 1], port).into(),
        target: Target::Url(url),
        namespace: NAMESPACE.into(),
        validity: Validity {
            propagation: Duration::from_secs(1),
            ..Validity::DEFAULT
        },
        cert_files: None,
        listening: Default::default(),
    };
    let served = serve_webhooks(
        &cp,
        configs::roles(NAMESPACE, true),
        |client, stop| async move {
            serve::serve(client, webhook::hooks(), options, stop)
                .await
                .expect("serving the webhooks");
        },
    )
    .await;
    let api = objects(&admin);
    let sample: Application = serde_saphyr::from_str(SAMPLE).expect("the sample parses");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let names = (
        configs::deployed(configs::MUTATING),
        configs::deployed(configs::VALIDATING),
    );
    let hooks = webhook::hooks().len();
    eventually("the webhooks registered", || {
        registered(&admin, (&names.0, &names.1), hooks)
    })
    .await;
    eventually("the webhooks to answer", || async {
        api.create(&dry_run, &sample).await.ok()
    })
    .await;
    Some((cp, admin, served))
}

/// Deletes reach the validating webhook only when its `VALIDATE_DELETE` is on (off by default,
/// as kubebuilder's `verbs=create;update`); otherwise the webhooks never hold up a delete while
/// no replica of the manager answers. (A finalizer the controller added still waits for the
/// manager; no controller runs here.)
#[tokio::test]
async fn a_delete_needs_the_webhooks_only_when_validate_delete_is_on() {
    let Some((_cp, admin, served)) = start().await else {
        return;
    };
    let sample: Application = serde_saphyr::from_str(SAMPLE).expect("the sample parses");
    let name = sample.metadata.name.clone().expect("the sample is named");
    objects(&admin)
        .create(&PostParams::default(), &sample)
        .await
        .expect("admitted through the webhooks");
    served.stop().await;
    let validating = webhook::hooks()
        .iter()
        .any(|hook| hook.path == "/validate-minetto-dev-v1alpha1-application");
    let stored = stored(&admin);
    let deleted = stored.delete(&name, &DeleteParams::default()).await;
    if validating && webhook::v1alpha1::application::VALIDATE_DELETE {
        deleted.expect_err("refused: the validating webhook sees deletes and nothing answers");
        assert!(
            stored.get_opt(&name).await.unwrap().is_some(),
            "still there"
        );
    } else {
        deleted.expect("deleted with no webhook answering");
        eventually("the sample gone", || gone(&stored, &name)).await;
    }
}

/// An object being deleted waits only for its finalizers, and their removal must not need the
/// manager: the API server does not call the webhooks for it (their matchConditions), so a
/// manager that crashes, or is gone for good, never leaves objects terminating forever. Except
/// when the webhooks are on a spoke of a kind that converts: the API server converts the
/// object to the webhooks' version to evaluate those conditions, and only the manager converts.
#[tokio::test]
async fn a_finalizer_is_removed_while_no_replica_of_the_manager_answers() {
    let Some((_cp, admin, served)) = start().await else {
        return;
    };
    let mut sample: Application = serde_saphyr::from_str(SAMPLE).expect("the sample parses");
    let name = sample.metadata.name.clone().expect("the sample is named");
    sample.metadata.finalizers = Some(vec!["test.opsdk.dev/hold".into()]);
    objects(&admin)
        .create(&PostParams::default(), &sample)
        .await
        .expect("admitted through the webhooks");
    let stored = stored(&admin);
    stored
        .delete(&name, &DeleteParams::default())
        .await
        .expect("deletion started");
    served.stop().await;
    let release = serde_json::json!({ "metadata": { "finalizers": null } });
    let released = stored
        .patch(&name, &PatchParams::default(), &Patch::Merge(&release))
        .await;
    let hub = webhook::conversions()
        .iter()
        .find(|c| c.crd == "applications.minetto.dev")
        .map(|c| c.hub);
    if hub.is_some_and(|hub| hub != "v1alpha1") {
        let err =
            released.expect_err("a spoke's webhooks need the object converted, by the manager");
        assert!(err.to_string().contains("conversion webhook"), "{err}");
        return;
    }
    released.expect("the finalizer removed with no webhook answering");
    eventually("the sample gone", || gone(&stored, &name)).await;
}

/// Whether the sample is gone.
async fn gone(stored: &Api<DynamicObject>, name: &str) -> Option<()> {
    stored.get_opt(name).await.unwrap().is_none().then_some(())
}

/// The Applications in their stored version: the conversion hub once the kind converts
/// (`create webhook --conversion`), whose reads and deletes need no conversion webhook.
fn stored(client: &Client) -> Api<DynamicObject> {
    let conversions = webhook::conversions();
    let hub = conversions
        .iter()
        .find(|c| c.crd == "applications.minetto.dev")
        .map(|c| c.hub);
    let gvk = GroupVersionKind::gvk("minetto.dev", hub.unwrap_or("v1alpha1"), "Application");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "applications");
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn objects(client: &Client) -> Api<Application> {
    Api::namespaced(client.clone(), "default")
}

/// A manifest of an Application named `name` running `image` on `port`.
fn manifest(name: &str, image: &str, port: i32) -> String {
    format!(
        "apiVersion: minetto.dev/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  image: {image}\n  port: {port}\n"
    )
}

#[tokio::test]
async fn an_invalid_image_is_refused_with_the_validators_message() {
    let Some((cp, admin, _served)) = start().await else {
        return;
    };
    let out = kubectl(
        &cp,
        &["apply", "-f", "-"],
        &manifest("bad", "NGINX:latest", 80),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            r#"The Application "bad" is invalid: spec.image: Invalid value: "NGINX:latest""#
        ),
        "{stderr}"
    );
    assert!(objects(&admin).get_opt("bad").await.unwrap().is_none());
}

#[tokio::test]
async fn the_tag_is_defaulted_a_port_change_allowed_and_another_repository_refused() {
    let Some((cp, admin, _served)) = start().await else {
        return;
    };
    let out = kubectl(&cp, &["apply", "-f", "-"], &manifest("web", "nginx", 80)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let api = objects(&admin);
    assert_eq!(
        api.get("web").await.unwrap().spec.image,
        "nginx:latest",
        "defaulted"
    );

    let out = kubectl(
        &cp,
        &["apply", "-f", "-"],
        &manifest("web", "nginx:1.27", 8080),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let web = api.get("web").await.unwrap();
    assert_eq!(
        (web.spec.image.as_str(), web.spec.port),
        ("nginx:1.27", 8080)
    );

    let out = kubectl(
        &cp,
        &["apply", "-f", "-"],
        &manifest("web", "redis:7", 8080),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("spec.image: Forbidden: the repository may not change"),
        "{stderr}"
    );
    assert_eq!(api.get("web").await.unwrap().spec.image, "nginx:1.27");
}
