//! Turns the embedded `templates/` tree into a plan. The tree mirrors the generated project:
//! only `*.tera` files are rendered (the suffix is stripped), other files are copied, and
//! `_partials/` holds fragments for `{% include %}` that are never written on their own.
//!
//! A template's scope follows from the template itself:
//! - its path names `{{ webhook.` -> rendered once per resource with webhooks (`create
//!   webhook`; `webhook` is the resource), the user's file;
//! - its path names `{{ conversion.` -> rendered once per spoke of a conversion webhook
//!   (`create webhook --conversion`; `conversion` is the spoke), the user's file;
//! - its path names `resource.` -> rendered once per resource, the user's file;
//! - its first line carries the generated marker -> opsdk's file, rendered from the whole PROJECT;
//! - otherwise -> written once by `init`, the user's file.
//!
//! A plugin's templates (`dist/chart/` for `helm`) are rendered only for projects that use the
//! plugin.
//!
//! A template that renders to nothing but whitespace produces no file (a controller for a
//! resource created with `--controller=false`, a license for `--license none`).

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{Result, anyhow};
use include_dir::{Dir, DirEntry, include_dir};
use tera::{Context, Tera};

use crate::context::{ProjectContext, ResourceContext};
use crate::lockfile;
use crate::plan::{GENERATED_MARKER, Plan, PlannedFile, Policy};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");
const PARTIALS: &str = "_partials/";
/// The Helm plugin's chart.
const HELM_CHART: &str = "dist/chart/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Init,
    Resource,
    Webhook,
    Conversion,
    Generated,
}

struct Template {
    /// Path inside `templates/`, also the Tera template name.
    name: &'static str,
    text: &'static str,
    /// `None` for partials, which are only included.
    scope: Option<Scope>,
    rendered: bool,
}

fn all_files<'a>(dir: &'a Dir<'a>, out: &mut Vec<&'a include_dir::File<'a>>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => all_files(d, out),
            DirEntry::File(f) => out.push(f),
        }
    }
}

/// Every embedded file, sorted by path.
fn catalog() -> &'static [Template] {
    static CATALOG: OnceLock<Vec<Template>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut files = Vec::new();
        all_files(&TEMPLATES, &mut files);
        let mut catalog: Vec<_> = files
            .into_iter()
            .map(|file| {
                let name = file.path().to_str().expect("template paths are UTF-8");
                let text = file.contents_utf8().expect("templates are UTF-8");
                let scope = if name.starts_with(PARTIALS) {
                    None
                } else if name.contains("{{ webhook.") {
                    Some(Scope::Webhook)
                } else if name.contains("{{ conversion.") {
                    Some(Scope::Conversion)
                } else if name.contains("resource.") {
                    Some(Scope::Resource)
                } else if text
                    .lines()
                    .next()
                    .is_some_and(|l| l.contains(GENERATED_MARKER))
                {
                    Some(Scope::Generated)
                } else {
                    Some(Scope::Init)
                };
                let rendered = name.ends_with(".tera");
                Template {
                    name,
                    text,
                    scope,
                    rendered,
                }
            })
            .collect();
        catalog.sort_by_key(|t| t.name);
        catalog
    })
}

/// Every template and partial, parsed once per process: Tera parses the whole tree in about
/// half a millisecond, so no command needs to choose. A unit test keeps the tree parsable.
fn tera() -> &'static Tera {
    static TERA: OnceLock<Tera> = OnceLock::new();
    TERA.get_or_init(|| {
        let mut tera = Tera::default();
        tera.autoescape_on(Vec::<&str>::new());
        let templates = catalog()
            .iter()
            .filter(|t| t.rendered || t.scope.is_none())
            .map(|t| (t.name, t.text));
        if let Err(err) = tera.add_raw_templates(templates) {
            panic!("{}", tera_error("templates/", err));
        }
        tera
    })
}

/// Renders every template of `scope`. For `Scope::Resource`, `Scope::Webhook` and
/// `Scope::Conversion` (a spoke), `resource` is the one to render.
pub fn render(
    scope: Scope,
    project: &ProjectContext,
    resource: Option<&ResourceContext>,
) -> Result<Plan> {
    let tera = tera();
    let mut ctx = Context::new();
    ctx.insert("project", project);
    if let Some(resource) = resource {
        ctx.insert("resource", resource);
        ctx.insert("webhook", resource);
        ctx.insert("conversion", resource);
    }
    let mut plan = Plan::default();
    let wanted =
        |t: &&Template| t.scope == Some(scope) && (project.helm || !t.name.starts_with(HELM_CHART));
    for template in catalog().iter().filter(wanted) {
        let contents = if template.rendered {
            tera.render(template.name, &ctx)
                .map_err(|e| tera_error(template.name, e))?
        } else {
            template.text.to_string()
        };
        let path = Tera::one_off(template.name.trim_end_matches(".tera"), &ctx, false)
            .map_err(|e| tera_error(template.name, e))?;
        let contents = if template.name == lockfile::TEMPLATE {
            lockfile::in_cargo_order(&contents)
        } else {
            contents
        };
        if contents.trim().is_empty() {
            plan.empty.push(PathBuf::from(path));
            continue;
        }
        plan.add(PlannedFile {
            path: PathBuf::from(path),
            contents,
            policy: if scope == Scope::Generated {
                Policy::Regenerate
            } else {
                Policy::Create
            },
            verbatim: !template.rendered,
            previous: None,
        });
    }
    Ok(plan)
}

/// The text of the template at `name` (a path inside `templates/`).
pub fn template_text(name: &str) -> Option<&'static str> {
    catalog().iter().find(|t| t.name == name).map(|t| t.text)
}

/// The modules at the top of the generated crate (`pub mod` in src/lib.rs) and of its tests
/// (the folders of tests/ they share), each with the file or folder that holds it.
pub fn top_modules() -> Vec<(String, String)> {
    let lib = template_text("src/lib.rs.tera").unwrap_or_default();
    let crate_modules = (lib.lines())
        .filter_map(|line| line.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(|module| (module.to_string(), format!("src/{module}.rs")));
    let test_modules = (catalog().iter()).filter_map(|t| {
        let folder = t.name.strip_prefix("tests/")?.split_once('/')?.0;
        Some((folder.to_string(), format!("tests/{folder}/")))
    });
    let mut modules: Vec<_> = crate_modules.chain(test_modules).collect();
    modules.dedup();
    modules
}

/// Tera hides the cause in its source chain; flatten it into one message.
fn tera_error(name: &str, err: tera::Error) -> anyhow::Error {
    let mut msg = format!("rendering template {name}: {err}");
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        msg.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    anyhow!(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_modules_are_read_from_the_templates() {
        let modules = top_modules();
        for (module, file) in [
            ("controller", "src/controller.rs"),
            ("telemetry", "src/telemetry.rs"),
            ("envtest", "tests/envtest/"),
            ("conversion_server", "tests/conversion_server/"),
        ] {
            assert!(
                modules.contains(&(module.into(), file.into())),
                "{modules:?}"
            );
        }
    }

    /// A kind's or group's module next to one of these would be overwritten by it.
    #[test]
    fn every_module_opsdk_writes_where_kinds_have_theirs_is_reserved() {
        let folders = ["src/api/", "src/controller/", "src/webhook/"];
        for template in catalog().iter().filter(|t| !t.name.contains("{{")) {
            let Some(rest) = folders.iter().find_map(|f| template.name.strip_prefix(f)) else {
                continue;
            };
            let module = rest.split(['/', '.']).next().unwrap_or_default();
            if module != "mod" {
                let reserved = crate::validate::generated_module_file(module);
                assert!(
                    reserved.is_some(),
                    "{module} ({}) is not in GENERATED_MODULES",
                    template.name
                );
            }
        }
    }

    #[test]
    fn every_template_parses() {
        assert!(tera().get_template_names().count() > 20);
    }

    #[test]
    fn an_unknown_variable_is_an_error_not_an_empty_string() {
        let mut tera = Tera::default();
        tera.add_raw_template("t", "kind: {{ resource.knd }}")
            .unwrap();
        let mut ctx = Context::new();
        ctx.insert("resource", &serde_json::json!({"kind": "Application"}));
        let err = tera.render("t", &ctx).expect_err("a typo must not render");
        assert!(tera_error("t", err).to_string().contains("knd"));
    }
}
