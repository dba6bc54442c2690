//! The chart of a project with admission webhooks (the article's project and `create webhook
//! --defaulting --programmatic-validation`) on a real control plane, with helm v3.22.0:
//! rendered into a namespace enforcing the restricted Pod Security profile, accepted without a
//! warning; `make helm-deploy` creates the very objects `make deploy` creates, the webhook
//! Service, both configurations and the certificate roles included; `webhook.enable=false`
//! leaves them out; and installed as another release in another namespace, the manager, run
//! as that release's ServiceAccount, finds its configurations by name and writes its CA bundle
//! into them (no kubelet runs the manager's Pod: it runs here). A kind converting through the
//! manager (Cruiser, v2 a spoke of v1) gets the same: its CRD calls the release's Service,
//! and the manager, allowed by the chart's roles, writes its address and CA bundle there.
//! Run by hack/test.sh.

use crate::article::Manager;
use crate::helm::{helm, helm_bin};
use crate::helm_cluster::{
    chart_project, control_plane, documents, dry_run, make, restricted_namespace,
    same_objects_as_make_deploy,
};
use crate::host::free_port;
use crate::support::{ARTICLE_WEBHOOKS, args};

/// The configurations' names: the manager's (`configs::deployed`), whatever the release.
const CONFIGURATIONS: [(&str, &str); 2] = [
    (
        "mutatingwebhookconfiguration",
        "k8s-operator-talk-mutating-webhook-configuration",
    ),
    (
        "validatingwebhookconfiguration",
        "k8s-operator-talk-validating-webhook-configuration",
    ),
];

/// The CRD of the kind converting through the manager.
const CRUISERS: &str = "cruisers.ship.minetto.dev";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the control plane, builds helm and the generated project; run by hack/test.sh"]
async fn helm_installs_the_webhooks_make_deploy_does_and_the_manager_finds_them() {
    let bin = helm_bin();
    let cp = control_plane().await;
    let create_webhook = [&["create", "webhook"], ARTICLE_WEBHOOKS].concat();
    let cruiser = |version: &str| {
        format!("create api --group ship --version {version} --kind Cruiser --controller=false")
    };
    let (v1, v2) = (cruiser("v1"), cruiser("v2"));
    let conversion =
        "create webhook --group ship --version v1 --kind Cruiser --conversion --spoke v2";
    let more = [create_webhook, args(&v1), args(&v2), args(conversion)];
    let more: Vec<&[&str]> = more.iter().map(Vec::as_slice).collect();
    let project = chart_project(cp.kubeconfig(), &[], &more);
    let kubectl = &project.kubectl;

    restricted_namespace(kubectl, "restricted");
    let warnings = dry_run(&project, &bin, "restricted", &[]);
    assert!(
        warnings.trim().is_empty(),
        "the API server warned:\n{warnings}"
    );

    let manifest = same_objects_as_make_deploy(&project, &bin);
    for piece in [
        "kind: MutatingWebhookConfiguration\n",
        "kind: ValidatingWebhookConfiguration\n",
        "name: k8s-operator-talk-webhook-service\n",
        "name: k8s-operator-talk-webhook-certs-role\n",
        "name: k8s-operator-talk-webhook-certs-rolebinding\n",
        "- cruisers.ship.minetto.dev\n",
    ] {
        assert!(manifest.contains(piece), "{piece} missing:\n{manifest}");
    }

    let off = helm(
        &bin,
        &project.dir,
        &[
            "template",
            "k8s-operator-talk",
            "dist/chart",
            "--set",
            "webhook.enable=false",
        ],
    );
    let webhook_objects: Vec<String> = documents(&off)
        .iter()
        .map(|o| format!("{} {}", o["kind"], o["metadata"]["name"]))
        .filter(|o| o.contains("ebhook"))
        .collect();
    assert!(webhook_objects.is_empty(), "{webhook_objects:?}");
    assert!(off.contains("- --enable-webhooks=false\n"), "{off}");

    // cert-manager keeps the certificate: the manager mounts and serves it, the CA injector
    // is asked for both configurations and the converting CRD, and the manager gets no roles
    // for keeping its own.
    let set = ["template", "k8s-operator-talk", "dist/chart", "--set"];
    let managed = helm(
        &bin,
        &project.dir,
        // Extra volumes given as null (a values file with their entries commented out).
        &[
            &set[..],
            &["certManager.enable=true,manager.extraVolumes=null,manager.extraVolumeMounts=null"],
        ]
        .concat(),
    );
    let objects = documents(&managed);
    let named = |kind: &str, name: &str| {
        let found = objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name);
        found.unwrap_or_else(|| panic!("no {kind} {name}:\n{managed}"))
    };
    let serving = &named("Certificate", "k8s-operator-talk-serving-cert")["spec"];
    assert_eq!(
        serving["secretName"],
        "k8s-operator-talk-webhook-server-cert"
    );
    assert_eq!(
        serving["dnsNames"][0],
        "k8s-operator-talk-webhook-service.default.svc"
    );
    let injected = [
        ("MutatingWebhookConfiguration", CONFIGURATIONS[0].1),
        ("ValidatingWebhookConfiguration", CONFIGURATIONS[1].1),
        ("CustomResourceDefinition", CRUISERS),
    ];
    for (kind, name) in injected {
        let annotations = &named(kind, name)["metadata"]["annotations"];
        let from = &annotations["cert-manager.io/inject-ca-from"];
        assert_eq!(from, "default/k8s-operator-talk-serving-cert", "{kind}");
    }
    let mounted = "- --webhook-cert-path=/tmp/k8s-webhook-server/serving-certs\n";
    assert!(managed.contains(mounted), "{managed}");
    assert!(managed.contains("secretName: k8s-operator-talk-webhook-server-cert\n"));
    assert!(!managed.contains("webhook-certs-role"), "{managed}");
    // The metrics certificate too, from the same CA.
    crate::helm_metrics_certs::metrics_are_served_with_cert_managers_certificate(
        &bin,
        &project.dir,
    );

    // Another release in another namespace: the manager still finds its configurations.
    make(&project, &bin, "helm-uninstall", &[]);
    let kubeconfig = kubectl.kubeconfig.display().to_string();
    let install = [
        "install",
        "other",
        "dist/chart",
        "-n",
        "elsewhere",
        "--create-namespace",
        // The CRDs stayed, kept by the first release.
        "--set",
        "crd.enable=false",
        "--kubeconfig",
        &kubeconfig,
    ];
    helm(&bin, &project.dir, &install);
    for (kind, name) in CONFIGURATIONS {
        let service = kubectl.ok(&[
            "get",
            kind,
            name,
            "-o",
            "jsonpath={.webhooks[*].clientConfig.service.namespace}/{.webhooks[*].clientConfig.service.name}",
        ]);
        assert_eq!(service, "elsewhere/k8s-operator-talk-webhook-service");
    }
    // The CRD stayed from the first release: it calls that release's Service until the
    // manager of this one writes its own.
    let conversion = [
        "get",
        "crd",
        CRUISERS,
        "-o",
        "jsonpath={.spec.conversion.webhook.clientConfig.service.namespace}/{.spec.conversion.webhook.clientConfig.service.name} {.spec.conversion.webhook.clientConfig.caBundle}",
    ];
    assert_eq!(
        kubectl.ok(&conversion).trim(),
        "k8s-operator-talk-system/k8s-operator-talk-webhook-service"
    );
    let account =
        project.account_kubeconfig("elsewhere", "other-k8s-operator-talk-controller-manager");
    let webhook_port = format!("--webhook-port={}", free_port());
    let manager = Manager::start_with(
        &project.dir,
        &account,
        "other-manager",
        &[("POD_NAMESPACE", "elsewhere")],
        &["--metrics-secure=false", &webhook_port],
    );
    for (kind, name) in CONFIGURATIONS {
        let args = [
            "get",
            kind,
            name,
            "-o",
            "jsonpath={.webhooks[*].clientConfig.caBundle}",
        ];
        kubectl.eventually(&format!("the CA bundle in {name}"), &args, |bundle| {
            !bundle.trim().is_empty()
        });
    }
    let written = "the manager's Service and CA bundle in the CRD";
    kubectl.eventually(written, &conversion, |settings| {
        settings.starts_with("elsewhere/k8s-operator-talk-webhook-service ")
            && settings.trim().len() > "elsewhere/k8s-operator-talk-webhook-service".len()
    });
    kubectl.ok(&[
        "-n",
        "elsewhere",
        "get",
        "secret",
        "k8s-operator-talk-webhook-server-cert",
    ]);
    drop(manager);
}
