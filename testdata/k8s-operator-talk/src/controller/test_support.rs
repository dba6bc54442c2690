//! Unit-test helpers: a kube `Client` whose API server is a script the test plays out.
//! Tests assert every request the reconciler sends, in order, and what it sends nothing more.

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::Value;

pub type ApiServer = tower_test::mock::Handle<Request<Body>, Response<Body>>;

pub fn mock_client() -> (Client, ApiServer) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// Expects the next request to be `method` on `path`, answers it with `status` and `reply`,
/// and returns the request's JSON body (`Value::Null` when it has none).
pub async fn expect(
    server: &mut ApiServer,
    method: &str,
    path: &str,
    status: u16,
    reply: Value,
) -> Value {
    let (request, respond) = server
        .next_request()
        .await
        .expect("the reconciler sent no further request");
    assert_eq!(
        (request.method().as_str(), request.uri().path()),
        (method, path),
        "unexpected request {}",
        request.uri()
    );
    let body = request
        .into_body()
        .collect_bytes()
        .await
        .expect("reading the request body");
    let response = Response::builder()
        .status(status)
        .body(Body::from(serde_json::to_vec(&reply).unwrap()))
        .unwrap();
    respond.send_response(response);
    if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).expect("the request body is JSON")
    }
}

/// A Kubernetes `Status` reply for errors such as 404.
pub fn status(code: u16, reason: &str) -> Value {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code, "message": reason})
}
