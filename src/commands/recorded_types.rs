//! PROJECT against the code it describes: a kind's group and plural are in PROJECT and in the
//! `#[kube(...)]` attribute of its types file, the project's name in Cargo.toml. A hand edit of
//! one of them (a plural or a domain changed in PROJECT) would make every later command write
//! kustomizations and roles for names the CRD does not have; it is refused before any command
//! uses PROJECT. A short name is the types file's alone: the user adds, changes or drops it
//! there (kubebuilder's `+kubebuilder:resource:shortName` marker), and it is read from there.

use std::path::Path;

use anyhow::{Result, bail};

use crate::context::ResourceContext;
use crate::project_file::{self, Project};

/// `PROJECT` from `root`, refused when a kind's types file names another group or plural, with
/// each kind's short name as its types file declares it.
pub(super) fn load(root: &Path) -> Result<Project> {
    let mut project = Project::load(root)?;
    check_package_name(root, &project)?;
    for index in 0..project.resources.len() {
        let resource = &project.resources[index];
        if resource.external || resource.builtin().is_some() {
            continue;
        }
        let ctx = ResourceContext::new(&project, resource);
        let path = format!("src/api/{}.rs", ctx.api_file);
        let Ok(types) = std::fs::read_to_string(root.join(&path)) else {
            continue;
        };
        let fields = [("group", &ctx.api_group), ("plural", &ctx.plural)];
        for (field, recorded) in fields {
            let Some(declared) = attribute(&types, field) else {
                continue;
            };
            if declared != recorded {
                bail!(
                    "{path} declares {field} {declared:?} for {} {}, but {} records {recorded:?}\nhelp: make them agree again by undoing the hand edit (to rename a kind's {field}, delete the API and create it again)",
                    ctx.api_version,
                    resource.kind,
                    project_file::FILE_NAME
                );
            }
        }
        project.resources[index].short_name = attribute(&types, "shortname")
            .unwrap_or_default()
            .to_string();
    }
    Ok(project)
}

/// Cargo.toml's package is the crate the tests and binaries `use`, and its name is what the
/// manifests label the manager's Pods with: PROJECT's `projectName` must stay that name.
fn check_package_name(root: &Path, project: &Project) -> Result<()> {
    let Ok(manifest) = std::fs::read_to_string(root.join("Cargo.toml")) else {
        return Ok(());
    };
    let package = manifest
        .split("\n[")
        .find(|s| s.trim_start_matches('[').starts_with("package]"));
    let name = package.and_then(|p| {
        p.lines().find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("name")?
                .trim_start()
                .strip_prefix('=')?;
            value.trim().strip_prefix('"')?.strip_suffix('"')
        })
    });
    match name {
        Some(name) if name != project.project_name => bail!(
            "Cargo.toml names the package {name:?}, but {} records projectName {:?}\nhelp: make them agree again (the crate name is in every test's `use` and every manifest's labels; a renamed project is a new `opsdk init`)",
            project_file::FILE_NAME,
            project.project_name
        ),
        _ => Ok(()),
    }
}

/// The value of `field = "..."` in the first `#[kube(` attribute of `types`.
fn attribute<'t>(types: &'t str, field: &str) -> Option<&'t str> {
    let start = types.find("#[kube(")?;
    let end = start + types[start..].find(")]")?;
    types[start..end].lines().find_map(|line| {
        let value = line
            .trim()
            .strip_prefix(field)?
            .trim_start()
            .strip_prefix('=')?;
        value
            .trim()
            .trim_end_matches(',')
            .strip_prefix('"')?
            .strip_suffix('"')
    })
}

#[cfg(test)]
mod tests {
    use super::attribute;

    #[test]
    fn reads_the_kube_attribute_only() {
        let types = "// plural = \"no\"\n#[kube(\n    group = \"minetto.dev\",\n    plural = \"applications\",\n)]\npub struct ApplicationSpec {}\n";
        assert_eq!(attribute(types, "group"), Some("minetto.dev"));
        assert_eq!(attribute(types, "plural"), Some("applications"));
        assert_eq!(attribute(types, "shortname"), None);
    }
}
