//! The committed golden copies must equal what the templates generate: the article's project
//! (testdata/k8s-operator-talk) and, in testdata/k8s-operator-talk-helm, the files the Helm
//! plugin adds to it or changes in it (`opsdk edit --plugins helm`: the chart, the Makefile's
//! helm targets, the chart workflow, PROJECT), so that a change to the chart's templates is
//! reviewed as a diff. Refresh them with `hack/update-golden.sh` and review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::*;

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/k8s-operator-talk")
}

fn helm_golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/k8s-operator-talk-helm")
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

#[test]
fn helm_golden_copy_matches_the_templates() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let plain = snapshot(&dir);
    succeed(&dir, &["edit", "--plugins", "helm"]);
    let added: BTreeMap<PathBuf, Vec<u8>> = snapshot(&dir)
        .into_iter()
        .filter(|(path, bytes)| plain.get(path) != Some(bytes))
        .collect();
    assert!(added.keys().any(|p| p.starts_with("dist/chart/templates")));
    matches_golden(&helm_golden_dir(), &added);
}
