//! The names a new API takes, checked against the project's: its CRD names, its Rust type
//! and module names, its per-kind files.

use anyhow::{Result, bail};

use crate::context::{ProjectContext, ResourceContext};
use crate::project_file::{Project, Resource};
use crate::validate;

use super::group_or_domain;

/// A CRD's names (singular, plural and short name) may not be another's of its group: the
/// API server would not serve the later one (NamesAccepted=False).
pub(super) fn check_names_in_group(
    project: &Project,
    new: &Resource,
    api: &dyn Fn(&Resource) -> String,
) -> Result<()> {
    let group = group_or_domain(project, new);
    let theirs = (project.resources.iter())
        .filter(|r| !r.same_kind(new) && group_or_domain(project, r) == group);
    for other in theirs {
        let taken = names(other);
        for (what, name) in [
            ("plural", &new.plural),
            ("singular", &new.kind.to_lowercase()),
        ] {
            if taken.contains(name) {
                // The singular is the kind's name in lowercase: no flag but the kind changes it.
                let fix = match what {
                    "plural" => "pass a distinct --plural, or choose another --kind or --group",
                    _ => "choose another --kind or --group (the singular is the kind in lowercase)",
                };
                bail!(
                    "the {what} name {name:?} of kind {} is already a name of {} (its singular, plural or short name), and the API server serves only one of two CRDs sharing a name\nhelp: {fix}",
                    new.kind,
                    api(other)
                );
            }
        }
    }
    Ok(())
}

/// The names kubectl and the API server know a kind by.
fn names(r: &Resource) -> Vec<String> {
    let mut names = vec![r.kind.to_lowercase(), r.plural.clone()];
    if !r.short_name.is_empty() {
        names.push(r.short_name.clone());
    }
    names
}

/// The file `make manifests` writes the kind's CRD to, `<group>_<plural>.yaml`, fits a file
/// name (the files opsdk writes itself are checked as it writes them).
pub(super) fn check_crd_file_name(new: &ResourceContext) -> Result<()> {
    let file = new.crd_file();
    if file.len() > validate::FILE_NAME_BYTES {
        bail!(
            "make manifests would write the CRD of {} to config/crd/bases/{file}, a name of {} bytes, past the {} a file name may have\nhelp: pass a shorter --plural or --group (or init the project with a shorter --domain)",
            new.kind,
            file.len(),
            validate::FILE_NAME_BYTES
        );
    }
    Ok(())
}

/// Kinds in one version module are re-exported together: their Rust names must not clash.
pub(super) fn check_rust_names(ctx: &ProjectContext, new: &ResourceContext) -> Result<()> {
    let names = |r: &ResourceContext| {
        [
            r.type_name.clone(),
            format!("{}Spec", r.kind),
            format!("{}Status", r.kind),
        ]
    };
    let new_names = names(new);
    for other in ctx
        .resources
        .iter()
        .filter(|r| r.api_rust_path == new.api_rust_path && r.kind != new.kind)
    {
        if let Some(clash) = names(other).iter().find(|n| new_names.contains(n)) {
            bail!(
                "kind {} would define the Rust type {clash}, which kind {} in {} already defines\nhelp: choose another --kind, or put it in another --group or --version",
                new.kind,
                other.kind,
                new.api_version
            );
        }
    }
    check_controller_modules(ctx, new)?;
    // Per-kind files are named by a flat stem: `navy` `Frigate` and `NavyFrigate` share one.
    if let Some(other) = (ctx.resources.iter())
        .find(|r| r.file_stem == new.file_stem && (r.group != new.group || r.kind != new.kind))
    {
        bail!(
            "kind {} would share its files (tests/{stem}.rs, config/rbac/{stem}_*_role.yaml) with kind {} of {}\nhelp: choose another --kind or --group",
            new.kind,
            other.kind,
            other.api_version,
            stem = new.file_stem
        );
    }
    if let Some(other) = (ctx.resources.iter()).find(|r| r.webhook_test_stem() == new.file_stem) {
        bail!(
            "kind {} would put its envtest suite in tests/{}.rs, where the webhooks of {} {} go\nhelp: choose another --kind, or put it in another --group",
            new.kind,
            new.file_stem,
            other.api_version,
            other.kind
        );
    }
    if RESERVED_TEST_STEMS.contains(&new.file_stem.as_str()) {
        bail!(
            "kind {} would put its envtest suite in tests/{}.rs, where the generated tests keep their own module\nhelp: choose another --kind, or put it in another --group",
            new.kind,
            new.file_stem
        );
    }
    Ok(())
}

/// What tests/ holds for every kind: the envtest helpers, the conversion webhook's suite and
/// server, the webhook certificates' suite, the webhook server's memory budget test.
const RESERVED_TEST_STEMS: [&str; 5] = [
    "envtest",
    "conversion",
    "conversion_server",
    "webhook_certs",
    "webhook_intake",
];

/// src/controller holds a module per group (its kinds inside), the domain group's kinds at
/// the top, and opsdk's own modules: no two may share a name.
fn check_controller_modules(ctx: &ProjectContext, new: &ResourceContext) -> Result<()> {
    let top = ctx.controller_modules.iter().flat_map(|group| {
        if group.module.is_empty() {
            group.modules.clone()
        } else {
            vec![group.module.clone()]
        }
    });
    let mut seen = std::collections::BTreeSet::new();
    for module in top {
        let taken = if let Some(file) = validate::generated_module_file(&module) {
            format!("a name opsdk's own code takes ({file})")
        } else if !seen.insert(module.clone()) {
            "which a group or another kind already has".to_string()
        } else {
            continue;
        };
        // The new kind's group, not the kind, needs the module: another kind would not help.
        if !new.group.is_empty() && crate::naming::module_ident(&new.group) == module {
            bail!(
                "group {} of kind {} would need the module `{module}` in src/controller, {taken}\nhelp: put the kind in another --group",
                new.group,
                new.kind
            );
        }
        bail!(
            "kind {} would need the module `{module}` in src/controller, {taken}\nhelp: choose another --kind, or put it in another --group",
            new.kind
        );
    }
    Ok(())
}
