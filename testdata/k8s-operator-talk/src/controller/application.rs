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
use crate::controller::finalizer_order;
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
/// Whether, in a burst of new Applications, each gets its children before its finalizer (see
/// `finalizer_order`). Safe while the garbage collector deletes everything `apply` makes along
/// with its Application: objects in its namespace that it controls. Set it to false once
/// `apply` makes anything else (in another namespace, cluster-scoped, outside the cluster),
/// which only the finalizer's cleanup would delete.
const CHILDREN_BEFORE_FINALIZER: bool = true;
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
    /// Whether the finalizer comes before the children (see `finalizer_order`).
    pub finalizer_order: finalizer_order::FinalizerOrder,
}

impl State {
    pub fn new(
        ctx: Arc<Context>,
        deployments: Children<appsv1::Deployment>,
        services: Children<corev1::Service>,
    ) -> Self {
        State {
            ctx,
            deployments,
            services,
            finalizer_order: Default::default(),
        }
    }

    /// Whether children of this kind are being created right now.
    fn busy(&self) -> bool {
        self.deployments.creating() + self.services.creating() > 0
    }
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
    let state = Arc::new(State::new(ctx, deployments, services));
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
        crate::context::Hold::No,
        FIELD_MANAGER,
        Err(err),
    );
    reported.await.map(|(action, _): (Action, Action)| action)
}

/// Reconciles one Application through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
async fn reconcile_through_finalizer(obj: Arc<Application>, state: &State) -> Result<Action> {
    let api = api_of(&obj, state)?;
    // In a burst of new objects, their children before their finalizers (see `finalizer_order`).
    let children_first = CHILDREN_BEFORE_FINALIZER && state.busy();
    match state
        .finalizer_order
        .next(obj.as_ref(), FINALIZER, children_first)
    {
        Some(finalizer_order::Next::CacheBehind) => return Ok(Action::await_change()),
        Some(finalizer_order::Next::ChildrenFirst) => {
            apply(&obj, &api, state, true).await?;
            state.ctx.retries.forget(&retry_key(obj.as_ref()));
            return Ok(Action::requeue(finalizer_order::RECHECK));
        }
        Some(finalizer_order::Next::AddFinalizer) | None => {}
    }
    let reconciled = finalizer(&api, FINALIZER, obj.clone(), |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, state, false).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &api, state).await,
        }
    })
    .await;
    if reconciled.is_ok() {
        state.finalizer_order.added(obj.as_ref(), FINALIZER);
    }
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

/// Brings the Deployment and the Service in line with the spec, then reports the status. In a
/// burst of new Applications (`burst`, see `finalizer_order`), a status that shows no failure
/// waits with the finalizer until the burst is over: each write left out of the burst leaves the
/// API server more room for the children, and an object with no status yet claims nothing.
async fn apply(
    obj: &Application,
    api: &Api<Application>,
    state: &State,
    burst: bool,
) -> Result<Action> {
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
    let reported = ctx.report(
        api,
        obj,
        obj.status.as_ref(),
        &status,
        hold,
        FIELD_MANAGER,
        outcome,
    );
    Ok(reported.await?.1)
}

/// Whether `status`, after a reconcile that succeeded, may wait before it is written.
fn status_hold(
    obj: &Application,
    status: &ApplicationStatus,
    deployment: &appsv1::Deployment,
    burst: bool,
) -> crate::context::Hold {
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
/// too; deleting them here makes cleanup visible in events and independent of the collector,
/// once the finalizer is on (in a burst, the children come first: see `finalizer_order`).
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
mod tests;
