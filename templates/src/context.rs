//! State shared by every reconciler: the client, the event recorder, metrics, and the
//! per-object retry backoff.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::events::{Recorder, Reporter};
use kube::{Client, ResourceExt};

use crate::metrics::Metrics;

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    failures: Mutex<HashMap<String, u32>>,
}

/// First retry after a failed reconcile; doubled on each further failure up to `MAX_BACKOFF`.
const BASE_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

impl Context {
    pub fn new(client: Client, metrics: Arc<Metrics>) -> Self {
        let reporter = Reporter {
            controller: crate::MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            metrics,
            failures: Mutex::default(),
        }
    }

    /// The delay before retrying `key` after one more failure: 1 s, 2 s, 4 s, ... 5 min.
    pub fn backoff(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock poisoned");
        let count = failures.entry(key.to_string()).or_default();
        *count = count.saturating_add(1);
        BASE_BACKOFF
            .saturating_mul(2u32.saturating_pow(*count - 1))
            .min(MAX_BACKOFF)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn reset_backoff(&self, key: &str) {
        self.failures
            .lock()
            .expect("backoff lock poisoned")
            .remove(key);
    }
}

/// `namespace/name`, or `name` for a cluster-scoped object: the key of its backoff.
pub fn object_key(obj: &impl ResourceExt) -> String {
    match obj.namespace() {
        Some(namespace) => format!("{namespace}/{}", obj.name_any()),
        None => obj.name_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn backoff_doubles_up_to_the_cap_and_resets() {
        let (client, _handle) = crate::controller::test_support::mock_client();
        let ctx = Context::new(client, Arc::default());
        let delays: Vec<u64> = (0..12).map(|_| ctx.backoff("ns/a").as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(
            ctx.backoff("ns/b"),
            Duration::from_secs(1),
            "keys are independent"
        );
        ctx.reset_backoff("ns/a");
        assert_eq!(ctx.backoff("ns/a"), Duration::from_secs(1));
    }
}
