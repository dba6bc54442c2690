//! Flags kubebuilder's users type from habit (its tutorials, their scripts): taken where they
//! mean something opsdk does, or refused with where opsdk keeps that setting.

use crate::support::*;

const MEMCACHED: &[&str] = &[
    "--group",
    "cache",
    "--version",
    "v1alpha1",
    "--kind",
    "Memcached",
];

#[test]
fn kubebuilders_init_and_create_api_flags_are_taken() {
    let (_tmp, dir) = project_dir();
    init_with(&dir, &["--plugins", "go/v4", "--skip-go-version-check"]);
    assert!(!read(&dir, "PROJECT").contains("plugins:"));
    create_api(
        &dir,
        &[
            MEMCACHED,
            &["--plugins=deploy-image/v1-alpha", "--make=false"],
        ]
        .concat(),
    );
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("kind: Memcached\n  plural: memcacheds\n"),
        "{project}"
    );
    assert!(project.contains("deployImage: true"), "{project}");
    assert!(read(&dir, "src/controller/cache/memcached.rs").contains("fn deployment("));
}

#[test]
fn deploy_image_settings_kept_in_the_spec_are_refused_with_where_they_go() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    for flag in [
        "--image=memcached:1.6",
        "--image-container-port=11211",
        "--run-as-user=1001",
    ] {
        let name = flag.split('=').next().unwrap();
        let args = [MEMCACHED, &["--plugins=deploy-image/v1-alpha", flag]].concat();
        assert_refused(
            &dir,
            &mut create_api_cmd(&dir, &args),
            &format!("{name} is a setting of kubebuilder's deploy-image plugin"),
        );
    }
    let args = [MEMCACHED, &["--plugins=helm"]].concat();
    assert_refused(
        &dir,
        &mut create_api_cmd(&dir, &args),
        "unknown plugin \"helm\" for create api",
    );
}

#[test]
fn create_webhook_checks_the_plural_it_is_given() {
    let (_tmp, dir) = project_dir();
    init(&dir);
    create_api(&dir, &[MEMCACHED, &["--deploy-image"]].concat());
    let mut cmd = opsdk(&dir);
    cmd.args(["create", "webhook", "--defaulting", "--plural", "memcached"])
        .args(MEMCACHED);
    assert_refused(&dir, &mut cmd, "--plural memcached does not match");
    create_webhook(
        &dir,
        &[MEMCACHED, &["--defaulting", "--plural", "memcacheds"]].concat(),
    );
    assert!(dir.join("src/webhook/cache/v1alpha1/memcached.rs").exists());
}
