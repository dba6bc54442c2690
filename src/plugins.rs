//! `--plugins`: the optional parts of a project, named as kubebuilder names its plugins
//! (`helm`, or with its version `helm/v1-alpha`), and recorded in PROJECT's `plugins:`.

use anyhow::{Result, bail};

use crate::project_file::{HelmPlugin, Plugins};

/// Every plugin opsdk knows: its short name and its version.
const KNOWN: &[(&str, &str)] = &[("helm", "v1-alpha")];

/// `plugins` with each of `names` turned on; a name opsdk does not know is refused.
pub fn enable(plugins: &Plugins, names: &[String]) -> Result<Plugins> {
    let mut enabled = plugins.clone();
    for name in names {
        let name = name.trim();
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
        for name in ["helm", "helm/v1-alpha"] {
            let plugins = enable(&Plugins::default(), &[name.to_string()]).unwrap();
            assert!(plugins.helm.is_some(), "{name}");
        }
    }

    #[test]
    fn unknown_names_and_versions_are_refused() {
        for name in ["kustomize", "helm/v2-alpha", ""] {
            let err = enable(&Plugins::default(), &[name.to_string()]).unwrap_err();
            assert!(err.to_string().contains("\nhelp: "), "{err}");
        }
    }
}
