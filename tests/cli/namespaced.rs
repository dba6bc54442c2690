//! Namespace-scoped managers: `init --namespaced`, `edit --namespaced[=false]`, and the
//! refusal of cluster-scoped kinds in such a project.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::*;

const APPLICATION: &[&str] = &["--version", "v1alpha1", "--kind", "Application"];
const ADMIRAL: &[&str] = &[
    "--group",
    "crew",
    "--version",
    "v1",
    "--kind",
    "Admiral",
    "--namespaced=false",
];

/// The files opsdk writes differently for a namespace-scoped manager.
const SWITCHED: [&str; 4] = [
    "PROJECT",
    "config/manager/manager.yaml",
    "config/rbac/role_binding.yaml",
    "src/controller/mod.rs",
];

fn edit(dir: &Path, args: &[&str]) -> String {
    succeed(dir, &[&["edit"], args].concat())
}

fn edit_cmd(dir: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = opsdk(dir);
    cmd.arg("edit").args(args);
    cmd
}

/// The article's project, made namespace-scoped by `init --namespaced` when `namespaced`.
fn article(namespaced: bool) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = project_dir();
    let mut args = vec!["init", "--domain", DOMAIN, "--repo", REPO];
    if namespaced {
        args.push("--namespaced");
    }
    succeed(&dir, &args);
    create_api(&dir, APPLICATION);
    (tmp, dir)
}

fn assert_namespaced(dir: &Path, namespaced: bool) {
    let project = read(dir, "PROJECT");
    assert_eq!(
        project.contains("\nnamespaced: true\n"),
        namespaced,
        "{project}"
    );
    let binding = read(dir, "config/rbac/role_binding.yaml");
    let kind = if namespaced {
        "kind: RoleBinding"
    } else {
        "kind: ClusterRoleBinding"
    };
    assert!(binding.contains(kind), "{binding}");
    let manager = read(dir, "config/manager/manager.yaml");
    assert_eq!(
        manager.contains("- name: WATCH_NAMESPACE"),
        namespaced,
        "{manager}"
    );
    let registry = read(dir, "src/controller/mod.rs");
    let constant = format!("pub const NAMESPACED: bool = {namespaced};");
    assert!(registry.contains(&constant), "{registry}");
}

/// The paths whose contents differ between two snapshots (or exist in one only).
fn changed(a: &Path, b: &Path) -> BTreeSet<String> {
    let (a, b) = (snapshot(a), snapshot(b));
    let paths: BTreeSet<&PathBuf> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn init_namespaced_records_it_and_binds_a_role() {
    let (_tmp, dir) = article(true);
    assert_namespaced(&dir, true);
    let (_tmp2, cluster) = article(false);
    assert_namespaced(&cluster, false);
    assert_eq!(changed(&dir, &cluster), SWITCHED.map(String::from).into());
}

#[test]
fn edit_switches_the_project_both_ways_and_leaves_the_users_files() {
    let (_tmp, dir) = article(false);
    let controller = dir.join("src/controller/application.rs");
    let mine = format!(
        "{}// my reconcile notes\n",
        read(&dir, "src/controller/application.rs")
    );
    std::fs::write(&controller, &mine).unwrap();
    let before = snapshot(&dir);

    let stdout = edit(&dir, &["--namespaced"]);
    for line in SWITCHED {
        assert!(
            stdout.contains(&format!("update {line}")),
            "{line}: {stdout}"
        );
    }
    assert!(stdout.contains("make manifests"), "{stdout}");
    assert_namespaced(&dir, true);
    // Byte for byte the project `init --namespaced` makes, with the user's change kept.
    let (_tmp2, fresh) = article(true);
    std::fs::write(fresh.join("src/controller/application.rs"), &mine).unwrap();
    assert_eq!(changed(&dir, &fresh), BTreeSet::new());
    let again = edit(&dir, &["--namespaced"]);
    assert!(
        !again.lines().any(|l| l.trim_start().starts_with("update ")),
        "a second run changes nothing: {again}"
    );

    edit(&dir, &["--namespaced=false"]);
    assert_namespaced(&dir, false);
    assert_eq!(snapshot(&dir), before, "back to the cluster-wide project");
}

#[test]
fn edit_dry_run_lists_the_switch_and_writes_nothing() {
    let (_tmp, dir) = article(false);
    let before = snapshot(&dir);
    let stdout = edit(&dir, &["--namespaced", "--dry-run"]);
    assert!(
        stdout.contains("would update config/rbac/role_binding.yaml"),
        "{stdout}"
    );
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_switch_is_merged_into_a_file_the_user_changed_elsewhere() {
    let (_tmp, dir) = article(false);
    let manager = dir.join("config/manager/manager.yaml");
    let edited = read(&dir, "config/manager/manager.yaml").replace("cpu: 10m", "cpu: 20m");
    std::fs::write(&manager, &edited).unwrap();
    let out = edit(&dir, &["--namespaced"]);
    assert!(
        out.contains("merge config/manager/manager.yaml (your changes kept"),
        "{out}"
    );
    assert_namespaced(&dir, true);
    assert!(read(&dir, "config/manager/manager.yaml").contains("cpu: 20m"));
    // And back: the merged file is what opsdk writes, with the user's change.
    edit(&dir, &["--namespaced=false"]);
    assert_namespaced(&dir, false);
    assert_eq!(read(&dir, "config/manager/manager.yaml"), edited);
}

#[test]
fn a_switch_on_lines_the_user_changed_is_refused_unless_forced() {
    let (_tmp, dir) = article(false);
    let manager = dir.join("config/manager/manager.yaml");
    let edited = read(&dir, "config/manager/manager.yaml")
        .replace("        ports:\n", "        ports: # the manager's\n");
    std::fs::write(&manager, &edited).unwrap();
    let line = edited
        .lines()
        .position(|l| l.contains("# the manager's"))
        .unwrap()
        + 1;
    assert_refused(
        &dir,
        &mut edit_cmd(&dir, &["--namespaced"]),
        &format!(
            "refusing to rewrite files you changed where opsdk changes them too: config/manager/manager.yaml (line {line})"
        ),
    );
    edit(&dir, &["--namespaced", "--force"]);
    assert_namespaced(&dir, true);
}

#[test]
fn cluster_scoped_kinds_and_namespaced_projects_are_refused() {
    // A cluster-scoped kind in a namespace-scoped project...
    let (_tmp, dir) = article(true);
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, ADMIRAL),
        "crew.minetto.dev/v1 Admiral is cluster-scoped, but the project's manager is namespace-scoped",
    );
    // ...Kubernetes' own cluster-scoped types too.
    let namespaces = [
        "--group",
        "core",
        "--version",
        "v1",
        "--kind",
        "Namespace",
        "--resource=false",
    ];
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &namespaces),
        "v1 Namespace is cluster-scoped, but the project's manager is namespace-scoped",
    );
    // ...and a project with one made namespace-scoped.
    let (_tmp2, dir) = article(false);
    create_api(&dir, ADMIRAL);
    assert_refused(
        &dir,
        &mut edit_cmd(&dir, &["--namespaced"]),
        "opsdk delete api --group crew --version v1 --kind Admiral",
    );
    assert_refused(&dir, &mut edit_cmd(&dir, &[]), "nothing to edit");
    // Without the kind, it is allowed.
    succeed(
        &dir,
        &args("delete api --group crew --version v1 --kind Admiral"),
    );
    edit(&dir, &["--namespaced"]);
    assert_namespaced(&dir, true);
}

#[test]
fn edit_outside_a_project_points_at_init() {
    let (_tmp, dir) = project_dir();
    assert_refused(
        &dir,
        &mut edit_cmd(&dir, &["--namespaced"]),
        "no PROJECT file",
    );
}

/// `edit --license` and `--owner` rewrite what they own (LICENSE, Cargo.toml's `license` and
/// `authors`), as `init` with them would have written it, under the same refusal rules.
#[test]
fn the_license_and_owner_are_edited_like_the_scope() {
    let (_tmp, dir) = article(false);
    let (_tmp2, wanted) = project_dir();
    succeed(
        &wanted,
        &[
            "init",
            "--domain",
            DOMAIN,
            "--repo",
            REPO,
            "--license",
            "mit",
            "--owner",
            "Jane Doe",
        ],
    );
    edit(&dir, &["--license", "mit", "--owner", "Jane Doe"]);
    for file in ["LICENSE", "Cargo.toml"] {
        assert_eq!(read(&dir, file), read(&wanted, file), "{file}");
    }
    assert!(read(&dir, "PROJECT").contains("owner: Jane Doe\nlicense: mit\n"));
    edit(&dir, &["--license", "none"]);
    assert!(!dir.join("LICENSE").exists());

    // A dependency the user added stays; the license line changes.
    let mut cargo = read(&dir, "Cargo.toml");
    cargo.push_str("\n[features]\nextra = []\n");
    std::fs::write(dir.join("Cargo.toml"), &cargo).unwrap();
    edit(&dir, &["--license", "mit"]);
    let merged = read(&dir, "Cargo.toml");
    assert!(merged.ends_with("\n[features]\nextra = []\n"), "{merged}");
    assert!(merged.contains("\nlicense = \"MIT\"\n"), "{merged}");
    // The license line the user wrote is theirs: opsdk refuses to change it.
    let mine = merged.replace("license = \"MIT\"", "license = \"MIT OR Apache-2.0\"");
    std::fs::write(dir.join("Cargo.toml"), &mine).unwrap();
    assert_refused(
        &dir,
        &mut edit_cmd(&dir, &["--license", "apache2"]),
        "refusing to rewrite files you changed where opsdk changes them too: Cargo.toml (line",
    );
}

/// An edit to the settings the project already has says so and writes nothing, unless a file
/// of opsdk's own differs from what it generates.
#[test]
fn an_edit_to_the_settings_the_project_has_changes_nothing() {
    let (_tmp, dir) = article(false);
    let before = snapshot(&dir);
    let said = edit(&dir, &["--namespaced=false"]);
    assert!(
        said.contains("PROJECT already had these settings: nothing to change."),
        "{said}"
    );
    assert_eq!(snapshot(&dir), before);
    // A file of opsdk's own that was changed is written again, and the message says so.
    let own = dir.join("src/controller/compact.rs");
    std::fs::write(&own, std::fs::read_to_string(&own).unwrap() + "// mine\n").unwrap();
    let said = edit(&dir, &["--namespaced=false"]);
    assert!(said.contains("update src/controller/compact.rs"), "{said}");
    assert!(
        said.contains("differed from what opsdk generates and were written again"),
        "{said}"
    );
    assert_eq!(snapshot(&dir), before);
}

/// kubebuilder's `edit --multigroup` is taken for the layout every opsdk project has;
/// `--multigroup=false`, a layout opsdk does not have, is refused.
#[test]
fn multigroup_is_the_layout_every_project_has() {
    let (_tmp, dir) = article(false);
    let before = snapshot(&dir);
    let said = edit(&dir, &["--multigroup"]);
    assert!(said.contains("always multi-group"), "{said}");
    assert_eq!(snapshot(&dir), before);
    assert_refused(
        &dir,
        &mut edit_cmd(&dir, &["--multigroup=false"]),
        "opsdk has no single-group layout",
    );
}
