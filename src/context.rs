//! The render context: validated PROJECT data plus every name form the templates use,
//! computed once here. Templates never compute names.

use heck::{ToKebabCase, ToSnakeCase};
use serde::Serialize;

use crate::naming::{article, module_ident, type_ident};
use crate::project_file::{License, Project, Resource};
use crate::versions::{VERSIONS, Versions};

mod views;

pub use views::{ApiGroup, CrdContext, ModuleGroup, RbacGroup};
use views::{api_groups, controller_modules, crds, rbac_groups};

#[derive(Debug, Serialize)]
pub struct ProjectContext {
    pub domain: String,
    pub repo: String,
    /// `repo` as a URL for Cargo's `repository` field.
    pub repository_url: String,
    /// kebab-case: crate, binary, image and Kubernetes object names.
    pub name: String,
    /// snake_case: the library crate's Rust name.
    pub crate_name: String,
    pub owner: String,
    /// `owner` as a TOML string, quotes included (Cargo.toml's `authors`).
    pub owner_toml: String,
    /// `Apache-2.0`, `MIT`, or empty.
    pub license_spdx: &'static str,
    pub license: License,
    /// A namespace-scoped manager: a Role and RoleBinding, WATCH_NAMESPACE from the Pod's
    /// namespace, `controller::NAMESPACED`.
    pub namespaced: bool,
    /// The Helm plugin (`--plugins helm`): the chart under `dist/chart`, its Makefile targets
    /// and workflow.
    pub helm: bool,
    /// The project's own APIs (not Kubernetes' types it only has controllers for).
    pub resources: Vec<ResourceContext>,
    /// Resources with a controller, in PROJECT order, Kubernetes' types included.
    pub controllers: Vec<ResourceContext>,
    /// The `src/api` module tree: groups (the domain group has no module) holding versions.
    pub api_groups: Vec<ApiGroup>,
    /// The `src/api/external` module tree: other projects' types, by group and version.
    pub external_groups: Vec<ApiGroup>,
    /// The `src/controller` module tree: the domain group's modules first, then one per group.
    pub controller_modules: Vec<ModuleGroup>,
    /// One entry per kind: its versions and the one stored in etcd.
    pub crds: Vec<CrdContext>,
    /// Distinct API groups with the plurals RBAC must grant.
    pub rbac_groups: Vec<RbacGroup>,
    pub any_deploy_image: bool,
    /// The kinds whose controllers make a Deployment and a Service, once each (the manager's
    /// admission policy lets it write only what these control).
    pub deploy_image_kinds: Vec<ResourceContext>,
    /// The project's own kinds with a controller, once each: the manager patches their
    /// finalizers, and its admission policy lets it change nothing else of them.
    pub reconciled_kinds: Vec<ResourceContext>,
    /// The versions with admission webhooks, in PROJECT order.
    pub webhooks: Vec<ResourceContext>,
    /// The kind whose webhooks tests/webhook_certs.rs sends its requests through: the first
    /// of the project's own kinds with webhooks, else of Kubernetes'.
    pub certs_kind: Option<ResourceContext>,
    /// The `src/webhook` module tree, as `api_groups` (one file per version with webhooks).
    pub webhook_groups: Vec<ApiGroup>,
    /// Whether some kind has several versions (the API registry then merges CRDs).
    pub merges_versions: bool,
    /// The kinds with a conversion webhook (a subset of `crds`, by CRD name).
    pub conversions: Vec<String>,
    /// Whether the manager serves any webhook, admission or conversion (config/webhook).
    pub serves_webhooks: bool,
    pub versions: Versions,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResourceContext {
    pub kind: String,
    /// `a` or `an`, for the kind in comments (`naming::article`).
    pub article: &'static str,
    /// The Rust struct name (the kind unless that would shadow a name in use).
    pub type_name: String,
    pub kind_snake: String,
    pub kind_kebab: String,
    pub plural: String,
    pub short_name: String,
    /// The group as given (`apps`), empty for the domain group.
    pub group: String,
    /// The full API group (`apps.minetto.dev` or `minetto.dev`).
    pub api_group: String,
    pub version: String,
    /// `minetto.dev/v1alpha1`
    pub api_version: String,
    /// `applications.minetto.dev`
    pub crd_name: String,
    pub namespaced: bool,
    pub controller: bool,
    pub deploy_image: bool,
    /// Rust module of the kind's files (`application`; never a keyword).
    pub module: String,
    /// Module path of the version below `crate::api` (`v1alpha1`, `apps::v1alpha1`).
    pub api_rust_path: String,
    /// File path of the types below `src/api` without `.rs` (`v1alpha1/application`).
    pub api_file: String,
    /// Module path of the controller below `crate::controller` (`application`, `apps::application`).
    pub controller_rust_path: String,
    /// File path of the controller below `src/controller` without `.rs`.
    pub controller_file: String,
    /// A flat, unique stem for per-kind files (`application`, `apps_application`).
    pub file_stem: String,
    /// Kebab-case of `file_stem`, for cluster-wide object names (`apps-application`).
    pub name_stem: String,
    /// Sample manifest file name (`minetto.dev_v1alpha1_application.yaml`).
    pub sample_file: String,
    pub finalizer: String,
    /// For a type the project does not define (`--resource=false`): its Rust path, in
    /// k8s-openapi (`k8s_openapi::api::apps::v1::Deployment`) or, for another project's CRD,
    /// in `src/api/external` (`crate::api::external::storage::v1beta1::Backup`); empty for the
    /// project's own APIs.
    pub foreign_type: String,
    /// For a Kubernetes type: an object of it (JSON, no metadata) the envtest suite creates
    /// to see it reconciled; empty when opsdk knows none.
    pub builtin_sample: String,
    /// For another project's CRD: its copy in the project, which the envtest suite installs.
    pub external_crd: String,
    /// One of Kubernetes' own kinds (`--resource=false`, or a webhook on it).
    pub builtin: bool,
    /// For a Kubernetes type: a whole object of it (JSON) its webhook suite sends; empty when
    /// opsdk knows none.
    pub builtin_manifest: String,
    /// The admission webhooks of this version (`opsdk create webhook`).
    pub webhook: WebhookContext,
    /// The version the kind's conversion webhook converts through (`create webhook
    /// --conversion`); empty when the kind has none.
    pub hub: String,
    /// The hub's type below `crate::api` (`v1::Widget`); empty without a hub.
    pub hub_type_path: String,
    /// File path below `src/api` of a spoke's conversion functions, without `.rs`
    /// (`v2/widget_conversion`), and its module (`widget_conversion`).
    pub conversion_file: String,
    pub conversion_module: String,
}

/// A version's admission webhooks, named and routed as kubebuilder names and routes them.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookContext {
    pub defaulting: bool,
    pub validation: bool,
    /// `/mutate-minetto-dev-v1alpha1-application`
    pub mutate_path: String,
    /// `/validate-minetto-dev-v1alpha1-application`
    pub validate_path: String,
    /// `mapplication-v1alpha1.kb.io`, as kubebuilder names it; with the group
    /// (`mapplication-apps-v1alpha1.kb.io`) when another group had a kind of that name and
    /// version first, since names are unique in a configuration.
    pub mutate_name: String,
    /// `vapplication-v1alpha1.kb.io`
    pub validate_name: String,
}

impl WebhookContext {
    fn new(project: &Project, resource: &Resource, api_group: &str) -> WebhookContext {
        let hooks = resource.webhooks.clone().unwrap_or_default();
        let kind = resource.kind.to_lowercase();
        // A name once given stays (alerts and the API server's metrics are keyed by it): a
        // namesake added later takes the group, as does a grouped kind next to one of the
        // domain's group, which has none to take.
        let position = |wanted: &Resource| project.resources.iter().position(|r| r == wanted);
        let namesake = project.resources.iter().any(|r| {
            r.kind.eq_ignore_ascii_case(&resource.kind)
                && r.version == resource.version
                && r.group != resource.group
                && (r.group.is_empty() || position(r) < position(resource))
        });
        let name = |prefix: &str| match resource.group.as_str() {
            group if namesake && !group.is_empty() => {
                format!("{prefix}{kind}-{group}-{}.kb.io", resource.version)
            }
            _ => format!("{prefix}{kind}-{}.kb.io", resource.version),
        };
        let path = |verb: &str| {
            format!(
                "/{verb}-{}-{}-{kind}",
                api_group.replace('.', "-"),
                resource.version
            )
        };
        WebhookContext {
            defaulting: hooks.defaulting,
            validation: hooks.validation,
            mutate_path: path("mutate"),
            validate_path: path("validate"),
            mutate_name: name("m"),
            validate_name: name("v"),
        }
    }
}

impl ResourceContext {
    /// The file in config/crd/bases that `make manifests` writes the kind's CRD to.
    pub fn crd_file(&self) -> String {
        format!("{}_{}.yaml", self.api_group, self.plural)
    }

    /// The stem of the kind's webhook suite in tests/ (`application_v1alpha1_webhook`), which
    /// no kind's own suite may take.
    pub fn webhook_test_stem(&self) -> String {
        format!("{}_{}_webhook", self.file_stem, self.version)
    }

    pub fn new(project: &Project, resource: &Resource) -> ResourceContext {
        let kind_snake = resource.kind.to_snake_case();
        let module = module_ident(&kind_snake);
        let builtin = resource.builtin();
        let api_group = match &builtin {
            Some(builtin) => builtin.api_group.to_string(),
            None if resource.external => format!("{}.{}", resource.group, resource.domain),
            None if resource.group.is_empty() => project.domain.clone(),
            None => format!("{}.{}", resource.group, project.domain),
        };
        let group_prefix = |sep: &str| {
            if resource.group.is_empty() {
                String::new()
            } else {
                format!("{}{sep}", module_ident(&resource.group))
            }
        };
        let version_module = module_ident(&resource.version);
        let api_rust_path = format!("{}{version_module}", group_prefix("::"));
        let webhook = WebhookContext::new(project, resource, &api_group);
        // Only the hub and its spokes convert (a version added later is none until named).
        let hub = project
            .hub_of(resource)
            .filter(|h| {
                h.version == resource.version
                    || h.webhooks
                        .iter()
                        .any(|w| w.spoke.contains(&resource.version))
            })
            .map(|h| h.version.clone())
            .unwrap_or_default();
        let conversion_module = format!("{kind_snake}_conversion");
        // The core group's apiVersion is the version alone.
        let api_version = if api_group.is_empty() {
            resource.version.clone()
        } else {
            format!("{api_group}/{}", resource.version)
        };
        ResourceContext {
            hub_type_path: if hub.is_empty() {
                String::new()
            } else {
                format!(
                    "{}{}::{}",
                    group_prefix("::"),
                    module_ident(&hub),
                    type_ident(&resource.kind)
                )
            },
            hub,
            conversion_file: format!("{}{version_module}/{conversion_module}", group_prefix("/")),
            conversion_module,
            kind: resource.kind.clone(),
            // Kubernetes' own types are named as k8s-openapi names them.
            type_name: if builtin.is_some() || resource.external {
                resource.kind.clone()
            } else {
                type_ident(&resource.kind)
            },
            kind_kebab: resource.kind.to_kebab_case(),
            plural: resource.plural.clone(),
            short_name: resource.short_name.clone(),
            group: resource.group.clone(),
            builtin_manifest: builtin
                .and_then(|b| {
                    crate::naming::builtin_manifest(&api_version, b.kind, "envtest-sample")
                })
                .unwrap_or_default(),
            api_version,
            crd_name: format!("{}.{api_group}", resource.plural),
            finalizer: format!("{}.{api_group}/finalizer", resource.plural),
            sample_file: format!(
                "{api_group}_{}_{}.yaml",
                resource.version,
                resource.kind.to_lowercase()
            ),
            api_group,
            version: resource.version.clone(),
            namespaced: resource.namespaced,
            controller: resource.controller,
            deploy_image: resource.deploy_image,
            api_rust_path: api_rust_path.clone(),
            api_file: format!("{}{version_module}/{module}", group_prefix("/")),
            controller_rust_path: format!("{}{module}", group_prefix("::")),
            controller_file: format!("{}{module}", group_prefix("/")),
            // From the group as written, not its Rust module (`crate_` for group `crate`).
            file_stem: format!(
                "{}{kind_snake}",
                group_stem(&resource.group.replace('-', "_"), "_")
            ),
            name_stem: format!(
                "{}{}",
                group_stem(&resource.group, "-"),
                resource.kind.to_kebab_case()
            ),
            article: article(&resource.kind),
            kind_snake,
            module,
            foreign_type: match builtin {
                Some(builtin) => builtin.rust_path(),
                None if resource.external => {
                    format!("crate::api::external::{api_rust_path}::{}", resource.kind)
                }
                None => String::new(),
            },
            builtin: builtin.is_some(),
            builtin_sample: builtin
                .as_ref()
                .and_then(|b| crate::naming::builtin_sample(b.api_group, b.kind))
                .unwrap_or_default(),
            webhook,
            external_crd: if resource.external {
                resource.path.clone()
            } else {
                String::new()
            },
        }
    }
}

impl ProjectContext {
    pub fn new(project: &Project) -> ProjectContext {
        let resources: Vec<ResourceContext> = project
            .resources
            .iter()
            .map(|r| ResourceContext::new(project, r))
            .collect();
        let path = project
            .repo
            .split_once("://")
            .map_or(project.repo.as_str(), |(_, rest)| rest);
        // Kubernetes' own types have controllers here, but no types, CRD, sample or roles.
        let own: Vec<ResourceContext> = resources
            .iter()
            .filter(|r| r.foreign_type.is_empty())
            .cloned()
            .collect();
        let externals: Vec<ResourceContext> = resources
            .iter()
            .filter(|r| !r.external_crd.is_empty())
            .cloned()
            .collect();
        let crds = crds(&own);
        // The project's own kinds and Kubernetes' (another project's are its own to admit).
        let webhooks: Vec<ResourceContext> = resources
            .iter()
            .filter(|r| r.external_crd.is_empty())
            .filter(|r| r.webhook.defaulting || r.webhook.validation)
            .cloned()
            .collect();
        let conversions: Vec<String> = crds
            .iter()
            .filter(|c| c.conversion.is_some())
            .map(|c| c.crd_name.clone())
            .collect();
        let deploy_image_kinds = kinds_once(own.iter().filter(|r| r.controller && r.deploy_image));
        let reconciled_kinds = kinds_once(own.iter().filter(|r| r.controller));
        ProjectContext {
            serves_webhooks: !webhooks.is_empty() || !conversions.is_empty(),
            conversions,
            webhook_groups: api_groups(&webhooks),
            certs_kind: (webhooks.iter().find(|r| !r.builtin))
                .or(webhooks.first())
                .cloned(),
            webhooks,
            merges_versions: crds.iter().any(|c| c.type_paths.len() > 1),
            domain: project.domain.clone(),
            repo: project.repo.clone(),
            repository_url: format!("https://{path}"),
            name: project.project_name.clone(),
            crate_name: project.project_name.to_snake_case(),
            owner: project.owner.clone(),
            owner_toml: toml_string(&project.owner),
            license: project.license,
            namespaced: project.namespaced,
            helm: project.plugins.helm.is_some(),
            license_spdx: match project.license {
                License::Apache2 => "Apache-2.0",
                License::Mit => "MIT",
                License::None => "",
            },
            controllers: resources.iter().filter(|r| r.controller).cloned().collect(),
            api_groups: api_groups(&own),
            external_groups: api_groups(&externals),
            controller_modules: controller_modules(&resources),
            crds,
            rbac_groups: rbac_groups(&own),
            any_deploy_image: !deploy_image_kinds.is_empty(),
            deploy_image_kinds,
            reconciled_kinds,
            resources: own,
            versions: VERSIONS,
        }
    }
}

/// `text` as a TOML basic string: quoted, with `"` and `\` escaped (`validate::owner` keeps
/// control characters out).
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `resources`, one entry per CRD (the first version of each).
fn kinds_once<'a>(resources: impl Iterator<Item = &'a ResourceContext>) -> Vec<ResourceContext> {
    let mut kinds: Vec<ResourceContext> = Vec::new();
    for r in resources {
        if !kinds.iter().any(|k| k.crd_name == r.crd_name) {
            kinds.push(r.clone());
        }
    }
    kinds
}

/// `group` followed by `sep`, or nothing for the domain's own group.
fn group_stem(group: &str, sep: &str) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!("{group}{sep}")
    }
}
