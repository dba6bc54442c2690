//! `opsdk delete api`: a project that loses a kind is the project that never had it; every
//! refusal leaves the tree as it was.

use std::path::Path;

use assert_cmd::Command;

use crate::support::*;

/// `opsdk delete api` for the API `create api args` made (its group, version and kind) and
/// any flag of delete's own.
fn delete_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "--group" | "--version" | "--kind" => {
                out.extend(&args[i..i + 2]);
                i += 2;
            }
            "--force" | "--dry-run" => {
                out.push(args[i]);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

fn delete_api(dir: &Path, args: &[&str]) -> String {
    succeed(dir, &[&["delete", "api"], &delete_args(args)[..]].concat())
}

fn delete_api_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = opsdk(dir);
    cmd.args(["delete", "api"]).args(delete_args(args));
    cmd
}

const APPLICATION: &[&str] = &["--version", "v1alpha1", "--kind", "Application"];
const WIDGET: &[&str] = &["--group", "batch", "--version", "v1", "--kind", "Widget"];
const GADGET: &[&str] = &["--version", "v1", "--kind", "Gadget", "--namespaced=false"];
const GIZMO: &[&str] = &["--version", "v1", "--kind", "Gizmo", "--controller=false"];

/// A project made by `init` and `create api` with each of `kinds`, in order.
fn project_with(kinds: &[&[&str]]) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project_dir();
    init(&dir);
    for args in kinds {
        create_api(&dir, args);
    }
    (tmp, dir)
}

/// Deleting an API leaves exactly the tree a project that never had it has: every file and
/// registry entry of the kind is gone, nothing else changed.
#[test]
fn a_deleted_kind_leaves_the_project_that_never_had_it() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET, GADGET, GIZMO]);
    let stdout = delete_api(&dir, WIDGET);
    for removed in [
        "remove src/api/batch/v1/widget.rs",
        "remove src/controller/batch/widget.rs",
        "remove tests/batch_widget.rs",
        "remove config/samples/batch.minetto.dev_v1_widget.yaml",
        "remove config/rbac/batch_widget_admin_role.yaml",
        "remove config/rbac/batch_widget_editor_role.yaml",
        "remove config/rbac/batch_widget_viewer_role.yaml",
        "update src/api/mod.rs",
        "update PROJECT",
    ] {
        assert!(
            stdout.contains(removed),
            "{removed:?} missing in:\n{stdout}"
        );
    }
    // Its objects carry its controller's finalizer, which the next build no longer removes.
    let advice = "delete every Widget while the manager that reconciles them still runs \
        (`kubectl delete widgets --all --all-namespaces --wait`): each carries the finalizer \
        widgets.batch.minetto.dev/finalizer";
    assert!(stdout.contains(advice), "{stdout}");
    let (_tmp2, expected) = project_with(&[APPLICATION, GADGET, GIZMO]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
    for emptied in ["src/api/batch", "src/controller/batch"] {
        assert!(!dir.join(emptied).exists(), "{emptied} is left behind");
    }

    // The last deploy-image kind takes the rollout module with it; a kind without a
    // controller goes without one.
    delete_api(&dir, APPLICATION);
    let stdout = delete_api(&dir, GIZMO);
    assert!(!stdout.contains("finalizer"), "{stdout}");
    let (_tmp3, expected) = project_with(&[GADGET]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
    assert!(!dir.join("src/controller/rollout.rs").exists());

    // And the last kind leaves what `init` wrote.
    delete_api(&dir, GADGET);
    let (_tmp4, expected) = project_with(&[]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

#[test]
fn the_crd_make_manifests_wrote_goes_with_the_kind() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    let bases = dir.join("config/crd/bases");
    std::fs::create_dir_all(&bases).unwrap();
    std::fs::write(bases.join("minetto.dev_applications.yaml"), "kind: X\n").unwrap();
    std::fs::write(bases.join("batch.minetto.dev_widgets.yaml"), "kind: X\n").unwrap();
    let stdout = delete_api(&dir, WIDGET);
    assert!(stdout.contains("remove config/crd/bases/batch.minetto.dev_widgets.yaml"));
    assert!(!bases.join("batch.minetto.dev_widgets.yaml").exists());
    assert!(bases.join("minetto.dev_applications.yaml").exists());
    assert!(!read(&dir, "config/crd/kustomization.yaml").contains("widgets"));
}

#[test]
fn one_version_goes_and_the_others_stay() {
    let v1alpha1: &[&str] = &["--version", "v1alpha1", "--kind", "Widget"];
    let v1: &[&str] = &["--version", "v1", "--kind", "Widget", "--controller=false"];
    let (_tmp, dir) = project_with(&[v1alpha1, v1]);
    assert!(read(&dir, "src/api/mod.rs").contains("merge_crds("));

    // The storage version goes last.
    let mut cmd = delete_api_cmd(&dir, v1alpha1);
    assert_refused(
        &dir,
        &mut cmd,
        "v1alpha1 is the storage version of kind Widget",
    );
    let stderr = cmd.output().unwrap().stderr;
    assert!(String::from_utf8_lossy(&stderr).contains(
        "help: delete the other versions first (opsdk delete api --version v1 --kind Widget)"
    ));

    let stdout = delete_api(&dir, v1);
    assert!(stdout.contains("the kind keeps v1alpha1"), "{stdout}");
    let (_tmp2, expected) = project_with(&[v1alpha1]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
    assert!(!read(&dir, "src/api/mod.rs").contains("merge_crds("));
    delete_api(&dir, v1alpha1);
    let (_tmp3, expected) = project_with(&[]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    let before = snapshot(&dir);
    let stdout = delete_api(&dir, &[APPLICATION, &["--dry-run"]].concat());
    assert_eq!(snapshot(&dir), before);
    for line in [
        "would remove src/api/v1alpha1/application.rs",
        "would remove src/controller/rollout.rs",
        "would update src/controller/mod.rs",
        "dry run: nothing was written",
    ] {
        assert!(stdout.contains(line), "{line:?} missing in:\n{stdout}");
    }
}

/// A per-kind file the user edited is theirs: kept and named, unless `--force`.
#[test]
fn changed_files_are_kept_unless_forced() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    for file in [
        "src/controller/batch/widget.rs",
        "config/samples/batch.minetto.dev_v1_widget.yaml",
    ] {
        let text = read(&dir, file);
        std::fs::write(dir.join(file), format!("{text}\n// the user's line\n")).unwrap();
    }
    let mut cmd = delete_api_cmd(&dir, WIDGET);
    assert_refused(
        &dir,
        &mut cmd,
        "refusing to remove files you changed since opsdk wrote them: config/samples/batch.minetto.dev_v1_widget.yaml, src/controller/batch/widget.rs (kept)",
    );
    let mut dry = delete_api_cmd(&dir, &[WIDGET, &["--dry-run"]].concat());
    assert_refused(&dir, &mut dry, "refusing to remove files you changed");

    let stdout = delete_api(&dir, &[WIDGET, &["--force"]].concat());
    assert!(stdout.contains("remove src/controller/batch/widget.rs"));
    let (_tmp2, expected) = project_with(&[APPLICATION]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

#[test]
fn a_registry_the_user_took_over_is_refused() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    let text = read(&dir, "src/api/mod.rs");
    let (_, rest) = text.split_once('\n').unwrap();
    std::fs::write(dir.join("src/api/mod.rs"), rest).unwrap();
    let mut cmd = delete_api_cmd(&dir, WIDGET);
    assert_refused(&dir, &mut cmd, "src/api/mod.rs");
}

#[test]
fn unknown_apis_are_refused_with_what_exists() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["--version", "v1", "--kind", "Nope"],
            "error: no API of kind \"Nope\" in PROJECT",
            "help: the project's APIs: minetto.dev/v1alpha1 Application, batch.minetto.dev/v1 Widget",
        ),
        (
            &["--version", "v1", "--kind", "Application"],
            "error: kind Application has no version \"v1\" in PROJECT",
            "help: its versions: v1alpha1",
        ),
        (
            &["--version", "v1", "--kind", "Widget"],
            "error: kind Widget is not in the domain group minetto.dev",
            "help: it is batch.minetto.dev/v1 Widget (--group batch)",
        ),
        (
            &args("--group apps --version v1alpha1 --kind Application"),
            "error: kind Application is not in group \"apps\"",
            "help: it is minetto.dev/v1alpha1 Application (drop --group)",
        ),
    ];
    for (args, error, help) in cases {
        let mut cmd = delete_api_cmd(&dir, args);
        assert_refused(&dir, &mut cmd, error);
        let stderr = String::from_utf8(cmd.output().unwrap().stderr).unwrap();
        assert!(stderr.contains(help), "{help:?} missing in:\n{stderr}");
    }

    let (_tmp2, empty) = project_with(&[]);
    let mut cmd = delete_api_cmd(&empty, APPLICATION);
    assert_refused(&empty, &mut cmd, "the project has no APIs yet");
}

#[test]
fn without_project_it_says_what_create_api_says() {
    let (_tmp, dir) = project_dir();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let mut delete = delete_api_cmd(&dir, APPLICATION);
    assert_refused(&dir, &mut delete, "no PROJECT file");
    let mut create = create_api_cmd(&dir, APPLICATION);
    assert_refused(&dir, &mut create, "no PROJECT file");
    assert_eq!(
        delete.output().unwrap().stderr,
        create.output().unwrap().stderr
    );
}

/// A project grows and shrinks: four kinds (deploy-image, skeleton, cluster-scoped, no
/// controller), two deleted (the only deploy-image kind and a whole group), one created again.
/// After each step it passes rustfmt, clippy and its unit tests, and at the end its envtest
/// suites against a real API server too.
#[test]
#[ignore = "builds the generated project; run by hack/test.sh"]
fn a_project_that_grows_and_shrinks_passes_its_own_checks() {
    use crate::generated::passes_its_own_checks_with;
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET, GADGET, GIZMO]);
    passes_its_own_checks_with(&dir, &["test", "--lib"]);
    delete_api(&dir, APPLICATION);
    delete_api(&dir, WIDGET);
    assert!(!dir.join("src/controller/rollout.rs").exists());
    assert!(!dir.join("src/controller/batch").exists());
    passes_its_own_checks_with(&dir, &["test", "--lib"]);
    create_api(&dir, WIDGET);
    passes_its_own_checks_with(&dir, &["test"]);
}

const CONFIG_MAP: &[&str] = &["--group", "core", "--version", "v1", "--kind", "ConfigMap"];

/// The same in a namespace-scoped project (which takes no cluster-scoped kind), with a
/// controller of Kubernetes' ConfigMaps among the kinds: deleted, then created again.
#[test]
#[ignore = "builds the generated project; run by hack/test.sh"]
fn a_namespaced_project_that_grows_and_shrinks_passes_its_own_checks() {
    use crate::generated::passes_its_own_checks_with;
    let config_map = [CONFIG_MAP, &["--resource=false"]].concat();
    let (_tmp, dir) = project_dir();
    succeed(
        &dir,
        &["init", "--domain", DOMAIN, "--repo", REPO, "--namespaced"],
    );
    for kind in [APPLICATION, WIDGET, &config_map, GIZMO] {
        create_api(&dir, kind);
    }
    passes_its_own_checks_with(&dir, &["test", "--lib"]);
    delete_api(&dir, APPLICATION);
    delete_api(&dir, CONFIG_MAP);
    assert!(!dir.join("src/controller/core").exists());
    passes_its_own_checks_with(&dir, &["test", "--lib"]);
    create_api(&dir, &config_map);
    passes_its_own_checks_with(&dir, &["test"]);
}

/// A kind's helper role the user commented out in config/rbac/kustomization.yaml goes with
/// the kind; another kind's commented line stays commented.
#[test]
fn a_commented_role_line_goes_with_its_kind() {
    let (_tmp, dir) = project_with(&[APPLICATION, WIDGET]);
    let file = "config/rbac/kustomization.yaml";
    let text = read(&dir, file)
        .replace(
            "- batch_widget_admin_role.yaml",
            "#- batch_widget_admin_role.yaml",
        )
        .replace(
            "- application_viewer_role.yaml",
            "#- application_viewer_role.yaml",
        );
    std::fs::write(dir.join(file), text).unwrap();
    delete_api(&dir, WIDGET);
    let after = read(&dir, file);
    assert!(!after.contains("widget"), "{after}");
    assert!(
        after.contains("\n#- application_viewer_role.yaml\n"),
        "{after}"
    );
}
