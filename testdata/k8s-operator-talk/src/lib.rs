//! k8s-operator-talk: a Kubernetes operator built with kube-rs.
//!
//! `api` holds the custom resource types, `controller` their reconcilers; the manager binary
//! (`src/main.rs`) wires them to a client, metrics, health probes, leader election and the
//! admission webhooks of `webhook`.

pub mod api;
pub mod api_client;
pub mod context;
pub mod controller;
pub mod error;
pub mod events;
pub mod leader;
pub mod metrics;
pub mod metrics_auth;
pub mod rbac;
pub mod retry;
pub mod server;
pub mod shutdown;
pub mod telemetry;
pub mod tls;
pub mod watches;
pub mod webhook;

pub use context::Context;
pub use error::{Error, Result};

/// Threads for blocking work beside the one that runs the manager (`src/main.rs`): decoding
/// webhook reviews, on all of them but one (`webhook::intake`), and kube's credential plugins
/// and name lookups, which always find that one. More would only share the manager's CPU
/// limit (500m), each with its own malloc arena.
pub const BLOCKING_THREADS: usize = 2;

/// Field manager for server-side apply and reporting controller for events.
pub const MANAGER: &str = "k8s-operator-talk";
