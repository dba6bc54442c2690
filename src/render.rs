//! Turns the embedded `templates/` tree into a plan. The tree mirrors the generated project:
//! only `*.tera` files are rendered (the suffix is stripped), other files are copied, and
//! `_partials/` holds fragments for `{% include %}` that are never written on their own.
//!
//! A template's scope follows from the template itself:
//! - its path names `resource.` -> rendered once per resource, the user's file;
//! - its first line carries the generated marker -> opsdk's file, rendered from the whole PROJECT;
//! - otherwise -> written once by `init`, the user's file.
//!
//! A template that renders to nothing but whitespace produces no file (a controller for a
//! resource created with `--controller=false`, a license for `--license none`).

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{Context as _, Result, anyhow};
use include_dir::{Dir, DirEntry, include_dir};
use tera::{Context, Tera};

use crate::context::{ProjectContext, ResourceContext};
use crate::plan::{GENERATED_MARKER, Plan, PlannedFile, Policy};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");
const PARTIALS: &str = "_partials/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Init,
    Resource,
    Generated,
}

struct Template {
    /// Path inside `templates/`, also the Tera template name.
    name: String,
    scope: Scope,
    rendered: bool,
    executable: bool,
}

fn all_files<'a>(dir: &'a Dir<'a>, out: &mut Vec<&'a include_dir::File<'a>>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => all_files(d, out),
            DirEntry::File(f) => out.push(f),
        }
    }
}

fn catalog() -> &'static (Tera, Vec<Template>) {
    static CATALOG: OnceLock<(Tera, Vec<Template>)> = OnceLock::new();
    CATALOG
        .get_or_init(|| build_catalog().expect("embedded templates are valid (checked by tests)"))
}

fn build_catalog() -> Result<(Tera, Vec<Template>)> {
    let mut files = Vec::new();
    all_files(&TEMPLATES, &mut files);
    let mut tera = Tera::default();
    tera.autoescape_on(vec![]);
    let mut templates = Vec::new();
    for file in files {
        let name = file
            .path()
            .to_str()
            .ok_or_else(|| anyhow!("template path is not UTF-8"))?
            .to_string();
        let text = file
            .contents_utf8()
            .ok_or_else(|| anyhow!("template {name} is not UTF-8"))?;
        let rendered = name.ends_with(".tera");
        if rendered || name.starts_with(PARTIALS) {
            tera.add_raw_template(&name, text)
                .with_context(|| format!("parsing template {name}"))?;
        }
        if name.starts_with(PARTIALS) {
            continue;
        }
        let scope = if name.contains("resource.") {
            Scope::Resource
        } else if text
            .lines()
            .next()
            .is_some_and(|l| l.contains(GENERATED_MARKER))
        {
            Scope::Generated
        } else {
            Scope::Init
        };
        let executable = name.ends_with(".sh") || name.ends_with(".sh.tera");
        templates.push(Template {
            name,
            scope,
            rendered,
            executable,
        });
    }
    templates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((tera, templates))
}

/// Renders every template of `scope`. For `Scope::Resource`, `resource` is the one to render.
pub fn render(
    scope: Scope,
    project: &ProjectContext,
    resource: Option<&ResourceContext>,
) -> Result<Plan> {
    let (tera, templates) = catalog();
    let mut ctx = Context::new();
    ctx.insert("project", project);
    if let Some(resource) = resource {
        ctx.insert("resource", resource);
    }
    let mut plan = Plan::default();
    for template in templates.iter().filter(|t| t.scope == scope) {
        let contents = if template.rendered {
            tera.render(&template.name, &ctx)
                .map_err(|e| tera_error(&template.name, e))?
        } else {
            raw(&template.name)?
        };
        if contents.trim().is_empty() {
            continue;
        }
        let path = Tera::one_off(template.name.trim_end_matches(".tera"), &ctx, false)
            .map_err(|e| tera_error(&template.name, e))?;
        plan.add(PlannedFile {
            path: PathBuf::from(path),
            contents,
            policy: if scope == Scope::Generated {
                Policy::Regenerate
            } else {
                Policy::Create
            },
            executable: template.executable,
        });
    }
    Ok(plan)
}

fn raw(name: &str) -> Result<String> {
    TEMPLATES
        .get_file(name)
        .and_then(|f| f.contents_utf8())
        .map(str::to_string)
        .ok_or_else(|| anyhow!("template {name} missing"))
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
