//! Events, recorded in the background one at a time, as client-go's event broadcaster does
//! for controller-runtime: a reconcile never waits on an event, and a burst of them (a
//! thousand new objects each announced once) takes one API request at a time instead of
//! competing with the writes that make the children. Events are best effort: when the API
//! server is down or slower than they come, the queue holds `QUEUED` and then drops the newest,
//! with a warning in the log, instead of holding reconciles back. Each event's request may take
//! `SEND_TIMEOUT`: the client's read timeout (300 s, sized for watches) would let one request
//! left unanswered on a dead connection hold every event after it for minutes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, Recorder, Reporter};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Events waiting to be recorded, at most (client-go's broadcaster queue holds as many).
const QUEUED: usize = 1000;
/// How long one event's request may take before it is given up.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

enum Queued {
    Event(Box<(Event, ObjectReference)>),
    /// Answered once every event queued before it was recorded (or failed).
    Flush(oneshot::Sender<()>),
}

/// Where events are queued (shared through the `Context`). The recorder stops once this is
/// dropped.
pub struct Events {
    queue: mpsc::Sender<Queued>,
    /// Events dropped so far: logged at the 1st, 2nd, 4th, 8th... so that an outage does not
    /// flood the log.
    dropped: AtomicUsize,
}

impl Events {
    /// Starts the recorder on the current Tokio runtime.
    pub fn start(client: Client, reporter: Reporter) -> Self {
        let (queue, queued) = mpsc::channel(QUEUED);
        tokio::spawn(record(client, reporter, queued));
        Events {
            queue,
            dropped: AtomicUsize::new(0),
        }
    }

    /// Queues `event` about the object `regarding`; never waits.
    pub fn publish(&self, event: Event, regarding: ObjectReference) {
        let reason = event.reason.clone();
        let why = match self
            .queue
            .try_send(Queued::Event(Box::new((event, regarding))))
        {
            Ok(()) => return,
            Err(TrySendError::Full(_)) => "the queue is full",
            Err(TrySendError::Closed(_)) => "the event recorder has stopped",
        };
        let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if dropped.is_power_of_two() {
            warn!("event {reason} dropped ({dropped} so far): {why}");
        }
    }

    /// Waits until every event queued so far is recorded, at most `limit`: at shutdown, so
    /// that the last reconciles' events are not lost, and in tests.
    pub async fn flush(&self, limit: Duration) {
        let (done, recorded) = oneshot::channel();
        // The limit covers the wait for room in a full queue too.
        let flushed = async {
            if self.queue.send(Queued::Flush(done)).await.is_ok() {
                let _ = recorded.await;
            }
        };
        if tokio::time::timeout(limit, flushed).await.is_err() {
            warn!("events still waiting to be recorded after {limit:?}; leaving them");
        }
    }
}

async fn record(client: Client, reporter: Reporter, mut queued: mpsc::Receiver<Queued>) {
    while let Some(next) = queued.recv().await {
        match next {
            Queued::Event(queued) => {
                let (event, regarding) = *queued;
                // A recorder per event, as kube documents: a shared one keeps every event it
                // sent in a cache that it trims only when it sends the next, so a quiet
                // manager would hold its last burst for good. A change is announced once,
                // not on every retry, so there is no series for that cache to count.
                let recorder = Recorder::new(client.clone(), reporter.clone());
                match tokio::time::timeout(SEND_TIMEOUT, recorder.publish(&event, &regarding)).await
                {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => warn!("recording event {}: {err}", event.reason),
                    Err(_) => warn!(
                        "recording event {}: no answer within {SEND_TIMEOUT:?}",
                        event.reason
                    ),
                }
            }
            Queued::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_support::{Reply, mock_client, serve};
    use kube::runtime::events::EventType;

    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

    fn event(reason: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: None,
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn regarding() -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some("default".into()),
            name: Some("test".into()),
            ..ObjectReference::default()
        }
    }

    fn start() -> (Events, crate::controller::test_support::ApiServer) {
        let (client, server) = mock_client();
        let reporter = Reporter {
            controller: "test".into(),
            instance: None,
        };
        (Events::start(client, reporter), server)
    }

    /// Publishes `published` events before the recorder runs, then flushes them to an API server
    /// that accepts each; returns the reasons it received, in order.
    async fn recorded(published: usize) -> Vec<String> {
        let (events, server) = start();
        for n in 0..published {
            events.publish(event(&format!("Event{n}")), regarding());
        }
        // The test's runtime has one thread: the recorder takes nothing off the queue before
        // this test awaits, so the queue holds the first QUEUED.
        let answered = published.min(QUEUED);
        let script = (0..answered)
            .map(|_| ("POST", EVENTS.to_string(), Reply::Echo))
            .collect();
        let served = tokio::spawn(serve(server, script));
        events.flush(Duration::from_secs(10)).await;
        drop(events);
        let seen = served.await.expect("serving the events");
        seen.iter()
            .map(|s| s.body["reason"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[tokio::test]
    async fn events_are_recorded_in_the_order_they_were_published() {
        assert_eq!(recorded(3).await, ["Event0", "Event1", "Event2"]);
    }

    #[tokio::test]
    async fn flush_gives_up_after_its_limit_when_the_api_server_does_not_answer() {
        let (events, mut server) = start();
        events.publish(event("Stuck"), regarding());
        // The recorder sends it and waits for an answer that never comes; then the queue fills.
        let _unanswered = server
            .next_request()
            .await
            .expect("the first event's request");
        for n in 0..QUEUED {
            events.publish(event(&format!("Event{n}")), regarding());
        }
        let flushed = events.flush(Duration::from_millis(100));
        tokio::time::timeout(Duration::from_secs(5), flushed)
            .await
            .expect("flush waited past its limit");
    }

    /// The clock is paused and jumps ahead whenever every task waits, so `SEND_TIMEOUT` passes
    /// at once.
    #[tokio::test(start_paused = true)]
    async fn an_unanswered_request_does_not_stop_the_events_after_it() {
        let (events, mut server) = start();
        events.publish(event("Unanswered"), regarding());
        events.publish(event("Next"), regarding());
        let _unanswered = server
            .next_request()
            .await
            .expect("the first event's request");
        let next = tokio::time::timeout(Duration::from_secs(60), server.next_request());
        let (request, _) = next
            .await
            .expect("the next event waited for the first")
            .expect("a request");
        let body = request
            .into_body()
            .collect_bytes()
            .await
            .expect("the request's body");
        let body: serde_json::Value = serde_json::from_slice(&body).expect("a JSON event");
        assert_eq!(body["reason"], "Next");
    }

    #[tokio::test]
    async fn a_full_queue_drops_the_newest_events_instead_of_waiting() {
        let reasons = recorded(QUEUED + 5).await;
        assert_eq!(reasons.len(), QUEUED);
        assert_eq!(
            reasons.last().map(String::as_str),
            Some(format!("Event{}", QUEUED - 1).as_str())
        );
    }
}
