//! TLS for the metrics and webhook servers: the serving certificate and a listener that hands axum finished
//! TLS connections. The certificate is either made at start (self-signed, as
//! controller-runtime does when none is given) or read from a directory, such as a mounted
//! cert-manager Secret, and read again when its files change (each read counted in `reads`).
//! Only HTTP/1.1 is offered (ALPN), as kubebuilder's managers do by default.

mod handshakes;
mod reads;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use handshakes::Handshakes;
pub use reads::{CertReads, reads};

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// TLS handshakes in progress at once: beyond it, a new connection ends one (`Handshakes`).
const MAX_HANDSHAKES: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("making a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// The certificate file's and the key file's contents.
type Pem = (Vec<u8>, Vec<u8>);

/// Where a certificate and its key are read from: `dir`/`cert` and `dir`/`key`.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub dir: PathBuf,
    pub cert: String,
    pub key: String,
}

impl CertFiles {
    fn read(&self) -> Result<Pem, CertError> {
        let read = |name: &str| {
            let path = self.dir.join(name);
            std::fs::read(&path).map_err(|source| CertError::Read { path, source })
        };
        Ok((read(&self.cert)?, read(&self.key)?))
    }

    /// The certificate chain and key in `cert` and `key` (PEM).
    fn parse(&self, cert: &[u8], key: &[u8]) -> Result<CertifiedKey, CertError> {
        let invalid = |name: &str, message: String| CertError::Invalid {
            path: self.dir.join(name),
            message,
        };
        let chain = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(&self.cert, e.to_string()))?;
        if chain.is_empty() {
            return Err(invalid(&self.cert, "no PEM certificate".into()));
        }
        let key =
            PrivateKeyDer::from_pem_slice(key).map_err(|e| invalid(&self.key, e.to_string()))?;
        certified(chain, key).map_err(|e| invalid(&self.key, e.to_string()))
    }
}

fn in_memory(cert: &str, key: &str) -> Result<CertifiedKey, CertError> {
    let memory = CertFiles {
        dir: PathBuf::from("<memory>"),
        cert: "tls.crt".into(),
        key: "tls.key".into(),
    };
    memory.parse(cert.as_bytes(), key.as_bytes())
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<CertifiedKey, rustls::Error> {
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)?;
    let certified = CertifiedKey::new(chain, signer);
    // A key of another certificate (a wrong file, or one read between the writes of a
    // renewal) would fail every handshake: refused here, the served certificate stays.
    certified.keys_match()?;
    Ok(certified)
}

/// The certificate the server presents; swapped in place when its files change.
pub struct ServingCert {
    current: RwLock<Arc<CertifiedKey>>,
    /// Where the certificate comes from, and what the files held when last read.
    files: Option<(CertFiles, RwLock<Pem>)>,
}

impl fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.files.as_ref().map(|(files, _)| files);
        f.debug_struct("ServingCert")
            .field("files", &files)
            .finish()
    }
}

impl ServingCert {
    /// A fresh self-signed certificate for `localhost` and 127.0.0.1, and its ECDSA P-256 key.
    pub fn self_signed() -> Result<Self, CertError> {
        let made = rcgen::generate_simple_self_signed(["localhost".into(), "127.0.0.1".into()])?;
        let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
        let key = certified(vec![made.cert.der().clone()], key.into()).map_err(|e| {
            CertError::Invalid {
                path: PathBuf::from("<self-signed>"),
                message: e.to_string(),
            }
        })?;
        Ok(Self {
            current: RwLock::new(Arc::new(key)),
            files: None,
        })
    }

    /// The certificate in `files`, read now; `reload` reads them again.
    pub fn from_files(files: CertFiles) -> Result<Self, CertError> {
        let read = files.read().and_then(|(cert, key)| {
            let certified = files.parse(&cert, &key)?;
            Ok((cert, key, certified))
        });
        let (cert, key, certified) = reads().count(read)?;
        Ok(Self {
            current: RwLock::new(Arc::new(certified)),
            files: Some((files, RwLock::new((cert, key)))),
        })
    }

    /// A certificate and key (PEM) held in memory, such as the webhook server's from its
    /// Secret; `replace` swaps them.
    pub fn from_pem(cert: &str, key: &str) -> Result<Self, CertError> {
        Ok(Self {
            current: RwLock::new(Arc::new(in_memory(cert, key)?)),
            files: None,
        })
    }

    /// Serves `cert` and `key` (PEM) from the next handshake on.
    pub fn replace(&self, cert: &str, key: &str) -> Result<(), CertError> {
        *self.current.write().unwrap() = Arc::new(in_memory(cert, key)?);
        Ok(())
    }

    /// Reads the files again and takes their certificate if they changed. Returns whether it
    /// did; a broken new pair is an error and the certificate in use stays.
    pub fn reload(&self) -> Result<bool, CertError> {
        let Some((files, last)) = &self.files else {
            return Ok(false);
        };
        reads().count(files.read().and_then(|read| {
            if *last.read().unwrap() == read {
                return Ok(false);
            }
            let certified = files.parse(&read.0, &read.1)?;
            *self.current.write().unwrap() = Arc::new(certified);
            *last.write().unwrap() = read;
            Ok(true)
        }))
    }

    /// The directory the certificate is read from, for logs.
    fn dir(&self) -> String {
        self.files
            .as_ref()
            .map(|(files, _)| files.dir.display().to_string())
            .unwrap_or_default()
    }

    /// Calls `reload` every `period`, forever (a Secret's files change when cert-manager
    /// renews it).
    pub async fn reload_every(self: Arc<Self>, period: Duration) {
        if self.files.is_none() {
            return;
        }
        loop {
            tokio::time::sleep(period).await;
            match self.reload() {
                Ok(true) => tracing::info!(dir = %self.dir(), "serving certificate reloaded"),
                Ok(false) => {}
                Err(err) => tracing::warn!(%err, "keeping the serving certificate"),
            }
        }
    }

    /// The rustls configuration: this certificate, TLS 1.2 and 1.3, HTTP/1.1 only.
    pub fn server_config(self: Arc<Self>) -> Arc<ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_no_client_auth()
            .with_cert_resolver(self);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap().clone())
    }
}

/// Accepts TCP connections and completes their TLS handshakes in tasks of their own, so a
/// slow client never holds up the others; axum serves the connections it yields.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(16);
        let acceptor = TlsAcceptor::from(config);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            let mut running = Handshakes::new(MAX_HANDSHAKES);
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    // The server has stopped.
                    () = tx.closed() => return,
                };
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // Out of file descriptors, typically: wait, as axum's listener does.
                        tracing::warn!(%err, "accepting a TLS connection");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let handshake = match handshakes.clone().try_acquire_owned() {
                    Ok(permit) => permit,
                    // Every slot is taken: one handshake gives way (see `Handshakes`).
                    Err(_) => {
                        running.end_one();
                        tokio::select! {
                            permit = handshakes.clone().acquire_owned() => {
                                permit.expect("handshake slots closed")
                            }
                            () = tx.closed() => return,
                        }
                    }
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                let shaking = Arc::new(AtomicBool::new(true));
                let shaken = shaking.clone();
                let task = tokio::spawn(async move {
                    // The handshake and the wait for a free connection slot share one
                    // deadline: a connection nobody serves is dropped, not held.
                    let handed_over = async {
                        let tls = acceptor.accept(tcp).await?;
                        // Past its handshake, unless it was just ended to make room.
                        if !shaken.swap(false, Ordering::AcqRel) {
                            return Ok(());
                        }
                        drop(handshake);
                        let _ = tx.send((tls, peer)).await;
                        io::Result::Ok(())
                    };
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handed_over).await {
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => tracing::debug!(%err, %peer, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
                running.track(task.abort_handle(), shaking, peer.ip());
            }
        });
        Ok(Self { local, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests;
