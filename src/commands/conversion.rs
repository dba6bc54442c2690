//! `opsdk create webhook --conversion --spoke ...`: which versions of a kind convert through
//! which (kubebuilder's hub and spokes), checked before anything is written.

use anyhow::{Result, bail};

use crate::cli::CreateWebhookArgs;
use crate::project_file::{Project, Resource};

/// The spokes the hub `project.resources[index]` converts after this command (those it had
/// and those `args` names), or a refusal.
pub(super) fn spokes(
    project: &Project,
    index: usize,
    args: &CreateWebhookArgs,
) -> Result<Vec<String>> {
    let hub = &project.resources[index];
    let kind = &hub.kind;
    let group = match hub.group.as_str() {
        "" => String::new(),
        g => format!("--group {g} "),
    };
    if !args.conversion {
        if !args.spoke.is_empty() {
            bail!(
                "--spoke names the versions a conversion webhook converts, but --conversion is missing\nhelp: add --conversion to make {} the hub that --spoke {} converts through",
                hub.version,
                args.spoke.join(", ")
            );
        }
        return Ok(spokes_of(hub).to_vec());
    }
    let versions: Vec<&str> = project
        .resources
        .iter()
        .filter(|r| r.same_kind(hub))
        .map(|r| r.version.as_str())
        .collect();
    if versions.len() == 1 {
        bail!(
            "kind {kind} has one version, {}: there is nothing to convert\nhelp: add another version first (`opsdk create api {group}--version <version> --kind {kind} --controller=false`), then name it with --spoke",
            hub.version
        );
    }
    let others: Vec<&str> = versions
        .iter()
        .copied()
        .filter(|v| *v != hub.version)
        .collect();
    if args.spoke.is_empty() {
        bail!(
            "--conversion needs the versions that convert through {}\nhelp: name them with --spoke (kind {kind}'s other versions: {})",
            hub.version,
            others.join(", ")
        );
    }
    for spoke in &args.spoke {
        if spoke.is_empty() {
            bail!(
                "--spoke holds an empty version\nhelp: name the versions that convert through {} (kind {kind}'s other versions: {})",
                hub.version,
                others.join(", ")
            );
        }
        if crate::validate::version(spoke).is_err() {
            bail!(
                "invalid --spoke version {spoke:?}: a spoke is one of the kind's versions\nhelp: name the versions that convert through {} (kind {kind}'s other versions: {})",
                hub.version,
                others.join(", ")
            );
        }
        if *spoke == hub.version {
            bail!(
                "{spoke} cannot be both the hub and a spoke\nhelp: drop {spoke} from --spoke; the spokes are the other versions ({})",
                others.join(", ")
            );
        }
        if !versions.contains(&spoke.as_str()) {
            bail!(
                "kind {kind} has no version {spoke:?} to convert\nhelp: its versions: {}; add it first with `opsdk create api {group}--version {spoke} --kind {kind} --controller=false`",
                versions.join(", ")
            );
        }
    }
    if let Some(other) = project.hub_of(hub).filter(|h| h.version != hub.version) {
        bail!(
            "kind {kind} already converts through {}\nhelp: a kind has one hub: name new spokes with `opsdk create webhook {group}--version {} --kind {kind} --conversion --spoke <version> --force`",
            other.version,
            other.version
        );
    }
    let before = spokes_of(hub);
    if !before.is_empty() && !args.force {
        bail!(
            "{} {kind} already has a conversion webhook (spokes {})\nhelp: pass --force to add spokes and write the named spokes' conversion files again",
            hub.version,
            before.join(", ")
        );
    }
    let mut all = before.to_vec();
    for spoke in &args.spoke {
        if !all.contains(spoke) {
            all.push(spoke.clone());
        }
    }
    let missing: Vec<&str> = others
        .iter()
        .copied()
        .filter(|v| !all.iter().any(|s| s == v))
        .collect();
    if !missing.is_empty() {
        bail!(
            "kind {kind}'s version {} would not convert: the API server converts between every version it serves\nhelp: add --spoke {}",
            missing.join(", "),
            missing.join(",")
        );
    }
    Ok(all)
}

fn spokes_of(resource: &Resource) -> &[String] {
    resource.webhooks.as_ref().map_or(&[], |w| &w.spoke)
}

/// A note when a spoke of the hub `hub` outranks it in Kubernetes' version order (GA over
/// beta over alpha, then the higher number): clients that take the preferred version
/// (`kubectl get` without one, the namespace controller deleting a namespace's objects) then
/// read the spoke, through the manager, and cannot while it is down.
pub(super) fn preferred_spoke_note(hub: &Resource) -> Option<String> {
    let (kind, version) = (&hub.kind, hub.version.as_str());
    let preferred = spokes_of(hub)
        .iter()
        .filter(|spoke| priority(spoke) > priority(version))
        .max_by_key(|spoke| priority(spoke))?;
    Some(format!(
        "note: {preferred} outranks the hub {version} in Kubernetes' version order, so `kubectl get` and the namespace controller read {kind}s as {preferred}, converted by the manager: while no replica answers, they fail and namespaces holding {kind}s cannot be deleted; making {preferred} the hub avoids that"
    ))
}

/// Kubernetes' order of versions (apimachinery's kube-aware comparison): GA, then beta, then
/// alpha; within each, the higher major and then minor number first.
fn priority(version: &str) -> (u8, u32, u32) {
    let rest = version.strip_prefix('v').unwrap_or(version);
    let digits = |s: &str| s.parse::<u32>().unwrap_or(0);
    for (stage, rank) in [("alpha", 0), ("beta", 1)] {
        if let Some((major, minor)) = rest.split_once(stage) {
            return (rank, digits(major), digits(minor));
        }
    }
    (2, digits(rest), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_rank_as_kubernetes_ranks_them() {
        let mut versions = [
            "v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "v10", "v2alpha1",
        ];
        versions.sort_by_key(|v| std::cmp::Reverse(priority(v)));
        assert_eq!(
            versions,
            [
                "v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha1"
            ]
        );
    }

    #[test]
    fn only_a_spoke_above_the_hub_is_noted() {
        let hub = |version: &str, spokes: &[&str]| Resource {
            domain: String::new(),
            path: String::new(),
            external: false,
            group: "ship".into(),
            version: version.into(),
            kind: "Cruiser".into(),
            plural: "cruisers".into(),
            short_name: String::new(),
            namespaced: true,
            controller: true,
            deploy_image: false,
            webhooks: Some(crate::project_file::Webhooks {
                conversion: true,
                spoke: spokes.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
        };
        assert!(preferred_spoke_note(&hub("v2", &["v1", "v1beta1"])).is_none());
        let note = preferred_spoke_note(&hub("v1", &["v1beta1", "v2"])).unwrap();
        assert!(note.starts_with("note: v2 outranks the hub v1"), "{note}");
    }
}
