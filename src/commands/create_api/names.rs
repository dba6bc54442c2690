//! The names a new API takes, checked against the project's: its short name, its Rust type
//! and module names, its per-kind files.

use anyhow::{Result, bail};

use crate::context::{ProjectContext, ResourceContext};
use crate::naming::BuiltinType;
use crate::project_file::Project;
use crate::validate;

/// A short name for kubectl: the initials of a multi-word kind (`DatabaseCluster` -> `dc`),
/// else the first three letters (`Application` -> `app`); none when another kind has it or
/// kubectl knows it for one of Kubernetes' own resources (`ConfigMap` -> not `cm`, `Podcast`
/// -> not `pod`), where `kubectl get` would be ambiguous.
pub(super) fn short_name(project: &Project, kind: &str) -> String {
    let initials: String = kind.chars().filter(char::is_ascii_uppercase).collect();
    let candidate = if initials.len() >= 2 {
        initials.to_lowercase()
    } else {
        kind.to_lowercase().chars().take(3).collect()
    };
    let taken = project
        .resources
        .iter()
        .any(|r| r.short_name == candidate || r.plural == candidate)
        || BuiltinType::names_a_resource(&candidate);
    if taken || candidate == kind.to_lowercase() {
        String::new()
    } else {
        candidate
    }
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
    Ok(())
}

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
        let taken = if validate::GENERATED_MODULES.contains(&module.as_str()) {
            "the generated code already has"
        } else if !seen.insert(module.clone()) {
            "a group or another kind already has"
        } else {
            continue;
        };
        bail!(
            "kind {} would need the module `{module}` in src/controller, which {taken}\nhelp: choose another --kind, or put it in another --group",
            new.kind
        );
    }
    Ok(())
}
