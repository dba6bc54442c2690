//! The chart's metrics certificate from cert-manager (certManager.enable, metrics over
//! HTTPS), as config/default's [METRICS-WITH-CERTS] gives `make deploy` one: a Certificate
//! for the metrics Service signed by the chart's CA, mounted where the manager's
//! --metrics-cert-path reads it, and verified by the ServiceMonitor with that CA.

use std::path::Path;

use serde_json::Value;

use crate::helm::helm;
use crate::helm_cluster::documents;

/// The chart of the project in `dir`, rendered as release `rel` with `settings` (`--set`).
fn render(bin: &Path, dir: &Path, settings: &str) -> Vec<Value> {
    let args = ["template", "rel", "dist/chart", "--set", settings];
    documents(&helm(bin, dir, &args))
}

fn find<'a>(objects: &'a [Value], kind: &str, name_ends: &str) -> Option<&'a Value> {
    objects.iter().find(|o| {
        o["kind"] == kind
            && o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(name_ends))
    })
}

/// The manager container's `--metrics-cert-path`, if given.
fn cert_path(manager: &Value) -> Option<String> {
    let args = manager["spec"]["template"]["spec"]["containers"][0]["args"].as_array()?;
    args.iter()
        .filter_map(|a| a.as_str()?.strip_prefix("--metrics-cert-path="))
        .map(str::to_string)
        .next()
}

pub fn metrics_are_served_with_cert_managers_certificate(bin: &Path, dir: &Path) {
    let objects = render(bin, dir, "certManager.enable=true,prometheus.enable=true");
    let object = |kind: &str, name_ends: &str| {
        find(&objects, kind, name_ends).unwrap_or_else(|| panic!("no {kind} *{name_ends}"))
    };
    let service = object("Service", "-metrics-service")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let host = format!("{service}.default.svc");
    let cert = &object("Certificate", "-metrics-certs")["spec"];
    assert_eq!(cert["dnsNames"][0].as_str(), Some(host.as_str()));
    let secret = cert["secretName"].as_str().unwrap();

    // Signed by the chart's CA, itself self-signed.
    let issuer = object("Issuer", cert["issuerRef"]["name"].as_str().unwrap());
    let ca_secret = &issuer["spec"]["ca"]["secretName"];
    let ca = objects
        .iter()
        .find(|o| o["kind"] == "Certificate" && &o["spec"]["secretName"] == ca_secret)
        .expect("the CA's Certificate");
    assert_eq!(ca["spec"]["isCA"], true);
    let root = object("Issuer", ca["spec"]["issuerRef"]["name"].as_str().unwrap());
    assert!(root["spec"]["selfSigned"].is_object(), "{root}");

    // Mounted where the manager reads it.
    let manager = object("Deployment", "-controller-manager");
    let path = cert_path(manager).expect("--metrics-cert-path");
    let pod = &manager["spec"]["template"]["spec"];
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    let mount = mounts
        .iter()
        .find(|m| m["mountPath"] == path.as_str())
        .expect("a volume at --metrics-cert-path");
    let volumes = pod["volumes"].as_array().unwrap();
    let volume = volumes.iter().find(|v| v["name"] == mount["name"]).unwrap();
    assert_eq!(volume["secret"]["secretName"].as_str(), Some(secret));
    let keys: Vec<_> = volume["secret"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["tls.crt", "tls.key"]);

    // Verified by Prometheus with the CA cert-manager puts beside it.
    let monitor = object("ServiceMonitor", "-metrics-monitor");
    let tls = &monitor["spec"]["endpoints"][0]["tlsConfig"];
    assert_eq!(tls["serverName"].as_str(), Some(host.as_str()));
    assert_eq!(tls["insecureSkipVerify"], false);
    assert_eq!(tls["ca"]["secret"]["name"].as_str(), Some(secret));
    assert_eq!(tls["ca"]["secret"]["key"], "ca.crt");

    // Without cert-manager, or without HTTPS, none of it.
    for settings in [
        "certManager.enable=false,prometheus.enable=true",
        "certManager.enable=true,prometheus.enable=true,metrics.secure=false",
    ] {
        let objects = render(bin, dir, settings);
        assert!(
            find(&objects, "Certificate", "-metrics-certs").is_none(),
            "{settings}"
        );
        let manager = find(&objects, "Deployment", "-controller-manager").unwrap();
        assert_eq!(cert_path(manager), None, "{settings}");
        let monitor = find(&objects, "ServiceMonitor", "-metrics-monitor").unwrap();
        let tls = &monitor["spec"]["endpoints"][0]["tlsConfig"];
        assert!(tls["ca"].is_null(), "{settings}: {tls}");
    }
}
