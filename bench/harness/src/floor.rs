//! The API server's own floor for what the operators do: no operator at all, the harness
//! server-side applies one Deployment per namespace (shaped like opsdk's), then one NodePort
//! Service per namespace, 32 requests in flight, on the same kind of fresh control plane.
//! No operator can converge faster than the API server creates its children. Then as many
//! Services again, one request at a time: Service creation does not scale with concurrency.

use std::path::Path;
use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::Error;
use crate::args::Args;
use crate::control_plane;
use crate::report::round;
use crate::workload::{CREATE_CONCURRENCY, PORT, app_names, create_namespaces, for_each_name};

pub async fn floor(args: &Args, _assets: &Path) -> Result<Value, Error> {
    let (_cp, client) = control_plane::start().await?;
    let names = app_names(args.apps);
    create_namespaces(&client, &names).await?;

    let labels = |name: &str| json!({"app": name});
    let deployments = apply_all::<Deployment>(&client, &names, CREATE_CONCURRENCY, |name| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("{name}-deployment"), "labels": labels(name)},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels(name)},
                "template": {
                    "metadata": {"labels": labels(name)},
                    "spec": {"containers": [{
                        "name": format!("{name}-container"),
                        "image": args.image,
                        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
                    }]},
                },
            },
        })
    })
    .await?;
    let service = |suffix: &str, name: &str| {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{name}-{suffix}"), "labels": labels(name)},
            "spec": {
                "type": "NodePort",
                "externalTrafficPolicy": "Local",
                "selector": labels(name),
                "ports": [{"name": "http", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
            },
        })
    };
    let services = apply_all::<Service>(&client, &names, CREATE_CONCURRENCY, |name| {
        service("service", name)
    })
    .await?;
    let serial_services =
        apply_all::<Service>(&client, &names, 1, |name| service("serial-service", name)).await?;
    Ok(json!({
        "apps": args.apps,
        "in_flight": CREATE_CONCURRENCY,
        "deployments_s": round(deployments, 2),
        "nodeport_services_s": round(services, 2),
        // Both children of every Application: the least an operator that makes both can take.
        "deployments_plus_nodeport_services_s": round(deployments + services, 2),
        "nodeport_services_one_at_a_time_s": round(serial_services, 2),
    }))
}

/// Server-side applies `object(name)` in namespace `name` for every name, `in_flight` at a
/// time; the seconds it took.
async fn apply_all<K>(
    client: &kube::Client,
    names: &[String],
    in_flight: usize,
    object: impl Fn(&str) -> Value,
) -> Result<f64, Error>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + DeserializeOwned,
{
    let params = PatchParams::apply(control_plane::USER_AGENT).force();
    let start = Instant::now();
    for_each_name(names, in_flight, |name| {
        let api: Api<K> = Api::namespaced(client.clone(), name);
        let (params, body) = (&params, object(name));
        async move {
            let child_name = body["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            api.patch(&child_name, params, &Patch::Apply(&body)).await?;
            Ok(())
        }
    })
    .await?;
    Ok(start.elapsed().as_secs_f64())
}
