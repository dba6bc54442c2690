//! The chart, linted and rendered with helm v3.22.0 for the article's project, the many-kinds
//! project and a namespaced one, holds exactly the CRDs and manager rules `make manifests`
//! writes under config/.

use std::path::Path;
use std::process::Command;

use crate::generated::run;
use crate::helm::{helm, helm_bin};
use crate::host::checked;
use crate::many_kinds::many_kinds_project;
use crate::support::*;
use serde_json::json;

/// The namespaceSelector of every admission webhook in `yaml`.
fn webhook_selectors(yaml: &str) -> Vec<serde_json::Value> {
    let documents = crate::helm_cluster::documents(yaml);
    let configurations = documents.iter().filter(|o| {
        o["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("WebhookConfiguration"))
    });
    configurations
        .flat_map(|o| o["webhooks"].as_array().cloned().unwrap_or_default())
        .map(|w| w["namespaceSelector"].clone())
        .collect()
}

/// The control plane's kubectl.
fn kubectl_bin() -> std::path::PathBuf {
    let assets = std::env::var_os("KUBEBUILDER_ASSETS").expect("KUBEBUILDER_ASSETS");
    Path::new(&assets).join("kubectl")
}

/// `make helm-lint` (`make manifests`, then helm lint --strict) and helm template; the chart's
/// CRDs and manager rules are config/'s.
fn lints_renders_and_matches_config(helm_bin: &Path, dir: &Path) -> String {
    let helm_var = format!("HELM={}", helm_bin.display());
    let lint = run(dir, "make", &["helm-lint", &helm_var]);
    assert!(
        lint.contains("1 chart(s) linted, 0 chart(s) failed"),
        "{lint}"
    );
    let rendered = helm(
        helm_bin,
        dir,
        &["template", "k8s-operator-talk", "dist/chart"],
    );
    let objects = crate::helm_cluster::documents(&rendered);
    let crds: Vec<_> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    let bases = std::fs::read_dir(dir.join("config/crd/bases")).unwrap();
    let mut expected = 0;
    for entry in bases {
        let mut base = serde_yaml::from_str::<serde_json::Value>(
            &std::fs::read_to_string(entry.unwrap().path()).unwrap(),
        )
        .unwrap();
        // A conversion webhook calls the release's Service (here in namespace default), as
        // kustomize makes it call `make deploy`'s.
        if let Some(service) = base.pointer_mut("/spec/conversion/webhook/clientConfig/service") {
            service["name"] = "k8s-operator-talk-webhook-service".into();
            service["namespace"] = "default".into();
        }
        let name = &base["metadata"]["name"];
        let chart = crds
            .iter()
            .find(|c| &c["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("the chart lacks the CRD {name}"));
        // Helm's toYaml writes schemars' `maximum: 65535.0` as `65535`: the same number.
        assert_eq!(
            numbers_as_f64(chart["spec"].clone()),
            numbers_as_f64(base["spec"].clone()),
            "{name}"
        );
        assert_eq!(
            chart["metadata"]["annotations"]["helm.sh/resource-policy"],
            "keep"
        );
        expected += 1;
    }
    assert_eq!(crds.len(), expected, "the chart holds other CRDs");
    let role =
        serde_yaml::from_str::<serde_json::Value>(&read(dir, "config/rbac/role.yaml")).unwrap();
    let chart_role = objects
        .iter()
        .find(|o| o["metadata"]["name"] == "k8s-operator-talk-manager-role")
        .expect("the manager's role");
    assert_eq!(chart_role["kind"], role["kind"]);
    assert_eq!(chart_role["rules"], role["rules"]);
    // The manager's admission policies: config/policy's, matching the release's ServiceAccount.
    let policies = [
        ("manager-kind-writes", "manager_kind_policy.yaml"),
        ("manager-writes", "manager_writes_policy.yaml"),
        ("manager-webhook-writes", "manager_webhook_policy.yaml"),
    ];
    for (name, file) in policies {
        let named = |kind: &str, name: &str| {
            let name = format!("k8s-operator-talk-{name}");
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name.as_str())
        };
        let chart_policy = named("ValidatingAdmissionPolicy", name);
        let file = format!("config/policy/{file}");
        match std::fs::read_to_string(dir.join(&file)) {
            Ok(text) => {
                let mut policy = serde_yaml::from_str::<serde_json::Value>(&text).unwrap();
                policy["spec"]["matchConditions"][0]["expression"] = "request.userInfo.username == \
                     'system:serviceaccount:' + 'default' + ':' + 'k8s-operator-talk-controller-manager'"
                    .into();
                let chart_policy = chart_policy.unwrap_or_else(|| panic!("the chart lacks {file}"));
                assert_eq!(chart_policy["spec"], policy["spec"], "{file}");
                let binding = named(
                    "ValidatingAdmissionPolicyBinding",
                    &format!("{name}-binding"),
                )
                .unwrap_or_else(|| panic!("the chart lacks the binding of {file}"));
                assert_eq!(
                    binding["spec"]["policyName"],
                    chart_policy["metadata"]["name"]
                );
            }
            Err(_) => assert!(
                chart_policy.is_none(),
                "the chart has {file}, config/policy not"
            ),
        }
    }
    // The users' roles of each kind grant what config/rbac's grant.
    for entry in std::fs::read_dir(dir.join("config/rbac")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = ["_admin_role", "_editor_role", "_viewer_role"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(&format!("{suffix}.yaml"))
                    .map(|s| (s, suffix))
            })
        else {
            continue;
        };
        let role =
            serde_yaml::from_str::<serde_json::Value>(&read(dir, &format!("config/rbac/{name}")))
                .unwrap();
        let object_name = format!(
            "k8s-operator-talk-{}",
            role["metadata"]["name"].as_str().unwrap()
        );
        let chart_role = objects
            .iter()
            .find(|o| o["metadata"]["name"] == object_name.as_str())
            .unwrap_or_else(|| panic!("the chart lacks {object_name} ({stem:?})"));
        assert_eq!(chart_role["rules"], role["rules"], "{name}");
    }
    rendered
}

/// `value` with every number as a float, for comparing YAML written by different tools.
fn numbers_as_f64(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) => n.as_f64().map(Value::from).unwrap(),
        Value::Array(items) => items.into_iter().map(numbers_as_f64).collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_f64(v)))
                .collect(),
        ),
        other => other,
    }
}

#[test]
#[ignore = "builds helm and the generated projects; run by hack/test.sh"]
fn the_chart_lints_and_renders_what_config_holds() {
    let bin = helm_bin();
    let (_a, article) = project_dir();
    article_project(&article);
    succeed(&article, &["edit", "--plugins", "helm"]);
    let rendered = lints_renders_and_matches_config(&bin, &article);
    assert!(rendered.contains("kind: ClusterRoleBinding"), "{rendered}");
    crate::helm_values::values_reach_the_manager(&bin, &article);
    crate::helm_values::switches_are_kubebuilders_and_old_spellings_are_refused(&bin, &article);
    crate::helm_metrics_certs::metrics_are_served_with_cert_managers_certificate(&bin, &article);
    assert!(
        !rendered.contains("kind: PodDisruptionBudget"),
        "{rendered}"
    );
    // More than one replica: a PodDisruptionBudget over the manager's Pods.
    let replicas = [
        "template",
        "rel",
        "dist/chart",
        "--set",
        "manager.replicas=2",
    ];
    let objects = crate::helm_cluster::documents(&helm(&bin, &article, &replicas));
    let kind = |kind: &str| objects.iter().find(|o| o["kind"] == kind).unwrap();
    let budget = &kind("PodDisruptionBudget")["spec"];
    assert_eq!(budget["minAvailable"], 1);
    let pods = &kind("Deployment")["spec"]["selector"]["matchLabels"];
    assert_eq!(&budget["selector"]["matchLabels"], pods);
    // A tag of digits, as --set and values.yaml give it (a number), is printed whole.
    for tag in ["manager.image.tag=20260820", "manager.image.tag=7"] {
        let args = ["template", "rel", "dist/chart", "--set", tag];
        let objects = crate::helm_cluster::documents(&helm(&bin, &article, &args));
        let manager = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        let image = &manager["spec"]["template"]["spec"]["containers"][0]["image"];
        let digits = tag.rsplit('=').next().unwrap();
        assert_eq!(
            image.as_str(),
            Some(format!("controller:{digits}").as_str())
        );
    }
    let helm_var = format!("HELM={}", bin.display());
    run(
        &article,
        "make",
        &["helm-package", &helm_var, "CHART_VERSION=0.2.0"],
    );
    let package = article.join("dist/k8s-operator-talk-0.2.0.tgz");
    let listing = checked(Command::new("tar").arg("tzf").arg(&package)).0;
    for file in [
        "values.yaml",
        "templates/manager/manager.yaml",
        "files/rbac/role.yaml",
        "files/crds/minetto.dev_applications.yaml",
    ] {
        assert!(
            listing.contains(&format!("k8s-operator-talk/{file}\n")),
            "{file} not packaged:\n{listing}"
        );
    }
    crate::helm_values::the_image_follows_the_chart_version(&bin, &article, &package);

    let (_m, many) = project_dir();
    many_kinds_project(&many);
    succeed(&many, &["edit", "--plugins", "helm"]);
    let rendered = lints_renders_and_matches_config(&bin, &many);
    assert!(
        rendered.contains("k8s-operator-talk-apps-self-viewer-role"),
        "{rendered}"
    );
    // The webhooks on Kubernetes' Pod skip its namespaces and the manager's, by name: the
    // release's for the chart, config/default's for `make deploy`.
    let skipping = |manager: &str| {
        json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kube-node-lease", manager]},
        ]})
    };
    let selectors = webhook_selectors(&rendered);
    let released = skipping("default");
    assert_eq!(
        selectors.iter().filter(|s| **s == released).count(),
        2,
        "{selectors:?}"
    );
    assert_eq!(
        selectors.iter().filter(|s| !s.is_null()).count(),
        2,
        "{selectors:?}"
    );
    let deployed = run(
        &many,
        kubectl_bin().to_str().unwrap(),
        &["kustomize", "config/default"],
    );
    let selectors = webhook_selectors(&deployed);
    let own = skipping("k8s-operator-talk-system");
    assert_eq!(
        selectors.iter().filter(|s| **s == own).count(),
        2,
        "{selectors:?}"
    );

    let (_n, namespaced) = project_dir();
    init_with(&namespaced, &["--namespaced", "--plugins", "helm"]);
    create_api(
        &namespaced,
        &["--version", "v1alpha1", "--kind", "Application"],
    );
    create_api(
        &namespaced,
        &["--group", "batch", "--version", "v1", "--kind", "Person"],
    );
    let webhooks = "--version v1alpha1 --kind Application --defaulting --programmatic-validation";
    create_webhook(&namespaced, &args(webhooks));
    let rendered = lints_renders_and_matches_config(&bin, &namespaced);
    assert!(rendered.contains("name: WATCH_NAMESPACE"), "{rendered}");
    // Its webhooks are called only for the namespaces it watches.
    let selected = |namespaces: &[&str]| {
        json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces},
        ]})
    };
    assert_eq!(
        webhook_selectors(&rendered),
        [selected(&["default"]), selected(&["default"])]
    );
    let deployed = run(
        &namespaced,
        kubectl_bin().to_str().unwrap(),
        &["kustomize", "config/default"],
    );
    let own = json!({"matchLabels": {"kubernetes.io/metadata.name": "k8s-operator-talk-system"}});
    assert_eq!(webhook_selectors(&deployed), [own.clone(), own]);
    let watched = helm(
        &bin,
        &namespaced,
        &[
            "template",
            "k8s-operator-talk",
            "dist/chart",
            "--set",
            "manager.watchNamespaces={a,b}",
        ],
    );
    for ns in ["a", "b"] {
        assert!(
            watched.contains(&format!(
                "kind: Role\nmetadata:\n  name: k8s-operator-talk-manager-role\n  namespace: {ns}\n"
            )),
            "{watched}"
        );
    }
    assert!(watched.contains("value: \"a,b\""), "{watched}");
    assert_eq!(
        webhook_selectors(&watched),
        [selected(&["a", "b"]), selected(&["a", "b"])]
    );

    // Without `make manifests` the chart has no role: lint says what to run.
    std::fs::remove_file(namespaced.join("dist/chart/files/rbac/role.yaml")).unwrap();
    let out = Command::new(&bin)
        .args(["lint", "dist/chart"])
        .current_dir(&namespaced)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("run `make manifests`"), "{said}");
}
