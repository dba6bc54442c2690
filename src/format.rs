//! Formats the planned Rust files with rustfmt, as kubebuilder runs `go fmt` after scaffolding:
//! kind names of any length must still give a project that passes `cargo fmt --check`.
//! rustfmt runs over a scratch copy outside the project: one process per 16 KB, at most one
//! per core.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

use crate::plan::Plan;

/// A rustfmt process takes about 9 ms to start (it loads librustc_driver), about what it takes
/// to format 36 KB; a second process pays off only past about 16 KB (measured on 2 cores).
const BYTES_PER_RUSTFMT: usize = 16 * 1024;

/// Formats every rendered `.rs` file of `plan` in place (verbatim copies are formatted in
/// `templates/` already). Returns false, leaving them as rendered, when rustfmt is missing.
pub fn rust_files(root: &Path, plan: &mut Plan) -> Result<bool> {
    let rust: Vec<usize> = (0..plan.files.len())
        .filter(|&i| {
            let file = &plan.files[i];
            !file.verbatim && file.path.extension().is_some_and(|e| e == "rs")
        })
        .collect();
    if rust.is_empty() {
        return Ok(true);
    }
    let scratch = Scratch::new()?;
    let mut paths = Vec::new();
    for (n, &i) in rust.iter().enumerate() {
        let path = scratch.0.join(format!("{n}.rs"));
        std::fs::write(&path, &plan.files[i].contents)
            .with_context(|| format!("writing {}", path.display()))?;
        paths.push(path);
    }
    let mut by_size: Vec<(usize, &PathBuf)> = rust
        .iter()
        .map(|&i| plan.files[i].contents.len())
        .zip(&paths)
        .collect();
    let total: usize = by_size.iter().map(|(size, _)| size).sum();
    // The rustfmt processes run at once; each file goes to the least loaded, largest first.
    let workers = total
        .div_ceil(BYTES_PER_RUSTFMT)
        .min(std::thread::available_parallelism().map_or(1, usize::from))
        .clamp(1, paths.len());
    by_size.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let mut batches: Vec<(usize, Vec<&PathBuf>)> = vec![(0, Vec::new()); workers];
    for (size, path) in by_size {
        let lightest = batches
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("one worker at least");
        lightest.0 += size;
        lightest.1.push(path);
    }
    let program = rustfmt(root);
    let mut children = Vec::new();
    for (_, batch) in &batches {
        let child = Command::new(&program)
            .args(["--edition", "2024", "--config", "skip_children=true"])
            .args(batch)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        match child {
            Ok(child) => children.push(child),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e).context("running rustfmt"),
        }
    }
    for child in children {
        let output = child.wait_with_output().context("running rustfmt")?;
        if !output.status.success() {
            bail!(
                "rustfmt rejected the generated code (a template bug): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    for (path, &i) in paths.iter().zip(&rust) {
        plan.files[i].contents =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(true)
}

/// rustfmt, called straight from the default toolchain when nothing could override it: rustup's
/// proxy spends about 10 ms choosing a toolchain on every call. `RUSTFMT` wins, as in `cargo fmt`.
fn rustfmt(root: &Path) -> PathBuf {
    match std::env::var_os("RUSTFMT") {
        Some(path) => path.into(),
        None => default_toolchain_rustfmt(root).unwrap_or_else(|| "rustfmt".into()),
    }
}

fn default_toolchain_rustfmt(root: &Path) -> Option<PathBuf> {
    let overridden = std::env::var_os("RUSTUP_TOOLCHAIN").is_some()
        || root.ancestors().any(|dir| {
            dir.join("rust-toolchain").exists() || dir.join("rust-toolchain.toml").exists()
        });
    if overridden {
        return None;
    }
    let home = match std::env::var_os("RUSTUP_HOME") {
        Some(home) => PathBuf::from(home),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".rustup"),
    };
    let settings = std::fs::read_to_string(home.join("settings.toml")).ok()?;
    let (head, overrides) = settings
        .split_once("[overrides]")
        .unwrap_or((&settings, ""));
    if overrides.lines().any(|line| line.contains('=')) {
        return None;
    }
    let toolchain = head.lines().find_map(|line| {
        line.strip_prefix("default_toolchain = \"")?
            .strip_suffix('"')
    })?;
    let path = home.join("toolchains").join(toolchain).join("bin/rustfmt");
    path.is_file().then_some(path)
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!("opsdk-fmt-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
