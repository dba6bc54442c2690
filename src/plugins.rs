//! `--plugins`: the optional parts of a project, named as kubebuilder names its plugins
//! (`helm`, or with its version `helm/v1-alpha`), and recorded in PROJECT's `plugins:`.

use anyhow::{Result, bail};

use crate::project_file::{HelmPlugin, Plugins};

/// Every plugin opsdk knows: its short name and its version.
const KNOWN: &[(&str, &str)] = &[("helm", "v1-alpha")];

/// kubebuilder's names for the layout opsdk always writes (its Go base and kustomize
/// plugins, as in `kubebuilder init --plugins go/v4`, and its Grafana dashboards, which every
/// opsdk project has): accepted, with nothing to turn on.
const LAYOUT: &[&str] = &[
    "go/v4",
    "go.kubebuilder.io/v4",
    "base.go.kubebuilder.io/v4",
    "kustomize/v2",
    "kustomize.common.kubebuilder.io/v2",
    "grafana/v1-alpha",
    "grafana.kubebuilder.io/v1-alpha",
];

/// The helm plugin's full names: kubebuilder's (whose v2-alpha values opsdk's chart keeps)
/// and the key opsdk records in PROJECT.
const FULL_HELM_NAMES: &[&str] = &[
    "helm/v2-alpha",
    "helm.kubebuilder.io/v1-alpha",
    "helm.kubebuilder.io/v2-alpha",
    "helm.opsdk.dev/v1-alpha",
];

/// kubebuilder's deploy-image plugin, a per-API choice: `create api --deploy-image`.
const DEPLOY_IMAGE: &[&str] = &[
    "deploy-image",
    "deploy-image/v1-alpha",
    "deploy-image.go.kubebuilder.io/v1-alpha",
];

/// Whether `create api --plugins names` asks for the deploy-image plugin; other names are
/// refused (the project-wide ones go to `opsdk edit --plugins`).
pub fn deploy_image(names: &[String]) -> Result<bool> {
    let mut wanted = false;
    for name in names.iter().map(|n| n.trim()) {
        if DEPLOY_IMAGE.contains(&name) {
            wanted = true;
        } else if !LAYOUT.contains(&name) {
            bail!(
                "unknown plugin {name:?} for create api\nhelp: create api takes deploy-image (deploy-image/v1-alpha, the same as --deploy-image); project-wide plugins such as helm go to `opsdk edit --plugins`"
            );
        }
    }
    Ok(wanted)
}

/// `create webhook --plugins names`: kubebuilder's layout (`go/v4`), which opsdk writes
/// anyway; any other name is refused.
pub fn layout_only(names: &[String]) -> Result<()> {
    match names
        .iter()
        .map(|n| n.trim())
        .find(|name| !LAYOUT.contains(name))
    {
        Some(name) => bail!(
            "unknown plugin {name:?} for create webhook\nhelp: create webhook takes kubebuilder's layout plugin (go/v4) only; project-wide plugins such as helm go to `opsdk edit --plugins`"
        ),
        None => Ok(()),
    }
}

/// `plugins` with each of `names` turned on; a name opsdk does not know is refused.
pub fn enable(plugins: &Plugins, names: &[String]) -> Result<Plugins> {
    let mut enabled = plugins.clone();
    for name in names {
        let name = name.trim();
        if LAYOUT.contains(&name) {
            continue;
        }
        if FULL_HELM_NAMES.contains(&name) {
            enabled.helm = Some(HelmPlugin {});
            continue;
        }
        let (short, version) = name.split_once('/').unwrap_or((name, ""));
        let known = KNOWN
            .iter()
            .find(|(k, v)| *k == short && (version.is_empty() || *v == version));
        match known {
            Some(("helm", _)) => enabled.helm = Some(HelmPlugin {}),
            _ => {
                let list: Vec<String> = KNOWN
                    .iter()
                    .map(|(k, v)| format!("{k} ({k}/{v})"))
                    .collect();
                bail!(
                    "unknown plugin {name:?}\nhelp: opsdk's plugins are: {}",
                    list.join(", ")
                )
            }
        }
    }
    Ok(enabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_by_short_or_versioned_name() {
        for name in [
            "helm",
            "helm/v1-alpha",
            "helm/v2-alpha",
            "helm.kubebuilder.io/v1-alpha",
            "helm.kubebuilder.io/v2-alpha",
            // The key PROJECT records (project_file::Plugins).
            "helm.opsdk.dev/v1-alpha",
        ] {
            let plugins = enable(&Plugins::default(), &[name.to_string()]).unwrap();
            assert!(plugins.helm.is_some(), "{name}");
        }
    }

    #[test]
    fn kubebuilders_layout_names_turn_nothing_on() {
        let names = [
            "go/v4".to_string(),
            "kustomize/v2".to_string(),
            "grafana/v1-alpha".to_string(),
        ];
        assert_eq!(
            enable(&Plugins::default(), &names).unwrap(),
            Plugins::default()
        );
        assert!(!deploy_image(&names).unwrap());
        assert!(deploy_image(&["deploy-image/v1-alpha".to_string()]).unwrap());
        assert!(deploy_image(&["helm".to_string()]).is_err());
    }

    #[test]
    fn unknown_names_and_versions_are_refused() {
        for name in ["kustomize", "helm/v3-alpha", ""] {
            let err = enable(&Plugins::default(), &[name.to_string()]).unwrap_err();
            assert!(err.to_string().contains("\nhelp: "), "{err}");
        }
    }
}
