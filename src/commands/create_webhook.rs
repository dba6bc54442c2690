//! `opsdk create webhook`: admission webhooks (defaulting, validation) and conversion webhooks
//! for an API of the project, served by the manager over HTTPS with certificates it makes
//! itself.
//!
//! The kind's webhook file (`src/webhook/<version>/<kind>.rs`) is the user's, written once
//! with both a defaulting and a validating function; PROJECT records which of them the API
//! server calls, and opsdk's registry (`src/webhook/mod.rs`) and `make manifests`
//! (config/webhook/manifests.yaml) follow it. With `--conversion` the version becomes the hub
//! of its kind: each `--spoke` gets a conversion file of the user's
//! (`src/api/<spoke>/<kind>_conversion.rs`), and the registry routes `/convert` through them.

use std::path::Path;

use anyhow::{Result, bail};

use super::delete_api::find;
use super::{conversion, default_kustomization, foreign_api};
use crate::cli::CreateWebhookArgs;
use crate::context::{ProjectContext, ResourceContext};
use crate::plan::Plan;
use crate::plugins;
use crate::project_file::Webhooks;
use crate::render::{Scope, render};
use crate::writer::Force;

pub fn run(root: &Path, args: &CreateWebhookArgs) -> Result<()> {
    plugins::layout_only(&args.plugins)?;
    let admission = args.defaulting || args.programmatic_validation;
    if !admission && !args.conversion && args.spoke.is_empty() {
        bail!(
            "no webhook to scaffold\nhelp: pass --defaulting, --programmatic-validation, --conversion --spoke <version>, or several"
        );
    }
    let mut project = super::recorded_types::load(root)?;
    // Kubernetes' own kinds need no `create api` first.
    let index = match find(&project, &args.api) {
        Ok(index) => index,
        Err(not_found) => foreign_api::builtin_for_webhook(&mut project, &args.api, not_found)?,
    };
    let resource = project.resources[index].clone();
    let api = ResourceContext::new(&project, &resource).api_version;
    if let Some(builtin) = resource.builtin() {
        foreign_api::check_builtin_webhooks(&project, builtin, args)?;
    }
    if resource.external {
        bail!(
            "{api} {} is not this project's API: its webhooks belong to the project that defines it\nhelp: webhooks are for kinds made with `opsdk create api --resource`",
            resource.kind
        );
    }
    if let Some(plural) = args.plural.as_ref().filter(|p| **p != resource.plural) {
        bail!(
            "--plural {plural} does not match {api} {}, whose plural is {} in {}\nhelp: drop --plural, or pass --plural {}",
            resource.kind,
            resource.plural,
            crate::project_file::FILE_NAME,
            resource.plural
        );
    }
    let before = resource.webhooks.clone().unwrap_or_default();
    let repeated: Vec<&str> = [
        (args.defaulting && before.defaulting, "--defaulting"),
        (
            args.programmatic_validation && before.validation,
            "--programmatic-validation",
        ),
    ]
    .into_iter()
    .filter_map(|(again, flag)| again.then_some(flag))
    .collect();
    if !repeated.is_empty() && !args.force {
        bail!(
            "{api} {} already has the webhook of {}\nhelp: drop {}, or pass --force to write the kind's webhook file again",
            resource.kind,
            repeated.join(" and "),
            repeated.join(" and ")
        );
    }
    let spokes = conversion::spokes(&project, index, args)?;
    check_runtime(root)?;

    let fresh = !before.defaulting && !before.validation;
    let old = project.clone();
    project.resources[index].webhooks = Some(Webhooks {
        defaulting: before.defaulting || args.defaulting,
        validation: before.validation || args.programmatic_validation,
        conversion: !spokes.is_empty(),
        spoke: spokes,
        webhook_version: "v1".into(),
    });
    let ctx = ProjectContext::new(&project);
    let resource_ctx = ResourceContext::new(&project, &project.resources[index]);
    let suite = resource_ctx.webhook_test_stem();
    if let Some(other) = ctx.resources.iter().find(|r| r.file_stem == suite) {
        bail!(
            "the webhooks' suite of {api} {} would be tests/{suite}.rs, the envtest suite of {} {}\nhelp: rename one of the kinds (opsdk delete api, then create api)",
            resource.kind,
            other.api_version,
            other.kind
        );
    }
    // The kind's webhook file holds both functions: a second run only wires another one.
    let mut plan = if admission && (fresh || args.force) {
        render(Scope::Webhook, &ctx, Some(&resource_ctx))?
    } else {
        Plan::default()
    };
    // Each named spoke's conversion functions, next to its types.
    let mut conversion_files = Vec::new();
    let mut named: Vec<&String> = Vec::new();
    for spoke in args.conversion.then_some(&args.spoke).into_iter().flatten() {
        // `--spoke v2,v2` names one spoke.
        if named.contains(&spoke) {
            continue;
        }
        named.push(spoke);
        let spoke = project
            .resources
            .iter()
            .find(|r| r.same_kind(&resource) && r.version == *spoke)
            .expect("spokes are versions of the kind");
        let spoke_ctx = ResourceContext::new(&project, spoke);
        conversion_files.push(format!("src/api/{}.rs", spoke_ctx.conversion_file));
        plan.extend(render(Scope::Conversion, &ctx, Some(&spoke_ctx))?);
    }
    super::regenerate(root, &ctx, &project, &mut plan)?;
    super::refresh_readme(&old, &project, &mut plan)?;
    let notes = [
        default_kustomization::sync(root, &mut plan, true, &ctx.conversions)?,
        default_kustomization::sync_network_policy(root, &mut plan, true)?,
    ];
    plan.notes.extend(notes.into_iter().flatten());
    if args.conversion {
        plan.notes
            .extend(conversion::preferred_spoke_note(&project.resources[index]));
    }
    let mut files: Vec<String> = Vec::new();
    if admission {
        files.push(format!("src/webhook/{}.rs", resource_ctx.api_file));
    }
    if args.conversion {
        files.push(format!(
            "{} (when a spoke's schema differs from {})",
            conversion_files.join(", "),
            resource.version
        ));
    }
    let mut next = format!(
        "Webhooks for {api} {} scaffolded. Next: fill in {}, then\n  make manifests && cargo build && cargo test",
        resource.kind,
        files.join(" and ")
    );
    if resource.builtin().is_some() {
        next.push_str(&format!(
            "\nThey are not called in kube-system, kube-node-lease nor the manager's own namespace, where {} objects must never wait for the manager.",
            resource.kind
        ));
    }
    let force = if args.force { Force::On } else { Force::Off };
    super::finish(root, plan, force, args.dry_run, &next)
}

/// Projects made before opsdk served webhooks lack the manager's webhook server.
fn check_runtime(root: &Path) -> Result<()> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    if !lib.contains("pub mod webhook;") || !cargo.contains("json-patch") {
        bail!(
            "this project's manager has no webhook server (src/lib.rs declares no `webhook` module, or Cargo.toml lacks json-patch): it was made by an opsdk release without webhooks\nhelp: compare src/lib.rs, src/main.rs, Cargo.toml and the Makefile with a project made by `opsdk init` today and add the webhook parts"
        );
    }
    Ok(())
}
