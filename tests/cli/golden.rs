//! The committed golden copies must equal what the templates generate: the article's project
//! (testdata/k8s-operator-talk); in testdata/k8s-operator-talk-helm, the files the Helm
//! plugin adds to it or changes in it (`opsdk edit --plugins helm`: the chart, the Makefile's
//! helm targets, the chart workflow, PROJECT); in testdata/k8s-operator-talk-webhook, the files
//! the Application's defaulting and validating webhooks add or change (the webhook server,
//! config/webhook, config/default, the example webhook, PROJECT). A change to those templates
//! is so reviewed as a diff. Refresh them with `hack/update-golden.sh` and review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::*;

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/k8s-operator-talk")
}

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// Compares `generated` with the tree in `golden`, or with OPSDK_UPDATE_GOLDEN set, writes it
/// there.
fn matches_golden(golden: &Path, generated: &BTreeMap<PathBuf, Vec<u8>>) {
    if std::env::var_os("OPSDK_UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(golden);
        for (path, bytes) in generated {
            std::fs::create_dir_all(golden.join(path).parent().unwrap()).unwrap();
            std::fs::write(golden.join(path), bytes).unwrap();
        }
        return;
    }
    let committed = snapshot(golden);
    let differing: Vec<String> = generated
        .keys()
        .chain(committed.keys())
        .filter(|p| generated.get(*p) != committed.get(*p))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        differing.is_empty(),
        "the golden copy {} differs from the templates in: {}\nrun hack/update-golden.sh and review the diff",
        golden.display(),
        differing.join(", ")
    );
}

#[test]
fn golden_copy_matches_the_templates() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    matches_golden(&golden_dir(), &snapshot(&dir));
}

/// The files that running opsdk with `command` in the article's project adds or changes.
fn added_to_the_article_by(command: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let plain = snapshot(&dir);
    succeed(&dir, &args(command));
    snapshot(&dir)
        .into_iter()
        .filter(|(path, bytes)| plain.get(path) != Some(bytes))
        .collect()
}

#[test]
fn helm_golden_copy_matches_the_templates() {
    let added = added_to_the_article_by("edit --plugins helm");
    assert!(added.keys().any(|p| p.starts_with("dist/chart/templates")));
    matches_golden(&testdata("k8s-operator-talk-helm"), &added);
}

#[test]
fn webhook_golden_copy_matches_the_templates() {
    let added = added_to_the_article_by(
        "create webhook --version v1alpha1 --kind Application --defaulting --programmatic-validation",
    );
    assert!(added.contains_key(Path::new("src/webhook/serve.rs")));
    assert!(added.contains_key(Path::new("src/webhook/v1alpha1/application.rs")));
    matches_golden(&testdata("k8s-operator-talk-webhook"), &added);
}

/// The fixtures the slow tests copy into generated projects are as rustfmt writes them, or
/// those projects' own `cargo fmt --check` fails.
#[test]
fn fixtures_are_as_rustfmt_writes_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/fixtures");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rustfmt = std::process::Command::new("rustfmt")
            .args(["--edition", "2024"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        rustfmt
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let formatted = rustfmt.wait_with_output().unwrap();
        assert!(formatted.status.success(), "{}", path.display());
        assert_eq!(
            String::from_utf8_lossy(&formatted.stdout),
            text,
            "{}",
            path.display()
        );
    }
}

/// The Rust templates copied as they are (no `.tera`, not partials) are rustfmt-clean: the
/// writer never formats them, so one out of rustfmt's order fails every generated project's
/// `cargo fmt --check`, which only the slow suites would show.
#[test]
fn verbatim_rust_templates_are_rustfmt_clean() {
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let verbatim: Vec<PathBuf> = walkdir::WalkDir::new(&templates)
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .filter(|path| !path.starts_with(templates.join("_partials")))
        .collect();
    assert!(verbatim.len() > 20, "{verbatim:?}");
    let check = std::process::Command::new("rustfmt")
        .args([
            "--edition",
            "2024",
            "--check",
            "--config",
            "skip_children=true",
        ])
        .args(&verbatim)
        .output()
        .expect("running rustfmt");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
