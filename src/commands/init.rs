//! `opsdk init`: a new operator project in the current directory.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::InitArgs;
use crate::context::ProjectContext;
use crate::plan::{Plan, PlannedFile, Policy};
use crate::plugins;
use crate::project_file::{self, LAYOUT, License, Plugins, Project};
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

/// The Cargo.toml of a workspace above `root` that lists `root` neither in `members` nor in
/// `exclude`: there, the project's own Cargo.toml would make every cargo command fail with
/// "believes it's in a workspace when it's not". Read as Cargo reads the lists, roughly: a
/// path, a glob (`*` within a component, `**` for any depth), or, for `exclude`, a parent.
fn unlisted_in_workspace(root: &Path) -> Option<std::path::PathBuf> {
    let root = root.canonicalize().ok()?;
    let header = |line: &str| {
        line.split('#')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let (dir, manifest) = root.ancestors().skip(1).find_map(|dir| {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let workspace = manifest.lines().any(|l| header(l) == "[workspace]");
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
        .skip_while(|l| header(l) != "[workspace]")
        .skip(1);
    let table = table.take_while(|l| !l.trim_start().starts_with('['));
    let patterns: Vec<String> = table
        .flat_map(|line| {
            line.split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let listed = patterns.iter().any(|pattern| {
        let pattern = pattern.trim_end_matches('/');
        relative.starts_with(&format!("{pattern}/")) || path_matches(pattern, &relative)
    });
    (!listed).then(|| dir.join("Cargo.toml"))
}

/// Whether `path` matches the glob `pattern`, component by component (`*` within one,
/// `**` for any number).
fn path_matches(pattern: &str, path: &str) -> bool {
    fn components(pattern: &[&str], path: &[&str]) -> bool {
        match (pattern.split_first(), path.split_first()) {
            (None, None) => true,
            (Some((&"**", rest)), _) => {
                components(rest, path) || (!path.is_empty() && components(pattern, &path[1..]))
            }
            (Some((first, rest)), Some((name, names))) => {
                component(first, name) && components(rest, names)
            }
            _ => false,
        }
    }
    fn component(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                name.starts_with(head)
                    && (head.len()..=name.len())
                        .filter(|&i| name.is_char_boundary(i))
                        .any(|i| component(tail, &name[i..]))
            }
        }
    }
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    components(&pattern, &path)
}

/// The files a new repository often starts with (GitHub offers all three), kept as they are:
/// `init` writes the rest around them, as kubebuilder's init does in such a directory.
const REPOSITORY_FILES: [(&str, &str); 3] = [
    (
        "README.md",
        "opsdk's would describe the project and its make targets",
    ),
    ("LICENSE", ""),
    (
        ".gitignore",
        "make sure it ignores /target, /dist/* and /config/deploy, and not Cargo.lock",
    ),
];

/// Leaves out of `plan` the `REPOSITORY_FILES` already in `root`, with a note for each.
fn keep_repository_files(root: &Path, license_spdx: &str, plan: &mut Plan) {
    for (file, advice) in REPOSITORY_FILES {
        // LICENSE renders to nothing for `--license none` (or a kept one opsdk does not know):
        // kept all the same, with its note.
        let planned = plan.files.iter().any(|f| f.path == Path::new(file));
        if !root.join(file).is_file() || !(planned || file == "LICENSE") {
            continue;
        }
        plan.files.retain(|f| f.path != Path::new(file));
        let advice = match file {
            "LICENSE" if license_spdx.is_empty() => {
                "Cargo.toml names no license: add yours as `license` there".to_string()
            }
            "LICENSE" => format!("Cargo.toml's license is {license_spdx:?}: make it match yours"),
            _ => advice.to_string(),
        };
        plan.notes
            .push(format!("note: kept your {file} ({advice})"));
    }
}

/// The license of a LICENSE file already in `root` (as GitHub writes them): the project then
/// says so in Cargo.toml, or, for one opsdk does not know, names none rather than a wrong one.
fn license_in(root: &Path) -> Option<License> {
    let bytes = std::fs::read(root.join("LICENSE")).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let head: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(2)
        .collect();
    match head.as_slice() {
        ["MIT License", ..] => Some(License::Mit),
        ["Apache License", second, ..] if second.starts_with("Version 2.0") => {
            Some(License::Apache2)
        }
        _ => Some(License::None),
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
            "{} is inside the Cargo workspace of {}, which does not list it: Cargo would refuse to build the project\nhelp: add its path to `exclude` under [workspace] in that Cargo.toml (the project then builds on its own, with its own Cargo.lock), or to `members`, or init outside the workspace",
            root.display(),
            workspace.display()
        );
    }
    validate::domain(&args.domain)?;
    let repo = match args.repo.as_deref() {
        None | Some("") => String::new(),
        Some(given) => validate::repo(given)?,
    };
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
    validate::new_project_name(&name, source)?;
    validate::owner(&args.owner)?;
    Ok(Project {
        layout: LAYOUT.to_string(),
        domain: args.domain.clone(),
        project_name: name,
        repo,
        owner: args.owner.clone(),
        license: args
            .license
            .or_else(|| license_in(root))
            .unwrap_or(License::Apache2),
        namespaced: args.namespaced,
        plugins: plugins::enable(&Plugins::default(), &args.plugins)?,
        resources: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::path_matches;

    #[test]
    fn workspace_patterns_match_as_cargo_reads_them() {
        assert!(path_matches("operator", "operator"));
        assert!(path_matches("crates/*", "crates/op"));
        assert!(path_matches("op-*", "op-one"));
        assert!(path_matches("**", "a/b/c"));
        assert!(path_matches("a/**/op", "a/b/c/op"));
        assert!(!path_matches("crates/*", "crates/op/inner"));
        assert!(!path_matches("op-*", "other"));
        assert!(!path_matches("lib", "operator"));
    }
}
