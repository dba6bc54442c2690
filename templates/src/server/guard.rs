//! Connections nobody can hold open for free. axum serves without hyper's timer, so hyper
//! has no header-read or idle timeout, and every accepted connection gets a task: a client
//! that opens connections and then sends nothing (or one byte a minute) would hold memory
//! and file descriptors until the manager is OOM-killed, and would hold up its shutdown.
//! Every endpoint (webhooks, metrics, probes) is served through `Guarded`: at most
//! `MAX_CONNECTIONS` at once (more wait in the kernel's backlog), each closed after
//! `IDLE_TIMEOUT` without a byte read or written.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Longer than the API server's and Prometheus' own idle timeout for kept-alive connections
/// (90 s), so that they close their idle connections before the manager does.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Connections served at once per endpoint: far above what API servers, Prometheus and the
/// kubelet open, and at about 50 KB each (buffers, TLS), a few MB.
pub const MAX_CONNECTIONS: usize = 256;

/// A listener whose connections are counted and time out when idle.
pub struct Guarded<L> {
    inner: L,
    slots: Arc<Semaphore>,
    idle: Duration,
}

impl<L> Guarded<L> {
    pub fn new(inner: L) -> Self {
        Self::with_limits(inner, MAX_CONNECTIONS, IDLE_TIMEOUT)
    }

    pub fn with_limits(inner: L, connections: usize, idle: Duration) -> Self {
        Guarded {
            inner,
            slots: Arc::new(Semaphore::new(connections)),
            idle,
        }
    }
}

impl<L: axum::serve::Listener> axum::serve::Listener for Guarded<L> {
    type Io = Connection<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // Never closed, so acquiring only waits.
        let slot = self.slots.clone().acquire_owned().await;
        let (io, addr) = self.inner.accept().await;
        let connection = Connection {
            io,
            idle: self.idle,
            deadline: Box::pin(tokio::time::sleep(self.idle)),
            _slot: slot.ok(),
        };
        (connection, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A served connection: it holds its slot until dropped, and fails with `TimedOut` once it
/// has waited `idle` for the client.
pub struct Connection<S> {
    io: S,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl<S> Connection<S> {
    fn progressed(&mut self) {
        self.deadline.as_mut().reset(Instant::now() + self.idle);
    }

    /// `Pending` until the deadline passes, then the error that closes the connection.
    fn expired<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        ready!(self.deadline.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "connection idle too long",
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Connection<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                this.progressed();
                Poll::Ready(result)
            }
            Poll::Pending => this.expired(cx),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Connection<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(result) => {
                this.progressed();
                Poll::Ready(result)
            }
            // A client that stops reading holds the connection as surely as one that stops
            // writing.
            Poll::Pending => this.expired(cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn guarded_server(connections: usize, idle: Duration) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", get(|| async { "ok" }));
        let guarded = Guarded::with_limits(listener, connections, idle);
        tokio::spawn(async move { axum::serve(guarded, router).await });
        addr
    }

    async fn get_root(addr: std::net::SocketAddr) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed_once_idle() {
        let addr = guarded_server(4, Duration::from_millis(300)).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        silent.write_all(b"GET / HT").await.unwrap();
        let mut rest = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut rest)).await;
        assert!(
            closed.is_ok(),
            "a half-sent request held its connection open"
        );
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_wait_for_a_free_slot() {
        let addr = guarded_server(1, Duration::from_millis(500)).await;
        let mut holder = TcpStream::connect(addr).await.unwrap();
        holder.write_all(b"G").await.unwrap();
        let waiting = tokio::spawn(get_root(addr));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !waiting.is_finished(),
            "a second connection was served beside the first"
        );
        // The holder times out, its slot frees, and the waiting request is served.
        let answer = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}
