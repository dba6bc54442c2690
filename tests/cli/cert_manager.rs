//! config/default's cert-manager options, uncommented as a user would: the webhook
//! certificate names the webhook Service, the manager mounts its Secret and serves it
//! (`--webhook-cert-path`) without the rights to keep certificates of its own, and
//! cert-manager's CA injector is pointed at both webhook configurations and at the CRDs
//! converting through the manager. Rendered with kustomize (kubectl's); the manager's side of it, serving a
//! mounted certificate and reading it again when renewed, is a generated suite
//! (tests/webhook_certs.rs).

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::generated::run;

/// Uncomments the YAML lines of config/default/kustomization.yaml (`#- ../certmanager`,
/// `#  target:`, ...), leaving the prose comments (`# [WEBHOOK] With ...`) alone.
fn uncomment_everything(text: &str) -> String {
    let yaml = |rest: &str| {
        let t = rest.trim_start();
        t == "-"
            || t.starts_with("- ")
            || t.split_once(':').is_some_and(|(key, after)| {
                !key.is_empty()
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                    && (after.is_empty() || after.starts_with(' '))
            })
    };
    text.lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if yaml(rest) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn object<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the kustomize output"))
}

/// `dir` has the Application webhooks and has run `make manifests`; `converting` are the CRDs
/// converting through the manager.
pub fn the_webhooks_can_use_cert_managers_certificate(dir: &Path, converting: &[&str]) {
    let path = dir.join("config/default/kustomization.yaml");
    let original = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, uncomment_everything(&original)).unwrap();
    let assets = PathBuf::from(std::env::var_os("KUBEBUILDER_ASSETS").expect("KUBEBUILDER_ASSETS"));
    let kubectl = assets.join("kubectl");
    let rendered = run(
        dir,
        kubectl.to_str().unwrap(),
        &["kustomize", "config/default"],
    );
    std::fs::write(&path, original).unwrap();
    let docs: Vec<Value> = rendered
        .split("\n---\n")
        .map(|doc| serde_yaml::from_str(doc).unwrap())
        .collect();

    let prefix = "k8s-operator-talk-";
    let namespace = "k8s-operator-talk-system";
    let cert = object(&docs, "Certificate", &format!("{prefix}serving-cert"));
    let service = format!("{prefix}webhook-service.{namespace}.svc");
    assert_eq!(cert["spec"]["dnsNames"][0].as_str(), Some(service.as_str()));
    // Signed by a CA of its own, so that a renewal keeps the injected bundle.
    let issuer = cert["spec"]["issuerRef"]["name"].as_str().unwrap();
    let ca_secret = &object(&docs, "Issuer", issuer)["spec"]["ca"]["secretName"];
    let ca = docs
        .iter()
        .find(|d| d["kind"] == "Certificate" && &d["spec"]["secretName"] == ca_secret)
        .expect("a Certificate keeping the CA Issuer's Secret");
    assert_eq!(ca["spec"]["isCA"], true, "{ca:?}");
    assert_eq!(ca["spec"]["privateKey"]["rotationPolicy"], "Never");
    object(
        &docs,
        "Issuer",
        ca["spec"]["issuerRef"]["name"].as_str().unwrap(),
    );
    object(&docs, "Service", &format!("{prefix}webhook-service"));
    // The metrics certificate too: Prometheus trusts its ca.crt, which must not change at
    // each renewal.
    let metrics = object(&docs, "Certificate", &format!("{prefix}metrics-certs"));
    assert_eq!(metrics["spec"]["issuerRef"]["name"].as_str(), Some(issuer));

    // The manager's admission policies are bound by name, and match the manager's
    // ServiceAccount as deployed (config/default's replacements).
    let account = object(
        &docs,
        "ServiceAccount",
        &format!("{prefix}controller-manager"),
    );
    assert_eq!(account["metadata"]["namespace"].as_str(), Some(namespace));
    for name in [
        "manager-kind-writes",
        "manager-writes",
        "manager-webhook-writes",
    ] {
        let policy = object(
            &docs,
            "ValidatingAdmissionPolicy",
            &format!("{prefix}{name}"),
        );
        let binding = object(
            &docs,
            "ValidatingAdmissionPolicyBinding",
            &format!("{prefix}{name}-binding"),
        );
        assert_eq!(binding["spec"]["policyName"], policy["metadata"]["name"]);
        let condition = policy["spec"]["matchConditions"][0]["expression"]
            .as_str()
            .unwrap();
        assert_eq!(
            condition,
            format!(
                "request.userInfo.username == 'system:serviceaccount:' + '{namespace}' + ':' + '{prefix}controller-manager'"
            ),
            "{name}"
        );
    }

    let inject = format!("{namespace}/{prefix}serving-cert");
    for (kind, name) in [
        ("MutatingWebhookConfiguration", "mutating"),
        ("ValidatingWebhookConfiguration", "validating"),
    ] {
        let config = object(
            &docs,
            kind,
            &format!("{prefix}{name}-webhook-configuration"),
        );
        assert_eq!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as_str(),
            Some(inject.as_str()),
            "{kind}"
        );
    }

    for crd in converting {
        let crd = object(&docs, "CustomResourceDefinition", crd);
        assert_eq!(
            crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as_str(),
            Some(inject.as_str()),
            "{crd:?}"
        );
        let service = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
        assert_eq!(
            service["name"].as_str(),
            Some("k8s-operator-talk-webhook-service")
        );
        assert_eq!(service["namespace"].as_str(), Some(namespace));
    }

    // cert-manager keeps the certificates, so the manager's rights to keep them are gone.
    let bindings = docs
        .iter()
        .filter(|d| d["metadata"]["name"] == format!("{prefix}webhook-certs-rolebinding").as_str());
    assert_eq!(bindings.count(), 0, "the certificate roles are still bound");

    // The manager serves the files of the Secret the Certificate fills.
    let pod = &object(&docs, "Deployment", &format!("{prefix}controller-manager"))["spec"]["template"]
        ["spec"];
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let cert_dir = args
        .iter()
        .find_map(|a| a.strip_prefix("--webhook-cert-path="))
        .unwrap_or_else(|| panic!("no --webhook-cert-path in {args:?}"));
    let mount = container["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == cert_dir)
        .expect("a volume mounted at the certificate path");
    let volume = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume");
    assert_eq!(volume["secret"]["secretName"], cert["spec"]["secretName"]);

    // With [NETWORK POLICY]: the API server's calls reach the manager's webhook port.
    let policy = &object(
        &docs,
        "NetworkPolicy",
        &format!("{prefix}allow-webhook-traffic"),
    )["spec"];
    let service = &object(&docs, "Service", &format!("{prefix}webhook-service"))["spec"];
    let rule = &policy["ingress"][0];
    assert!(
        rule["from"].is_null(),
        "the API server matches no selector: {rule:?}"
    );
    assert_eq!(rule["ports"][0]["port"], service["ports"][0]["targetPort"]);
    let labels = pod_labels(&docs, prefix);
    let selected = policy["podSelector"]["matchLabels"].as_mapping().unwrap();
    assert!(
        selected.iter().all(|(k, v)| labels.get(k) == Some(v)),
        "{selected:?} does not select the manager's Pod ({labels:?})"
    );
}

fn pod_labels<'a>(docs: &'a [Value], prefix: &str) -> &'a serde_yaml::Mapping {
    let deployment = object(docs, "Deployment", &format!("{prefix}controller-manager"));
    deployment["spec"]["template"]["metadata"]["labels"]
        .as_mapping()
        .unwrap()
}
