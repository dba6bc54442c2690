use crate::support::*;

#[test]
fn the_article_api_is_applications_minetto_dev() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let stdout = create_api(
        &dir,
        &args("--version v1alpha1 --kind Application --resource --controller"),
    );
    assert!(
        stdout.contains("create src/api/v1alpha1/application.rs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("make manifests && cargo build && cargo test"),
        "{stdout}"
    );
    let types = read(&dir, "src/api/v1alpha1/application.rs");
    for needle in [
        "group = \"minetto.dev\"",
        "version = \"v1alpha1\"",
        "kind = \"Application\"",
        "plural = \"applications\"",
        "pub image: String",
        "pub replicas: i32",
        "pub port: i32",
    ] {
        assert!(types.contains(needle), "types lack {needle}");
    }
    let sample = read(&dir, "config/samples/minetto.dev_v1alpha1_application.yaml");
    assert!(
        sample.contains("apiVersion: minetto.dev/v1alpha1")
            && sample.contains("image: nginx:latest")
    );
    assert!(read(&dir, "src/controller/application.rs").contains("resources: &[\"applications\"]"));
    assert!(
        read(&dir, "config/crd/kustomization.yaml").contains("bases/minetto.dev_applications.yaml")
    );
    let project = read(&dir, "PROJECT");
    assert!(project.contains("kind: Application") && project.contains("plural: applications"));
}

#[test]
fn a_group_prefixes_the_domain() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &args("--group apps --version v1 --kind Application"));
    assert!(read(&dir, "src/api/apps/v1/application.rs").contains("group = \"apps.minetto.dev\""));
    assert!(
        read(&dir, "config/samples/apps.minetto.dev_v1_application.yaml")
            .contains("apiVersion: apps.minetto.dev/v1")
    );
    assert!(read(&dir, "src/controller/mod.rs").contains("pub mod apps {"));
}

/// As with kubebuilder, a kind gets no short name (an Application's `app` would shadow Argo
/// CD's); one the user declares in its types file (kubebuilder's shortName marker) is the
/// kind's: `--force` keeps it, its next version has it, no other kind of the group may take it
/// as a name, and once dropped it is free again.
#[test]
fn a_short_name_is_the_one_the_user_declares() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let types = "src/api/v1alpha1/application.rs";
    let written = read(&dir, types);
    assert!(!written.contains("shortname"), "{written}");
    let plural = "    plural = \"applications\",\n";
    let declared = written.replace(plural, &format!("{plural}    shortname = \"app\",\n"));
    assert_ne!(declared, written);
    std::fs::write(dir.join(types), &declared).unwrap();
    for (flags, needle) in [
        (
            "--version v1 --kind App",
            "the singular name \"app\" of kind App is already a name of minetto.dev/v1alpha1 Application (its singular, plural or short name)",
        ),
        (
            "--version v1 --kind Widget --plural app",
            "the plural name \"app\" of kind Widget",
        ),
    ] {
        assert_refused(&dir, &mut create_api_cmd(&dir, &args(flags)), needle);
    }
    create_api(&dir, &args("--version v1alpha1 --kind Application --force"));
    let next = "src/api/v1/application.rs";
    create_api(
        &dir,
        &args("--version v1 --kind Application --controller=false"),
    );
    for file in [types, next] {
        assert!(
            read(&dir, file).contains("    shortname = \"app\",\n"),
            "{file}"
        );
    }
    assert!(!read(&dir, "PROJECT").contains("shortName"));
    for file in [types, next] {
        let text = read(&dir, file).replace("    shortname = \"app\",\n", "");
        std::fs::write(dir.join(file), text).unwrap();
    }
    create_api(&dir, &args("--version v1 --kind App"));
}

#[test]
fn resource_false_adds_the_controller_an_api_was_created_without() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(
        &dir,
        &args("--group ship --version v1 --kind Dock --controller=false"),
    );
    let types = "src/api/ship/v1/dock.rs";
    let edited = format!("{}// the user's\n", read(&dir, types));
    std::fs::write(dir.join(types), &edited).unwrap();
    let add = args("--group ship --version v1 --kind Dock --resource=false --controller");
    let said = create_api(&dir, &add);
    assert!(
        said.contains("Controller for ship.minetto.dev/v1 Dock"),
        "{said}"
    );
    assert_eq!(read(&dir, types), edited);
    assert!(read(&dir, "src/controller/ship/dock.rs").contains("pub fn run("));
    assert!(read(&dir, "src/controller/mod.rs").contains("pub mod dock;"));
    assert!(read(&dir, "PROJECT").contains("controller: true"));
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &add),
        "already has a controller",
    );

    // A deploy-image kind without its controller is told the command that adds it.
    let pier = "--group ship --version v1 --kind Pier";
    let said = create_api(
        &dir,
        &args(&format!("{pier} --deploy-image --controller=false")),
    );
    let add = format!("opsdk create api {pier} --resource=false --controller");
    assert!(
        said.contains(&format!(
            "No controller runs its Deployment and Service yet: add it with\n  {add}"
        )),
        "{said}"
    );
    let said = create_api(&dir, &args(&add["opsdk create api ".len()..]));
    assert!(
        read(&dir, "src/controller/ship/pier.rs").contains("fn deployment("),
        "{said}"
    );
    assert!(!said.contains("No controller runs"), "{said}");
}

/// `--force` rewrites a version as PROJECT records it: without a controller when it has none.
#[test]
fn force_keeps_a_version_without_its_controller() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(
        &dir,
        &args("--group ship --version v1 --kind Dock --controller=false"),
    );
    let before = snapshot(&dir);
    create_api(&dir, &args("--group ship --version v1 --kind Dock --force"));
    assert_eq!(snapshot(&dir), before);
    assert!(!dir.join("src/controller/ship/dock.rs").exists());
}

/// A group may have dashes (`cert-manager.io`'s does); its module has underscores.
#[test]
fn a_group_with_a_dash_gets_a_module_with_an_underscore() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(&dir, &args("--group fleet-ops --version v1 --kind Gear"));
    assert!(read(&dir, "src/api/mod.rs").contains("pub mod fleet_ops {"));
    assert!(read(&dir, "src/controller/mod.rs").contains("fleet_ops::gear::run(ctx"));
    let types = read(&dir, "src/api/fleet_ops/v1/gear.rs");
    assert!(
        types.contains("group = \"fleet-ops.minetto.dev\""),
        "{types}"
    );
    assert!(dir.join("tests/fleet_ops_gear.rs").exists());
    let sample = "config/samples/fleet-ops.minetto.dev_v1_gear.yaml";
    assert!(read(&dir, sample).contains("apiVersion: fleet-ops.minetto.dev/v1"));
}

#[test]
fn a_group_named_like_a_rust_keyword_keeps_its_name_outside_rust() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(&dir, &args("--group crate --version v1 --kind Gear"));
    assert!(read(&dir, "src/api/mod.rs").contains("pub mod crate_ {"));
    let controller = read(&dir, "src/controller/crate_/gear.rs");
    assert!(
        controller.contains("const CONTROLLER: &str = \"crate-gear\";"),
        "{controller}"
    );
    let admin = read(&dir, "config/rbac/crate_gear_admin_role.yaml");
    assert!(admin.contains("name: crate-gear-admin-role"), "{admin}");
    assert!(dir.join("tests/crate_gear.rs").exists());
}

#[test]
fn a_second_group_is_named_in_the_readme() {
    // The README names the project's API groups; a README that fell behind would then count
    // as the user's and stop following the webhooks and the chart.
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let out = create_api(&dir, &args("--group ops --version v1 --kind Gadget"));
    assert!(out.contains("update README.md"), "{out}");
    assert!(read(&dir, "README.md").contains("Its APIs live in groups under `minetto.dev`"));
    let out = create_webhook(&dir, ARTICLE_WEBHOOKS);
    assert!(out.contains("update README.md"), "{out}");
}

#[test]
fn boolean_flags_take_bare_and_false_forms() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(
        &dir,
        &args("--version v1 --kind Widget --controller=false --namespaced=false"),
    );
    assert!(
        !dir.join("src/controller/widget.rs").exists(),
        "no controller with --controller=false"
    );
    assert!(!dir.join("tests/widget.rs").exists());
    assert!(!read(&dir, "src/api/v1/widget.rs").contains("namespaced"));
    assert!(read(&dir, "PROJECT").contains("controller: false"));
}

#[test]
fn outside_a_project_points_at_init() {
    let (_tmp, dir) = project_dir();
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget"]),
        "opsdk init",
    );
}

#[test]
fn the_same_api_twice_is_refused_and_force_rewrites_only_that_kind() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    create_api(&dir, &["--version", "v1", "--kind", "Widget"]);
    let args = ["--version", "v1alpha1", "--kind", "Application"];
    assert_refused(&dir, &mut create_api_cmd(&dir, &args), "already exists");

    // The user edits both kinds; --force restores the Application's files only.
    let app = dir.join("src/controller/application.rs");
    let widget = dir.join("src/controller/widget.rs");
    let main = dir.join("src/main.rs");
    for file in [&app, &widget, &main] {
        let text = std::fs::read_to_string(file).unwrap();
        std::fs::write(file, format!("{text}// edited by hand\n")).unwrap();
    }
    let stdout = create_api(&dir, &[&args[..], &["--force"]].concat());
    assert!(
        stdout.contains("overwrite src/controller/application.rs"),
        "{stdout}"
    );
    assert!(
        !std::fs::read_to_string(&app)
            .unwrap()
            .contains("edited by hand")
    );
    assert!(
        std::fs::read_to_string(&widget)
            .unwrap()
            .contains("edited by hand")
    );
    assert!(
        std::fs::read_to_string(&main)
            .unwrap()
            .contains("edited by hand")
    );
}

#[test]
fn dry_run_lists_the_changes_and_writes_nothing() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let before = snapshot(&dir);
    let stdout = create_api(
        &dir,
        &args("--version v1alpha1 --kind Application --dry-run"),
    );
    assert!(
        stdout.contains("would create src/controller/application.rs"),
        "{stdout}"
    );
    assert!(stdout.contains("would update src/api/mod.rs"), "{stdout}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_generated_file_the_user_took_over_is_not_overwritten() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    std::fs::write(dir.join("config/rbac/kustomization.yaml"), "# my own\n").unwrap();
    let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget"]);
    assert_refused(
        &dir,
        &mut cmd,
        "refusing to overwrite config/rbac/kustomization.yaml: the first line",
    );
    let mut forced = create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget", "--force"]);
    assert_refused(&dir, &mut forced, "so the file is yours now");
}

/// The kustomizations kubebuilder leaves to the user, where teams add entries, are merged as
/// lists: an entry added or changed by hand stays through `create api` and `delete api`, and
/// opsdk's entries come and go around it.
#[test]
fn entries_added_to_the_kustomization_lists_are_kept() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let lists = [
        "config/rbac/kustomization.yaml",
        "config/samples/kustomization.yaml",
    ];
    for list in lists {
        let text = read(&dir, list) + "- my_own.yaml\n";
        std::fs::write(dir.join(list), text).unwrap();
    }
    let out = create_api(&dir, &args("--group ship --version v1 --kind Corvette"));
    for list in lists {
        assert!(
            out.contains(&format!("merge {list} (your changes kept")),
            "{out}"
        );
        let text = read(&dir, list);
        assert!(
            text.contains("- my_own.yaml\n") && text.contains("corvette"),
            "{list}:\n{text}"
        );
    }
    succeed(
        &dir,
        &args("delete api --group ship --version v1 --kind Corvette"),
    );
    let rbac = read(&dir, lists[0]);
    assert!(
        rbac.contains("- my_own.yaml\n") && !rbac.contains("corvette"),
        "{rbac}"
    );

    // An entry of opsdk's the user changed stays changed; the next kind's roles still land.
    let rbac = rbac.replace(
        "- application_viewer_role.yaml",
        "#- application_viewer_role.yaml",
    );
    std::fs::write(dir.join(lists[0]), rbac).unwrap();
    create_api(&dir, &args("--group ship --version v1 --kind Frigate"));
    let rbac = read(&dir, lists[0]);
    for entry in [
        "#- application_viewer_role.yaml",
        "- my_own.yaml",
        "- ship_frigate_viewer_role.yaml",
    ] {
        assert!(rbac.contains(&format!("{entry}\n")), "{entry}:\n{rbac}");
    }
}

/// Fields a user adds below the lists (a patch, labels, a namespace, as the guide invites)
/// stay fields: opsdk's new entries land in `resources`, above its scaffold marker.
#[test]
fn fields_added_below_the_kustomization_lists_stay_apart_from_the_entries() {
    fields_added_below_the_lists_stay_apart(false);
}

/// The same in a project whose lists were written before they ended with a marker: the marker
/// is added after the last entry, then the entries go above it.
#[test]
fn lists_written_without_a_marker_get_one_and_keep_added_fields_apart() {
    fields_added_below_the_lists_stay_apart(true);
}

fn fields_added_below_the_lists_stay_apart(unmarked: bool) {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let lists = [
        "config/crd/kustomization.yaml",
        "config/rbac/kustomization.yaml",
        "config/samples/kustomization.yaml",
    ];
    for list in lists.iter().filter(|_| unmarked) {
        let text = read(&dir, list);
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("# +opsdk:scaffold:"))
            .collect();
        std::fs::write(dir.join(list), kept.join("\n") + "\n").unwrap();
    }
    let added = [
        (
            "config/crd/kustomization.yaml",
            "\npatches:\n- path: patches/mine.yaml\n",
            "patches",
        ),
        (
            "config/rbac/kustomization.yaml",
            "\nlabels:\n- pairs:\n    team: platform\n",
            "labels",
        ),
        (
            "config/samples/kustomization.yaml",
            "namespace: demo\n",
            "namespace",
        ),
    ];
    for (list, text, _) in added {
        std::fs::write(dir.join(list), read(&dir, list) + text).unwrap();
    }
    create_api(&dir, &args("--group ship --version v1 --kind Frigate"));
    for (list, _, field) in added {
        let text = read(&dir, list);
        let parsed: serde_yaml::Mapping = serde_yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("{list} is no longer a mapping ({e}):\n{text}"));
        let resources = format!("{:?}", parsed["resources"]);
        assert!(resources.contains("frigate"), "{list}:\n{text}");
        assert!(
            !format!("{:?}", parsed[field]).contains("frigate"),
            "{list}:\n{text}"
        );
        assert!(text.contains("# +opsdk:scaffold:"), "{list}:\n{text}");
    }
}

#[test]
fn a_project_file_written_by_hand_badly_is_reported() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(
        &dir,
        &["--group", "ship", "--version", "v1", "--kind", "Frigate"],
    );
    let good = std::fs::read_to_string(dir.join("PROJECT")).unwrap();
    let resources = &good[good.find("resources:\n").unwrap() + "resources:\n".len()..];
    let widget = ["--version", "v1", "--kind", "Widget"];
    for (edited, said) in [
        ("domain: [\n".to_string(), "not a valid opsdk PROJECT file"),
        (
            format!("{good}foo: bar\n"),
            "not a valid opsdk PROJECT file (unknown field `foo`",
        ),
        (
            good.replace("domain: minetto.dev", "domain: EXAMPLE"),
            "holds what opsdk never writes: invalid domain \"EXAMPLE\"",
        ),
        (
            good.replace("kind: Frigate", "kind: frigate"),
            "holds what opsdk never writes: resource ship/v1 frigate: invalid kind",
        ),
        (
            format!("{good}{resources}"),
            "holds what opsdk never writes: resource ship/v1 Frigate is recorded twice",
        ),
        (
            format!("{good}{}", resources.replace("version: v1", "version: v2")),
            "resource ship/v1 Frigate: 2 versions of kind Frigate record a controller",
        ),
        (
            format!(
                "{good}{}",
                resources
                    .replace("version: v1", "version: v2")
                    .replace("controller: true", "controller: false")
                    .replace("plural: frigates", "plural: frigs")
            ),
            "resource ship/v2 Frigate: its plural or namespaced differs from version v1's",
        ),
    ] {
        std::fs::write(dir.join("PROJECT"), &edited).unwrap();
        assert_refused(&dir, &mut create_api_cmd(&dir, &widget), said);
    }
}

#[test]
fn never_writes_through_a_symlinked_file() {
    let (tmp, dir) = project_dir();
    init(&dir);
    let outside = tmp.path().join("outside.rs");
    std::fs::write(&outside, "// not the project's\n").unwrap();
    std::fs::create_dir_all(dir.join("src/controller")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("src/controller/widget.rs")).unwrap();
    let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "Widget", "--force"]);
    assert_refused(&dir, &mut cmd, "is a symbolic link");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "// not the project's\n"
    );
}

#[test]
fn plurals_are_kubebuilders_and_a_departure_is_noted() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let stderr = |args: &[&str]| {
        let out = create_api_cmd(&dir, args).assert().success();
        String::from_utf8(out.get_output().stderr.clone()).unwrap()
    };
    assert_eq!(stderr(&["--version", "v1", "--kind", "Redis"]), "");
    assert!(read(&dir, "PROJECT").contains("plural: redis\n"));

    // flect says "videoes": opsdk keeps the English plural and says how to match kubebuilder.
    let video = ["--version", "v1", "--kind", "Video"];
    assert_eq!(
        stderr(&[&video[..], &["--dry-run"]].concat()),
        "note: plural \"videos\" differs from kubebuilder's \"videoes\"; pass --plural videoes to match it\n"
    );
    assert_eq!(stderr(&[&video[..], &["--plural", "videoes"]].concat()), "");
    // A new version of the kind keeps its recorded plural, without a note.
    let v2 = ["--version", "v2", "--kind", "Video", "--controller=false"];
    assert_eq!(stderr(&v2), "");
    let project = read(&dir, "PROJECT");
    assert_eq!(project.matches("plural: videoes\n").count(), 2, "{project}");
}
