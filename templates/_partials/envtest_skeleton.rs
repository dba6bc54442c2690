{%- set r = resource -%}
//! The {{ r.kind }} controller against a real kube-apiserver and etcd (see `envtest/`).
//! Skipped unless KUBEBUILDER_ASSETS names a folder holding `etcd` and `kube-apiserver`.

mod conversion_server;
mod envtest;

use std::sync::Arc;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use {{ project.crate_name }}::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Spec};
use {{ project.crate_name }}::controller::{{ r.controller_rust_path }} as controller;
use {{ project.crate_name }}::context::Settings;
use {{ project.crate_name }}::watches::Namespaces;
use {{ project.crate_name }}::{Context, api};

use envtest::{ControlPlane, eventually};

/// The namespaces this test uses: a namespace-scoped manager (`controller::NAMESPACED`, set by
/// `opsdk edit --namespaced`) watches only these, with its Role bound in each.
const NAMESPACES: &[&str] = &["default"];

async fn start() -> Option<(ControlPlane, Client)> {
    let role = {{ project.crate_name }}::controller::role();
    let watched = if {{ project.crate_name }}::controller::NAMESPACED { NAMESPACES } else { &[] };
    let settings = Settings { namespaces: Namespaces::new(watched), ..Settings::default() };
    let run = |client| controller::run(Arc::new(Context::with_settings(client, Arc::default(), settings)));
    let (mut cp, client) = ControlPlane::with_controller(api::crds().expect("merging CRD versions"), role.rules(), watched, run).await?;
    cp.keep(conversion_server::serve(&cp).await);
    Some((cp, client))
}

#[tokio::test]
async fn {{ r.kind_snake }}_is_reconciled_and_finalized() {
    let Some((cp, client)) = start().await else { return };
{%- if r.namespaced %}
    let api: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "default");
{%- else %}
    let api: Api<{{ r.type_name }}> = Api::all(client.clone());
{%- endif %}
    let spec = {{ r.kind }}Spec { foo: "bar".into() };
    api.create(&PostParams::default(), &{{ r.type_name }}::new("sample", spec)).await.unwrap();

    let reconciled = eventually("the status", || async {
        let obj = api.get("sample").await.unwrap();
        obj.status.as_ref().filter(|s| s.observed_generation == obj.metadata.generation).map(|_| obj.clone())
    })
    .await;
    assert!(reconciled.finalizers().iter().any(|f| f == controller::FINALIZER));
    assert_eq!(reconciled.status.as_ref().unwrap().conditions[0].status, "True");
    the_api_server_limits_what_the_manager_changes_in_{{ r.plural }}(&cp, &reconciled, json!({"foo": "changed"})).await;

    api.delete("sample", &DeleteParams::default()).await.unwrap();
    eventually("the {{ r.kind }} gone", || async { api.get_opt("sample").await.unwrap().is_none().then_some(()) }).await;

    let held = {{ r.type_name }}::new("held", {{ r.kind }}Spec { foo: "bar".into() });
    a_refused_finalizer_shows_in_the_status(&client, &api, held).await;
}
{% include "_partials/envtest_finalizer_refused.rs" %}
{%- include "_partials/envtest_kind_writes.rs" %}