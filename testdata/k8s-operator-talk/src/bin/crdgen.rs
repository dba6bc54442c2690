//! Writes the manifests made from code (`make manifests`): given a directory, one
//! `<group>_<plural>.yaml` file per CustomResourceDefinition there, and given a second path,
//! the manager's ClusterRole (a Role when namespace-scoped) from the controllers' `RBAC` rules
//! there, and given a third, a directory, the webhook configurations (`manifests.yaml`) and the
//! role for the webhook certificates (`cert_role.yaml`) there, when the project has webhooks.
//! With no argument it prints every CRD as YAML.

use std::path::PathBuf;

use kube::ResourceExt;

use k8s_operator_talk::webhook::{self, configs};
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
    let hooks = webhook::hooks();
    if let Some(dir) = args.next().filter(|_| !hooks.is_empty()) {
        std::fs::create_dir_all(&dir)?;
        let manifests = dir.join("manifests.yaml");
        std::fs::write(&manifests, configs::manifests_yaml(&hooks)?)?;
        eprintln!("wrote {} ({} webhooks)", manifests.display(), hooks.len());
        let roles = dir.join("cert_role.yaml");
        std::fs::write(&roles, configs::roles_yaml()?)?;
        eprintln!("wrote {}", roles.display());
    }
    Ok(())
}
