//! What the harness creates: one namespace `app-NNNN` per Application, and the Applications.

use std::future::Future;

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use crate::Error;
use crate::args::{Args, Flavor};

/// How many creates the harness keeps in flight.
pub const CREATE_CONCURRENCY: usize = 32;
/// The port every Application asks for, and its children's.
pub const PORT: i32 = 80;

/// The namespaces, one per Application: `app-0000` .. `app-NNNN`.
pub fn app_names(apps: usize) -> Vec<String> {
    (0..apps).map(|i| format!("app-{i:04}")).collect()
}

/// Sends `request(name)` for every name, `in_flight` at a time; stops at the first error.
pub async fn for_each_name<'a, F, Fut>(
    names: &'a [String],
    in_flight: usize,
    request: F,
) -> Result<(), Error>
where
    F: FnMut(&'a String) -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    stream::iter(names)
        .map(request)
        .buffer_unordered(in_flight)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// The namespaces `names`, 32 requests in flight.
pub async fn create_namespaces(client: &Client, names: &[String]) -> Result<(), Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for_each_name(names, CREATE_CONCURRENCY, |name| {
        let api = namespaces.clone();
        async move {
            let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
            api.create(&PostParams::default(), &ns).await?;
            Ok(())
        }
    })
    .await
}

/// One Application per namespace, named like it, 32 requests in flight; its spec in the
/// operator's own terms (opsdk's image, replicas and port; kubebuilder's size and port).
pub async fn create_applications(
    client: &Client,
    args: &Args,
    names: &[String],
) -> Result<(), Error> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&args.group, "v1alpha1", "Application"),
        "applications",
    );
    let api_version = format!("{}/v1alpha1", args.group);
    for_each_name(names, CREATE_CONCURRENCY, |name| {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), name, &resource);
        let spec = match args.flavor {
            Flavor::Opsdk => json!({"image": args.image, "replicas": 1, "port": PORT}),
            Flavor::Kubebuilder => json!({"size": 1, "containerPort": PORT}),
            Flavor::Floor => unreachable!("the floor runs no operator"),
        };
        let obj = json!({
            "apiVersion": api_version,
            "kind": "Application",
            "metadata": {"name": name, "namespace": name},
            "spec": spec,
        });
        async move {
            let obj: DynamicObject = serde_json::from_value(obj)?;
            api.create(&PostParams::default(), &obj).await?;
            Ok(())
        }
    })
    .await
}
