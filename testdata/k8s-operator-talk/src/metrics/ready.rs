//! `operator_ready_objects{controller,status}`: how many objects each controller has, by the
//! status of their `Ready` condition (`True`, `False`, or `Unknown` while they have none). It is
//! counted from the controller's cache at each scrape, so it stays right across restarts,
//! deletions and leader changes without bookkeeping of its own.

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// Objects by the status of their `Ready` condition, in the order of `STATUSES`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadyCounts([i64; 3]);

impl ReadyCounts {
    /// Counts the `Ready` statuses given, `None` for an object without the condition.
    pub fn of<'a>(statuses: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        let mut counts = [0; 3];
        for status in statuses {
            let i = STATUSES[..2]
                .iter()
                .position(|s| Some(*s) == status)
                .unwrap_or(2);
            counts[i] += 1;
        }
        Self(counts)
    }
}

type Source = (&'static str, Box<dyn Fn() -> ReadyCounts + Send + Sync>);

/// The controllers' counting functions, shared between `Metrics` (which adds them as the
/// controllers start) and the registry (which calls them at each scrape).
#[derive(Clone, Default)]
pub struct ReadyObjects(Arc<Mutex<Vec<Source>>>);

impl std::fmt::Debug for ReadyObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadyObjects")
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadyLabels {
    controller: String,
    status: String,
}

impl ReadyObjects {
    pub fn add(&self, controller: &'static str, count: Box<dyn Fn() -> ReadyCounts + Send + Sync>) {
        let mut sources = self.0.lock().expect("ready objects lock poisoned");
        sources.retain(|(name, _)| *name != controller);
        sources.push((controller, count));
    }
}

impl Collector for ReadyObjects {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sources = self.0.lock().expect("ready objects lock poisoned");
        if sources.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "operator_ready_objects",
            "Objects per controller by the status of their Ready condition",
            None,
            MetricType::Gauge,
        )?;
        for (controller, count) in sources.iter() {
            for (status, n) in STATUSES.iter().zip(count().0) {
                let labels = ReadyLabels {
                    controller: controller.to_string(),
                    status: status.to_string(),
                };
                ConstGauge::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
