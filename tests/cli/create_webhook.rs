//! `opsdk create webhook`: what it records and writes, and what it refuses.

use crate::support::*;

fn create_webhook(dir: &std::path::Path, args: &[&str]) -> String {
    succeed(dir, &[&["create", "webhook"], args].concat())
}

#[test]
fn the_article_webhooks_are_recorded_routed_and_installed() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    assert!(read(&dir, "config/default/kustomization.yaml").contains("\n#- ../webhook\n"));
    let stdout = create_webhook(&dir, ARTICLE_WEBHOOKS);
    assert!(
        stdout.contains("create src/webhook/v1alpha1/application.rs"),
        "{stdout}"
    );
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains(
            "  webhooks:\n    defaulting: true\n    validation: true\n    webhookVersion: v1\n"
        ),
        "{project}"
    );
    let registry = read(&dir, "src/webhook/mod.rs");
    for needle in [
        "path: \"/mutate-minetto-dev-v1alpha1-application\"",
        "path: \"/validate-minetto-dev-v1alpha1-application\"",
        "name: \"mapplication-v1alpha1.kb.io\"",
        "name: \"vapplication-v1alpha1.kb.io\"",
        "pub mod application;",
    ] {
        assert!(
            registry.contains(needle),
            "src/webhook/mod.rs lacks {needle}"
        );
    }
    assert!(read(&dir, "src/webhook/v1alpha1/application.rs").contains("fn check_image("));
    assert!(read(&dir, "config/default/kustomization.yaml").contains("\n- ../webhook\n"));
    assert!(read(&dir, "config/webhook/kustomization.yaml").contains("- manifests.yaml"));
    let policies = read(&dir, "config/network-policy/kustomization.yaml");
    assert!(
        policies.contains("\n- allow-webhook-traffic.yaml\n"),
        "{policies}"
    );
    assert!(read(&dir, "config/network-policy/allow-webhook-traffic.yaml").contains("port: 9443"));
    assert!(read(&dir, "tests/webhook_certs.rs").contains("a_rotation_keeps_every_request"));
}

#[test]
fn a_second_run_wires_the_other_webhook_and_keeps_the_users_file() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let first = &ARTICLE_WEBHOOKS[..5];
    create_webhook(&dir, first);
    assert!(!read(&dir, "src/webhook/mod.rs").contains("/validate-"));
    let file = dir.join("src/webhook/v1alpha1/application.rs");
    std::fs::write(
        &file,
        read(&dir, "src/webhook/v1alpha1/application.rs") + "// mine\n",
    )
    .unwrap();

    let validation = [&ARTICLE_WEBHOOKS[..4], &["--programmatic-validation"][..]].concat();
    create_webhook(&dir, &validation);
    assert!(
        read(&dir, "src/webhook/mod.rs").contains("/validate-minetto-dev-v1alpha1-application")
    );
    assert!(read(&dir, "src/webhook/v1alpha1/application.rs").ends_with("// mine\n"));
    assert!(read(&dir, "PROJECT").contains("    defaulting: true\n    validation: true\n"));
    // Rewriting the API's files keeps its webhooks.
    create_api(
        &dir,
        &["--version", "v1alpha1", "--kind", "Application", "--force"],
    );
    assert!(read(&dir, "PROJECT").contains("    validation: true\n"));
}

#[test]
fn bad_webhook_requests_are_refused_and_change_nothing() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let api = &ARTICLE_WEBHOOKS[..4];
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, api),
        "no webhook to scaffold",
    );
    let missing = ["--version", "v1", "--kind", "Application", "--defaulting"];
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, &missing),
        "no version \"v1\"",
    );
    let unknown = ["--version", "v1", "--kind", "Nope", "--defaulting"];
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, &unknown),
        "no API of kind \"Nope\"",
    );

    create_webhook(&dir, ARTICLE_WEBHOOKS);
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, ARTICLE_WEBHOOKS),
        "already has the webhook of --defaulting and --programmatic-validation",
    );

    create_api(
        &dir,
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--resource=false",
        ],
    );
    let foreign = [
        "--group",
        "apps",
        "--version",
        "v1",
        "--kind",
        "Deployment",
        "--defaulting",
    ];
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, &foreign),
        "is not this project's API",
    );
}

#[test]
fn a_project_made_without_the_webhook_server_is_refused() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let lib = read(&dir, "src/lib.rs").replace("pub mod webhook;\n", "");
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, ARTICLE_WEBHOOKS),
        "has no webhook server",
    );
}

#[test]
fn deleting_the_last_webhook_api_takes_its_webhooks_out_of_the_deployment() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_webhook(&dir, ARTICLE_WEBHOOKS);
    // What `make manifests` wrote.
    std::fs::write(dir.join("config/webhook/manifests.yaml"), "").unwrap();
    delete_application(&dir);
    assert!(!dir.join("config/webhook").exists());
    assert!(!dir.join("src/webhook/v1alpha1/application.rs").exists());
    assert!(read(&dir, "config/default/kustomization.yaml").contains("\n#- ../webhook\n"));
    assert!(!read(&dir, "src/webhook/mod.rs").contains("application"));
    let policies = read(&dir, "config/network-policy/kustomization.yaml");
    assert!(
        policies.contains("\n#- allow-webhook-traffic.yaml\n"),
        "{policies}"
    );
    assert!(
        !dir.join("config/network-policy/allow-webhook-traffic.yaml")
            .exists()
    );
}

#[test]
fn the_readme_gains_and_loses_its_sections_unless_the_user_changed_it() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let plain = read(&dir, "README.md");
    assert!(!plain.contains("## Admission webhooks") && !plain.contains("### With Helm"));

    let out = succeed(&dir, &["edit", "--plugins", "helm"]);
    assert!(out.contains("update README.md"), "{out}");
    let readme = read(&dir, "README.md");
    assert!(readme.contains("### With Helm"), "{readme}");
    assert!(!readme.contains("## Admission webhooks"), "{readme}");

    create_webhook(&dir, ARTICLE_WEBHOOKS);
    let readme = read(&dir, "README.md");
    assert!(
        readme.contains("## Admission webhooks\n\n`minetto.dev/v1alpha1 Application`"),
        "{readme}"
    );
    assert!(readme.contains("`make deploy` and `make helm-deploy` install them"));

    delete_application(&dir);
    let readme = read(&dir, "README.md");
    assert!(!readme.contains("## Admission webhooks"), "{readme}");

    // A README the user changed is kept, and the command says so instead of refusing.
    let (_tmp2, mine) = project_dir();
    article_project(&mine);
    let edited = format!("{plain}\nMy notes.\n");
    std::fs::write(mine.join("README.md"), &edited).unwrap();
    let out = succeed(&mine, &["edit", "--plugins", "helm"]);
    assert!(out.contains("keep README.md (changed by you"), "{out}");
    let out = create_webhook(&mine, ARTICLE_WEBHOOKS);
    assert!(out.contains("keep README.md (changed by you"), "{out}");
    assert_eq!(read(&mine, "README.md"), edited);
}
