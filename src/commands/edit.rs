//! `opsdk edit`: changes a project-wide setting (`--namespaced`, `--license`, `--owner`,
//! `--plugins`; `--multigroup` is accepted and changes nothing) of an existing project, through the same pipeline as the other commands:
//! PROJECT with the new setting -> Context -> render -> Plan -> check -> write.
//!
//! What a setting changes follows from the templates, never from a list kept here: every
//! file of the user's that renders differently with the new setting than with the old one is
//! rewritten, but only while it still holds what opsdk wrote for the old setting (render and
//! compare, as `delete api` does); a file the user changed is named and the command refuses
//! unless `--force`. opsdk's own files are re-rendered from the new PROJECT. A further
//! setting needs only its flag and its line in `apply`.

use std::path::Path;

use crate::validate;
use anyhow::{Result, bail};

use super::create_api::group_or_domain;
use crate::cli::EditArgs;
use crate::context::{ProjectContext, ResourceContext};
use crate::plan::{Plan, PlannedFile, Policy};
use crate::plugins;
use crate::project_file::Project;
use crate::render::{Scope, render};
use crate::writer::Force;

pub fn run(root: &Path, args: &EditArgs) -> Result<()> {
    let old = super::recorded_types::load(root)?;
    let project = apply(&old, args)?;
    check_scope(&project)?;

    let (old_ctx, ctx) = (ProjectContext::new(&old), ProjectContext::new(&project));
    let mut plan = Plan::default();
    replace_changed(
        &mut plan,
        render(Scope::Init, &old_ctx, None)?,
        render(Scope::Init, &ctx, None)?,
    );
    for resource in &project.resources {
        let before = ResourceContext::new(&old, resource);
        let after = ResourceContext::new(&project, resource);
        replace_changed(
            &mut plan,
            render(Scope::Resource, &old_ctx, Some(&before))?,
            render(Scope::Resource, &ctx, Some(&after))?,
        );
    }
    restore_chart(root, args, &ctx, &mut plan)?;
    super::regenerate(root, &ctx, &project, &mut plan)?;

    if project == old {
        plan.if_nothing_written = Some(if args.multigroup.is_some() {
            "opsdk projects are always multi-group (src/api/<group>/<version>): nothing to change."
        } else {
            "PROJECT already had these settings: nothing to change."
        }.to_string());
    }
    let next = if project == old {
        "PROJECT already had these settings: the files above differed from what opsdk generates and were written again."
    } else if project.plugins.helm.is_some() && old.plugins.helm.is_none() {
        HELM_NEXT
    } else if project.namespaced == old.namespaced {
        "Settings applied."
    } else if project.namespaced {
        "The manager is namespace-scoped: it watches the namespaces in WATCH_NAMESPACE (its own Pod's\nnamespace when deployed; every namespace when unset, as with `make run`). Next:\n  make manifests && cargo test   # config/rbac/role.yaml becomes a Role"
    } else {
        "The manager is cluster-wide again (ClusterRole, ClusterRoleBinding). Next:\n  make manifests && cargo test   # config/rbac/role.yaml becomes a ClusterRole"
    };
    let force = if args.force { Force::On } else { Force::Off };
    super::finish(root, plan, force, args.dry_run, next)
}

/// `--plugins helm` on a project that has the chart: the chart's files that are the user's
/// (values.yaml) come back when missing, and with `--force` as opsdk writes them,
/// as kubebuilder's `edit --plugins=helm/v1-alpha --force` rewrites values.yaml.
fn restore_chart(
    root: &Path,
    args: &EditArgs,
    ctx: &ProjectContext,
    plan: &mut Plan,
) -> Result<()> {
    if args.plugins.is_empty() || !ctx.helm {
        return Ok(());
    }
    for file in render(Scope::Init, ctx, None)?.files {
        let users = file.path.starts_with("dist/chart") && file.policy == Policy::Create;
        if users && (args.force || !root.join(&file.path).exists()) {
            plan.add(file);
        }
    }
    Ok(())
}

/// What to do after `--plugins helm`: the chart's CRDs and role come from code.
pub const HELM_NEXT: &str = "Helm chart written to dist/chart (dist/chart/values.yaml is yours). Next:\n  make manifests   # also writes the chart's CRDs and manager role (dist/chart/files)\n  make helm-lint && make helm-deploy IMG=<registry>/<image>:<tag>";

/// PROJECT with the settings `args` give; the others keep their values.
fn apply(old: &Project, args: &EditArgs) -> Result<Project> {
    let mut project = old.clone();
    let mut given = false;
    if let Some(namespaced) = args.namespaced {
        project.namespaced = namespaced;
        given = true;
    }
    if let Some(license) = args.license {
        project.license = license;
        given = true;
    }
    if let Some(owner) = &args.owner {
        validate::owner(owner)?;
        project.owner = owner.clone();
        given = true;
    }
    if !args.plugins.is_empty() {
        project.plugins = plugins::enable(&project.plugins, &args.plugins)?;
        given = true;
    }
    match args.multigroup {
        Some(true) => given = true,
        Some(false) => bail!(
            "--multigroup=false: opsdk has no single-group layout; every project keeps each group apart (src/api/<group>/<version>)\nhelp: leave --multigroup out; a kind created without --group keeps the domain as its group (src/api/<version>)"
        ),
        None => {}
    }
    if !given {
        bail!(
            "nothing to edit: no setting given\nhelp: pass --namespaced[=false], --license, --owner, --plugins or --multigroup"
        );
    }
    Ok(project)
}

/// A namespace-scoped manager can neither watch nor be granted cluster-scoped kinds, and its
/// webhooks, called only in its own namespace, may not be on Kubernetes' kinds there.
fn check_scope(project: &Project) -> Result<()> {
    let on_kubernetes_kinds: Vec<String> = (project.resources.iter())
        .filter(|r| r.builtin().is_some() && r.admission())
        .map(|r| format!("{}/{} {}", r.group, r.version, r.kind))
        .collect();
    if project.namespaced && !on_kubernetes_kinds.is_empty() {
        bail!(
            "--namespaced would call the webhooks on {} only in the manager's own namespace, where, failing closed, they would hold up the manager's own Pods, Secrets and Leases, and the manager with them\nhelp: keep the manager cluster-wide (its webhooks on Kubernetes' kinds skip its namespace and Kubernetes' own), or delete those webhooks first (`opsdk delete webhook --group <group> --version <version> --kind <kind>`)",
            on_kubernetes_kinds.join(", ")
        );
    }
    let cluster = project.cluster_scoped();
    if !project.namespaced || cluster.is_empty() {
        return Ok(());
    }
    let apis: Vec<String> = cluster
        .iter()
        .map(|r| format!("{}/{} {}", group_or_domain(project, r), r.version, r.kind))
        .collect();
    // In an order `delete api` takes: each kind's storage version after its others.
    let mut in_order = cluster.clone();
    in_order.sort_by_key(|r| project.storage_of(r) == Some(*r));
    let deletes: Vec<String> = in_order
        .iter()
        .map(|r| {
            let group = if r.group.is_empty() {
                String::new()
            } else {
                format!("--group {} ", r.group)
            };
            format!(
                "opsdk delete api {group}--version {} --kind {}",
                r.version, r.kind
            )
        })
        .collect();
    bail!(
        "--namespaced would make the manager namespace-scoped, but the project has cluster-scoped kinds ({}): a manager that watches only some namespaces and holds no ClusterRole can neither watch nor be granted them\nhelp: keep the manager cluster-wide, or delete those kinds first ({})",
        apis.join(", "),
        deletes.join("; ")
    )
}

/// Adds to `plan` the user's files that render differently after the change: rewritten
/// while unchanged since opsdk wrote them, new ones created, ones that no longer render
/// removed while unchanged.
fn replace_changed(plan: &mut Plan, before: Plan, after: Plan) {
    // Rust files are compared as rendered, not as rustfmt wrote them: no Rust file of the
    // user's depends on a project setting yet. One that does must be formatted here first.
    for file in &after.files {
        match before.files.iter().find(|f| f.path == file.path) {
            Some(old) if old.contents == file.contents => {}
            Some(old) => plan.add(PlannedFile {
                // README.md only gains a section: a changed one is kept, not refused.
                policy: if file.path.as_os_str() == super::README {
                    Policy::Refresh
                } else {
                    Policy::Replace
                },
                previous: Some(old.contents.clone()),
                ..file.clone()
            }),
            None => plan.add(file.clone()),
        }
    }
    for old in &before.files {
        if !after.files.iter().any(|f| f.path == old.path) {
            plan.remove(
                old.path.clone(),
                old.contents.clone(),
                Policy::Remove,
                old.verbatim,
            );
        }
    }
}
