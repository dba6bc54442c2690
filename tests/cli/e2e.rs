//! The article's walkthrough, end to end, as a user runs it: scaffold with opsdk, build,
//! `make install`, run the manager outside the cluster, and drive it with kubectl against a
//! real control plane (etcd, kube-apiserver, kube-controller-manager for garbage collection).
//! Run by hack/test.sh, which builds the control plane (hack/k8s-assets.sh).

use std::process::Command;
use std::time::Duration;

use crate::article::{APPLICATION_YAML, LEASE_HOLDER, Manager, NAMESPACE, install_article_project};
use crate::envtest;
use crate::generated::{run, target_dir};
use crate::host::*;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane and builds the generated project; run by hack/test.sh"]
async fn the_article_walkthrough_against_a_real_control_plane() {
    let assets = kubebuilder_assets();
    let mut cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    cp.start_controller_manager(&[
        "garbage-collector-controller",
        "deployment-controller",
        "replicaset-controller",
        "namespace-controller",
    ])
    .expect("starting kube-controller-manager");

    // The user's steps: scaffold, build, install the CRDs; then `make run`, with the binary
    // just built.
    let kubeconfig = cp.kubeconfig().to_path_buf();
    let installed = install_article_project(&kubeconfig);
    let (dir, kubectl) = (&installed.dir, &installed.kubectl);
    // As in the cluster: the manager's ServiceAccount with the RBAC `make deploy` installs,
    // never the administrator's certificate.
    let account = installed.deploy_rbac();
    let Manager {
        process: mut manager,
        metrics,
        probes,
    } = Manager::start_with(
        dir,
        &account,
        "manager",
        &[("POD_NAMESPACE", NAMESPACE)],
        &["--leader-elect", "--metrics-secure=false"],
    );

    // With --leader-elect the manager holds a Lease before it reconciles; outside a Pod its
    // identity is the host name and its process id.
    let pid = format!("_{}", manager.child.id());
    kubectl.eventually("the leader Lease", LEASE_HOLDER, |holder| {
        holder.ends_with(&pid)
    });

    // The article's application.yaml yields its Deployment and NodePort Service.
    std::fs::write(dir.join("application.yaml"), APPLICATION_YAML).unwrap();
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    let ns = ["-n", "application-sample"];
    let deployment = [
        &ns[..],
        &["get", "deployment", "application-sample-deployment", "-o"],
    ]
    .concat();
    let jsonpath = |path: &str| format!("jsonpath={path}");
    let get = |args: &[&str], path: &str| {
        [args, &[jsonpath(path).as_str()]]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    let poll = |what: &str, args: Vec<String>, want: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        kubectl.eventually(what, &args, |out| out == want)
    };
    poll(
        "2 desired replicas",
        get(&deployment, "{.spec.replicas}"),
        "2",
    );
    let listing = kubectl.eventually(
        "the Service",
        &[&ns[..], &["get", "applications,deployments,services"]].concat(),
        |out| out.contains("application-sample-service"),
    );
    assert!(
        listing.contains("application-sample-deployment"),
        "{listing}"
    );
    let service_line = listing
        .lines()
        .find(|l| l.contains("application-sample-service"))
        .unwrap()
        .to_string();
    assert!(
        service_line.contains("NodePort") && service_line.contains("80:3"),
        "{service_line}"
    );

    // No kubelet runs the Pods: the status says the rollout is under way, not Ready.
    let application = [&ns[..], &["get", "application", "application-sample", "-o"]].concat();
    poll(
        "Progressing",
        get(
            &application,
            "{.status.conditions[?(@.type==\"Progressing\")].status}",
        ),
        "True",
    );
    poll(
        "not Ready",
        get(
            &application,
            "{.status.conditions[?(@.type==\"Ready\")].reason}",
        ),
        "Progressing",
    );

    // Spec changes reach both children.
    let changed = APPLICATION_YAML
        .replace("nginx:latest", "nginx:1.27")
        .replace("port: 80", "port: 8080");
    std::fs::write(dir.join("application.yaml"), changed).unwrap();
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    poll(
        "the new image",
        get(&deployment, "{.spec.template.spec.containers[0].image}"),
        "nginx:1.27",
    );
    poll(
        "the new port",
        get(
            &deployment,
            "{.spec.template.spec.containers[0].ports[0].containerPort}",
        ),
        "8080",
    );
    let service = [
        &ns[..],
        &["get", "service", "application-sample-service", "-o"],
    ]
    .concat();
    poll(
        "the new Service port",
        get(&service, "{.spec.ports[0].port}"),
        "8080",
    );
    kubectl.ok(&[
        &ns[..],
        &["scale", "application/application-sample", "--replicas=3"],
    ]
    .concat());
    poll(
        "3 replicas after kubectl scale",
        get(&deployment, "{.spec.replicas}"),
        "3",
    );

    // Hand edits are set back; a deleted child returns.
    kubectl.ok(&[
        &ns[..],
        &[
            "scale",
            "deployment/application-sample-deployment",
            "--replicas=5",
        ],
    ]
    .concat());
    poll(
        "the replicas set back",
        get(&deployment, "{.spec.replicas}"),
        "3",
    );
    let old_uid = kubectl.ok(&[&deployment[..], &["jsonpath={.metadata.uid}"]].concat());
    kubectl.ok(&[
        &ns[..],
        &["delete", "deployment", "application-sample-deployment"],
    ]
    .concat());
    kubectl.eventually(
        "the Deployment recreated",
        &[&deployment[..], &["jsonpath={.metadata.uid}"]].concat(),
        |uid| !uid.is_empty() && uid != old_uid,
    );
    // kube-controller-manager is real: the Deployment gets a ReplicaSet.
    kubectl.eventually(
        "a ReplicaSet",
        &[&ns[..], &["get", "replicasets", "-o", "name"]].concat(),
        |out| !out.trim().is_empty(),
    );

    // Metrics (plain HTTP with --metrics-secure=false; leader.rs scrapes the HTTPS default)
    // and probes answer.
    assert!(http_get(probes, "/readyz").starts_with("HTTP/1.1 200"));
    let scraped = http_get(metrics, "/metrics");
    // Counted, not only there: the counters exist at 0 from the controller's start.
    let success =
        "controller_runtime_reconcile_total{controller=\"application\",result=\"success\"} ";
    assert!(
        scraped
            .lines()
            .any(|l| l.starts_with(success) && !l.ends_with(" 0")),
        "{scraped}"
    );

    // Deleting the Application runs the finalizer; children and their ReplicaSets go.
    kubectl.ok(&[
        &ns[..],
        &[
            "delete",
            "application",
            "application-sample",
            "--timeout=60s",
        ],
    ]
    .concat());
    kubectl.eventually(
        "children gone",
        &[
            &ns[..],
            &["get", "deployments,services,replicasets", "-o", "name"],
        ]
        .concat(),
        |out| out.trim().is_empty(),
    );
    let events = kubectl.ok(&[
        &ns[..],
        &[
            "get",
            "events.events.k8s.io",
            "-o",
            "jsonpath={.items[*].reason}",
        ],
    ]
    .concat());
    assert!(
        events.contains("Deleted") && events.contains("Created"),
        "events: {events}"
    );
    kubectl.ok(&["delete", "namespace", "application-sample", "--timeout=60s"]);

    // The manager's manifests are admitted under the restricted Pod Security standard (the
    // namespace is the one `deploy_rbac` made).
    kubectl.ok(&[
        "label",
        "namespace",
        "k8s-operator-talk-system",
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    ]);
    run(
        dir,
        "make",
        &[
            "deploy-overlay",
            "IMG=registry.example/k8s-operator-talk:v0.1.0",
        ],
    );
    let (_, warnings) = kubectl.ok_with_stdin(
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-k",
            "config/deploy",
        ],
        None,
    );
    assert!(
        !warnings.contains("violate"),
        "Pod Security warnings: {warnings}"
    );
    let rendered = kubectl.ok(&["kustomize", "config/deploy"]);
    assert!(
        rendered.contains("image: registry.example/k8s-operator-talk:v0.1.0"),
        "{rendered}"
    );
    let pod = restricted_pod_from(&rendered);
    kubectl.ok_with_stdin(&["create", "--dry-run=server", "-f", "-"], Some(&pod));

    // `make undeploy` deletes the Applications while the manager still runs (their finalizer
    // needs it), then everything else: it does not hang on a finalizer nobody runs.
    kubectl.ok(&["apply", "--server-side", "-k", "config/deploy"]);
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    kubectl.eventually(
        "the finalizer",
        &[
            &ns[..],
            &[
                "get",
                "application",
                "application-sample",
                "-o",
                "jsonpath={.metadata.finalizers}",
            ],
        ]
        .concat(),
        |out| out.contains("finalizer"),
    );
    checked(
        Command::new("make")
            .args([
                "undeploy",
                "IMG=registry.example/k8s-operator-talk:v0.1.0",
                "UNDEPLOY_TIMEOUT=60s",
            ])
            .current_dir(dir)
            .env("KUBECONFIG", &kubeconfig)
            .env("PATH", path_with(&assets))
            .env("CARGO_TARGET_DIR", target_dir()),
    );
    let crds = kubectl.ok(&["get", "crd", "-o", "name"]);
    assert!(!crds.contains("applications.minetto.dev"), "{crds}");

    // SIGTERM: the manager stops cleanly within the manifests' grace period (10 s), even with
    // its ServiceAccount and namespace gone (the Lease went with them; its release is checked
    // in leader.rs).
    let status = manager.terminate(Duration::from_secs(10));
    assert!(
        status.success(),
        "the manager exited with {status}: {}",
        manager.log()
    );
}

/// A Pod with the manager Deployment's template, to let Pod Security admission enforce
/// `restricted` on it (it only warns for Deployments).
fn restricted_pod_from(rendered: &str) -> String {
    let deployment = rendered
        .split("\n---\n")
        .map(|doc| serde_yaml::from_str::<serde_yaml::Value>(doc).unwrap())
        .find(|doc| doc["kind"] == "Deployment")
        .expect("the kustomization renders a Deployment");
    let mut pod: serde_yaml::Value =
        serde_yaml::from_str("apiVersion: v1\nkind: Pod\nmetadata:\n  name: manager-dry-run\n")
            .unwrap();
    pod["metadata"]["namespace"] = deployment["metadata"]["namespace"].clone();
    pod["spec"] = deployment["spec"]["template"]["spec"].clone();
    serde_yaml::to_string(&pod).unwrap()
}
