//! Leader election between two replicas of the article's manager against one real control
//! plane, each running as the manager's ServiceAccount with the RBAC `make deploy` installs:
//! the first holds the Lease under its Pod name, the second stands by, and a SIGTERM to the
//! first hands over within 5 s. Run by hack/test.sh, which builds the control plane.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::article::{
    APPLICATION_YAML, LEASE_HOLDER, Manager, NAMESPACE, deployment_of, install_article_project,
};
use crate::envtest;
use crate::host::{https_get, wait_for_ok};
use crate::kubectl::Kubectl;

const HANDOVER: Duration = Duration::from_secs(5);
/// A manager with no reconcile to finish stops in about 0.1 s.
const STOP: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane and builds the generated project; run by hack/test.sh"]
async fn a_standby_leads_within_5_s_of_the_leaders_sigterm() {
    let cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    let installed = install_article_project(cp.kubeconfig());
    let (dir, kubectl) = (&installed.dir, &installed.kubectl);
    let account = installed.deploy_rbac();
    let start = |pod: &str| {
        let env = [("POD_NAME", pod), ("POD_NAMESPACE", NAMESPACE)];
        Manager::start(dir, &account, pod, &env)
    };

    // The first replica leads, under its Pod name, and reconciles.
    let mut first = start("manager-0");
    kubectl.eventually("manager-0 to lead", LEASE_HOLDER, |h| h == "manager-0");
    std::fs::write(dir.join("application.yaml"), APPLICATION_YAML).unwrap();
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    deployment_of(kubectl, "application-sample");
    metrics_only_for_readers(dir, kubectl, first.metrics);

    // The second stands by: ready, but it neither takes the Lease nor reconciles.
    let mut second = start("manager-1");
    wait_for_ok("manager-1", second.probes, "/readyz");
    let standing_by = Instant::now() + Duration::from_secs(30);
    while !second.process.log().contains("standing by") {
        assert!(Instant::now() < standing_by, "{}", second.process.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(kubectl.ok(LEASE_HOLDER), "manager-0");
    assert!(!second.process.log().contains("starting controllers"));

    // SIGTERM to the leader: it stops, releases the Lease and exits 0; the standby leads
    // and reconciles an Application created after the leader is gone.
    let sigterm = Instant::now();
    let status = first.process.terminate(Duration::from_secs(10));
    let exited = sigterm.elapsed();
    assert!(status.success(), "{status}: {}", first.process.log());
    assert!(exited < STOP, "the leader took {exited:?} to stop");
    let second_app = APPLICATION_YAML.replace(
        "name: application-sample\n  namespace",
        "name: second\n  namespace",
    );
    kubectl.ok_with_stdin(&["apply", "-f", "-"], Some(&second_app));
    kubectl.eventually("manager-1 to lead", LEASE_HOLDER, |h| h == "manager-1");
    let leading = sigterm.elapsed();
    deployment_of(kubectl, "second");
    let reconciled = sigterm.elapsed();
    eprintln!(
        "handover after SIGTERM: leader exited {exited:?}, standby held the Lease {leading:?}, \
         reconciled {reconciled:?}"
    );
    assert!(
        reconciled <= HANDOVER,
        "the standby reconciled {reconciled:?} after the leader's SIGTERM:\n{}",
        second.process.log()
    );

    // The new leader, stopped while its first reconciles may still run, stops as quickly and
    // releases the Lease too.
    let sigterm = Instant::now();
    assert!(second.process.terminate(Duration::from_secs(10)).success());
    let exited = sigterm.elapsed();
    assert!(exited < STOP, "the new leader took {exited:?} to stop");
    assert_eq!(kubectl.ok(LEASE_HOLDER), "");
}

/// The manager's /metrics (HTTPS, HTTP/1.1 only), scraped as a user would with curl: no token
/// is 401, a ServiceAccount token without the metrics-reader ClusterRole is 403, one bound to
/// it is 200 with the reconcile counters. The manager reviews the tokens with its own
/// ServiceAccount, so this also checks config/rbac/metrics_auth_role.yaml. Every metric the
/// project's Grafana dashboard queries is in the scrape.
fn metrics_only_for_readers(dir: &Path, kubectl: &Kubectl, port: u16) {
    let token = |account: &str| {
        kubectl.ok(&["-n", NAMESPACE, "create", "serviceaccount", account]);
        let token = kubectl.ok(&["-n", NAMESPACE, "create", "token", account]);
        token.trim().to_string()
    };
    let (reader, stranger) = (token("scraper"), token("stranger"));
    kubectl.ok(&[
        "create",
        "clusterrolebinding",
        "scraper-metrics-reader",
        "--clusterrole=k8s-operator-talk-metrics-reader",
        &format!("--serviceaccount={NAMESPACE}:scraper"),
    ]);

    let anonymous = https_get(port, "/metrics", None);
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    assert_eq!(anonymous.http_version, "1.1", "HTTP/2 is off");
    let forged = https_get(port, "/metrics", Some("not-a-token"));
    assert_eq!(forged.status, 401, "{forged:?}");
    let refused = https_get(port, "/metrics", Some(&stranger));
    assert_eq!(refused.status, 403, "{refused:?}");

    // An Application whose Deployment's name is taken by one it does not control: its
    // reconciles fail (cause child_conflict), so the error families have samples too (the
    // manager exports a family once it has one).
    kubectl.ok(&[
        "-n",
        NAMESPACE_OF_APPS,
        "create",
        "deployment",
        "taken-deployment",
        "--image=nginx",
    ]);
    let taken = APPLICATION_YAML.replace(
        "name: application-sample\n  namespace",
        "name: taken\n  namespace",
    );
    kubectl.ok_with_stdin(&["apply", "-f", "-"], Some(&taken));

    // The first reconciles may still be under way: their counters appear when they end.
    let counters = [
        "controller_runtime_reconcile_total{controller=\"application\",result=",
        "operator_reconcile_errors_by_cause_total{controller=\"application\",cause=\"child_conflict\"}",
    ];
    // operator_ready_objects agrees with the Applications' own Ready conditions (the taken
    // one is False at least).
    let not_ready = || {
        let statuses = kubectl.ok(&[
            "get",
            "applications",
            "-A",
            "-o",
            r#"jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}"#,
        ]);
        statuses.lines().filter(|s| *s == "False").count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        let scraped = https_get(port, "/metrics", Some(&reader));
        assert_eq!(scraped.status, 200, "{scraped:?}");
        let false_count = not_ready();
        let ready_gauge = format!(
            "operator_ready_objects{{controller=\"application\",status=\"False\"}} {false_count}\n"
        );
        if counters.iter().all(|c| scraped.body.contains(c))
            && false_count >= 1
            && scraped.body.contains(&ready_gauge)
        {
            break scraped.body;
        }
        assert!(
            Instant::now() < deadline,
            "no {counters:?} in {}",
            scraped.body
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    // The leader says so, and the client's requests are counted (its list and watch calls).
    let leader =
        |line: &&str| line.starts_with("leader_election_master_status{") && line.ends_with(" 1");
    assert!(body.lines().any(|line| leader(&line)), "{body}");
    assert!(
        body.contains("rest_client_requests_total{code=\"200\",method=\"GET\""),
        "{body}"
    );
    for dashboard in DASHBOARDS {
        let queried = dashboard_metrics(&std::fs::read_to_string(dir.join(dashboard)).unwrap());
        assert!(queried.len() >= 5, "{queried:?}");
        // The article's manager serves no webhook: those families are the webhook server's,
        // checked by the generated project's own tests.
        let missing: Vec<_> = (queried.iter())
            .filter(|name| !name.starts_with("controller_runtime_webhook_"))
            .filter(|name| !exposes(&body, name))
            .collect();
        assert!(
            missing.is_empty(),
            "{dashboard} queries {missing:?}, which the manager does not export:\n{body}"
        );
    }
}

/// The namespace of the article's Applications (its application.yaml).
const NAMESPACE_OF_APPS: &str = "application-sample";

const DASHBOARDS: [&str; 2] = [
    "grafana/controller-runtime-metrics.json",
    "grafana/controller-resources-metrics.json",
];

/// The families whose names a dashboard may query: controller-runtime's, client-go's, the
/// process collector's, and the operator's own.
const PREFIXES: [&str; 6] = [
    "controller_runtime_",
    "operator_",
    "process_",
    "rest_client_",
    "leader_election_",
    "workqueue_",
];

/// The metric names in the `expr` of every panel's targets: the identifiers of the manager's
/// families (see `PREFIXES`).
fn dashboard_metrics(dashboard: &str) -> BTreeSet<String> {
    let dashboard: serde_json::Value = serde_json::from_str(dashboard).unwrap();
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut names = BTreeSet::new();
    for panel in panels {
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{panel}");
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            names.extend(
                expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .filter(|w| PREFIXES.iter().any(|prefix| w.starts_with(prefix)))
                    .map(String::from),
            );
        }
    }
    names
}

/// Whether the scrape has `name`: as a sample, or as the family it belongs to (a histogram's
/// `_bucket`/`_sum`/`_count`, a counter's `_total`) that has no sample yet.
fn exposes(body: &str, name: &str) -> bool {
    let family = ["_bucket", "_sum", "_count", "_total"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    body.lines().any(|line| {
        line.split(['{', ' ']).next() == Some(name)
            || line
                .strip_prefix("# TYPE ")
                .and_then(|t| t.split(' ').next())
                == Some(family)
    })
}

#[test]
fn dashboard_metrics_are_the_families_and_samples_a_panel_queries() {
    let dashboard = include_str!("../../templates/grafana/controller-runtime-metrics.json");
    let names = dashboard_metrics(dashboard);
    assert!(names.contains("controller_runtime_reconcile_time_seconds_bucket"));
    assert!(names.contains("operator_reconcile_errors_by_cause_total"));
    assert!(names.contains("workqueue_retries_total"));
    let body = "# TYPE operator_reconcile_errors_by_cause counter\n\
                controller_runtime_reconcile_total{controller=\"a\",result=\"success\"} 1\n";
    assert!(exposes(body, "operator_reconcile_errors_by_cause_total"));
    assert!(exposes(body, "controller_runtime_reconcile_total"));
    assert!(!exposes(body, "controller_runtime_reconcile_errors_total"));
    assert!(!exposes(body, "controller_runtime_reconcile"));
    let resources = include_str!("../../templates/grafana/controller-resources-metrics.json");
    let names = dashboard_metrics(resources);
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "rest_client_requests_total",
        "leader_election_master_status",
        "controller_runtime_webhook_requests_total",
        "controller_runtime_webhook_latency_seconds_bucket",
    ] {
        assert!(names.contains(name), "{name} not in {names:?}");
    }
}
