//! Every class of bad input: one `error:` line naming the input, one `help:` line naming the
//! fix, a non-zero exit, and an unchanged tree.

use crate::support::*;

fn refuse_create(extra: &[&str], needle: &str) {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    assert_refused(&dir, &mut create_api_cmd(&dir, extra), needle);
}

fn refuse_init(extra: &[&str], needle: &str) {
    let (_tmp, dir) = project_dir();
    let mut cmd = opsdk(&dir);
    cmd.arg("init").args(extra);
    assert_refused(&dir, &mut cmd, needle);
}

#[test]
fn domains() {
    for domain in [
        "localhost",
        "Minetto.dev",
        "minetto..dev",
        "-x.dev",
        "under_score.dev",
    ] {
        refuse_init(&[&format!("--domain={domain}")], "invalid --domain");
    }
    refuse_init(
        &["--domain", "ops.k8s.io"],
        "API groups under k8s.io are Kubernetes' own",
    );
    // A valid DNS subdomain, too long for the file names of any API.
    let label = "d".repeat(60);
    refuse_init(
        &[
            "--domain",
            &format!("{label}.{label}.{label}.{}.dev", "e".repeat(50)),
        ],
        "too long for any API",
    );
}

#[test]
fn repos_and_project_names() {
    refuse_init(&["--repo", "github.com/x/bad name"], "invalid --repo");
    refuse_init(&["--repo", "foo"], "invalid --repo \"foo\"");
    refuse_init(
        &["--repo", "github.com/x/My_Operator"],
        "invalid project name \"My_Operator\" (from --repo)",
    );
    refuse_init(&["--project-name", "test"], "Cargo reserves it");
    refuse_init(
        &["--project-name", "kube"],
        "depends on a crate of that name",
    );
    refuse_init(&["--project-name", "9lives"], "invalid project name");
    // 29 characters: `<name>-controller-manager-metrics-service` would be 64.
    refuse_init(
        &["--repo", "github.com/x/kubernetes-database-backup-op"],
        "longer than 28 characters",
    );
    refuse_init(&["--project-name", &"a".repeat(64)], "longer than 28");
    refuse_init(
        &["--project-name", "crdgen"],
        "already has a binary of that name",
    );
    // `use <crate>::{Context, controller}` would bring in the module, not the crate.
    for (name, file) in [
        ("controller", "src/controller.rs"),
        ("telemetry", "src/telemetry.rs"),
        ("envtest", "tests/envtest/"),
        ("conversion-server", "tests/conversion_server/"),
    ] {
        refuse_init(
            &["--project-name", name],
            &format!("the project's own code has a module of that name ({file})"),
        );
    }
    refuse_init(&["--project-name", "deps"], "Cargo forbids it");
    refuse_init(&["--owner", "two\nlines"], "invalid --owner");
    for keyword in ["fn", "crate", "super"] {
        refuse_init(
            &["--repo", &format!("github.com/x/{keyword}")],
            "a Rust keyword",
        );
    }
}

#[test]
fn names_the_generated_code_already_has() {
    refuse_create(
        &args("--group serve --version v1 --kind Widget"),
        "opsdk's own code takes that name (src/webhook/serve.rs)",
    );
    refuse_create(
        &args("--group test-support --version v1 --kind Widget"),
        "opsdk's own code takes that name (src/controller/test_support.rs)",
    );
    // Modules named like a crate the generated code uses would hide it.
    for (flags, crate_) in [
        ("--group kube --version v1 --kind Widget", "kube"),
        (
            "--group tokio-rustls --version v1 --kind Widget",
            "tokio_rustls",
        ),
        ("--version v1 --kind Std", "std"),
        ("--group ship --version v1 --kind Futures", "futures"),
    ] {
        let hidden = format!("its module `{crate_}` would hide the `{crate_}` crate");
        refuse_create(&args(flags), &hidden);
    }
    refuse_create(
        &args("--version v1 --kind Envtest"),
        "tests/envtest.rs, where the generated tests keep their own module",
    );
    refuse_create(
        &args("--version v1 --kind Rollout"),
        "the module `rollout` in src/controller, a name opsdk's own code takes (src/controller/rollout.rs)",
    );
    // The file named is the one that takes the name, wherever it is.
    refuse_create(
        &args("--version v1 --kind Conversion"),
        "a name opsdk's own code takes (src/webhook/conversion.rs)",
    );
    // A kind of the domain group and a group share src/controller's top level.
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(&dir, &args("--group ship --version v1 --kind Frigate"));
    let ship = args("--version v1 --kind Ship");
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &ship),
        "which a group or another kind already has",
    );
    // A group named like a kind of the domain group: the group is at fault, not the kind.
    let job = args("--group application --version v1 --kind Job");
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &job),
        "group application of kind Job would need the module `application` in src/controller, which a group or another kind already has\nhelp: put the kind in another --group",
    );
    // Per-kind files have flat names: ship Frigate's are ship_frigate's.
    let frigate = args("--version v1 --kind ShipFrigate");
    let refused = "would share its files (tests/ship_frigate.rs";
    assert_refused(&dir, &mut create_api_cmd(&dir, &frigate), refused);
    // Nor may an own API take the group and kind of a type the project only controls.
    create_api(
        &dir,
        &args("--group apps --version v1 --kind Deployment --resource=false"),
    );
    let own = args("--group apps --version v1 --kind Deployment --force");
    let refused = "the project has a controller for apps/v1 Deployment";
    assert_refused(&dir, &mut create_api_cmd(&dir, &own), refused);
}

#[test]
fn project_name_from_a_bad_directory_name() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path().join("My Operator");
    std::fs::create_dir(&dir).unwrap();
    assert_refused(&dir, opsdk(&dir).arg("init"), "(from the directory name)");
}

#[test]
fn versions() {
    let long = format!("v{}", "1".repeat(63));
    for version in ["1", "V1", "v1gamma1", "v0", "v1alpha", "alpha1", &long] {
        refuse_create(
            &["--version", version, "--kind", "Widget"],
            "invalid --version",
        );
    }
}

/// Names every part of which is valid, but which together are too long: a CRD name past 253
/// characters, a sample file name past what a file system takes. Refused, nothing written.
#[test]
fn names_too_long_together() {
    // The longest domain init takes: 234 characters, the sample of kind K in v1 would be
    // named <domain>_v1_k.yaml, 244 bytes.
    let label = "d".repeat(60);
    let domain = format!("{label}.{label}.{label}.{}.dev", "e".repeat(47));
    let (_tmp, dir) = project_dir();
    succeed(&dir, &["init", "--domain", &domain, "--repo", REPO]);
    assert_refused(
        &dir,
        &mut create_api_cmd(
            &dir,
            &args("--group gggggggggg --version v1 --kind Widget --plural ppppppppppp"),
        ),
        "is 257 characters, past the 253 an object name may have",
    );
    // The CRD name fits, the file make manifests would write it to does not.
    let plural = format!("--version v1 --kind K --plural {}", "p".repeat(17));
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args(&plural)),
        "make manifests would write the CRD of K to config/crd/bases/",
    );
    // The CRD name fits (widgets.apps.<domain>), the sample's file name does not.
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args("--group apps --version v1 --kind Widget")),
        "_v1_widget.yaml\" is 254 bytes, past the 244 a file name may have here",
    );
    create_api(&dir, &args("--version v1 --kind K"));
}

#[test]
fn kinds() {
    for kind in [
        "widget",
        "My-Widget",
        "My_Widget",
        "2Widget",
        "WidgetList",
        "Wïdget",
    ] {
        refuse_create(&["--version", "v1", "--kind", kind], "invalid --kind");
    }
    let long = format!("A{}y", "b".repeat(61));
    refuse_create(
        &["--version", "v1", "--kind", &long],
        "is longer than 63 characters\nhelp: pass a shorter --plural, or choose a shorter --kind",
    );
}

#[test]
fn groups_and_plurals() {
    refuse_create(
        &args("--group x--y --version v1 --kind Widget"),
        "would not be snake case, which the project's lint (clippy -D warnings) refuses\nhelp: use single dashes, e.g. --group x-y",
    );
    for group in ["Apps", "apps.web", "v1beta1", "-apps"] {
        refuse_create(
            &[
                &format!("--group={group}"),
                "--version",
                "v1",
                "--kind",
                "Widget",
            ],
            "invalid --group",
        );
    }
    for plural in ["Widgets", "wid-gets", "1widgets"] {
        refuse_create(
            &["--version", "v1", "--kind", "Widget", "--plural", plural],
            "invalid --plural",
        );
    }
}

#[test]
fn conflicting_apis() {
    refuse_create(
        &["--version", "v1alpha1", "--kind", "Application"],
        "already exists",
    );
    refuse_create(
        &["--version", "v1", "--kind", "Application"],
        "already has a controller",
    );
    refuse_create(
        &args("--version v1 --kind Application --controller=false --plural apps"),
        "same --plural",
    );
    refuse_create(
        &args("--version v1 --kind Application --controller=false --namespaced=false"),
        "same --plural and --namespaced",
    );
    refuse_create(
        &args("--version v1 --kind Apps --plural applications"),
        "the plural name \"applications\" of kind Apps is already a name of minetto.dev/v1alpha1 Application",
    );
    // A controller for a version the project's kind lacks: that version comes first.
    refuse_create(
        &args("--version v1 --kind Application --resource=false --controller"),
        "error: Application is this project's kind, without a version \"v1\" (its versions: v1alpha1)",
    );
    // No --plural changes a singular: the help names what does.
    refuse_create(
        &args("--version v1 --kind APPLICATION --plural others"),
        "help: choose another --kind or --group (the singular is the kind in lowercase)",
    );
    refuse_create(
        &args("--version v1alpha1 --kind Application --force --controller=false"),
        "has a controller, which --controller=false would leave behind",
    );
    // --resource=false is for Kubernetes' own types only, and makes a controller.
    refuse_create(
        &["--version", "v1", "--kind", "Widget", "--resource=false"],
        "core/v1 Widget is not a Kubernetes v1.37.2 type\nhelp: --resource=false makes a controller for a type Kubernetes defines: core/v1 ComponentStatus, core/v1 ConfigMap",
    );
    refuse_create(
        &args("--group apps --version v1beta1 --kind Deployment --resource=false"),
        "help: --resource=false makes a controller for a type Kubernetes defines: apps/v1 ControllerRevision",
    );
    for flags in [
        "--group apps --version v1 --kind Deployment --resource=false --controller=false",
        // Nothing to scaffold is said first, whatever the type.
        "--group z --version v1 --kind Z --resource=false --controller=false",
    ] {
        refuse_create(&args(flags), "would scaffold nothing");
    }
    refuse_create(
        &args("--group core --version v1 --kind ConfigMap --resource=false --plural configs"),
        "--deploy-image, --plural and --namespaced apply to the project's own APIs",
    );
    refuse_create(
        &args("--group apps --version v1 --kind Deployment --resource=false --namespaced=false"),
        "its scope is Kubernetes'",
    );
    refuse_create(
        &args("--version v1 --kind Widget --deploy-image --namespaced=false"),
        "cluster-scoped",
    );
    // Versions of a kind share its roles and scale subresource: deploy-image or not, all alike.
    let v1 = "--version v1 --kind Application --controller=false --deploy-image=false";
    refuse_create(
        &args(v1),
        "cannot differ from minetto.dev/v1alpha1 Application",
    );
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(
        &dir,
        &args("--version v1 --kind Application --controller=false"),
    );
    let mut cmd = create_api_cmd(&dir, &args(&format!("{v1} --force")));
    assert_refused(
        &dir,
        &mut cmd,
        "cannot differ from minetto.dev/v1alpha1 Application",
    );
}

#[test]
fn rust_names_that_would_clash() {
    // `String` is generated as `StringResource`, so a kind named StringResource collides.
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &["--version", "v1", "--kind", "String"]);
    let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "StringResource"]);
    assert_refused(&dir, &mut cmd, "would define the Rust type StringResource");

    // A kind's suite may not be where another kind's webhooks' suite goes, either way round.
    create_api(&dir, &args("--group foo --version v1 --kind Bar"));
    let mut cmd = create_api_cmd(&dir, &args("--version v1 --kind FooBarV1Webhook"));
    let said = "tests/foo_bar_v1_webhook.rs, where the webhooks of foo.minetto.dev/v1 Bar go";
    assert_refused(&dir, &mut cmd, said);
    create_api(&dir, &args("--version v1 --kind BazV1Webhook"));
    create_api(&dir, &args("--version v1 --kind Baz"));
    let mut cmd = opsdk(&dir);
    cmd.args(args("create webhook --version v1 --kind Baz --defaulting"));
    let said = "would be tests/baz_v1_webhook.rs, the envtest suite of minetto.dev/v1 BazV1Webhook";
    assert_refused(&dir, &mut cmd, said);
}

#[test]
fn a_file_that_cannot_be_read_is_named_with_a_help_line() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    std::fs::remove_file(dir.join("PROJECT")).unwrap();
    std::fs::create_dir(dir.join("PROJECT")).unwrap();
    let widget = args("--version v1 --kind Widget");
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &widget),
        "PROJECT: Is a directory",
    );
}

#[test]
fn command_lines_clap_rejects_get_one_error_and_one_help_line() {
    let (_tmp, dir) = project_dir();
    for (line, needle) in [
        ("init --license gpl", "invalid value 'gpl'"),
        ("init --domian a.io", "unexpected argument '--domian'"),
        ("create api --kind Widget", "--version <VERSION>"),
    ] {
        let mut cmd = opsdk(&dir);
        cmd.args(args(line));
        assert_refused(&dir, &mut cmd, needle);
        cmd.assert().code(2);
    }
    assert!(snapshot(&dir).is_empty());
}

#[test]
fn a_manager_that_starts_the_webhook_server_itself() {
    // src/main.rs as an earlier opsdk wrote it: the webhook runtime it calls is now written
    // only with webhooks, so regenerating would break its build.
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let main = dir.join("src/main.rs");
    let old = std::fs::read_to_string(&main).unwrap().replace(
        "webhook::run(client, flags, webhooks_listening, stop)",
        "webhook::serve::serve(client, webhook::hooks(), options, stop)",
    );
    std::fs::write(&main, old).unwrap();
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args("--version v1 --kind Widget")),
        "starts the webhook server itself (`webhook::serve::serve`), as projects made by an earlier opsdk do; opsdk now writes that server only into projects with webhooks\nhelp: in src/main.rs, flatten `webhook::Flags`",
    );
}

#[test]
fn a_validating_webhook_file_without_validate_delete() {
    // The Application's webhook file as an earlier opsdk wrote it: the regenerated
    // `webhook::hooks` reads its `VALIDATE_DELETE`, so regenerating would break the build.
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_webhook_cmd(&dir, ARTICLE_WEBHOOKS)
        .assert()
        .success();
    let hooks = dir.join("src/webhook/v1alpha1/application.rs");
    let old = std::fs::read_to_string(&hooks)
        .unwrap()
        .replace("pub const VALIDATE_DELETE: bool = false;", "");
    std::fs::write(&hooks, old).unwrap();
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args("--version v1 --kind Widget")),
        "application.rs: declares no `VALIDATE_DELETE`, which the validating webhook now reads to know whether the API server sends it deletes (an earlier opsdk sent every delete)\nhelp: add `pub const VALIDATE_DELETE: bool = false;` to it (true keeps deletes validated, but then no Application can be deleted while the manager is down)",
    );
}

/// A plural or domain changed in PROJECT by hand no longer matches the CRD the types
/// make, nor a project name the crate: every command refuses, naming the file, before it writes
/// anything.
#[test]
fn a_hand_edited_plural_or_domain_in_project_is_refused() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let project = read(&dir, "PROJECT");
    for (from, to, needle) in [
        (
            "plural: applications",
            "plural: apps",
            "declares plural \"applications\"",
        ),
        (
            "domain: minetto.dev",
            "domain: example.com",
            "declares group \"minetto.dev\"",
        ),
    ] {
        std::fs::write(dir.join("PROJECT"), project.replace(from, to)).unwrap();
        let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget"]);
        assert_refused(
            &dir,
            &mut cmd,
            &format!("src/api/v1alpha1/application.rs {needle}"),
        );
        let mut cmd = opsdk(&dir);
        cmd.args(["edit", "--owner", "Ana"]);
        assert_refused(&dir, &mut cmd, needle);
    }
    // The project renamed in PROJECT alone: the crate the code `use`s is still the old one.
    let renamed = project.replace("projectName: k8s-operator-talk", "projectName: talk2");
    std::fs::write(dir.join("PROJECT"), renamed).unwrap();
    let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget"]);
    let needle = "Cargo.toml names the package \"k8s-operator-talk\", but PROJECT records projectName \"talk2\"";
    assert_refused(&dir, &mut cmd, needle);
}

/// kubebuilder's scripts pass `--plugins go/v4` to `create webhook` too.
#[test]
fn create_webhook_takes_kubebuilders_layout_plugin_only() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let layout = "--version v1alpha1 --kind Application --defaulting --plugins go/v4";
    create_webhook(&dir, &args(layout));
    let helm = "--version v1alpha1 --kind Application --programmatic-validation --plugins helm";
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, &args(helm)),
        "unknown plugin \"helm\" for create webhook",
    );
}

/// A webhook for a kind given without its group names the group it is in.
#[test]
fn a_webhook_for_a_kind_of_a_group_names_the_group() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &args("--group apps --version v1 --kind Widget"));
    assert_refused(
        &dir,
        &mut create_webhook_cmd(&dir, &args("--version v1 --kind Widget --defaulting")),
        "help: it is apps.minetto.dev/v1 Widget (--group apps)",
    );
}

/// What a run stopped halfway moved aside may be the only copy of a file of the project: a
/// command that would write that file is refused, and the copy kept.
#[test]
fn a_copy_left_by_a_run_stopped_halfway_is_kept_and_named() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    std::fs::write(
        dir.join("src/api/.mod.rs.opsdk-old"),
        "// mod.rs as it was\n",
    )
    .unwrap();
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args("--group apps --version v1 --kind Widget")),
        "src/api/.mod.rs.opsdk-old was left by an opsdk run stopped halfway",
    );
}
