//! The manager's client of the API server: kube's, from the kubeconfig or the in-cluster
//! service account, with a limit on how long an answer may stay silent, counting its requests
//! (`requests`).

mod requests;

use std::time::Duration;

use kube::client::ClientBuilder;
use kube::{Client, Config};

pub use self::requests::Requests;

/// How long a request to the API server may go without a byte of its answer, counted from
/// when it was sent. kube sets no limit: a list or a watch sent on a connection to an API
/// server that died without closing it waited until the kernel gave up (about 15 minutes),
/// the caches stale all along. Longer than a watch may stay quiet: the API server ends each
/// after 290 s (kube's watcher default).
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// A client for the cluster the manager runs in (or the kubeconfig's current context),
/// counting what it sends in `requests`.
pub async fn connect(requests: &Requests) -> Result<Client, Box<dyn std::error::Error>> {
    let config = with_user_agent(with_read_timeout(Config::infer().await?));
    let host = config.cluster_url.authority().map(|a| a.to_string());
    let counting = requests.layer(&host.unwrap_or_default());
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&counting)
        .build())
}

/// Every request names the manager (`<project>/<version>`), as controller-runtime's do: audit
/// logs show who wrote, and the API server names the field manager of a write that gives none
/// (the finalizer's patches) after its first part, `MANAGER`, which the admission policy on
/// the project's kinds (config/policy/manager_kind_policy.yaml) tells from other writers'.
fn with_user_agent(mut config: Config) -> Config {
    let agent = format!("{}/{}", crate::MANAGER, env!("CARGO_PKG_VERSION"));
    if let Ok(agent) = http::HeaderValue::from_str(&agent) {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    config
}

fn with_read_timeout(mut config: Config) -> Config {
    config.read_timeout = Some(READ_TIMEOUT);
    // Counted from the request, not from when its pooled connection went idle.
    config.reset_reader_on_write = true;
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use tokio::net::TcpListener;

    #[tokio::test(start_paused = true)]
    async fn a_request_the_api_server_never_answers_fails_after_the_read_timeout() {
        // An API server that accepts connections and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((connection, _)) = listener.accept().await {
                held.push(connection);
            }
        });
        let config = with_read_timeout(Config::new(url.parse().unwrap()));
        let client = Client::try_from(config).unwrap();
        let started = tokio::time::Instant::now();
        let (configmaps, params) = (Api::<ConfigMap>::all(client), Default::default());
        let listed = tokio::time::timeout(READ_TIMEOUT * 2, configmaps.list(&params)).await;
        assert!(listed.expect("no answer within the read timeout").is_err());
        assert!(started.elapsed() >= READ_TIMEOUT, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn every_request_names_the_manager() {
        use tokio::io::AsyncReadExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let client = Client::try_from(with_user_agent(Config::new(url.parse().unwrap()))).unwrap();
        let request = tokio::spawn(async move {
            let (configmaps, params) = (Api::<ConfigMap>::all(client), Default::default());
            configmaps.list(&params).await
        });
        let (mut connection, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut chunk = [0; 1024];
            let read = connection.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the connection closed in the request's head");
            head.extend_from_slice(&chunk[..read]);
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        let agent = format!(
            "\r\nuser-agent: {}/{}\r\n",
            crate::MANAGER,
            env!("CARGO_PKG_VERSION")
        );
        assert!(head.contains(&agent), "{head}");
        request.abort();
    }
}
