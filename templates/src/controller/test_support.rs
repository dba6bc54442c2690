//! Unit-test helpers: a kube `Client` whose API server is a script the test writes (the
//! script lists the requests a reconcile must send, and any other request fails the test;
//! concurrent requests may come in any order), and caches filled with given objects.

// Every unit test uses what it needs of these helpers: the leader-election tests only the
// client and the server, the deploy-image controllers' tests all of them. A project without a
// deploy-image kind must pass clippy all the same.
#![allow(dead_code)]

use http::{Request, Response};
use kube::Client;
use kube::Resource;
use kube::client::Body;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::controller::compact::{self, CompactStore};

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

/// A request the server saw.
#[derive(Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The query string, e.g. `fieldManager=x&force=true`.
    pub query: String,
    pub content_type: String,
    /// The JSON body, `Value::Null` when empty.
    pub body: Value,
}

impl Seen {
    /// The value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }
}

/// A cache holding `objects`, listed and ready, as a watch would leave it.
pub fn cache<K>(objects: Vec<K>) -> CompactStore<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    let (store, mut writer) = compact::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for obj in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(obj));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

/// Serves exactly the `expected` requests, in any order, until the client is dropped (the
/// reconcile has ended), and returns them in order of arrival. Panics on a request that is not
/// expected, or when the reconcile ended without sending every expected one.
pub async fn serve(mut server: ApiServer, mut expected: Vec<Expected>) -> Vec<Seen> {
    let mut seen = Vec::new();
    while let Some((request, respond)) = server.next_request().await {
        let (method, path) = (
            request.method().to_string(),
            request.uri().path().to_string(),
        );
        let query = request.uri().query().unwrap_or_default().to_string();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_string();
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
        seen.push(Seen {
            method,
            path,
            query,
            content_type,
            body: json,
        });
    }
    assert!(
        expected.is_empty(),
        "the reconcile ended without sending {expected:?}"
    );
    seen
}

/// The first seen request with `method` on `path`.
pub fn request<'a>(seen: &'a [Seen], method: &str, path: &str) -> &'a Seen {
    seen.iter()
        .find(|s| s.method == method && s.path == path)
        .unwrap_or_else(|| panic!("no {method} {path} in {seen:?}"))
}

/// The body of the first seen request with `method` on `path`.
pub fn body<'a>(seen: &'a [Seen], method: &str, path: &str) -> &'a Value {
    &request(seen, method, path).body
}

/// A Kubernetes `Status` reply for errors such as 404.
pub fn status(code: u16, reason: &str) -> Value {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code, "message": reason,
    })
}
