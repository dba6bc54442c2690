//! Each accepted connection served by hyper's HTTP/1 directly, as axum's `serve` would, but
//! with a bounded read buffer: axum's `serve` keeps hyper's default (about 400 KB), so a
//! client sending headers that never end would hold that much memory per connection, and
//! `MAX_CONNECTIONS` of them about 100 MB, past the manager's memory limit.

use std::pin::pin;

use axum::Router;
use axum::serve::Listener;
use futures::FutureExt;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;

/// The most a connection buffers of what it reads: the request line and headers must fit
/// (hyper answers 431 otherwise), and bodies stream through it. Far above what API servers,
/// Prometheus and the kubelet send (a bearer token is a few KB); controller-runtime takes Go's
/// 1 MB, but serves no more than we do with it.
pub const MAX_READ_BUFFER: usize = 32 * 1024;

/// Serves `router` on every connection `listener` accepts until `shutdown` completes, then
/// lets open connections finish their requests and returns once they have.
pub async fn serve_connections<L: Listener>(
    mut listener: L,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown = shutdown.boxed().shared();
    // Every connection's task holds a receiver: `closed()` completes when the last has ended.
    let (open_tx, open_rx) = watch::channel(());
    loop {
        let (io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.clone() => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let shutdown = shutdown.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let connection = http1::Builder::new()
                .max_buf_size(MAX_READ_BUFFER)
                .serve_connection(TokioIo::new(io), service);
            let mut connection = pin!(connection);
            let mut shutdown = pin!(shutdown.fuse());
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(error) = served {
                            tracing::debug!(%error, "connection ended");
                        }
                        break;
                    }
                    () = &mut shutdown => connection.as_mut().graceful_shutdown(),
                }
            }
            drop(open);
        });
    }
    drop(listener);
    drop(open_rx);
    open_tx.closed().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn serving() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", get(|| async { "ok" }));
        tokio::spawn(serve_connections(listener, router, std::future::pending()));
        addr
    }

    /// What the server sends on a connection given `head`, until it closes it (or 5 s pass).
    async fn answer_to(addr: std::net::SocketAddr, head: Vec<u8>) -> Option<String> {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        // The server may stop reading and close before all is sent.
        let _ = stream.write_all(&head).await;
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer));
        match read.await {
            Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
            Err(_) => None,
        }
    }

    fn request_with_header_of(size: usize, ended: bool) -> Vec<u8> {
        let mut head = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-big: ".to_vec();
        head.resize(head.len() + size, b'a');
        if ended {
            head.extend_from_slice(b"\r\n\r\n");
        }
        head
    }

    #[tokio::test]
    async fn headers_larger_than_the_buffer_close_the_connection() {
        let addr = serving().await;
        // Headers that never end: with hyper's default buffer the server would wait for more.
        let answer = answer_to(addr, request_with_header_of(MAX_READ_BUFFER * 3, false)).await;
        assert!(answer.is_some(), "the connection stayed open");
    }

    #[tokio::test]
    async fn requests_with_headers_within_the_buffer_are_answered() {
        let addr = serving().await;
        let answer = answer_to(addr, request_with_header_of(MAX_READ_BUFFER / 2, true)).await;
        assert!(answer.unwrap().starts_with("HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn shutdown_lets_a_request_in_flight_finish() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let released = released.shared();
        let router = Router::new().route("/", get(move || released.clone().map(|_| "finished")));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve_connections(listener, router, async {
            let _ = stopped.await;
        }));
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        // The request is in its handler when shutdown starts; serving ends only after it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!served.is_finished());
        release.send(()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("finished"));
        served.await.unwrap();
    }
}
