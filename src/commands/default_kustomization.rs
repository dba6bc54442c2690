//! The user's config/default/kustomization.yaml as the webhooks change: `init` writes it with
//! `#- ../webhook` commented out, as kubebuilder does; `create webhook` uncomments it, and the
//! last webhook's `delete api` comments it out again. Each CRD converting through the manager
//! gets a commented block of replacements (kubebuilder's `crdkustomizecainjection*`) above
//! the marker `init` writes: uncommented with the other cert-manager lines, they put
//! `cert-manager.io/inject-ca-from` on that CRD, so that cert-manager's CA injector writes the
//! Certificate's CA into its conversion settings. config/network-policy's kustomization
//! gains and loses `allow-webhook-traffic.yaml` the same way.

use std::path::Path;

use anyhow::Result;

use crate::plan::{Plan, PlannedFile, Policy};

pub const FILE: &str = "config/default/kustomization.yaml";
const WEBHOOK_LINE: &str = "- ../webhook";
/// Where `create webhook --conversion` adds a CRD's block.
pub const MARKER: &str = "# +opsdk:scaffold:crdkustomizecainjection";
const BLOCK_HEAD: &str = "# [WEBHOOK] With [WEBHOOK-WITH-CERTS]: the CA of CRD ";

/// The commented replacements putting `cert-manager.io/inject-ca-from: <namespace>/<name>`
/// of the webhook Certificate on `crd`.
pub fn block(crd: &str) -> String {
    let mut out = format!("{BLOCK_HEAD}{crd}'s conversion webhook.\n");
    for (field, index) in [("namespace", 0), ("name", 1)] {
        out.push_str(&format!(
            "#- source:\n\
             #    kind: Certificate\n\
             #    group: cert-manager.io\n\
             #    version: v1\n\
             #    name: serving-cert\n\
             #    fieldPath: metadata.{field}\n\
             #  targets:\n\
             #  - select:\n\
             #      kind: CustomResourceDefinition\n\
             #      name: {crd}\n\
             #    fieldPaths:\n\
             #    - metadata.annotations.[cert-manager.io/inject-ca-from]\n\
             #    options:\n\
             #      delimiter: '/'\n\
             #      index: {index}\n\
             #      create: true\n"
        ));
    }
    out
}

/// `text` with a block for each of `crds` (the CRDs converting now) and without the blocks,
/// as opsdk wrote them, of the others; `None` when it has no marker and a block is missing.
fn sync_blocks(text: &str, crds: &[String]) -> Option<String> {
    let mut text = text.to_string();
    let written: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(BLOCK_HEAD))
        .filter_map(|l| l.strip_suffix("'s conversion webhook."))
        .map(str::to_string)
        .collect();
    for gone in written.iter().filter(|c| !crds.contains(c)) {
        text = text.replace(&block(gone), "");
    }
    for crd in crds.iter().filter(|c| !written.contains(c)) {
        let at = text.find(&format!("{MARKER}\n"))?;
        text.insert_str(at, &block(crd));
    }
    Some(text)
}

/// Makes config/default install config/webhook or not (`install`), and carry a block for
/// each CRD of `conversions`; a note when the user's file lacks a line to change.
pub fn sync(
    root: &Path,
    plan: &mut Plan,
    install: bool,
    conversions: &[String],
) -> Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(root.join(FILE)) else {
        return Ok(install.then(|| {
            format!("note: no {FILE}: add config/webhook to the kustomization you deploy with")
        }));
    };
    let mut notes = Vec::new();
    let mut contents = switch_line(&text, WEBHOOK_LINE, install).unwrap_or_else(|from| {
        notes.push(format!(
            "note: {FILE} has no `{from}` line: make its resources {} config/webhook",
            if install { "include" } else { "leave out" }
        ));
        text.clone()
    });
    match sync_blocks(&contents, conversions) {
        Some(synced) => contents = synced,
        None => notes.push(format!(
            "note: {FILE} has no `{MARKER}` line: for cert-manager, put `cert-manager.io/inject-ca-from` on the CRDs of {} yourself",
            conversions.join(", ")
        )),
    }
    if !install && let Some(lines) = webhook_cert_lines(&contents) {
        notes.push(format!(
            "note: {FILE} still uses the webhooks' cert-manager pieces (lines {lines}): comment them out ([WEBHOOK-WITH-CERTS] and the [WEBHOOK] replacements), or kustomize cannot build it"
        ));
    }
    if contents != text {
        plan.add(PlannedFile {
            path: FILE.into(),
            contents,
            policy: Policy::Replace,
            verbatim: true,
            previous: Some(text),
        });
    }
    Ok((!notes.is_empty()).then(|| notes.join("\n")))
}

/// The numbers of the lines in use (not commented) that name what only a project with webhooks
/// has: the webhook Service, its Certificate and patch, the webhook configurations.
fn webhook_cert_lines(text: &str) -> Option<String> {
    const WEBHOOK_ONLY: [&str; 8] = [
        "webhook-service",
        "serving-cert",
        "cert_webhook_manager_patch.yaml",
        // Both the file of earlier projects and the two that replace it.
        "cert_webhook_roles_patch.yaml",
        "cert_webhook_role_binding_patch.yaml",
        "cert_webhook_cluster_role_binding_patch.yaml",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ];
    let numbers: Vec<String> = (text.lines().enumerate())
        .filter(|(_, line)| !line.trim_start().starts_with('#'))
        .filter(|(_, line)| WEBHOOK_ONLY.iter().any(|name| line.contains(name)))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    (!numbers.is_empty()).then(|| numbers.join(", "))
}

/// `text` with `line` uncommented (`install`) or commented out; `Err` with the line it looked
/// for when `text` has neither.
fn switch_line(text: &str, line: &str, install: bool) -> Result<String, String> {
    let commented = format!("#{line}");
    let (from, to) = if install {
        (commented.as_str(), line)
    } else {
        (line, commented.as_str())
    };
    if text.lines().any(|l| l.trim_end() == to) {
        return Ok(text.to_string());
    }
    if !text.lines().any(|l| l.trim_end() == from) {
        return Err(from.to_string());
    }
    Ok(text
        .split_inclusive('\n')
        .map(|l| {
            if l.trim_end() == from {
                l.replacen(from, to, 1)
            } else {
                l.to_string()
            }
        })
        .collect())
}

/// config/network-policy's kustomization lists the NetworkPolicy admitting the API server's
/// calls to the webhooks (`install`) or not: once allow-metrics-traffic selects the manager's
/// Pod, nothing else would admit them. A note when the user's file lacks the line.
pub fn sync_network_policy(root: &Path, plan: &mut Plan, install: bool) -> Result<Option<String>> {
    const POLICIES: &str = "config/network-policy/kustomization.yaml";
    let Ok(text) = std::fs::read_to_string(root.join(POLICIES)) else {
        return Ok(None);
    };
    match switch_line(&text, "- allow-webhook-traffic.yaml", install) {
        Ok(contents) if contents == text => Ok(None),
        Ok(contents) => {
            plan.add(PlannedFile {
                path: POLICIES.into(),
                contents,
                policy: Policy::Replace,
                verbatim: true,
                previous: Some(text),
            });
            Ok(None)
        }
        Err(from) => Ok(Some(format!(
            "note: {POLICIES} has no `{from}` line: make its resources {} allow-webhook-traffic.yaml",
            if install { "include" } else { "leave out" }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crds(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn blocks_are_added_above_the_marker_and_removed_once_the_crd_no_longer_converts() {
        let text = format!("resources:\n- ../crd\n{MARKER}\n");
        let two = sync_blocks(&text, &crds(&["a.example.com", "b.example.com"])).unwrap();
        let a = two.find("name: a.example.com").unwrap();
        let b = two.find("name: b.example.com").unwrap();
        assert!(a < b && b < two.find(MARKER).unwrap(), "{two}");
        assert_eq!(
            sync_blocks(&two, &crds(&["a.example.com", "b.example.com"])).unwrap(),
            two
        );
        let one = sync_blocks(&two, &crds(&["b.example.com"])).unwrap();
        assert_eq!(
            one,
            format!("resources:\n- ../crd\n{}{MARKER}\n", block("b.example.com"))
        );
        assert_eq!(sync_blocks(&one, &[]).unwrap(), text);
        assert_eq!(
            sync_blocks("resources: []\n", &crds(&["a.example.com"])),
            None
        );
        assert_eq!(
            sync_blocks("resources: []\n", &[]).unwrap(),
            "resources: []\n"
        );
    }

    #[test]
    fn webhook_pieces_still_in_use_are_found_and_commented_ones_are_not() {
        let text = "patches:\n- path: cert_webhook_manager_patch.yaml\n#- path: other.yaml\nreplacements:\n- source:\n    name: webhook-service\n#    name: serving-cert\n";
        assert_eq!(webhook_cert_lines(text).as_deref(), Some("2, 6"));
        assert_eq!(webhook_cert_lines("resources:\n#- ../webhook\n"), None);
    }
}
