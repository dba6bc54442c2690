//! State shared by every reconciler: the client, the event recorder, metrics, the retry
//! schedule and the manager's settings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tracing::warn;

use crate::events::Events;
use crate::metrics::Metrics;
use crate::retry::Retries;
use crate::watches::{Namespaces, Watches};
use crate::{Error, Result};

pub struct Context {
    pub client: Client,
    /// Records events in the background (see `events`).
    pub events: Events,
    pub metrics: Arc<Metrics>,
    pub retries: Retries,
    pub settings: Settings,
    /// Every watch the controllers run, and whether each has listed its objects.
    pub watches: Watches,
    /// Object key -> when its held-back status write is due (see `report`).
    status_due: Mutex<HashMap<String, Instant>>,
    /// Object key -> the resourceVersion a status was last written over, and a digest of that
    /// status: what the object shows until the cache holds a newer version (see `shows`).
    written: Mutex<HashMap<String, (String, u64)>>,
}

/// Whether a status that shows no failure may wait before it is written (failures never do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Written now.
    No,
    /// About to change again by itself (a rollout starting): held back, at most
    /// `Settings::status_pace` after it was first seen.
    Settling,
    /// Held back for this reconcile, however long the pace: a controller in a burst of new
    /// objects writes their statuses with their finalizers, once the burst is over (see
    /// `controller::finalizer_order`), and the caller reconciles again.
    Burst,
}

/// What the manager's flags tune in every controller.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Objects of one kind reconciled at once (`--max-concurrent-reconciles`). Unbounded, a
    /// burst of thousands opens as many API connections; a bound keeps memory flat.
    pub max_concurrent_reconciles: u16,
    /// How often a quiet object is checked again against the caches (`--sync-period`).
    pub sync_period: Duration,
    /// How long a status change may be held back while the controller expects it to change
    /// again by itself (a new Deployment's status is updated two or three times in a row by
    /// the Deployment controller): the burst then costs one write. Failures are never held. A
    /// deploy-image controller in a burst of new objects holds longer (`Hold::Burst`).
    pub status_pace: Duration,
    /// The namespaces every controller watches, its children's included (WATCH_NAMESPACE);
    /// every namespace by default.
    pub namespaces: Namespaces,
    /// How long one reconcile may take before it is abandoned and retried. The client's
    /// read timeout (`api_client::READ_TIMEOUT`, 300 s, longer than a watch stays quiet) is
    /// too long here: a request left unanswered on a dead connection would hold its object
    /// (which kube never reconciles twice at once) that long, and enough of them every
    /// worker, while the Lease, whose every try is cut short at half its renew deadline,
    /// keeps this replica the leader.
    pub reconcile_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_concurrent_reconciles: 16,
            sync_period: Duration::from_secs(300),
            status_pace: Duration::from_secs(30),
            namespaces: Namespaces::all(),
            reconcile_timeout: Duration::from_secs(120),
        }
    }
}

impl Context {
    pub fn new(client: Client, metrics: Arc<Metrics>) -> Self {
        Self::with_settings(client, metrics, Settings::default())
    }

    pub fn with_settings(client: Client, metrics: Arc<Metrics>, settings: Settings) -> Self {
        let reporter = Reporter {
            controller: crate::MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            events: Events::start(client.clone(), reporter),
            client,
            metrics,
            retries: Retries::default(),
            settings,
            watches: Watches::default(),
            status_due: Mutex::default(),
            written: Mutex::default(),
        }
    }

    /// Records an event on `obj` in the background. Best effort: failing to record one must
    /// not fail or slow the reconcile, so a failure is only logged.
    pub fn publish<K>(&self, obj: &K, type_: EventType, reason: &str, note: String)
    where
        K: Resource<DynamicType = ()>,
    {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(shortened(note)),
            action: "Reconcile".into(),
            secondary: None,
        };
        self.events.publish(event, obj.object_ref(&()));
    }
}

/// The API server refuses an event whose note is over 1 KB (events.k8s.io/v1); a longer
/// message (an API server's error can be) is cut at a character boundary, marked with "...".
pub(crate) fn shortened(mut note: String) -> String {
    const MAX: usize = 1024;
    if note.len() > MAX {
        let mut end = MAX - 3;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}

impl Context {
    /// Shows the outcome of a reconcile in `obj`'s status: writes `status` unless `current`
    /// already shows it. A failure is written at once, and recorded as a Warning event when
    /// the status did not show it yet, so each failure is announced once, not on every retry.
    /// A success may be held back (see `Hold`). Returns the outcome's value and when to
    /// reconcile this object again.
    #[allow(clippy::too_many_arguments)]
    pub async fn report<K, S, T>(
        &self,
        api: &Api<K>,
        obj: &K,
        current: Option<&S>,
        status: &S,
        hold: Hold,
        field_manager: &str,
        outcome: Result<T>,
    ) -> Result<(T, Action)>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
        S: Serialize + PartialEq,
    {
        let key = retry_key(obj);
        let desired = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
        let shown = serde_json::to_value(current).map_err(kube::Error::SerdeError)?;
        let changed = !self.shows(&key, obj, &shown, &desired);
        if changed && outcome.is_ok() {
            let held = match hold {
                Hold::No => None,
                Hold::Settling => self.hold_status(&key).map(Action::requeue),
                // The pace starts all the same: a status still settling once the burst is
                // over is not held back a whole pace more.
                Hold::Burst => {
                    self.hold_status(&key);
                    Some(Action::await_change())
                }
            };
            if let Some(action) = held {
                return outcome.map(|value| (value, action));
            }
        }
        if changed {
            let params = PatchParams {
                field_manager: Some(field_manager.into()),
                ..PatchParams::default()
            };
            let patch = serde_json::json!({ "status": merge_patch(&shown, &desired) });
            let name = obj.name_any();
            let patch = Patch::Merge(&patch);
            if let Err(write) = api.patch_status(&name, &params, &patch).await {
                // A failure the status cannot show is still announced, and it is what the
                // logs, the metrics and the retry see; the write's own error is logged.
                let Err(err) = outcome else {
                    return Err(write.into());
                };
                warn!(namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), error = %write, "writing the status failed");
                self.publish(obj, EventType::Warning, err.reason(), err.message());
                return Err(err);
            }
            self.status_due
                .lock()
                .expect("status lock poisoned")
                .remove(&key);
            if let Some(version) = obj.resource_version() {
                let written = (version, digest(&desired));
                self.written
                    .lock()
                    .expect("status lock poisoned")
                    .insert(key, written);
            }
        }
        if let Err(err) = &outcome
            && changed
        {
            self.publish(obj, EventType::Warning, err.reason(), err.message());
        }
        outcome.map(|value| (value, Action::requeue(self.settings.sync_period)))
    }

    /// Whether `obj` already shows `desired`: as cached (`shown`), or, while the cache still
    /// holds the version a status was written over, as written. A reconcile queued behind the
    /// one that wrote it (by an event of a child it created) reads the object before the
    /// cache has the write, and would write it, and announce a failure, a second time.
    fn shows<K: Resource>(&self, key: &str, obj: &K, shown: &Value, desired: &Value) -> bool {
        let mut written = self.written.lock().expect("status lock poisoned");
        match written.get(key) {
            Some((over, status)) if obj.meta().resource_version.as_ref() == Some(over) => {
                *status == digest(desired)
            }
            Some(_) => {
                // The cache has moved on, past the write.
                written.remove(key);
                shown == desired
            }
            None => shown == desired,
        }
    }

    /// How long the status write of `key` is still held back; `None` when it is due.
    fn hold_status(&self, key: &str) -> Option<Duration> {
        if self.settings.status_pace.is_zero() {
            return None;
        }
        let now = Instant::now();
        let mut due = self.status_due.lock().expect("status lock poisoned");
        // A deadline overdue by a resync is an object's that went while its status was held
        // (its watch had forgotten it already): a live one's would have been met by then.
        let stale = self.settings.sync_period + self.settings.status_pace;
        due.retain(|_, at| now.saturating_duration_since(*at) < stale);
        let at = *due
            .entry(key.to_string())
            .or_insert(now + self.settings.status_pace);
        (at > now).then(|| at - now)
    }

    /// Runs one reconcile's `work`, abandoned after `Settings::reconcile_timeout`. The work
    /// is boxed: a reconcile's future is large, and a copy of it in every wrapper on the
    /// stack of a thread would overflow it (a test thread has 2 MiB).
    pub fn bounded<'a, T: 'a>(
        &self,
        work: impl Future<Output = Result<T>> + 'a,
    ) -> impl Future<Output = Result<T>> + 'a {
        let limit = self.settings.reconcile_timeout;
        let work = Box::pin(work);
        async move {
            tokio::time::timeout(limit, work)
                .await
                .unwrap_or(Err(Error::Timeout(limit)))
        }
    }

    /// Forgets everything kept about the object `key`, once it is gone.
    pub fn forget(&self, key: &str) {
        self.retries.forget(key);
        self.status_due
            .lock()
            .expect("status lock poisoned")
            .remove(key);
        self.written
            .lock()
            .expect("status lock poisoned")
            .remove(key);
    }
}

/// The key of an object's retries: its uid, which a new object of the same name does not
/// share (`namespace/name` for an object not stored yet).
pub fn retry_key(obj: &impl Resource) -> String {
    let meta = obj.meta();
    match (&meta.uid, &meta.namespace, &meta.name) {
        (Some(uid), _, _) => uid.clone(),
        (None, Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, _, name) => name.clone().unwrap_or_default(),
    }
}

/// A digest of a status, to tell whether the one written is the one wanted. Conditions'
/// transition times are left out: a reconcile that read a stale status stamps an unchanged
/// condition with its own time, which says nothing new.
fn digest(status: &Value) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut status = status.clone();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
            condition.remove("lastTransitionTime");
        }
    }
    let mut hasher = DefaultHasher::new();
    status.to_string().hash(&mut hasher);
    hasher.finish()
}

/// `desired` as a JSON merge patch over `current`: a field `current` has and `desired` lacks
/// (an `Option` set back to `None` and skipped when serialized) becomes null, which removes
/// it; a merge patch would otherwise keep it, and the status would never show `desired`.
fn merge_patch(current: &Value, desired: &Value) -> Value {
    let (Value::Object(current), Value::Object(wanted)) = (current, desired) else {
        return desired.clone();
    };
    let mut patch: Map<String, Value> = wanted
        .iter()
        .map(|(key, value)| match current.get(key) {
            Some(old) => (key.clone(), merge_patch(old, value)),
            None => (key.clone(), value.clone()),
        })
        .collect();
    for gone in current.keys().filter(|key| !wanted.contains_key(*key)) {
        patch.insert(gone.clone(), Value::Null);
    }
    Value::Object(patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_digest_leaves_out_only_transition_times() {
        let status = |ready: &str, at: &str| {
            serde_json::json!({"observedGeneration": 1, "conditions": [
                {"type": "Ready", "status": ready, "reason": "R", "lastTransitionTime": at}
            ]})
        };
        let earlier = status("False", "2026-12-03T10:00:00Z");
        assert_eq!(
            digest(&earlier),
            digest(&status("False", "2026-12-03T10:00:01Z"))
        );
        assert_ne!(
            digest(&earlier),
            digest(&status("True", "2026-12-03T10:00:00Z"))
        );
    }

    #[tokio::test]
    async fn a_settling_status_is_held_back_for_the_pace_then_due_and_forgotten() {
        let pace = Duration::from_secs(60);
        let settings = Settings {
            status_pace: pace,
            ..Settings::default()
        };
        let (client, _server) = crate::controller::test_support::mock_client();
        let ctx = Context::with_settings(client, Arc::default(), settings.clone());
        let first = ctx.hold_status("uid-1").expect("held back at first sight");
        assert!(
            first <= pace && first > pace - Duration::from_secs(5),
            "{first:?}"
        );
        let again = ctx.hold_status("uid-1").expect("still held back");
        assert!(
            again <= first,
            "{again:?} after {first:?}: the deadline moved"
        );
        ctx.status_due
            .lock()
            .unwrap()
            .insert("uid-1".into(), Instant::now());
        assert_eq!(
            ctx.hold_status("uid-1"),
            None,
            "due once the pace has passed"
        );
        ctx.forget("uid-1");
        assert!(
            ctx.hold_status("uid-1").is_some(),
            "a new object starts a new pace"
        );
        // Held by a reconcile that ended after its object's watch had forgotten it.
        let overdue = Instant::now() - (settings.sync_period + pace);
        ctx.status_due
            .lock()
            .unwrap()
            .insert("gone".into(), overdue);
        ctx.hold_status("uid-2");
        let due = ctx.status_due.lock().unwrap();
        assert!(!due.contains_key("gone") && due.contains_key("uid-1"));
    }

    #[test]
    fn a_status_patch_removes_what_the_new_status_no_longer_has() {
        let shown = serde_json::json!({"ready": 1, "last": "x", "nested": {"a": 1, "b": 2}});
        let desired = serde_json::json!({"ready": 2, "nested": {"a": 1}, "new": [1]});
        assert_eq!(
            merge_patch(&shown, &desired),
            serde_json::json!({"ready": 2, "last": null, "nested": {"a": 1, "b": null}, "new": [1]})
        );
        // Nothing shown yet: the status as it is.
        assert_eq!(merge_patch(&Value::Null, &desired), desired);
    }

    #[test]
    fn event_notes_fit_the_api_servers_1_kb_at_a_character_boundary() {
        assert_eq!(shortened("quota exceeded".into()), "quota exceeded");
        let long = "é".repeat(600);
        let cut = shortened(long.clone());
        assert!(
            cut.len() <= 1024
                && cut.ends_with("...")
                && long.starts_with(cut.trim_end_matches("..."))
        );
        assert_eq!(shortened("x".repeat(1024)).len(), 1024);
    }
}
