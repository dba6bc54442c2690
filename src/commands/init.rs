//! `opsdk init`: a new operator project in the current directory.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::InitArgs;
use crate::context::ProjectContext;
use crate::plan::{Plan, PlannedFile, Policy};
use crate::plugins;
use crate::project_file::{self, LAYOUT, Plugins, Project};
use crate::render::{Scope, render};
use crate::validate;
use crate::writer::Force;

pub fn run(root: &Path, args: &InitArgs) -> Result<()> {
    let project = project_from_args(root, args)?;
    let ctx = ProjectContext::new(&project);
    let mut plan = render(Scope::Init, &ctx, None)?;
    plan.extend(render(Scope::Generated, &ctx, None)?);
    plan.add(PlannedFile {
        path: project_file::FILE_NAME.into(),
        contents: project.to_yaml()?,
        policy: Policy::Create,
        verbatim: true,
        previous: None,
    });
    keep_repository_files(root, ctx.license_spdx, &mut plan);
    super::finish(
        root,
        plan,
        Force::Unavailable,
        args.dry_run,
        if project.plugins.helm.is_some() {
            "Project initialized, with a Helm chart in dist/chart. Next: define an API with\n  opsdk create api --version v1alpha1 --kind <Kind>"
        } else {
            "Project initialized. Next: define an API with\n  opsdk create api --version v1alpha1 --kind <Kind>"
        },
    )
}

/// The Cargo.toml of a workspace above `root` that neither lists `root` in `members` nor in
/// `exclude` (a path or a `dir/*` pattern, as Cargo matches them): there, the project's own
/// Cargo.toml would make every cargo command fail with "believes it's in a workspace when
/// it's not".
fn unlisted_in_workspace(root: &Path) -> Option<std::path::PathBuf> {
    let root = root.canonicalize().ok()?;
    let (dir, manifest) = root.ancestors().skip(1).find_map(|dir| {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let workspace = manifest.lines().any(|l| l.trim() == "[workspace]");
        workspace.then(|| (dir.to_path_buf(), manifest))
    })?;
    let relative = root
        .strip_prefix(&dir)
        .ok()?
        .to_string_lossy()
        .replace('\\', "/");
    // The quoted strings of the [workspace] table: its members and exclude patterns.
    let table = manifest
        .lines()
        .skip_while(|l| l.trim() != "[workspace]")
        .skip(1);
    let table = table.take_while(|l| !l.trim_start().starts_with('['));
    let listed = table
        .flat_map(|line| {
            line.split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .any(|pattern| {
            let pattern = pattern.trim_end_matches('/');
            pattern == relative
                || (pattern == "*" && !relative.contains('/'))
                || pattern.strip_suffix("/*").is_some_and(|parent| {
                    relative.rsplit_once('/').is_some_and(|(p, _)| p == parent)
                })
        });
    (!listed).then(|| dir.join("Cargo.toml"))
}

/// The files a new repository often starts with (GitHub offers all three), kept as they are:
/// `init` writes the rest around them, as kubebuilder's init does in such a directory.
const REPOSITORY_FILES: [(&str, &str); 3] = [
    (
        "README.md",
        "opsdk's would describe the project and its make targets",
    ),
    ("LICENSE", ""),
    (".gitignore", "make sure it ignores /target"),
];

/// Leaves out of `plan` the `REPOSITORY_FILES` already in `root`, with a note for each.
fn keep_repository_files(root: &Path, license_spdx: &str, plan: &mut Plan) {
    for (file, advice) in REPOSITORY_FILES {
        if !root.join(file).is_file() || !plan.files.iter().any(|f| f.path == Path::new(file)) {
            continue;
        }
        plan.files.retain(|f| f.path != Path::new(file));
        let advice = match file {
            "LICENSE" => format!("Cargo.toml's license is {license_spdx:?}: make it match yours"),
            _ => advice.to_string(),
        };
        plan.notes
            .push(format!("note: kept your {file} ({advice})"));
    }
}

fn project_from_args(root: &Path, args: &InitArgs) -> Result<Project> {
    if root.join(project_file::FILE_NAME).exists() {
        bail!(
            "{} already holds an opsdk project (found {})\nhelp: run `opsdk create api` to add an API, or init in an empty directory",
            root.display(),
            project_file::FILE_NAME
        );
    }
    // A project inside another would be a second Cargo package and Makefile in its tree, which
    // the outer project's commands and builds would trip over.
    if let Some(outer) = root
        .ancestors()
        .skip(1)
        .find(|dir| project_file::is_opsdk_project(dir))
    {
        bail!(
            "{} is inside the opsdk project {} (found its {})\nhelp: run `opsdk create api` there to add an API, or init outside it",
            root.display(),
            outer.display(),
            project_file::FILE_NAME
        );
    }
    if let Some(workspace) = unlisted_in_workspace(root) {
        bail!(
            "{} is inside the Cargo workspace of {}, which does not list it: Cargo would refuse to build the project\nhelp: add its path to `members` (or `exclude`) under [workspace] in that Cargo.toml, or init outside the workspace",
            root.display(),
            workspace.display()
        );
    }
    validate::domain(&args.domain)?;
    let repo = args.repo.clone().unwrap_or_default();
    if !repo.is_empty() {
        validate::repo(&repo)?;
    }
    let (name, source) = match (
        &args.project_name,
        repo.rsplit('/').next().filter(|s| !s.is_empty()),
    ) {
        (Some(name), _) => (name.clone(), "--project-name"),
        (None, Some(last)) => (last.to_string(), "--repo"),
        (None, None) => {
            let dir = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (dir, "the directory name")
        }
    };
    validate::project_name(&name, source)?;
    validate::owner(&args.owner)?;
    Ok(Project {
        layout: LAYOUT.to_string(),
        domain: args.domain.clone(),
        project_name: name,
        repo,
        owner: args.owner.clone(),
        license: args.license,
        namespaced: args.namespaced,
        plugins: plugins::enable(&Plugins::default(), &args.plugins)?,
        resources: Vec::new(),
    })
}
