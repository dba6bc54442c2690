//! The command line: `--key=value` flags, with defaults.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Flavor {
    Opsdk,
    Kubebuilder,
    /// No operator: the API server alone.
    Floor,
}

pub struct Args {
    pub flavor: Flavor,
    pub manager: PathBuf,
    pub crds: PathBuf,
    /// The project's config/default: run the manager as it deploys (see deployed.rs).
    pub deployed: Option<PathBuf>,
    pub group: String,
    pub apps: usize,
    pub image: String,
    pub out: PathBuf,
    pub logs: PathBuf,
    pub idle: Duration,
    pub settle: Duration,
    pub max_settle: Duration,
    pub steady: Duration,
    pub timeout: Duration,
}

pub fn parse_args() -> Result<Args, Error> {
    let mut map = HashMap::new();
    for arg in std::env::args().skip(1) {
        let (key, value) = arg
            .strip_prefix("--")
            .and_then(|a| a.split_once('='))
            .ok_or_else(|| format!("bad argument {arg:?}: expected --key=value"))?;
        map.insert(key.to_string(), value.to_string());
    }
    let get = |key: &str| -> Result<String, Error> {
        map.get(key)
            .cloned()
            .ok_or_else(|| format!("missing --{key}=...").into())
    };
    let secs = |key: &str, default: u64| -> Result<Duration, Error> {
        let value = map.get(key).map(|v| v.parse::<u64>()).transpose()?;
        Ok(Duration::from_secs(value.unwrap_or(default)))
    };
    let flavor = match get("flavor")?.as_str() {
        "opsdk" => Flavor::Opsdk,
        "kubebuilder" => Flavor::Kubebuilder,
        "floor" => Flavor::Floor,
        other => {
            return Err(format!("--flavor={other}: expected opsdk, kubebuilder or floor").into());
        }
    };
    // The floor runs no operator, so it needs no manager, CRDs or group.
    let operator = flavor != Flavor::Floor;
    let path = |key: &str| -> Result<PathBuf, Error> {
        Ok(if operator {
            std::fs::canonicalize(get(key)?)?
        } else {
            PathBuf::new()
        })
    };
    Ok(Args {
        flavor,
        manager: path("manager")?,
        crds: path("crds")?,
        deployed: map.get("deployed").map(std::fs::canonicalize).transpose()?,
        group: if operator {
            get("group")?
        } else {
            String::new()
        },
        apps: map
            .get("apps")
            .map(|v| v.parse())
            .transpose()?
            .unwrap_or(1000),
        image: map
            .get("image")
            .cloned()
            .unwrap_or_else(|| "nginx:latest".into()),
        out: PathBuf::from(get("out")?),
        logs: PathBuf::from(get("logs")?),
        idle: secs("idle", 15)?,
        settle: secs("settle", 65)?,
        max_settle: secs("max-settle", 480)?,
        steady: secs("steady", 60)?,
        timeout: secs("timeout", 600)?,
    })
}
