//! Fixtures: temp project directories, the opsdk command, and tree snapshots that prove a
//! refused command changed nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

pub const DOMAIN: &str = "minetto.dev";
pub const REPO: &str = "github.com/eminetto/k8s-operator-talk";

/// A temp directory named like the article's project.
pub fn project_dir() -> (TempDir, PathBuf) {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path().join("k8s-operator-talk");
    std::fs::create_dir(&dir).unwrap();
    (tmp, dir)
}

pub fn opsdk(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("opsdk").unwrap();
    cmd.current_dir(dir);
    cmd
}

/// Runs opsdk with `args` in `dir`, expects success, and returns its stdout.
pub fn succeed(dir: &Path, args: &[&str]) -> String {
    let out = opsdk(dir).args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

pub fn init(dir: &Path) {
    succeed(dir, &["init", "--domain", DOMAIN, "--repo", REPO]);
}

pub fn create_api(dir: &Path, args: &[&str]) -> String {
    succeed(dir, &[&["create", "api"], args].concat())
}

/// `opsdk create api args` in `dir`, not yet run.
pub fn create_api_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = opsdk(dir);
    cmd.args(["create", "api"]).args(args);
    cmd
}

/// The article's project: `init` plus the Application API and controller.
pub fn article_project(dir: &Path) {
    init(dir);
    create_api(
        dir,
        &[
            "--version",
            "v1alpha1",
            "--kind",
            "Application",
            "--resource",
            "--controller",
        ],
    );
}

/// Every file under `dir` (relative path -> bytes), symlinks recorded as their target.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| !e.file_type().is_dir())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            let bytes = if e.path_is_symlink() {
                std::fs::read_link(e.path())
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (rel, bytes)
        })
        .collect()
}

/// Runs `cmd`, expects failure with `error:` naming `needle` and a `help:` line, and checks
/// that `dir` is byte-for-byte unchanged.
pub fn assert_refused(dir: &Path, cmd: &mut Command, needle: &str) {
    let before = snapshot(dir);
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    assert!(
        stderr.starts_with("error: "),
        "stderr must start with `error: `: {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "stderr must mention {needle:?}: {stderr}"
    );
    assert!(
        stderr.contains("\nhelp: "),
        "stderr must carry a help line: {stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        2,
        "one error line and one help line: {stderr}"
    );
    assert_eq!(
        snapshot(dir),
        before,
        "a refused command must not change the tree"
    );
}

pub fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}
