//! A project over time: `--force` rewrites a kind as PROJECT records it, a later version takes
//! the kind's scope, `delete api` moves a kind's controller to the version that stays, a helper role left out stays
//! out, and no project is made inside another.

use crate::support::*;

const FRIGATE: [&str; 6] = ["--group", "ship", "--version", "v1", "--kind", "Frigate"];

#[test]
fn force_rewrites_a_kind_as_recorded_and_never_renames_or_rescopes_its_crd() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &[&FRIGATE[..], &["--namespaced=false"]].concat());
    let site = ["--group", "web", "--version", "v1", "--kind", "Site"];
    create_api(&dir, &[&site[..], &["--deploy-image"]].concat());
    let before = snapshot(&dir);
    create_api(&dir, &[&FRIGATE[..], &["--force"]].concat());
    create_api(&dir, &[&site[..], &["--force"]].concat());
    assert_eq!(
        snapshot(&dir),
        before,
        "--force changed what PROJECT records"
    );

    for (flag, said) in [
        ("--namespaced", "namespaced false"),
        ("--plural=frigs", "plural \"frigates\""),
    ] {
        let mut cmd = create_api_cmd(&dir, &[&FRIGATE[..], &[flag, "--force"]].concat());
        assert_refused(&dir, &mut cmd, said);
    }
    // A later version takes the kind's recorded scope without being told.
    let v2 = ["--group", "ship", "--version", "v2", "--kind", "Frigate"];
    create_api(&dir, &[&v2[..], &["--controller=false"]].concat());
    let project = read(&dir, "PROJECT");
    assert_eq!(project.matches("namespaced: false").count(), 2, "{project}");
}

#[test]
fn edit_namespaced_lists_deletes_in_an_order_delete_api_takes() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &[&FRIGATE[..], &["--namespaced=false"]].concat());
    let v2 = ["--group", "ship", "--version", "v2", "--kind", "Frigate"];
    create_api(&dir, &[&v2[..], &["--controller=false"]].concat());
    let out = opsdk(&dir).args(["edit", "--namespaced"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let help = stderr.lines().find(|l| l.starts_with("help: ")).unwrap();
    let commands = &help[help.find('(').unwrap() + 1..help.rfind(')').unwrap()];
    for command in commands.split("; ") {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        succeed(&dir, &args);
    }
    succeed(&dir, &["edit", "--namespaced"]);
}

const CRUISER_V1ALPHA1: [&str; 6] = [
    "--group",
    "ship",
    "--version",
    "v1alpha1",
    "--kind",
    "Cruiser",
];
const CRUISER_V1: [&str; 6] = ["--group", "ship", "--version", "v1", "--kind", "Cruiser"];

/// A project whose Cruiser has its controller in v1alpha1 (made with `flags`) and converts
/// through v1, made later without one.
fn cruiser_controller_in_a_spoke(flags: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &[&CRUISER_V1ALPHA1[..], flags].concat());
    create_api(&dir, &[&CRUISER_V1[..], &["--controller=false"]].concat());
    let conversion = ["--conversion", "--spoke", "v1alpha1"];
    create_webhook(&dir, &[&CRUISER_V1[..], &conversion[..]].concat());
    (tmp, dir)
}

/// The version holding the kind's controller goes, and the controller stays, moved to the
/// version etcd stores (kubebuilder keeps one controller per kind): the project is the one
/// made with that version's controller from the start, with the user's own lines kept.
#[test]
fn deleting_the_version_with_the_controller_moves_it_to_the_stored_version() {
    let (_tmp, dir) = cruiser_controller_in_a_spoke(&["--deploy-image"]);
    let controller = "src/controller/ship/cruiser.rs";
    let mine = "\n// the team's own line\n";
    std::fs::write(dir.join(controller), read(&dir, controller) + mine).unwrap();

    let said = succeed(
        &dir,
        &[&["delete", "api"][..], &CRUISER_V1ALPHA1[..]].concat(),
    );
    let moved = "controller moved to v1: src/controller/ship/cruiser.rs, src/controller/ship/cruiser/tests.rs and tests/ship_cruiser.rs";
    assert!(said.contains(moved), "{said}");
    let (_tmp2, expected) = project_dir();
    init(&expected);
    create_api(&expected, &[&CRUISER_V1[..], &["--deploy-image"]].concat());
    let with_mine = read(&expected, controller) + mine;
    std::fs::write(expected.join(controller), with_mine).unwrap();
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

/// A move that meets the user's changes of more than one sort names them all in one refusal:
/// a suite the user deleted stays deleted, and `--force` is not suggested for one sort while
/// it would silently overwrite the other.
#[test]
fn a_refused_move_names_every_changed_file_and_a_deleted_suite_stays_deleted() {
    let (_tmp, dir) = cruiser_controller_in_a_spoke(&[]);
    std::fs::remove_file(dir.join("tests/ship_cruiser.rs")).unwrap();
    let types = "src/api/ship/v1alpha1/cruiser.rs";
    std::fs::write(dir.join(types), read(&dir, types) + "// mine\n").unwrap();
    let controller = "src/controller/ship/cruiser.rs";
    let import = "use crate::api::ship::v1alpha1::{Cruiser, CruiserStatus};";
    let text = read(&dir, controller);
    assert!(text.contains(import), "{text}");
    let changed = text.replace(
        import,
        "use crate::api::ship::v1alpha1::{Cruiser, CruiserSpec, CruiserStatus};",
    );
    std::fs::write(dir.join(controller), changed).unwrap();
    let delete = [&["delete", "api"][..], &CRUISER_V1ALPHA1[..]].concat();
    let mut cmd = opsdk(&dir);
    cmd.args(&delete);
    assert_refused(
        &dir,
        &mut cmd,
        "(kept); refusing to rewrite files you changed where opsdk changes them too: src/controller/ship/cruiser.rs",
    );
    std::fs::write(dir.join(types), read(&dir, types).replace("// mine\n", "")).unwrap();
    std::fs::write(dir.join(controller), text).unwrap();
    succeed(&dir, &delete);
    assert!(!dir.join("tests/ship_cruiser.rs").exists());
}

#[test]
fn a_helper_role_commented_out_stays_out() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &["--version", "v1", "--kind", "Widget"]);
    let path = dir.join("config/rbac/kustomization.yaml");
    let text = read(&dir, "config/rbac/kustomization.yaml");
    let left_out = text.replace("- widget_admin_role.yaml", "#- widget_admin_role.yaml");
    assert_ne!(left_out, text);
    std::fs::write(&path, &left_out).unwrap();
    create_api(&dir, &["--version", "v1", "--kind", "Gadget"]);
    let text = read(&dir, "config/rbac/kustomization.yaml");
    assert!(text.contains("\n#- widget_admin_role.yaml\n"), "{text}");
    assert!(text.contains("\n- widget_editor_role.yaml\n"), "{text}");
    assert!(text.contains("\n- gadget_admin_role.yaml\n"), "{text}");
}

#[test]
fn no_project_is_made_inside_another() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let inner = dir.join("src");
    let mut cmd = opsdk(&inner);
    cmd.args(["init", "--domain", DOMAIN]);
    assert_refused(&dir, &mut cmd, "is inside the opsdk project");
}

#[test]
fn a_refusal_says_its_error_and_help_alone() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    // A kind whose plural opsdk notes, refused because a file of the user's is in the way.
    std::fs::create_dir_all(dir.join("src/controller")).unwrap();
    std::fs::write(dir.join("src/controller/video.rs"), "// mine\n").unwrap();
    let mut cmd = create_api_cmd(&dir, &["--version", "v1", "--kind", "Video"]);
    assert_refused(&dir, &mut cmd, "src/controller/video.rs");
}

#[test]
fn the_last_webhook_gone_names_the_cert_manager_lines_left_in_use() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &["--version", "v1", "--kind", "Widget"]);
    create_webhook(
        &dir,
        &["--version", "v1", "--kind", "Widget", "--defaulting"],
    );
    let path = dir.join("config/default/kustomization.yaml");
    let text = read(&dir, "config/default/kustomization.yaml");
    let patch = "- path: cert_webhook_manager_patch.yaml";
    let line = 1 + text.lines().position(|l| l == format!("#{patch}")).unwrap();
    std::fs::write(&path, text.replace(&format!("#{patch}"), patch)).unwrap();
    let out = opsdk(&dir)
        .args(["delete", "api", "--version", "v1", "--kind", "Widget"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        stderr.contains(&format!("cert-manager pieces (lines {line})")),
        "{stderr}"
    );
}

#[test]
fn a_controller_for_another_groups_kind_of_the_same_name_keeps_the_project_loadable() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(
        &dir,
        &["--group", "storage", "--version", "v1", "--kind", "Backup"],
    );
    create_api(&dir, &[crate::foreign_api::BACKUP, &["--force"]].concat());
    let deployment = ["--group", "apps", "--version", "v1", "--kind", "Deployment"];
    create_api(&dir, &[&deployment[..], &["--resource=false"]].concat());
    create_api(&dir, &["--version", "v1", "--kind", "Widget"]);
}

#[test]
fn a_project_may_sit_beside_a_kubebuilder_one_in_its_tree() {
    let (_tmp, dir) = project_dir();
    std::fs::write(
        dir.join("PROJECT"),
        "layout:\n- go.kubebuilder.io/v4\ndomain: example.com\n",
    )
    .unwrap();
    let inner = dir.join("operators/rust");
    std::fs::create_dir_all(&inner).unwrap();
    init(&inner);
}

#[test]
fn a_command_run_in_a_subdirectory_names_the_project_root() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    let mut cmd = opsdk(&dir.join("src"));
    cmd.args(["create", "api", "--version", "v1", "--kind", "Widget"]);
    let root = dir.canonicalize().unwrap();
    assert_refused(&dir, &mut cmd, &format!("help: cd {}", root.display()));
}
