//! A resource as PROJECT records it, in kubebuilder's shape: the CRD's scope under `api`
//! (`api: {crdVersion: v1, namespaced: true}`) for the APIs a CRD serves, none for Kubernetes'
//! own types, whose scope is Kubernetes'. PROJECT files written before `api` existed kept
//! `namespaced` on the resource itself; they still load.

use serde::{Deserialize, Serialize};

use super::{Resource, Webhooks};
use crate::naming::BuiltinType;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ResourceRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api: Option<ApiRecord>,
    /// Set for Kubernetes' own types, as kubebuilder marks them; read from `path`, never taken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    core: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    domain: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    path: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    external: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    group: String,
    version: String,
    kind: String,
    plural: String,
    /// Where earlier PROJECT files kept the short name, now read from the types file (see
    /// `commands::recorded_types`); read, never written.
    #[serde(default, skip_serializing)]
    short_name: String,
    /// Where earlier PROJECT files kept the scope; read, never written.
    #[serde(default, skip_serializing)]
    namespaced: Option<bool>,
    controller: bool,
    deploy_image: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    webhooks: Option<Webhooks>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApiRecord {
    crd_version: String,
    namespaced: bool,
}

impl From<ResourceRecord> for Resource {
    fn from(record: ResourceRecord) -> Resource {
        let builtin = BuiltinType::from_path(&record.path, &record.kind);
        let namespaced = (record.api.map(|api| api.namespaced))
            .or(record.namespaced)
            .or(builtin.map(|b| b.namespaced))
            .unwrap_or(true);
        Resource {
            // Earlier PROJECT files gave every Kubernetes type `k8s.io`.
            domain: match builtin {
                Some(builtin) => builtin.kubebuilder_domain().into(),
                None => record.domain,
            },
            path: record.path,
            external: record.external,
            // opsdk names Kubernetes' groups by k8s-openapi's module (`rbac`), as its files do.
            group: match builtin {
                Some(builtin) => builtin.group_flag().into(),
                None => record.group,
            },
            version: record.version,
            kind: record.kind,
            plural: record.plural,
            short_name: record.short_name,
            namespaced,
            controller: record.controller,
            deploy_image: record.deploy_image,
            webhooks: record.webhooks,
        }
    }
}

impl From<Resource> for ResourceRecord {
    fn from(resource: Resource) -> ResourceRecord {
        let builtin = resource.builtin();
        let api = builtin.is_none().then(|| ApiRecord {
            crd_version: "v1".into(),
            namespaced: resource.namespaced,
        });
        ResourceRecord {
            core: api.is_none(),
            api,
            domain: resource.domain,
            // kubebuilder's name of a Kubernetes group: `rbac.authorization` (with domain
            // `k8s.io`, the group `rbac.authorization.k8s.io`).
            group: match builtin {
                Some(builtin) => builtin.kubebuilder_group().into(),
                None => resource.group,
            },
            path: resource.path,
            external: resource.external,
            version: resource.version,
            kind: resource.kind,
            plural: resource.plural,
            short_name: String::new(),
            namespaced: None,
            controller: resource.controller,
            deploy_image: resource.deploy_image,
            webhooks: resource.webhooks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "api:\n  crdVersion: v1\n  namespaced: false\nversion: v1\nkind: Widget\nplural: widgets\ncontroller: true\ndeployImage: false\n";

    #[test]
    fn an_own_api_records_its_scope_under_api_as_kubebuilder_does() {
        let widget: Resource = serde_yaml::from_str(OWN).unwrap();
        assert!(!widget.namespaced);
        assert_eq!(serde_yaml::to_string(&widget).unwrap(), OWN);
    }

    #[test]
    fn a_builtin_type_records_no_scope_and_takes_kubernetes() {
        let node = "core: true\npath: k8s.io/api/core/v1\ngroup: core\nversion: v1\nkind: Node\nplural: nodes\ncontroller: true\ndeployImage: false\n";
        let resource: Resource = serde_yaml::from_str(node).unwrap();
        assert!(!resource.namespaced);
        assert_eq!(serde_yaml::to_string(&resource).unwrap(), node);
        // kubebuilder's domain for the group (none for core, apps, batch, ...), also when an
        // earlier PROJECT file recorded `k8s.io` for all.
        let earlier = node.replace("core: true\n", "domain: k8s.io\n");
        let resource: Resource = serde_yaml::from_str(&earlier).unwrap();
        assert_eq!(serde_yaml::to_string(&resource).unwrap(), node);
        let ingress = "core: true\ndomain: k8s.io\npath: k8s.io/api/networking/v1\ngroup: networking\nversion: v1\nkind: Ingress\nplural: ingresses\ncontroller: true\ndeployImage: false\n";
        let resource: Resource = serde_yaml::from_str(ingress).unwrap();
        assert_eq!(serde_yaml::to_string(&resource).unwrap(), ingress);
        // rbac.authorization.k8s.io as kubebuilder records it; read as `rbac`, its module, as
        // PROJECT files before this recorded it too.
        let role = "core: true\ndomain: k8s.io\npath: k8s.io/api/rbac/v1\ngroup: rbac.authorization\nversion: v1\nkind: Role\nplural: roles\ncontroller: true\ndeployImage: false\n";
        let resource: Resource = serde_yaml::from_str(role).unwrap();
        assert_eq!(resource.group, "rbac");
        assert_eq!(serde_yaml::to_string(&resource).unwrap(), role);
        let earlier = role.replace("group: rbac.authorization", "group: rbac");
        let resource: Resource = serde_yaml::from_str(&earlier).unwrap();
        assert_eq!(serde_yaml::to_string(&resource).unwrap(), role);
    }

    #[test]
    fn an_earlier_project_file_keeps_its_scope() {
        let old = "version: v1\nkind: Widget\nplural: widgets\nnamespaced: false\ncontroller: true\ndeployImage: false\n";
        let widget: Resource = serde_yaml::from_str(old).unwrap();
        assert!(!widget.namespaced);
        assert_eq!(serde_yaml::to_string(&widget).unwrap(), OWN);
    }
}
