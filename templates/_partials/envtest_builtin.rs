{%- set r = resource -%}
//! The {{ r.kind }} controller against a real kube-apiserver and etcd (see `envtest/`), run as
//! the manager's ServiceAccount granted the controllers' `RBAC` rules. Skipped unless
//! KUBEBUILDER_ASSETS names a folder holding `etcd` and `kube-apiserver`. Add a test of what
//! `apply` does here, with {{ r.kind }}s of your own.

mod envtest;

use std::sync::Arc;
use std::sync::mpsc;

use kube::api::{Api, ListParams};

use {{ r.builtin_path }};
use {{ project.crate_name }}::Context;
use {{ project.crate_name }}::controller::{{ r.controller_rust_path }} as controller;
use {{ project.crate_name }}::metrics::Metrics;

use envtest::{ControlPlane, TIMEOUT, eventually};

#[tokio::test]
async fn {{ r.kind_snake }}s_are_watched_and_reconciled() {
    let role = {{ project.crate_name }}::controller::role();
    let metrics = Arc::new(Metrics::default());
    let (contexts, context) = mpsc::channel();
    let reported = metrics.clone();
    let run = move |client| {
        let ctx = Arc::new(Context::new(client, reported));
        contexts.send(ctx.clone()).expect("the test waits for the context");
        controller::run(ctx)
    };
    let Some((_cp, client)) = ControlPlane::with_controller(Vec::new(), &role, run).await else { return };
    let ctx = context.recv().expect("the controller started");

    // Its role lets it list and watch every {{ r.kind }} the API server has.
    ctx.watches.wait(TIMEOUT).await.expect("the controller's watch lists {{ r.kind }}s");

    // Any {{ r.kind }} there is (the API server makes some kinds itself) is reconciled.
    let existing = Api::<{{ r.kind }}>::all(client).list(&ListParams::default()).await.unwrap();
    if !existing.items.is_empty() {
        let success = r#"controller_runtime_reconcile_total{controller="{{ r.name_stem }}",result="success"}"#;
        eventually("a reconcile", || async { metrics.encode().unwrap().contains(success).then_some(()) }).await;
    }
}
