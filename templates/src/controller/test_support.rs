//! Unit-test helpers: a kube `Client` whose API server is a script the test writes. The script
//! lists the requests a reconcile must send; concurrent requests may come in any order.

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::Value;

pub type ApiServer = tower_test::mock::Handle<Request<Body>, Response<Body>>;

pub fn mock_client() -> (Client, ApiServer) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// How the scripted API server answers one expected request.
#[derive(Debug)]
pub enum Reply {
    /// This status code and JSON body.
    Json(u16, Value),
    /// The request's own body, as the API server answers a create or an apply.
    Echo,
}

/// One request the reconcile must send: method, path, and the answer it gets.
pub type Expected = (&'static str, String, Reply);

/// A request the server saw: method, path and JSON body (`Value::Null` when empty).
pub type Seen = (String, String, Value);

/// Serves exactly the `expected` requests, in any order, and returns them in order of arrival.
/// Panics on a request that is not expected; the reconcile fails if it sends one more after.
pub async fn serve(mut server: ApiServer, mut expected: Vec<Expected>) -> Vec<Seen> {
    let mut seen = Vec::new();
    while !expected.is_empty() {
        let Some((request, respond)) = server.next_request().await else {
            panic!("the reconcile ended without sending {expected:?}");
        };
        let (method, path) = (
            request.method().to_string(),
            request.uri().path().to_string(),
        );
        let Some(index) = expected
            .iter()
            .position(|(m, p, _)| *m == method && *p == path)
        else {
            panic!("unexpected request {method} {path}; still expected: {expected:?}");
        };
        let (_, _, reply) = expected.remove(index);
        let body = request
            .into_body()
            .collect_bytes()
            .await
            .expect("reading the request body");
        let (status, reply) = match reply {
            Reply::Json(status, value) => (status, serde_json::to_vec(&value).unwrap()),
            Reply::Echo => (200, body.to_vec()),
        };
        respond.send_response(
            Response::builder()
                .status(status)
                .body(Body::from(reply))
                .unwrap(),
        );
        let json = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        };
        seen.push((method, path, json));
    }
    seen
}

/// The body of the first seen request with `method` on `path`.
pub fn body<'a>(seen: &'a [Seen], method: &str, path: &str) -> &'a Value {
    let found = seen.iter().find(|(m, p, _)| m == method && p == path);
    &found
        .unwrap_or_else(|| panic!("no {method} {path} in {seen:?}"))
        .2
}

/// A Kubernetes `Status` reply for errors such as 404.
pub fn status(code: u16, reason: &str) -> Value {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code, "message": reason,
    })
}
