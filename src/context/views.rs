//! The project-wide views the templates iterate: kinds by API group and version, controller
//! modules by group, one CRD per kind with its versions, RBAC rules by group.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ResourceContext;
use crate::naming::module_ident;

#[derive(Debug, Serialize)]
pub struct ApiGroup {
    /// Rust module for a named group; empty for the domain group (versions sit at the top).
    pub module: String,
    pub versions: Vec<ApiVersionModule>,
}

#[derive(Debug, Serialize)]
pub struct ApiVersionModule {
    pub module: String,
    pub kinds: Vec<ResourceContext>,
}

#[derive(Debug, Serialize)]
pub struct ModuleGroup {
    /// Empty for the domain group, whose modules sit at the top.
    pub module: String,
    pub modules: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct CrdContext {
    pub kind: String,
    pub crd_name: String,
    /// Stem of the kind's per-kind files (`application`, `apps_application`).
    pub file_stem: String,
    /// Stem of the kind's cluster-wide object names (`application`, `apps-application`).
    pub name_stem: String,
    pub plural: String,
    pub api_group: String,
    /// File `make manifests` writes under `config/crd/bases` (`minetto.dev_applications.yaml`).
    pub file: String,
    /// `v1alpha1::Application` paths below `crate::api`, oldest version first.
    pub type_paths: Vec<String>,
    /// The storage version: the hub of a conversion webhook, else the first version created,
    /// so stored objects never change shape behind the user's back.
    pub storage_version: String,
    /// Whether the kind is namespaced.
    pub namespaced: bool,
    /// Whether the kind has the scale subresource (the Deployment+Service controller's kinds).
    pub scale: bool,
    /// The kind's conversion webhook, when it has one.
    pub conversion: Option<CrdConversion>,
}

/// A kind whose versions convert through one of them, the hub (`create webhook --conversion`).
#[derive(Debug, Serialize)]
pub struct CrdConversion {
    pub hub: String,
    /// The hub's type below `crate::api` (`v1::Widget`).
    pub hub_path: String,
    pub spokes: Vec<SpokeContext>,
}

#[derive(Debug, Serialize)]
pub struct SpokeContext {
    pub version: String,
    /// The spoke's type below `crate::api` (`v2::Widget`).
    pub path: String,
}

#[derive(Debug, Serialize)]
pub struct RbacGroup {
    pub api_group: String,
    pub plurals: Vec<String>,
}

pub(super) fn api_groups(resources: &[ResourceContext]) -> Vec<ApiGroup> {
    let mut tree: BTreeMap<String, BTreeMap<String, Vec<ResourceContext>>> = BTreeMap::new();
    for r in resources {
        let group = if r.group.is_empty() {
            String::new()
        } else {
            module_ident(&r.group)
        };
        tree.entry(group)
            .or_default()
            .entry(module_ident(&r.version))
            .or_default()
            .push(r.clone());
    }
    tree.into_iter()
        .map(|(module, versions)| ApiGroup {
            module,
            versions: versions
                .into_iter()
                .map(|(module, kinds)| ApiVersionModule { module, kinds })
                .collect(),
        })
        .collect()
}

pub(super) fn controller_modules(resources: &[ResourceContext]) -> Vec<ModuleGroup> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in resources.iter().filter(|r| r.controller) {
        let group = if r.group.is_empty() {
            String::new()
        } else {
            module_ident(&r.group)
        };
        groups.entry(group).or_default().push(r.module.clone());
    }
    // Sorted as rustfmt orders module declarations.
    groups
        .into_iter()
        .map(|(module, mut modules)| {
            modules.sort();
            ModuleGroup { module, modules }
        })
        .collect()
}

pub(super) fn crds(resources: &[ResourceContext]) -> Vec<CrdContext> {
    let mut out: Vec<CrdContext> = Vec::new();
    for r in resources {
        let path = format!("{}::{}", r.api_rust_path, r.type_name);
        let conversion = (!r.hub.is_empty()).then(|| CrdConversion {
            hub: r.hub.clone(),
            hub_path: r.hub_type_path.clone(),
            spokes: Vec::new(),
        });
        let spoke = (!r.hub.is_empty() && r.hub != r.version).then(|| SpokeContext {
            version: r.version.clone(),
            path: path.clone(),
        });
        match out.iter_mut().find(|c| c.crd_name == r.crd_name) {
            Some(crd) => {
                crd.type_paths.push(path);
                crd.scale |= r.deploy_image;
                if let Some(hub) = conversion {
                    crd.storage_version = hub.hub.clone();
                    let conversion = crd.conversion.get_or_insert(hub);
                    conversion.spokes.extend(spoke);
                }
            }
            None => out.push(CrdContext {
                namespaced: r.namespaced,
                scale: r.deploy_image,
                conversion: conversion.map(|mut c| {
                    c.spokes.extend(spoke);
                    c
                }),
                kind: r.kind.clone(),
                crd_name: r.crd_name.clone(),
                file_stem: r.file_stem.clone(),
                name_stem: r.name_stem.clone(),
                plural: r.plural.clone(),
                api_group: r.api_group.clone(),
                file: r.crd_file(),
                type_paths: vec![path],
                storage_version: if r.hub.is_empty() {
                    r.version.clone()
                } else {
                    r.hub.clone()
                },
            }),
        }
    }
    out
}

pub(super) fn rbac_groups(resources: &[ResourceContext]) -> Vec<RbacGroup> {
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in resources {
        let plurals = groups.entry(&r.api_group).or_default();
        if !plurals.contains(&r.plural) {
            plurals.push(r.plural.clone());
        }
    }
    groups
        .into_iter()
        .map(|(g, plurals)| RbacGroup {
            api_group: g.to_string(),
            plurals,
        })
        .collect()
}
