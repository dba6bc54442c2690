//! Formats the planned Rust files with rustfmt, as kubebuilder runs `go fmt` after scaffolding:
//! kind names of any length must still give a project that passes `cargo fmt --check`.
//! One rustfmt run over a scratch copy outside the project keeps it to a few milliseconds.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::plan::Plan;

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
    let output = match Command::new(rustfmt(root))
        .args(["--edition", "2024", "--config", "skip_children=true"])
        .args(&paths)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).context("running rustfmt"),
    };
    if !output.status.success() {
        bail!(
            "rustfmt rejected the generated code (a template bug): {}",
            String::from_utf8_lossy(&output.stderr)
        );
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
