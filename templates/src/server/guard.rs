//! Connections nobody can hold open for free. axum serves without hyper's timer, so hyper
//! has no header-read or idle timeout, and every accepted connection gets a task: a client
//! that opens connections and then sends nothing (or one byte a minute) would hold memory
//! and file descriptors until the manager is OOM-killed, and would hold up its shutdown.
//! Every endpoint (webhooks, metrics, probes) is served through `Guarded`: at most its
//! share of connections at once (`server::connections`), each closed `IDLE_TIMEOUT` after it was accepted or last
//! written to. Only answers count as progress: a client trickling a byte now and then cannot
//! keep its slot, it must finish a request in time. When every slot is taken, a new
//! connection makes another give way (`give_way`): of a source (IP address) holding more than
//! its share, or else of all, the one that has gone longest without starting a request or
//! being answered, so that a kept-alive connection that has just started one is not it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::give_way;

/// Longer than the API server's and Prometheus' own idle timeout for kept-alive connections
/// (90 s), so that they close their idle connections before the manager does.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// A listener whose connections are counted and time out when idle.
pub struct Guarded<L> {
    inner: L,
    slots: Arc<Semaphore>,
    capacity: usize,
    idle: Duration,
    /// The connections served (and some since closed), to pick one to close when every slot
    /// is taken.
    open: Vec<Weak<Standing>>,
}

/// What the listener knows of a connection it serves.
struct Standing {
    /// Where it comes from.
    source: IpAddr,
    /// When it was accepted, last answered, or last started a request.
    progressed: Mutex<Instant>,
    /// Answered (or accepted) and not read from since: its next byte starts a request.
    between_requests: AtomicBool,
    /// Set to close it, making room for a new connection.
    closing: AtomicBool,
    /// Wakes its task to close it.
    waker: AtomicWaker,
}

impl Standing {
    fn new(source: IpAddr) -> Self {
        Standing {
            source,
            progressed: Mutex::new(Instant::now()),
            between_requests: AtomicBool::new(true),
            closing: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        }
    }

    fn progressed(&self) -> Instant {
        *self.progressed.lock().expect("guard lock poisoned")
    }

    fn answered(&self, at: Instant) {
        *self.progressed.lock().expect("guard lock poisoned") = at;
        self.between_requests.store(true, Ordering::Release);
    }

    /// Bytes came in: the first since an answer start a request, which moves the connection
    /// to the back of the line for closing (not its idle deadline: only answers do that).
    fn read_some(&self) {
        if self.between_requests.swap(false, Ordering::AcqRel) {
            *self.progressed.lock().expect("guard lock poisoned") = Instant::now();
        }
    }
}

impl<L> Guarded<L> {
    pub fn new(inner: L, connections: usize) -> Self {
        Self::with_limits(inner, connections, IDLE_TIMEOUT)
    }

    pub fn with_limits(inner: L, connections: usize, idle: Duration) -> Self {
        Guarded {
            inner,
            slots: Arc::new(Semaphore::new(connections)),
            capacity: connections,
            idle,
            open: Vec::new(),
        }
    }

    /// Tells one connection to close (see `give_way`): progress is starting a request or
    /// being answered, and a source's fair share a quarter of the slots.
    fn close_one(&mut self) {
        self.open.retain(|standing| standing.strong_count() > 0);
        let live: Vec<_> = (self.open.iter().filter_map(Weak::upgrade))
            .filter(|standing| !standing.closing.load(Ordering::Acquire))
            .collect();
        let candidates: Vec<_> = (live.iter())
            .map(|standing| (standing.source, standing.progressed()))
            .collect();
        if let Some(closed) = give_way(&candidates, self.capacity / 4) {
            live[closed].closing.store(true, Ordering::Release);
            live[closed].waker.wake();
        }
    }
}

impl<L: axum::serve::Listener<Addr = SocketAddr>> axum::serve::Listener for Guarded<L> {
    type Io = Connection<L::Io>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.inner.accept().await;
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                self.close_one();
                // Never closed, so acquiring only waits.
                self.slots
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("connection slots closed")
            }
        };
        let standing = Arc::new(Standing::new(addr.ip().to_canonical()));
        // Closed connections are forgotten now and then, not only when every slot is taken.
        if self.open.len() >= 2 * self.capacity {
            self.open.retain(|standing| standing.strong_count() > 0);
        }
        self.open.push(Arc::downgrade(&standing));
        let connection = Connection {
            io,
            idle: self.idle,
            deadline: Box::pin(tokio::time::sleep(self.idle)),
            standing,
            _slot: slot,
        };
        (connection, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A served connection: it holds its slot until dropped, and fails with `TimedOut` once
/// `idle` has passed since it was accepted or last written to, or with `ConnectionAborted`
/// once the listener needs its slot. hyper flushes on every pass over a connection, even one
/// whose request waits on the handler, so the flush checks both too.
pub struct Connection<S> {
    io: S,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    standing: Arc<Standing>,
    _slot: OwnedSemaphorePermit,
}

impl<S> Connection<S> {
    fn answered(&mut self) {
        let now = Instant::now();
        self.deadline.as_mut().reset(now + self.idle);
        self.standing.answered(now);
    }

    /// The error that closes the connection when the listener needs its slot.
    fn closing(&self, cx: &mut Context<'_>) -> Option<io::Error> {
        self.standing.waker.register(cx.waker());
        self.standing.closing.load(Ordering::Acquire).then(|| {
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room for a new connection",
            )
        })
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
        if let Some(closing) = this.closing(cx) {
            return Poll::Ready(Err(closing));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.standing.read_some();
                }
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
        if let Some(closing) = this.closing(cx) {
            return Poll::Ready(Err(closing));
        }
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(result) => {
                this.answered();
                Poll::Ready(result)
            }
            // A client that stops reading holds the connection as surely as one that stops
            // writing.
            Poll::Pending => this.expired(cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(closing) = this.closing(cx) {
            return Poll::Ready(Err(closing));
        }
        // Polled, the deadline wakes this connection when it passes, even while it reads and
        // writes nothing.
        if let Poll::Ready(Err(expired)) = this.expired::<()>(cx) {
            return Poll::Ready(Err(expired));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    /// A TLS shutdown writes its close_notify, which waits on a client that does not read:
    /// it is held to the same deadline, and gives way as readily.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(closing) = this.closing(cx) {
            return Poll::Ready(Err(closing));
        }
        match Pin::new(&mut this.io).poll_shutdown(cx) {
            Poll::Pending => this.expired(cx),
            done => done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn guarded_server(connections: usize, idle: Duration) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // `/park` never answers and never reads the body it is sent.
        let router = Router::new()
            .route("/", get(|| async { "ok" }))
            .route("/park", post(std::future::pending::<&str>));
        let guarded = Guarded::with_limits(listener, connections, idle);
        tokio::spawn(async move { axum::serve(guarded, router).await });
        addr
    }

    async fn get_root(addr: std::net::SocketAddr) -> String {
        let mut connection = TcpStream::connect(addr).await.unwrap();
        last_answer(&mut connection, b"GET / HTTP/1.1\r\n").await
    }

    /// A kept-alive connection, answered once.
    async fn answered_once(addr: std::net::SocketAddr) -> TcpStream {
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 1024];
        let read = kept.read(&mut answer).await.unwrap();
        assert!(answer[..read].starts_with(b"HTTP/1.1 200"));
        kept
    }

    /// Sends `request_line` (or what is left of it) and the headers of a last request on
    /// `connection`, and reads the answer.
    async fn last_answer(connection: &mut TcpStream, request_line: &[u8]) -> String {
        connection.write_all(request_line).await.unwrap();
        connection
            .write_all(b"host: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        connection.read_to_string(&mut answer).await.unwrap();
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
    async fn a_trickling_request_is_closed_once_idle_since_the_last_answer() {
        let addr = guarded_server(4, Duration::from_millis(400)).await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        // Header lines without end, a byte every 100 ms: only the server hanging up (a write
        // that fails) ends it.
        let endless = b"GET / HTTP/1.1\r\n"
            .iter()
            .chain(b"x-padding: y\r\n".iter().cycle());
        let trickle = async {
            for byte in endless {
                if slow.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        let closed = tokio::time::timeout(Duration::from_secs(3), trickle).await;
        assert!(closed.is_ok(), "a byte every 100 ms held the connection");
    }

    #[tokio::test]
    async fn of_one_source_the_connection_answered_longest_ago_gives_way() {
        let addr = guarded_server(2, Duration::from_secs(60)).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        silent.write_all(b"G").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut newer = TcpStream::connect(addr).await.unwrap();
        newer.write_all(b"G").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Both slots are taken, by connections that would hold them for a minute.
        let answer = tokio::time::timeout(Duration::from_secs(5), get_root(addr)).await;
        let answer = answer.expect("the new connection waited for an idle timeout");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut rest));
        assert!(closed.await.is_ok(), "the oldest connection is still open");
        let mut one = [0u8; 1];
        let newer_open = tokio::time::timeout(Duration::from_millis(300), newer.read(&mut one));
        assert!(newer_open.await.is_err(), "a newer connection was closed");
    }

    #[tokio::test]
    async fn a_connection_that_just_started_a_request_is_not_the_one_closed() {
        let addr = guarded_server(2, Duration::from_secs(60)).await;
        // A kept-alive connection, answered once...
        let mut kept = answered_once(addr).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // ...then one that starts a request and sends no more...
        let mut stalled = TcpStream::connect(addr).await.unwrap();
        stalled.write_all(b"G").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // ...then the kept-alive one starts its next request: the stalled one is older now.
        kept.write_all(b"G").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answer = tokio::time::timeout(Duration::from_secs(5), get_root(addr)).await;
        assert!(answer.unwrap().starts_with("HTTP/1.1 200"));
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), stalled.read_to_end(&mut rest));
        assert!(closed.await.is_ok(), "the stalled connection is still open");
        let second = last_answer(&mut kept, b"ET / HTTP/1.1\r\n").await;
        assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    }

    #[tokio::test]
    async fn a_request_parked_before_its_body_is_read_still_gives_up_its_slot() {
        let addr = guarded_server(1, Duration::from_secs(60)).await;
        let mut parked = TcpStream::connect(addr).await.unwrap();
        parked
            .write_all(b"POST /park HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n0123456789")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let answer = tokio::time::timeout(Duration::from_secs(5), get_root(addr)).await;
        let answer = answer.expect("the parked request kept its slot");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    /// A connection whose shutdown never ends, as a TLS close_notify written to a client
    /// that reads nothing.
    struct ShutdownStuck;

    impl AsyncWrite for ShutdownStuck {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shutdown_that_never_ends_times_out_or_gives_way() {
        let slots = Arc::new(Semaphore::new(2));
        let connection = |idle| Connection {
            io: ShutdownStuck,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            standing: Arc::new(Standing::new(IpAddr::from([127, 0, 0, 1]))),
            _slot: slots.clone().try_acquire_owned().unwrap(),
        };
        let mut idle = connection(Duration::from_secs(120));
        let shutdown = tokio::time::timeout(Duration::from_secs(600), idle.shutdown()).await;
        let err = shutdown
            .expect("the shutdown outlived the idle deadline")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(idle);

        let mut evicted = connection(Duration::from_secs(3600));
        let standing = evicted.standing.clone();
        let shutdown = tokio::spawn(async move { evicted.shutdown().await });
        tokio::task::yield_now().await;
        standing.closing.store(true, Ordering::Release);
        standing.waker.wake();
        let err = tokio::time::timeout(Duration::from_secs(1), shutdown).await;
        let err = err
            .expect("the shutdown did not give way")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionAborted);
    }

    // 127.0.0.2 is a loopback address on Linux only.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_source_holding_the_most_connections_gives_one_up() {
        let addr = guarded_server(3, Duration::from_secs(60)).await;
        // The oldest connection, from 127.0.0.1, answered once and idle since.
        let mut kept = answered_once(addr).await;
        // Then silent connections from 127.0.0.2, up to the limit and one more.
        let flood = || async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
            socket.connect(addr).await.unwrap()
        };
        let mut first = flood().await;
        let _second = flood().await;
        let _third = flood().await;
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), first.read_to_end(&mut rest));
        assert!(
            closed.await.is_ok(),
            "the flood's oldest connection is still open"
        );
        let second = last_answer(&mut kept, b"GET / HTTP/1.1\r\n").await;
        assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    }
}
