//! The manager's HTTP endpoints: `/metrics` for Prometheus and `/healthz`, `/readyz` for the
//! kubelet's probes, each on its own address as in controller-runtime. `/metrics` is served
//! over HTTPS to authorized clients only (`metrics_auth`, `tls`) unless `--metrics-secure=false`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::get;
use rustls::ServerConfig;
use tokio::net::TcpListener;

use crate::metrics::Metrics;
use crate::metrics_auth::{self, Authorizer};
use crate::tls::TlsListener;

/// Readiness: set once the controllers run (and, with leader election, once leading or waiting).
#[derive(Clone, Default)]
pub struct Ready(Arc<AtomicBool>);

impl Ready {
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `/metrics`; with an `Authorizer`, only for requests it allows.
pub fn metrics_router(metrics: Arc<Metrics>, auth: Option<Authorizer>) -> Router {
    let router = Router::new().route("/metrics", get(serve_metrics));
    let router = match auth {
        Some(auth) => {
            router.route_layer(middleware::from_fn_with_state(auth, metrics_auth::require))
        }
        None => router,
    };
    router.with_state(metrics)
}

pub fn health_router(ready: Ready) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    match metrics.encode() {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            String::new(),
        ),
    }
}

async fn readyz(State(ready): State<Ready>) -> impl IntoResponse {
    if ready.0.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting")
    }
}

/// Binds `addr` ("host:port"); "0" disables the endpoint, as in controller-runtime.
/// Binding before anything starts makes a taken or malformed address fail at once.
pub async fn bind(addr: &str) -> std::io::Result<Option<TcpListener>> {
    if addr == "0" {
        return Ok(None);
    }
    let parsed: SocketAddr = addr.parse().map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bind address {addr:?}: {e}"),
        )
    })?;
    TcpListener::bind(parsed).await.map(Some)
}

/// Serves `router` on `listener` (if any), over TLS with `tls`, until `shutdown` completes.
pub async fn serve(
    listener: Option<TcpListener>,
    tls: Option<Arc<ServerConfig>>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let Some(listener) = listener else {
        return Ok(());
    };
    let addr = listener.local_addr()?;
    match tls {
        Some(config) => {
            tracing::info!(%addr, "serving HTTPS");
            axum::serve(TlsListener::new(listener, config)?, router)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => {
            tracing::info!(%addr, "serving");
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}
