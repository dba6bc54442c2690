//! Prometheus metrics of the manager, with controller-runtime's names and labels, so that
//! panels and alerts made for kubebuilder operators work unchanged: the reconciles'
//! (`controller_runtime_reconcile_total{controller,result}`, `..._reconcile_errors_total`,
//! `..._reconcile_time_seconds`, `..._max_concurrent_reconciles`, `..._active_workers`), the
//! webhooks' (`controller_runtime_webhook_*`, see `crate::webhook::metrics`), the client's
//! (`rest_client_requests_total`, see `crate::api_client`), the Lease's
//! (`leader_election_master_status`), the certificate files' (`certwatcher_*`, see
//! `crate::tls`) and the process's (`process_*`, see `process`). kube's
//! controller keeps its queue to itself: of controller-runtime's `workqueue_*` families, only
//! `workqueue_retries_total{name}` is here (every failed reconcile is retried after a delay),
//! and panels on the queue's depth, adds or waits find nothing. What failed is counted apart, by cause, in
//! `operator_reconcile_errors_by_cause_total`, and objects by the status of their `Ready`
//! condition in `operator_ready_objects` (see `ready`).

mod process;
mod ready;

use std::time::{Duration, Instant};

use kube::runtime::controller::Action;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use self::ready::ReadyCounts;
use self::ready::ReadyObjects;
use crate::api_client::Requests;
use crate::{Error, Result};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: String,
    /// `success`, `error`, `requeue_after` (a reconcile asked to run again early).
    pub result: String,
}

/// A work queue's labels: controller-runtime names each controller's queue after it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabels {
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabels {
    pub controller: String,
    pub cause: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// controller-runtime's buckets for `reconcile_time_seconds`.
const TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

pub struct Metrics {
    registry: Registry,
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    timeouts: Family<ControllerLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    causes: Family<CauseLabels, Counter>,
    time: HistogramFamily,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active: Family<ControllerLabels, Gauge>,
    ready: ReadyObjects,
    leading: Family<LeaseLabels, Gauge>,
    /// The requests of the manager's client (`api_client::connect`).
    pub client_requests: Requests,
}

impl Default for Metrics {
    fn default() -> Self {
        let total = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ControllerLabels, Counter>::default();
        let timeouts = Family::<ControllerLabels, Counter>::default();
        let retries = Family::<QueueLabels, Counter>::default();
        let causes = Family::<CauseLabels, Counter>::default();
        let time = HistogramFamily::new_with_constructor(|| Histogram::new(TIME_BUCKETS));
        let max_concurrent = Family::<ControllerLabels, Gauge>::default();
        let active = Family::<ControllerLabels, Gauge>::default();
        let mut registry = Registry::default();
        let runtime = registry.sub_registry_with_prefix("controller_runtime");
        runtime.register(
            "reconcile",
            "Total number of reconciliations per controller",
            total.clone(),
        );
        runtime.register(
            "reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        runtime.register(
            "reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            timeouts.clone(),
        );
        runtime.register(
            "reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            time.clone(),
        );
        runtime.register(
            "max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        runtime.register(
            "active_workers",
            "Number of currently used workers per controller",
            active.clone(),
        );
        registry.sub_registry_with_prefix("operator").register(
            "reconcile_errors_by_cause",
            "Reconciliation errors per controller and cause",
            causes.clone(),
        );
        let ready = ReadyObjects::default();
        registry.register_collector(Box::new(ready.clone()));
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            retries.clone(),
        );
        let leading = Family::<LeaseLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
            leading.clone(),
        );
        let client_requests = Requests::default();
        client_requests.register(&mut registry);
        crate::webhook::metrics::served().register(&mut registry);
        crate::tls::reads().register(&mut registry);
        registry.register_collector(Box::new(process::Process));
        Metrics {
            registry,
            total,
            errors,
            timeouts,
            retries,
            causes,
            time,
            max_concurrent,
            active,
            ready,
            leading,
            client_requests,
        }
    }
}

/// The results `controller_runtime_reconcile_total` counts, as controller-runtime names them
/// (`requeue` is never recorded here: a requeue always has a delay).
const RESULTS: [&str; 4] = ["error", "requeue", "requeue_after", "success"];

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_string(),
    }
}

impl Metrics {
    /// Records that `controller` runs, reconciling at most `max_concurrent` objects at once.
    /// Its counters start at 0, as controller-runtime's do: a series that appeared only with
    /// the first error after a restart or a change of leader would show no increase to
    /// `rate()` and `increase()` alerts.
    pub fn controller_started(&self, controller: &str, max_concurrent: u16) {
        let labels = controller_labels(controller);
        self.max_concurrent
            .get_or_create(&labels)
            .set(max_concurrent.into());
        self.active.get_or_create(&labels).inc_by(0);
        self.errors.get_or_create(&labels).inc_by(0);
        self.timeouts.get_or_create(&labels).inc_by(0);
        let queue = QueueLabels {
            name: controller.to_string(),
        };
        self.retries.get_or_create(&queue).inc_by(0);
        for result in RESULTS {
            let labels = ResultLabels {
                controller: controller.to_string(),
                result: result.into(),
            };
            self.total.get_or_create(&labels).inc_by(0);
        }
    }

    /// Counts `controller`'s objects by `Ready` status with `count` at each scrape (it reads
    /// the controller's cache).
    pub fn count_ready(
        &self,
        controller: &'static str,
        count: impl Fn() -> ReadyCounts + Send + Sync + 'static,
    ) {
        self.ready.add(controller, Box::new(count));
    }

    /// A reconcile of `controller` begins; `finish` the returned timer with its result.
    pub fn reconcile_started(&self, controller: &str) -> ReconcileTimer<'_> {
        self.active
            .get_or_create(&controller_labels(controller))
            .inc();
        ReconcileTimer {
            metrics: self,
            controller: controller.to_string(),
            start: Instant::now(),
        }
    }

    /// Whether this replica holds the Lease `lease` (1) or stands by for it (0).
    pub fn leading(&self, lease: &str, leading: bool) {
        let labels = LeaseLabels { name: lease.into() };
        self.leading.get_or_create(&labels).set(leading.into());
    }

    /// Counts a failed reconcile of `controller`, what failed, and its retry (each failed
    /// reconcile runs again after a delay: `error_policy`).
    pub fn reconcile_failed(&self, controller: &str, error: &Error) {
        let labels = controller_labels(controller);
        self.errors.get_or_create(&labels).inc();
        if matches!(error.cause(), Error::Timeout(_)) {
            self.timeouts.get_or_create(&labels).inc();
        }
        let queue = QueueLabels {
            name: controller.to_string(),
        };
        self.retries.get_or_create(&queue).inc();
        let labels = CauseLabels {
            controller: controller.to_string(),
            cause: error.metric_label(),
        };
        self.causes.get_or_create(&labels).inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Times one reconcile and keeps `active_workers` up to date, whichever way it ends.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: String,
    start: Instant,
}

impl ReconcileTimer<'_> {
    /// Counts the reconcile by result: `error`, `success` when it asked for nothing but the
    /// periodic resync (`sync_period`) or a change, `requeue_after` when it asked to run again
    /// sooner.
    pub fn finish(self, result: &Result<Action>, sync_period: Duration) {
        let result = match result {
            Err(_) => "error",
            Ok(action)
                if *action == Action::requeue(sync_period) || *action == Action::await_change() =>
            {
                "success"
            }
            Ok(_) => "requeue_after",
        };
        let labels = ResultLabels {
            controller: self.controller.clone(),
            result: result.into(),
        };
        self.metrics.total.get_or_create(&labels).inc();
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        let labels = controller_labels(&self.controller);
        self.metrics
            .time
            .get_or_create(&labels)
            .observe(self.start.elapsed().as_secs_f64());
        self.metrics.active.get_or_create(&labels).dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::Layer;

    #[test]
    fn counts_reconciles_errors_and_workers_as_controller_runtime_does() {
        let metrics = Metrics::default();
        let sync = Duration::from_secs(300);
        metrics.controller_started("widget", 16);
        let started = metrics.encode().unwrap();
        for line in [
            r#"controller_runtime_reconcile_total{controller="widget",result="error"} 0"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="requeue"} 0"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="requeue_after"} 0"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="success"} 0"#,
            r#"controller_runtime_reconcile_errors_total{controller="widget"} 0"#,
            r#"controller_runtime_reconcile_timeouts_total{controller="widget"} 0"#,
            r#"workqueue_retries_total{name="widget"} 0"#,
            r#"controller_runtime_active_workers{controller="widget"} 0"#,
        ] {
            assert!(
                started.contains(line),
                "missing {line} at start in\n{started}"
            );
        }
        metrics.count_ready("widget", || {
            ReadyCounts::of([Some("True"), Some("True"), Some("False"), None])
        });
        let timer = metrics.reconcile_started("widget");
        assert!(
            metrics
                .encode()
                .unwrap()
                .contains(r#"controller_runtime_active_workers{controller="widget"} 1"#)
        );
        timer.finish(&Ok(Action::requeue(sync)), sync);
        metrics
            .reconcile_started("widget")
            .finish(&Ok(Action::requeue(Duration::from_secs(2))), sync);
        let error = Error::MissingNamespace("w".into());
        metrics.reconcile_failed("widget", &error);
        metrics.reconcile_failed("widget", &Error::Timeout(Duration::from_secs(120)));
        metrics
            .reconcile_started("widget")
            .finish(&Err(error), sync);
        let text = metrics.encode().unwrap();
        for line in [
            r#"controller_runtime_reconcile_total{controller="widget",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_total{controller="widget",result="error"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="widget"} 2"#,
            r#"controller_runtime_reconcile_timeouts_total{controller="widget"} 1"#,
            r#"workqueue_retries_total{name="widget"} 2"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="widget"} 3"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="widget"} 16"#,
            r#"controller_runtime_active_workers{controller="widget"} 0"#,
            r#"operator_reconcile_errors_by_cause_total{controller="widget",cause="missing_namespace"} 1"#,
            r#"operator_ready_objects{controller="widget",status="True"} 2"#,
            r#"operator_ready_objects{controller="widget",status="False"} 1"#,
            r#"operator_ready_objects{controller="widget",status="Unknown"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[tokio::test]
    async fn exports_the_lease_the_client_the_webhooks_and_the_process() {
        let metrics = Metrics::default();
        for (leading, value) in [(false, 0), (true, 1)] {
            metrics.leading("lease", leading);
            let text = metrics.encode().unwrap();
            let line = format!("leader_election_master_status{{name=\"lease\"}} {value}\n");
            assert!(text.contains(&line), "missing {line} in\n{text}");
        }
        // A family shows once it has a series: one request of the client, one webhook served.
        let api_server = tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(()))
        });
        let client = metrics
            .client_requests
            .layer("10.96.0.1:443")
            .layer(api_server);
        let request = http::Request::get("/api").body(()).unwrap();
        tower::ServiceExt::oneshot(client, request).await.unwrap();
        let hook = "/validate-exported";
        let _ = crate::webhook::metrics::served().instrument(axum::Router::new(), &[hook]);
        let text = metrics.encode().unwrap();
        for line in [
            r#"rest_client_requests_total{code="200",method="GET",host="10.96.0.1:443"} 1"#,
            r#"controller_runtime_webhook_requests_total{webhook="/validate-exported",code="200"} 0"#,
            "# TYPE certwatcher_read_certificate counter",
            "# TYPE certwatcher_read_certificate_errors counter",
            #[cfg(target_os = "linux")]
            "# TYPE process_resident_memory_bytes gauge",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
