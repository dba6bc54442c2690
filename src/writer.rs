//! Checks a whole plan against the disk, then writes it, or prints it for `--dry-run`.
//! Every refusal happens before the first write, so a refused command changes nothing.

use std::fs;
use std::path::{Component, Path};

use anyhow::{Context as _, Result, bail};

use crate::plan::{GENERATED_MARKER, Plan, PlannedFile, Policy};

mod commit;
pub(crate) mod merge;

use commit::{Change, commit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Overwrite,
    /// The user's changed file, with opsdk's change merged into it (`Step::merged`).
    Merge,
    Unchanged,
    Remove,
    /// The user's changed file a `Policy::Refresh` leaves alone.
    Kept,
}

impl Action {
    fn label(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Overwrite => "overwrite",
            Action::Merge => "merge",
            Action::Unchanged => "unchanged",
            Action::Remove => "remove",
            Action::Kept => "keep",
        }
    }
}

/// Whether a command may overwrite the user's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Force {
    /// The command has no `--force` (init).
    Unavailable,
    Off,
    On,
}

/// What happens to one planned file.
pub struct Step<'p> {
    pub action: Action,
    pub file: &'p PlannedFile,
    /// For `Action::Merge`: the user's file with opsdk's change carried into it.
    pub merged: Option<String>,
}

/// Decides what happens to each planned file; refuses the whole plan on any conflict.
/// A user's file opsdk rewrites (`Replace`, `Refresh`) that the user changed gets opsdk's
/// change merged in when the two touch different lines. `Force::On` overwrites (or removes)
/// the user's files in the plan, never an opsdk file the user took over. A removal of a file
/// that is not there is no action.
pub fn check<'p>(root: &Path, plan: &'p Plan, force: Force) -> Result<Vec<Step<'p>>> {
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let mut taken_over = Vec::new();
    // Whether one of them would be removed rather than rewritten, for the message.
    let mut removing_taken_over = false;
    let mut changed = Vec::new();
    let mut edited = Vec::new();
    for file in &plan.files {
        check_path(root, &file.path)?;
        let target = root.join(&file.path);
        let existing = match fs::read(&target) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", target.display())),
        };
        let mut merged = None;
        // An opsdk list the user added to (`previous` is set for those alone) is merged as a
        // user's file is.
        let policy = match &existing {
            Some(bytes) if file.policy == Policy::Regenerate && extended_by_user(bytes, file) => {
                Policy::Replace
            }
            _ => file.policy,
        };
        let action = match (existing, policy) {
            (None, policy) if policy.removes() => continue,
            (Some(_), Policy::RemoveOutput) => Action::Remove,
            // An opsdk list the user added entries to is theirs too: it goes with `--force`.
            (Some(bytes), Policy::RemoveGenerated)
                if extended_by_user(&bytes, file) && force == Force::Off =>
            {
                changed.push(file.path.display().to_string());
                continue;
            }
            (Some(bytes), Policy::RemoveGenerated) if first_line_has_marker(&bytes) => {
                Action::Remove
            }
            (Some(_), Policy::RemoveGenerated) => {
                taken_over.push(file.path.display().to_string());
                removing_taken_over = true;
                continue;
            }
            (Some(bytes), Policy::Remove)
                if bytes == file.contents.as_bytes() || force == Force::On =>
            {
                Action::Remove
            }
            (Some(_), Policy::Remove) => {
                changed.push(file.path.display().to_string());
                continue;
            }
            (Some(bytes), Policy::Replace) if bytes == file.contents.as_bytes() => {
                Action::Unchanged
            }
            (Some(bytes), Policy::Replace)
                if file.previous.as_deref().map(str::as_bytes) == Some(bytes.as_slice()) =>
            {
                Action::Update
            }
            // `--force` replaces only what cannot be merged: a file that merges keeps the
            // user's changes even then.
            (Some(bytes), Policy::Replace) => match merge_into(&bytes, file) {
                // opsdk's change is already there: nothing to write, nothing to say.
                Ok(text) if text.as_bytes() == bytes.as_slice() => Action::Unchanged,
                Ok(text) => {
                    merged = Some(text);
                    Action::Merge
                }
                Err(_) if force == Force::On => Action::Overwrite,
                Err(lines) => {
                    edited.push(format!("{} ({lines})", file.path.display()));
                    continue;
                }
            },
            (None, Policy::Refresh) => continue,
            (Some(bytes), Policy::Refresh) if bytes == file.contents.as_bytes() => {
                Action::Unchanged
            }
            (Some(bytes), Policy::Refresh)
                if file.previous.as_deref().map(str::as_bytes) == Some(bytes.as_slice()) =>
            {
                Action::Update
            }
            (Some(bytes), Policy::Refresh) => match merge_into(&bytes, file) {
                // opsdk's change is already there: nothing to write, nothing to say.
                Ok(text) if text.as_bytes() == bytes.as_slice() => Action::Unchanged,
                Ok(text) => {
                    merged = Some(text);
                    Action::Merge
                }
                Err(_) => Action::Kept,
            },
            (None, _) => Action::Create,
            (Some(bytes), _) if bytes == file.contents.as_bytes() => Action::Unchanged,
            (Some(bytes), Policy::Regenerate) if first_line_has_marker(&bytes) => Action::Update,
            (Some(_), Policy::Regenerate) => {
                taken_over.push(file.path.display().to_string());
                continue;
            }
            (Some(_), Policy::Create) if force == Force::On => Action::Overwrite,
            (Some(_), Policy::Create) => {
                conflicts.push(file.path.display().to_string());
                continue;
            }
        };
        actions.push(Step {
            action,
            file,
            merged,
        });
    }
    if !taken_over.is_empty() {
        let verb = if removing_taken_over {
            "change"
        } else {
            "overwrite"
        };
        bail!(
            "refusing to {verb} {}: the first line no longer says \"{GENERATED_MARKER}\", so the file is yours now\nhelp: restore that first line to let opsdk update the file, or move it away",
            taken_over.join(", ")
        );
    }
    // Every refusal at once: one named alone would let the `--force` it suggests overwrite
    // what the others protect.
    let mut refusals: Vec<(&str, String, &str)> = Vec::new();
    if !changed.is_empty() {
        refusals.push((
            "the files to remove",
            format!(
                "refusing to remove files you changed since opsdk wrote them: {} (kept)",
                changed.join(", ")
            ),
            "move your changes elsewhere, or pass --force to remove these files too",
        ));
    }
    if !edited.is_empty() {
        refusals.push((
            "the files to rewrite",
            format!(
                "refusing to rewrite files you changed where opsdk changes them too: {}",
                edited.join("; ")
            ),
            "undo your change to those lines and run again (it is then merged), or pass --force to replace these files with opsdk's version (your changes to them are lost; files that merge keep yours)",
        ));
    }
    if !conflicts.is_empty() {
        let help = match force {
            Force::Unavailable => "move them away, or run this in an empty directory",
            _ => "move them away, or pass --force to overwrite them",
        };
        refusals.push((
            "the existing files",
            format!(
                "refusing to overwrite existing files: {}",
                conflicts.join(", ")
            ),
            help,
        ));
    }
    match refusals.as_slice() {
        [] => {}
        [(_, error, help)] => bail!("{error}\nhelp: {help}"),
        all => {
            let errors: Vec<&str> = all.iter().map(|(_, error, _)| error.as_str()).collect();
            let helps: Vec<String> = (all.iter())
                .map(|(which, _, help)| format!("for {which}: {help}"))
                .collect();
            bail!("{}\nhelp: {}", errors.join("; "), helps.join("; "))
        }
    }
    Ok(actions)
}

/// An opsdk file, still marked as such, that holds more than opsdk wrote for the PROJECT on
/// disk (`file.previous`).
fn extended_by_user(bytes: &[u8], file: &PlannedFile) -> bool {
    first_line_has_marker(bytes)
        && file
            .previous
            .as_ref()
            .is_some_and(|p| p.as_bytes() != bytes)
}

/// The user's file `bytes` with the change from `file.previous` to `file.contents` merged
/// in, or the lines where both changed (`lines 3-5 and 9`).
fn merge_into(bytes: &[u8], file: &PlannedFile) -> Result<String, String> {
    let (Some(previous), Ok(ours)) = (&file.previous, std::str::from_utf8(bytes)) else {
        return Err("not text".to_string());
    };
    merge::merge(
        previous,
        ours,
        &file.contents,
        file.policy == Policy::Regenerate,
    )
    .map_err(|conflicts| {
        let ranges: Vec<String> = conflicts
            .iter()
            .map(|&(first, last)| match first == last {
                true => first.to_string(),
                false => format!("{first}-{last}"),
            })
            .collect();
        let noun = match ranges.as_slice() {
            [one] if !one.contains('-') => "line",
            _ => "lines",
        };
        format!("{noun} {}", ranges.join(" and "))
    })
}

fn first_line_has_marker(bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(first).contains(GENERATED_MARKER)
}

/// The longest file name opsdk writes: file systems take 255 bytes, and the file is staged
/// beside itself under a longer name first.
pub const MAX_FILE_NAME: usize = crate::validate::FILE_NAME_BYTES - commit::BESIDE_EXTRA;

/// Refuses paths that leave the root, names too long for a file system, and any symlink on the way to the file or the file
/// itself: we never write through a link the user (or an attacker) placed.
fn check_path(root: &Path, rel: &Path) -> Result<()> {
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        bail!(
            "refusing to write {}: the path leaves the project root",
            rel.display()
        );
    }
    // Checked here, not left to the write: a read of a longer name fails with ENAMETOOLONG,
    // which names no fix.
    if let Some(long) = (rel.components()).find(|c| c.as_os_str().len() > MAX_FILE_NAME) {
        bail!(
            "refusing to write {}: the name {:?} is {} bytes, past the {MAX_FILE_NAME} a file name may have here (255, less what opsdk adds to stage it)\nhelp: pass a shorter --group, --version or --kind (or init the project with a shorter --domain)",
            rel.display(),
            long.as_os_str(),
            long.as_os_str().len()
        );
    }
    let mut current = root.to_path_buf();
    for component in rel.components() {
        current.push(component);
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => bail!(
                "refusing to write {}: {} is a symbolic link\nhelp: replace the link with a real file or directory",
                rel.display(),
                current.display()
            ),
            Ok(meta) if current != root.join(rel) && !meta.is_dir() => bail!(
                "refusing to write {}: {} is not a directory\nhelp: move it away",
                rel.display(),
                current.display()
            ),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    // What a run stopped halfway (killed, the machine down) moved aside may be the only copy
    // of the file: only the user may drop it.
    let aside = commit::aside(&root.join(rel));
    if fs::symlink_metadata(&aside).is_ok() {
        bail!(
            "refusing to write {}: {} was left by an opsdk run stopped halfway, and may be the only copy of the file\nhelp: if {} is missing or not what it was, move the copy back there; then delete the copy and run the command again",
            rel.display(),
            aside.strip_prefix(root).unwrap_or(&aside).display(),
            rel.display()
        );
    }
    Ok(())
}

/// Writes the checked plan as one change (or only prints it when `dry_run`), then reports
/// each file. A write that fails changes nothing.
pub fn apply(
    root: &Path,
    actions: &[Step],
    dry_run: bool,
    out: &mut impl std::io::Write,
) -> Result<()> {
    if !dry_run {
        let changes: Vec<Change> = actions
            .iter()
            .filter_map(|step| {
                let Step { action, file, .. } = step;
                let contents = match action {
                    Action::Unchanged | Action::Kept => return None,
                    Action::Remove => None,
                    Action::Merge => step.merged.as_deref(),
                    Action::Create | Action::Update | Action::Overwrite => Some(&*file.contents),
                };
                let target = root.join(&file.path);
                Some(Change { target, contents })
            })
            .collect();
        commit(root, &changes)?;
    }
    for Step { action, file, .. } in actions {
        let verb = if dry_run && *action != Action::Unchanged {
            format!("would {}", action.label())
        } else {
            action.label().to_string()
        };
        match action {
            Action::Unchanged => {}
            Action::Kept => writeln!(
                out,
                "{verb:>16} {} (changed by you: opsdk leaves its sections as they are)",
                file.path.display()
            )?,
            Action::Merge => writeln!(
                out,
                "{verb:>16} {} (your changes kept, opsdk's merged in)",
                file.path.display()
            )?,
            _ => writeln!(out, "{verb:>16} {}", file.path.display())?,
        }
    }
    Ok(())
}
