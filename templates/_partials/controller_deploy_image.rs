{%- set r = resource -%}
//! Reconciles {{ r.kind }}s: each runs as a Deployment and a NodePort Service in its own
//! namespace, both controlled by it (deleted with it) and kept in step with its spec.
//!
//! The children are read from caches fed by watches, never fetched: a child is created when
//! missing, corrected only when this {{ r.kind }} controls it, and written only when it
//! differs from what `deployment()` and `service()` ask for. Status says how the rollout is
//! going, judged as `kubectl rollout status` judges it, and shows any failure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{apps::v1 as appsv1, core::v1 as corev1};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ObjectMeta};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, reflector, watcher};
use kube::{Resource, ResourceExt};
use tracing::{debug, info, warn};

use crate::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Status};
use crate::api::{Condition, ready_status, set_condition};
use crate::metrics::ReadyCounts;
use crate::context::retry_key;
use crate::watches::Relist;
use crate::controller::children::{Children, MANAGED_BY, Outcome, controller_of};
use crate::controller::finalizer_order;
use crate::controller::rollout::{Rollout, rollout};
use crate::rbac::Rule;
use crate::retry::Retries;
use crate::{Context, Error, Result, watches};

{% include "_partials/controller_names.rs" %}
/// Holds each {{ r.kind }} until its children are cleaned up.
pub const FINALIZER: &str = "{{ r.finalizer }}";
/// Whether, in a burst of new {{ r.kind }}s, each gets its children before its finalizer (see
/// `finalizer_order`). Safe while the garbage collector deletes everything `apply` makes along
/// with its {{ r.kind }}: objects in its namespace that it controls. Set it to false once
/// `apply` makes anything else (in another namespace, cluster-scoped, outside the cluster),
/// which only the finalizer's cleanup would delete.
const CHILDREN_BEFORE_FINALIZER: bool = true;
/// All this controller may do: `make manifests` writes these rules into
/// config/rbac/role.yaml, and the envtest suite runs the controller with exactly these.
/// A new permission goes here.
pub const RBAC: &[Rule] = &[
{% include "_partials/controller_own_rules.rs" %}
    // Children: read from the watch caches (`get` only when a name is already taken),
    // created, corrected and deleted.
    Rule { api_groups: &["apps"], resources: &["deployments"], verbs: &["get", "list", "watch", "create", "patch", "delete"] },
    Rule { api_groups: &[""], resources: &["services"], verbs: &["get", "list", "watch", "create", "patch", "delete"] },
];

/// What each reconcile gets: the manager's context and the caches of the children.
pub struct State {
    pub ctx: Arc<Context>,
    pub deployments: Children<appsv1::Deployment>,
    pub services: Children<corev1::Service>,
    /// Whether the finalizer comes before the children (see `finalizer_order`).
    pub finalizer_order: finalizer_order::FinalizerOrder,
}

impl State {
    pub fn new(ctx: Arc<Context>, deployments: Children<appsv1::Deployment>, services: Children<corev1::Service>) -> Self {
        State { ctx, deployments, services, finalizer_order: Default::default() }
    }

    /// Whether children of this kind are being created right now.
    fn busy(&self) -> bool {
        self.deployments.creating() + self.services.creating() > 0
    }
}
{% include "_partials/controller_loop.rs" %}
/// Brings the Deployment and the Service in line with the spec, then reports the status. In a
/// burst of new {{ r.kind }}s (`burst`, see `finalizer_order`), a status that shows no failure
/// waits with the finalizer until the burst is over: each write left out of the burst leaves the
/// API server more room for the children, and an object with no status yet claims nothing.
async fn apply(obj: &{{ r.type_name }}, api: &Api<{{ r.type_name }}>, state: &State, burst: bool) -> Result<Action> {
    let ctx = &state.ctx;
    let ensured = ensure_children(obj, state).await;
    // One event per reconcile, and only when something was written, a child created while the
    // other failed included: sent before the status, whose write may fail, after which the next
    // reconcile finds nothing left to change.
    if let Ok((deployment, service)) = &ensured {
        announce(ctx, obj, deployment.as_ref().ok(), service.as_ref().ok());
    }
    // The Deployment's error first, whichever came first: the status must not flip.
    let outcome = ensured.and_then(|(deployment, service)| Ok((deployment?, service?)));
    let (status, hold) = match &outcome {
        Ok((deployment, _)) => {
            let status = status(obj, deployment.object());
            let hold = status_hold(obj, &status, deployment.object(), burst);
            (status, hold)
        }
        Err(err) => (failed_status(obj, err), crate::context::Hold::No),
    };
    let reported = ctx.report(api, obj, obj.status.as_ref(), &status, hold, FIELD_MANAGER, outcome);
    Ok(reported.await?.1)
}

/// Whether `status`, after a reconcile that succeeded, may wait before it is written.
fn status_hold(obj: &{{ r.type_name }}, status: &{{ r.kind }}Status, deployment: &appsv1::Deployment, burst: bool) -> crate::context::Hold {
    // Named in full: a kind may be called Hold. A failed rollout (its deadline passed, or Pods
    // refused) is not about to change, so it is reported at once, as any failure.
    let failed = matches!(rollout(deployment), Rollout::Failed { .. });
    if failed || shown_at_once(obj, status) {
        crate::context::Hold::No
    } else if burst {
        crate::context::Hold::Burst
    } else if rollout_starting(deployment) {
        crate::context::Hold::Settling
    } else {
        crate::context::Hold::No
    }
}

/// Whether the Deployment controller is about to update this Deployment's status by itself:
/// it has not seen the current spec, or not yet made the new ReplicaSet's Pods. Status written
/// in between would be rewritten a moment later (a failed rollout is not: `status_hold`).
fn rollout_starting(deployment: &appsv1::Deployment) -> bool {
    let desired = deployment.spec.replicas.unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    status.observed_generation < deployment.metadata.generation || status.updated_replicas.unwrap_or(0) < desired
}

/// Whether `status` is written at once, never held back while a rollout starts: it takes away
/// the `Ready=True` that `obj` shows (nothing may read a `Ready` that no longer holds), or `obj`
/// shows a failure (a refused child, a conflict, a stuck rollout) that no longer holds, which
/// alerts and `kubectl describe` must not go on reporting.
fn shown_at_once(obj: &{{ r.type_name }}, status: &{{ r.kind }}Status) -> bool {
    let shown = obj.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    shown.is_some_and(|shown| match shown.status.as_str() {
        "True" => ready_status(&status.conditions) != Some("True"),
        _ => shown.reason != "Progressing",
    })
}

/// A Normal event naming what was written to the children, if anything. A child changed while
/// the {{ r.kind }} has a spec its status has not observed yet was "Updated" to follow it; else it
/// had drifted, and was "Corrected".
fn announce(
    ctx: &Context,
    obj: &{{ r.type_name }},
    deployment: Option<&Outcome<appsv1::Deployment>>,
    service: Option<&Outcome<corev1::Service>>,
) {
    let observed = obj.status.as_ref().and_then(|status| status.observed_generation);
    let reason = |change: &'static str| match change {
        "Corrected" if observed != obj.metadata.generation => "Updated",
        change => change,
    };
    let changes: Vec<String> = [deployment.and_then(|d| describe(d, reason)), service.and_then(|s| describe(s, reason))]
        .into_iter()
        .flatten()
        .collect();
    if let Some(change) = deployment.and_then(Outcome::change).or(service.and_then(Outcome::change)) {
        ctx.publish(obj, EventType::Normal, reason(change), changes.join(", "));
    }
}

/// Both children at once: they do not depend on each other, and each one's outcome is its own.
async fn ensure_children(
    obj: &{{ r.type_name }},
    state: &State,
) -> Result<(Result<Outcome<appsv1::Deployment>>, Result<Outcome<corev1::Service>>)> {
    let (deployments, services) = child_apis(obj, state)?;
    let (desired_deployment, desired_service) = (deployment(obj)?, service(obj)?);
    // Until the first lists are in, a child missing from a cache may exist.
    tokio::try_join!(state.deployments.synced(), state.services.synced())?;
    let (deployment, service) = tokio::join!(
        state.deployments.ensure(&deployments, &desired_deployment, obj),
        state.services.ensure(&services, &desired_service, obj),
    );
    Ok((deployment, service))
}

/// The children live in the {{ r.kind }}'s own namespace.
fn child_apis(obj: &{{ r.type_name }}, state: &State) -> Result<(Api<appsv1::Deployment>, Api<corev1::Service>)> {
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let client = &state.ctx.client;
    Ok((Api::namespaced(client.clone(), &namespace), Api::namespaced(client.clone(), &namespace)))
}

/// "Created Deployment web-deployment", or nothing when the child was left as it was.
fn describe<K: Resource<DynamicType = ()>>(outcome: &Outcome<K>, reason: impl Fn(&'static str) -> &'static str) -> Option<String> {
    let change = reason(outcome.change()?);
    Some(format!("{change} {} {}", K::kind(&()), outcome.object().name_any()))
}

/// Deletes the children this {{ r.kind }} controls, unless it is deleted with
/// `--cascade=orphan`. Their owner references would make the garbage collector delete them
/// too; deleting them here makes cleanup visible in events and independent of the collector,
/// once the finalizer is on (in a burst, the children come first: see `finalizer_order`).
/// A failure shows in the status, which {{ r.article }} {{ r.kind }} being deleted still has.
async fn cleanup(obj: &{{ r.type_name }}, _api: &Api<{{ r.type_name }}>, state: &State) -> Result<Action> {
    let deleted = match delete_children(obj, state).await {
        Ok(deleted) => deleted,
        Err(err) => return report_failure(obj, state, err).await,
    };
    info!(controller = CONTROLLER, namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), "cleaned up");
    if !deleted.is_empty() {
        let note = format!("Deleted {}", deleted.join(", "));
        state.ctx.publish(obj, EventType::Normal, "Deleted", note);
    }
    Ok(Action::await_change())
}

/// What was deleted, e.g. `Deployment web-deployment`.
async fn delete_children(obj: &{{ r.type_name }}, state: &State) -> Result<Vec<String>> {
    if obj.finalizers().iter().any(|f| f == "orphan") {
        return Ok(Vec::new());
    }
    let (deployments, services) = child_apis(obj, state)?;
    let names = child_names(obj);
    tokio::try_join!(state.deployments.synced(), state.services.synced())?;
    let mut deleted = Vec::new();
    if state.deployments.delete(&deployments, &names.deployment, obj).await? {
        deleted.push(format!("Deployment {}", names.deployment));
    }
    if state.services.delete(&services, &names.service, obj).await? {
        deleted.push(format!("Service {}", names.service));
    }
    Ok(deleted)
}

struct ChildNames {
    deployment: String,
    service: String,
    container: String,
}

/// The children's names. The CRD refuses {{ r.kind }} names that would make them invalid
/// (see the validation rule on the {{ r.kind }} type).
fn child_names(obj: &{{ r.type_name }}) -> ChildNames {
    let name = obj.name_any();
    ChildNames { deployment: deployment_name(&name), service: service_name(&name), container: format!("{name}-container") }
}

/// The name of the Deployment of the {{ r.kind }} `owner` (the children caches keep no other).
fn deployment_name(owner: &str) -> String {
    format!("{owner}-deployment")
}

/// The name of the Service of the {{ r.kind }} `owner`.
fn service_name(owner: &str) -> String {
    format!("{owner}-service")
}

/// How long at most {{ r.article }} {{ r.kind }} blocked by an object it does not control waits before it
/// looks again, as the manager's rate limit allows: that object's removal is seen by no watch.
const CONFLICT_RECHECK: Duration = Duration::from_secs(30);
/// The children's and their Pods' labels are under this kind's own prefix, so that no one
/// else's selector picks up our Pods and ours picks up no one else's: the Pods are selected by
/// the owner's uid, which is this object's alone, not by its name, which anyone allowed to
/// create {{ r.kind }}s chooses (`app: <name>` would put their Pods behind the Service of any
/// workload labelled so, and that workload behind their NodePort). The name label is for people
/// (`kubectl get pods -l {{ r.crd_name }}/name=<name>`); managed-by scopes our watches.
const UID_LABEL: &str = "{{ r.crd_name }}/uid";
const NAME_LABEL: &str = "{{ r.crd_name }}/name";

fn uid(obj: &{{ r.type_name }}) -> Result<&str> {
    obj.meta().uid.as_deref().ok_or_else(|| Error::MissingUid(obj.name_any()))
}

fn selector(uid: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(UID_LABEL.to_string(), uid.to_string())])
}

fn labels(obj: &{{ r.type_name }}) -> Result<BTreeMap<String, String>> {
    let mut labels = selector(uid(obj)?);
    labels.insert(NAME_LABEL.to_string(), obj.name_any());
    labels.insert(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string());
    Ok(labels)
}

fn child_meta(obj: &{{ r.type_name }}, name: String) -> Result<ObjectMeta> {
    let mut owner = obj.controller_owner_ref(&()).ok_or_else(|| Error::MissingUid(obj.name_any()))?;
    // As controller-runtime's SetControllerReference: a foreground deletion of the owner
    // (`kubectl delete --cascade=foreground`, Argo CD's prune) waits for its children.
    owner.block_owner_deletion = Some(true);
    Ok(ObjectMeta {
        name: Some(name),
        namespace: obj.namespace(),
        labels: Some(labels(obj)?),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    })
}

/// The Deployment {{ r.article }} {{ r.kind }} asks for: `replicas` Pods of one container running `image`.
pub fn deployment(obj: &{{ r.type_name }}) -> Result<appsv1::Deployment> {
    let names = child_names(obj);
    Ok(appsv1::Deployment {
        metadata: child_meta(obj, names.deployment)?,
        spec: appsv1::DeploymentSpec {
            replicas: Some(obj.spec.replicas),
            selector: metav1::LabelSelector { match_labels: Some(selector(uid(obj)?)), ..Default::default() },
            template: corev1::PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels(obj)?), ..ObjectMeta::default() }),
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
                        // Nothing it runs gains privileges (setuid binaries) or crafts raw
                        // packets (NET_RAW: ping needs it, little else, and it lets a Pod spoof
                        // its neighbours' ARP and DNS), and the syscalls it may make are the
                        // runtime's default set: all hold for any image that does not need
                        // them, nginx's included (it may still start as root).
                        security_context: Some(corev1::SecurityContext {
                            allow_privilege_escalation: Some(false),
                            capabilities: Some(corev1::Capabilities { drop: Some(vec!["NET_RAW".into()]), ..Default::default() }),
                            seccomp_profile: Some(corev1::SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() }),
                            ..Default::default()
                        }),
                        // Ready once it accepts connections on its port, so that the
                        // Deployment's available replicas, and the Ready condition judged from
                        // them, mean the Service can reach it, not only that it started.
                        readiness_probe: Some(corev1::Probe {
                            tcp_socket: Some(corev1::TCPSocketAction { port: IntOrString::String("http".into()), ..Default::default() }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }],
                    // The Pods get no API token: whoever may create {{ r.kind }}s chooses the
                    // image, and the namespace's default ServiceAccount may hold rights.
                    automount_service_account_token: Some(false),
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    })
}

/// The NodePort Service {{ r.article }} {{ r.kind }} asks for: port `http` forwarding `port` to the Pods.
pub fn service(obj: &{{ r.type_name }}) -> Result<corev1::Service> {
    Ok(corev1::Service {
        metadata: child_meta(obj, child_names(obj).service)?,
        spec: Some(corev1::ServiceSpec {
            type_: Some("NodePort".into()),
            // As the article has it: a client's source address reaches the Pod, and a node
            // forwards only to Pods of its own, so the port answers only on nodes that run one.
            // `Cluster` answers on every node, from the node's address.
            external_traffic_policy: Some("Local".into()),
            selector: Some(selector(uid(obj)?)),
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

/// The status {{ r.article }} {{ r.kind }} should show, derived from its Deployment: `Ready` once the
/// rollout is complete, `Progressing` while it runs, both `False` with the Deployment's own
/// reason and message when it is stuck.
fn status(obj: &{{ r.type_name }}, deployment: &appsv1::Deployment) -> {{ r.kind }}Status {
    let observed = deployment.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let previous = obj.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let condition = |type_: &str, status: bool, reason: &str, message: &str| {
        Condition::new(type_, status, reason, message, generation, previous)
    };
    let conditions = match rollout(deployment) {
        Rollout::Complete => {
            let message = format!("{} of {} replicas available", observed.available_replicas.unwrap_or(0), obj.spec.replicas);
            vec![condition("Ready", true, "RolloutComplete", &message), condition("Progressing", false, "RolloutComplete", &message)]
        }
        Rollout::Progressing(message) => vec![
            condition("Ready", false, "Progressing", &message),
            condition("Progressing", true, "RollingOut", &message),
        ],
        Rollout::Failed { reason, message } => vec![
            condition("Ready", false, &reason, &message),
            condition("Progressing", false, &reason, &message),
        ],
    };
    {{ r.kind }}Status {
        replicas: observed.replicas.unwrap_or(0),
        updated_replicas: observed.updated_replicas.unwrap_or(0),
        ready_replicas: observed.ready_replicas.unwrap_or(0),
        available_replicas: observed.available_replicas.unwrap_or(0),
        selector: obj.uid().map(|uid| format!("{UID_LABEL}={uid}")),
        observed_generation: generation,
        conditions,
    }
}

#[cfg(test)]
mod tests;
