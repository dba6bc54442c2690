//! One module per command; each validates, plans in memory, checks, then writes.

pub mod create_api;
pub mod delete_api;
pub mod edit;
mod foreign_api;
pub mod init;

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::format;
use crate::plan::Plan;
use crate::writer::{self, Force};

/// Formats the plan's Rust files, checks the plan and writes it (or prints it for
/// `--dry-run`), then prints `next` steps.
fn finish(root: &Path, mut plan: Plan, force: Force, dry_run: bool, next: &str) -> Result<()> {
    let formatted = format::rust_files(root, &mut plan)?;
    let actions = writer::check(root, &plan, force)?;
    let mut out = std::io::stdout().lock();
    if !formatted {
        writeln!(
            out,
            "note: rustfmt not found; run `cargo fmt` in the project"
        )?;
    }
    writer::apply(root, &actions, dry_run, &mut out)?;
    if dry_run {
        writeln!(out, "dry run: nothing was written")?;
    } else {
        writeln!(out, "\n{next}")?;
    }
    Ok(())
}
