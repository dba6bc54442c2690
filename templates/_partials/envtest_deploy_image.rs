{%- set r = resource -%}
//! The {{ r.kind }} controller against a real kube-apiserver and etcd (see `envtest/`).
//! Skipped unless KUBEBUILDER_ASSETS names a folder holding `etcd` and `kube-apiserver`.
//! Most tests run no kube-controller-manager: no Pods, no garbage collection, and nobody but
//! the tests writes a Deployment's status. One runs its Deployment, ReplicaSet and quota
//! controllers, when the folder holds `kube-controller-manager` too (skipped otherwise, unless
//! ENVTEST_REQUIRED=1). The controller runs as the manager's
//! ServiceAccount granted the controllers' `RBAC` rules (config/rbac/role.yaml).

mod conversion_server;
mod envtest;

use std::sync::Arc;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::{apps::v1 as appsv1, core::v1 as corev1};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use {{ project.crate_name }}::api::{{ r.api_rust_path }}::{ {{- r.type_name }}, {{ r.kind }}Spec};
use {{ project.crate_name }}::controller::{{ r.controller_rust_path }} as controller;
use {{ project.crate_name }}::context::Settings;
use {{ project.crate_name }}::watches::Namespaces;
use {{ project.crate_name }}::{Context, api};

use envtest::{ControlPlane, eventually};

/// The namespaces these tests use: a namespace-scoped manager (`controller::NAMESPACED`, set by
/// `opsdk edit --namespaced`) watches only these, with its Role bound in each.
const NAMESPACES: &[&str] = &["default", "rollout", "foreign", "quota", "pods"];

/// A control plane with the CRDs installed and the controller running, or `None` when skipped.
async fn start() -> Option<(ControlPlane, Client)> {
    let role = {{ project.crate_name }}::controller::role();
    let watched = if {{ project.crate_name }}::controller::NAMESPACED { NAMESPACES } else { &[] };
    // No Deployment controller runs here: do not hold status changes back for it for long.
    let settings = Settings { namespaces: Namespaces::new(watched), status_pace: std::time::Duration::from_secs(1), ..Settings::default() };
    let run = |client| controller::run(Arc::new(Context::with_settings(client, Arc::default(), settings)));
    let (mut cp, client) = ControlPlane::with_controller(api::crds().expect("merging CRD versions"), role.rules(), watched, run).await?;
    cp.keep(conversion_server::serve(&cp).await);
    Some((cp, client))
}

/// Creates namespace `name`, unless the harness did (see `NAMESPACES`).
async fn namespace(client: &Client, name: &str) {
    let ns: corev1::Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let params = PatchParams::apply("envtest");
    Api::<corev1::Namespace>::all(client.clone()).patch(name, &params, &Patch::Apply(&ns)).await.unwrap();
}

/// The `Ready` condition of `name` once it has one: (status, reason, message).
async fn ready(apps: &Api<{{ r.type_name }}>, name: &str) -> Option<(String, String, String)> {
    let app = apps.get(name).await.unwrap();
    let status = app.status?;
    let ready = status.conditions.into_iter().find(|c| c.type_ == "Ready")?;
    Some((ready.status, ready.reason, ready.message))
}

/// Waits until `name`'s `Ready` condition has `status` and `reason`; returns its message.
async fn wait_ready(apps: &Api<{{ r.type_name }}>, name: &str, status: &str, reason: &str) -> String {
    eventually(&format!("{name} Ready={status} ({reason})"), || async {
        ready(apps, name).await.filter(|(s, r, _)| s == status && r == reason).map(|(_, _, m)| m)
    })
    .await
}

/// The Warning events with `reason` recorded for `name`, each with how often it was seen.
async fn warnings(client: &Client, namespace: &str, name: &str, reason: &str) -> Vec<i32> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let events = events.list(&Default::default()).await.unwrap().items;
    events
        .iter()
        .filter(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
        })
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .collect()
}

async fn warned(client: &Client, namespace: &str, name: &str, reason: &str) -> bool {
    !warnings(client, namespace, name, reason).await.is_empty()
}

/// Writes a Deployment's status as kube-controller-manager would.
async fn set_deployment_status(deployments: &Api<appsv1::Deployment>, name: &str, status: Value) {
    deployments.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status }))).await.unwrap();
}

fn sample(name: &str) -> {{ r.type_name }} {
    {{ r.type_name }}::new(name, {{ r.kind }}Spec { image: "nginx:latest".into(), replicas: 2, port: 80 })
}

fn container(d: &appsv1::Deployment) -> (Option<i32>, Option<String>, i32) {
    let spec = &d.spec;
    let c = &spec.template.spec.as_ref().unwrap().containers[0];
    (spec.replicas, c.image.clone(), c.ports.as_ref().unwrap()[0].container_port)
}

fn service_port(s: &corev1::Service) -> (i32, Option<i32>) {
    let port = &s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    (port.port, port.node_port)
}

#[tokio::test]
async fn {{ r.kind_snake }}_runs_as_a_deployment_and_a_service() {
    let Some((cp, client)) = start().await else { return };
    let apps: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "default");
    let deployments: Api<appsv1::Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<corev1::Service> = Api::namespaced(client.clone(), "default");

    let app = apps.create(&PostParams::default(), &sample("web")).await.unwrap();

    // Children appear in the object's own namespace, owned by it.
    let deployment = eventually("the Deployment", || async { deployments.get_opt("web-deployment").await.unwrap() }).await;
    assert_eq!(container(&deployment), (Some(2), Some("nginx:latest".into()), 80));
    let owner = &deployment.owner_references()[0];
    assert_eq!((owner.uid.as_str(), owner.controller), (app.uid().unwrap().as_str(), Some(true)));
    // The Pods are selected by the owner's uid under the kind's own prefix, not by a name
    // anyone allowed to create {{ r.kind }}s chooses.
    let selected = Some([("{{ r.crd_name }}/uid".to_string(), app.uid().unwrap())].into());
    assert_eq!(deployment.spec.selector.match_labels, selected);
    let service = eventually("the Service", || async { services.get_opt("web-service").await.unwrap() }).await;
    let spec = service.spec.clone().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("NodePort"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    assert_eq!(spec.selector, selected);
    let (port, node_port) = service_port(&service);
    assert_eq!(port, 80);
    assert!(node_port.is_some_and(|p| (30000..=32767).contains(&p)), "the API server allocates a node port");
    assert_eq!(service.owner_references()[0].uid, app.uid().unwrap());

    // Status is reported, then left alone: no loop on our own writes. A label another writer
    // adds to a child wakes a reconcile, which writes nothing: labels merge, so it is not drift.
    let settled = eventually("the status", || async {
        let app = apps.get("web").await.unwrap();
        app.status.as_ref().filter(|s| s.observed_generation == app.metadata.generation).map(|_| app.clone())
    })
    .await;
    let label = json!({"metadata": {"labels": {"team": "a"}}});
    let labelled = deployments.patch("web-deployment", &PatchParams::default(), &Patch::Merge(&label)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(apps.get("web").await.unwrap().resource_version(), settled.resource_version(), "status keeps changing");
    let after = deployments.get("web-deployment").await.unwrap();
    assert_eq!(after.resource_version(), labelled.resource_version(), "another writer's label taken as drift");
    the_api_server_limits_what_the_manager_changes_in_{{ r.plural }}(&cp, &settled, json!({"replicas": 5})).await;

    // A spec change reaches both children.
    let patch = json!({"spec": {"image": "nginx:1.27", "replicas": 3, "port": 8080}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
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
    apps.patch_scale("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 1}}))).await.unwrap();
    eventually("the scaled Deployment", || async {
        (container(&deployments.get("web-deployment").await.unwrap()).0 == Some(1)).then_some(())
    })
    .await;

    // A hand edit is set back, a deleted child comes back.
    deployments.patch("web-deployment", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 7}}))).await.unwrap();
    eventually("the replicas set back", || async {
        (container(&deployments.get("web-deployment").await.unwrap()).0 == Some(1)).then_some(())
    })
    .await;
    // A selector key someone adds would select none of the Pods: it is removed.
    services.patch("web-service", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"selector": {"v": "2"}}}))).await.unwrap();
    eventually("the selector set back", || async {
        (services.get("web-service").await.unwrap().spec.unwrap().selector == selected).then_some(())
    })
    .await;
    let old = services.get("web-service").await.unwrap().uid();
    services.delete("web-service", &DeleteParams::default()).await.unwrap();
    eventually("the Service recreated", || async {
        services.get_opt("web-service").await.unwrap().filter(|s| s.uid() != old)
    })
    .await;

    // Deletion runs the finalizer, which removes the children, then the object goes.
    apps.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("the {{ r.kind }} gone", || async { apps.get_opt("web").await.unwrap().is_none().then_some(()) }).await;
    assert!(deployments.get_opt("web-deployment").await.unwrap().is_none());
    assert!(services.get_opt("web-service").await.unwrap().is_none());

    a_refused_finalizer_shows_in_the_status(&client, &apps, sample("held")).await;
    rollout_is_judged_as_kubectl_rollout_status_does(&client).await;
}
{% include "_partials/envtest_finalizer_refused.rs" %}
{%- include "_partials/envtest_kind_writes.rs" %}

/// Ready only once the Deployment controller has seen the current spec and every replica is
/// updated and available; a stuck rollout shows the Deployment's own reason and message.
async fn rollout_is_judged_as_kubectl_rollout_status_does(client: &Client) {
    namespace(client, "rollout").await;
    let apps: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "rollout");
    let deployments: Api<appsv1::Deployment> = Api::namespaced(client.clone(), "rollout");
    apps.create(&PostParams::default(), &sample("roll")).await.unwrap();
    eventually("the Deployment", || async { deployments.get_opt("roll-deployment").await.unwrap() }).await;
    wait_ready(&apps, "roll", "False", "Progressing").await;

    let counts = |generation: i64, updated: i32, available: i32| {
        json!({"observedGeneration": generation, "replicas": 2, "updatedReplicas": updated,
               "readyReplicas": available, "availableReplicas": available})
    };
    set_deployment_status(&deployments, "roll-deployment", counts(1, 1, 1)).await;
    let message = wait_ready(&apps, "roll", "False", "Progressing").await;
    eventually("the rollout message", || async {
        ready(&apps, "roll").await.filter(|(_, _, m)| m.contains("1 of 2 new replicas")).map(|_| ())
    })
    .await;
    set_deployment_status(&deployments, "roll-deployment", counts(1, 2, 2)).await;
    wait_ready(&apps, "roll", "True", "RolloutComplete").await;
    assert_eq!(apps.get("roll").await.unwrap().status.unwrap().ready_replicas, 2, "{message}");

    // A new image: the old Pods are ready, but until the new spec is rolled out it is not.
    let patch = json!({"spec": {"image": "nginx:does-not-exist"}});
    apps.patch("roll", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    wait_ready(&apps, "roll", "False", "Progressing").await;
    let mut stuck = counts(2, 1, 2);
    stuck["replicas"] = json!(3);
    stuck["conditions"] = json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
        "message": "ReplicaSet \"roll-deployment-7d\" has timed out progressing."}]);
    set_deployment_status(&deployments, "roll-deployment", stuck).await;
    let message = wait_ready(&apps, "roll", "False", "ProgressDeadlineExceeded").await;
    assert!(message.contains("has timed out progressing"), "{message}");
}

/// Objects that hold a child's name but are not controlled by the {{ r.kind }} are left exactly
/// as they are, even when the {{ r.kind }} is deleted; the status and a Warning event say why.
#[tokio::test]
async fn {{ r.kind_snake }}_never_takes_over_what_it_does_not_control() {
    let Some((cp, client)) = start().await else { return };
    namespace(&client, "foreign").await;
    let apps: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "foreign");
    let deployments: Api<appsv1::Deployment> = Api::namespaced(client.clone(), "foreign");
    let services: Api<corev1::Service> = Api::namespaced(client.clone(), "foreign");
    let deployment: appsv1::Deployment = serde_json::from_value(json!({
        "metadata": {"name": "x-deployment"},
        "spec": {"selector": {"matchLabels": {"app": "other"}}, "template": {"metadata": {"labels": {"app": "other"}},
            "spec": {"containers": [{"name": "other", "image": "busybox"}]}}}
    }))
    .unwrap();
    // Someone else's Service, of the name a child of {{ r.kind }} `owner` would have, with the
    // label the manager's watch selects by (anyone may set it): not the manager's all the same.
    let foreign_service = |owner: &str| -> corev1::Service {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{owner}-service"), "labels": {"app.kubernetes.io/managed-by": {{ project.crate_name }}::MANAGER}},
            "spec": {"selector": {"app": "other"}, "ports": [{"port": 9090}]}
        }))
        .unwrap()
    };
    let deployment = deployments.create(&PostParams::default(), &deployment).await.unwrap();
    let service = services.create(&PostParams::default(), &foreign_service("x")).await.unwrap();

    apps.create(&PostParams::default(), &sample("x")).await.unwrap();
    let message = wait_ready(&apps, "x", "False", "ChildConflict").await;
    assert!(message.contains("Deployment x-deployment"), "the Deployment's conflict comes first: {message}");
    eventually("a ChildConflict Warning event", || async {
        warned(&client, "foreign", "x", "ChildConflict").await.then_some(())
    })
    .await;
    // Retried (1 s, 2 s, ...) but announced once, and the status stays as it is.
    let written = apps.get("x").await.unwrap().resource_version();
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert_eq!(warnings(&client, "foreign", "x", "ChildConflict").await, [1], "one Warning, seen once");
    assert_eq!(apps.get("x").await.unwrap().resource_version(), written, "the status was written again");
    let unchanged = || async {
        let d = deployments.get("x-deployment").await.unwrap();
        let s = services.get("x-service").await.unwrap();
        assert_eq!(d.resource_version(), deployment.resource_version(), "the foreign Deployment was changed");
        assert_eq!(s.resource_version(), service.resource_version(), "the foreign Service was changed");
    };
    unchanged().await;

    apps.delete("x", &DeleteParams::default()).await.unwrap();
    eventually("the {{ r.kind }} gone", || async { apps.get_opt("x").await.unwrap().is_none().then_some(()) }).await;
    unchanged().await;

    // A foreign Service alone: the {{ r.kind }} makes its Deployment and names the Service (the
    // manager's role must let it read a Service its create found taken).
    let lone = services.create(&PostParams::default(), &foreign_service("y")).await.unwrap();
    apps.create(&PostParams::default(), &sample("y")).await.unwrap();
    let message = wait_ready(&apps, "y", "False", "ChildConflict").await;
    assert!(message.contains("Service y-service exists"), "{message}");
    eventually("y's own Deployment", || async { deployments.get_opt("y-deployment").await.unwrap() }).await;
    assert_eq!(services.get("y-service").await.unwrap().resource_version(), lone.resource_version());

    the_api_server_limits_what_the_manager_writes(&cp, &client, &apps.get("y").await.unwrap()).await;
    a_refused_child_shows_in_the_status_until_it_is_allowed(&client).await;
}

/// Whatever the controller's code does, the API server lets the manager's ServiceAccount write
/// only children a kind of the project controls, selecting their owner's Pods alone and
/// without privileges (config/policy, installed by the harness as config/default does):
/// tried with dry runs of what the controller would write for `owner`, each changed in one way.
async fn the_api_server_limits_what_the_manager_writes(cp: &ControlPlane, admin: &Client, owner: &{{ r.type_name }}) {
    let manager = cp.manager_client().await;
    let deployments: Api<appsv1::Deployment> = Api::namespaced(manager.clone(), "foreign");
    let services: Api<corev1::Service> = Api::namespaced(manager, "foreign");
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    let refused = |what: &str, because: &str, result: Result<(), kube::Error>| match result {
        Err(kube::Error::Api(status)) => {
            assert!(status.code == 403 && status.message.contains(because), "{what}: {} {}", status.code, status.message)
        }
        other => panic!("{what}: not refused by the policy: {other:?}"),
    };
    let deployment = |change: &dyn Fn(&mut appsv1::Deployment)| {
        let mut d = controller::deployment(owner).unwrap();
        d.metadata.name = Some("extra".into());
        change(&mut d);
        d
    };
    let service = |change: &dyn Fn(&mut corev1::Service)| {
        let mut s = controller::service(owner).unwrap();
        s.metadata.name = Some("extra".into());
        change(&mut s);
        s
    };
    fn pod(d: &mut appsv1::Deployment) -> &mut corev1::PodSpec {
        d.spec.template.spec.as_mut().unwrap()
    }
    deployments.create(&dry_run, &deployment(&|_| {})).await.expect("a child as the controller makes it");
    services.create(&dry_run, &service(&|_| {})).await.expect("a child as the controller makes it");

    let deleting = deployments.delete("x-deployment", &DeleteParams { dry_run: true, ..DeleteParams::default() }).await;
    refused("deleting someone else's Deployment", "controls", deleting.map(|_| ()));
    let unowned = deployment(&|d| d.metadata.owner_references = None);
    refused("a Deployment nobody controls", "controls", deployments.create(&dry_run, &unowned).await.map(|_| ()));
    let other_owner = deployment(&|d| {
        let owner = &mut d.metadata.owner_references.as_mut().unwrap()[0];
        (owner.api_version, owner.kind, owner.block_owner_deletion) = ("apps/v1".into(), "ReplicaSet".into(), None);
    });
    refused("a Deployment a ReplicaSet controls", "controls", deployments.create(&dry_run, &other_owner).await.map(|_| ()));
    let others_pods = deployment(&|d| {
        let other = std::collections::BTreeMap::from([("app".to_string(), "other".to_string())]);
        d.spec.selector.match_labels = Some(other.clone());
        d.spec.template.metadata.as_mut().unwrap().labels = Some(other);
    });
    refused("a Deployment of other Pods", "select", deployments.create(&dry_run, &others_pods).await.map(|_| ()));
    // Its own Pods, labelled also as someone else's: behind that one's Service.
    let behind_others = deployment(&|d| {
        let labels = d.spec.template.metadata.as_mut().unwrap().labels.as_mut().unwrap();
        labels.insert("app".into(), "payments".into());
    });
    refused("Pods labelled as someone else's", "no label but", deployments.create(&dry_run, &behind_others).await.map(|_| ()));
    let host_network = deployment(&|d| pod(d).host_network = Some(true));
    refused("a Pod on the host network", "host namespace", deployments.create(&dry_run, &host_network).await.map(|_| ()));
    let account = deployment(&|d| pod(d).service_account_name = Some("admin".into()));
    refused("a Pod with a ServiceAccount", "ServiceAccount", deployments.create(&dry_run, &account).await.map(|_| ()));
    let token = deployment(&|d| pod(d).automount_service_account_token = None);
    refused("a Pod with a token", "ServiceAccount", deployments.create(&dry_run, &token).await.map(|_| ()));
    let volume = deployment(&|d| {
        pod(d).volumes = Some(vec![serde_json::from_value(json!({"name": "root", "hostPath": {"path": "/"}})).unwrap()]);
    });
    refused("a Pod with a volume", "volume", deployments.create(&dry_run, &volume).await.map(|_| ()));
    let privileged = deployment(&|d| {
        let security = pod(d).containers[0].security_context.as_mut().unwrap();
        // The API server itself refuses privileged without privilege escalation.
        (security.privileged, security.allow_privilege_escalation) = (Some(true), None);
    });
    refused("a privileged container", "privilege", deployments.create(&dry_run, &privileged).await.map(|_| ()));
    let unconfined = deployment(&|d| {
        let security = pod(d).containers[0].security_context.as_mut().unwrap();
        security.seccomp_profile.as_mut().unwrap().type_ = "Unconfined".into();
    });
    refused("an unconfined container", "security profile", deployments.create(&dry_run, &unconfined).await.map(|_| ()));
    let raw_sockets = deployment(&|d| pod(d).containers[0].security_context.as_mut().unwrap().capabilities = None);
    refused("a container with raw sockets", "NET_RAW", deployments.create(&dry_run, &raw_sockets).await.map(|_| ()));
    let secret_reader = deployment(&|d| {
        let from = serde_json::from_value(json!([{"secretRef": {"name": "database"}}])).unwrap();
        pod(d).containers[0].env_from = Some(from);
    });
    refused("a container reading a Secret", "no Secret", deployments.create(&dry_run, &secret_reader).await.map(|_| ()));
    let secret_key = deployment(&|d| {
        let env = json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "database", "key": "password"}}}]);
        pod(d).containers[0].env = Some(serde_json::from_value(env).unwrap());
    });
    refused("a container reading a Secret's key", "no Secret", deployments.create(&dry_run, &secret_key).await.map(|_| ()));
    let metadata = deployment(&|d| {
        let probe = json!({"httpGet": {"host": "169.254.169.254", "path": "/latest/meta-data/", "port": 80}});
        pod(d).containers[0].readiness_probe = Some(serde_json::from_value(probe).unwrap());
    });
    refused("a probe the node sends elsewhere", "no host but", deployments.create(&dry_run, &metadata).await.map(|_| ()));
    let hook = deployment(&|d| {
        let hook = json!({"preStop": {"tcpSocket": {"host": "10.0.0.1", "port": 2379}}});
        pod(d).containers[0].lifecycle = Some(serde_json::from_value(hook).unwrap());
    });
    refused("a hook the node sends elsewhere", "no host but", deployments.create(&dry_run, &hook).await.map(|_| ()));
    let control_plane = deployment(&|d| {
        pod(d).node_name = Some("control-plane".into());
        pod(d).tolerations = Some(vec![corev1::Toleration { operator: Some("Exists".into()), ..Default::default() }]);
    });
    refused("a Pod on a node of its choice", "choose no node", deployments.create(&dry_run, &control_plane).await.map(|_| ()));
    // Control-plane nodes that carry no taint (k3s servers, single-node clusters) are chosen
    // without a toleration.
    let control_plane_label = || [("node-role.kubernetes.io/control-plane".to_string(), String::new())].into();
    let selected = deployment(&|d| pod(d).node_selector = Some(control_plane_label()));
    refused("a Pod on the nodes it selects", "choose no node", deployments.create(&dry_run, &selected).await.map(|_| ()));
    let affinity = deployment(&|d| {
        let term = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}]}}});
        pod(d).affinity = Some(serde_json::from_value(term).unwrap());
    });
    refused("a Pod with a node affinity", "choose no node", deployments.create(&dry_run, &affinity).await.map(|_| ()));
    let scheduler = deployment(&|d| pod(d).scheduler_name = Some("any-node".into()));
    refused("a Pod placed by another scheduler", "choose no node", deployments.create(&dry_run, &scheduler).await.map(|_| ()));
    let spread = deployment(&|d| {
        let constraint = json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]);
        pod(d).topology_spread_constraints = Some(serde_json::from_value(constraint).unwrap());
    });
    refused("a Pod with a spread constraint", "choose no node", deployments.create(&dry_run, &spread).await.map(|_| ()));
    let pull_secret = deployment(&|d| pod(d).image_pull_secrets = Some(vec![corev1::LocalObjectReference { name: "registry".into() }]));
    refused("a Pod pulling with a Secret", "no Secret", deployments.create(&dry_run, &pull_secret).await.map(|_| ()));
    let sysctl = deployment(&|d| {
        let sysctl = corev1::Sysctl { name: "net.ipv4.ip_unprivileged_port_start".into(), value: "0".into() };
        pod(d).security_context = Some(corev1::PodSecurityContext { sysctls: Some(vec![sysctl]), ..Default::default() });
    });
    refused("a Pod with a sysctl", "sysctl", deployments.create(&dry_run, &sysctl).await.map(|_| ()));

    let load_balancer = service(&|s| s.spec.as_mut().unwrap().type_ = Some("LoadBalancer".into()));
    refused("a LoadBalancer Service", "ClusterIP or NodePort", services.create(&dry_run, &load_balancer).await.map(|_| ()));
    let external = service(&|s| s.spec.as_mut().unwrap().external_ips = Some(vec!["10.0.0.1".into()]));
    refused("a Service with externalIPs", "externalIPs", services.create(&dry_run, &external).await.map(|_| ()));
    let others = service(&|s| s.spec.as_mut().unwrap().selector = Some([("app".to_string(), "other".to_string())].into()));
    refused("a Service of other Pods", "select", services.create(&dry_run, &others).await.map(|_| ()));

    // Someone else's Service given an owner of the kind and the owner's selector passes every
    // rule on the object as written; the owner it had before decides.
    let taken = service(&|_| {});
    let take_over = json!({
        "metadata": {"ownerReferences": taken.metadata.owner_references},
        "spec": {"selector": taken.spec.as_ref().unwrap().selector},
    });
    let patch = PatchParams { dry_run: true, ..PatchParams::default() };
    let patched = services.patch("x-service", &patch, &Patch::Merge(&take_over)).await;
    refused("someone else's Service taken over", "already controls", patched.map(|_| ()));

    // A toleration someone else gave the owner's Deployment stays theirs: the manager still
    // updates it, and adds nothing of the kind itself.
    let toleration = json!({"spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}});
    let owned = format!("{}-deployment", owner.name_any());
    let theirs: Api<appsv1::Deployment> = Api::namespaced(admin.clone(), "foreign");
    theirs.patch(&owned, &PatchParams::default(), &Patch::Merge(&toleration)).await.unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": format!("{}-container", owner.name_any()), "image": "nginx:1.27"}]}}}});
    deployments.patch(&owned, &patch, &Patch::Strategic(&image)).await.expect("an update leaving their toleration");
    let selector = json!({"spec": {"template": {"spec": {"nodeSelector": {"disktype": "ssd"}, "imagePullSecrets": [{"name": "registry"}]}}}});
    theirs.patch(&owned, &PatchParams::default(), &Patch::Merge(&selector)).await.unwrap();
    deployments.patch(&owned, &patch, &Patch::Strategic(&image)).await.expect("an update leaving their node selector and pull Secret");
    // So does an init container someone else added: it is judged only when an update changes it.
    let init = |image: &str| json!({"spec": {"template": {"spec": {"initContainers": [{"name": "setup", "image": image}]}}}});
    theirs.patch(&owned, &PatchParams::default(), &Patch::Merge(&init("busybox"))).await.unwrap();
    deployments.patch(&owned, &patch, &Patch::Strategic(&image)).await.expect("an update leaving their init container");
    let patched = deployments.patch(&owned, &patch, &Patch::Strategic(&init("busybox:1.37"))).await;
    refused("an init container changed", "no privilege", patched.map(|_| ()));
    let priority = json!({"spec": {"template": {"spec": {"priorityClassName": "system-node-critical"}}}});
    let patched = deployments.patch(&owned, &patch, &Patch::Merge(&priority)).await;
    refused("a priority class added", "choose no node", patched.map(|_| ()));
}

/// With kube-controller-manager's Deployment, ReplicaSet and quota controllers, as a cluster
/// runs them (no scheduler or kubelet here: Pods are made but never run): Pods the ReplicaSet
/// may not create show as the Deployment's ReplicaFailure, with the API server's message; once
/// they may, Ready stays False while none of them is available.
#[tokio::test]
async fn {{ r.kind_snake }}_status_follows_the_real_deployment_controller() {
    let Some((mut cp, client)) = start().await else { return };
    let controllers = ["deployment-controller", "replicaset-controller", "resourcequota-controller"];
    if !cp.start_controller_manager_if_present(&controllers).expect("starting kube-controller-manager") {
        return;
    }
    namespace(&client, "pods").await;
    let quotas: Api<corev1::ResourceQuota> = Api::namespaced(client.clone(), "pods");
    let quota: corev1::ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}})).unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    eventually("the quota's usage computed", || async {
        quotas.get("no-pods").await.unwrap().status.and_then(|s| s.used).filter(|used| used.contains_key("pods"))
    })
    .await;

    let apps: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "pods");
    apps.create(&PostParams::default(), &sample("p")).await.unwrap();
    let message = wait_ready(&apps, "p", "False", "FailedCreate").await;
    assert!(message.contains("exceeded quota: no-pods"), "{message}");

    quotas.delete("no-pods", &DeleteParams::default()).await.unwrap();
    // The failure is taken away at once, then the rollout's progress follows.
    eventually("p's Pods made, not yet available", || async {
        ready(&apps, "p").await.filter(|(_, reason, message)| {
            reason == "Progressing" && message == "0 of 2 updated replicas are available"
        })
    })
    .await;
}

/// A failure the API server reports (here a ResourceQuota of zero Services) turns Ready False
/// with its message and a Warning event; once the quota is lifted the {{ r.kind }} converges.
async fn a_refused_child_shows_in_the_status_until_it_is_allowed(client: &Client) {
    namespace(client, "quota").await;
    let quotas: Api<corev1::ResourceQuota> = Api::namespaced(client.clone(), "quota");
    let quota: corev1::ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "no-services"}, "spec": {"hard": {"services": "0"}}})).unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    // No kube-controller-manager computes its usage here: write it as the quota controller would.
    let usage = json!({"status": {"hard": {"services": "0"}, "used": {"services": "0"}}});
    quotas.patch_status("no-services", &PatchParams::default(), &Patch::Merge(&usage)).await.unwrap();

    let apps: Api<{{ r.type_name }}> = Api::namespaced(client.clone(), "quota");
    apps.create(&PostParams::default(), &sample("q")).await.unwrap();
    let message = wait_ready(&apps, "q", "False", "ReconcileError").await;
    assert!(message.contains("exceeded quota"), "{message}");
    eventually("a ReconcileError Warning event", || async {
        warned(client, "quota", "q", "ReconcileError").await.then_some(())
    })
    .await;

    quotas.delete("no-services", &DeleteParams::default()).await.unwrap();
    let services: Api<corev1::Service> = Api::namespaced(client.clone(), "quota");
    eventually("the Service once allowed", || async { services.get_opt("q-service").await.unwrap() }).await;
    wait_ready(&apps, "q", "False", "Progressing").await;
}

#[tokio::test]
async fn invalid_{{ r.plural }}_are_rejected_by_the_api_server() {
    let Some((_cp, client)) = start().await else { return };
    // Untyped, so that the requests carry exactly what a user could write in YAML.
    let resource = ApiResource::erase::<{{ r.type_name }}>(&());
    let raw: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let object = |name: &str, spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "{{ r.api_version }}", "kind": "{{ r.kind }}", "metadata": {"name": name}, "spec": spec
        }))
        .unwrap()
    };
    let too_long = "a".repeat(54);
    for (name, spec) in [
        ("port-zero", json!({"image": "nginx", "replicas": 1, "port": 0})),
        ("port-too-big", json!({"image": "nginx", "replicas": 1, "port": 65536})),
        ("negative-replicas", json!({"image": "nginx", "replicas": -1, "port": 80})),
        ("empty-image", json!({"image": "", "replicas": 1, "port": 80})),
        ("no-image", json!({"replicas": 1, "port": 80})),
        // Names the children could not carry: <name>-container must be a 63-character DNS label.
        (too_long.as_str(), json!({"image": "nginx"})),
        ("9lives", json!({"image": "nginx"})),
        ("with.dot", json!({"image": "nginx"})),
    ] {
        let bad_name = spec == json!({"image": "nginx"});
        match raw.create(&PostParams::default(), &object(name, spec)).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}: {}", status.message);
                assert!(!bad_name || status.message.contains("at most 53 characters"), "{name}: {}", status.message);
            }
            other => panic!("{name} was not rejected: {other:?}"),
        }
    }
    let longest = "a".repeat(53);
    raw.create(&PostParams::default(), &object(&longest, json!({"image": "nginx"}))).await.unwrap();
    // The API server fills in what the user leaves out: read untyped, as stored, since the
    // typed spec would get the same values from serde's own defaults.
    raw.create(&PostParams::default(), &object("defaults", json!({"image": "nginx"}))).await.unwrap();
    let stored = raw.get("defaults").await.unwrap();
    assert_eq!((&stored.data["spec"]["replicas"], &stored.data["spec"]["port"]), (&json!(1), &json!(80)));
}
