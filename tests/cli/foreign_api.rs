//! `create api --resource=false`: controllers for types the project does not define,
//! Kubernetes' own and other projects' CRDs (`--external-api-crd`).

use std::path::PathBuf;

use crate::support::*;

/// The files `create api` added to a project that had `before`.
fn added(
    dir: &std::path::Path,
    before: &std::collections::BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<PathBuf> {
    snapshot(dir)
        .into_keys()
        .filter(|p| !before.contains_key(p))
        .collect()
}

/// `--resource=false` for one of Kubernetes' own types: a controller, its RBAC and its test,
/// recorded in PROJECT as kubebuilder records it; no types, CRD, sample or roles.
#[test]
fn a_controller_for_a_kubernetes_type_has_no_api_of_its_own() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let before = snapshot(&dir);
    let stdout = create_api(
        &dir,
        &args("--group apps --version v1 --kind Deployment --resource=false"),
    );
    assert!(
        stdout.contains("Controller for apps/v1 Deployment scaffolded"),
        "{stdout}"
    );
    let after = snapshot(&dir);
    let added: Vec<&std::path::PathBuf> =
        after.keys().filter(|p| !before.contains_key(*p)).collect();
    let wanted = [
        "src/controller/apps/deployment.rs",
        "tests/apps_deployment.rs",
    ];
    assert_eq!(
        added,
        wanted
            .map(std::path::PathBuf::from)
            .iter()
            .collect::<Vec<_>>()
    );
    let controller = read(&dir, "src/controller/apps/deployment.rs");
    assert!(controller.contains("use k8s_openapi::api::apps::v1::Deployment;"));
    assert!(controller.contains("<Deployment as k8s_openapi::Resource>::URL_PATH_SEGMENT"));
    assert!(read(&dir, "src/controller/mod.rs").contains("apps::deployment::RBAC"));
    assert!(!read(&dir, "src/api/mod.rs").contains("Deployment"));
    assert!(!read(&dir, "config/samples/kustomization.yaml").contains("deployment"));
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("- core: true\n  path: k8s.io/api/apps/v1\n  group: apps\n"),
        "{project}"
    );
}

pub const BACKUP_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cli/fixtures/backups.storage.example.com.yaml"
);

/// `create api` for the fixture's Backup, another project's kind.
pub const BACKUP: &[&str] = &[
    "--group",
    "storage",
    "--version",
    "v1beta1",
    "--kind",
    "Backup",
    "--resource=false",
    "--external-api-crd",
    BACKUP_CRD,
];

/// `--external-api-crd`: Rust types made from another project's CRD, its copy for the tests,
/// and a controller; PROJECT marks it `external` as kubebuilder does.
#[test]
fn a_controller_for_another_projects_crd_gets_types_made_from_it() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let before = snapshot(&dir);
    let stdout = create_api(&dir, BACKUP);
    assert!(
        stdout.contains("Controller for storage.example.com/v1beta1 Backup"),
        "{stdout}"
    );
    let wanted = [
        "config/crd/external/storage.example.com_backups.yaml",
        "src/api/external/storage/v1beta1/backup.rs",
        "src/controller/storage/backup.rs",
        "tests/storage_backup.rs",
    ];
    assert_eq!(added(&dir, &before), wanted.map(PathBuf::from));
    let types = read(&dir, "src/api/external/storage/v1beta1/backup.rs");
    assert!(
        types.contains("pub struct BackupSpec") && types.contains("kopium"),
        "{types}"
    );
    assert!(read(&dir, "src/api/mod.rs").contains("pub mod external {"));
    assert!(!read(&dir, "config/crd/kustomization.yaml").contains("backups"));
    let project = read(&dir, "PROJECT");
    assert!(project.contains("- api:\n    crdVersion: v1\n    namespaced: true\n  domain: example.com\n  path: config/crd/external/storage.example.com_backups.yaml\n  external: true\n"), "{project}");
}

#[test]
fn an_external_crd_that_does_not_match_the_flags_is_refused() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let refused = |args: &[&str], needle: &str| {
        assert_refused(&dir, &mut create_api_cmd(&dir, args), needle);
    };
    let flags = |kind: &str, version: &str| {
        [
            "--version",
            version,
            "--kind",
            kind,
            "--resource=false",
            "--external-api-crd",
            BACKUP_CRD,
        ]
        .map(String::from)
    };
    let restore = flags("Restore", "v1beta1");
    refused(
        &restore.each_ref().map(String::as_str),
        "help: pass --group storage --kind Backup (or --group storage.example.com)",
    );
    let v1 = flags("Backup", "v1");
    refused(
        &v1.each_ref().map(String::as_str),
        "help: pass --version with one of v1beta1",
    );
    refused(
        &[
            "--version",
            "v1beta1",
            "--kind",
            "Backup",
            "--external-api-crd",
            BACKUP_CRD,
        ],
        "help: add --resource=false",
    );
    refused(
        &args("--version v1 --kind Backup --resource=false --external-api-crd missing.yaml"),
        "reading --external-api-crd missing.yaml",
    );
    // The scope is the CRD's: a --namespaced that contradicts it is not silently dropped.
    let cluster_scoped = [BACKUP, &["--namespaced=false"]].concat();
    refused(
        &cluster_scoped,
        "--namespaced=false contradicts the CRD, which makes Backup namespaced",
    );
    let other_group = format!(
        "--group foo --version v1beta1 --kind Backup --resource=false --external-api-crd {BACKUP_CRD}"
    );
    refused(
        &args(&other_group),
        "defines storage.example.com Backup, not foo Backup\nhelp: pass --group storage --kind Backup",
    );

    // CRDs the API server would not serve, kopium cannot read, or of the project's own API.
    let fixture = std::fs::read_to_string(BACKUP_CRD).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    for (n, (from, to, needle)) in [
        (
            "group: storage.example.com",
            "group: Storage.Example.IO",
            "group \"Storage.Example.IO\" is not a lowercase DNS subdomain with a dot",
        ),
        (
            "              source:\n",
            "              \"\":\n",
            "kopium cannot make Rust types of",
        ),
        (
            "group: storage.example.com\n  names:\n    kind: Backup",
            "group: minetto.dev\n  names:\n    kind: Application",
            "minetto.dev Application is this project's own API (version v1alpha1)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        assert!(fixture.contains(from), "{from}");
        let crd = elsewhere.path().join(format!("crd-{n}.yaml"));
        std::fs::write(&crd, fixture.replace(from, to)).unwrap();
        let kind = if to.contains("Application") {
            "Application"
        } else {
            "Backup"
        };
        let crd = crd.display().to_string();
        let args = ["--version", "v1beta1", "--kind", kind, "--resource=false"];
        refused(&[&args[..], &["--external-api-crd", &crd]].concat(), needle);
    }
}

/// When the other project's CRD changes, `--controller=false --force` makes the types and the
/// CRD copy again and leaves the controller and its test, the user's work, as they are.
#[test]
fn another_projects_types_are_refreshed_without_touching_the_controller() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let refresh = [BACKUP, &["--controller=false", "--force"]].concat();
    let refused = "--controller=false only refreshes the types of one the project has";
    assert_refused(&dir, &mut create_api_cmd(&dir, &refresh), refused);
    create_api(&dir, BACKUP);
    let header = read(&dir, "src/api/external/storage/v1beta1/backup.rs");
    assert!(header.contains("--controller=false --force"), "{header}");
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, BACKUP),
        "help: pass --controller=false --force",
    );
    let mine = [
        "src/controller/storage/backup.rs",
        "tests/storage_backup.rs",
    ];
    for file in mine {
        let text = read(&dir, file);
        std::fs::write(dir.join(file), format!("{text}// my reconcile logic\n")).unwrap();
    }
    let types = "src/api/external/storage/v1beta1/backup.rs";
    std::fs::write(dir.join(types), "// stale types\n").unwrap();
    let kept: Vec<String> = mine.iter().map(|f| read(&dir, f)).collect();
    let project = read(&dir, "PROJECT");
    let out = create_api(&dir, &refresh);
    assert!(
        out.contains("Types of storage.example.com/v1beta1 Backup"),
        "{out}"
    );
    assert!(
        read(&dir, types).contains("pub struct BackupSpec"),
        "the types are made again"
    );
    assert_eq!(
        mine.map(|f| read(&dir, f)).to_vec(),
        kept,
        "the controller and test are kept"
    );
    assert_eq!(read(&dir, "PROJECT"), project);
}

/// `delete api` takes a foreign kind's controller and test away, and for another project's
/// kind its types and CRD copy too, unless the user changed them.
#[test]
fn deleting_a_foreign_kind_removes_what_create_api_added() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let before = snapshot(&dir);
    let config_map = ["--group", "core", "--version", "v1", "--kind", "ConfigMap"];
    create_api(&dir, &[&config_map[..], &["--resource=false"]].concat());
    create_api(&dir, BACKUP);
    let types = dir.join("src/api/external/storage/v1beta1/backup.rs");
    let generated = read(&dir, "src/api/external/storage/v1beta1/backup.rs");
    std::fs::write(&types, format!("{generated}// mine\n")).unwrap();
    let delete_backup = [&["delete", "api"][..], &BACKUP[..6]].concat();
    let mut refused = opsdk(&dir);
    refused.args(&delete_backup);
    assert_refused(
        &dir,
        &mut refused,
        "src/api/external/storage/v1beta1/backup.rs (kept)",
    );
    // The CRD copy is the user's (nothing tells it from an edited one): kept without --force.
    std::fs::write(&types, generated).unwrap();
    let said = succeed(&dir, &delete_backup);
    let copy = "config/crd/external/storage.example.com_backups.yaml";
    assert!(said.contains(&format!("Kept {copy}, your copy")), "{said}");
    assert!(dir.join(copy).exists() && !types.exists());
    create_api(&dir, BACKUP);
    succeed(&dir, &[&delete_backup[..], &["--force"]].concat());
    let stdout = succeed(&dir, &[&["delete", "api"][..], &config_map[..]].concat());
    assert!(
        stdout.contains("Controller for v1 ConfigMap deleted"),
        "{stdout}"
    );
    assert_eq!(snapshot(&dir), before);
}
