//! The election against a fake API server that keeps one Lease as kube-apiserver does (an
//! update must carry the current resourceVersion) and fails or stops answering on demand.
//! Timings are cut to milliseconds, on tokio's paused clock where a test bounds them (a loaded
//! machine cannot make them late); the rules themselves are tested in `lease`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Response;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::time::{Instant, sleep, timeout};

use super::*;
use crate::controller::test_support::{ApiServer, mock_client, status};

const NAME: &str = "app-leader";
const FAST: Timings = Timings {
    lease_duration: Duration::from_secs(1),
    renew_deadline: Duration::from_millis(300),
    retry_period: Duration::from_millis(50),
};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Mode {
    #[default]
    Up,
    Failing,
    Silent,
    Forbidden,
}

#[derive(Default)]
struct Server {
    lease: Option<Value>,
    version: u64,
    mode: Mode,
    /// How many of the next requests get no answer, whatever the mode.
    hang_next: usize,
    /// How long each answer takes.
    latency: Duration,
    /// Every accepted create (POST) and update (PUT), in order.
    writes: Vec<(String, Value)>,
}

type Shared = Arc<Mutex<Server>>;

impl Server {
    fn answer(&mut self, method: &str, body: &[u8]) -> (u16, Value) {
        match (self.mode, method) {
            (Mode::Failing, _) => (500, status(500, "InternalError")),
            (Mode::Forbidden, _) => (403, status(403, "Forbidden")),
            (_, "GET") => match &self.lease {
                Some(lease) => (200, lease.clone()),
                None => (404, status(404, "NotFound")),
            },
            (_, "POST" | "PUT") => {
                let lease: Value = serde_json::from_slice(body).unwrap();
                let current = self
                    .lease
                    .as_ref()
                    .map(|l| &l["metadata"]["resourceVersion"]);
                let sent = (method == "PUT").then(|| &lease["metadata"]["resourceVersion"]);
                if current != sent {
                    return (409, status(409, "Conflict"));
                }
                self.writes.push((method.to_string(), lease.clone()));
                (200, self.store(lease))
            }
            (_, other) => panic!("unexpected {other} on the Lease"),
        }
    }

    fn store(&mut self, mut lease: Value) -> Value {
        self.version += 1;
        lease["metadata"]["resourceVersion"] = json!(self.version.to_string());
        self.lease = Some(lease.clone());
        lease
    }

    /// Another replica writes `spec` into the Lease.
    fn written_by_other(&mut self, spec: Value) {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": NAME, "namespace": "ns"}, "spec": spec,
        });
        self.store(lease);
    }
}

fn serve(mut api: ApiServer, server: Shared) {
    tokio::spawn(async move {
        let mut unanswered = Vec::new();
        while let Some((request, respond)) = api.next_request().await {
            let method = request.method().to_string();
            let body = request.into_body().collect_bytes().await.unwrap();
            let (hangs, latency) = {
                let mut server = server.lock().unwrap();
                let once = server.hang_next > 0;
                server.hang_next = server.hang_next.saturating_sub(1);
                (once || server.mode == Mode::Silent, server.latency)
            };
            if hangs {
                unanswered.push(respond);
                continue;
            }
            sleep(latency).await;
            let (code, reply) = server.lock().unwrap().answer(&method, &body);
            let reply = Body::from(serde_json::to_vec(&reply).unwrap());
            respond.send_response(Response::builder().status(code).body(reply).unwrap());
        }
    });
}

fn acquire(server: &Shared) -> impl Future<Output = Result<Leadership, LeaderError>> + use<> {
    acquire_with(server, FAST)
}

fn acquire_with(
    server: &Shared,
    timings: Timings,
) -> impl Future<Output = Result<Leadership, LeaderError>> + use<> {
    let (client, api) = mock_client();
    serve(api, server.clone());
    Leadership::acquire(client, "ns", NAME, "me".into(), timings)
}

fn spec(server: &Shared) -> Value {
    server.lock().unwrap().lease.as_ref().unwrap()["spec"].clone()
}

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_held_by_us_then_renewed() {
    let server = Shared::default();
    let _leader = acquire(&server).await.unwrap();
    let (method, lease) = server.lock().unwrap().writes[0].clone();
    assert_eq!(method, "POST");
    assert_eq!(lease["metadata"]["name"], NAME);
    assert_eq!(lease["spec"]["holderIdentity"], "me");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
    sleep(FAST.retry_period * 4).await;
    let writes = server.lock().unwrap().writes.len();
    assert!(writes >= 3, "{writes} writes: renewals every retry period");
    assert_eq!(spec(&server)["holderIdentity"], "me");
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_gives_up_at_the_renew_deadline() {
    for mode in [Mode::Failing, Mode::Silent] {
        let server = Shared::default();
        let mut leader = acquire(&server).await.unwrap();
        sleep(FAST.retry_period * 3).await;
        let cut = Instant::now();
        server.lock().unwrap().mode = mode;
        let lost = timeout(FAST.renew_deadline * 4, leader.lost()).await;
        let lost = lost.unwrap_or_else(|_| panic!("{mode:?}: still leading"));
        let after = cut.elapsed();
        assert!(matches!(lost, LeaderError::Lost(_)), "{mode:?}: {lost}");
        // The last renewal started at most one retry period (and its answer) before the cut.
        let earliest = FAST.renew_deadline - FAST.retry_period * 2;
        assert!(after >= earliest, "{mode:?}: gave up after {after:?}");
        // And no later than the deadline: past it, a standby may already lead (once the
        // lease duration, longer than the deadline, has passed on its own clock).
        assert!(
            after <= FAST.renew_deadline,
            "{mode:?}: gave up after {after:?}"
        );
        assert!(FAST.renew_deadline < FAST.lease_duration);
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_hangs_is_tried_again_before_the_deadline() {
    let server = Shared::default();
    let mut leader = acquire(&server).await.unwrap();
    let writes = server.lock().unwrap().writes.len();
    server.lock().unwrap().hang_next = 1;
    let kept = timeout(FAST.renew_deadline * 3, leader.lost()).await;
    assert!(kept.is_err(), "lost the Lease: {}", kept.unwrap());
    assert!(
        server.lock().unwrap().writes.len() > writes,
        "never renewed after the hang"
    );
}

/// With the default timings and a slow API server (each answer 0.5 s, so a renewal, GET then
/// PUT, takes 1 s), a hung try is cut 5 s after it started, 8 s after the last renewal began:
/// only a try made again at once, not after the 2 s retry period, lands before the 10 s
/// deadline.
#[tokio::test(start_paused = true)]
async fn a_hung_renewal_is_made_again_at_once_with_the_default_timings() {
    let server = Shared::default();
    server.lock().unwrap().latency = Duration::from_millis(500);
    let mut leader = acquire_with(&server, Timings::DEFAULT).await.unwrap();
    let writes = server.lock().unwrap().writes.len();
    sleep(Timings::DEFAULT.retry_period * 2).await;
    assert!(
        server.lock().unwrap().writes.len() > writes,
        "never renewed"
    );
    server.lock().unwrap().hang_next = 1;
    let kept = timeout(Timings::DEFAULT.renew_deadline * 2, leader.lost()).await;
    assert!(kept.is_err(), "lost the Lease: {}", kept.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_finds_another_holder_gives_up_at_once() {
    let server = Shared::default();
    let mut leader = acquire(&server).await.unwrap();
    let spec = json!({"holderIdentity": "other", "leaseDurationSeconds": 15});
    server.lock().unwrap().written_by_other(spec);
    let lost = timeout(FAST.retry_period * 4, leader.lost()).await.unwrap();
    assert!(lost.to_string().contains("other holds it"), "{lost}");
}

#[tokio::test]
async fn a_release_clears_the_holder_before_it_returns() {
    let server = Shared::default();
    acquire(&server).await.unwrap().release().await;
    let spec = spec(&server);
    assert_eq!(spec.get("holderIdentity"), None, "{spec}");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    // Only the create was a takeover.
    assert_eq!(spec["leaseTransitions"], 0);
}

#[tokio::test(start_paused = true)]
async fn a_standby_waits_for_the_holder_and_takes_a_released_lease_at_its_next_try() {
    let server = Shared::default();
    let held =
        json!({"holderIdentity": "other", "leaseDurationSeconds": 15, "leaseTransitions": 3});
    server.lock().unwrap().written_by_other(held);
    let standby = tokio::spawn(acquire(&server));
    sleep(FAST.retry_period * 4).await;
    assert!(!standby.is_finished(), "took a Lease another replica holds");
    let released = json!({"leaseDurationSeconds": 1, "leaseTransitions": 3});
    server.lock().unwrap().written_by_other(released);
    let released_at = Instant::now();
    let leader = timeout(FAST.retry_period * 3, standby).await;
    leader.expect("took the released Lease").unwrap().unwrap();
    assert!(released_at.elapsed() <= FAST.retry_period * 3);
    assert_eq!(spec(&server)["holderIdentity"], "me");
    assert_eq!(spec(&server)["leaseTransitions"], 4);
}

#[tokio::test(start_paused = true)]
async fn a_lease_the_manager_may_not_use_is_an_error_with_a_hint() {
    let server = Shared::default();
    server.lock().unwrap().mode = Mode::Forbidden;
    let started = Instant::now();
    let err = acquire(&server).await.err().expect("refused");
    assert!(started.elapsed() >= REFUSED_FOR, "{:?}", started.elapsed());
    assert!(matches!(err, LeaderError::Forbidden(..)), "{err}");
    assert!(
        err.to_string().contains("leader_election_role.yaml"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_that_ends_in_time_is_waited_out() {
    let server = Shared::default();
    server.lock().unwrap().mode = Mode::Forbidden;
    let standby = tokio::spawn(acquire(&server));
    sleep(REFUSED_FOR / 2).await;
    server.lock().unwrap().mode = Mode::Up;
    let leader = timeout(FAST.retry_period * 3, standby).await;
    leader.expect("took the Lease").unwrap().unwrap();
}

#[test]
fn the_deployed_role_allows_the_lease_this_manager_takes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/rbac/leader_election_role.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let role: k8s_openapi::api::rbac::v1::Role = serde_saphyr::from_str(&text).unwrap();
    let rules = role.rules.unwrap_or_default();
    // What the manager sends for its Lease: a create (no name yet), then gets and updates of
    // that one name.
    for (verb, name) in [
        ("create", None),
        ("get", Some(LEASE)),
        ("update", Some(LEASE)),
    ] {
        let allowed = rules.iter().any(|rule| {
            let has = |list: &Option<Vec<String>>, value: &str| {
                list.as_ref()
                    .is_some_and(|items| items.iter().any(|i| i == value))
            };
            has(&rule.api_groups, "coordination.k8s.io")
                && has(&rule.resources, "leases")
                && rule.verbs.iter().any(|v| v == verb)
                // A create names no object yet, so a rule limited to names cannot grant it.
                && (rule.resource_names.is_none()
                    || name.is_some_and(|name| has(&rule.resource_names, name)))
        });
        assert!(
            allowed,
            "{path} does not allow {verb} on the Lease {LEASE} (the crate's name and -leader):\n{text}"
        );
    }
}
