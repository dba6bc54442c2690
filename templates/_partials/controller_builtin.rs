{%- set r = resource -%}
//! Reconciles {{ r.kind }}s, a {% if r.external_crd %}type another project defines ({{ r.external_crd }}){% else %}Kubernetes type{% endif %} this project does not define: every
//! {{ r.kind }} the manager may see comes to `apply` when it changes, and again every
//! `--sync-period`. The watch, retries, metrics and failure events are done; what a
//! {{ r.kind }} means to this operator goes in `apply`.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
{%- if not r.namespaced %}
use kube::api::Api;
{%- endif %}
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
use kube::ResourceExt;
use tracing::{debug, warn};

use {{ r.foreign_type }};

use crate::context::retry_key;
use crate::watches::Relist;
use crate::rbac::Rule;
use crate::{Context, Error, Result, watches};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "{{ r.name_stem }}";
/// All this controller may do: `make manifests` writes these rules into
/// config/rbac/role.yaml, and the envtest suite runs the controller with exactly these.
/// Reading is all it needs so far; a write `apply` makes needs its verb here (with a
/// field manager of its own, e.g. "{{ project.name }}-{{ r.name_stem }}").
pub const RBAC: &[Rule] = &[Rule {
{%- if r.external_crd %}
    api_groups: &["{{ r.api_group }}"],
    resources: &["{{ r.plural }}"],
{%- else %}
    api_groups: &[<{{ r.kind }} as k8s_openapi::Resource>::GROUP],
    resources: &[<{{ r.kind }} as k8s_openapi::Resource>::URL_PATH_SEGMENT],
{%- endif %}
    verbs: &["list", "watch"],
}];

/// What each reconcile gets: the manager's context.
pub struct State {
    pub ctx: Arc<Context>,
}
{% include "_partials/controller_watch.rs" %}
/// Reconciles one {{ r.kind }}, timed and counted in the metrics. A failure is recorded as a
/// Warning event on the {{ r.kind }} (its status is not ours to write), once, not on every retry.
pub async fn reconcile(obj: Arc<{{ r.kind }}>, state: Arc<State>) -> Result<Action> {
    let timer = state.ctx.metrics.reconcile_started(CONTROLLER);
    let result = state.ctx.bounded(apply(&obj, &state)).await;
    timer.finish(&result, state.ctx.settings.sync_period);
    let key = retry_key(obj.as_ref());
    match &result {
        Ok(_) => state.ctx.retries.forget(&key),
        Err(err) if !state.ctx.retries.failing(&key) => {
            state.ctx.publish(obj.as_ref(), EventType::Warning, err.reason(), err.message());
        }
        Err(_) => {}
    }
    result
}

/// Makes the world match `obj`. Must be idempotent: it runs again after every change,
/// restart and failure; return the first error (with `?`) to retry after a growing delay.
async fn apply(obj: &{{ r.kind }}, state: &State) -> Result<Action> {
    // Your logic goes here.
    debug!(controller = CONTROLLER, namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), "reconciled");
    Ok(Action::requeue(state.ctx.settings.sync_period))
}
