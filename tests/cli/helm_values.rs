//! The values kubebuilder's helm plugin (v2-alpha) reads that a team sets on the manager and its
//! ServiceAccount: extra labels and annotations, strategy, topology spread, envOverrides, extra
//! volumes, an existing ServiceAccount, and `manager.enable`. Called by helm.rs's chart test
//! on a project where `make manifests` has run.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::helm::helm;
use crate::helm_cluster::documents;

const VALUES: &str = r#"
manager:
  labels: {team: platform, control-plane: other}
  annotations: {owner: team-a}
  strategy: {type: Recreate}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
  pod:
    labels: {sidecar.istio.io/inject: false, app.kubernetes.io/name: other}
    annotations: {prometheus.io/scrape: true, kubectl.kubernetes.io/default-container: other}
  env:
  - {name: RUST_LOG, value: info}
  - {name: KEEP, value: kept}
  envOverrides: {RUST_LOG: debug, RETRIES: 3, ACCOUNT: 111122223333, UNSET: null}
  extraVolumes:
  - {name: scratch, emptyDir: {}}
  extraVolumeMounts:
  - {name: scratch, mountPath: /scratch}
serviceAccount:
  labels: {team: platform}
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/operator"}
"#;

/// Every value above reaches the Deployment and the ServiceAccount, the chart's own labels,
/// annotation and variables stay its own, and the chart still lints with them.
pub fn values_reach_the_manager(bin: &Path, dir: &Path) {
    let file = dir.join("team-values.yaml");
    std::fs::write(&file, VALUES).unwrap();
    let file = file.to_str().unwrap();
    let lint = helm(bin, dir, &["lint", "--strict", "dist/chart", "-f", file]);
    assert!(lint.contains("0 chart(s) failed"), "{lint}");
    let objects = render(bin, dir, &["-f", file]);
    let deployment = of_kind(&objects, "Deployment");
    let meta = &deployment["metadata"];
    assert_eq!(meta["labels"]["team"], "platform");
    assert_eq!(meta["labels"]["control-plane"], "controller-manager");
    assert_eq!(meta["annotations"], json!({"owner": "team-a"}));
    let spec = &deployment["spec"];
    assert_eq!(spec["strategy"], json!({"type": "Recreate"}));
    let pod = &spec["template"];
    assert_eq!(
        pod["metadata"]["labels"]["sidecar.istio.io/inject"],
        "false"
    );
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/name"],
        spec["selector"]["matchLabels"]["app.kubernetes.io/name"]
    );
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(
        annotations["kubectl.kubernetes.io/default-container"],
        "manager"
    );
    assert_eq!(
        pod["spec"]["topologySpreadConstraints"][0]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let container = &pod["spec"]["containers"][0];
    let env: Vec<(String, Value)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].clone()))
        .collect();
    let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
    let expected = [
        "POD_NAME",
        "POD_NAMESPACE",
        "KEEP",
        "ACCOUNT",
        "RETRIES",
        "RUST_LOG",
        "UNSET",
    ];
    assert_eq!(names, expected);
    // Numbers whole (not 1.11122223333e+11), null empty, every value a string.
    let values: Vec<&Value> = env[2..].iter().map(|(_, v)| v).collect();
    let strings = ["kept", "111122223333", "3", "debug", ""].map(|v| json!(v));
    assert_eq!(values, strings.iter().collect::<Vec<_>>());
    assert_eq!(
        container["volumeMounts"],
        json!([{"name": "scratch", "mountPath": "/scratch"}])
    );
    assert_eq!(
        pod["spec"]["volumes"],
        json!([{"name": "scratch", "emptyDir": {}}])
    );
    let account = of_kind(&objects, "ServiceAccount");
    assert_eq!(account["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
        "arn:aws:iam::111122223333:role/operator"
    );

    an_existing_service_account_is_used(bin, dir);
    let refused = |set: &str, says: &str| {
        let out = Command::new(bin)
            .args(["template", "rel", "dist/chart", "--set", set])
            .current_dir(dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(says),
            "{set}: {stderr}"
        );
    };
    refused(
        "serviceAccount.enable=false",
        "serviceAccount.name is required when serviceAccount.enable=false",
    );
    refused(
        "serviceAccount.enable=false,serviceAccount.name=default",
        "serviceAccount.name=default would give the manager's rights to every Pod",
    );
    refused(
        "manager.envOverrides.POD_NAME=x",
        "cannot set POD_NAME: the chart sets it",
    );
    refused(
        "manager.replicas=2,manager.leaderElect=false",
        "manager.replicas above 1 needs manager.leaderElect=true",
    );

    // Everything but the manager: no Deployment, and no budget for its replicas.
    let objects = render(
        bin,
        dir,
        &[
            "--set",
            "manager.enable=false",
            "--set",
            "manager.replicas=2",
        ],
    );
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert!(!kinds.contains(&"Deployment"), "{kinds:?}");
    assert!(!kinds.contains(&"PodDisruptionBudget"), "{kinds:?}");
    assert!(kinds.contains(&"ServiceAccount"), "{kinds:?}");
}

/// The switches are kubebuilder's (`metrics.enable`); one spelled as in earlier opsdk charts
/// (`metrics.enabled`) fails the render, naming the key to use, instead of being ignored.
pub fn switches_are_kubebuilders_and_old_spellings_are_refused(bin: &Path, dir: &Path) {
    let services = |objects: &[Value]| objects.iter().filter(|o| o["kind"] == "Service").count();
    let all = services(&render(bin, dir, &[]));
    let without_metrics = render(bin, dir, &["--set", "metrics.enable=false"]);
    assert_eq!(
        services(&without_metrics),
        all - 1,
        "metrics.enable=false kept the metrics Service"
    );
    for (old, new) in [
        ("metrics.enabled", "metrics.enable"),
        ("rbac.helpers.enabled", "rbacHelpers.enable"),
    ] {
        let out = Command::new(bin)
            .current_dir(dir)
            .args([
                "template",
                "rel",
                "dist/chart",
                "--set",
                &format!("{old}=false"),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{old} was taken");
        assert!(stderr.contains(&format!("{old} is now {new}")), "{stderr}");
    }
}

/// serviceAccount.enable=false with a name: no ServiceAccount, and the manager and every
/// binding of the release use the one named.
fn an_existing_service_account_is_used(bin: &Path, dir: &Path) {
    let objects = render(
        bin,
        dir,
        &[
            "--set",
            "serviceAccount.enable=false",
            "--set",
            "serviceAccount.name=operator",
        ],
    );
    assert!(objects.iter().all(|o| o["kind"] != "ServiceAccount"));
    let pod = &of_kind(&objects, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "operator");
    let bindings: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "RoleBinding" || o["kind"] == "ClusterRoleBinding")
        .collect();
    assert!(!bindings.is_empty());
    for binding in bindings {
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "operator", "namespace": "default"}]),
            "{binding}"
        );
    }
}

/// Without a tag in values.yaml, the manager's image is the chart's appVersion: 0.1.0 from the
/// project, the version given to `make helm-package` from the package.
pub fn the_image_follows_the_chart_version(bin: &Path, dir: &Path, package: &Path) {
    let image = |chart: &str| {
        let objects = documents(&helm(bin, dir, &["template", "rel", chart]));
        let pod = &of_kind(&objects, "Deployment")["spec"]["template"]["spec"];
        pod["containers"][0]["image"].as_str().unwrap().to_string()
    };
    assert_eq!(image("dist/chart"), "controller:0.1.0");
    assert_eq!(image(package.to_str().unwrap()), "controller:0.2.0");
}

fn render(bin: &Path, dir: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["template", "rel", "dist/chart"];
    all.extend_from_slice(args);
    documents(&helm(bin, dir, &all))
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}
