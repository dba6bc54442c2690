//! Module names a group or kind may not take: those of opsdk's own code and those of the
//! crates the generated code uses.

use anyhow::Result;
use heck::ToSnakeCase;

use super::invalid;
use crate::naming::module_ident;

/// The modules opsdk's own code holds where groups (and, in src/controller, the kinds of the
/// domain group) have theirs, with the folder of each: src/api's `condition` and `external`
/// (other projects' types), src/controller's helpers and tests, src/webhook's server.
const GENERATED_MODULES: &[(&str, &str)] = &[
    ("condition", "src/api"),
    ("external", "src/api"),
    ("children", "src/controller"),
    ("compact", "src/controller"),
    ("finalizer_order", "src/controller"),
    ("rollout", "src/controller"),
    ("test_support", "src/controller"),
    ("tests", "src/controller"),
    ("flags", "src/webhook"),
    ("admission", "src/webhook"),
    ("ca_bundle", "src/webhook"),
    ("certs", "src/webhook"),
    ("configs", "src/webhook"),
    ("conversion", "src/webhook"),
    ("intake", "src/webhook"),
    ("keeper", "src/webhook"),
    ("metrics", "src/webhook"),
    ("samples", "src/webhook"),
    ("serve", "src/webhook"),
];

/// The file of opsdk's own code that holds `module`, if one does: the name is taken.
pub fn generated_module_file(module: &str) -> Option<String> {
    (GENERATED_MODULES.iter())
        .find(|(name, _)| *name == module)
        .map(|(name, folder)| format!("{folder}/{name}.rs"))
}

/// The crates the generated code uses by name (`use kube::...`, `std::sync::Arc`): a group's
/// or a kind's module of the same name would hide the crate from the code next to it.
pub const CRATE_MODULES: &[&str] = &[
    "alloc",
    "axum",
    "clap",
    "core",
    "futures",
    "http",
    "json_patch",
    "k8s_openapi",
    "kube",
    "prometheus_client",
    "rcgen",
    "ring",
    "rustls",
    "schemars",
    "serde",
    "serde_json",
    "serde_saphyr",
    "std",
    "tempfile",
    "thiserror",
    "time",
    "tokio",
    "tokio_rustls",
    "tower",
    "tower_test",
    "tracing",
    "tracing_subscriber",
];

/// Refuses a new API whose group's or kind's module would be one of `CRATE_MODULES`. Checked
/// when the names are chosen, not when PROJECT is read: a project that has such a kind and
/// builds (nothing next to it used that crate) keeps working.
pub fn hides_no_crate(group: &str, kind: &str) -> Result<()> {
    let modules = [
        (
            module_ident(group),
            format!("--group {group:?}"),
            "group name",
        ),
        (
            module_ident(&kind.to_snake_case()),
            format!("--kind {kind:?}"),
            "--kind",
        ),
    ];
    for (module, flag, what) in modules {
        if CRATE_MODULES.contains(&module.as_str()) {
            return invalid(
                format!(
                    "invalid {flag}: its module `{module}` would hide the `{module}` crate the generated code uses"
                ),
                &format!("choose another {what}"),
            );
        }
    }
    Ok(())
}
