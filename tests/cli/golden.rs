//! The committed golden copy of the article's project (testdata/k8s-operator-talk) must equal
//! what the templates generate. Refresh it with `hack/update-golden.sh` and review the diff.

use std::path::{Path, PathBuf};

use crate::support::*;

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/k8s-operator-talk")
}

#[test]
fn golden_copy_matches_the_templates() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let generated = snapshot(&dir);
    let golden = golden_dir();
    if std::env::var_os("OPSDK_UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for (path, bytes) in &generated {
            std::fs::create_dir_all(golden.join(path).parent().unwrap()).unwrap();
            std::fs::write(golden.join(path), bytes).unwrap();
        }
        return;
    }
    let committed = snapshot(&golden);
    let differing: Vec<String> = generated
        .keys()
        .chain(committed.keys())
        .filter(|p| generated.get(*p) != committed.get(*p))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        differing.is_empty(),
        "the golden copy differs from the templates in: {}\nrun hack/update-golden.sh and review the diff",
        differing.join(", ")
    );
}
