{%- set r = resource -%}
//! Reconciles {{ r.kind }}s. The finalizer, status, events and retry plumbing is done; the
//! work {{ r.article }} {{ r.kind }} stands for goes in `apply` (and its undoing in `cleanup`).

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
use kube::ResourceExt;
use tracing::{debug, info, warn};

use crate::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Status};
use crate::api::{Condition, ready_status, set_condition};
use crate::metrics::ReadyCounts;
use crate::context::retry_key;
use crate::watches::Relist;
use crate::rbac::Rule;
use crate::{Context, Error, Result, watches};

{% include "_partials/controller_names.rs" %}
/// Holds each {{ r.kind }} until `cleanup` has run.
pub const FINALIZER: &str = "{{ r.finalizer }}";
/// All this controller may do: `make manifests` writes these rules into
/// config/rbac/role.yaml, and the envtest suite runs the controller with exactly these.
/// A new permission goes here (for children: list, watch, create, patch, delete).
pub const RBAC: &[Rule] = &[
{% include "_partials/controller_own_rules.rs" %}
];

/// What each reconcile gets: the manager's context, and the caches of the children this
/// controller creates once it creates some. For each kind of child, add a
/// `children::Children<K>` here, made in `run` with `Children::watch(&ctx, field_manager,
/// child_name)` (`child_name` gives the child's name from this {{ r.kind }}'s, the only name the
/// cache keeps) and passed to `Controller::watches_stream` with `children::controller_of`; `Children::ensure` then creates a child when missing and
/// corrects it only while this {{ r.kind }} controls it (the deploy-image controllers that
/// `opsdk create api --deploy-image` writes show it all).
pub struct State {
    pub ctx: Arc<Context>,
}
{% include "_partials/controller_loop.rs" %}
/// Makes the world match `obj.spec`. Must be idempotent: it runs again after every change,
/// restart and failure. A failure shows in the status and as a Warning event, then retries.
async fn apply(obj: &{{ r.type_name }}, api: &Api<{{ r.type_name }}>, state: &State) -> Result<Action> {
    // Your logic goes here: create or change what {{ r.article }} {{ r.kind }} stands for; return the first
    // error (with `?` inside a block, or `Err(...)`).
    let outcome: Result<()> = Ok(());
    let status = match &outcome {
        Ok(()) => applied_status(obj),
        Err(err) => failed_status(obj, err),
    };
    let reported = state.ctx.report(api, obj, obj.status.as_ref(), &status, crate::context::Hold::No, FIELD_MANAGER, outcome);
    let ((), action) = reported.await?;
    Ok(action)
}

/// Undoes what `apply` did outside the cluster's garbage collection, before the object goes.
/// A failure returned through `report_failure` shows in the status, as `apply`'s does.
async fn cleanup(obj: &{{ r.type_name }}, _api: &Api<{{ r.type_name }}>, _state: &State) -> Result<Action> {
    info!(controller = CONTROLLER, namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), "cleaned up");
    Ok(Action::await_change())
}

/// The status after a successful `apply`.
fn applied_status(obj: &{{ r.type_name }}) -> {{ r.kind }}Status {
    let mut status = obj.status.clone().unwrap_or_default();
    let ready = Condition::new("Ready", true, "Reconciled", "spec applied", obj.metadata.generation, &status.conditions);
    set_condition(&mut status.conditions, ready);
    status.observed_generation = obj.metadata.generation;
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{{ r.api_rust_path }}::{{ r.kind }}Spec;

    fn fixture() -> {{ r.type_name }} {
        let mut obj = {{ r.type_name }}::new("test", {{ r.kind }}Spec::default());
        obj.metadata.generation = Some(3);
        obj
    }

    #[test]
    fn status_is_stable_once_written() {
        let mut obj = fixture();
        let first = applied_status(&obj);
        assert_eq!(first.observed_generation, Some(3));
        obj.status = Some(first.clone());
        assert_eq!(applied_status(&obj), first, "an unchanged object must not cause a status write");
    }

    #[test]
    fn a_failure_turns_ready_false_with_its_message() {
        let mut obj = fixture();
        obj.status = Some(applied_status(&obj));
        let failed = failed_status(&obj, &Error::ChildConflict("ConfigMap x is in the way".into()));
        let ready = &failed.conditions[0];
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "ChildConflict"));
        assert_eq!(ready.message, "ConfigMap x is in the way");
        assert_eq!(failed.conditions.len(), 1, "the condition is replaced, not added");
    }
}
