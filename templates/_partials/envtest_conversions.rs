
/// Kinds whose versions convert (`opsdk create webhook --conversion`) reach etcd through the
/// manager's conversion webhooks: they run here as the manager runs them (`--webhook-url`).
async fn serve_conversions(cp: &ControlPlane) -> Option<envtest::webhook::Served> {
    use {{ project.crate_name }}::webhook::{certs::Validity, configs, serve};
    let roles = configs::roles(envtest::webhook::NAMESPACE, true);
    envtest::webhook::serve_conversions(cp, roles, |client, port, stop| async move {
        let validity = Validity { propagation: std::time::Duration::from_secs(1), ..Validity::DEFAULT };
        let options = serve::Options::local(port, envtest::webhook::NAMESPACE, validity);
        serve::serve(client, Vec::new(), options, stop).await.expect("serving the conversion webhooks");
    })
    .await
}
