//! `opsdk create webhook`: admission webhooks (defaulting, validation) for an API of the
//! project, served by the manager over HTTPS with certificates it makes itself.
//!
//! The kind's webhook file (`src/webhook/<version>/<kind>.rs`) is the user's, written once
//! with both a defaulting and a validating function; PROJECT records which of them the API
//! server calls, and opsdk's registry (`src/webhook/mod.rs`) and `make manifests`
//! (config/webhook/manifests.yaml) follow it.

use std::path::Path;

use anyhow::{Result, bail};

use super::delete_api::find;
use crate::cli::CreateWebhookArgs;
use crate::context::{ProjectContext, ResourceContext};
use crate::plan::{Plan, PlannedFile, Policy};
use crate::project_file::{Project, Webhooks};
use crate::render::{Scope, render};
use crate::writer::Force;

pub fn run(root: &Path, args: &CreateWebhookArgs) -> Result<()> {
    if !args.defaulting && !args.programmatic_validation {
        bail!(
            "no webhook to scaffold\nhelp: pass --defaulting, --programmatic-validation, or both"
        );
    }
    let mut project = Project::load(root)?;
    let index = find(&project, &args.api)?;
    let resource = project.resources[index].clone();
    let api = ResourceContext::new(&project, &resource).api_version;
    if resource.builtin().is_some() || resource.external {
        bail!(
            "{api} {} is not this project's API: its webhooks belong to the project that defines it\nhelp: webhooks are for kinds made with `opsdk create api --resource`",
            resource.kind
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
    check_runtime(root)?;

    let fresh = !before.defaulting && !before.validation;
    let old = project.clone();
    project.resources[index].webhooks = Some(Webhooks {
        defaulting: before.defaulting || args.defaulting,
        validation: before.validation || args.programmatic_validation,
        conversion: before.conversion,
        webhook_version: "v1".into(),
    });
    let ctx = ProjectContext::new(&project);
    let resource_ctx = ResourceContext::new(&project, &project.resources[index]);
    // The kind's webhook file holds both functions: a second run only wires another one.
    let mut plan = if fresh || args.force {
        render(Scope::Webhook, &ctx, Some(&resource_ctx))?
    } else {
        Plan::default()
    };
    super::regenerate(&ctx, &project, &mut plan)?;
    super::refresh_readme(&old, &project, &mut plan)?;
    for note in install_webhooks(root, &mut plan, true)? {
        eprintln!("{note}");
    }
    let next = format!(
        "Webhooks for {api} {} scaffolded. Next: fill in src/webhook/{}.rs, then\n  make manifests && cargo build && cargo test",
        resource.kind, resource_ctx.api_file
    );
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

/// A line of the user's kustomizations that installs a webhook piece: `init` writes it
/// commented out, as kubebuilder does.
struct Wiring {
    file: &'static str,
    line: &'static str,
    /// What the line installs, for the note when the user's file has no such line.
    piece: &'static str,
}

const WIRING: [Wiring; 2] = [
    Wiring {
        file: "config/default/kustomization.yaml",
        line: "- ../webhook",
        piece: "config/webhook",
    },
    // Once allow-metrics-traffic selects the manager's Pod, only this admits the API server.
    Wiring {
        file: "config/network-policy/kustomization.yaml",
        line: "- allow-webhook-traffic.yaml",
        piece: "config/network-policy/allow-webhook-traffic.yaml",
    },
];

/// Uncomments the [`WIRING`] lines (`install`), so that `make deploy` installs the webhook
/// Service, configurations and NetworkPolicy, or comments them out again (the last webhook
/// gone); a note for each user's file that has no such line.
pub(super) fn install_webhooks(root: &Path, plan: &mut Plan, install: bool) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for wiring in &WIRING {
        notes.extend(wiring.switch(root, plan, install)?);
    }
    Ok(notes)
}

impl Wiring {
    fn switch(&self, root: &Path, plan: &mut Plan, install: bool) -> Result<Option<String>> {
        let Wiring { file, line, piece } = *self;
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            return Ok(install.then(|| {
                format!("note: no {file}: add {piece} to the kustomization you deploy with")
            }));
        };
        let commented = format!("#{line}");
        let (from, to) = if install {
            (commented.as_str(), line)
        } else {
            (line, commented.as_str())
        };
        if text.lines().any(|l| l.trim_end() == to) {
            return Ok(None);
        }
        if !text.lines().any(|l| l.trim_end() == from) {
            return Ok(Some(format!(
                "note: {file} has no `{from}` line: make its resources {} {piece}",
                if install { "include" } else { "leave out" }
            )));
        }
        let contents: String = text
            .split_inclusive('\n')
            .map(|l| {
                if l.trim_end() == from {
                    l.replacen(from, to, 1)
                } else {
                    l.to_string()
                }
            })
            .collect();
        plan.add(PlannedFile {
            path: file.into(),
            contents,
            policy: Policy::Replace,
            verbatim: true,
            previous: Some(text),
        });
        Ok(None)
    }
}
