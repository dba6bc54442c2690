//! Writes the manifests made from code (`make manifests`): given a directory, one
//! `<group>_<plural>.yaml` file per CustomResourceDefinition there, and given a second path,
//! the manager's ClusterRole (a Role when namespace-scoped) from the controllers' `RBAC` rules
//! there, given a third, a directory, the webhook configurations (`manifests.yaml`, with
//! admission webhooks) and the role for the webhook certificates (`cert_role.yaml`) there,
//! when the project has webhooks (admission or conversion), and given a fourth, a Helm chart's
//! directory, the same CRDs, role and webhook files into its `files/crds`,
//! `files/rbac/role.yaml` and `files/webhook`, which its templates read. With no argument it
//! prints every CRD as YAML.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;

use k8s_operator_talk::webhook;
use k8s_operator_talk::{controller, rbac};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crds = k8s_operator_talk::api::crds()?;
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    match args.next() {
        Some(dir) => write_crds(&dir, &crds)?,
        None => {
            for crd in &crds {
                print!("---\n{}", serde_saphyr::to_string(crd)?);
            }
        }
    }
    let role = rbac::role_yaml(&controller::role())?;
    if let Some(path) = args.next() {
        write(&path, &role, rbac::ROLE_NAME)?;
    }
    let webhook_files = webhook::manifests()?;
    if let Some(dir) = args.next() {
        write_webhook_files(&webhook_files, &dir, false)?;
    }
    if let Some(chart) = args.next() {
        // The chart holds exactly the current CRDs: the copies of deleted kinds go.
        let dir = chart.join("files/crds");
        if dir.is_dir() {
            for entry in std::fs::read_dir(&dir)? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    std::fs::remove_file(path)?;
                }
            }
        }
        write_crds(&dir, &crds)?;
        std::fs::create_dir_all(chart.join("files/rbac"))?;
        write(&chart.join("files/rbac/role.yaml"), &role, rbac::ROLE_NAME)?;
        // The chart's copies of the webhook files go with the last webhook.
        write_webhook_files(&webhook_files, &chart.join("files/webhook"), true)?;
    }
    Ok(())
}

/// Writes the webhook files there are (`webhook::manifests`) into `dir`; with `prune`, removes
/// those there are not (and `dir` once empty).
fn write_webhook_files(files: &webhook::Manifests, dir: &Path, prune: bool) -> std::io::Result<()> {
    let files = [
        (
            "manifests.yaml",
            &files.configurations,
            format!("{} webhooks", files.hooks),
        ),
        (
            "cert_role.yaml",
            &files.roles,
            "the webhook certificates' roles".into(),
        ),
    ];
    for (name, contents, what) in files {
        let path = dir.join(name);
        match contents {
            Some(contents) => {
                std::fs::create_dir_all(dir)?;
                write(&path, contents, &what)?;
            }
            None if prune && path.is_file() => std::fs::remove_file(&path)?,
            None => {}
        }
    }
    if prune {
        // Only an empty directory goes.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}
/// One `<group>_<plural>.yaml` file per CRD in `dir`.
fn write_crds(dir: &Path, crds: &[CustomResourceDefinition]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for crd in crds {
        let file = dir.join(format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural));
        let yaml = serde_saphyr::to_string(crd).map_err(std::io::Error::other)?;
        write(&file, &yaml, &crd.name_any())?;
    }
    Ok(())
}

fn write(path: &Path, contents: &str, what: &str) -> std::io::Result<()> {
    std::fs::write(path, contents)?;
    eprintln!("wrote {} ({what})", path.display());
    Ok(())
}
