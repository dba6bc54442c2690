//! Another project's CRD, for `create api --resource=false --external-api-crd <file>`: read,
//! checked against the flags, and turned into Rust types by kopium (kube-rs's CRD-to-Rust
//! generator), so that a controller can watch objects this project does not define.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use k8s_openapi_kopium::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopium::TypeGenerator;

use crate::validate;

/// The kopium whose types these are, for the files' header.
const KOPIUM_VERSION: &str = "0.24.1";

/// The CRD as the flags name it.
pub struct ExternalCrd {
    /// Its YAML, copied into the project for the envtest suite to install.
    pub yaml: String,
    /// Full API group (`storage.example.com`).
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// `config/crd/external/<group>_<plural>.yaml`, where the copy goes.
    pub path: String,
    /// The Rust types of `version`, as kopium writes them.
    pub types: String,
}

impl ExternalCrd {
    /// Reads the CRD at `file` and checks that it defines `kind` in `version`, and in `group`
    /// when one is given (its first label or the whole group).
    pub fn read(file: &Path, group: &str, version: &str, kind: &str) -> Result<ExternalCrd> {
        let yaml = std::fs::read_to_string(file).map_err(|e| {
            anyhow::anyhow!(
                "reading --external-api-crd {}: {e}\nhelp: pass the path of a CRD's YAML, e.g. from `kubectl get crd <name> -o yaml > crd.yaml`",
                file.display()
            )
        })?;
        let crd: CustomResourceDefinition = serde_yaml::from_str(&yaml).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a CustomResourceDefinition ({e})\nhelp: pass the YAML of one CRD, as `kubectl get crd <name> -o yaml` prints it",
                file.display()
            )
        })?;
        let spec = &crd.spec;
        check_names(file, &spec.group, &spec.names.kind, &spec.names.plural)?;
        let first_label = spec.group.split('.').next().unwrap_or_default();
        if spec.names.kind != kind
            || !(group.is_empty() || group == spec.group || group == first_label)
        {
            let asked = match group.is_empty() {
                true => kind.to_string(),
                false => format!("{group} {kind}"),
            };
            bail!(
                "{} defines {} {}, not {asked}\nhelp: pass --group {first_label} --kind {} (or --group {})",
                file.display(),
                spec.group,
                spec.names.kind,
                spec.names.kind,
                spec.group
            );
        }
        if !spec.versions.iter().any(|v| v.name == version) {
            let versions: Vec<&str> = spec.versions.iter().map(|v| v.name.as_str()).collect();
            bail!(
                "{} has no version {version}\nhelp: pass --version with one of {}",
                file.display(),
                versions.join(", ")
            );
        }
        let generator = TypeGenerator {
            api_version: Some(version.into()),
            emit_docs: true,
            ..TypeGenerator::default()
        };
        let generated = quietly(|| generator.generate_rust_types_for(&crd, None::<&str>))
            .map_err(|panic| {
                anyhow::anyhow!(
                    "kopium cannot make Rust types of {}: {panic}\nhelp: rename what it names in the CRD's schema, or write the types by hand",
                    file.display()
                )
            })?
            .with_context(|| format!("generating Rust types from {}", file.display()))?;
        let path = format!(
            "config/crd/external/{}_{}.yaml",
            spec.group, spec.names.plural
        );
        // kopium's own header says the file is regenerated; here it is written once, the
        // user's to adjust.
        let body: Vec<&str> = generated
            .lines()
            .skip_while(|line| line.starts_with("// "))
            .collect();
        let types = format!(
            "//! {kind} ({}/{version}) as another project defines it: types made by kopium {} from\n\
             //! {path}. Yours to adjust; after that CRD changes, make them again with\n\
             //! `opsdk create api ... --external-api-crd <crd> --controller=false --force`\n\
             //! (the controller and its test are kept).\n{}\n",
            spec.group,
            KOPIUM_VERSION,
            body.join("\n")
        );
        Ok(ExternalCrd {
            path,
            group: spec.group.clone(),
            kind: spec.names.kind.clone(),
            plural: spec.names.plural.clone(),
            namespaced: spec.scope == "Namespaced",
            types,
            yaml,
        })
    }
}

/// The CRD's names must be ones the API server accepts and opsdk can name files and modules
/// after: they become paths, Rust modules and RBAC rules.
fn check_names(file: &Path, group: &str, kind: &str, plural: &str) -> Result<()> {
    let checks = [
        validate::domain(group)
            .map_err(|_| format!("group {group:?} is not a lowercase DNS subdomain with a dot")),
        validate::kind(kind)
            .map_err(|_| format!("kind {kind:?} is not CamelCase letters and digits")),
        validate::plural(plural)
            .map_err(|_| format!("plural {plural:?} is not lowercase letters and digits")),
    ];
    if let Some(fault) = checks.into_iter().find_map(Result::err) {
        bail!(
            "{}: {fault}\nhelp: pass the YAML of a CRD the API server serves, as `kubectl get crd <name> -o yaml` prints it",
            file.display()
        );
    }
    Ok(())
}

/// Runs `f`, turning a panic into an error without printing it: kopium panics on some
/// property names (`invalid field name '' could not be escaped`).
fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|panic| {
        (panic.downcast_ref::<String>().cloned())
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "it panicked".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cli/fixtures/backups.storage.example.com.yaml"
    );

    #[test]
    fn the_crd_gives_the_kinds_types_and_where_its_copy_goes() {
        let crd = ExternalCrd::read(Path::new(FIXTURE), "storage", "v1beta1", "Backup").unwrap();
        assert_eq!(
            crd.path,
            "config/crd/external/storage.example.com_backups.yaml"
        );
        assert!(crd.namespaced);
        assert!(crd.types.contains("pub struct BackupSpec"), "{}", crd.types);
        assert!(crd.types.contains(r#"kind = "Backup""#), "{}", crd.types);
    }

    #[test]
    fn flags_that_do_not_match_the_crd_are_refused_with_what_it_defines() {
        let path = Path::new(FIXTURE);
        let wrong_kind = ExternalCrd::read(path, "", "v1beta1", "Restore")
            .err()
            .unwrap();
        assert!(
            wrong_kind
                .to_string()
                .contains("help: pass --group storage --kind Backup")
        );
        let wrong_version = ExternalCrd::read(path, "", "v1", "Backup").err().unwrap();
        assert!(wrong_version.to_string().contains("one of v1beta1"));
    }
}
