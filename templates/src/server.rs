//! The manager's HTTP endpoints: `/metrics` for Prometheus and `/healthz`, `/readyz` for the
//! kubelet's probes, each on its own address as in controller-runtime. `/metrics` is served
//! over HTTPS to authorized clients only (`metrics_auth`, `tls`) unless `--metrics-secure=false`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::get;
use futures::FutureExt;
use rustls::ServerConfig;
use tokio::net::TcpListener;

use crate::metrics::Metrics;
use crate::metrics_auth::{self, Authorizer};
use crate::tls::TlsListener;

mod bind;
mod give_way;
mod guard;
pub use bind::{bind, bind_socket, every_interface};
pub(crate) use give_way::give_way;
pub use guard::Guarded;

/// How long open connections may finish after shutdown starts: within the Pod's
/// termination grace period (10 s), with the controllers' stop budget.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// One condition of readiness, set once it holds: the controllers' (every watch has listed
/// its objects, or, with leader election, standing by for the Lease) and the webhooks' (their
/// server listens with a trusted certificate). `/readyz` answers 200 once all are set.
#[derive(Debug, Clone, Default)]
pub struct Ready(Arc<AtomicBool>);

impl Ready {
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
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

/// `/healthz`, and `/readyz`: ready once every one of `ready` is set.
pub fn health_router(ready: Vec<Ready>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(Arc::<[Ready]>::from(ready))
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

async fn readyz(State(ready): State<Arc<[Ready]>>) -> impl IntoResponse {
    if ready.iter().all(Ready::is_set) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting")
    }
}

/// Connections each endpoint serves at once (`Guarded`), sized to its callers: the API
/// servers for the webhooks, Prometheus for `/metrics`, the kubelet for the probes. hyper
/// buffers up to about 400 KB of headers per connection, so together (168) they bound what
/// clients can make the manager hold to about 67 MB, inside its 128Mi limit beside the caches
/// (256 for each of the three endpoints, as before, was 300 MB).
pub mod connections {
    pub const WEBHOOKS: usize = 128;
    pub const METRICS: usize = 32;
    pub const PROBES: usize = 8;
}

/// Serves `router` on `listener` (if any), over TLS with `tls`, at most `connections` at
/// once, until `shutdown` completes.
pub async fn serve(
    listener: Option<TcpListener>,
    tls: Option<Arc<ServerConfig>>,
    connections: usize,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let Some(listener) = listener else {
        return Ok(());
    };
    let addr = listener.local_addr()?;
    let shutdown = shutdown.boxed().shared();
    let served = async {
        match tls {
            Some(config) => {
                tracing::info!(%addr, "serving HTTPS");
                let listener = Guarded::new(TlsListener::new(listener, config)?, connections);
                axum::serve(listener, router)
                    .with_graceful_shutdown(shutdown.clone())
                    .await
            }
            None => {
                tracing::info!(%addr, "serving");
                axum::serve(Guarded::new(listener, connections), router)
                    .with_graceful_shutdown(shutdown.clone())
                    .await
            }
        }
    };
    // Graceful shutdown waits for every open connection; a client slow to finish must not
    // hold the manager past its grace period.
    let drained = async {
        shutdown.clone().await;
        tokio::time::sleep(DRAIN_TIMEOUT).await;
        tracing::warn!(%addr, "closing connections still open {DRAIN_TIMEOUT:?} after shutdown");
    };
    tokio::select! {
        served = served => served,
        () = drained => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::controller::test_support::{Reply, mock_client, serve as api_server};
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

    /// The status line of a GET of `/metrics` on `addr`, with `token` as the bearer token.
    async fn scrape(addr: SocketAddr, token: Option<&str>) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let request =
            format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response.lines().next().unwrap_or_default().to_string()
    }

    #[tokio::test]
    async fn metrics_answer_only_callers_the_api_server_allows() {
        let (client, api) = mock_client();
        let authenticated = json!({"status": {"authenticated": true, "user": {"username": "u"}}});
        let answer = |allowed: bool| Reply::Json(201, json!({"status": {"allowed": allowed}}));
        // Requests arrive one scrape after the other: the stranger's reviews, then the reader's.
        let expected = vec![
            (
                "POST",
                TOKEN_REVIEWS.into(),
                Reply::Json(201, authenticated.clone()),
            ),
            ("POST", ACCESS_REVIEWS.into(), answer(false)),
            (
                "POST",
                TOKEN_REVIEWS.into(),
                Reply::Json(201, authenticated),
            ),
            ("POST", ACCESS_REVIEWS.into(), answer(true)),
        ];
        let seen = tokio::spawn(api_server(api, expected));
        let router = metrics_router(Arc::new(Metrics::default()), Some(Authorizer::new(client)));
        let listener = bind("127.0.0.1:0").await.unwrap().unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stop_on = async {
            let _ = stopped.await;
        };
        let served = serve(Some(listener), None, connections::METRICS, router, stop_on);
        let server = tokio::spawn(served);

        assert_eq!(scrape(addr, None).await, "HTTP/1.1 401 Unauthorized");
        assert_eq!(
            scrape(addr, Some("stranger")).await,
            "HTTP/1.1 403 Forbidden"
        );
        assert_eq!(scrape(addr, Some("reader")).await, "HTTP/1.1 200 OK");
        // Cached: no further review.
        assert_eq!(scrape(addr, Some("reader")).await, "HTTP/1.1 200 OK");

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        assert_eq!(seen.await.unwrap().len(), 4);
    }
}
