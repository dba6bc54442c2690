//! `opsdk init`: a new operator project in the current directory.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::InitArgs;
use crate::context::ProjectContext;
use crate::plan::{PlannedFile, Policy};
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
