//! A client that acts as the manager's ServiceAccount, bound to the project's own ClusterRole
//! (`config/rbac/role.yaml`), so that suites run the controllers the way a cluster runs them:
//! a verb missing from the role fails the suite instead of shipping.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::Error;

/// The ServiceAccount the suites' controllers run as.
const ACCOUNT: &str = "controller-manager";
const NAMESPACE: &str = "default";

/// Creates the ServiceAccount, binds it to `role`, and returns a client holding a token for
/// it, talking to the API server of the admin `kubeconfig`.
pub async fn service_account_client(
    admin: &Client,
    kubeconfig: &serde_json::Value,
    role: &ClusterRole,
) -> Result<Client, Error> {
    let params = PatchParams::apply("envtest").force();
    Api::<ClusterRole>::all(admin.clone())
        .patch(&role.name_any(), &params, &Patch::Apply(role))
        .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), NAMESPACE);
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": ACCOUNT}}))?;
    accounts
        .patch(ACCOUNT, &params, &Patch::Apply(&account))
        .await?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("envtest-{}", role.name_any())},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.name_any()},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    }))?;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(&binding.name_any(), &params, &Patch::Apply(&binding))
        .await?;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))?;
    let token = accounts
        .create_token_request(ACCOUNT, &PostParams::default(), &request)
        .await?
        .status
        .ok_or("the TokenRequest has no status")?
        .token;
    let mut kubeconfig = kubeconfig.clone();
    kubeconfig["users"][0]["user"] = serde_json::json!({ "token": token });
    let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}
