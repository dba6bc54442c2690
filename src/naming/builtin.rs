//! Kubernetes' own types, for controllers of types the project does not define
//! (`create api --resource=false`): which exist, and where k8s-openapi keeps them.

use super::builtin_data::BUILTIN_TYPES;

/// A built-in type a controller can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinType {
    /// The API group (`apps`, `networking.k8s.io`; empty for core).
    pub api_group: &'static str,
    /// Its module in k8s-openapi (`k8s_openapi::api::<module>::<version>`).
    pub module: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

fn all() -> impl Iterator<Item = BuiltinType> {
    BUILTIN_TYPES
        .iter()
        .map(
            |&(api_group, module, version, kind, plural, namespaced)| BuiltinType {
                api_group,
                module,
                version,
                kind,
                plural,
                namespaced,
            },
        )
}

impl BuiltinType {
    /// Whether `group` names this type's group as kubebuilder users write it: `core` (or
    /// nothing) for the core group, the first label (`networking`, `rbac`), the group with
    /// or without `.k8s.io`, or k8s-openapi's module name.
    fn in_group(&self, group: &str) -> bool {
        let short = self.api_group.trim_end_matches(".k8s.io");
        match group {
            "" | "core" => self.api_group.is_empty(),
            _ => {
                group == self.api_group
                    || group == short
                    || group == self.module
                    || Some(group) == short.split('.').next()
            }
        }
    }

    /// The built-in type `group`/`version`/`kind`.
    pub fn find(group: &str, version: &str, kind: &str) -> Option<BuiltinType> {
        all().find(|t| t.in_group(group) && t.version == version && t.kind == kind)
    }

    /// Every `group/version Kind` in `group` (or all, if none is), for a `help:` line.
    pub fn listed_in(group: &str) -> Vec<String> {
        let known = all().any(|t| t.in_group(group));
        all()
            .filter(|t| !known || t.in_group(group))
            .map(|t| format!("{}/{} {}", t.group_flag(), t.version, t.kind))
            .collect()
    }

    /// Whether `group` names a group of Kubernetes' types.
    pub fn is_group(group: &str) -> bool {
        all().any(|t| t.in_group(group))
    }

    /// Every `group/version Kind` opsdk scaffolds webhooks for: those it has a sample object
    /// of (`builtin_sample`), namespaced or Namespace (a namespaceSelector skips those).
    pub fn for_webhooks() -> Vec<String> {
        all()
            .filter(|t| super::builtin_sample(t.api_group, t.kind).is_some())
            .filter(|t| t.namespaced || t.kind == "Namespace")
            .map(|t| format!("{}/{} {}", t.group_flag(), t.version, t.kind))
            .collect()
    }

    /// What to suggest for a type not found in `group`: its types, or else every group.
    pub fn suggestions(group: &str) -> String {
        if all().any(|t| t.in_group(group)) {
            return Self::listed_in(group).join(", ");
        }
        let mut groups: Vec<&str> = all().map(|t| t.group_flag()).collect();
        groups.dedup();
        format!("pass --group with one of {}", groups.join(", "))
    }

    /// The domain kubebuilder records in PROJECT for this type's group (its `coreGroups`):
    /// none for the groups whose names have no `.k8s.io`, `k8s.io` for the others.
    pub fn kubebuilder_domain(&self) -> &'static str {
        match self.api_group {
            "" | "apps" | "autoscaling" | "batch" | "extensions" | "policy" => "",
            _ => "k8s.io",
        }
    }

    /// The `--group` that names this type (`core`, `apps`, `networking`).
    pub fn group_flag(&self) -> &'static str {
        if self.api_group.is_empty() {
            "core"
        } else {
            self.module
        }
    }

    /// The group as kubebuilder records it in PROJECT: `core`, or the API group without
    /// `.k8s.io` (`rbac.authorization`, `networking`), whose domain is then `k8s.io`.
    pub fn kubebuilder_group(&self) -> &'static str {
        match self.api_group {
            "" => "core",
            group => group.trim_end_matches(".k8s.io"),
        }
    }

    /// `k8s.io/api/<module>/<version>`, kubebuilder's PROJECT `path` for core types.
    pub fn path(&self) -> String {
        format!("k8s.io/api/{}/{}", self.module, self.version)
    }

    /// The type's k8s-openapi path, `k8s_openapi::api::apps::v1::Deployment`.
    pub fn rust_path(&self) -> String {
        format!(
            "k8s_openapi::api::{}::{}::{}",
            self.module, self.version, self.kind
        )
    }

    /// The type recorded with `path` (`k8s.io/api/apps/v1`) and `kind`.
    pub fn from_path(path: &str, kind: &str) -> Option<BuiltinType> {
        let (module, version) = path.strip_prefix("k8s.io/api/")?.split_once('/')?;
        all().find(|t| t.module == module && t.version == version && t.kind == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_found_the_ways_users_write_them() {
        let deployment = BuiltinType::find("apps", "v1", "Deployment").unwrap();
        assert_eq!(
            deployment.rust_path(),
            "k8s_openapi::api::apps::v1::Deployment"
        );
        assert_eq!(deployment.plural, "deployments");
        for group in ["core", ""] {
            let config_map = BuiltinType::find(group, "v1", "ConfigMap").unwrap();
            assert_eq!(config_map.path(), "k8s.io/api/core/v1");
        }
        for group in ["networking", "networking.k8s.io"] {
            assert!(
                BuiltinType::find(group, "v1", "Ingress").is_some(),
                "{group}"
            );
        }
        for group in ["rbac", "rbac.authorization", "rbac.authorization.k8s.io"] {
            assert!(BuiltinType::find(group, "v1", "Role").is_some(), "{group}");
        }
        assert!(
            !BuiltinType::find("core", "v1", "Namespace")
                .unwrap()
                .namespaced
        );
    }

    #[test]
    fn unknown_types_are_not_found_and_the_help_lists_the_group() {
        assert!(BuiltinType::find("apps", "v1", "Deploy").is_none());
        assert!(BuiltinType::find("apps", "v1beta1", "Deployment").is_none());
        let apps = BuiltinType::listed_in("apps");
        assert!(
            apps.contains(&"apps/v1 StatefulSet".to_string()),
            "{apps:?}"
        );
        assert!(apps.iter().all(|t| t.starts_with("apps/")), "{apps:?}");
    }

    #[test]
    fn a_recorded_path_leads_back_to_the_type() {
        let t = BuiltinType::find("core", "v1", "Service").unwrap();
        assert_eq!(BuiltinType::from_path(&t.path(), "Service"), Some(t));
    }
}
