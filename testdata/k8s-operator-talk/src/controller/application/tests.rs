//! Unit tests of the Application controller: each reconcile runs against a mock API server
//! that checks every request it is sent (`controller::test_support`).

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

/// The children stored, and a quota refusing the new ReplicaSet's Pods.
fn pods_refused(obj: &Application) -> (appsv1::Deployment, corev1::Service) {
    let (mut d, s) = stored_children(obj);
    let status = d.status.as_mut().unwrap();
    status.updated_replicas = Some(0);
    status.conditions = Some(vec![appsv1::DeploymentCondition {
        type_: Some("ReplicaFailure".into()),
        status: Some("True".into()),
        reason: Some("FailedCreate".into()),
        message: Some("pods \"test-deployment-1\" is forbidden: exceeded quota".into()),
        ..Default::default()
    }]);
    (d, s)
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

/// Reconciles `obj` with these cached children against an API server that answers
/// exactly the `expected` requests (any other request fails the test); returns the
/// result and the requests in order of arrival. Status changes are written at once, except in
/// a burst (see `run_each`), where they wait with the finalizer.
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
        run_each(settings, vec![obj], deployments, services, expected, 0).await;
    (results.remove(0), seen)
}

/// Reconciles each of `objects` in turn, with one manager context and these children's caches;
/// the first `burst` of them while a create of another object's child is in flight.
async fn run_each(
    settings: Settings,
    objects: Vec<Application>,
    deployments: Vec<appsv1::Deployment>,
    services: Vec<corev1::Service>,
    expected: Vec<Expected>,
    burst: usize,
) -> (Vec<Result<Action>>, Vec<Seen>) {
    let (client, server) = mock_client();
    let state = Arc::new(State::new(
        Arc::new(Context::with_settings(client, Arc::default(), settings)),
        Children::new(cache(deployments), FIELD_MANAGER),
        Children::new(cache(services), FIELD_MANAGER),
    ));
    // The events the reconciles queued are recorded too; then every client is dropped,
    // which ends `serve`.
    let reconciled = async move {
        let mut creating = Some(state.services.create_started()).filter(|_| burst > 0);
        let mut results = Vec::new();
        for (done, obj) in objects.into_iter().enumerate() {
            if done == burst {
                creating.take();
            }
            let result = tokio::time::timeout(
                Duration::from_secs(5),
                reconcile(Arc::new(obj), state.clone()),
            )
            .await;
            results.push(result.expect("reconcile hung"));
        }
        drop(creating);
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
    let state = Arc::new(State::new(
        Arc::new(Context::with_settings(client, Arc::default(), settings)),
        Children::new(cache(vec![]), FIELD_MANAGER),
        Children::new(cache(vec![]), FIELD_MANAGER),
    ));
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

/// The `fields` of the one event the reconcile recorded, as text.
fn event<const N: usize>(seen: &[Seen], fields: [&str; N]) -> [String; N] {
    let event = body(seen, "POST", EVENTS);
    fields.map(|field| event[field].as_str().unwrap_or_default().to_string())
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

/// A new object, as it is in a burst's first minute.
fn new_in_a_burst() -> Application {
    let mut obj = fixture(false);
    obj.metadata.creation_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
    obj
}

/// In a burst of new objects (another object's child being created), a new object gets its
/// children before its finalizer and its status, and is looked at again soon: once the burst
/// is over, the finalizer is sent (and the status after it, as for any object).
#[tokio::test]
async fn in_a_burst_a_new_object_gets_its_children_before_its_finalizer_and_status() {
    let obj = new_in_a_burst();
    let expected = vec![
        ("POST", DEPLOYMENTS.into(), Reply::Echo),
        ("POST", SERVICES.into(), Reply::Echo),
        ("POST", EVENTS.into(), Reply::Echo),
        (
            "PATCH",
            OBJECT.into(),
            Reply::Json(200, json(&fixture(true))),
        ),
    ];
    let settings = Settings {
        status_pace: Duration::ZERO,
        ..Settings::default()
    };
    let (results, seen) = run_each(
        settings,
        vec![obj.clone(), obj],
        vec![],
        vec![],
        expected,
        1,
    )
    .await;
    let [first, second] = <[_; 2]>::try_from(results).unwrap();
    assert_eq!(first.unwrap(), Action::requeue(finalizer_order::RECHECK));
    assert_eq!(second.unwrap(), Action::await_change());
    let at = |method: &str, path: &str| {
        seen.iter()
            .position(|s| s.method == method && s.path == path)
            .unwrap()
    };
    assert!(
        at("PATCH", OBJECT) > at("POST", DEPLOYMENTS).max(at("POST", SERVICES)),
        "the finalizer after the children"
    );
    assert!(body(&seen, "PATCH", OBJECT).to_string().contains(FINALIZER));
}

/// Once the burst is over and the finalizer is on, the status held back in the burst is written.
#[tokio::test]
async fn after_a_burst_the_status_held_back_comes_with_the_finalizer() {
    let obj = new_in_a_burst();
    let (d, s) = stored_children(&obj);
    let mut finalized = obj.clone();
    finalized.metadata.finalizers = Some(vec![FINALIZER.into()]);
    let expected = vec![
        ("PATCH", OBJECT.into(), Reply::Json(200, json(&finalized))),
        ("PATCH", STATUS.into(), Reply::Json(200, json(&finalized))),
    ];
    let objects = vec![obj.clone(), obj, finalized];
    let (results, seen) =
        run_each(Settings::default(), objects, vec![d], vec![s], expected, 1).await;
    let [burst, finalizer, status] = <[_; 3]>::try_from(results).unwrap();
    assert_eq!(
        burst.unwrap(),
        Action::requeue(finalizer_order::RECHECK),
        "nothing sent in the burst"
    );
    assert_eq!(finalizer.unwrap(), Action::await_change());
    assert_eq!(status.unwrap(), Action::requeue(Duration::from_secs(300)));
    assert_eq!(
        ready_condition(body(&seen, "PATCH", STATUS)),
        ("True", "RolloutComplete")
    );
}

/// What must show at once is not held back in a burst: a failed rollout, and a failure shown
/// that no longer holds.
#[tokio::test]
async fn in_a_burst_a_failure_and_its_end_still_show_at_once() {
    let failing = {
        let obj = new_in_a_burst();
        let (d, s) = pods_refused(&obj);
        (obj, d, s, ("False", "FailedCreate"))
    };
    let recovered = {
        let mut obj = new_in_a_burst();
        obj.status = Some(failed_status(
            &obj,
            &Error::ChildConflict("Service test-service".into()),
        ));
        let (d, s) = stored_children(&obj);
        (obj, d, s, ("True", "RolloutComplete"))
    };
    for (obj, d, s, shown) in [failing, recovered] {
        let expected = vec![("PATCH", STATUS.into(), Reply::Json(200, json(&obj)))];
        let (results, seen) = run_each(
            Settings::default(),
            vec![obj],
            vec![d],
            vec![s],
            expected,
            1,
        )
        .await;
        assert_eq!(
            results[0].as_ref().unwrap(),
            &Action::requeue(finalizer_order::RECHECK)
        );
        assert_eq!(ready_condition(body(&seen, "PATCH", STATUS)), shown);
    }
}

/// A reconcile woken by a child's event between the finalizer's patch and the watch bringing
/// the object back reads it without the finalizer: it sends nothing (adding it again would be
/// refused, and cost a read to tell why).
#[tokio::test]
async fn a_cache_behind_the_finalizer_just_added_costs_no_request() {
    let mut obj = fixture(false);
    obj.metadata.resource_version = Some("5".into());
    let expected = vec![(
        "PATCH",
        OBJECT.into(),
        Reply::Json(200, json(&fixture(true))),
    )];
    let settings = Settings::default();
    let (results, seen) = run_each(
        settings,
        vec![obj.clone(), obj],
        vec![],
        vec![],
        expected,
        0,
    )
    .await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        results
            .into_iter()
            .all(|result| result.unwrap() == Action::await_change())
    );
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
    assert_eq!(
        event(&seen, ["type", "reason", "note"]),
        [
            "Normal",
            "Created",
            "Created Deployment test-deployment, Created Service test-service"
        ]
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
    assert_eq!(event(&seen, ["type", "reason"]), ["Normal", "Created"]);
}

#[tokio::test]
async fn holds_a_status_change_back_so_that_a_burst_costs_one_write() {
    let expected = vec![
        ("POST", DEPLOYMENTS.into(), Reply::Echo),
        ("POST", SERVICES.into(), Reply::Echo),
        ("POST", EVENTS.into(), Reply::Echo),
    ];
    let (result, _) = run_with(Settings::default(), fixture(true), vec![], vec![], expected).await;
    let action = result.unwrap();
    // No status PATCH was sent; the held status needs an early reconcile, not the resync.
    assert!(
        action != Action::requeue(Duration::from_secs(300)) && action != Action::await_change(),
        "{action:?}"
    );
}

#[tokio::test]
async fn never_holds_back_a_failed_rollout() {
    // Updated stays below desired, but the Deployment controller will not change that by
    // itself, so the failure shows at once.
    let obj = fixture(true);
    let (d, s) = pods_refused(&obj);
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
    let (result, seen) = run_with(Settings::default(), obj, vec![], vec![services], expected).await;
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
    assert_eq!(
        event(&seen, ["reason", "note"]),
        ["Updated", "Updated Deployment test-deployment"]
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
        0,
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
    assert_eq!(
        event(&seen, ["type", "reason"]),
        ["Warning", "ChildConflict"]
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
    let state = Arc::new(State::new(
        Arc::new(Context::with_settings(
            client,
            Arc::default(),
            Settings::default(),
        )),
        Children::new(cache(vec![]), FIELD_MANAGER),
        Children::new(cache(vec![]), FIELD_MANAGER),
    ));
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
