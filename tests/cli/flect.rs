//! opsdk's plurals against kubebuilder's pluralizer itself: github.com/gobuffalo/flect v1.0.3,
//! built from `tests/flect` through the Go module proxy.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use opsdk::naming::{default_plural, kubebuilder_plural, plural_of};

use crate::support::go_tool;

const FLECT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flect");
const KINDS: &str = include_str!("../flect/kinds.txt");

/// Word endings where opsdk keeps the English plural instead of flect's.
const ENGLISH_ENDINGS: &[&str] = &["safe", "cafe", "video", "octopus"];

fn kinds() -> Vec<&'static str> {
    KINDS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Builds tests/flect (its binary is named after the module, `flect`).
fn flect_binary() -> PathBuf {
    go_tool("flect-v1.0.3", "flect", ".", Path::new(FLECT_DIR))
}

/// flect's plural of each kind, in order.
fn flect_plurals(bin: &Path, kinds: &[&str]) -> Vec<String> {
    // flect reads inflections.json and acronyms.json from its working directory: use an empty one.
    let cwd = tempfile::TempDir::new().unwrap();
    let mut child = Command::new(bin)
        .current_dir(cwd.path())
        .env_remove("INFLECT_PATH")
        .env_remove("ACRONYMS_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for kind in kinds {
        writeln!(stdin, "{kind}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let plurals: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(plurals.len(), kinds.len(), "one plural a kind");
    plurals
}

#[test]
#[ignore = "builds a Go program; run by hack/test.sh"]
fn plurals_match_flect_v1_0_3() {
    let kinds = kinds();
    assert!(kinds.len() >= 300, "{} kinds", kinds.len());
    let flect = flect_plurals(&flect_binary(), &kinds);
    let mut wrong = Vec::new();
    for (kind, flect) in kinds.iter().zip(&flect) {
        let ours = plural_of(kind);
        let lower = kind.to_lowercase();
        let english = ENGLISH_ENDINGS.iter().any(|end| lower.ends_with(end));
        let invalid = !flect
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let expected_departure = english || invalid;
        // The port itself is exact, departures included.
        if kubebuilder_plural(kind) != *flect {
            wrong.push(format!(
                "{kind}: kubebuilder_plural {:?}, flect {flect:?}",
                kubebuilder_plural(kind)
            ));
        }
        // opsdk departs from it only where documented, and says so.
        let departs = ours != *flect;
        if departs != expected_departure || default_plural(kind).kubebuilder.is_some() != departs {
            wrong.push(format!("{kind}: opsdk {ours:?}, flect {flect:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} kinds differ from flect v1.0.3:\n{}",
        wrong.len(),
        kinds.len(),
        wrong.join("\n")
    );
}
