use super::*;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn write_pair(dir: &std::path::Path, name: &str) -> Vec<u8> {
    let made = rcgen::generate_simple_self_signed([name.to_string()]).unwrap();
    std::fs::write(dir.join("tls.crt"), made.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
    made.cert.der().to_vec()
}

fn files(dir: &std::path::Path) -> CertFiles {
    CertFiles {
        dir: dir.to_path_buf(),
        cert: "tls.crt".into(),
        key: "tls.key".into(),
    }
}

fn presented(cert: &ServingCert) -> Vec<u8> {
    cert.current.read().unwrap().cert[0].to_vec()
}

#[test]
fn reads_a_pair_from_a_directory_and_again_when_it_changes() {
    let (reads_before, errors_before) = reads().counts();
    let dir = tempfile::tempdir().unwrap();
    let first = write_pair(dir.path(), "a.example");
    let cert = ServingCert::from_files(files(dir.path())).unwrap();
    assert_eq!(presented(&cert), first);
    assert!(
        !cert.reload().unwrap(),
        "unchanged files are not parsed again"
    );

    let second = write_pair(dir.path(), "b.example");
    assert!(cert.reload().unwrap());
    assert_eq!(presented(&cert), second);

    // A broken pair (cert-manager halfway through a renewal) leaves the old one in use.
    std::fs::write(dir.path().join("tls.key"), "not a key").unwrap();
    let err = cert.reload().unwrap_err().to_string();
    assert!(err.contains("tls.key"), "{err}");
    assert_eq!(presented(&cert), second);
    // So does the key of another certificate (read between the writes of a renewal).
    let other = rcgen::generate_simple_self_signed(["c.example".to_string()]).unwrap();
    let other_key = other.signing_key.serialize_pem();
    std::fs::write(dir.path().join("tls.key"), other_key).unwrap();
    assert!(
        cert.reload().is_err(),
        "a certificate served with another's key"
    );
    assert_eq!(presented(&cert), second);
    // Every read counted, the failed ones apart (other tests may read at the same time).
    let (reads_after, errors_after) = reads().counts();
    assert!(
        reads_after - reads_before >= 5,
        "{reads_before} then {reads_after}"
    );
    assert!(
        errors_after - errors_before >= 2,
        "{errors_before} then {errors_after}"
    );
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = ServingCert::from_files(files(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("tls.crt"), "{err}");
}

/// A client trusting `cert` that offers HTTP/2 and HTTP/1.1.
fn connector(cert: &ServingCert) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(presented(cert))).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(client))
}

/// A TLS listener on a free port that greets every connection it yields.
async fn greeting_server(cert: &Arc<ServingCert>) -> SocketAddr {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut listener = TlsListener::new(tcp, cert.clone().server_config()).unwrap();
    let addr = axum::serve::Listener::local_addr(&listener).unwrap();
    tokio::spawn(async move {
        loop {
            let (mut tls, _) = axum::serve::Listener::accept(&mut listener).await;
            tokio::spawn(async move {
                tls.write_all(b"hello").await.unwrap();
                tls.shutdown().await.unwrap();
            });
        }
    });
    addr
}

#[tokio::test]
async fn clients_that_send_nothing_cannot_lock_out_a_handshake() {
    let cert = Arc::new(ServingCert::self_signed().unwrap());
    let addr = greeting_server(&cert).await;
    let mut silent = Vec::new();
    for _ in 0..MAX_HANDSHAKES {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let handshake = connector(&cert).connect(name, tcp);
    let done = tokio::time::timeout(HANDSHAKE_TIMEOUT / 4, handshake).await;
    done.expect("the handshake waited behind silent clients")
        .unwrap();
}

#[tokio::test]
async fn serves_tls_with_http_1_1_only() {
    let cert = Arc::new(ServingCert::self_signed().unwrap());
    let addr = greeting_server(&cert).await;
    let connector = connector(&cert);
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut greeting = String::new();
    tls.read_to_string(&mut greeting).await.unwrap();
    assert_eq!(greeting, "hello");
}
