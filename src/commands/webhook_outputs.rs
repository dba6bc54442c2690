//! What a removal of webhooks (`delete api`, `delete webhook`) leaves stale outside opsdk's
//! rendered files: the manifests `make manifests` wrote for them, and config/default's
//! webhook blocks.

use std::path::Path;

use anyhow::Result;

use super::default_kustomization;
use crate::context::ProjectContext;
use crate::plan::{Plan, Policy};

/// Adds to `plan` what going from `old` to `new` makes stale.
pub(super) fn follow(
    root: &Path,
    old: &ProjectContext,
    new: &ProjectContext,
    plan: &mut Plan,
) -> Result<()> {
    if !old.webhooks.is_empty() && new.webhooks.is_empty() {
        // The last admission webhook: the configurations `make manifests` wrote (and their
        // copy in the Helm chart) go.
        for output in [
            "config/webhook/manifests.yaml",
            "dist/chart/files/webhook/manifests.yaml",
        ] {
            plan.remove(output.into(), String::new(), Policy::RemoveOutput, true);
        }
    }
    if old.serves_webhooks && !new.serves_webhooks {
        // The last webhook: the roles `make manifests` wrote for them (and their copy in the
        // Helm chart) go.
        for output in [
            "config/webhook/cert_role.yaml",
            "dist/chart/files/webhook/cert_role.yaml",
        ] {
            plan.remove(output.into(), String::new(), Policy::RemoveOutput, true);
        }
    }
    if old.serves_webhooks {
        // config/default leaves config/webhook out with the last webhook, and the
        // cert-manager block of a CRD that no longer converts.
        let install = new.serves_webhooks;
        let notes = [
            default_kustomization::sync(root, plan, install, &new.conversions)?,
            default_kustomization::sync_network_policy(root, plan, install)?,
        ];
        plan.notes.extend(notes.into_iter().flatten());
    }
    Ok(())
}
