//! Reconciles Applications: each runs as a Deployment and a NodePort Service in its own
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

use crate::api::Condition;
use crate::api::v1alpha1::{Application, ApplicationStatus};
use crate::context::object_key;
use crate::{Context, Error, MANAGER, Result};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "application";
/// Holds each Application until its children are cleaned up.
pub const FINALIZER: &str = "applications.minetto.dev/finalizer";
/// Label on every child, so our watches see only our objects.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", MANAGER);
/// Applications reconciled at once. Unbounded, a burst of thousands opens as many API
/// connections at once; a bound keeps memory flat and reuses pooled connections.
const CONCURRENCY: u16 = 16;
/// How often a quiet Application is checked again, to catch drift a watch could have missed.
const RESYNC: Duration = Duration::from_secs(300);

/// Watches Applications and the Deployments and Services they own until shutdown.
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
    let owned = watcher::Config::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
    // The controller's cache of Applications, without managedFields: nothing here reads them,
    // and they are most of each cached object's memory.
    let (reader, writer) = reflector::store();
    // Only a new generation (a spec change, or deletion starting) or a finalizer change needs a
    // reconcile: our own status writes would otherwise each cause one more.
    let changed = predicates::generation.combine(predicates::finalizers);
    let objects = watcher(
        Api::<Application>::all(client.clone()),
        watcher::Config::default().any_semantic(),
    )
    .default_backoff()
    .modify(|obj| obj.managed_fields_mut().clear())
    .reflect(writer)
    .touched_objects()
    .predicate_filter(changed, PredicateConfig::default());
    Controller::for_stream(objects, reader)
        .owns(
            Api::<appsv1::Deployment>::all(client.clone()),
            owned.clone(),
        )
        .owns(Api::<corev1::Service>::all(client), owned)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                warn!(controller = CONTROLLER, "{err}");
            }
        })
        .await;
}

/// Reconciles one Application through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
pub async fn reconcile(obj: Arc<Application>, ctx: Arc<Context>) -> Result<Action> {
    let _timer = ctx.metrics.reconcile_started(CONTROLLER);
    let key = object_key(obj.as_ref());
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &namespace);
    let action = finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, &ctx).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &ctx).await,
        }
    })
    .await
    .map_err(|err| Error::Finalizer(Box::new(err)))?;
    ctx.reset_backoff(&key);
    Ok(action)
}

/// Retries a failed Application with exponential backoff (1 s doubling to 5 min).
pub fn error_policy(obj: Arc<Application>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_failed(CONTROLLER, error);
    let key = object_key(obj.as_ref());
    let delay = ctx.backoff(&key);
    warn!(controller = CONTROLLER, object = %key, retry_in = ?delay, "reconcile failed: {error}");
    Action::requeue(delay)
}

/// Brings the Deployment and the Service in line with the spec, then reports the status.
async fn apply(obj: &Application, api: &Api<Application>, ctx: &Context) -> Result<Action> {
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let deployments: Api<appsv1::Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<corev1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let (desired_deployment, desired_service) = (deployment(obj)?, service(obj)?);
    // Both children at once: they do not depend on each other.
    let (deployment, _) = tokio::try_join!(
        ensure(
            &deployments,
            &desired_deployment,
            deployment_drifted,
            obj,
            ctx
        ),
        ensure(&services, &desired_service, service_drifted, obj, ctx),
    )?;

    let status = status(obj, &deployment);
    if obj.status.as_ref() != Some(&status) {
        let patch = json!({ "status": status });
        api.patch_status(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// The child as the API server has it, after applying `desired` if the child is missing or
/// has drifted (with an event saying so).
async fn ensure<K>(
    api: &Api<K>,
    desired: &K,
    drifted: fn(&K, &K) -> bool,
    owner: &Application,
    ctx: &Context,
) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired.name_any();
    let current = api.get_opt(&name).await?;
    if let Some(current) = current
        .as_ref()
        .filter(|current| !drifted(current, desired))
    {
        return Ok(current.clone());
    }
    let applied = api
        .patch(&name, &apply_params(), &Patch::Apply(desired))
        .await?;
    let change = if current.is_some() {
        "Updated"
    } else {
        "Created"
    };
    publish(ctx, owner, &format!("{}{change}", K::kind(&())), &name).await;
    Ok(applied)
}

/// The owner references make the garbage collector delete the children with their owner;
/// deleting them here as well makes cleanup visible in events and independent of the GC.
async fn cleanup(obj: &Application, ctx: &Context) -> Result<Action> {
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let deployments: Api<appsv1::Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<corev1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = DeleteParams::background();
    let names = child_names(obj);
    ignore_not_found(
        deployments
            .delete(&names.deployment, &params)
            .await
            .map(drop),
    )?;
    ignore_not_found(services.delete(&names.service, &params).await.map(drop))?;
    info!(controller = CONTROLLER, object = %obj.name_any(), "cleaned up");
    publish(
        ctx,
        obj,
        "Deleted",
        "Deleted the Deployment and the Service",
    )
    .await;
    Ok(Action::await_change())
}

fn ignore_not_found(result: kube::Result<()>) -> Result<()> {
    match result {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => Ok(other?),
    }
}

/// Events are best effort: failing to record one must not fail the reconcile.
async fn publish(ctx: &Context, obj: &Application, reason: &str, note: &str) {
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

fn child_names(obj: &Application) -> ChildNames {
    let name = obj.name_any();
    ChildNames {
        deployment: format!("{name}-deployment"),
        service: format!("{name}-service"),
        container: format!("{name}-container"),
    }
}

/// `app: <name>` selects the Pods; the managed-by label scopes our watches.
fn labels(obj: &Application) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_string(), obj.name_any()),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ])
}

fn selector(obj: &Application) -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_string(), obj.name_any())])
}

fn child_meta(obj: &Application, name: String) -> Result<ObjectMeta> {
    let owner = obj
        .controller_owner_ref(&())
        .ok_or_else(|| Error::MissingUid(obj.name_any()))?;
    Ok(ObjectMeta {
        name: Some(name),
        namespace: obj.namespace(),
        labels: Some(labels(obj)),
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
                match_labels: Some(selector(obj)),
                ..Default::default()
            },
            template: corev1::PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(obj)),
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

/// The NodePort Service an Application asks for: port `http` forwarding `port` to the Pods.
pub fn service(obj: &Application) -> Result<corev1::Service> {
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
        Some((
            spec.replicas,
            container.name.clone(),
            container.image.clone(),
            port,
        ))
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
    let missing_label = desired
        .labels
        .iter()
        .flatten()
        .any(|(k, v)| labels.get(k) != Some(v));
    let missing_owner = desired
        .owner_references
        .iter()
        .flatten()
        .any(|o| !owners.contains(o));
    missing_label || missing_owner
}

/// The status an Application should show, derived from its Deployment.
fn status(obj: &Application, deployment: &appsv1::Deployment) -> ApplicationStatus {
    let observed = deployment.status.clone().unwrap_or_default();
    let ready_replicas = observed.ready_replicas.unwrap_or(0);
    let ready = ready_replicas >= obj.spec.replicas;
    let previous = obj
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let message = format!("{ready_replicas}/{} replicas ready", obj.spec.replicas);
    let reason = if ready { "Ready" } else { "Progressing" };
    ApplicationStatus {
        replicas: observed.replicas.unwrap_or(0),
        ready_replicas,
        available_replicas: observed.available_replicas.unwrap_or(0),
        selector: Some(format!("app={}", obj.name_any())),
        observed_generation: obj.metadata.generation,
        conditions: vec![Condition::ready(
            ready,
            reason,
            message,
            obj.metadata.generation,
            previous,
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::ApplicationSpec;
    use crate::controller::test_support::{
        Expected, Reply, Seen, body, mock_client, serve, status as api_status,
    };
    use serde_json::Value;

    const OBJECT: &str = "/apis/minetto.dev/v1alpha1/namespaces/default/applications/test";
    const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/default/deployments/test-deployment";
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

    fn json(value: &impl serde::Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    /// Reconciles `obj` against an API server that answers exactly the `expected` requests;
    /// returns the action and the requests in order of arrival.
    async fn run(obj: Application, expected: Vec<Expected>) -> (Action, Vec<Seen>) {
        let (client, server) = mock_client();
        let ctx = Arc::new(Context::new(client, Arc::default()));
        let reconciled =
            tokio::time::timeout(Duration::from_secs(5), reconcile(Arc::new(obj), ctx));
        let (result, seen) = tokio::join!(reconciled, serve(server, expected));
        (
            result.expect("reconcile hung").expect("reconcile failed"),
            seen,
        )
    }

    fn not_found() -> Reply {
        Reply::Json(404, api_status(404, "NotFound"))
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
        assert_eq!(d.metadata.labels.as_ref().unwrap()["app"], "test");
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("Application", "test", Some(true))
        );
        let spec = d.spec;
        assert_eq!(spec.replicas, Some(2));
        assert_eq!(spec.selector.match_labels.unwrap()["app"], "test");
        let container = &spec.template.spec.unwrap().containers[0];
        assert_eq!(container.name, "test-container");
        assert_eq!(container.image.as_deref(), Some("nginx:latest"));
        assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 80);
    }

    #[test]
    fn service_is_a_local_node_port_on_the_app_port() {
        let s = service(&fixture(true)).unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("test-service"));
        let spec = s.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
        assert_eq!(spec.selector.unwrap()["app"], "test");
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

    #[test]
    fn drift_is_what_we_set_and_nothing_else() {
        let obj = fixture(true);
        let desired = deployment(&obj).unwrap();
        let mut current = desired.clone();
        current
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("team".into(), "web".into());
        current.spec.revision_history_limit = Some(10);
        assert!(
            !deployment_drifted(&current, &desired),
            "server defaults and foreign labels are not drift"
        );
        current.spec.replicas = Some(5);
        assert!(
            deployment_drifted(&current, &desired),
            "a hand-edited replica count is drift"
        );

        let desired = service(&obj).unwrap();
        let mut current = desired.clone();
        current.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.7".into());
        assert!(!service_drifted(&current, &desired));
        current.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 8080;
        assert!(service_drifted(&current, &desired));
    }

    #[tokio::test]
    async fn adds_the_finalizer_before_anything_else() {
        let expected = vec![(
            "PATCH",
            OBJECT.into(),
            Reply::Json(200, json(&fixture(true))),
        )];
        let (action, seen) = run(fixture(false), expected).await;
        assert!(body(&seen, "PATCH", OBJECT).to_string().contains(FINALIZER));
        assert_eq!(action, Action::await_change());
    }

    #[tokio::test]
    async fn creates_the_children_then_reports_status() {
        let status_path = format!("{OBJECT}/status");
        let expected = vec![
            ("GET", DEPLOYMENT.into(), not_found()),
            ("PATCH", DEPLOYMENT.into(), Reply::Echo),
            ("GET", SERVICE.into(), not_found()),
            ("PATCH", SERVICE.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
            ("POST", EVENTS.into(), Reply::Echo),
            (
                "PATCH",
                status_path.clone(),
                Reply::Json(200, json(&fixture(true))),
            ),
        ];
        let (action, seen) = run(fixture(true), expected).await;
        assert_eq!(body(&seen, "PATCH", DEPLOYMENT)["spec"]["replicas"], 2);
        assert_eq!(body(&seen, "PATCH", SERVICE)["spec"]["type"], "NodePort");
        let status = body(&seen, "PATCH", &status_path);
        assert_eq!(status["status"]["observedGeneration"], 1);
        assert_eq!(status["status"]["conditions"][0]["status"], "False");
        assert_eq!(
            seen.last().unwrap().1,
            status_path,
            "status comes last, from the applied Deployment"
        );
        assert_eq!(action, Action::requeue(RESYNC));
    }

    #[tokio::test]
    async fn writes_nothing_when_everything_is_in_step() {
        let mut obj = fixture(true);
        let mut current = deployment(&obj).unwrap();
        current.status = Some(appsv1::DeploymentStatus {
            replicas: Some(2),
            ready_replicas: Some(2),
            ..Default::default()
        });
        obj.status = Some(status(&obj, &current));
        let expected = vec![
            ("GET", DEPLOYMENT.into(), Reply::Json(200, json(&current))),
            (
                "GET",
                SERVICE.into(),
                Reply::Json(200, json(&service(&obj).unwrap())),
            ),
        ];
        let (action, _) = run(obj, expected).await;
        assert_eq!(action, Action::requeue(RESYNC));
    }

    #[tokio::test]
    async fn deletion_removes_the_children_then_the_finalizer() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        let expected = vec![
            (
                "DELETE",
                DEPLOYMENT.into(),
                Reply::Json(200, json(&deployment(&obj).unwrap())),
            ),
            ("DELETE", SERVICE.into(), not_found()),
            ("POST", EVENTS.into(), Reply::Echo),
            (
                "PATCH",
                OBJECT.into(),
                Reply::Json(200, json(&fixture(false))),
            ),
        ];
        let (action, seen) = run(obj, expected).await;
        assert!(body(&seen, "PATCH", OBJECT).to_string().contains("remove"));
        assert_eq!(seen.last().unwrap().1, OBJECT, "the finalizer goes last");
        assert_eq!(action, Action::await_change());
    }
}
