//! The chart on a real control plane, with helm v3.22.0 built from the Go module proxy:
//! rendered into a namespace enforcing (and warning about) the restricted Pod Security profile,
//! the API server accepts it without a warning; `make helm-deploy` creates the very objects
//! `make deploy` creates (kinds, names, namespaces, RBAC rules, the manager's flags, env and
//! security settings, CRDs), for a cluster-wide and a namespace-scoped manager; the manager,
//! run as the chart's ServiceAccount, reconciles the article's Application; `helm upgrade`
//! after a further `create api` adds its CRD and rules; `helm uninstall` removes all it
//! installed but the CRDs (helm.sh/resource-policy: keep). Run by hack/test.sh.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::article::{APPLICATION_YAML, Installed, Manager, NAMESPACE, deployment_of};
use crate::envtest;
use crate::generated::target_dir;
use crate::helm::{helm, helm_bin};
use crate::host::{checked, kubebuilder_assets, path_with};
use crate::kubectl::Kubectl;
use crate::support::*;

pub const IMG: &str = "registry.example/k8s-operator-talk:v0.1.0";

/// Every document of a multi-document YAML stream, as JSON.
pub fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// `make target args` in the project, against the test cluster, with this helm.
pub fn make(project: &Installed, helm: &Path, target: &str, args: &[&str]) -> String {
    let helm_arg = format!("HELM={}", helm.display());
    checked(
        Command::new("make")
            .arg(target)
            .args(args)
            .arg(helm_arg)
            .current_dir(&project.dir)
            .env("KUBECONFIG", &project.kubectl.kubeconfig)
            .env("PATH", path_with(&kubebuilder_assets()))
            .env("CARGO_TARGET_DIR", target_dir()),
    )
    .0
}

/// The objects of `manifests` as the API server holds them, keyed `Kind namespace/name`,
/// without what the server or the installer adds (ids, status, labels, annotations, the
/// Service's allocated IP) and without the Pod template's labels (Helm's own).
fn on_server(kubectl: &Kubectl, manifests: &str) -> BTreeMap<String, Value> {
    let (list, _) = kubectl.ok_with_stdin(&["get", "-f", "-", "-o", "json"], Some(manifests));
    let list: Value = serde_json::from_str(&list).unwrap();
    let items = match list.get("items") {
        Some(items) => items.as_array().unwrap().clone(),
        None => vec![list],
    };
    items
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .map(|mut o| {
            let meta = o["metadata"].as_object_mut().unwrap();
            meta.retain(|k, _| k == "name" || k == "namespace");
            let key = format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            );
            let object = o.as_object_mut().unwrap();
            object.remove("status");
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
                if let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) {
                    template.remove("metadata");
                }
            }
            (key, o)
        })
        .collect()
}

/// `make deploy`, its objects read back, then removed; `make helm-deploy`, its objects read
/// back: the two sets must be equal. Returns the release's manifest.
pub fn same_objects_as_make_deploy(project: &Installed, helm_bin: &Path) -> String {
    let kubectl = &project.kubectl;
    make(project, helm_bin, "deploy", &[&format!("IMG={IMG}")]);
    let kustomized = kubectl.ok(&["kustomize", "config/deploy"]);
    let deployed = on_server(kubectl, &kustomized);
    // One deadline for every object: the namespace controller's cleanup and each CRD's
    // finalizer run one after the other, which took over 60 s on a loaded CI machine.
    kubectl.ok(&[
        "delete",
        "-k",
        "config/deploy",
        "--wait=true",
        "--timeout=300s",
    ]);

    make(project, helm_bin, "helm-deploy", &[&format!("IMG={IMG}")]);
    let manifest = release_manifest(project, helm_bin);
    let installed = on_server(kubectl, &manifest);
    let keys = |m: &BTreeMap<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&installed),
        keys(&deployed),
        "the chart installs other objects"
    );
    for (key, object) in &deployed {
        assert_eq!(
            &installed[key], object,
            "{key} differs between helm install and make deploy"
        );
    }
    manifest
}

/// What the release holds now (`helm get manifest`).
pub fn release_manifest(project: &Installed, helm_bin: &Path) -> String {
    let kubeconfig = project.kubectl.kubeconfig.display().to_string();
    let args = [
        "get",
        "manifest",
        "k8s-operator-talk",
        "-n",
        NAMESPACE,
        "--kubeconfig",
        &kubeconfig,
    ];
    helm(helm_bin, &project.dir, &args)
}

/// `helm template` of the project's chart into `namespace`, applied with --dry-run=server;
/// returns kubectl's stderr, where it prints the API server's warnings.
pub fn dry_run(project: &Installed, helm_bin: &Path, namespace: &str, set: &[&str]) -> String {
    let mut args = vec![
        "template",
        "k8s-operator-talk",
        "dist/chart",
        "-n",
        namespace,
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let rendered = helm(helm_bin, &project.dir, &args);
    let kubectl = &project.kubectl;
    let apply = ["apply", "--dry-run=server", "--server-side", "-f", "-"];
    kubectl.ok_with_stdin(&apply, Some(&rendered)).1
}

/// A namespace enforcing the restricted Pod Security profile, and warning about it (only
/// warnings reach a Deployment's Pod template; enforcement applies to Pods).
pub fn restricted_namespace(kubectl: &Kubectl, name: &str) {
    kubectl.ok(&["create", "namespace", name]);
    kubectl.ok(&[
        "label",
        "namespace",
        name,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    ]);
}

/// A project with the chart, built for the control plane of `kubeconfig`, `make manifests` run;
/// `more` runs further opsdk commands before the build.
pub fn chart_project(kubeconfig: &Path, init: &[&str], more: &[&[&str]]) -> Installed {
    let (tmp, dir) = project_dir();
    init_with(&dir, &[&["--plugins", "helm"], init].concat());
    create_api(&dir, &["--version", "v1alpha1", "--kind", "Application"]);
    for args in more {
        succeed(&dir, args);
    }
    let project = Installed::built(tmp, dir, kubeconfig);
    crate::generated::run(&project.dir, "make", &["manifests"]);
    project
}

/// etcd, kube-apiserver and the kube-controller-manager's garbage and namespace collectors.
pub async fn control_plane() -> envtest::ControlPlane {
    let mut cp = envtest::ControlPlane::start()
        .await
        .expect("starting etcd and kube-apiserver")
        .expect("KUBEBUILDER_ASSETS is set");
    cp.start_controller_manager(&["garbage-collector-controller", "namespace-controller"])
        .expect("starting kube-controller-manager");
    cp
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane, builds helm and the generated project; run by hack/test.sh"]
async fn helm_installs_what_make_deploy_does_upgrades_and_uninstalls() {
    let bin = helm_bin();
    let cp = control_plane().await;
    let project = chart_project(cp.kubeconfig(), &[], &[]);
    let kubectl = &project.kubectl;

    // The restricted profile: no warning for the chart as it is; one when it is broken.
    restricted_namespace(kubectl, "restricted");
    // The NetworkPolicy too (the ServiceMonitor needs the prometheus-operator's CRDs).
    let warnings = dry_run(&project, &bin, "restricted", &["networkPolicy.enable=true"]);
    assert!(
        warnings.trim().is_empty(),
        "the API server warned:\n{warnings}"
    );
    let broken = dry_run(
        &project,
        &bin,
        "restricted",
        &["manager.securityContext.allowPrivilegeEscalation=true"],
    );
    assert!(
        broken.contains("violate PodSecurity \"restricted:latest\""),
        "{broken}"
    );

    let manifest = same_objects_as_make_deploy(&project, &bin);
    assert!(
        manifest.contains("kind: CustomResourceDefinition"),
        "{manifest}"
    );

    // The manager, as the chart's ServiceAccount, reconciles the article's Application.
    let account = project.account_kubeconfig(NAMESPACE, "k8s-operator-talk-controller-manager");
    let env = [("POD_NAMESPACE", NAMESPACE)];
    let args = ["--leader-elect", "--metrics-secure=false"];
    let manager = Manager::start_with(&project.dir, &account, "helm-manager", &env, &args);
    std::fs::write(project.dir.join("application.yaml"), APPLICATION_YAML).unwrap();
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    deployment_of(kubectl, "application-sample");
    // Deleted while the manager runs, which removes its finalizer.
    kubectl.ok(&["delete", "-f", "application.yaml", "--timeout=60s"]);
    drop(manager);

    // helm upgrade after a further create api: the new CRD and its rules.
    create_api(
        &project.dir,
        &["--group", "batch", "--version", "v1", "--kind", "Widget"],
    );
    make(&project, &bin, "helm-deploy", &[&format!("IMG={IMG}")]);
    kubectl.ok(&["get", "crd", "widgets.batch.minetto.dev"]);
    let manager_rules = || {
        let args = ["get", "clusterrole", "k8s-operator-talk-manager-role"];
        kubectl.ok(&[&args[..], &["-o", "jsonpath={.rules}"]].concat())
    };
    let rules = manager_rules();
    assert!(
        rules.contains("\"batch.minetto.dev\"") && rules.contains("\"widgets\""),
        "{rules}"
    );
    kubectl.ok(&[
        "get",
        "clusterrole",
        "k8s-operator-talk-batch-widget-editor-role",
    ]);

    // helm-rollback returns to the release without Widget (its CRD is kept), helm-history
    // lists every revision; helm-deploy brings Widget's rules back.
    make(&project, &bin, "helm-rollback", &[]);
    let rules = manager_rules();
    assert!(!rules.contains("\"widgets\""), "{rules}");
    let history = make(&project, &bin, "helm-history", &[]);
    assert!(history.contains("Rollback to 1"), "{history}");
    make(&project, &bin, "helm-deploy", &[&format!("IMG={IMG}")]);

    // helm uninstall: everything it installed is gone, but the CRDs and their objects
    // (crd.keep): an Application made while no manager runs is still there.
    let manifest = release_manifest(&project, &bin);
    kubectl.ok(&["apply", "-f", "application.yaml"]);
    make(&project, &bin, "helm-uninstall", &[]);
    kubectl.ok(&["get", "-f", "application.yaml"]);
    kubectl.ok(&["delete", "-f", "application.yaml", "--timeout=60s"]);
    let left = kubectl.output(
        &["get", "-f", "-", "-o", "name", "--ignore-not-found"],
        Some(&manifest),
    );
    let left = String::from_utf8_lossy(&left.stdout).into_owned();
    let mut left: Vec<&str> = left.lines().collect();
    left.sort();
    assert_eq!(
        left,
        [
            "customresourcedefinition.apiextensions.k8s.io/applications.minetto.dev",
            "customresourcedefinition.apiextensions.k8s.io/widgets.batch.minetto.dev",
        ],
        "helm uninstall keeps the CRDs only"
    );

    // A namespace-scoped manager: a Role and RoleBinding in its namespace, WATCH_NAMESPACE.
    let namespaced = chart_project(cp.kubeconfig(), &["--namespaced"], &[]);
    let manifest = same_objects_as_make_deploy(&namespaced, &bin);
    assert!(manifest.contains("name: WATCH_NAMESPACE"), "{manifest}");
    assert!(
        !manifest.contains("name: k8s-operator-talk-manager-role\n  labels"),
        "no ClusterRole: {manifest}"
    );
}
