//! Listening addresses as controller-runtime reads them: "host:port", Go's ":port" for
//! every interface, or "0" for none.

use std::io::{Error, ErrorKind};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::net::TcpListener;

/// Binds `addr`; "0" disables the endpoint. Binding before anything starts makes a taken
/// or malformed address fail at once, naming it.
pub async fn bind(addr: &str) -> std::io::Result<Option<TcpListener>> {
    if addr == "0" {
        return Ok(None);
    }
    let named = |err: Error| Error::new(err.kind(), format!("bind address {addr:?}: {err}"));
    let listener = match addr.strip_prefix(':') {
        Some(port) => {
            let port = port
                .parse::<u16>()
                .map_err(|err| named(Error::new(ErrorKind::InvalidInput, err)))?;
            bind_socket(every_interface(port)).await
        }
        // Host names resolve, as Go's net.Listen does.
        None => TcpListener::bind(addr).await,
    };
    listener.map(Some).map_err(named)
}

/// Every interface: IPv6's [::], which on Linux serves IPv4 too (dual stack).
pub fn every_interface(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))
}

/// Binds `addr`, falling back from [::] to 0.0.0.0 on hosts without IPv6.
pub async fn bind_socket(addr: SocketAddr) -> std::io::Result<TcpListener> {
    match TcpListener::bind(addr).await {
        Err(err)
            if addr.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                && err.kind() != ErrorKind::AddrInUse =>
        {
            TcpListener::bind((Ipv4Addr::UNSPECIFIED, addr.port())).await
        }
        bound => bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn go_port_syntax_listens_on_every_interface_for_ipv4_callers() {
        let listener = bind(":0").await.unwrap().unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = tokio::spawn(async move { listener.accept().await.map(|_| ()) });
        tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .unwrap();
        accepted.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn zero_disables_and_host_names_resolve() {
        assert!(bind("0").await.unwrap().is_none());
        let listener = bind("localhost:0").await.unwrap().unwrap();
        assert!(listener.local_addr().unwrap().ip().is_loopback());
    }

    #[tokio::test]
    async fn a_malformed_or_taken_address_is_named_in_the_error() {
        let err = bind(":http").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("\":http\""), "{err}");
        let taken = bind("127.0.0.1:0").await.unwrap().unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let err = bind(&addr).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse);
        assert!(err.to_string().contains(&addr), "{err}");
    }
}
