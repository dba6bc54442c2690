//! Waiting on a live API server: CRDs that become established, state that converges.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};

use super::Error;

/// How long anything may take to converge before a test gives up.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Applies `crds` and waits until the API server serves each of them.
pub async fn install_crds(
    client: &Client,
    crds: Vec<CustomResourceDefinition>,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("envtest").force();
    for crd in &crds {
        api.patch(&crd.name_any(), &params, &Patch::Apply(crd))
            .await?;
    }
    for crd in &crds {
        let name = crd.name_any();
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(TIMEOUT, established)
            .await
            .map_err(|_| format!("CRD {name} not established"))??;
    }
    Ok(())
}

/// Polls `probe` until it returns `Some`, panicking after `TIMEOUT` with `what` in the message.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {TIMEOUT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
