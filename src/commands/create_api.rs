//! `opsdk create api`: an API (CRD types) and its controller, added to an existing project.

use std::path::Path;

mod names;

use names::{check_crd_file_name, check_names_in_group, check_rust_names};

use anyhow::{Result, bail};

use crate::cli::CreateApiArgs;
use crate::context::{ProjectContext, ResourceContext};
use crate::naming::{DefaultPlural, default_plural};

use super::foreign_api::{builtin_resource, external_crd, external_resource};
use crate::plan::{PlannedFile, Policy};
use crate::plugins;
use crate::project_file::{self, Project, Resource};
use crate::render::{Scope, render};
use crate::validate;
use crate::writer::Force;

/// `args` with kubebuilder's ways of saying them folded in: `--plugins deploy-image` is
/// `--deploy-image`; its `--image` and the like are refused with where opsdk keeps them.
fn with_plugins(args: &CreateApiArgs) -> Result<CreateApiArgs> {
    let given = [
        ("--image", &args.image),
        ("--image-container-command", &args.image_container_command),
        ("--image-container-port", &args.image_container_port),
        ("--run-as-user", &args.run_as_user),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, value)| value.is_some()) {
        bail!(
            "{flag} is a setting of kubebuilder's deploy-image plugin, which builds one image into the manager; opsdk's deploy-image kinds take the image and the port in each object's spec\nhelp: drop {flag} and set spec.image and spec.port in the kind's sample under config/samples"
        );
    }
    let mut args = args.clone();
    if plugins::deploy_image(&args.plugins)? {
        if args.deploy_image == Some(false) {
            bail!(
                "--plugins deploy-image and --deploy-image=false contradict each other\nhelp: drop one of them"
            );
        }
        args.deploy_image = Some(true);
    }
    Ok(args)
}

pub fn run(root: &Path, args: &CreateApiArgs) -> Result<()> {
    let args = &with_plugins(args)?;
    let mut project = super::recorded_types::load(root)?;
    let old = project.clone();
    let external = external_crd(args)?;
    // `--resource=false` for one of the project's own APIs adds the controller it lacks.
    let adds_controller = !args.resource && external.is_none() && own_api(&project, args).is_some();
    let (resource, note) = match &external {
        Some(crd) => (external_resource(&project, args, crd)?, None),
        None => resource_from_args(&project, args)?,
    };
    // Kubernetes' own and other projects' kinds have their scope already.
    if project.namespaced && !resource.namespaced {
        let own = external.is_none() && resource.builtin().is_none();
        bail!(
            "{} {} is cluster-scoped, but the project's manager is namespace-scoped (namespaced: true in {}): it watches only the namespaces in WATCH_NAMESPACE and holds no ClusterRole, so it can neither watch nor be granted a cluster-scoped kind\nhelp: {}make the manager cluster-wide first with `opsdk edit --namespaced=false`",
            ResourceContext::new(&project, &resource).api_version,
            resource.kind,
            project_file::FILE_NAME,
            if own {
                "drop --namespaced=false, or "
            } else {
                ""
            }
        );
    }
    match project
        .resources
        .iter_mut()
        .find(|r| same_gvk(r, &resource))
    {
        // Rewriting an API's files keeps its webhooks (`create webhook`).
        Some(existing) => {
            let webhooks = existing.webhooks.take();
            *existing = Resource {
                webhooks,
                ..resource.clone()
            }
        }
        None => project.resources.push(resource.clone()),
    }
    let ctx = ProjectContext::new(&project);
    let resource_ctx = ResourceContext::new(&project, &resource);
    check_rust_names(&ctx, &resource_ctx)?;
    check_crd_file_name(&resource_ctx)?;
    let mut notes: Vec<String> = note.into_iter().collect();
    if let Some(hub) = project.hub_of(&resource)
        && hub.version != resource.version
        && !hub
            .webhooks
            .iter()
            .any(|w| w.spoke.contains(&resource.version))
    {
        let group = match resource.group.as_str() {
            "" => String::new(),
            g => format!("--group {g} "),
        };
        notes.push(format!(
            "note: kind {kind} converts through {hub}; make {v} a spoke too, or the API server cannot convert it: opsdk create webhook {group}--version {hub} --kind {kind} --conversion --spoke {v} --force",
            kind = resource.kind,
            hub = hub.version,
            v = resource.version
        ));
    }

    let mut plan = render(Scope::Resource, &ctx, Some(&resource_ctx))?;
    plan.notes = notes;
    // Refreshing another project's types leaves its controller and test as they are.
    let types_only = external.is_some() && args.controller == Some(false);
    if adds_controller || types_only {
        // The API's types, samples and roles (or the controller) are the user's already.
        plan.files
            .retain(|f| f.policy != Policy::Create || !root.join(&f.path).exists());
    }
    super::regenerate(root, &ctx, &project, &mut plan)?;
    // The README names the API groups: a kind in a new group changes it.
    super::refresh_readme(&old, &project, &mut plan)?;
    if let Some(crd) = external {
        // The types are the user's to adjust (like the API types), the CRD copy theirs to
        // update; both written once.
        for (path, contents, verbatim) in [
            (
                format!("src/api/external/{}.rs", resource_ctx.api_file),
                crd.types,
                false,
            ),
            (crd.path, crd.yaml, true),
        ] {
            plan.add(PlannedFile {
                path: path.into(),
                contents,
                policy: Policy::Create,
                verbatim,
                previous: None,
            });
        }
    }
    let controller = format!("src/controller/{}.rs", resource_ctx.controller_file);
    let foreign = resource.builtin().is_some() || resource.external;
    let (what, edit) = match (foreign || adds_controller, resource.controller) {
        _ if types_only => (
            "Types of",
            format!("src/api/external/{}.rs", resource_ctx.api_file),
        ),
        (true, _) => ("Controller for", controller),
        (false, false) => ("API", format!("src/api/{}.rs", resource_ctx.api_file)),
        (false, true) => (
            "API",
            format!("src/api/{}.rs and {controller}", resource_ctx.api_file),
        ),
    };
    let mut next = format!(
        "{what} {} {} scaffolded. Next: fill in {edit}, then\n  make manifests && cargo build && cargo test",
        resource_ctx.api_version, resource_ctx.kind
    );
    // A deploy-image kind's spec says what to run; without a controller nothing runs it.
    let controlled = (project.resources.iter()).any(|r| r.same_kind(&resource) && r.controller);
    if resource.deploy_image && !controlled {
        next.push_str(&format!(
            "\nNo controller runs its Deployment and Service yet: add it with\n  opsdk create api {}--version {} --kind {} --resource=false --controller",
            super::delete_api::group_flag(&resource.group),
            resource.version,
            resource.kind
        ));
    }
    let force = if args.force { Force::On } else { Force::Off };
    super::finish(root, plan, force, args.dry_run, &next)
}

fn same_gvk(a: &Resource, b: &Resource) -> bool {
    a.same_kind(b) && a.version == b.version
}

/// The resource `args` describe, checked against the project, and a note for the user when
/// the plural opsdk chose is not kubebuilder's.
fn resource_from_args(
    project: &Project,
    args: &CreateApiArgs,
) -> Result<(Resource, Option<String>)> {
    if !args.resource && args.external_api_crd.is_none() {
        return match own_api(project, args) {
            Some(own) => Ok((controller_for(project, own, args)?, None)),
            None => Ok((builtin_resource(project, args)?, None)),
        };
    }
    if !args.api.group.is_empty() {
        validate::group(&args.api.group)?;
    }
    validate::version(&args.api.version)?;
    validate::kind(&args.api.kind)?;
    validate::hides_no_crate(&args.api.group, &args.api.kind)?;
    // A new version of a recorded kind, or the same one rewritten with --force, keeps its
    // plural and scope: every version is one CRD, which the API server cannot rename or rescope.
    let recorded = project
        .resources
        .iter()
        .find(|r| r.group == args.api.group && r.kind == args.api.kind);
    let namespaced = args
        .namespaced
        .unwrap_or(recorded.is_none_or(|r| r.namespaced));
    let (plural, note) = match (&args.plural, recorded.map(|r| r.plural.clone())) {
        (Some(plural), _) => (plural.clone(), None),
        (None, Some(plural)) => (plural, None),
        (None, None) => {
            let default = default_plural(&args.api.kind);
            let note = plural_note(&args.api.kind, &default);
            (default.plural, note)
        }
    };
    validate::plural(&plural)?;
    // --force rewrites a version's files as PROJECT records it: with or without its controller.
    let controller = args.controller.unwrap_or_else(|| {
        let same = |r: &&Resource| r.group == args.api.group && r.kind == args.api.kind;
        let version = |r: &&Resource| r.version == args.api.version;
        let recorded = project.resources.iter().filter(same).find(version);
        recorded.is_none_or(|r| r.controller)
    });

    let probe = Resource {
        domain: String::new(),
        path: String::new(),
        external: false,
        group: args.api.group.clone(),
        version: args.api.version.clone(),
        kind: args.api.kind.clone(),
        plural,
        short_name: String::new(),
        namespaced,
        controller,
        deploy_image: args.deploy_image.unwrap_or(args.api.kind == "Application"),
        webhooks: None,
    };
    let api = |r: &Resource| format!("{}/{} {}", group_or_domain(project, r), r.version, r.kind);
    validate::crd_name(&format!(
        "{}.{}",
        probe.plural,
        group_or_domain(project, &probe)
    ))?;
    if let Some(foreign) = (project.resources.iter())
        .find(|r| r.same_kind(&probe) && (r.external || r.builtin().is_some()))
    {
        let has = match (foreign.controller, foreign.admission()) {
            (true, true) => "a controller and webhooks",
            (true, false) => "a controller",
            (false, _) => "webhooks",
        };
        bail!(
            "the project has {has} for {}/{} {}, a type it does not define; an API of the same --group and --kind would share its files\nhelp: choose another --group or --kind",
            foreign.group,
            foreign.version,
            foreign.kind
        );
    }
    let siblings: Vec<&Resource> = project
        .resources
        .iter()
        .filter(|r| r.same_kind(&probe))
        .collect();

    if let Some(existing) = siblings.iter().find(|r| r.version == probe.version) {
        if !args.force {
            bail!(
                "API {} already exists in {}\nhelp: pass --force to rewrite its files, or choose another --version or --kind",
                api(existing),
                project_file::FILE_NAME
            );
        }
        if existing.plural != probe.plural || existing.namespaced != probe.namespaced {
            bail!(
                "API {} is recorded with plural {:?} and namespaced {}, which name its CRD: --force rewrites its files, but the API server cannot rename or rescope a CRD\nhelp: drop --plural and --namespaced, or run `opsdk delete api` first and create it anew",
                api(existing),
                existing.plural,
                existing.namespaced
            );
        }
        if existing.controller && !controller {
            bail!(
                "API {} has a controller, which --controller=false would leave behind in src/controller and tests\nhelp: drop --controller=false to rewrite the controller too, or run `opsdk delete api` first",
                api(existing)
            );
        }
    }
    // Versions of one kind share one CRD: names, scope and spec shape must agree.
    let mut resource = probe;
    if let Some(existing) = siblings.iter().find(|r| r.version == resource.version) {
        // --force rewrites the files the kind has: its controller stays the kind it was, its
        // short name the one its types declare.
        resource.deploy_image = args.deploy_image.unwrap_or(existing.deploy_image);
        resource.short_name = existing.short_name.clone();
    }
    if let Some(first) = siblings.iter().find(|r| r.version != resource.version) {
        if resource.plural != first.plural || resource.namespaced != first.namespaced {
            bail!(
                "{} must have the same --plural and --namespaced as {} (plural {:?}, namespaced {})\nhelp: pass --plural {} --namespaced={}",
                api(&resource),
                api(first),
                first.plural,
                first.namespaced,
                first.plural,
                first.namespaced
            );
        }
        // Every version has the deploy-image spec, or none does: the roles, the scale
        // subresource and the controller are the kind's.
        if let Some(deploy_image) = args.deploy_image
            && deploy_image != first.deploy_image
        {
            bail!(
                "{} cannot differ from {} in --deploy-image: a deploy-image kind has the image, replicas and port spec and the scale subresource in every version, or in none\nhelp: drop --deploy-image={deploy_image} (version {} gets --deploy-image={} as {} has it)",
                api(&resource),
                api(first),
                resource.version,
                first.deploy_image,
                first.version
            );
        }
        resource.deploy_image = first.deploy_image;
        resource.short_name = first.short_name.clone();
        if let Some(owner) = siblings
            .iter()
            .find(|r| r.controller && r.version != resource.version)
            && controller
        {
            bail!(
                "kind {} already has a controller, for version {}\nhelp: pass --controller=false to add version {} of the types only",
                resource.kind,
                owner.version,
                resource.version
            );
        }
    } else {
        check_names_in_group(project, &resource, &api)?;
    }
    if resource.deploy_image && !resource.namespaced {
        bail!(
            "--deploy-image needs a namespaced kind: a cluster-scoped {} has no namespace for its Deployment and Service\nhelp: drop --namespaced=false, or pass --deploy-image=false",
            resource.kind
        );
    }
    Ok((resource, note))
}

/// The project's own API that `args` name, when they name one.
fn own_api<'a>(project: &'a Project, args: &CreateApiArgs) -> Option<&'a Resource> {
    project.resources.iter().find(|r| {
        !r.external
            && r.builtin().is_none()
            && r.group == args.api.group
            && r.version == args.api.version
            && r.kind == args.api.kind
    })
}

/// `own` with the controller `--resource=false --controller` adds to it, as kubebuilder adds
/// one to an API created without: its types stay as they are.
fn controller_for(project: &Project, own: &Resource, args: &CreateApiArgs) -> Result<Resource> {
    let api = format!(
        "{}/{} {}",
        group_or_domain(project, own),
        own.version,
        own.kind
    );
    if args.controller == Some(false) {
        bail!(
            "nothing to scaffold: --resource=false --controller=false for API {api}\nhelp: pass --controller to add its controller"
        );
    }
    if let Some(owner) = project
        .resources
        .iter()
        .find(|r| r.same_kind(own) && r.controller)
    {
        bail!(
            "kind {} already has a controller, for version {}\nhelp: edit its controller in src/controller",
            own.kind,
            owner.version
        );
    }
    if args.plural.as_ref().is_some_and(|p| *p != own.plural)
        || args.namespaced.is_some_and(|n| n != own.namespaced)
    {
        bail!(
            "API {api} exists with plural {:?} and namespaced {}: --resource=false adds its controller only\nhelp: drop --plural and --namespaced",
            own.plural,
            own.namespaced
        );
    }
    if args
        .deploy_image
        .is_some_and(|wanted| wanted != own.deploy_image)
    {
        bail!(
            "API {api} has {} types: --deploy-image cannot change them when adding its controller\nhelp: drop --deploy-image",
            if own.deploy_image {
                "deploy-image"
            } else {
                "its own"
            }
        );
    }
    Ok(Resource {
        controller: true,
        ..own.clone()
    })
}

/// One line telling the user where opsdk's default plural departs from kubebuilder's.
fn plural_note(kind: &str, default: &DefaultPlural) -> Option<String> {
    let theirs = default.kubebuilder.as_ref()?;
    let ours = &default.plural;
    Some(if validate::plural(theirs).is_ok() {
        format!(
            "note: plural {ours:?} differs from kubebuilder's {theirs:?}; pass --plural {theirs} to match it"
        )
    } else {
        format!(
            "note: kubebuilder's plural for {kind} would be {theirs:?}, not a valid resource name; opsdk uses {ours:?}"
        )
    })
}

/// The API group of `r` as its apiVersion names it: `apps.minetto.dev`, a built-in type's
/// (`apps`, `core` for the core group), another project's (its own domain).
pub(super) fn group_or_domain(project: &Project, r: &Resource) -> String {
    if let Some(builtin) = r.builtin() {
        return match builtin.api_group {
            "" => "core".to_string(),
            group => group.to_string(),
        };
    }
    let domain = if r.external && !r.domain.is_empty() {
        &r.domain
    } else {
        &project.domain
    };
    if r.group.is_empty() {
        domain.clone()
    } else {
        format!("{}.{domain}", r.group)
    }
}
