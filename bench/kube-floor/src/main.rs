//! A kube-rs controller with nothing of its own: the floor of a kube-rs operator's build.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::{Controller, controller::Action, watcher};
use kube::{Api, Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "minetto.dev",
    version = "v1alpha1",
    kind = "Application",
    namespaced
)]
pub struct ApplicationSpec {
    image: String,
    replicas: i32,
    port: i32,
}

async fn reconcile(_app: Arc<Application>, _client: Arc<Client>) -> Result<Action, kube::Error> {
    Ok(Action::await_change())
}

fn error_policy(_app: Arc<Application>, _err: &kube::Error, _client: Arc<Client>) -> Action {
    Action::await_change()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), kube::Error> {
    let client = Client::try_default().await?;
    let apps: Api<Application> = Api::all(client.clone());
    let deployments: Api<Deployment> = Api::all(client.clone());
    Controller::new(apps, watcher::Config::default())
        .owns(deployments, watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
    Ok(())
}
