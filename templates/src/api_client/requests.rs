//! client-go's `rest_client_requests_total{code,method,host}`, which controller-runtime
//! exports: every request the manager sends the API server, by the answer's status code
//! (`<error>` when none came: a refused connection, a timeout, a request given up), HTTP
//! method and API server.
//! Counted by a layer on kube's client, so that reads, writes, watches, Lease renewals and
//! events are all in it.

use std::task::{Context, Poll};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use http::{Request, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tower::{Layer, Service};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

/// The requests counted so far, shared by the client that counts and the registry that
/// exports them.
#[derive(Clone, Debug, Default)]
pub struct Requests(Family<RequestLabels, Counter>);

impl Requests {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            self.0.clone(),
        );
    }

    /// A layer counting the requests sent through it to the API server at `host`.
    pub fn layer(&self, host: &str) -> Counting {
        Counting {
            requests: self.clone(),
            host: host.to_string(),
        }
    }

    fn count(&self, code: String, method: String, host: String) {
        let labels = RequestLabels { code, method, host };
        self.0.get_or_create(&labels).inc();
    }
}

#[derive(Clone, Debug)]
pub struct Counting {
    requests: Requests,
    /// As client-go labels it: the API server's address as the client reaches it.
    host: String,
}

impl<S> Layer<S> for Counting {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counting: self.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Counted<S> {
    inner: S,
    counting: Counting,
}

impl<S, Body, Answer> Service<Request<Body>> for Counted<S>
where
    S: Service<Request<Body>, Response = Response<Answer>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    Answer: 'static,
{
    type Response = Response<Answer>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Answer>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let mut sent = Sent {
            counting: self.counting.clone(),
            method: request.method().as_str().to_string(),
            code: None,
        };
        let answer = self.inner.call(request);
        async move {
            let answer = answer.await;
            if let Ok(answer) = &answer {
                sent.answered(answer.status().as_str());
            }
            answer
        }
        .boxed()
    }
}

/// A request sent, counted when its answer comes or when it is given up: a request with no
/// answer (an error, or a timeout that dropped it: a reconcile's, a Lease renewal's) counts
/// as `<error>`, as client-go counts a request whose context ended.
struct Sent {
    counting: Counting,
    method: String,
    code: Option<String>,
}

impl Sent {
    fn answered(&mut self, code: &str) {
        self.code = Some(code.to_string());
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        let code = self.code.take().unwrap_or_else(|| "<error>".into());
        let Counting { requests, host } = &self.counting;
        requests.count(code, std::mem::take(&mut self.method), host.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use tower::ServiceExt;

    fn encoded(requests: &Requests) -> String {
        let mut registry = Registry::default();
        requests.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[tokio::test]
    async fn counts_each_request_by_code_method_and_host_and_failures_as_errors() {
        let requests = Requests::default();
        let api_server = tower::service_fn(|request: Request<()>| async move {
            match request.uri().path() {
                "/down" => Err("connection refused"),
                "/slow" => std::future::pending().await,
                "/missing" => Ok(Response::builder().status(404).body(()).unwrap()),
                _ => Ok(Response::new(())),
            }
        });
        let client = requests.layer("10.96.0.1:443").layer(api_server);
        for (method, path) in [
            ("GET", "/a"),
            ("GET", "/a"),
            ("PATCH", "/missing"),
            ("PUT", "/down"),
        ] {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .body(())
                .unwrap();
            let answer = client.clone().oneshot(request).await;
            assert_eq!(answer.is_err(), path == "/down");
            if path == "/missing" {
                assert_eq!(answer.unwrap().status(), StatusCode::NOT_FOUND);
            }
        }
        // One given up before its answer came (a timeout drops it).
        let request = Request::builder()
            .method("DELETE")
            .uri("/slow")
            .body(())
            .unwrap();
        let given_up = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            client.clone().oneshot(request),
        );
        assert!(given_up.await.is_err(), "the slow request was answered");
        let out = encoded(&requests);
        for expected in [
            r#"rest_client_requests_total{code="<error>",method="DELETE",host="10.96.0.1:443"} 1"#,
            r#"rest_client_requests_total{code="200",method="GET",host="10.96.0.1:443"} 2"#,
            r#"rest_client_requests_total{code="404",method="PATCH",host="10.96.0.1:443"} 1"#,
            r#"rest_client_requests_total{code="<error>",method="PUT",host="10.96.0.1:443"} 1"#,
        ] {
            assert!(out.contains(expected), "no {expected} in\n{out}");
        }
    }
}
