//! `create api` for types the project does not define (`--resource=false`): Kubernetes' own
//! types, and other projects' CRDs (`--external-api-crd`). A controller, no API.

use anyhow::{Result, bail};

use crate::cli::{ApiArgs, CreateApiArgs, CreateWebhookArgs};
use crate::external_crd::ExternalCrd;
use crate::naming::BuiltinType;
use crate::project_file::{self, Project, Resource};

/// The CRD of `--external-api-crd`, which needs `--resource=false`.
pub(super) fn external_crd(args: &CreateApiArgs) -> Result<Option<ExternalCrd>> {
    let Some(file) = &args.external_api_crd else {
        return Ok(None);
    };
    if args.resource {
        bail!(
            "--external-api-crd is for a type another project defines, with no API scaffolded here\nhelp: add --resource=false"
        );
    }
    let api = &args.api;
    ExternalCrd::read(file, &api.group, &api.version, &api.kind).map(Some)
}

/// A controller for another project's CRD, recorded as kubebuilder records external types:
/// `external: true`, the group split into group and domain, `path` the CRD's copy here.
pub(super) fn external_resource(
    project: &Project,
    args: &CreateApiArgs,
    crd: &ExternalCrd,
) -> Result<Resource> {
    if args.deploy_image == Some(true) || args.plural.is_some() {
        bail!(
            "--external-api-crd makes a controller for {}: --deploy-image and --plural do not apply\nhelp: drop them",
            crd.kind
        );
    }
    if let Some(namespaced) = args.namespaced
        && namespaced != crd.namespaced
    {
        let scope = if crd.namespaced {
            "namespaced"
        } else {
            "cluster-scoped"
        };
        bail!(
            "--namespaced={namespaced} contradicts the CRD, which makes {} {scope}\nhelp: drop --namespaced: the scope is the CRD's",
            crd.kind
        );
    }
    let (group, domain) = crd
        .group
        .split_once('.')
        .unwrap_or((crd.group.as_str(), ""));
    let resource = Resource {
        domain: domain.into(),
        path: crd.path.clone(),
        external: true,
        group: group.into(),
        version: args.api.version.clone(),
        kind: crd.kind.clone(),
        plural: crd.plural.clone(),
        short_name: String::new(),
        namespaced: crd.namespaced,
        controller: true,
        deploy_image: false,
        webhooks: None,
    };
    let full_group = |r: &Resource| super::create_api::group_or_domain(project, r);
    if let Some(own) = (project.resources.iter())
        .find(|r| !r.external && r.kind == resource.kind && full_group(r) == crd.group)
    {
        bail!(
            "{} {} is this project's own API (version {}): --external-api-crd is for types another project defines\nhelp: drop --resource=false and --external-api-crd, or pass another project's CRD",
            crd.group,
            crd.kind,
            own.version
        );
    }
    let exists = project.resources.iter().any(|r| r.same_kind(&resource));
    if exists && !args.force {
        bail!(
            "{} {} already has a controller in {}\nhelp: pass --controller=false --force to make its types and CRD copy again from this CRD (your controller is kept), or --force to rewrite the controller too",
            crd.group,
            crd.kind,
            project_file::FILE_NAME
        );
    }
    if args.controller == Some(false) && !exists {
        bail!(
            "--external-api-crd makes a controller for {}: --controller=false only refreshes the types of one the project has\nhelp: drop --controller=false",
            crd.kind
        );
    }
    Ok(resource)
}

/// A controller for one of Kubernetes' own types (`--resource=false`), recorded in PROJECT as
/// kubebuilder records it (`core: true`, its domain for the group, `path:
/// k8s.io/api/<group>/<version>`).
pub(super) fn builtin_resource(project: &Project, args: &CreateApiArgs) -> Result<Resource> {
    let api = &args.api;
    if args.controller == Some(false) {
        bail!(
            "--resource=false --controller=false would scaffold nothing\nhelp: drop --controller=false to get a controller for {}",
            api.kind
        );
    }
    let Some(builtin) = BuiltinType::find(&api.group, &api.version, &api.kind) else {
        // Not Kubernetes': a version this project's kind lacks, most likely.
        let ours: Vec<&str> = (project.resources.iter())
            .filter(|r| r.group == api.group && r.kind == api.kind && r.builtin().is_none())
            .map(|r| r.version.as_str())
            .collect();
        if !ours.is_empty() {
            let group = super::delete_api::group_flag(&api.group);
            bail!(
                "{} is this project's kind, without a version {:?} (its versions: {})\nhelp: add the version first, `opsdk create api {group}--version {} --kind {} --controller=false`; --resource=false then adds a controller to it",
                api.kind,
                api.version,
                ours.join(", "),
                api.version,
                api.kind
            );
        }
        bail!(
            "{}/{} {} is not a Kubernetes {} type\nhelp: --resource=false makes a controller for a type Kubernetes defines: {}",
            if api.group.is_empty() {
                "core"
            } else {
                &api.group
            },
            api.version,
            api.kind,
            crate::versions::VERSIONS.kubernetes,
            BuiltinType::suggestions(&api.group)
        );
    };
    // --namespaced is true unless given: false says the user thinks the type cluster-scoped.
    if args.deploy_image == Some(true) || args.plural.is_some() || args.namespaced == Some(false) {
        bail!(
            "--deploy-image, --plural and --namespaced apply to the project's own APIs, not to {} (its scope is Kubernetes')\nhelp: drop them, or drop --resource=false",
            builtin.kind
        );
    }
    let resource = builtin_entry(builtin, true);
    // A kind recorded only for its webhooks (`create webhook`) gets its controller.
    let controlled = (project.resources.iter()).any(|r| r.same_kind(&resource) && r.controller);
    if controlled && !args.force {
        bail!(
            "{}/{} {} already has a controller in {}\nhelp: pass --force to rewrite its files",
            resource.group,
            resource.version,
            resource.kind,
            project_file::FILE_NAME
        );
    }
    Ok(resource)
}

/// Kubernetes' own type `builtin` as PROJECT records it, as kubebuilder does (`core: true`,
/// its domain for the group, `path: k8s.io/api/<group>/<version>`).
fn builtin_entry(builtin: BuiltinType, controller: bool) -> Resource {
    Resource {
        domain: builtin.kubebuilder_domain().into(),
        path: builtin.path(),
        external: false,
        group: builtin.group_flag().into(),
        version: builtin.version.into(),
        kind: builtin.kind.into(),
        plural: builtin.plural.into(),
        short_name: String::new(),
        namespaced: builtin.namespaced,
        controller,
        deploy_image: false,
        webhooks: None,
    }
}

/// For `create webhook` on one of Kubernetes' own kinds, which needs no `create api` first
/// (kubebuilder 4.3+ alike): the index of its PROJECT entry, recorded now when the kind has
/// none. `not_found` when `api` names no Kubernetes type, with what it may have meant.
pub(super) fn builtin_for_webhook(
    project: &mut Project,
    api: &ApiArgs,
    not_found: anyhow::Error,
) -> Result<usize> {
    // As in kubebuilder, no group is the project's domain, never Kubernetes' core group.
    let builtin = (!api.group.is_empty())
        .then(|| BuiltinType::find(&api.group, &api.version, &api.kind))
        .flatten();
    let Some(builtin) = builtin else {
        if api.group.is_empty() && BuiltinType::find("core", &api.version, &api.kind).is_some() {
            let said = not_found.to_string();
            let error = said.split("\nhelp:").next().unwrap_or_default();
            bail!(
                "{error}\nhelp: for Kubernetes' {}, pass --group core",
                api.kind
            );
        }
        if !api.group.is_empty()
            && BuiltinType::is_group(&api.group)
            && !project
                .resources
                .iter()
                .any(|r| r.group == api.group && r.builtin().is_none())
        {
            bail!(
                "{}/{} {} is not a Kubernetes {} type\nhelp: webhooks for Kubernetes' kinds take one of {}",
                api.group,
                api.version,
                api.kind,
                crate::versions::VERSIONS.kubernetes,
                BuiltinType::for_webhooks().join(", ")
            );
        }
        return Err(not_found);
    };
    let entry = builtin_entry(builtin, false);
    let recorded =
        (project.resources.iter()).position(|r| r.same_kind(&entry) && r.version == entry.version);
    Ok(recorded.unwrap_or_else(|| {
        project.resources.push(entry);
        project.resources.len() - 1
    }))
}

/// What a webhook on Kubernetes' own `builtin` cannot do, refused before anything is written.
pub(super) fn check_builtin_webhooks(
    project: &Project,
    builtin: BuiltinType,
    args: &CreateWebhookArgs,
) -> Result<()> {
    let kind = builtin.kind;
    if args.conversion || !args.spoke.is_empty() {
        bail!(
            "Kubernetes converts the versions of its own kinds: {kind} takes no conversion webhook\nhelp: drop --conversion and --spoke; conversion webhooks are for this project's kinds with several versions"
        );
    }
    if builtin.api_group == "admissionregistration.k8s.io" {
        bail!(
            "the API server never calls admission webhooks for {kind} objects (they could lock it out of its own admission settings)\nhelp: webhooks are for other kinds"
        );
    }
    if !builtin.namespaced && kind != "Namespace" {
        bail!(
            "{kind} is cluster-scoped: a webhook on it could not skip Kubernetes' own writes nor the manager's (a namespaceSelector does not apply to it), and failing closed it would hold them up\nhelp: a ValidatingAdmissionPolicy (CEL rules, evaluated by the API server) needs no webhook to answer"
        );
    }
    if project.namespaced {
        bail!(
            "a webhook on {kind} would be called only in the manager's own namespace (namespaced: true in {}), where, failing closed, it would hold up the manager's own Pods, Secrets and Leases, and the manager with them\nhelp: make the manager cluster-wide first with `opsdk edit --namespaced=false`: its webhooks on Kubernetes' kinds then skip its own namespace and Kubernetes'",
            project_file::FILE_NAME
        );
    }
    if crate::naming::builtin_sample(builtin.api_group, kind).is_none() {
        bail!(
            "opsdk has no test object of {kind}, which the webhook suite needs to send the API server\nhelp: Kubernetes' kinds opsdk scaffolds webhooks for: {}",
            BuiltinType::for_webhooks().join(", ")
        );
    }
    Ok(())
}
