//! One module per command; each validates, plans in memory, checks, then writes.

mod conversion;
pub mod create_api;
pub mod create_webhook;
mod default_kustomization;
pub mod delete_api;
pub mod delete_webhook;
pub mod edit;
mod foreign_api;
pub mod init;
mod rbac_kustomization;
mod recorded_types;
mod webhook_outputs;

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::context::ProjectContext;
use crate::format;
use crate::plan::{Plan, PlannedFile, Policy};
use crate::project_file::{self, Project};
use crate::render::{Scope, render};
use crate::writer::{self, Action, Force};

/// Adds to `plan` opsdk's own files rendered from `project` (`ctx`), removing those that now
/// render to nothing, and PROJECT itself.
fn regenerate(root: &Path, ctx: &ProjectContext, project: &Project, plan: &mut Plan) -> Result<()> {
    check_webhook_interface(root, ctx)?;
    let generated = render(Scope::Generated, ctx, None)?;
    for path in &generated.empty {
        plan.remove(path.clone(), String::new(), Policy::RemoveGenerated, true);
    }
    plan.extend(generated);
    merge_base_of_lists(root, plan)?;
    rbac_kustomization::keep_commented_roles(root, plan);
    plan.add(PlannedFile {
        path: project_file::FILE_NAME.into(),
        contents: project.to_yaml()?,
        policy: Policy::Regenerate,
        verbatim: true,
        previous: None,
    });
    Ok(())
}

/// opsdk's kustomizations that kubebuilder scaffolds as the user's own, where teams add
/// entries (a patch, a role, a sample of their own).
const LISTS_USERS_EXTEND: [&str; 4] = [
    "config/crd/kustomization.yaml",
    "config/rbac/kustomization.yaml",
    "config/samples/kustomization.yaml",
    "config/webhook/kustomization.yaml",
];

/// Gives each of `LISTS_USERS_EXTEND` in `plan` what opsdk wrote for the PROJECT on disk as
/// `previous`, so that the writer keeps the entries a user added.
fn merge_base_of_lists(root: &Path, plan: &mut Plan) -> Result<()> {
    if !root.join(project_file::FILE_NAME).exists() {
        return Ok(());
    }
    let before = render(
        Scope::Generated,
        &ProjectContext::new(&Project::load(root)?),
        None,
    )?;
    for file in (plan.files.iter_mut())
        .filter(|f| LISTS_USERS_EXTEND.iter().any(|l| f.path == Path::new(l)))
    {
        file.previous = (before.files.iter())
            .find(|b| b.path == file.path)
            .map(|b| b.contents.clone());
        add_missing_marker(root, file);
    }
    Ok(())
}

/// The line that ends each list, above which opsdk adds its entries.
const SCAFFOLD_MARKER: &str = "# +opsdk:scaffold:";

/// A list written before it ended with a scaffold marker gets one after its last entry, so that
/// fields the user added below it stay fields: the merge is made here with the marker in the
/// user's copy, and the writer then finds that copy unchanged and writes the result.
fn add_missing_marker(root: &Path, file: &mut PlannedFile) {
    let Ok(ours) = std::fs::read_to_string(root.join(&file.path)) else {
        return;
    };
    let Some(base) = file.previous.as_deref() else {
        return;
    };
    let lines: Vec<&str> = base.split_inclusive('\n').collect();
    let Some(at) = lines.iter().position(|l| l.starts_with(SCAFFOLD_MARKER)) else {
        return;
    };
    if ours.contains(SCAFFOLD_MARKER) || at == 0 {
        return;
    }
    // After the last copy of the line the marker follows in what opsdk wrote.
    let Some(after) = ours.rfind(lines[at - 1]).map(|i| i + lines[at - 1].len()) else {
        return;
    };
    let marked = format!("{}{}{}", &ours[..after], lines[at], &ours[after..]);
    if let Ok(merged) = crate::writer::merge::merge(base, &marked, &file.contents, true) {
        file.contents = merged;
        file.previous = Some(ours);
    }
}

/// The webhook runtime is written only into projects with webhooks; a manager that starts
/// its server directly (`src/main.rs` of a project made by an earlier opsdk) would no longer
/// build, so such a project is refused before anything is written. So is a validating
/// webhook's file without `VALIDATE_DELETE`, which the regenerated `webhook::hooks` reads.
fn check_webhook_interface(root: &Path, ctx: &ProjectContext) -> Result<()> {
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap_or_default();
    if main.contains("webhook::serve::serve(") {
        anyhow::bail!(
            "{}: starts the webhook server itself (`webhook::serve::serve`), as projects made by an earlier opsdk do; opsdk now writes that server only into projects with webhooks\nhelp: in src/main.rs, flatten `webhook::Flags` into the manager's flags and start the webhooks with `webhook::run(client, flags, listening, stop)`, as `opsdk init` writes it today",
            root.join("src/main.rs").display()
        );
    }
    for resource in ctx.webhooks.iter().filter(|r| r.webhook.validation) {
        let file = root.join(format!("src/webhook/{}.rs", resource.api_file));
        // Not written yet: this command writes it, with the constant.
        let Ok(hooks) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !hooks.contains("const VALIDATE_DELETE") {
            anyhow::bail!(
                "{}: declares no `VALIDATE_DELETE`, which the validating webhook now reads to know whether the API server sends it deletes (an earlier opsdk sent every delete)\nhelp: add `pub const VALIDATE_DELETE: bool = false;` to it (true keeps deletes validated, but then no {} can be deleted while the manager is down)",
                file.display(),
                resource.kind
            );
        }
    }
    Ok(())
}

/// The user's README, whose sections follow PROJECT (the Helm chart, the webhooks).
const README: &str = "README.md";

/// Adds to `plan` README.md as rendered for `new`, when that differs from what it renders
/// for `old`: rewritten while it holds what opsdk wrote, else kept (`Policy::Refresh`).
fn refresh_readme(old: &Project, new: &Project, plan: &mut Plan) -> Result<()> {
    let readme = |project: &Project| -> Result<Option<PlannedFile>> {
        let rendered = render(Scope::Init, &ProjectContext::new(project), None)?;
        Ok(rendered
            .files
            .into_iter()
            .find(|f| f.path.as_os_str() == README))
    };
    if let (Some(before), Some(after)) = (readme(old)?, readme(new)?)
        && before.contents != after.contents
    {
        plan.add(PlannedFile {
            policy: Policy::Refresh,
            previous: Some(before.contents),
            ..after
        });
    }
    Ok(())
}

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
    for note in &plan.notes {
        eprintln!("{note}");
    }
    let writes =
        (actions.iter()).any(|step| !matches!(step.action, Action::Unchanged | Action::Kept));
    let next = match &plan.if_nothing_written {
        Some(said) if !writes => said,
        _ => next,
    };
    if dry_run {
        writeln!(out, "dry run: nothing was written")?;
    } else {
        writeln!(out, "\n{next}")?;
    }
    Ok(())
}
