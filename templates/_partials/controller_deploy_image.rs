{%- set r = resource -%}
//! Reconciles {{ r.kind }}s: each runs as a Deployment and a NodePort Service in its own
//! namespace, both owned by it (deleted with it) and kept in step with its spec.
//!
//! Children are compared with what the spec asks for and written with server-side apply only
//! when they differ, so a quiet cluster costs no writes; status is written only when it changes.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::{apps::v1 as appsv1, core::v1 as corev1};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::{info, warn};

use crate::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Status};
use crate::api::Condition;
use crate::context::object_key;
use crate::{Context, Error, MANAGER, Result};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "{{ r.name_stem }}";
/// Holds each {{ r.kind }} until its children are cleaned up.
pub const FINALIZER: &str = "{{ r.finalizer }}";
/// Label on every child, so our watches see only our objects.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", MANAGER);
/// {{ r.kind }}s reconciled at once. Unbounded, a burst of thousands opens as many API
/// connections at once; a bound keeps memory flat and reuses pooled connections.
const CONCURRENCY: u16 = 16;
/// How often a quiet {{ r.kind }} is checked again, to catch drift a watch could have missed.
const RESYNC: Duration = Duration::from_secs(300);
{% include "_partials/controller_loop.rs" %}
/// Brings the Deployment and the Service in line with the spec, then reports the status.
async fn apply(obj: &{{ r.type_name }}, api: &Api<{{ r.type_name }}>, ctx: &Context) -> Result<Action> {
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let deployments: Api<appsv1::Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<corev1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let (desired_deployment, desired_service) = (deployment(obj)?, service(obj)?);
    // Both children at once: they do not depend on each other.
    let (deployment, _) = tokio::try_join!(
        ensure(&deployments, &desired_deployment, deployment_drifted, obj, ctx),
        ensure(&services, &desired_service, service_drifted, obj, ctx),
    )?;

    let status = status(obj, &deployment);
    if obj.status.as_ref() != Some(&status) {
        let patch = json!({ "status": status });
        api.patch_status(&obj.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// The child as the API server has it, after applying `desired` if the child is missing or
/// has drifted (with an event saying so).
async fn ensure<K>(api: &Api<K>, desired: &K, drifted: fn(&K, &K) -> bool, owner: &{{ r.type_name }}, ctx: &Context) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired.name_any();
    let current = api.get_opt(&name).await?;
    if let Some(current) = current.as_ref().filter(|current| !drifted(current, desired)) {
        return Ok(current.clone());
    }
    let applied = api.patch(&name, &apply_params(), &Patch::Apply(desired)).await?;
    let change = if current.is_some() { "Updated" } else { "Created" };
    publish(ctx, owner, &format!("{}{change}", K::kind(&())), &name).await;
    Ok(applied)
}

/// The owner references make the garbage collector delete the children with their owner;
/// deleting them here as well makes cleanup visible in events and independent of the GC.
async fn cleanup(obj: &{{ r.type_name }}, ctx: &Context) -> Result<Action> {
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let deployments: Api<appsv1::Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<corev1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = DeleteParams::background();
    let names = child_names(obj);
    ignore_not_found(deployments.delete(&names.deployment, &params).await.map(drop))?;
    ignore_not_found(services.delete(&names.service, &params).await.map(drop))?;
    info!(controller = CONTROLLER, object = %obj.name_any(), "cleaned up");
    publish(ctx, obj, "Deleted", "Deleted the Deployment and the Service").await;
    Ok(Action::await_change())
}

fn ignore_not_found(result: kube::Result<()>) -> Result<()> {
    match result {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => Ok(other?),
    }
}

/// Events are best effort: failing to record one must not fail the reconcile.
async fn publish(ctx: &Context, obj: &{{ r.type_name }}, reason: &str, note: &str) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note.into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(err) = ctx.recorder.publish(&event, &obj.object_ref(&())).await {
        warn!(controller = CONTROLLER, "recording event {reason}: {err}");
    }
}

fn apply_params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

struct ChildNames {
    deployment: String,
    service: String,
    container: String,
}

fn child_names(obj: &{{ r.type_name }}) -> ChildNames {
    let name = obj.name_any();
    ChildNames {
        deployment: format!("{name}-deployment"),
        service: format!("{name}-service"),
        container: format!("{name}-container"),
    }
}

/// `app: <name>` selects the Pods; the managed-by label scopes our watches.
fn labels(obj: &{{ r.type_name }}) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_string(), obj.name_any()),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ])
}

fn selector(obj: &{{ r.type_name }}) -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_string(), obj.name_any())])
}

fn child_meta(obj: &{{ r.type_name }}, name: String) -> Result<ObjectMeta> {
    let owner = obj.controller_owner_ref(&()).ok_or_else(|| Error::MissingUid(obj.name_any()))?;
    Ok(ObjectMeta {
        name: Some(name),
        namespace: obj.namespace(),
        labels: Some(labels(obj)),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    })
}

/// The Deployment an {{ r.kind }} asks for: `replicas` Pods of one container running `image`.
pub fn deployment(obj: &{{ r.type_name }}) -> Result<appsv1::Deployment> {
    let names = child_names(obj);
    Ok(appsv1::Deployment {
        metadata: child_meta(obj, names.deployment)?,
        spec: appsv1::DeploymentSpec {
            replicas: Some(obj.spec.replicas),
            selector: metav1::LabelSelector { match_labels: Some(selector(obj)), ..Default::default() },
            template: corev1::PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels(obj)), ..ObjectMeta::default() }),
                spec: Some(corev1::PodSpec {
                    containers: vec![corev1::Container {
                        name: names.container,
                        image: Some(obj.spec.image.clone()),
                        ports: Some(vec![corev1::ContainerPort {
                            name: Some("http".into()),
                            container_port: obj.spec.port,
                            protocol: Some("TCP".into()),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    })
}

/// The NodePort Service an {{ r.kind }} asks for: port `http` forwarding `port` to the Pods.
pub fn service(obj: &{{ r.type_name }}) -> Result<corev1::Service> {
    Ok(corev1::Service {
        metadata: child_meta(obj, child_names(obj).service)?,
        spec: Some(corev1::ServiceSpec {
            type_: Some("NodePort".into()),
            external_traffic_policy: Some("Local".into()),
            selector: Some(selector(obj)),
            ports: Some(vec![corev1::ServicePort {
                name: Some("http".into()),
                port: obj.spec.port,
                target_port: Some(IntOrString::Int(obj.spec.port)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Whether `current` lacks anything `desired` sets: our labels, our owner, replicas, image, port.
fn deployment_drifted(current: &appsv1::Deployment, desired: &appsv1::Deployment) -> bool {
    let pod = |d: &appsv1::Deployment| {
        let spec = &d.spec;
        let container = spec.template.spec.as_ref()?.containers.first()?;
        let port = container.ports.as_ref()?.first()?.container_port;
        Some((spec.replicas, container.name.clone(), container.image.clone(), port))
    };
    meta_drifted(&current.metadata, &desired.metadata) || pod(current) != pod(desired)
}

/// Whether `current` lacks anything `desired` sets: labels, owner, type, selector, port.
fn service_drifted(current: &corev1::Service, desired: &corev1::Service) -> bool {
    let shape = |s: &corev1::Service| {
        let spec = s.spec.as_ref()?;
        let port = spec.ports.as_ref()?.first()?;
        Some((
            spec.type_.clone(),
            spec.external_traffic_policy.clone(),
            spec.selector.clone(),
            port.name.clone(),
            port.port,
            port.target_port.clone(),
        ))
    };
    meta_drifted(&current.metadata, &desired.metadata) || shape(current) != shape(desired)
}

fn meta_drifted(current: &ObjectMeta, desired: &ObjectMeta) -> bool {
    let labels = current.labels.clone().unwrap_or_default();
    let owners = current.owner_references.clone().unwrap_or_default();
    let missing_label = desired.labels.iter().flatten().any(|(k, v)| labels.get(k) != Some(v));
    let missing_owner = desired.owner_references.iter().flatten().any(|o| !owners.contains(o));
    missing_label || missing_owner
}

/// The status an {{ r.kind }} should show, derived from its Deployment.
fn status(obj: &{{ r.type_name }}, deployment: &appsv1::Deployment) -> {{ r.kind }}Status {
    let observed = deployment.status.clone().unwrap_or_default();
    let ready_replicas = observed.ready_replicas.unwrap_or(0);
    let ready = ready_replicas >= obj.spec.replicas;
    let previous = obj.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let message = format!("{ready_replicas}/{} replicas ready", obj.spec.replicas);
    let reason = if ready { "Ready" } else { "Progressing" };
    {{ r.kind }}Status {
        replicas: observed.replicas.unwrap_or(0),
        ready_replicas,
        available_replicas: observed.available_replicas.unwrap_or(0),
        selector: Some(format!("app={}", obj.name_any())),
        observed_generation: obj.metadata.generation,
        conditions: vec![Condition::ready(ready, reason, message, obj.metadata.generation, previous)],
    }
}
{% include "_partials/controller_deploy_image_tests.rs" %}
