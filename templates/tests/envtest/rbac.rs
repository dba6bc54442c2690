//! A client that acts as the manager's ServiceAccount, granted the project's own rules
//! (`controller::role()`, as in `config/rbac/role.yaml`): in a ClusterRole for a cluster-wide
//! manager, in a Role bound in each watched namespace for a namespace-scoped one. Suites run
//! the controllers the way a cluster runs them: a verb missing from the role fails the suite
//! instead of shipping. The project's admission policies on the manager's own writes
//! (config/policy: on its kinds and on Deployments and Services, those it has) are bound to
//! that ServiceAccount too, and the client names itself as the manager does (User-Agent).

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::Error;

/// The ServiceAccount the suites' controllers run as.
pub const ACCOUNT: &str = "controller-manager";
pub const NAMESPACE: &str = "default";
/// The manager's role and its binding, as in config/rbac.
const ROLE: &str = "manager-role";
const BINDING: &str = "envtest-manager-role";

/// Creates the ServiceAccount, grants it `rules` (in every namespace when `namespaces` is
/// empty, else in each of them), and returns a client holding a token for it, talking to the
/// API server of the admin `kubeconfig`.
pub async fn service_account_client(
    admin: &Client,
    kubeconfig: &serde_json::Value,
    rules: &[PolicyRule],
    namespaces: &[&str],
) -> Result<Client, Error> {
    ensure_account(admin, NAMESPACE).await?;
    grant(admin, rules, namespaces).await?;
    let account = token_client(admin, kubeconfig, NAMESPACE).await?;
    install_policies(
        admin,
        &account,
        namespaces.first().copied().unwrap_or("default"),
    )
    .await?;
    Ok(account)
}

/// The policies of config/policy on the manager's writes, each with its binding: on the
/// project's kinds, then on Deployments and Services, which `install_policies` probes last.
const POLICIES: [&str; 2] = ["manager_kind_policy", "manager_writes_policy"];

/// Installs the project's admission policies on the manager's writes, those it has, for the
/// suites' ServiceAccount, and waits until the API server enforces the one on Deployments:
/// `account` (a client of that ServiceAccount) is refused a Deployment no kind of the project
/// controls in `namespace`. The API server reads policies and bindings in the order they were
/// written, so the ones written before it are enforced by then too.
async fn install_policies(admin: &Client, account: &Client, namespace: &str) -> Result<(), Error> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/policy");
    for name in POLICIES {
        if root.join(format!("{name}.yaml")).exists() {
            install_policy(
                admin,
                name,
                &format!("system:serviceaccount:{NAMESPACE}:{ACCOUNT}"),
            )
            .await?;
        }
    }
    if !root.join("manager_writes_policy.yaml").exists() {
        return Ok(());
    }
    policy_enforced(account, namespace).await
}

/// Waits until the API server enforces the policy on the manager's Deployments: `account` (a
/// client of the manager's ServiceAccount) is refused a Deployment no kind of the project
/// controls in `namespace` (a dry run).
pub async fn policy_enforced(account: &Client, namespace: &str) -> Result<(), Error> {
    let probe: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "envtest-policy-probe"},
        "spec": {"selector": {"matchLabels": {"probe": "policy"}}, "template": {
            "metadata": {"labels": {"probe": "policy"}},
            "spec": {"containers": [{"name": "probe", "image": "probe"}]}}}
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let deployments: Api<Deployment> = Api::namespaced(account.clone(), namespace);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match deployments.create(&dry_run, &probe).await {
            Err(kube::Error::Api(status))
                if status.message.contains("ValidatingAdmissionPolicy") =>
            {
                return Ok(());
            }
            outcome if Instant::now() > deadline => {
                return Err(format!(
                    "the policy on Deployments is not enforced after 30 s: {outcome:?}"
                )
                .into());
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Creates the ServiceAccount when missing.
pub async fn ensure_account(admin: &Client, namespace: &str) -> Result<(), Error> {
    let params = PatchParams::apply("envtest").force();
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": ACCOUNT}}))?;
    accounts
        .patch(ACCOUNT, &params, &Patch::Apply(&account))
        .await?;
    Ok(())
}

/// A client holding a token of the ServiceAccount (made by `service_account_client`).
pub async fn token_client(
    admin: &Client,
    kubeconfig: &serde_json::Value,
    namespace: &str,
) -> Result<Client, Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
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
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    // Named as the manager names itself (`api_client::with_user_agent`; the package is named
    // like `MANAGER`): the API server names its field manager after it, which the policy on
    // the project's kinds tells from other writers'.
    let agent = concat!(env!("CARGO_PKG_NAME"), "/", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(agent),
    ));
    Ok(Client::try_from(config)?)
}

/// Grants `rules` to the ServiceAccount: cluster-wide when `namespaces` is empty, else in each
/// of them (created when missing).
async fn grant(admin: &Client, rules: &[PolicyRule], namespaces: &[&str]) -> Result<(), Error> {
    let params = PatchParams::apply("envtest").force();
    let subjects = json!([{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}]);
    if namespaces.is_empty() {
        let role: ClusterRole =
            serde_json::from_value(json!({"metadata": {"name": ROLE}, "rules": rules}))?;
        Api::<ClusterRole>::all(admin.clone())
            .patch(ROLE, &params, &Patch::Apply(&role))
            .await?;
        let binding: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": BINDING},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
            "subjects": subjects,
        }))?;
        Api::<ClusterRoleBinding>::all(admin.clone())
            .patch(BINDING, &params, &Patch::Apply(&binding))
            .await?;
        return Ok(());
    }
    for namespace in namespaces {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
        Api::<Namespace>::all(admin.clone())
            .patch(namespace, &params, &Patch::Apply(&ns))
            .await?;
        let role: Role =
            serde_json::from_value(json!({"metadata": {"name": ROLE}, "rules": rules}))?;
        Api::<Role>::namespaced(admin.clone(), namespace)
            .patch(ROLE, &params, &Patch::Apply(&role))
            .await?;
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": BINDING},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
            "subjects": subjects,
        }))?;
        Api::<RoleBinding>::namespaced(admin.clone(), namespace)
            .patch(BINDING, &params, &Patch::Apply(&binding))
            .await?;
    }
    Ok(())
}

/// Writes the policy `config/policy/<name>.yaml` and its binding (`<name>_binding.yaml`), the
/// policy's match condition naming `user` as config/default names the manager's
/// ServiceAccount (`'system:serviceaccount:' + '<namespace>' + ':' + '<name>'`).
pub async fn install_policy(admin: &Client, name: &str, user: &str) -> Result<(), Error> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/policy");
    let file = root.join(format!("{name}.yaml"));
    let mut policy: ValidatingAdmissionPolicy =
        serde_saphyr::from_str(&std::fs::read_to_string(&file)?)?;
    let condition = policy
        .spec
        .as_mut()
        .and_then(|spec| spec.match_conditions.as_mut())
        .and_then(|conditions| conditions.iter_mut().find(|c| c.name == "by-the-manager"))
        .ok_or_else(|| format!("{} has no match condition by-the-manager", file.display()))?;
    condition.expression = format!("request.userInfo.username == '{user}'");
    let binding: ValidatingAdmissionPolicyBinding = serde_saphyr::from_str(
        &std::fs::read_to_string(root.join(format!("{name}_binding.yaml")))?,
    )?;
    let params = PatchParams::apply("envtest").force();
    Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .patch(&policy.name_any(), &params, &Patch::Apply(&policy))
        .await?;
    Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
        .patch(&binding.name_any(), &params, &Patch::Apply(&binding))
        .await?;
    Ok(())
}
