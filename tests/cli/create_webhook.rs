//! `opsdk create webhook`: what it records and writes, and what it refuses.

use crate::support::*;

/// `create webhook args` is refused with `needle` and changes nothing.
fn webhook_refused(dir: &std::path::Path, args: &[&str], needle: &str) {
    assert_refused(dir, &mut create_webhook_cmd(dir, args), needle);
}

#[test]
fn the_article_webhooks_are_recorded_routed_and_installed() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let default = read(&dir, "config/default/kustomization.yaml");
    assert!(default.contains("\n#- ../webhook\n"), "{default}");
    assert!(!default.contains("cruisers"), "{default}");
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
    webhook_refused(&dir, api, "no webhook to scaffold");
    let missing = ["--version", "v1", "--kind", "Application", "--defaulting"];
    webhook_refused(&dir, &missing, "no version \"v1\"");
    let unknown = ["--version", "v1", "--kind", "Nope", "--defaulting"];
    webhook_refused(&dir, &unknown, "no API of kind \"Nope\"");

    create_webhook(&dir, ARTICLE_WEBHOOKS);
    webhook_refused(
        &dir,
        ARTICLE_WEBHOOKS,
        "already has the webhook of --defaulting and --programmatic-validation",
    );
}

#[test]
fn webhooks_wired_one_run_at_a_time_go_with_their_api() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &args("--version v1 --kind Widget"));
    create_webhook(&dir, &args("--version v1 --kind Widget --defaulting"));
    let validation = args("--version v1 --kind Widget --programmatic-validation");
    create_webhook(&dir, &validation);
    // The file the first run wrote is what a run with both would have written.
    succeed(&dir, &args("delete api --version v1 --kind Widget"));
    assert!(!dir.join("src/webhook/v1/widget.rs").exists());
}

#[test]
fn a_kind_in_two_groups_gets_a_webhook_name_for_each() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    for group in ["ship", "navy"] {
        let api = format!("--group {group} --version v1 --kind Cruiser");
        create_api(&dir, &args(&format!("{api} --controller=false")));
        create_webhook(&dir, &args(&format!("{api} --defaulting")));
    }
    // The first keeps its name (alerts are keyed by it); the second takes its group.
    let hooks = read(&dir, "src/webhook/mod.rs");
    for name in ["mcruiser-v1.kb.io", "mcruiser-navy-v1.kb.io"] {
        assert!(hooks.contains(&format!("\"{name}\"")), "{name} in {hooks}");
    }
    // Next to the domain's group's Cruiser, which has no group to take, both take theirs.
    create_api(
        &dir,
        &args("--version v1 --kind Cruiser --controller=false"),
    );
    create_webhook(&dir, &args("--version v1 --kind Cruiser --defaulting"));
    let hooks = read(&dir, "src/webhook/mod.rs");
    for name in [
        "mcruiser-ship-v1.kb.io",
        "mcruiser-navy-v1.kb.io",
        "mcruiser-v1.kb.io",
    ] {
        assert_eq!(
            hooks.matches(&format!("\"{name}\"")).count(),
            1,
            "{name} in {hooks}"
        );
    }
}

#[test]
fn a_project_made_without_the_webhook_server_is_refused() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let lib = read(&dir, "src/lib.rs").replace("pub mod webhook;\n", "");
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    webhook_refused(&dir, ARTICLE_WEBHOOKS, "has no webhook server");
}

#[test]
fn deleting_the_last_webhook_api_takes_its_webhooks_out_of_the_deployment() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_webhook(&dir, ARTICLE_WEBHOOKS);
    // The webhook server comes with the first webhook, and goes with the last.
    let runtime = [
        "src/webhook/serve.rs",
        "src/webhook/keeper.rs",
        "src/webhook/configs.rs",
    ];
    assert!(runtime.iter().all(|f| dir.join(f).exists()));
    assert!(read(&dir, "tests/conversion_server/mod.rs").contains("serve_conversions("));
    // What `make manifests` wrote.
    std::fs::write(dir.join("config/webhook/manifests.yaml"), "").unwrap();
    delete_application(&dir);
    assert!(runtime.iter().all(|f| !dir.join(f).exists()));
    assert!(!read(&dir, "src/webhook/mod.rs").contains("pub mod serve;"));
    assert!(!read(&dir, "tests/conversion_server/mod.rs").contains("serve_conversions("));
    assert!(!dir.join("config/webhook").exists());
    assert!(!dir.join("src/webhook/v1alpha1/application.rs").exists());
    let default = read(&dir, "config/default/kustomization.yaml");
    assert!(default.contains("\n#- ../webhook\n"), "{default}");
    assert!(!default.contains("cruisers"), "{default}");
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

/// Cruiser v1alpha1 (created first), v1 and v2, in group `ship`.
fn cruiser_project(dir: &std::path::Path) {
    init(dir);
    for version in ["v1alpha1", "v1", "v2"] {
        create_api(
            dir,
            &[
                "--group",
                "ship",
                "--version",
                version,
                "--kind",
                "Cruiser",
                "--controller=false",
            ],
        );
    }
}

fn cruiser(version: &str, extra: &[&str]) -> Vec<String> {
    let api = ["--group", "ship", "--version", version, "--kind", "Cruiser"];
    api.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn a_conversion_webhook_is_recorded_stored_in_the_hub_and_routed() {
    let (_tmp, dir) = project_dir();
    cruiser_project(&dir);
    let request = cruiser("v1", &["--conversion", "--spoke", "v1alpha1,v2"]);
    let out = opsdk(&dir)
        .args(["create", "webhook"])
        .args(strs(&request))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    // v2 outranks the hub v1: kubectl's default reads go through the manager.
    assert!(
        stderr.contains("note: v2 outranks the hub v1 in Kubernetes' version order"),
        "{stderr}"
    );
    for file in [
        "create src/api/ship/v1alpha1/cruiser_conversion.rs",
        "create src/api/ship/v2/cruiser_conversion.rs",
        "create tests/conversion.rs",
        "create config/crd/kustomizeconfig.yaml",
        "create config/webhook/service.yaml",
    ] {
        assert!(stdout.contains(file), "{file}:\n{stdout}");
    }
    assert!(
        !stdout.contains("src/webhook/ship"),
        "no admission file:\n{stdout}"
    );
    let project = read(&dir, "PROJECT");
    let record = "  webhooks:\n    conversion: true\n    spoke:\n    - v1alpha1\n    - v2\n    webhookVersion: v1\n";
    assert!(project.contains(record), "{project}");
    let api = read(&dir, "src/api/mod.rs");
    assert!(api.contains("\"v1\""), "v1, the hub, is stored:\n{api}");
    assert!(!api.contains("\"v1alpha1\""), "{api}");
    assert!(api.contains("mod cruiser_conversion;"), "{api}");
    let registry = read(&dir, "src/webhook/mod.rs");
    for needle in [
        "hub: \"v1\"",
        "spokes: &[\"v1alpha1\", \"v2\"]",
        "conversion::up::<crate::api::ship::v2::Cruiser, Hub>",
        "fn every_version_round_trips_through_the_others",
    ] {
        assert!(registry.contains(needle), "{needle}:\n{registry}");
    }
    let conversion = read(&dir, "src/api/ship/v2/cruiser_conversion.rs");
    assert!(
        conversion.contains("impl TryFrom<Hub> for Cruiser"),
        "{conversion}"
    );
    assert!(read(&dir, "config/crd/kustomization.yaml").contains("- kustomizeconfig.yaml"));
    let webhook = read(&dir, "config/webhook/kustomization.yaml");
    assert!(
        !webhook.contains("- manifests.yaml"),
        "no admission webhooks:\n{webhook}"
    );
    let default = read(&dir, "config/default/kustomization.yaml");
    assert!(default.contains("\n- ../webhook\n"), "{default}");
    let inject = "#      kind: CustomResourceDefinition\n#      name: cruisers.ship.minetto.dev\n";
    assert_eq!(default.matches(inject).count(), 2, "{default}");

    // A spoke's conversion file is the user's; --force adds nothing it already has.
    let again = cruiser("v1", &["--conversion", "--spoke", "v2", "--force"]);
    create_webhook(&dir, &strs(&again));
    assert!(read(&dir, "PROJECT").contains(record));
}

#[test]
fn bad_conversion_requests_are_refused_and_change_nothing() {
    let (_tmp, dir) = project_dir();
    cruiser_project(&dir);
    for (extra, needle) in [
        (&["--spoke", "v2"][..], "--conversion is missing"),
        (&["--conversion"], "--conversion needs the versions"),
        (&["--conversion", "--spoke", "v3"], "no version \"v3\""),
        (
            &["--conversion", "--spoke", "V2"],
            "invalid --spoke version \"V2\"",
        ),
        (
            &["--conversion", "--spoke", ""],
            "--spoke holds an empty version",
        ),
        (
            &["--conversion", "--spoke", "v1", "--spoke", "v2"],
            "cannot be both the hub and a spoke",
        ),
        (
            &["--conversion", "--spoke", "v2"],
            "version v1alpha1 would not convert",
        ),
    ] {
        let request = cruiser("v1", extra);
        webhook_refused(&dir, &strs(&request), needle);
    }
    // A spoke named twice is one spoke: its file is named once.
    let request = cruiser(
        "v1",
        &["--conversion", "--spoke", "v1alpha1", "--spoke", "v2,v2"],
    );
    let said = create_webhook(&dir, &strs(&request));
    assert_eq!(said.matches("cruiser_conversion.rs").count(), 4, "{said}");
    webhook_refused(&dir, &strs(&request), "already has a conversion webhook");
    let other = cruiser("v2", &["--conversion", "--spoke", "v1"]);
    webhook_refused(&dir, &strs(&other), "already converts through v1");

    let (_tmp2, single) = project_dir();
    article_project(&single);
    let one = args("--version v1alpha1 --kind Application --conversion --spoke v1");
    webhook_refused(&single, &one, "has one version");
}

#[test]
fn deleting_a_spoke_drops_it_and_the_hub_goes_last() {
    let (_tmp, dir) = project_dir();
    cruiser_project(&dir);
    let request = cruiser("v1", &["--conversion", "--spoke", "v1alpha1,v2"]);
    create_webhook(&dir, &strs(&request));
    let delete = |version: &str| {
        let mut cmd = opsdk(&dir);
        cmd.args(["delete", "api"]).args(cruiser(version, &[]));
        cmd
    };
    assert_refused(&dir, &mut delete("v1"), "v1 is the storage version");

    // v1alpha1, the first version created, is a spoke: it may go, and leaves the list.
    delete("v1alpha1").assert().success();
    assert!(!dir.join("src/api/ship/v1alpha1").exists());
    let project = read(&dir, "PROJECT");
    assert!(project.contains("    spoke:\n    - v2\n"), "{project}");

    delete("v2").assert().success();
    assert!(!dir.join("src/api/ship/v2/cruiser_conversion.rs").exists());
    let project = read(&dir, "PROJECT");
    assert!(!project.contains("conversion"), "{project}");
    assert!(!read(&dir, "src/webhook/mod.rs").contains("Conversion {"));
    assert!(!dir.join("tests/conversion.rs").exists());
    assert!(!dir.join("config/webhook").exists());
    let default = read(&dir, "config/default/kustomization.yaml");
    assert!(default.contains("\n#- ../webhook\n"), "{default}");
    assert!(!default.contains("cruisers"), "{default}");
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

    // A README the user added to gets the new sections merged in.
    let (_tmp2, mine) = project_dir();
    article_project(&mine);
    let edited = format!("{plain}\nMy notes.\n");
    std::fs::write(mine.join("README.md"), &edited).unwrap();
    let out = succeed(&mine, &["edit", "--plugins", "helm"]);
    assert!(out.contains("merge README.md (your changes kept"), "{out}");
    let readme = read(&mine, "README.md");
    assert!(
        readme.contains("### With Helm") && readme.ends_with("\nMy notes.\n"),
        "{readme}"
    );

    // One where the user changed a line opsdk changes too (the kind's row, which gains its
    // webhooks) is kept as it is, and the command says so instead of refusing.
    let row = "| `tests/application.rs` | none |";
    assert!(readme.contains(row), "{readme}");
    let edited = readme.replace(row, "| `tests/application.rs` | none yet |");
    std::fs::write(mine.join("README.md"), &edited).unwrap();
    let out = create_webhook(&mine, ARTICLE_WEBHOOKS);
    assert!(out.contains("keep README.md (changed by you"), "{out}");
    assert_eq!(read(&mine, "README.md"), edited);
}

/// A list the user extended that the command leaves as it is goes unmentioned: only files
/// whose bytes change are named.
#[test]
fn a_list_the_command_does_not_change_is_not_named() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let frigate = ["--group", "ship", "--version", "v1", "--kind", "Frigate"];
    create_api(
        &dir,
        &[&frigate[..], &["--resource", "--controller"]].concat(),
    );
    let rbac = "config/rbac/kustomization.yaml";
    let extended = format!("{}- my_role.yaml\n", read(&dir, rbac));
    std::fs::write(dir.join(rbac), &extended).unwrap();
    let said = create_webhook(
        &dir,
        &[&frigate[..], &["--programmatic-validation"]].concat(),
    );
    assert!(!said.contains(rbac), "{said}");
    assert_eq!(read(&dir, rbac), extended);
}
