//! opsdk's command-line tests: one binary, one module per concern.

mod article;
mod bad_input;
mod cert_manager;
mod create_api;
mod create_webhook;
mod delete_api;
mod delete_webhook;
mod e2e;
mod flect;
mod foreign_api;
mod generated;
mod golden;
mod helm;
mod helm_cluster;
mod helm_metrics_certs;
mod helm_render;
mod helm_values;
mod helm_webhooks;
mod host;
mod image;
mod init;
mod kubebuilder_habits;
mod kubectl;
mod kubernetes_webhooks;
mod leader;
mod lifecycle;
mod many_kinds;
mod namespaced;
mod namespaced_manager;
mod resilience;
mod support;
mod workflows;

// The very harness generated projects get, so the slow tests exercise what users run.
#[path = "../../templates/tests/envtest/mod.rs"]
mod envtest;
