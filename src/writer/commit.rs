//! Writes a checked plan as one change. Every new file is first written beside its target;
//! then each existing target is moved aside and the new file moved into place. A failure at
//! any step (a read-only directory, an immutable file, a full disk) moves back every file
//! already moved and removes every file and directory made, so the project is left as it was.

use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// One file of the change: its new contents, or `None` to remove it.
pub struct Change<'a> {
    pub target: PathBuf,
    pub contents: Option<&'a str>,
}

/// A step taken, kept to undo it.
enum Step {
    MadeDir(PathBuf),
    Staged(PathBuf),
    MovedAside { target: PathBuf, aside: PathBuf },
    Placed(PathBuf),
}

/// Makes every change, or none: on failure, undoes the steps taken and returns the error.
pub fn commit(root: &Path, changes: &[Change]) -> Result<()> {
    let mut steps = Vec::new();
    match run(changes, &mut steps) {
        Ok(()) => {
            finish(root, changes, &steps);
            Ok(())
        }
        Err(err) => {
            undo(steps);
            Err(err)
        }
    }
}

fn run(changes: &[Change], steps: &mut Vec<Step>) -> Result<()> {
    // Most failures happen here, before any file of the project has changed.
    let mut staged = Vec::with_capacity(changes.len());
    for change in changes {
        staged.push(match change.contents {
            Some(contents) => Some(stage(&change.target, contents, steps)?),
            None => None,
        });
    }
    for (change, staged) in changes.iter().zip(staged) {
        let target = &change.target;
        if fs::symlink_metadata(target).is_ok() {
            let aside = aside(target);
            clear(&aside)?;
            fs::rename(target, &aside).with_context(|| {
                let verb = if staged.is_some() {
                    "writing"
                } else {
                    "removing"
                };
                format!("{verb} {}", target.display())
            })?;
            steps.push(Step::MovedAside {
                target: target.clone(),
                aside,
            });
        }
        if let Some(tmp) = staged {
            fs::rename(&tmp, target).with_context(|| format!("writing {}", target.display()))?;
            steps.push(Step::Placed(target.clone()));
        }
    }
    Ok(())
}

/// Writes `contents` to a new file beside `target`, making the directories it needs.
fn stage(target: &Path, contents: &str, steps: &mut Vec<Step>) -> Result<PathBuf> {
    let dir = target
        .parent()
        .expect("planned paths are relative to the root");
    let mut missing = Vec::new();
    let mut ancestor = Some(dir);
    while let Some(d) = ancestor.filter(|d| fs::symlink_metadata(d).is_err()) {
        missing.push(d.to_path_buf());
        ancestor = d.parent();
    }
    for d in missing.into_iter().rev() {
        fs::create_dir(&d).with_context(|| format!("creating {}", d.display()))?;
        steps.push(Step::MadeDir(d));
    }
    let tmp = beside(target, "opsdk-tmp");
    clear(&tmp)?;
    // create_new: never through a link someone placed at that name.
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    steps.push(Step::Staged(tmp.clone()));
    file.write_all(contents.as_bytes())
        .with_context(|| format!("writing {}", tmp.display()))?;
    Ok(tmp)
}

/// What `beside` adds to a file name: a dot before it, a dot and a suffix (`opsdk-tmp`,
/// `opsdk-old`) after it.
pub(super) const BESIDE_EXTRA: usize = 2 + "opsdk-tmp".len();

/// Where `target` is moved while the change is made, until it is done.
pub(super) fn aside(target: &Path) -> PathBuf {
    beside(target, "opsdk-old")
}

fn beside(target: &Path, suffix: &str) -> PathBuf {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    target.with_file_name(format!(".{name}.{suffix}"))
}

/// Removes what an interrupted earlier run left at `path` (the entry itself, never what a
/// link there points to).
fn clear(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

fn undo(steps: Vec<Step>) {
    // Best effort, newest first: each step is undone even when an earlier undo failed.
    for step in steps.into_iter().rev() {
        let _ = match step {
            Step::Placed(target) => fs::remove_file(target),
            Step::MovedAside { target, aside } => fs::rename(aside, target),
            Step::Staged(tmp) => clear(&tmp).map_err(std::io::Error::other),
            Step::MadeDir(dir) => fs::remove_dir(dir),
        };
    }
}

/// Drops the files moved aside, and the directories a removal left empty, up to the root.
fn finish(root: &Path, changes: &[Change], steps: &[Step]) {
    for step in steps {
        if let Step::MovedAside { aside, .. } = step {
            let _ = fs::remove_file(aside);
        }
    }
    for change in changes.iter().filter(|c| c.contents.is_none()) {
        let mut dir = change.target.parent();
        while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}

#[cfg(test)]
mod tests;
