{%- set r = resource -%}
//! Reconciles {{ r.kind }}s. The finalizer, status and retry plumbing is done; the work a
//! {{ r.kind }} stands for goes in `apply` (and its undoing in `cleanup`).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
use kube::ResourceExt;
use serde_json::json;
use tracing::{info, warn};

use crate::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Status};
use crate::api::Condition;
use crate::context::object_key;
use crate::{Context, Error, Result};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "{{ r.name_stem }}";
/// Holds each {{ r.kind }} until `cleanup` has run.
pub const FINALIZER: &str = "{{ r.finalizer }}";
/// {{ r.kind }}s reconciled at once. Unbounded, a burst of thousands opens as many API
/// connections at once; a bound keeps memory flat and reuses pooled connections.
const CONCURRENCY: u16 = 16;
/// How often a quiet {{ r.kind }} is checked again.
const RESYNC: Duration = Duration::from_secs(300);
{% include "_partials/controller_loop.rs" %}
/// Makes the world match `obj.spec`. Must be idempotent: it runs again after every change,
/// restart and failure.
async fn apply(obj: &{{ r.type_name }}, api: &Api<{{ r.type_name }}>, _ctx: &Context) -> Result<Action> {
    // Your logic goes here: create or update what a {{ r.kind }} stands for, with
    // server-side apply (`Patch::Apply`) and `obj.controller_owner_ref(&())` as owner.
    let status = status(obj);
    if obj.status.as_ref() != Some(&status) {
        let patch = json!({ "status": status });
        api.patch_status(&obj.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// Undoes what `apply` did outside the cluster's garbage collection, before the object goes.
async fn cleanup(obj: &{{ r.type_name }}, _ctx: &Context) -> Result<Action> {
    info!(controller = CONTROLLER, object = %obj.name_any(), "cleaned up");
    Ok(Action::await_change())
}

fn status(obj: &{{ r.type_name }}) -> {{ r.kind }}Status {
    let previous = obj.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    {{ r.kind }}Status {
        observed_generation: obj.metadata.generation,
        conditions: vec![Condition::ready(true, "Reconciled", "spec applied".into(), obj.metadata.generation, previous)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{{ r.api_rust_path }}::{{ r.kind }}Spec;

    #[test]
    fn status_is_stable_once_written() {
        let mut obj = {{ r.type_name }}::new("test", {{ r.kind }}Spec::default());
        obj.metadata.generation = Some(3);
        let first = status(&obj);
        assert_eq!(first.observed_generation, Some(3));
        obj.status = Some(first.clone());
        assert_eq!(status(&obj), first, "an unchanged object must not cause a status write");
    }
}
