//! Reconciles Applications: each runs as a Deployment and a NodePort Service in its own
//! namespace, both controlled by it (deleted with it) and kept in step with its spec.
//!
//! The children are read from caches fed by watches, never fetched: a child is created when
//! missing, corrected only when this Application controls it, and written only when it
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

use crate::api::v1alpha1::{Application, ApplicationStatus};
use crate::api::{Condition, ready_status, set_condition};
use crate::context::retry_key;
use crate::controller::children::{Children, MANAGED_BY, Outcome, controller_of};
use crate::controller::rollout::{Rollout, rollout};
use crate::metrics::ReadyCounts;
use crate::rbac::Rule;
use crate::retry::Retries;
use crate::watches::Relist;
use crate::{Context, Error, Result, watches};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "application";
/// Field manager of this controller's writes: one per controller, so that two controllers
/// writing the same field show up as a conflict instead of silently taking turns.
const FIELD_MANAGER: &str = "k8s-operator-talk-application";
/// Holds each Application until its children are cleaned up.
pub const FINALIZER: &str = "applications.minetto.dev/finalizer";
/// All this controller may do: `make manifests` writes these rules into
/// config/rbac/role.yaml, and the envtest suite runs the controller with exactly these.
/// A new permission goes here.
pub const RBAC: &[Rule] = &[
    // Watched; the finalizer is added and removed with a patch, and when that fails, one GET
    // tells whether the object is gone or the change was refused.
    Rule {
        api_groups: &["minetto.dev"],
        resources: &["applications"],
        verbs: &["get", "list", "watch", "patch"],
    },
    Rule {
        api_groups: &["minetto.dev"],
        resources: &["applications/status"],
        verbs: &["patch"],
    },
    // An ownerReference that blocks the owner's deletion needs `update` on its finalizers.
    Rule {
        api_groups: &["minetto.dev"],
        resources: &["applications/finalizers"],
        verbs: &["update"],
    },
    // Children: read from the watch caches (`get` only when a name is already taken),
    // created, corrected and deleted.
    Rule {
        api_groups: &["apps"],
        resources: &["deployments"],
        verbs: &["get", "list", "watch", "create", "patch", "delete"],
    },
    Rule {
        api_groups: &[""],
        resources: &["services"],
        verbs: &["get", "list", "watch", "create", "patch", "delete"],
    },
];

/// What each reconcile gets: the manager's context and the caches of the children.
pub struct State {
    pub ctx: Arc<Context>,
    pub deployments: Children<appsv1::Deployment>,
    pub services: Children<corev1::Service>,
}
/// Sets up the watches of Applications and of the Deployments and Services they own, and returns the
/// controller, which runs until shutdown. The watches are registered here, before the
/// manager waits for them to list (see `watches`), so nothing here may wait.
pub fn run(ctx: Arc<Context>) -> impl Future<Output = ()> + Send + 'static {
    let (deployments, deployment_changes) =
        Children::watch::<Application>(&ctx, FIELD_MANAGER, deployment_name);
    let (services, service_changes) =
        Children::watch::<Application>(&ctx, FIELD_MANAGER, service_name);
    // The controller's cache of Applications, without managedFields: nothing here reads them,
    // and they are most of each cached object's memory.
    let (reader, writer) = reflector::store();
    // Only a new generation (a spec change, or deletion starting) or a finalizer change needs a
    // reconcile: our own status writes would otherwise each cause one more.
    let changed = predicates::generation.combine(predicates::finalizers);
    let forget = ctx.clone();
    let mut relist = Relist::default();
    // Every namespace, or one watch per namespace the manager is limited to (WATCH_NAMESPACE).
    let apis = ctx.settings.namespaces.apis::<Application>(&ctx.client);
    let objects = ctx
        .watches
        .watch(apis, watches::config())
        .modify(|obj| obj.managed_fields_mut().clear())
        .reflect(writer)
        // An object that is gone needs no more retries. Forgotten once the cache has let it go,
        // so that a failure recorded later finds it gone (see `error_policy`).
        .map_ok(move |event| {
            if let watcher::Event::Delete(obj) = &event {
                forget.forget(&retry_key(obj));
            }
            for dropped in relist.follow(&event) {
                forget.forget(&dropped);
            }
            event
        })
        .touched_objects()
        .predicate_filter(changed, PredicateConfig::default());
    let concurrency = ctx.settings.max_concurrent_reconciles;
    ctx.metrics.controller_started(CONTROLLER, concurrency);
    let cached = reader.clone();
    ctx.metrics.count_ready(CONTROLLER, move || {
        let objects = cached.state();
        ReadyCounts::of(objects.iter().map(|obj| {
            obj.status
                .as_ref()
                .and_then(|status| ready_status(&status.conditions))
        }))
    });
    let config = controller::Config::default().concurrency(concurrency);
    let state = Arc::new(State {
        ctx,
        deployments,
        services,
    });
    let cache = reader.clone();
    let controller = Controller::for_stream(objects, reader)
        // Each child wakes the Application controlling it, whichever version made it.
        .watches_stream(deployment_changes, |d| controller_of::<Application>(&d))
        .watches_stream(service_changes, |s| controller_of::<Application>(&s))
        .with_config(config)
        // Every watch above already waits out its own failures; kube's default here would
        // add up to 30 s more after an API server outage.
        .trigger_backoff(watches::backoff())
        .shutdown_on_signal();
    async move {
        controller
            .run(
                reconcile,
                move |obj, error: &Error, state| error_policy(obj, error, state, &cache),
                state,
            )
            .for_each(|result| async move {
                match result {
                    // error_policy has logged it, naming the object.
                    Ok(_) | Err(kube::runtime::controller::Error::ReconcilerFailed(..)) => {}
                    // A child's event after its owner is gone (the children's Delete events
                    // once it was deleted): nothing to do, as controller-runtime ignores it.
                    Err(err @ kube::runtime::controller::Error::ObjectNotFound(_)) => {
                        debug!(controller = CONTROLLER, "{err}")
                    }
                    Err(err) => warn!(controller = CONTROLLER, "{err}"),
                }
            })
            .await;
    }
}

/// Retries a failed Application after a jittered, growing delay (see `retry`). The failure of
/// an object deleted while its reconcile ran is not kept: its watch has already forgotten it,
/// and nothing would forget it again.
pub fn error_policy(
    obj: Arc<Application>,
    error: &Error,
    state: Arc<State>,
    cache: &reflector::Store<Application>,
) -> Action {
    state.ctx.metrics.reconcile_failed(CONTROLLER, error);
    let key = retry_key(obj.as_ref());
    let delay = retry_delay(&state.ctx.retries, &key, error);
    if cache
        .get(&reflector::ObjectRef::from_obj(obj.as_ref()))
        .is_none_or(|cached| cached.uid() != obj.uid())
    {
        state.ctx.retries.forget(&key);
    }
    warn!(controller = CONTROLLER, namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), retry_in = ?delay, "reconcile failed: {error}");
    Action::requeue(delay)
}

/// The wait before the object `key` is reconciled again after `error`. The object in a child's
/// way is not watched (it lacks the managed-by label), so its removal wakes nothing: a conflict
/// is looked at again within `CONFLICT_RECHECK`, as the manager-wide rate limit allows.
fn retry_delay(retries: &Retries, key: &str, error: &Error) -> Duration {
    match error.cause() {
        Error::ChildConflict(_) => retries.next_delay_within(key, CONFLICT_RECHECK),
        _ => retries.next_delay(key),
    }
}

/// Reconciles one Application, timed and counted in the metrics.
pub async fn reconcile(obj: Arc<Application>, state: Arc<State>) -> Result<Action> {
    let timer = state.ctx.metrics.reconcile_started(CONTROLLER);
    let result = match state
        .ctx
        .bounded(reconcile_through_finalizer(obj.clone(), &state))
        .await
    {
        // Cut short before it could show: shown now, within a time limit of its own.
        Err(err @ Error::Timeout(_)) => state.ctx.bounded(report_failure(&obj, &state, err)).await,
        result => result,
    };
    timer.finish(&result, state.ctx.settings.sync_period);
    result
}

/// The client of `obj`'s own Applications.
fn api_of(obj: &Application, state: &State) -> Result<Api<Application>> {
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    Ok(Api::namespaced(state.ctx.client.clone(), &namespace))
}

/// Shows a failure in `obj`'s status (`Ready=False`) and as a Warning event, as `apply` and
/// `cleanup` show theirs, and returns it for the retry.
async fn report_failure(obj: &Application, state: &State, err: Error) -> Result<Action> {
    let status = failed_status(obj, &err);
    let api = api_of(obj, state)?;
    let reported = state.ctx.report(
        &api,
        obj,
        obj.status.as_ref(),
        &status,
        false,
        FIELD_MANAGER,
        Err(err),
    );
    reported.await.map(|(action, _): (Action, Action)| action)
}

/// Reconciles one Application through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
async fn reconcile_through_finalizer(obj: Arc<Application>, state: &State) -> Result<Action> {
    let api = api_of(&obj, state)?;
    let reconciled = finalizer(&api, FINALIZER, obj.clone(), |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, state).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &api, state).await,
        }
    })
    .await;
    let action = match reconciled {
        // A reconcile queued behind the one that removed the finalizer (by its children's
        // Delete events) reads the object from a cache that still shows it: the change fails,
        // and the object is gone, or still there without the finalizer (a foreground deletion,
        // another finalizer). Nothing is left to do, and no error for the metrics to count.
        // The patch also fails, on its test of the finalizers, when someone else changed them
        // after the cache read them: the watch brings the new list, and the next reconcile
        // tries again. Otherwise the change was refused (an admission webhook or policy):
        // that shows.
        Err(
            err @ (kube::runtime::finalizer::Error::AddFinalizer(_)
            | kube::runtime::finalizer::Error::RemoveFinalizer(_)),
        ) => {
            let removing = matches!(err, kube::runtime::finalizer::Error::RemoveFinalizer(_));
            let fresh = api.get_opt(&obj.name_any()).await?;
            let ours = fresh
                .as_ref()
                .is_some_and(|fresh| fresh.finalizers().iter().any(|f| f == FINALIZER));
            let cache_behind = fresh
                .as_ref()
                .is_some_and(|fresh| fresh.finalizers() != obj.finalizers());
            if fresh.is_some() && ours == removing && !cache_behind {
                return report_failure(&obj, state, Error::Finalizer(Box::new(err))).await;
            }
            Action::await_change()
        }
        reconciled => reconciled.map_err(|err| Error::Finalizer(Box::new(err)))?,
    };
    state.ctx.retries.forget(&retry_key(obj.as_ref()));
    Ok(action)
}

/// The status `obj` shows after `error`: `Ready=False` with the error's reason and message,
/// the other conditions as they were.
fn failed_status(obj: &Application, error: &Error) -> ApplicationStatus {
    let mut status = obj.status.clone().unwrap_or_default();
    let ready = Condition::new(
        "Ready",
        false,
        error.reason(),
        error.message(),
        obj.metadata.generation,
        &status.conditions,
    );
    set_condition(&mut status.conditions, ready);
    status.observed_generation = obj.metadata.generation;
    status
}

/// Brings the Deployment and the Service in line with the spec, then reports the status.
async fn apply(obj: &Application, api: &Api<Application>, state: &State) -> Result<Action> {
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
    let (status, settling) = match &outcome {
        Ok((deployment, _)) => {
            let status = status(obj, deployment.object());
            let settling = rollout_starting(deployment.object()) && !shown_at_once(obj, &status);
            (status, settling)
        }
        Err(err) => (failed_status(obj, err), false),
    };
    let reported = ctx.report(
        api,
        obj,
        obj.status.as_ref(),
        &status,
        settling,
        FIELD_MANAGER,
        outcome,
    );
    Ok(reported.await?.1)
}

/// Whether the Deployment controller is about to update this Deployment's status by itself:
/// it has not seen the current spec, or not yet made the new ReplicaSet's Pods. Status written
/// in between would be rewritten a moment later. A failed rollout (its deadline passed, or
/// Pods refused) is not about to change: it is reported at once.
fn rollout_starting(deployment: &appsv1::Deployment) -> bool {
    if matches!(rollout(deployment), Rollout::Failed { .. }) {
        return false;
    }
    let desired = deployment.spec.replicas.unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    status.observed_generation < deployment.metadata.generation
        || status.updated_replicas.unwrap_or(0) < desired
}

/// Whether `status` is written at once, never held back while a rollout starts: it takes away
/// the `Ready=True` that `obj` shows (nothing may read a `Ready` that no longer holds), or `obj`
/// shows a failure (a refused child, a conflict, a stuck rollout) that no longer holds, which
/// alerts and `kubectl describe` must not go on reporting.
fn shown_at_once(obj: &Application, status: &ApplicationStatus) -> bool {
    let shown = obj
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    shown.is_some_and(|shown| match shown.status.as_str() {
        "True" => ready_status(&status.conditions) != Some("True"),
        _ => shown.reason != "Progressing",
    })
}

/// A Normal event naming what was written to the children, if anything. A child changed while
/// the Application has a spec its status has not observed yet was "Updated" to follow it; else it
/// had drifted, and was "Corrected".
fn announce(
    ctx: &Context,
    obj: &Application,
    deployment: Option<&Outcome<appsv1::Deployment>>,
    service: Option<&Outcome<corev1::Service>>,
) {
    let observed = obj
        .status
        .as_ref()
        .and_then(|status| status.observed_generation);
    let reason = |change: &'static str| match change {
        "Corrected" if observed != obj.metadata.generation => "Updated",
        change => change,
    };
    let changes: Vec<String> = [
        deployment.and_then(|d| describe(d, reason)),
        service.and_then(|s| describe(s, reason)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(change) = deployment
        .and_then(Outcome::change)
        .or(service.and_then(Outcome::change))
    {
        ctx.publish(obj, EventType::Normal, reason(change), changes.join(", "));
    }
}

/// Both children at once: they do not depend on each other, and each one's outcome is its own.
async fn ensure_children(
    obj: &Application,
    state: &State,
) -> Result<(
    Result<Outcome<appsv1::Deployment>>,
    Result<Outcome<corev1::Service>>,
)> {
    let (deployments, services) = child_apis(obj, state)?;
    let (desired_deployment, desired_service) = (deployment(obj)?, service(obj)?);
    // Until the first lists are in, a child missing from a cache may exist.
    tokio::try_join!(state.deployments.synced(), state.services.synced())?;
    let (deployment, service) = tokio::join!(
        state
            .deployments
            .ensure(&deployments, &desired_deployment, obj),
        state.services.ensure(&services, &desired_service, obj),
    );
    Ok((deployment, service))
}

/// The children live in the Application's own namespace.
fn child_apis(
    obj: &Application,
    state: &State,
) -> Result<(Api<appsv1::Deployment>, Api<corev1::Service>)> {
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let client = &state.ctx.client;
    Ok((
        Api::namespaced(client.clone(), &namespace),
        Api::namespaced(client.clone(), &namespace),
    ))
}

/// "Created Deployment web-deployment", or nothing when the child was left as it was.
fn describe<K: Resource<DynamicType = ()>>(
    outcome: &Outcome<K>,
    reason: impl Fn(&'static str) -> &'static str,
) -> Option<String> {
    let change = reason(outcome.change()?);
    Some(format!(
        "{change} {} {}",
        K::kind(&()),
        outcome.object().name_any()
    ))
}

/// Deletes the children this Application controls, unless it is deleted with
/// `--cascade=orphan`. Their owner references would make the garbage collector delete them
/// too; deleting them here makes cleanup visible in events and independent of the collector.
/// A failure shows in the status, which an Application being deleted still has.
async fn cleanup(obj: &Application, _api: &Api<Application>, state: &State) -> Result<Action> {
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
async fn delete_children(obj: &Application, state: &State) -> Result<Vec<String>> {
    if obj.finalizers().iter().any(|f| f == "orphan") {
        return Ok(Vec::new());
    }
    let (deployments, services) = child_apis(obj, state)?;
    let names = child_names(obj);
    tokio::try_join!(state.deployments.synced(), state.services.synced())?;
    let mut deleted = Vec::new();
    if state
        .deployments
        .delete(&deployments, &names.deployment, obj)
        .await?
    {
        deleted.push(format!("Deployment {}", names.deployment));
    }
    if state
        .services
        .delete(&services, &names.service, obj)
        .await?
    {
        deleted.push(format!("Service {}", names.service));
    }
    Ok(deleted)
}

struct ChildNames {
    deployment: String,
    service: String,
    container: String,
}

/// The children's names. The CRD refuses Application names that would make them invalid
/// (see the validation rule on the Application type).
fn child_names(obj: &Application) -> ChildNames {
    let name = obj.name_any();
    ChildNames {
        deployment: deployment_name(&name),
        service: service_name(&name),
        container: format!("{name}-container"),
    }
}

/// The name of the Deployment of the Application `owner` (the children caches keep no other).
fn deployment_name(owner: &str) -> String {
    format!("{owner}-deployment")
}

/// The name of the Service of the Application `owner`.
fn service_name(owner: &str) -> String {
    format!("{owner}-service")
}

/// How long at most an Application blocked by an object it does not control waits before it
/// looks again, as the manager's rate limit allows: that object's removal is seen by no watch.
const CONFLICT_RECHECK: Duration = Duration::from_secs(30);
/// The children's and their Pods' labels are under this kind's own prefix, so that no one
/// else's selector picks up our Pods and ours picks up no one else's: the Pods are selected by
/// the owner's uid, which is this object's alone, not by its name, which anyone allowed to
/// create Applications chooses (`app: <name>` would put their Pods behind the Service of any
/// workload labelled so, and that workload behind their NodePort). The name label is for people
/// (`kubectl get pods -l applications.minetto.dev/name=<name>`); managed-by scopes our watches.
const UID_LABEL: &str = "applications.minetto.dev/uid";
const NAME_LABEL: &str = "applications.minetto.dev/name";

fn uid(obj: &Application) -> Result<&str> {
    obj.meta()
        .uid
        .as_deref()
        .ok_or_else(|| Error::MissingUid(obj.name_any()))
}

fn selector(uid: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(UID_LABEL.to_string(), uid.to_string())])
}

fn labels(obj: &Application) -> Result<BTreeMap<String, String>> {
    let mut labels = selector(uid(obj)?);
    labels.insert(NAME_LABEL.to_string(), obj.name_any());
    labels.insert(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string());
    Ok(labels)
}

fn child_meta(obj: &Application, name: String) -> Result<ObjectMeta> {
    let mut owner = obj
        .controller_owner_ref(&())
        .ok_or_else(|| Error::MissingUid(obj.name_any()))?;
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

/// The Deployment an Application asks for: `replicas` Pods of one container running `image`.
pub fn deployment(obj: &Application) -> Result<appsv1::Deployment> {
    let names = child_names(obj);
    Ok(appsv1::Deployment {
        metadata: child_meta(obj, names.deployment)?,
        spec: appsv1::DeploymentSpec {
            replicas: Some(obj.spec.replicas),
            selector: metav1::LabelSelector {
                match_labels: Some(selector(uid(obj)?)),
                ..Default::default()
            },
            template: corev1::PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(obj)?),
                    ..ObjectMeta::default()
                }),
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
                            capabilities: Some(corev1::Capabilities {
                                drop: Some(vec!["NET_RAW".into()]),
                                ..Default::default()
                            }),
                            seccomp_profile: Some(corev1::SeccompProfile {
                                type_: "RuntimeDefault".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        // Ready once it accepts connections on its port, so that the
                        // Deployment's available replicas, and the Ready condition judged from
                        // them, mean the Service can reach it, not only that it started.
                        readiness_probe: Some(corev1::Probe {
                            tcp_socket: Some(corev1::TCPSocketAction {
                                port: IntOrString::String("http".into()),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }],
                    // The Pods get no API token: whoever may create Applications chooses the
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

/// The NodePort Service an Application asks for: port `http` forwarding `port` to the Pods.
pub fn service(obj: &Application) -> Result<corev1::Service> {
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

/// The status an Application should show, derived from its Deployment: `Ready` once the
/// rollout is complete, `Progressing` while it runs, both `False` with the Deployment's own
/// reason and message when it is stuck.
fn status(obj: &Application, deployment: &appsv1::Deployment) -> ApplicationStatus {
    let observed = deployment.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let previous = obj
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let condition = |type_: &str, status: bool, reason: &str, message: &str| {
        Condition::new(type_, status, reason, message, generation, previous)
    };
    let conditions = match rollout(deployment) {
        Rollout::Complete => {
            let message = format!(
                "{} of {} replicas available",
                observed.available_replicas.unwrap_or(0),
                obj.spec.replicas
            );
            vec![
                condition("Ready", true, "RolloutComplete", &message),
                condition("Progressing", false, "RolloutComplete", &message),
            ]
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
    ApplicationStatus {
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
mod tests {
    use super::*;
    use crate::api::v1alpha1::ApplicationSpec;
    use crate::context::Settings;
    use crate::controller::test_support::{
        Expected, Reply, Seen, body, cache, mock_client, request, serve, status as api_status,
    };
    use serde_json::Value;
    use std::time::Duration;

    const OBJECT: &str = "/apis/minetto.dev/v1alpha1/namespaces/default/applications/test";
    const STATUS: &str = "/apis/minetto.dev/v1alpha1/namespaces/default/applications/test/status";
    const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
    const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/default/deployments/test-deployment";
    const SERVICES: &str = "/api/v1/namespaces/default/services";
    const SERVICE: &str = "/api/v1/namespaces/default/services/test-service";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

    fn fixture(finalizer: bool) -> Application {
        let mut obj = Application::new(
            "test",
            ApplicationSpec {
                image: "nginx:latest".into(),
                replicas: 2,
                port: 80,
            },
        );
        obj.metadata.namespace = Some("default".into());
        obj.metadata.uid = Some("7b4e1f0c-uid".into());
        obj.metadata.generation = Some(1);
        if finalizer {
            obj.metadata.finalizers = Some(vec![FINALIZER.into()]);
        }
        obj
    }

    /// The children as the API server would have them: stored, and the rollout complete.
    fn stored_children(obj: &Application) -> (appsv1::Deployment, corev1::Service) {
        let mut d = deployment(obj).unwrap();
        d.metadata.uid = Some("deployment-uid".into());
        d.metadata.resource_version = Some("11".into());
        d.metadata.generation = Some(1);
        d.status = Some(appsv1::DeploymentStatus {
            observed_generation: Some(1),
            replicas: Some(2),
            updated_replicas: Some(2),
            ready_replicas: Some(2),
            available_replicas: Some(2),
            ..Default::default()
        });
        let mut s = service(obj).unwrap();
        s.metadata.uid = Some("service-uid".into());
        s.metadata.resource_version = Some("12".into());
        (d, s)
    }

    fn json(value: &impl serde::Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    /// Reconciles `obj` with these cached children against an API server that answers
    /// exactly the `expected` requests (any other request fails the test); returns the
    /// result and the requests in order of arrival. Status changes are written at once.
    async fn run(
        obj: Application,
        deployments: Vec<appsv1::Deployment>,
        services: Vec<corev1::Service>,
        expected: Vec<Expected>,
    ) -> (Result<Action>, Vec<Seen>) {
        let settings = Settings {
            status_pace: Duration::ZERO,
            ..Settings::default()
        };
        run_with(settings, obj, deployments, services, expected).await
    }

    async fn run_with(
        settings: Settings,
        obj: Application,
        deployments: Vec<appsv1::Deployment>,
        services: Vec<corev1::Service>,
        expected: Vec<Expected>,
    ) -> (Result<Action>, Vec<Seen>) {
        let (mut results, seen) =
            run_each(settings, vec![obj], deployments, services, expected).await;
        (results.remove(0), seen)
    }

    /// Reconciles each of `objects` in turn, with one manager context and these children's caches.
    async fn run_each(
        settings: Settings,
        objects: Vec<Application>,
        deployments: Vec<appsv1::Deployment>,
        services: Vec<corev1::Service>,
        expected: Vec<Expected>,
    ) -> (Vec<Result<Action>>, Vec<Seen>) {
        let (client, server) = mock_client();
        let state = Arc::new(State {
            ctx: Arc::new(Context::with_settings(client, Arc::default(), settings)),
            deployments: Children::new(cache(deployments), FIELD_MANAGER),
            services: Children::new(cache(services), FIELD_MANAGER),
        });
        // The events the reconciles queued are recorded too; then every client is dropped,
        // which ends `serve`.
        let reconciled = async move {
            let mut results = Vec::new();
            for obj in objects {
                let result = tokio::time::timeout(
                    Duration::from_secs(5),
                    reconcile(Arc::new(obj), state.clone()),
                )
                .await;
                results.push(result.expect("reconcile hung"));
            }
            state.ctx.events.flush(Duration::from_secs(5)).await;
            results
        };
        tokio::join!(reconciled, serve(server, expected))
    }

    fn ready_condition(status: &Value) -> (&str, &str) {
        let ready = status["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        (
            ready["status"].as_str().unwrap(),
            ready["reason"].as_str().unwrap(),
        )
    }

    #[test]
    fn ready_and_progressing_follow_the_rollout_at_the_generation_judged() {
        let obj = fixture(true);
        let (mut d, _) = stored_children(&obj);
        let conditions = |d: &appsv1::Deployment| -> Vec<(String, String, String, Option<i64>)> {
            let shown = status(&obj, d).conditions.into_iter();
            shown
                .map(|c| (c.type_, c.status, c.reason, c.observed_generation))
                .collect()
        };
        let expect = |type_: &str, status: &str, reason: &str| {
            (type_.into(), status.into(), reason.into(), Some(1))
        };
        let complete = [
            expect("Ready", "True", "RolloutComplete"),
            expect("Progressing", "False", "RolloutComplete"),
        ];
        assert_eq!(conditions(&d), complete);
        d.status.as_mut().unwrap().available_replicas = Some(1);
        let rolling = [
            expect("Ready", "False", "Progressing"),
            expect("Progressing", "True", "RollingOut"),
        ];
        assert_eq!(conditions(&d), rolling);
        d.status.as_mut().unwrap().conditions = Some(vec![appsv1::DeploymentCondition {
            type_: Some("Progressing".into()),
            status: Some("False".into()),
            reason: Some("ProgressDeadlineExceeded".into()),
            ..Default::default()
        }]);
        let stuck = [
            expect("Ready", "False", "ProgressDeadlineExceeded"),
            expect("Progressing", "False", "ProgressDeadlineExceeded"),
        ];
        assert_eq!(conditions(&d), stuck);
    }

    #[test]
    fn a_status_ending_a_ready_or_a_failure_is_written_at_once() {
        let shown = |ready: bool, reason: &str| {
            let mut obj = fixture(true);
            obj.status = Some(ApplicationStatus {
                conditions: vec![Condition::new("Ready", ready, reason, "m", Some(1), &[])],
                ..Default::default()
            });
            obj
        };
        let progressing = ApplicationStatus {
            conditions: vec![Condition::new(
                "Ready",
                false,
                "Progressing",
                "m",
                Some(1),
                &[],
            )],
            ..Default::default()
        };
        assert!(
            !shown_at_once(&fixture(true), &progressing),
            "a new object's first status may wait"
        );
        assert!(!shown_at_once(&shown(false, "Progressing"), &progressing));
        assert!(
            shown_at_once(&shown(true, "RolloutComplete"), &progressing),
            "Ready=True taken away"
        );
        assert!(
            shown_at_once(&shown(false, "ReconcileError"), &progressing),
            "a fixed failure"
        );
        assert!(
            shown_at_once(&shown(false, "ChildConflict"), &progressing),
            "a fixed conflict"
        );
    }

    #[test]
    fn deployment_runs_the_image_with_the_replicas_and_port() {
        let d = deployment(&fixture(true)).unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("test-deployment"));
        assert_eq!(
            d.metadata.namespace.as_deref(),
            Some("default"),
            "children live in the Application's namespace"
        );
        let labels = d.metadata.labels.clone().unwrap();
        assert_eq!(
            (labels[UID_LABEL].as_str(), labels[NAME_LABEL].as_str()),
            ("7b4e1f0c-uid", "test")
        );
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.controller,
                owner.block_owner_deletion
            ),
            ("Application", "test", Some(true), Some(true))
        );
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(2));
        // Selected by the owner's uid alone, under the kind's own prefix: an `app: <name>`
        // another workload also carries would mix its Pods with these.
        let selected = BTreeMap::from([(UID_LABEL.to_string(), "7b4e1f0c-uid".to_string())]);
        assert_eq!(spec.selector.match_labels, Some(selected));
        assert_eq!(spec.template.metadata.unwrap().labels, Some(labels));
        let pod = spec.template.spec.unwrap();
        assert_eq!(
            pod.automount_service_account_token,
            Some(false),
            "the image gets no API token"
        );
        let container = &pod.containers[0];
        let security = container.security_context.clone().unwrap();
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(
            security.capabilities.and_then(|c| c.drop),
            Some(vec!["NET_RAW".to_string()])
        );
        assert_eq!(container.name, "test-container");
        assert_eq!(container.image.as_deref(), Some("nginx:latest"));
        assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 80);
        // Available (and so Ready) only once the port answers.
        let probe = container
            .readiness_probe
            .as_ref()
            .and_then(|p| p.tcp_socket.as_ref());
        assert_eq!(
            probe.map(|t| &t.port),
            Some(&IntOrString::String("http".into()))
        );
    }

    #[test]
    fn service_is_a_local_node_port_on_the_app_port() {
        let s = service(&fixture(true)).unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("test-service"));
        let spec = s.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
        assert_eq!(
            spec.selector,
            deployment(&fixture(true))
                .unwrap()
                .spec
                .selector
                .match_labels
        );
        let port = &spec.ports.unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.port, port.target_port.clone()),
            (Some("http"), 80, Some(IntOrString::Int(80)))
        );
    }

    #[test]
    fn children_need_a_stored_owner() {
        let mut obj = fixture(true);
        obj.metadata.uid = None;
        assert!(matches!(deployment(&obj), Err(Error::MissingUid(_))));
    }

    /// A reconcile cut short by its time limit (here the API server never answers the
    /// finalizer's PATCH) ends in time, and shows: Ready=False with why, and a Warning event,
    /// written within a time limit of their own.
    #[tokio::test(start_paused = true)]
    async fn a_request_left_unanswered_ends_the_reconcile_in_time_and_shows() {
        let (client, mut server) = mock_client();
        let settings = Settings {
            status_pace: Duration::ZERO,
            ..Settings::default()
        };
        let state = Arc::new(State {
            ctx: Arc::new(Context::with_settings(client, Arc::default(), settings)),
            deployments: Children::new(cache(vec![]), FIELD_MANAGER),
            services: Children::new(cache(vec![]), FIELD_MANAGER),
        });
        let obj = fixture(false);
        let report = vec![
            ("PATCH", STATUS.into(), Reply::Json(200, json(&obj))),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        // The API server takes the finalizer's PATCH and never answers it; the report it does.
        let served = tokio::spawn(async move {
            let unanswered = server.next_request().await.expect("the finalizer's PATCH");
            assert_eq!(unanswered.0.uri().path(), OBJECT);
            let seen = serve(server, report).await;
            drop(unanswered);
            seen
        });
        let reconciled = tokio::time::timeout(
            Duration::from_secs(600),
            reconcile(Arc::new(obj), state.clone()),
        );
        let result = reconciled.await.expect("the reconcile still waits");
        assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
        state.ctx.events.flush(Duration::from_secs(5)).await;
        drop(state);
        let seen = served.await.expect("the API server's script");
        let status = body(&seen, "PATCH", STATUS);
        assert_eq!(ready_condition(status), ("False", "ReconcileError"));
        let message = status["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains("the reconcile took longer than"),
            "{message}"
        );
        assert_eq!(body(&seen, "POST", EVENTS)["type"], "Warning");
    }

    #[tokio::test]
    async fn adds_the_finalizer_before_anything_else() {
        let expected = vec![(
            "PATCH",
            OBJECT.into(),
            Reply::Json(200, json(&fixture(true))),
        )];
        let (result, seen) = run(fixture(false), vec![], vec![], expected).await;
        assert!(body(&seen, "PATCH", OBJECT).to_string().contains(FINALIZER));
        assert_eq!(result.unwrap(), Action::await_change());
    }

    /// Adding the finalizer also fails, on the patch's test of the list, when someone changed
    /// the list after the cache read it: no failure to show, the watch brings the new list.
    #[tokio::test]
    async fn a_finalizer_list_changed_meanwhile_is_no_failure() {
        let mut cached = fixture(false);
        cached.metadata.finalizers = Some(vec!["example.com/other".into()]);
        let expected = vec![
            (
                "PATCH",
                OBJECT.into(),
                Reply::Json(422, api_status(422, "Invalid")),
            ),
            (
                "GET",
                OBJECT.into(),
                Reply::Json(200, json(&fixture(false))),
            ),
        ];
        let (result, _) = run(cached, vec![], vec![], expected).await;
        assert_eq!(result.unwrap(), Action::await_change());
    }

    #[tokio::test]
    async fn creates_missing_children_then_reports_one_event_and_the_status() {
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            ("POST", SERVICES.into(), Reply::Echo),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(fixture(true), vec![], vec![], expected).await;
        assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
        let created = request(&seen, "POST", DEPLOYMENTS);
        assert_eq!(created.body["spec"]["replicas"], 2);
        assert_eq!(created.param("fieldManager"), Some(FIELD_MANAGER));
        assert_eq!(body(&seen, "POST", SERVICES)["spec"]["type"], "NodePort");
        let status = body(&seen, "PATCH", STATUS);
        assert_eq!(status["status"]["observedGeneration"], 1);
        assert_eq!(
            ready_condition(status),
            ("False", "Progressing"),
            "the Deployment controller has not seen it yet"
        );
        let event = body(&seen, "POST", EVENTS);
        assert_eq!(
            (event["type"].as_str(), event["reason"].as_str()),
            (Some("Normal"), Some("Created"))
        );
        assert_eq!(
            event["note"],
            "Created Deployment test-deployment, Created Service test-service"
        );
    }

    #[tokio::test]
    async fn announces_what_it_created_though_the_status_write_fails() {
        let unavailable = serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "ServiceUnavailable", "code": 503,
            "message": "the server is shutting down",
        });
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            ("POST", SERVICES.into(), Reply::Echo),
            ("PATCH", STATUS.into(), Reply::Json(503, unavailable)),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(fixture(true), vec![], vec![], expected).await;
        assert!(result.is_err(), "the status write failed");
        // The next reconcile finds both children in step: this is the only announcement.
        let event = body(&seen, "POST", EVENTS);
        assert_eq!(
            (event["type"].as_str(), event["reason"].as_str()),
            (Some("Normal"), Some("Created"))
        );
    }

    #[tokio::test]
    async fn holds_a_status_change_back_so_that_a_burst_costs_one_write() {
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            ("POST", SERVICES.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, _) =
            run_with(Settings::default(), fixture(true), vec![], vec![], expected).await;
        let action = result.unwrap();
        // No status PATCH was sent; the held status needs an early reconcile, not the resync.
        assert!(
            action != Action::requeue(Duration::from_secs(300)) && action != Action::await_change(),
            "{action:?}"
        );
    }

    #[tokio::test]
    async fn never_holds_back_a_failed_rollout() {
        // A quota refuses the new ReplicaSet's Pods: updated stays below desired, but the
        // Deployment controller will not change that by itself, so the failure shows at once.
        let obj = fixture(true);
        let (mut d, s) = stored_children(&obj);
        let status = d.status.as_mut().unwrap();
        status.updated_replicas = Some(0);
        status.conditions = Some(vec![appsv1::DeploymentCondition {
            type_: Some("ReplicaFailure".into()),
            status: Some("True".into()),
            reason: Some("FailedCreate".into()),
            message: Some("pods \"test-deployment-1\" is forbidden: exceeded quota".into()),
            ..Default::default()
        }]);
        let expected = vec![(
            "PATCH",
            STATUS.into(),
            Reply::Json(200, json(&fixture(true))),
        )];
        let (result, seen) = run_with(Settings::default(), obj, vec![d], vec![s], expected).await;
        result.unwrap();
        assert_eq!(
            ready_condition(body(&seen, "PATCH", STATUS)),
            ("False", "FailedCreate")
        );
    }

    #[tokio::test]
    async fn never_holds_back_a_status_that_stops_being_ready() {
        // The Application shows Ready; its Deployment was deleted and has just been created
        // again, so the Deployment controller will soon write its status, but until then
        // nothing may read the old Ready=True.
        let mut obj = fixture(true);
        let (ready, _) = stored_children(&obj);
        obj.status = Some(status(&obj, &ready));
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (_, services) = stored_children(&obj);
        let (result, seen) =
            run_with(Settings::default(), obj, vec![], vec![services], expected).await;
        result.unwrap();
        assert_eq!(ready_condition(body(&seen, "PATCH", STATUS)).0, "False");
    }

    #[tokio::test]
    async fn sets_back_a_drifted_child_it_controls_with_a_guarded_patch() {
        let mut obj = fixture(true);
        let (mut d, s) = stored_children(&obj);
        obj.status = Some(status(&obj, &d));
        d.spec.replicas = Some(5);
        let mut corrected = d.clone();
        corrected.spec.replicas = Some(2);
        corrected.metadata.resource_version = Some("13".into());
        let expected = vec![
            (
                "PATCH",
                DEPLOYMENT.into(),
                Reply::Json(200, json(&corrected)),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(obj, vec![d], vec![s], expected).await;
        result.unwrap();
        let patch = request(&seen, "PATCH", DEPLOYMENT);
        assert_eq!(
            patch.content_type, "application/merge-patch+json",
            "lists replaced whole, maps merged"
        );
        assert_eq!(patch.param("fieldManager"), Some(FIELD_MANAGER));
        assert_eq!(patch.body["spec"]["replicas"], 2);
        let guard = &patch.body["metadata"];
        assert_eq!(
            (guard["resourceVersion"].as_str(), guard["uid"].as_str()),
            (Some("11"), Some("deployment-uid")),
            "refused if the child changed or was replaced meanwhile"
        );
        assert_eq!(body(&seen, "POST", EVENTS)["reason"], "Corrected");
    }

    /// A child changed because the spec changed was updated, not corrected: "Corrected" says
    /// someone else changed it.
    #[tokio::test]
    async fn a_child_following_a_new_spec_is_announced_as_updated() {
        let mut obj = fixture(true);
        let (d, s) = stored_children(&obj);
        obj.status = Some(status(&obj, &d));
        (obj.spec.replicas, obj.metadata.generation) = (3, Some(2));
        let mut updated = d.clone();
        (updated.spec.replicas, updated.metadata.resource_version) = (Some(3), Some("13".into()));
        let expected = vec![
            ("PATCH", DEPLOYMENT.into(), Reply::Json(200, json(&updated))),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(obj, vec![d], vec![s], expected).await;
        result.unwrap();
        let event = body(&seen, "POST", EVENTS);
        assert_eq!(
            (event["reason"].as_str(), event["note"].as_str()),
            (Some("Updated"), Some("Updated Deployment test-deployment"))
        );
    }

    #[tokio::test]
    async fn judges_the_status_on_the_child_as_it_is_when_the_cache_was_behind() {
        let mut obj = fixture(true);
        let (cached, s) = stored_children(&obj);
        obj.status = Some(status(&obj, &cached));
        obj.spec.image = "nginx:new".into();
        obj.metadata.generation = Some(2);
        // The API server has a newer Deployment (its status moved on), still the old image.
        let mut fresh = cached.clone();
        fresh.metadata.resource_version = Some("12".into());
        let mut patched = deployment(&obj).unwrap();
        patched.metadata = fresh.metadata.clone();
        patched.metadata.resource_version = Some("13".into());
        patched.metadata.generation = Some(2);
        patched.status = fresh.status.clone();
        let conflict = Reply::Json(409, api_status(409, "Conflict"));
        let expected = vec![
            ("PATCH", DEPLOYMENT.into(), conflict),
            ("GET", DEPLOYMENT.into(), Reply::Json(200, json(&fresh))),
            ("PATCH", DEPLOYMENT.into(), Reply::Json(200, json(&patched))),
            ("PATCH", STATUS.into(), Reply::Json(200, json(&obj))),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(obj, vec![cached], vec![s], expected).await;
        result.unwrap();
        let patches: Vec<&Seen> = seen
            .iter()
            .filter(|r| r.method == "PATCH" && r.path == DEPLOYMENT)
            .collect();
        assert_eq!(
            patches[1].body["metadata"]["resourceVersion"], "12",
            "the second try is guarded by the fresh child"
        );
        let status = body(&seen, "PATCH", STATUS);
        assert_eq!(
            ready_condition(status),
            ("False", "Progressing"),
            "the new image is not rolled out: {status}"
        );
    }

    #[tokio::test]
    async fn deletion_with_cascade_orphan_leaves_the_children() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        obj.metadata.finalizers = Some(vec!["orphan".into(), FINALIZER.into()]);
        let (d, s) = stored_children(&obj);
        let expected = vec![(
            "PATCH",
            OBJECT.into(),
            Reply::Json(200, json(&fixture(false))),
        )];
        let (result, _) = run(obj, vec![d], vec![s], expected).await;
        assert_eq!(result.unwrap(), Action::await_change());
    }

    /// A reconcile queued behind a failed one (by the Deployment it did create) reads the object
    /// from a cache that has not seen the failure's status yet: the failure is neither written
    /// nor announced again. Once the cache holds a newer version, it is compared with that.
    #[tokio::test]
    async fn a_failure_is_written_and_announced_once_though_the_cache_is_behind() {
        let refused = || {
            (
                "POST",
                SERVICES.into(),
                Reply::Json(403, api_status(403, "Forbidden")),
            )
        };
        let mut obj = fixture(true);
        obj.metadata.resource_version = Some("5".into());
        let mut newer = obj.clone();
        newer.metadata.resource_version = Some("6".into());
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            refused(),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
            refused(),
            refused(),
            // The newer version's cached status does not show the failure: written again.
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let settings = Settings {
            status_pace: Duration::ZERO,
            ..Settings::default()
        };
        let (results, seen) = run_each(
            settings,
            vec![obj.clone(), obj, newer],
            vec![],
            vec![],
            expected,
        )
        .await;
        assert!(results.iter().all(Result::is_err), "{results:?}");
        let warnings = seen
            .iter()
            .filter(|s| s.path == EVENTS && s.body["type"] == "Warning")
            .count();
        assert_eq!(warnings, 2, "{seen:?}");
    }

    /// A reconcile queued behind the cleanup (by the children's Delete events) reads the object
    /// from a cache that still shows the finalizer: its removal fails, and the object is gone,
    /// or (a foreground deletion) still there without it. Neither is an error; the finalizer
    /// still there is, and shows in the status and as a Warning event.
    #[tokio::test]
    async fn a_deletion_already_done_is_no_error() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        let mut waiting = obj.clone();
        waiting.metadata.finalizers = Some(vec!["foregroundDeletion".into()]);
        let invalid = || Reply::Json(422, api_status(422, "Invalid"));
        for (fresh, done) in [
            (Reply::Json(404, api_status(404, "NotFound")), true),
            (Reply::Json(200, json(&waiting)), true),
            (Reply::Json(200, json(&obj)), false),
        ] {
            let mut expected = vec![
                ("PATCH", OBJECT.into(), invalid()),
                ("GET", OBJECT.into(), fresh),
            ];
            if !done {
                // Still there with the finalizer: the removal was refused, and that shows.
                expected.push(("PATCH", STATUS.into(), Reply::Json(200, json(&obj))));
                expected.push(("POST", EVENTS.into(), Reply::Echo));
            }
            let (result, _) = run(obj.clone(), vec![], vec![], expected).await;
            assert_eq!(result.is_ok(), done, "{result:?}");
        }
    }

    #[tokio::test]
    async fn sends_nothing_when_everything_is_in_step() {
        let mut obj = fixture(true);
        let (d, s) = stored_children(&obj);
        obj.status = Some(status(&obj, &d));
        assert_eq!(obj.status.as_ref().unwrap().conditions[0].status, "True");
        // No request at all is expected: no GET of the children, no write.
        let (result, _) = run(obj, vec![d], vec![s], vec![]).await;
        assert_eq!(result.unwrap(), Action::requeue(Duration::from_secs(300)));
    }

    #[tokio::test]
    async fn leaves_a_child_it_does_not_control_alone_and_says_so() {
        let mut obj = fixture(true);
        let (d, mut s) = stored_children(&obj);
        obj.status = Some(status(&obj, &d));
        s.metadata.owner_references = None;
        let expected = vec![
            ("PATCH", STATUS.into(), Reply::Json(200, json(&obj))),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(obj.clone(), vec![d.clone()], vec![s.clone()], expected).await;
        assert!(
            matches!(
                result.as_ref().map_err(Error::cause),
                Err(Error::ChildConflict(_))
            ),
            "{result:?}"
        );
        let status = body(&seen, "PATCH", STATUS);
        assert_eq!(ready_condition(status), ("False", "ChildConflict"));
        let message = status["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap();
        assert!(message.contains("Service test-service"), "{message}");
        let event = body(&seen, "POST", EVENTS);
        assert_eq!(
            (event["type"].as_str(), event["reason"].as_str()),
            (Some("Warning"), Some("ChildConflict"))
        );

        // The same failure again: retried, but neither written nor announced again.
        obj.status = Some(serde_json::from_value(status["status"].clone()).unwrap());
        let (result, _) = run(obj, vec![d], vec![s], vec![]).await;
        assert!(matches!(
            result.as_ref().map_err(Error::cause),
            Err(Error::ChildConflict(_))
        ));
    }

    #[tokio::test]
    async fn does_not_take_over_a_child_missing_from_its_cache() {
        let mut foreign = service(&fixture(true)).unwrap();
        foreign.metadata.owner_references = None;
        foreign.metadata.labels = None;
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            (
                "POST",
                SERVICES.into(),
                Reply::Json(409, api_status(409, "AlreadyExists")),
            ),
            ("GET", SERVICE.into(), Reply::Json(200, json(&foreign))),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
            // The Deployment created beside it, announced.
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(fixture(true), vec![], vec![], expected).await;
        assert!(
            matches!(
                result.as_ref().map_err(Error::cause),
                Err(Error::ChildConflict(_))
            ),
            "{result:?}"
        );
        assert_eq!(
            ready_condition(body(&seen, "PATCH", STATUS)),
            ("False", "ChildConflict")
        );
    }

    #[tokio::test]
    async fn reports_an_api_failure_in_the_status() {
        let quota = serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
            "message": "services \"test-service\" is forbidden: exceeded quota: none, requested: services=1",
        });
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            ("POST", SERVICES.into(), Reply::Json(403, quota)),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(200, json(&fixture(true))),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(fixture(true), vec![], vec![], expected).await;
        assert!(result.is_err());
        let status = body(&seen, "PATCH", STATUS);
        assert_eq!(ready_condition(status), ("False", "ReconcileError"));
        assert!(status.to_string().contains("exceeded quota"), "{status}");
        // The Deployment created beside the refused Service is announced all the same: the
        // next reconcile finds it in step and would never tell.
        let events: Vec<(&str, &str)> = seen
            .iter()
            .filter(|s| s.method == "POST" && s.path == EVENTS)
            .map(|s| {
                (
                    s.body["type"].as_str().unwrap(),
                    s.body["note"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(
            events.contains(&("Normal", "Created Deployment test-deployment")),
            "{events:?}"
        );
        assert!(
            events
                .iter()
                .any(|(type_, note)| *type_ == "Warning" && note.contains("exceeded quota")),
            "{events:?}"
        );
    }

    /// A failure whose status write fails too is still announced, and it is the failure, not
    /// the write's error, that the retry, the logs and the metrics see.
    #[tokio::test]
    async fn a_failure_the_status_cannot_show_is_still_announced_and_returned() {
        let expected = vec![
            ("POST", DEPLOYMENTS.into(), Reply::Echo),
            (
                "POST",
                SERVICES.into(),
                Reply::Json(403, api_status(403, "Forbidden")),
            ),
            (
                "PATCH",
                STATUS.into(),
                Reply::Json(500, api_status(500, "InternalError")),
            ),
            ("POST", EVENTS.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
        ];
        let (result, seen) = run(fixture(true), vec![], vec![], expected).await;
        let err = result.unwrap_err();
        assert!(
            matches!(err.cause(), Error::Kube(kube::Error::Api(status)) if status.code == 403),
            "{err:?}"
        );
        let warning = seen
            .iter()
            .find(|s| s.path == EVENTS && s.body["type"] == "Warning");
        assert!(warning.is_some(), "{seen:?}");
    }

    /// What `error_policy` works with: a manager's state (no request expected) and the
    /// controller's cache, holding `fixture(true)`; with the cache's writer and that object.
    fn failing() -> (
        Arc<State>,
        reflector::Store<Application>,
        reflector::store::Writer<Application>,
        Application,
    ) {
        let (client, _server) = mock_client();
        let state = Arc::new(State {
            ctx: Arc::new(Context::with_settings(
                client,
                Arc::default(),
                Settings::default(),
            )),
            deployments: Children::new(cache(vec![]), FIELD_MANAGER),
            services: Children::new(cache(vec![]), FIELD_MANAGER),
        });
        let (store, mut writer) = reflector::store();
        let cached = fixture(true);
        writer.apply_watcher_event(&watcher::Event::Apply(cached.clone()));
        (state, store, writer, cached)
    }

    /// The object in a child's way is not watched: once the user has removed it, the next look
    /// comes within 30 s (jittered, so that many conflicts do not come back in lockstep), however
    /// long the conflict lasted, where other failures back off to 5 min.
    #[tokio::test]
    async fn a_conflict_is_looked_at_again_within_30_s() {
        let (state, store, _writer, cached) = failing();
        let delay = |error: Error| {
            for _ in 0..19 {
                error_policy(Arc::new(cached.clone()), &error, state.clone(), &store);
            }
            let delay = retry_delay(&state.ctx.retries, "7b4e1f0c-uid", &error);
            state.ctx.retries.forget("7b4e1f0c-uid");
            delay
        };
        let conflict = delay(Error::ChildConflict("x-service".into()));
        assert!(
            conflict >= CONFLICT_RECHECK / 2 && conflict <= CONFLICT_RECHECK,
            "{conflict:?}"
        );
        assert!(delay(Error::MissingNamespace("test".into())) > CONFLICT_RECHECK);
        // Yet a conflict waits its turn under the manager's rate limit (10 retries a second)
        // like any retry: here 400 other retries ahead of it, 40 s.
        for i in 0..500 {
            state.ctx.retries.next_delay(&format!("other-{i}"));
        }
        let behind = delay(Error::ChildConflict("x-service".into()));
        assert!(behind >= Duration::from_secs(39), "{behind:?}");
    }

    #[tokio::test]
    async fn a_failure_is_kept_only_while_its_object_is_cached() {
        let (state, store, mut writer, cached) = failing();
        let error = || Error::MissingNamespace("test".into());
        error_policy(Arc::new(cached.clone()), &error(), state.clone(), &store);
        assert!(state.ctx.retries.failing("7b4e1f0c-uid"));
        // Deleted while its reconcile ran: the watch forgot it before this failure came in.
        writer.apply_watcher_event(&watcher::Event::Delete(cached.clone()));
        state.ctx.retries.forget("7b4e1f0c-uid");
        error_policy(Arc::new(cached.clone()), &error(), state.clone(), &store);
        assert_eq!(state.ctx.retries.tracked(), 0);
        // The name taken again by a new object: the old one's failure is not kept either.
        let mut recreated = cached.clone();
        recreated.metadata.uid = Some("new-uid".into());
        writer.apply_watcher_event(&watcher::Event::Apply(recreated));
        error_policy(Arc::new(cached), &error(), state.clone(), &store);
        assert_eq!(state.ctx.retries.tracked(), 0);
    }

    #[tokio::test]
    async fn deletion_deletes_only_controlled_children_with_a_uid_precondition() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        let (d, mut s) = stored_children(&obj);
        s.metadata.owner_references = None;
        let expected = vec![
            ("DELETE", DEPLOYMENT.into(), Reply::Json(200, json(&d))),
            ("POST", EVENTS.into(), Reply::Echo),
            (
                "PATCH",
                OBJECT.into(),
                Reply::Json(200, json(&fixture(false))),
            ),
        ];
        let (result, seen) = run(obj, vec![d], vec![s], expected).await;
        assert_eq!(result.unwrap(), Action::await_change());
        let preconditions = &body(&seen, "DELETE", DEPLOYMENT)["preconditions"];
        assert_eq!(preconditions["uid"], "deployment-uid");
        assert_eq!(preconditions["resourceVersion"], "11");
        assert_eq!(
            body(&seen, "POST", EVENTS)["note"],
            "Deleted Deployment test-deployment"
        );
        assert!(body(&seen, "PATCH", OBJECT).to_string().contains("remove"));
        // The event is recorded in the background, so it may come before or after.
        let at = |method: &str, path: &str| {
            seen.iter()
                .position(|s| s.method == method && s.path == path)
        };
        assert!(
            at("DELETE", DEPLOYMENT) < at("PATCH", OBJECT),
            "the finalizer goes after the children"
        );
    }

    /// The cache still shows the child as ours, but the garbage collector has taken the owner
    /// reference away (an orphaning delete) or handed the child to another owner: the API
    /// server refuses the delete guarded by the cached version, and the child as it is now
    /// is left alone.
    #[tokio::test]
    async fn deletion_leaves_a_child_that_is_no_longer_ours_though_the_cache_says_it_is() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        let (d, _) = stored_children(&obj);
        let mut now = d.clone();
        now.metadata.owner_references = None;
        now.metadata.resource_version = Some("15".into());
        let expected = vec![
            (
                "DELETE",
                DEPLOYMENT.into(),
                Reply::Json(409, api_status(409, "Conflict")),
            ),
            ("GET", DEPLOYMENT.into(), Reply::Json(200, json(&now))),
            (
                "PATCH",
                OBJECT.into(),
                Reply::Json(200, json(&fixture(false))),
            ),
        ];
        let (result, seen) = run(obj, vec![d], vec![], expected).await;
        assert_eq!(result.unwrap(), Action::await_change());
        assert_eq!(
            seen.iter().filter(|s| s.method == "DELETE").count(),
            1,
            "one delete, refused"
        );
    }
}
