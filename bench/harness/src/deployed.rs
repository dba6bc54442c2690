//! `--deployed=DIR`: the operator run as `make deploy` runs it, not as `make run` does. The
//! project's config/default (DIR) is applied but its Deployment (no kubelet runs it here): the
//! manager's ServiceAccount, its roles and the ValidatingAdmissionPolicies limiting its
//! writes. The manager process then gets a kubeconfig holding that ServiceAccount's token, so
//! the API server authorizes each of its requests with the generated RBAC and evaluates the
//! policies on each of its writes, as in a cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ListParams, PostParams};
use kube::config::Kubeconfig;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::Error;

/// The manager's ServiceAccount: the one config/default names `<prefix>controller-manager`.
const ACCOUNT_SUFFIX: &str = "controller-manager";
/// Long enough for the slowest run (its settle and steady window included).
const TOKEN_SECONDS: i64 = 3 * 3600;

/// Applies `config_default` (a kustomize directory) but its Deployments, waits until the
/// policies are enforced, and returns a kubeconfig (written under `logs`) that authenticates
/// as the manager's ServiceAccount.
pub async fn install(
    assets: &Path,
    admin_kubeconfig: &Path,
    config_default: &Path,
    client: &Client,
    logs: &Path,
) -> Result<PathBuf, Error> {
    let kubectl = assets.join("kubectl");
    let built = Command::new(&kubectl)
        .args(["kustomize", &config_default.display().to_string()])
        .output()?;
    succeeded(&built, "kubectl kustomize", config_default)?;
    let mut apply = Command::new(&kubectl)
        .args(["apply", "--server-side", "-f", "-"])
        .env("KUBECONFIG", admin_kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    use std::io::Write as _;
    apply
        .stdin
        .take()
        .ok_or("kubectl apply: no stdin")?
        .write_all(&built.stdout)?;
    succeeded(&apply.wait_with_output()?, "kubectl apply", config_default)?;
    let account = manager_account(client).await?;
    let namespace = account.namespace().unwrap_or_default();
    // The manager's own Deployment would never run here; the harness runs its binary instead.
    let deployments = Api::<Deployment>::namespaced(client.clone(), &namespace);
    deployments
        .delete_collection(&Default::default(), &ListParams::default())
        .await?;
    let token = token(client, &namespace, &account.name_any()).await?;
    let kubeconfig = logs.join("manager-kubeconfig.json");
    write_kubeconfig(admin_kubeconfig, &token, &kubeconfig)?;
    policies_enforced(&kubeconfig).await?;
    Ok(kubeconfig)
}

/// An error naming `what` ran on `dir` and what it printed, unless `output` is a success.
fn succeeded(output: &std::process::Output, what: &str, dir: &Path) -> Result<(), Error> {
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!("{what} {}: {stderr}", dir.display()).into())
}

async fn manager_account(client: &Client) -> Result<ServiceAccount, Error> {
    let accounts = Api::<ServiceAccount>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    accounts
        .items
        .into_iter()
        .find(|a| a.name_any().ends_with(ACCOUNT_SUFFIX))
        .ok_or_else(|| format!("config/default made no ServiceAccount *{ACCOUNT_SUFFIX}").into())
}

async fn token(client: &Client, namespace: &str, account: &str) -> Result<String, Error> {
    let request: TokenRequest = serde_json::from_value(json!({
        "spec": {"audiences": [], "expirationSeconds": TOKEN_SECONDS}
    }))?;
    let issued: TokenRequest = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create_subresource("token", account, &PostParams::default(), &request)
        .await?;
    let status = issued.status.ok_or("a TokenRequest without status")?;
    Ok(status.token.ok_or("a TokenRequest without a token")?)
}

/// The admin kubeconfig's cluster, with the manager's token as the only user.
fn write_kubeconfig(admin: &Path, token: &str, to: &Path) -> Result<(), Error> {
    let admin = Kubeconfig::read_from(admin)?;
    let cluster = admin
        .clusters
        .first()
        .and_then(|c| c.cluster.clone())
        .ok_or("the control plane's kubeconfig names no cluster")?;
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": cluster}],
        "users": [{"name": "manager", "user": {"token": token}}],
        "contexts": [{"name": "manager", "context": {"cluster": "bench", "user": "manager"}}],
        "current-context": "manager",
    });
    std::fs::write(to, serde_json::to_vec_pretty(&config)?)?;
    Ok(())
}

/// Until the API server enforces the policies on the manager's writes (the generated envtest
/// harness's probe: a Deployment none of its kinds controls, refused to the manager).
async fn policies_enforced(kubeconfig: &Path) -> Result<(), Error> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    crate::envtest::policy_enforced(&Client::try_from(config)?, "default").await
}
