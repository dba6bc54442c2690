//! `opsdk delete api`: removes one API version from the project; with a kind's last version,
//! the kind itself.
//!
//! The files to remove follow from the per-resource templates, never from a list kept here:
//! what `create api` renders for the resource, minus the paths a remaining version of the kind
//! renders too (its roles, controller and tests). Each is removed only while it still holds
//! what the template renders for it today; a file the user changed is kept and named, and the
//! command refuses unless `--force`. A kind's controller outlives the version that held it: it
//! moves, with its suite, to the version etcd stores, rendered for it and merged into the
//! user's changes (`Policy::Replace`). Every opsdk file is then re-rendered from PROJECT without
//! the resource, opsdk files nothing needs any more are removed (the rollout module with the
//! last deploy-image kind), and so is the CRD `make manifests` wrote for the kind, which no
//! longer matches the Rust types. The writer checks the whole plan before touching the disk.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::create_api::group_or_domain;
use super::webhook_outputs;
use crate::cli::{ApiArgs, DeleteApiArgs};
use crate::context::{ProjectContext, ResourceContext};
use crate::external_crd::ExternalCrd;
use crate::plan::{Plan, PlannedFile, Policy};
use crate::project_file::{self, Project, Resource};
use crate::render::{Scope, render};
use crate::writer::Force;

/// Where `make manifests` copies the CRDs for the Helm chart (crdgen's fourth argument).
const CHART_CRDS: &str = "dist/chart/files/crds";

pub fn run(root: &Path, args: &DeleteApiArgs) -> Result<()> {
    let old = super::recorded_types::load(root)?;
    let index = find(&old, &args.api)?;
    let resource = old.resources[index].clone();
    let mut project = old.clone();
    project.resources.remove(index);
    // A spoke leaves its hub's list; the hub's conversion goes with its last spoke.
    if let Some(hub) = project
        .resources
        .iter_mut()
        .find(|r| r.same_kind(&resource) && r.webhooks.as_ref().is_some_and(|w| w.conversion))
        && let Some(hooks) = hub.webhooks.as_mut()
    {
        hooks.spoke.retain(|v| *v != resource.version);
        hooks.conversion = !hooks.spoke.is_empty();
        if !hooks.conversion && !hooks.defaulting && !hooks.validation {
            hub.webhooks = None;
        }
    }
    let foreign = resource.external || resource.builtin().is_some();
    let moved_to = match resource.controller && !foreign {
        true => move_controller(&mut project, &resource),
        false => None,
    };
    let remaining: Vec<&Resource> = project
        .resources
        .iter()
        .filter(|r| r.same_kind(&resource))
        .collect();
    check_storage_version(&old, &resource, &remaining)?;

    // The resource's files, rendered as `create api` rendered them (with the project it
    // joined), to compare with what is on disk.
    let old_ctx = ProjectContext::new(&old);
    let resource_ctx = ResourceContext::new(&old, &resource);
    let mut shared: Vec<PathBuf> = Vec::new();
    for sibling in &remaining {
        let sibling_ctx = ResourceContext::new(&old, sibling);
        let files = render(Scope::Resource, &old_ctx, Some(&sibling_ctx))?.files;
        shared.extend(files.into_iter().map(|f| f.path));
    }
    let mut plan = Plan::default();
    // Its webhook files (`create webhook`) go with it; they are per version, never shared.
    let mut own = render(Scope::Resource, &old_ctx, Some(&resource_ctx))?.files;
    if resource.admission() {
        own.extend(render(Scope::Webhook, &old_ctx, Some(&resource_ctx))?.files);
    }
    // A spoke's conversion functions (`create webhook --conversion`) go with it.
    if !resource_ctx.hub.is_empty() && resource_ctx.hub != resource.version {
        own.extend(render(Scope::Conversion, &old_ctx, Some(&resource_ctx))?.files);
    }
    // The controller and its suite, moved: rendered for the version they move to, and written
    // over what opsdk wrote for this one (merged into a file the user changed).
    let moved = match &moved_to {
        Some(target) => {
            let new_ctx = ProjectContext::new(&project);
            let target_ctx = ResourceContext::new(&project, target);
            render(Scope::Resource, &new_ctx, Some(&target_ctx))?.files
        }
        None => Vec::new(),
    };
    let mut before = Plan::default();
    let mut moved_files = Vec::new();
    for file in own {
        match moved.iter().find(|m| m.path == file.path) {
            // A suite the user deleted stays deleted.
            Some(_) if !root.join(&file.path).exists() => {}
            Some(after) if after.contents != file.contents => before.add(file),
            Some(_) => {}
            None if !shared.contains(&file.path) => {
                plan.remove(file.path, file.contents, Policy::Remove, file.verbatim)
            }
            None => {}
        }
    }
    // `previous` is compared with the file on disk, as rustfmt wrote it.
    crate::format::rust_files(root, &mut before)?;
    for file in before.files {
        let after = moved
            .iter()
            .find(|m| m.path == file.path)
            .expect("moved above");
        moved_files.push(file.path.display().to_string());
        plan.add(PlannedFile {
            policy: Policy::Replace,
            previous: Some(file.contents),
            ..after.clone()
        });
    }
    // `make manifests` wrote the kind's CRD with every version; it is stale either way, and
    // `make manifests` writes it again for the versions left.
    let crd = old_ctx
        .crds
        .iter()
        .find(|c| c.crd_name == resource_ctx.crd_name)
        .map(|c| PathBuf::from("config/crd/bases").join(&c.file));
    if let Some(crd) = &crd {
        plan.remove(crd.clone(), String::new(), Policy::RemoveOutput, true);
        // The Helm chart's copy, which the same `make manifests` wrote.
        if old_ctx.helm {
            let copy = Path::new(CHART_CRDS).join(crd.file_name().unwrap());
            plan.remove(copy, String::new(), Policy::RemoveOutput, true);
        }
    }
    let mut kept_copy = None;
    if resource.external {
        let last_version = remaining.is_empty();
        kept_copy = external_files(
            root,
            &resource,
            &resource_ctx,
            last_version,
            args.force,
            &mut plan,
        );
    }

    let new_ctx = ProjectContext::new(&project);
    webhook_outputs::follow(root, &old_ctx, &new_ctx, &mut plan)?;
    super::regenerate(root, &new_ctx, &project, &mut plan)?;
    super::refresh_readme(&old, &project, &mut plan)?;

    let next = if foreign {
        let what = match (resource.controller, resource.admission()) {
            (true, true) => "Controller and webhooks",
            (false, _) => "Webhooks",
            (true, false) => "Controller",
        };
        format!(
            "{what} for {} {} deleted. Next:\n  make manifests && cargo build && cargo test{}",
            resource_ctx.api_version,
            resource.kind,
            kept_copy.unwrap_or_default()
        )
    } else if remaining.is_empty() {
        // Once the manager built without the controller is deployed, nothing removes the
        // finalizer, and deleting the objects or the CRD waits for ever.
        let finalized = if resource.controller {
            format!(
                "\nBefore deploying that build, delete every {kind} while the manager that reconciles them still runs (`kubectl delete {plural} --all --all-namespaces --wait`): each carries the finalizer {finalizer}, which the new manager no longer removes.",
                kind = resource.kind,
                plural = resource.plural,
                finalizer = resource_ctx.finalizer,
            )
        } else {
            String::new()
        };
        format!(
            "API {} {kind} deleted, its last version, and with it the kind. Next:\n  make manifests && cargo build && cargo test{finalized}\nClusters keep CRD {crd_name} until `kubectl delete crd {crd_name}`, which deletes every {kind} in them.",
            resource_ctx.api_version,
            kind = resource.kind,
            crd_name = resource_ctx.crd_name,
        )
    } else {
        let versions: Vec<&str> = remaining.iter().map(|r| r.version.as_str()).collect();
        let controller_gone = match &moved_to {
            Some(target) if !moved_files.is_empty() => format!(
                "\nThe kind's controller moved to {}: {} now use its types; check that they build against them.",
                target.version,
                match moved_files.split_last() {
                    Some((last, [])) => last.clone(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                }
            ),
            _ => String::new(),
        };
        format!(
            "API {} {} deleted; the kind keeps {}. Next: `make manifests` writes {} again, then\n  cargo build && cargo test{controller_gone}",
            resource_ctx.api_version,
            resource.kind,
            versions.join(", "),
            crd.map_or_else(|| "its CRD".to_string(), |c| c.display().to_string()),
        )
    };
    let force = if args.force { Force::On } else { Force::Off };
    super::finish(root, plan, force, args.dry_run, &next)
}

/// Gives `resource`'s controller to the version of its kind that etcd stores once `resource`
/// is gone (kubebuilder keeps one controller per kind, whatever its versions), with the
/// Deployment+Service setting it was made with. Returns that version, or `None` with none left.
fn move_controller(project: &mut Project, resource: &Resource) -> Option<Resource> {
    let storage = project.storage_of(resource)?.version.clone();
    let target =
        (project.resources.iter_mut()).find(|r| r.same_kind(resource) && r.version == storage)?;
    target.controller = true;
    target.deploy_image = resource.deploy_image;
    Some(target.clone())
}

/// Another project's kind: the types kopium made from its CRD (removed while they are what
/// kopium makes from the copy today) and, with the kind's last version and `force`, that copy:
/// it is the user's (they update it when the other project changes its CRD), and nothing
/// tells an edited copy from the one opsdk wrote, so without --force it stays: then a line
/// saying so.
fn external_files(
    root: &Path,
    resource: &Resource,
    resource_ctx: &ResourceContext,
    last_version: bool,
    force: bool,
    plan: &mut Plan,
) -> Option<String> {
    let copy = root.join(&resource.path);
    let crd = ExternalCrd::read(&copy, &resource.group, &resource.version, &resource.kind).ok();
    let types = PathBuf::from(format!("src/api/external/{}.rs", resource_ctx.api_file));
    let (generated, yaml) = crd.map(|c| (c.types, c.yaml)).unwrap_or_default();
    plan.remove(types, generated, Policy::Remove, false);
    if last_version && force {
        plan.remove(resource.path.clone().into(), yaml, Policy::Remove, true);
    }
    (last_version && !force && copy.exists()).then(|| {
        format!(
            "\nKept {}, your copy of the CRD: delete it yourself (`delete api --force` removes it too).",
            resource.path
        )
    })
}

/// The index in PROJECT of the API `args` name, or a refusal listing what exists.
pub(super) fn find(project: &Project, wanted: &ApiArgs) -> Result<usize> {
    if let Some(i) = project.resources.iter().position(|r| {
        r.group == wanted.group && r.kind == wanted.kind && r.version == wanted.version
    }) {
        return Ok(i);
    }
    let api = |r: &Resource| format!("{}/{} {}", group_or_domain(project, r), r.version, r.kind);
    let all: Vec<String> = project.resources.iter().map(api).collect();
    let listed = if all.is_empty() {
        "the project has no APIs yet".to_string()
    } else {
        format!("the project's APIs: {}", all.join(", "))
    };
    let same_kind: Vec<&Resource> = project
        .resources
        .iter()
        .filter(|r| r.kind == wanted.kind)
        .collect();
    if same_kind.is_empty() {
        bail!(
            "no API of kind {:?} in {}\nhelp: {listed}",
            wanted.kind,
            project_file::FILE_NAME
        );
    }
    let in_group: Vec<&&Resource> = same_kind
        .iter()
        .filter(|r| r.group == wanted.group)
        .collect();
    if in_group.is_empty() {
        let groups: Vec<String> = same_kind
            .iter()
            .map(|r| match r.group.as_str() {
                "" => format!("{} (drop --group)", api(r)),
                g => format!("{} (--group {g})", api(r)),
            })
            .collect();
        let group = if wanted.group.is_empty() {
            format!("the domain group {}", project.domain)
        } else {
            format!("group {:?}", wanted.group)
        };
        bail!(
            "kind {} is not in {group}\nhelp: it is {}",
            wanted.kind,
            groups.join(", ")
        );
    }
    let versions: Vec<&str> = in_group.iter().map(|r| r.version.as_str()).collect();
    bail!(
        "kind {} has no version {:?} in {}\nhelp: its versions: {}",
        wanted.kind,
        wanted.version,
        project_file::FILE_NAME,
        versions.join(", ")
    )
}

/// `--group <group> ` for a command naming a kind of `group`, or nothing for the domain's.
pub(super) fn group_flag(group: &str) -> String {
    match group {
        "" => String::new(),
        group => format!("--group {group} "),
    }
}

/// The version etcd stores (the hub of a conversion webhook, else the first version created)
/// goes last: the others convert through it.
fn check_storage_version(
    old: &Project,
    resource: &Resource,
    remaining: &[&Resource],
) -> Result<()> {
    let storage = old.storage_of(resource);
    if remaining.is_empty() || storage != Some(resource) {
        return Ok(());
    }
    let others: Vec<&str> = remaining.iter().map(|r| r.version.as_str()).collect();
    let group = group_flag(&resource.group);
    let commands: Vec<String> = others
        .iter()
        .map(|v| {
            format!(
                "opsdk delete api {group}--version {v} --kind {}",
                resource.kind
            )
        })
        .collect();
    bail!(
        "{} is the storage version of kind {}, which still has {}: objects are stored in it\nhelp: delete the other versions first ({}), then this one",
        resource.version,
        resource.kind,
        others.join(", "),
        commands.join("; ")
    )
}
