//! `opsdk delete webhook`: removes webhooks of one API version, the inverse of `create
//! webhook`. With no flag, every webhook of the version goes; with flags, the ones named.
//!
//! PROJECT stops recording them, so opsdk's registry and `make manifests` leave them out. The
//! kind's webhook file and its suite go with the version's last admission webhook (the file
//! holds both functions); the spokes' conversion files go with the hub's conversion. As with
//! `delete api`, a file is removed only while it holds what opsdk wrote; one the user changed
//! is named, and the command refuses unless `--force`.

use std::path::Path;

use anyhow::{Result, bail};

use super::delete_api::{find, group_flag};
use super::webhook_outputs;
use crate::cli::DeleteWebhookArgs;
use crate::context::{ProjectContext, ResourceContext};
use crate::plan::{Plan, Policy};
use crate::project_file::{Project, Resource, Webhooks};
use crate::render::{Scope, render};
use crate::writer::Force;

pub fn run(root: &Path, args: &DeleteWebhookArgs) -> Result<()> {
    let old = super::recorded_types::load(root)?;
    let index = find(&old, &args.api)?;
    let resource = old.resources[index].clone();
    let api = ResourceContext::new(&old, &resource).api_version;
    let before = resource.webhooks.clone().unwrap_or_default();
    let after = remaining(&old, &resource, &before, args)?;
    let storage_moved = if after.conversion != before.conversion {
        check_storage_version(&old, &resource, args.force)?
    } else {
        None
    };

    let mut project = old.clone();
    let any_left = after.defaulting || after.validation || after.conversion;
    project.resources[index].webhooks = any_left.then_some(after.clone());
    // One of Kubernetes' kinds recorded only for its webhooks leaves PROJECT with them.
    if !any_left && !resource.controller && resource.builtin().is_some() {
        project.resources.remove(index);
    }
    let old_ctx = ProjectContext::new(&old);
    let new_ctx = ProjectContext::new(&project);
    let mut plan = Plan::default();
    plan.notes.extend(storage_moved);
    if resource.admission() && !(after.defaulting || after.validation) {
        let files = render(
            Scope::Webhook,
            &old_ctx,
            Some(&ResourceContext::new(&old, &resource)),
        )?;
        for file in files.files {
            plan.remove(file.path, file.contents, Policy::Remove, file.verbatim);
        }
    }
    let converts_no_more = before.conversion && !after.conversion;
    if converts_no_more {
        for spoke in (old.resources.iter())
            .filter(|r| r.same_kind(&resource) && before.spoke.contains(&r.version))
        {
            let spoke_ctx = ResourceContext::new(&old, spoke);
            for file in render(Scope::Conversion, &old_ctx, Some(&spoke_ctx))?.files {
                plan.remove(file.path, file.contents, Policy::Remove, file.verbatim);
            }
        }
    }
    webhook_outputs::follow(root, &old_ctx, &new_ctx, &mut plan)?;
    super::regenerate(root, &new_ctx, &project, &mut plan)?;
    super::refresh_readme(&old, &project, &mut plan)?;

    let gone: Vec<&str> = [
        (before.defaulting && !after.defaulting, "defaulting"),
        (before.validation && !after.validation, "validating"),
        (before.conversion && !after.conversion, "conversion"),
    ]
    .into_iter()
    .filter_map(|(gone, what)| gone.then_some(what))
    .collect();
    let mut next = format!(
        "The {} webhook{} of {api} {} deleted. Next:\n  make manifests && cargo build && cargo test",
        gone.join(" and "),
        if gone.len() > 1 { "s" } else { "" },
        resource.kind
    );
    if converts_no_more {
        next.push_str(&format!(
            "\nThe CRD no longer converts: the API server serves every version of {} as stored, with only apiVersion changed, so their schemas must agree.",
            resource.kind
        ));
    }
    let force = if args.force { Force::On } else { Force::Off };
    super::finish(root, plan, force, args.dry_run, &next)
}

/// The webhooks `resource` keeps once those `args` name (every one, when it names none) are
/// gone, or a refusal when it names one the version does not have.
fn remaining(
    project: &Project,
    resource: &Resource,
    before: &Webhooks,
    args: &DeleteWebhookArgs,
) -> Result<Webhooks> {
    let api = ResourceContext::new(project, resource).api_version;
    let hub = project
        .hub_of(resource)
        .filter(|hub| hub.version != resource.version);
    let to_hub = |hub: &Resource| {
        format!(
            "opsdk delete webhook {}--version {} --kind {} --conversion",
            group_flag(&hub.group),
            hub.version,
            hub.kind
        )
    };
    let has: Vec<&str> = [
        (before.defaulting, "--defaulting"),
        (before.validation, "--programmatic-validation"),
        (before.conversion, "--conversion"),
    ]
    .into_iter()
    .filter_map(|(has, flag)| has.then_some(flag))
    .collect();
    if has.is_empty() {
        match hub {
            Some(hub) => bail!(
                "{api} {} has no webhooks of its own: it converts through the conversion webhook of {}, its hub\nhelp: to stop converting, {}",
                resource.kind,
                hub.version,
                to_hub(hub)
            ),
            None => bail!(
                "{api} {} has no webhooks\nhelp: `opsdk create webhook` adds them; PROJECT lists each API's webhooks",
                resource.kind
            ),
        }
    }
    let every = !args.defaulting && !args.programmatic_validation && !args.conversion;
    let named = [
        (args.defaulting, before.defaulting, "--defaulting"),
        (
            args.programmatic_validation,
            before.validation,
            "--programmatic-validation",
        ),
        (args.conversion, before.conversion, "--conversion"),
    ];
    if let Some((_, _, flag)) = named.iter().find(|(named, has, _)| *named && !*has) {
        if *flag == "--conversion"
            && let Some(hub) = hub
        {
            bail!(
                "{api} {} is a spoke: the conversion webhook is its hub {}'s, for every version of the kind\nhelp: {}",
                resource.kind,
                hub.version,
                to_hub(hub)
            );
        }
        bail!(
            "{api} {} has no webhook of {flag}\nhelp: its webhooks: {}",
            resource.kind,
            has.join(", ")
        );
    }
    let conversion = before.conversion && !(every || args.conversion);
    Ok(Webhooks {
        defaulting: before.defaulting && !(every || args.defaulting),
        validation: before.validation && !(every || args.programmatic_validation),
        conversion,
        spoke: if conversion {
            before.spoke.clone()
        } else {
            Vec::new()
        },
        webhook_version: before.webhook_version.clone(),
    })
}

/// Without its conversion webhook a kind is stored in its first version, not the hub: objects
/// written after the change would be stored in another version than those before it, with
/// nothing converting between them. Refused while that first version is another one, unless
/// `force` (no cluster stores the kind yet): then the warning to print.
fn check_storage_version(project: &Project, hub: &Resource, force: bool) -> Result<Option<String>> {
    let first = project
        .resources
        .iter()
        .find(|r| r.same_kind(hub))
        .expect("the hub is in PROJECT");
    if first.version == hub.version {
        return Ok(None);
    }
    let (kind, first, hub, group) = (
        &hub.kind,
        &first.version,
        &hub.version,
        group_flag(&hub.group),
    );
    if force {
        return Ok(Some(format!(
            "warning: kind {kind} is stored in {first} from now on, no longer in {hub}: a cluster that stores {kind}s in {hub} cannot convert them after this build is deployed; delete them there first"
        )));
    }
    bail!(
        "without its conversion webhook, kind {kind} would be stored in {first} (its first version) instead of {hub}, the hub: objects already stored in {hub} would not convert\nhelp: delete {first} first (`opsdk delete api {group}--version {first} --kind {kind}`), keep the conversion webhook, or pass --force if no cluster stores {kind}s yet",
    )
}
