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
    init_with(dir, &[]);
}

/// `opsdk init` of the article's domain and repo, with `extra` flags.
pub fn init_with(dir: &Path, extra: &[&str]) {
    succeed(
        dir,
        &[&["init", "--domain", DOMAIN, "--repo", REPO], extra].concat(),
    );
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

/// `opsdk create webhook args` in `dir`; expects success and returns its stdout.
pub fn create_webhook(dir: &Path, args: &[&str]) -> String {
    succeed(dir, &[&["create", "webhook"], args].concat())
}

/// `opsdk create webhook args` in `dir`, not yet run.
pub fn create_webhook_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = opsdk(dir);
    cmd.args(["create", "webhook"]).args(args);
    cmd
}

/// The Application webhooks of the article's project: defaulting and validation.
pub const ARTICLE_WEBHOOKS: &[&str] = &[
    "--version",
    "v1alpha1",
    "--kind",
    "Application",
    "--defaulting",
    "--programmatic-validation",
];

/// `opsdk delete api` of the article's Application.
pub fn delete_application(dir: &Path) -> String {
    let args = [
        "delete",
        "api",
        "--version",
        "v1alpha1",
        "--kind",
        "Application",
    ];
    succeed(dir, &args)
}

/// The article's project: `init` plus the Application API and controller.
pub fn article_project(dir: &Path) {
    init(dir);
    create_api(
        dir,
        &args("--version v1alpha1 --kind Application --resource --controller"),
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

/// A Go program built with `go install` into the user's cache directory (outside the clone),
/// in a folder named by `versioned` (e.g. `actionlint-v1.7.12`), and returned as the path of
/// its binary `bin`. `package` is a package path with `@version` (fetched through the Go module
/// proxy) or `.` for the module in `dir`. Go's build cache makes a rebuild take seconds.
pub fn go_tool(versioned: &str, bin: &str, package: &str, dir: &Path) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let out = cache.join("opsdk").join(versioned);
    // One install at a time in this process: the tests that need a tool start together, and
    // would share the folder below (the second finds Go's build cache warm).
    static INSTALLS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Installed into a folder of its own, then renamed: concurrent runs never see half a binary.
    let partial = out.join(format!(".partial-{}", std::process::id()));
    std::fs::create_dir_all(&partial).unwrap();
    let go = std::process::Command::new("go")
        .args(["install", "-trimpath", package])
        .current_dir(dir)
        .env("GOBIN", &partial)
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap_or_else(|e| panic!("running go install (is Go installed?): {e}"));
    assert!(
        go.status.success(),
        "go install {package} in {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&go.stderr)
    );
    let binary = out.join(bin);
    std::fs::rename(partial.join(bin), &binary).unwrap();
    std::fs::remove_dir_all(&partial).unwrap();
    binary
}

/// Command-line arguments written as one line: `args("--version v1 --kind Widget")`.
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}
