
#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_support::{Expected, Reply, Seen, body, mock_client, serve, status as api_status};
    use crate::api::{{ r.api_rust_path }}::{{ r.kind }}Spec;
    use serde_json::Value;

    const OBJECT: &str = "/apis/{{ r.api_group }}/{{ r.version }}/namespaces/default/{{ r.plural }}/test";
    const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/default/deployments/test-deployment";
    const SERVICE: &str = "/api/v1/namespaces/default/services/test-service";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

    fn fixture(finalizer: bool) -> {{ r.type_name }} {
        let mut obj = {{ r.type_name }}::new("test", {{ r.kind }}Spec { image: "nginx:latest".into(), replicas: 2, port: 80 });
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
    async fn run(obj: {{ r.type_name }}, expected: Vec<Expected>) -> (Action, Vec<Seen>) {
        let (client, server) = mock_client();
        let ctx = Arc::new(Context::new(client, Arc::default()));
        let reconciled = tokio::time::timeout(Duration::from_secs(5), reconcile(Arc::new(obj), ctx));
        let (result, seen) = tokio::join!(reconciled, serve(server, expected));
        (result.expect("reconcile hung").expect("reconcile failed"), seen)
    }

    fn not_found() -> Reply {
        Reply::Json(404, api_status(404, "NotFound"))
    }

    #[test]
    fn deployment_runs_the_image_with_the_replicas_and_port() {
        let d = deployment(&fixture(true)).unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("test-deployment"));
        assert_eq!(d.metadata.namespace.as_deref(), Some("default"), "children live in the {{ r.kind }}'s namespace");
        assert_eq!(d.metadata.labels.as_ref().unwrap()["app"], "test");
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.controller), ("{{ r.kind }}", "test", Some(true)));
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
        assert_eq!((port.name.as_deref(), port.port, port.target_port.clone()), (Some("http"), 80, Some(IntOrString::Int(80))));
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
        current.metadata.labels.as_mut().unwrap().insert("team".into(), "web".into());
        current.spec.revision_history_limit = Some(10);
        assert!(!deployment_drifted(&current, &desired), "server defaults and foreign labels are not drift");
        current.spec.replicas = Some(5);
        assert!(deployment_drifted(&current, &desired), "a hand-edited replica count is drift");

        let desired = service(&obj).unwrap();
        let mut current = desired.clone();
        current.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.7".into());
        assert!(!service_drifted(&current, &desired));
        current.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 8080;
        assert!(service_drifted(&current, &desired));
    }

    #[tokio::test]
    async fn adds_the_finalizer_before_anything_else() {
        let expected = vec![("PATCH", OBJECT.into(), Reply::Json(200, json(&fixture(true))))];
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
            ("PATCH", status_path.clone(), Reply::Json(200, json(&fixture(true)))),
        ];
        let (action, seen) = run(fixture(true), expected).await;
        assert_eq!(body(&seen, "PATCH", DEPLOYMENT)["spec"]["replicas"], 2);
        assert_eq!(body(&seen, "PATCH", SERVICE)["spec"]["type"], "NodePort");
        let status = body(&seen, "PATCH", &status_path);
        assert_eq!(status["status"]["observedGeneration"], 1);
        assert_eq!(status["status"]["conditions"][0]["status"], "False");
        assert_eq!(seen.last().unwrap().1, status_path, "status comes last, from the applied Deployment");
        assert_eq!(action, Action::requeue(RESYNC));
    }

    #[tokio::test]
    async fn writes_nothing_when_everything_is_in_step() {
        let mut obj = fixture(true);
        let mut current = deployment(&obj).unwrap();
        current.status = Some(appsv1::DeploymentStatus { replicas: Some(2), ready_replicas: Some(2), ..Default::default() });
        obj.status = Some(status(&obj, &current));
        let expected = vec![
            ("GET", DEPLOYMENT.into(), Reply::Json(200, json(&current))),
            ("GET", SERVICE.into(), Reply::Json(200, json(&service(&obj).unwrap()))),
        ];
        let (action, _) = run(obj, expected).await;
        assert_eq!(action, Action::requeue(RESYNC));
    }

    #[tokio::test]
    async fn deletion_removes_the_children_then_the_finalizer() {
        let mut obj = fixture(true);
        obj.metadata.deletion_timestamp = Some(metav1::Time(k8s_openapi::jiff::Timestamp::now()));
        let expected = vec![
            ("DELETE", DEPLOYMENT.into(), Reply::Json(200, json(&deployment(&obj).unwrap()))),
            ("DELETE", SERVICE.into(), not_found()),
            ("POST", EVENTS.into(), Reply::Echo),
            ("PATCH", OBJECT.into(), Reply::Json(200, json(&fixture(false)))),
        ];
        let (action, seen) = run(obj, expected).await;
        assert!(body(&seen, "PATCH", OBJECT).to_string().contains("remove"));
        assert_eq!(seen.last().unwrap().1, OBJECT, "the finalizer goes last");
        assert_eq!(action, Action::await_change());
    }
}
