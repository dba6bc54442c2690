//! The Application controller against a real kube-apiserver and etcd (see `envtest/`).
//! Skipped unless KUBEBUILDER_ASSETS names a folder holding `etcd` and `kube-apiserver`.
//! There is no kube-controller-manager here: no Pods, no garbage collection.

mod envtest;

use std::sync::Arc;

use k8s_openapi::api::{apps::v1 as appsv1, core::v1 as corev1};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use k8s_operator_talk::api::v1alpha1::{Application, ApplicationSpec};
use k8s_operator_talk::controller::application as controller;
use k8s_operator_talk::{Context, api};

use envtest::{ControlPlane, eventually};

/// A control plane with the CRDs installed and the controller running, or `None` when skipped.
async fn start() -> Option<(ControlPlane, Client)> {
    let run = |client| controller::run(Arc::new(Context::new(client, Arc::default())));
    ControlPlane::with_controller(api::crds().expect("merging CRD versions"), run).await
}

fn sample(name: &str) -> Application {
    Application::new(
        name,
        ApplicationSpec {
            image: "nginx:latest".into(),
            replicas: 2,
            port: 80,
        },
    )
}

fn container(d: &appsv1::Deployment) -> (Option<i32>, Option<String>, i32) {
    let spec = &d.spec;
    let c = &spec.template.spec.as_ref().unwrap().containers[0];
    (
        spec.replicas,
        c.image.clone(),
        c.ports.as_ref().unwrap()[0].container_port,
    )
}

fn service_port(s: &corev1::Service) -> (i32, Option<i32>) {
    let port = &s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    (port.port, port.node_port)
}

#[tokio::test]
async fn application_runs_as_a_deployment_and_a_service() {
    let Some((_cp, client)) = start().await else {
        return;
    };
    let apps: Api<Application> = Api::namespaced(client.clone(), "default");
    let deployments: Api<appsv1::Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<corev1::Service> = Api::namespaced(client.clone(), "default");

    let app = apps
        .create(&PostParams::default(), &sample("web"))
        .await
        .unwrap();

    // Children appear in the object's own namespace, owned by it.
    let deployment = eventually("the Deployment", || async {
        deployments.get_opt("web-deployment").await.unwrap()
    })
    .await;
    assert_eq!(
        container(&deployment),
        (Some(2), Some("nginx:latest".into()), 80)
    );
    let owner = &deployment.owner_references()[0];
    assert_eq!(
        (owner.uid.as_str(), owner.controller),
        (app.uid().unwrap().as_str(), Some(true))
    );
    assert_eq!(deployment.labels()["app"], "web");
    let service = eventually("the Service", || async {
        services.get_opt("web-service").await.unwrap()
    })
    .await;
    let spec = service.spec.clone().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("NodePort"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    let (port, node_port) = service_port(&service);
    assert_eq!(port, 80);
    assert!(
        node_port.is_some_and(|p| (30000..=32767).contains(&p)),
        "the API server allocates a node port"
    );
    assert_eq!(service.owner_references()[0].uid, app.uid().unwrap());

    // Status is reported, then left alone: no loop on our own writes.
    let settled = eventually("the status", || async {
        let app = apps.get("web").await.unwrap();
        app.status
            .as_ref()
            .filter(|s| s.observed_generation == app.metadata.generation)
            .map(|_| app.clone())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        apps.get("web").await.unwrap().resource_version(),
        settled.resource_version(),
        "status keeps changing"
    );

    // A spec change reaches both children.
    let patch = json!({"spec": {"image": "nginx:1.27", "replicas": 3, "port": 8080}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("the Deployment update", || async {
        let d = deployments.get("web-deployment").await.unwrap();
        (container(&d) == (Some(3), Some("nginx:1.27".into()), 8080)).then_some(())
    })
    .await;
    eventually("the Service update", || async {
        let s = services.get("web-service").await.unwrap();
        (service_port(&s).0 == 8080).then_some(())
    })
    .await;

    // The scale subresource drives spec.replicas, as `kubectl scale` does.
    apps.patch_scale(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    eventually("the scaled Deployment", || async {
        (container(&deployments.get("web-deployment").await.unwrap()).0 == Some(1)).then_some(())
    })
    .await;

    // A hand edit is set back, a deleted child comes back.
    deployments
        .patch(
            "web-deployment",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 7}})),
        )
        .await
        .unwrap();
    eventually("the replicas set back", || async {
        (container(&deployments.get("web-deployment").await.unwrap()).0 == Some(1)).then_some(())
    })
    .await;
    let old = services.get("web-service").await.unwrap().uid();
    services
        .delete("web-service", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Service recreated", || async {
        services
            .get_opt("web-service")
            .await
            .unwrap()
            .filter(|s| s.uid() != old)
    })
    .await;

    // Deletion runs the finalizer, which removes the children, then the object goes.
    apps.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("the Application gone", || async {
        apps.get_opt("web").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(
        deployments
            .get_opt("web-deployment")
            .await
            .unwrap()
            .is_none()
    );
    assert!(services.get_opt("web-service").await.unwrap().is_none());
}

#[tokio::test]
async fn invalid_applications_are_rejected_by_the_api_server() {
    let Some((_cp, client)) = start().await else {
        return;
    };
    // Untyped, so that the requests carry exactly what a user could write in YAML.
    let resource = ApiResource::erase::<Application>(&());
    let raw: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let object = |name: &str, spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "minetto.dev/v1alpha1", "kind": "Application", "metadata": {"name": name}, "spec": spec
        }))
        .unwrap()
    };
    for (name, spec) in [
        (
            "port-zero",
            json!({"image": "nginx", "replicas": 1, "port": 0}),
        ),
        (
            "port-too-big",
            json!({"image": "nginx", "replicas": 1, "port": 65536}),
        ),
        (
            "negative-replicas",
            json!({"image": "nginx", "replicas": -1, "port": 80}),
        ),
        (
            "empty-image",
            json!({"image": "", "replicas": 1, "port": 80}),
        ),
        ("no-image", json!({"replicas": 1, "port": 80})),
    ] {
        match raw
            .create(&PostParams::default(), &object(name, spec))
            .await
        {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}: {}", status.message)
            }
            other => panic!("{name} was not rejected: {other:?}"),
        }
    }
    // Defaults fill in what the user leaves out.
    raw.create(
        &PostParams::default(),
        &object("defaults", json!({"image": "nginx"})),
    )
    .await
    .unwrap();
    let created = Api::<Application>::namespaced(client, "default")
        .get("defaults")
        .await
        .unwrap();
    assert_eq!((created.spec.replicas, created.spec.port), (1, 80));
}
