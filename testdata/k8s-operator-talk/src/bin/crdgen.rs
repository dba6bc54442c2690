//! Writes the manifests made from code (`make manifests`): given a directory, one
//! `<group>_<plural>.yaml` file per CustomResourceDefinition there, and given a second path,
//! the manager's ClusterRole (a Role when namespace-scoped) from the controllers' `RBAC` rules
//! there. With no argument it prints every CRD as YAML.

use std::path::PathBuf;

use kube::ResourceExt;

use k8s_operator_talk::{controller, rbac};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crds = k8s_operator_talk::api::crds()?;
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    match args.next() {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            for crd in &crds {
                let file = dir.join(format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural));
                std::fs::write(&file, serde_saphyr::to_string(crd)?)?;
                eprintln!("wrote {} ({})", file.display(), crd.name_any());
            }
        }
        None => {
            for crd in &crds {
                print!("---\n{}", serde_saphyr::to_string(crd)?);
            }
        }
    }
    if let Some(role) = args.next() {
        std::fs::write(&role, rbac::role_yaml(&controller::role())?)?;
        eprintln!("wrote {} ({})", role.display(), rbac::ROLE_NAME);
    }
    Ok(())
}
