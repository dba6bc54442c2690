//! Prometheus metrics of the reconcilers: how often they run, fail, and how long they take.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::Error;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub controller: String,
    pub error: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    reconciliations: Family<ControllerLabels, Counter>,
    failures: Family<ErrorLabels, Counter>,
    duration: HistogramFamily,
}

impl Default for Metrics {
    fn default() -> Self {
        let reconciliations = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        // 5 ms to ~10 s: reconciles are a few API round trips.
        let duration = HistogramFamily::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.005, 2.0, 12))
        });
        let mut registry = Registry::with_prefix("controller");
        registry.register(
            "reconcile",
            "Reconciliations started",
            reconciliations.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciliations that failed",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent reconciling",
            duration.clone(),
        );
        Metrics {
            registry,
            reconciliations,
            failures,
            duration,
        }
    }
}

impl Metrics {
    /// Counts a reconciliation of `controller`; its duration is recorded when the timer drops.
    pub fn reconcile_started(&self, controller: &str) -> ReconcileTimer {
        let labels = ControllerLabels {
            controller: controller.to_string(),
        };
        self.reconciliations.get_or_create(&labels).inc();
        ReconcileTimer {
            histogram: self.duration.get_or_create(&labels).clone(),
            start: Instant::now(),
        }
    }

    pub fn reconcile_failed(&self, controller: &str, error: &Error) {
        let labels = ErrorLabels {
            controller: controller.to_string(),
            error: error.metric_label(),
        };
        self.failures.get_or_create(&labels).inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Observes the reconcile duration when dropped, whichever way the reconcile ends.
pub struct ReconcileTimer {
    histogram: Histogram,
    start: Instant,
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.histogram.observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_and_errors() {
        let metrics = Metrics::default();
        drop(metrics.reconcile_started("widget"));
        metrics.reconcile_failed("widget", &Error::MissingNamespace("w".into()));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(r#"controller_reconcile_total{controller="widget"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"controller_reconcile_errors_total{controller="widget",error="missing_namespace"} 1"#), "{text}");
        assert!(
            text.contains(r#"controller_reconcile_duration_seconds_count{controller="widget"} 1"#),
            "{text}"
        );
    }
}
