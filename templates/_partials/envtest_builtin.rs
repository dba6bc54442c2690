{%- set r = resource -%}
//! The {{ r.kind }} controller against a real kube-apiserver and etcd (see `envtest/`), run as
//! the manager's ServiceAccount granted the controllers' `RBAC` rules. Skipped unless
//! KUBEBUILDER_ASSETS names a folder holding `etcd` and `kube-apiserver`. Add a test of what
//! `apply` does here, with {{ r.kind }}s of your own.

mod envtest;

use std::sync::Arc;
use std::sync::mpsc;

{%- if r.builtin_sample %}
use kube::api::{Api, ListParams, PostParams};
{%- elif r.namespaced %}
use kube::api::ListParams;
{%- else %}
use kube::api::{Api, ListParams};
{%- endif %}

use {{ r.foreign_type | replace(from="crate::", to=project.crate_name ~ "::") }};
use {{ project.crate_name }}::Context;
use {{ project.crate_name }}::context::Settings;
use {{ project.crate_name }}::controller::{{ r.controller_rust_path }} as controller;
use {{ project.crate_name }}::metrics::Metrics;
use {{ project.crate_name }}::watches::Namespaces;

use envtest::{ControlPlane, TIMEOUT, eventually};

/// The namespaces this test uses: a namespace-scoped manager (`controller::NAMESPACED`, set by
/// `opsdk edit --namespaced`) watches only these, with its Role bound in each.
const NAMESPACES: &[&str] = &["default", "kube-system"];

#[tokio::test]
async fn {{ r.kind_snake }}s_are_watched_and_reconciled() {
    let role = {{ project.crate_name }}::controller::role();
    let watched = if {{ project.crate_name }}::controller::NAMESPACED { NAMESPACES } else { &[] };
    let settings = Settings { namespaces: Namespaces::new(watched), ..Settings::default() };
    let metrics = Arc::new(Metrics::default());
    let (contexts, context) = mpsc::channel();
    let reported = metrics.clone();
    let run = move |client| {
        let ctx = Arc::new(Context::with_settings(client, reported, settings));
        contexts.send(ctx.clone()).expect("the test waits for the context");
        controller::run(ctx)
    };
{%- if r.external_crd %}
    // Another project installs this CRD in a cluster; here, its copy.
    let crd = serde_saphyr::from_str(include_str!("../{{ r.external_crd }}")).expect("parsing {{ r.external_crd }}");
    let Some((_cp, client)) = ControlPlane::with_controller(vec![crd], role.rules(), watched, run).await else { return };
{%- else %}
    let Some((_cp, client)) = ControlPlane::with_controller(Vec::new(), role.rules(), watched, run).await else { return };
{%- endif %}
    let ctx = context.recv().expect("the controller started");

    // Its role lets it list and watch every {{ r.kind }} the API server has.
    ctx.watches.wait(TIMEOUT).await.expect("the controller's watch lists {{ r.kind }}s");

{%- if r.builtin_sample %}
    // One of its own, so that there is one to reconcile.
    let mut sample: {{ r.kind }} = serde_json::from_str(r#"{{ r.builtin_sample }}"#).expect("the sample parses");
    sample.metadata.name = Some("envtest-sample".into());
{%- if r.namespaced %}
    let own = Api::<{{ r.kind }}>::namespaced(client.clone(), "default");
{%- else %}
    let own = Api::<{{ r.kind }}>::all(client.clone());
{%- endif %}
    own.create(&PostParams::default(), &sample).await.expect("creating {{ r.article }} {{ r.kind }}");
{%- endif %}

    // Every {{ r.kind }} there{% if not r.external_crd %} (the API server makes some kinds itself){% endif %} gets reconciled.
{%- if r.namespaced %}
    let apis = Namespaces::new(watched).apis::<{{ r.kind }}>(&client);
{%- else %}
    let apis = vec![Api::<{{ r.kind }}>::all(client)];
{%- endif %}
    let mut existing = Vec::new();
    for api in apis {
        existing.extend(api.list(&ListParams::default()).await.unwrap().items);
    }
{%- if r.builtin_sample %}
    assert!(existing.iter().any(|o| o.metadata.name.as_deref() == Some("envtest-sample")), "the sample is listed");
{%- else %}
    // opsdk knows no {{ r.kind }} the API server accepts alone: create one above to have the
    // reconcile checked even where the API server has none.
{%- endif %}
    if !existing.is_empty() {
        // The counter exists at 0 from the controller's start: a reconcile makes it count.
        let success = r#"controller_runtime_reconcile_total{controller="{{ r.name_stem }}",result="success"} "#;
        let counted = || metrics.encode().unwrap().lines().any(|l| l.starts_with(success) && !l.ends_with(" 0"));
        eventually("a reconcile", || async { counted().then_some(()) }).await;
    }
}
