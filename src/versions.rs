//! Every dependency version of the generated project, pinned in one place.
//! Bump them here; the generated Cargo.toml reads them from the render context.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    /// The minimum Rust version (Cargo.toml's rust-version: kube 5's own).
    pub rust: &'static str,
    /// The Rust release of the Dockerfile's builder image.
    pub rust_builder: &'static str,
    pub kube: &'static str,
    pub k8s_openapi: &'static str,
    /// The one k8s-openapi version feature: the Kubernetes minor our control plane runs.
    pub k8s_feature: &'static str,
    pub schemars: &'static str,
    pub serde: &'static str,
    pub serde_json: &'static str,
    pub serde_saphyr: &'static str,
    pub tokio: &'static str,
    pub futures: &'static str,
    pub tracing: &'static str,
    pub tracing_subscriber: &'static str,
    pub thiserror: &'static str,
    pub prometheus_client: &'static str,
    pub axum: &'static str,
    pub clap: &'static str,
    pub rcgen: &'static str,
    pub rustls: &'static str,
    /// SHA-256 for the metrics decision cache (the provider rustls already runs on).
    pub ring: &'static str,
    pub tokio_rustls: &'static str,
    pub tempfile: &'static str,
    pub tower: &'static str,
    pub tower_test: &'static str,
    pub http: &'static str,
    /// The JSON patch of a defaulting webhook's answer: the major kube-core's admission uses.
    pub json_patch: &'static str,
    /// Certificate validity times for rcgen (the webhook certificates).
    pub time: &'static str,
    /// The Kubernetes release the tests' control plane runs (hack/k8s-assets.sh builds it).
    pub kubernetes: &'static str,
    /// The etcd release next to it in CI (the generated test.yml; hack/k8s-assets.sh's too).
    pub etcd: &'static str,
    /// The Helm release the generated chart workflow lints with (opsdk's tests build the same).
    pub helm: &'static str,
}

pub const VERSIONS: Versions = Versions {
    rust: "1.89",
    rust_builder: "1.95",
    kube: "5.0.0",
    k8s_openapi: "0.29.0",
    k8s_feature: "v1_37",
    schemars: "1.2",
    serde: "1.0",
    serde_json: "1.0",
    serde_saphyr: "2.2",
    tokio: "1.48",
    futures: "0.3",
    tracing: "0.1",
    tracing_subscriber: "0.3",
    thiserror: "2.0",
    prometheus_client: "0.26",
    axum: "0.8",
    clap: "4.5",
    rcgen: "0.14",
    rustls: "0.23",
    ring: "0.17",
    tokio_rustls: "0.26",
    tempfile: "3",
    tower: "0.5",
    tower_test: "0.4",
    http: "1",
    json_patch: "4",
    time: "0.3",
    kubernetes: "v1.37.2",
    etcd: "v3.6.16",
    helm: "v3.22.0",
};
