//! Prints every CustomResourceDefinition of k8s-operator-talk as YAML, or, given a
//! directory, writes one `<group>_<plural>.yaml` file per CRD there (`make manifests`).

use std::path::PathBuf;

use kube::ResourceExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crds = k8s_operator_talk::api::crds()?;
    match std::env::args_os().nth(1).map(PathBuf::from) {
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
    Ok(())
}
