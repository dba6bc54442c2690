//! The manager's webhook server in a test, as `--webhook-url` runs it: the API server calls it
//! at https://127.0.0.1:<free port>, and it runs as the manager's ServiceAccount granted the
//! roles of `webhook::configs::roles` (here in namespace `default`), never as an administrator.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::{ControlPlane, Error, eventually, free_ports, rbac};

/// The namespace of the manager's certificate Secret in the suites.
pub const NAMESPACE: &str = rbac::NAMESPACE;

/// A free loopback port for the webhook server and its URL.
pub fn webhook_url() -> (u16, String) {
    let [port] = free_ports().expect("finding a free port");
    (port, format!("https://127.0.0.1:{port}"))
}

/// Waits until `port` can be bound again, for a server restarted on the same port: the
/// stopped one's listener may close a moment after `Served::stop` returns.
pub async fn port_released(port: u16) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "port {port} still taken 30 s after its server stopped"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A client of the manager's ServiceAccount granted `cluster` and `role` (the webhook
/// certificates' roles; `role` in its own namespace, `NAMESPACE` when it names none). The
/// account lives in the role's namespace, as a manager deployed there has its own: a second
/// manager in another namespace holds its roles only, not the first one's.
pub async fn webhook_client(
    cp: &ControlPlane,
    cluster: ClusterRole,
    role: Role,
) -> Result<Client, Error> {
    let admin = cp.client();
    let params = PatchParams::apply("envtest").force();
    let role_namespace = role.namespace().unwrap_or_else(|| NAMESPACE.into());
    let subjects =
        json!([{"kind": "ServiceAccount", "name": rbac::ACCOUNT, "namespace": role_namespace}]);
    let binding_name = format!("envtest-webhook-certs-{role_namespace}");
    let (cluster_name, role_name) = (cluster.name_any(), role.name_any());
    Api::<ClusterRole>::all(admin.clone())
        .patch(&cluster_name, &params, &Patch::Apply(&cluster))
        .await?;
    Api::<Role>::namespaced(admin.clone(), &role_namespace)
        .patch(&role_name, &params, &Patch::Apply(&role))
        .await?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
        "subjects": subjects,
    }))?;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(&binding_name, &params, &Patch::Apply(&binding))
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        "subjects": subjects,
    }))?;
    Api::<RoleBinding>::namespaced(admin.clone(), &role_namespace)
        .patch(&binding_name, &params, &Patch::Apply(&binding))
        .await?;
    let kubeconfig = std::fs::read(cp.kubeconfig())?;
    let kubeconfig = serde_json::from_slice(&kubeconfig)?;
    rbac::ensure_account(&admin, &role_namespace).await?;
    rbac::token_client(&admin, &kubeconfig, &role_namespace).await
}

/// A webhook server running in the test, stopped by `stop` (or when dropped).
pub struct Served {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Stops the server as SIGTERM stops the manager, and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = std::mem::replace(&mut self.task, tokio::spawn(async {}));
        task.await.expect("the webhook server stops");
    }
}

/// Runs `serve(client, shutdown)` with a client of the manager's ServiceAccount granted
/// `roles` (the ClusterRole and the Role of `webhook::configs::roles`).
pub async fn serve_webhooks<F, Fut>(
    cp: &ControlPlane,
    roles: (ClusterRole, Role),
    serve: F,
) -> Served
where
    F: FnOnce(Client, std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let client = webhook_client(cp, roles.0, roles.1)
        .await
        .expect("granting the webhook roles");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = Box::pin(async move {
        let _ = stopped.await;
    });
    Served {
        stop: Some(stop),
        task: tokio::spawn(serve(client, shutdown)),
    }
}

/// Runs kubectl (from KUBEBUILDER_ASSETS) as the admin with `args`, `stdin` piped in, on a
/// blocking thread: the webhook server it reaches runs on the test's own runtime.
pub async fn kubectl(cp: &ControlPlane, args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let assets = std::env::var_os("KUBEBUILDER_ASSETS").expect("KUBEBUILDER_ASSETS is set");
    let mut command = Command::new(std::path::Path::new(&assets).join("kubectl"));
    command
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let stdin = stdin.to_string();
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("running kubectl");
        let mut input = child.stdin.take().expect("kubectl's stdin");
        input
            .write_all(stdin.as_bytes())
            .expect("writing to kubectl");
        drop(input);
        child.wait_with_output().expect("waiting for kubectl")
    })
    .await
    .expect("kubectl's thread")
}

/// The CA bundle of the configurations `names` (mutating, validating), once they hold `hooks`
/// webhooks, every one with that bundle: the webhooks are registered.
pub async fn registered(client: &Client, names: (&str, &str), hooks: usize) -> Option<Vec<u8>> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get_opt(names.0)
        .await
        .ok()?;
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get_opt(names.1)
        .await
        .ok()?;
    let mut bundles: Vec<Option<Vec<u8>>> = Vec::new();
    for webhook in mutating.and_then(|c| c.webhooks).unwrap_or_default() {
        bundles.push(webhook.client_config.ca_bundle.map(|b| b.0));
    }
    for webhook in validating.and_then(|c| c.webhooks).unwrap_or_default() {
        bundles.push(webhook.client_config.ca_bundle.map(|b| b.0));
    }
    let first = bundles.first()?.clone()?;
    (bundles.len() == hooks && bundles.iter().all(|b| b.as_ref() == Some(&first))).then_some(first)
}

/// The CRDs installed in `cp` whose versions convert through a webhook.
async fn converting_crds(cp: &ControlPlane) -> Vec<String> {
    let crds = Api::<CustomResourceDefinition>::all(cp.client())
        .list(&Default::default())
        .await
        .expect("listing the CRDs");
    crds.into_iter()
        .filter(|c| {
            c.spec
                .conversion
                .as_ref()
                .is_some_and(|v| v.strategy == "Webhook")
        })
        .map(|c| c.name_any())
        .collect()
}

/// When a CRD installed in `cp` converts its versions through the manager (`opsdk create
/// webhook --conversion`), runs the manager's webhook server (`serve`, given its client,
/// a free port and its shutdown) as `--webhook-url` runs it, granted `roles`, and waits until
/// those CRDs call it with its CA bundle and it listens: the versions other than the stored
/// one reach etcd only through it. Keep it with `ControlPlane::keep`.
pub async fn serve_conversions<F, Fut>(
    cp: &ControlPlane,
    roles: (ClusterRole, Role),
    serve: F,
) -> Option<Served>
where
    F: FnOnce(Client, u16, std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let crds = converting_crds(cp).await;
    if crds.is_empty() {
        return None;
    }
    let (port, url) = webhook_url();
    let served = serve_webhooks(cp, roles, |client, stop| serve(client, port, stop)).await;
    let api = Api::<CustomResourceDefinition>::all(cp.client());
    let wanted = format!("{url}/convert");
    for name in &crds {
        eventually("the CRD to call the conversion webhook", || async {
            let crd = api.get(name).await.ok()?;
            let config = crd.spec.conversion?.webhook?.client_config?;
            (config.url.as_deref() == Some(&wanted) && config.ca_bundle.is_some()).then_some(())
        })
        .await;
    }
    // The server listens once its CA bundle has had time to reach the API server.
    eventually("the webhook server to listen", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
    })
    .await;
    Some(served)
}
