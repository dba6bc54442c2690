//! Input validation, as Kubernetes and Cargo would judge each name. Every check returns an
//! error whose first line names the input and whose `help:` line names the fix.

use crate::naming::module_ident;
use crate::{lockfile, render};
use anyhow::{Result, bail};

mod modules;
pub use modules::{generated_module_file, hides_no_crate};

/// An invalid input: `error: <what>` then `help: <fix>` when printed by `main`.
fn invalid<T>(what: String, help: &str) -> Result<T> {
    bail!("{what}\nhelp: {help}")
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// The longest file name ext4, XFS and btrfs take, in bytes.
pub const FILE_NAME_BYTES: usize = 255;

/// `--domain`: a DNS-1123 subdomain with at least one dot (`minetto.dev`).
pub fn domain(domain: &str) -> Result<()> {
    if !is_dns_subdomain(domain) || !domain.contains('.') {
        return invalid(
            format!("invalid --domain {domain:?}: must be a lowercase DNS subdomain with a dot"),
            "use a domain you own, e.g. --domain example.com",
        );
    }
    // Files in config/ are named after an API's group, which ends with the domain.
    let shortest = format!("{domain}_v1_k.yaml");
    if shortest.len() > crate::writer::MAX_FILE_NAME {
        return invalid(
            format!(
                "invalid --domain {domain:?}: too long for any API, whose sample would be named like {shortest:?} ({} bytes, past the {} a file name may have here)",
                shortest.len(),
                crate::writer::MAX_FILE_NAME
            ),
            "use a shorter domain, e.g. --domain example.com",
        );
    }
    // The API server refuses a CRD in these groups without a Kubernetes API review's approval.
    if let Some(owner) = ["k8s.io", "kubernetes.io"]
        .into_iter()
        .find(|owner| domain == *owner || domain.ends_with(&format!(".{owner}")))
    {
        return invalid(
            format!(
                "invalid --domain {domain:?}: API groups under {owner} are Kubernetes' own, and the API server refuses a CRD there without the api-approved.kubernetes.io annotation"
            ),
            "use a domain you own, e.g. --domain example.com (x-k8s.io, as SIG projects use, is allowed)",
        );
    }
    Ok(())
}

/// `--group`: one DNS-1123 label, prefixed to the domain (`apps` -> `apps.minetto.dev`).
pub fn group(group: &str) -> Result<()> {
    if !is_dns_label(group) || group.starts_with(|c: char| c.is_ascii_digit()) {
        return invalid(
            format!(
                "invalid --group {group:?}: must be a lowercase DNS label starting with a letter"
            ),
            "use a short lowercase word, e.g. --group apps, or omit --group to use the domain",
        );
    }
    // A group is a module in src/api, src/controller and src/webhook, next to opsdk's own.
    let module = module_ident(group);
    if group.contains("--") {
        return invalid(
            format!(
                "invalid --group {group:?}: its module `{module}` would not be snake case, which the project's lint (clippy -D warnings) refuses"
            ),
            &format!(
                "use single dashes, e.g. --group {}",
                group
                    .split('-')
                    .filter(|part| !part.is_empty())
                    .collect::<Vec<_>>()
                    .join("-")
            ),
        );
    }
    if let Some(file) = generated_module_file(&module) {
        return invalid(
            format!(
                "invalid --group {group:?}: its module `{module}` would sit in src/api, src/controller and src/webhook, and opsdk's own code takes that name ({file})"
            ),
            "choose another group name",
        );
    }
    if version(group).is_ok() {
        return invalid(
            format!("invalid --group {group:?}: it looks like an API version"),
            "did you mean --version? Pass a group such as --group apps",
        );
    }
    Ok(())
}

/// `--version`: `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>`, as Kubernetes sorts versions.
pub fn version(version: &str) -> Result<()> {
    let valid = version.strip_prefix('v').is_some_and(|rest| {
        let major_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (major, tail) = rest.split_at(major_len);
        let positive =
            |n: &str| !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit());
        positive(major)
            && (tail.is_empty()
                || tail.strip_prefix("alpha").is_some_and(positive)
                || tail.strip_prefix("beta").is_some_and(positive))
    });
    if !valid {
        return invalid(
            format!("invalid --version {version:?}: must look like v1, v1alpha1 or v2beta3"),
            "pass a Kubernetes API version, e.g. --version v1alpha1",
        );
    }
    // A CRD's version names are DNS-1035 labels.
    if version.len() > 63 {
        return invalid(
            format!("invalid --version {version:?}: longer than 63 characters"),
            "pass a Kubernetes API version, e.g. --version v1alpha1",
        );
    }
    Ok(())
}

/// A CRD's name, `<plural>.<group>`, is an object name: a DNS-1123 subdomain of at most 253
/// characters, which a long --domain with a long group and plural can pass.
pub fn crd_name(name: &str) -> Result<()> {
    if name.len() > 253 {
        return invalid(
            format!(
                "the CRD name {name:?} is {} characters, past the 253 an object name may have",
                name.len()
            ),
            "pass a shorter --plural or --group (or init the project with a shorter --domain)",
        );
    }
    Ok(())
}

/// `--kind`: CamelCase ASCII starting with an uppercase letter; lowercased, a DNS-1035 label.
pub fn kind(kind: &str) -> Result<()> {
    let camel = kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !camel {
        return invalid(
            format!(
                "invalid --kind {kind:?}: must be CamelCase letters and digits, starting uppercase"
            ),
            "name the kind like a Go or Rust type, e.g. --kind Application",
        );
    }
    if kind.len() > 63 {
        return invalid(
            format!("invalid --kind {kind:?}: longer than 63 characters"),
            "choose a shorter kind name",
        );
    }
    if kind.ends_with("List") {
        return invalid(
            format!("invalid --kind {kind:?}: Kubernetes reserves the List suffix for collections"),
            "drop the List suffix, e.g. --kind Widget",
        );
    }
    Ok(())
}

/// `--plural`: a DNS-1035 label (lowercase, starts with a letter).
pub fn plural(plural: &str) -> Result<()> {
    if plural.len() > 63 {
        return invalid(
            format!("plural {plural:?} is longer than 63 characters"),
            "pass a shorter --plural, or choose a shorter --kind",
        );
    }
    if !is_dns_label(plural)
        || !plural.starts_with(|c: char| c.is_ascii_lowercase())
        || plural.contains('-')
    {
        return invalid(
            format!(
                "invalid --plural {plural:?}: must be lowercase letters and digits, starting with a letter"
            ),
            "pass the lowercase plural, e.g. --plural applications",
        );
    }
    Ok(())
}

/// The longest project name whose objects `make deploy` can create: the longest name it makes
/// from it, `<name>-controller-manager-metrics-service`, must be a 63-character DNS label.
pub const MAX_PROJECT_NAME: usize = 63 - "-controller-manager-metrics-service".len();

/// The project name: a crate name Cargo accepts that is also a DNS-1123 label (it names the
/// manager's Deployment, namespace and image).
/// A name `init` gives a new project: a valid project name, short enough for `make deploy`'s
/// names. (A project made before the length was checked keeps loading.)
pub fn new_project_name(name: &str, source: &str) -> Result<()> {
    if name.len() > MAX_PROJECT_NAME {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): longer than {MAX_PROJECT_NAME} characters, so `make deploy` would name its metrics Service {name}-controller-manager-metrics-service, past the 63 characters a Service name may have"
            ),
            "pass a shorter --project-name, e.g. --project-name my-operator",
        );
    }
    project_name(name, source)
}

pub fn project_name(name: &str, source: &str) -> Result<()> {
    let valid = is_dns_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !valid {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): must be lowercase letters, digits and dashes, starting with a letter"
            ),
            "pass --project-name my-operator",
        );
    }
    if [
        "test",
        "core",
        "std",
        "alloc",
        "proc-macro",
        "proc_macro",
        "self",
        "build",
    ]
    .contains(&name)
    {
        return invalid(
            format!("invalid project name {name:?} (from {source}): Cargo reserves it"),
            "pass --project-name my-operator",
        );
    }
    if crate::naming::is_keyword(&name.replace('-', "_")) {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): a Rust keyword, which the crate the project builds cannot be named"
            ),
            "pass --project-name my-operator",
        );
    }
    if name == "crdgen" {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): the project already has a binary of that name (src/bin/crdgen.rs), and the manager's binary takes the project's"
            ),
            "pass --project-name my-operator",
        );
    }
    // Cargo keeps these names for folders of target/: no binary may take them.
    if ["deps", "examples", "incremental"].contains(&name) {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): Cargo forbids it as the name of the manager's binary"
            ),
            "pass --project-name my-operator",
        );
    }
    // Cargo treats `-` and `_` alike in crate names: a project named like one of its own
    // dependencies could not be built.
    let crate_name = |n: &str| n.replace('-', "_");
    // `use my_op::{Context, controller}` in a crate named like one of its own modules would
    // bring the module in, and hide the crate from the lines after it.
    if let Some((_, file)) = render::top_modules()
        .into_iter()
        .find(|(module, _)| *module == crate_name(name))
    {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): the project's own code has a module of that name ({file})"
            ),
            "pass --project-name my-operator",
        );
    }
    let lock = render::template_text(lockfile::TEMPLATE).unwrap_or_default();
    if lockfile::dependency_names(lock, "{{ project.name }}")
        .into_iter()
        .any(|dep| crate_name(dep) == crate_name(name))
    {
        return invalid(
            format!(
                "invalid project name {name:?} (from {source}): the project depends on a crate of that name"
            ),
            "pass --project-name my-operator",
        );
    }
    Ok(())
}

/// `--owner`: one line of text (it goes into LICENSE and Cargo.toml's `authors`).
pub fn owner(owner: &str) -> Result<()> {
    if owner.chars().any(char::is_control) {
        return invalid(
            format!("invalid --owner {owner:?}: must be one line without control characters"),
            "pass a name such as --owner \"The Example Authors\"",
        );
    }
    Ok(())
}

/// `--repo`: a Go-style module path (`github.com/owner/name`) or a URL.
/// Checks `--repo` and returns it as a repository path: a clone URL's scheme and `.git` are
/// dropped (`https://github.com/o/op.git` is `github.com/o/op`), as Go module paths have none.
pub fn repo(repo: &str) -> Result<String> {
    let path = repo.split_once("://").map_or(repo, |(_, rest)| rest);
    // An SSH clone address, git@github.com:owner/name.git.
    let scp = path
        .strip_prefix("git@")
        .and_then(|rest| rest.split_once(':'));
    let joined = scp.map(|(host, rest)| format!("{host}/{rest}"));
    let path = joined.as_deref().unwrap_or(path);
    let path = path.strip_suffix(".git").unwrap_or(path);
    // A host with a dot, then the repository's path: the crate's `repository` is its https URL.
    let valid = path
        .split_once('/')
        .is_some_and(|(host, rest)| host.contains('.') && !rest.is_empty())
        && !path.split('/').any(str::is_empty)
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c));
    if !valid {
        return invalid(
            format!(
                "invalid --repo {repo:?}: must be a repository path such as github.com/owner/name"
            ),
            "pass --repo github.com/<owner>/<project>",
        );
    }
    Ok(path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        for ok in ["v1", "v2", "v1alpha1", "v2beta3", "v10beta12"] {
            assert!(version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1",
            "v",
            "v0",
            "V1",
            "v1alpha",
            "v1gamma1",
            "v01",
            "v1alpha0",
            "v1-alpha1",
            "",
        ] {
            assert!(version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        for ok in ["Application", "App2", "X", "DatabaseCluster"] {
            assert!(kind(ok).is_ok(), "{ok}");
        }
        for bad in [
            "application",
            "My-Kind",
            "My_Kind",
            "2App",
            "",
            "AppList",
            "Ünïcode",
        ] {
            assert!(kind(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn domains_and_groups() {
        assert!(domain("minetto.dev").is_ok());
        assert!(domain("a.b-c.io").is_ok());
        for bad in [
            "localhost",
            "Minetto.dev",
            "-a.dev",
            "a..dev",
            "a_b.dev",
            "",
            "k8s.io",
            "apps.k8s.io",
            "x.kubernetes.io",
        ] {
            assert!(domain(bad).is_err(), "{bad}");
        }
        assert!(domain("cluster.x-k8s.io").is_ok());
        assert!(group("apps").is_ok());
        for bad in [
            "Apps",
            "apps.web",
            "v1",
            "v1alpha1",
            "1apps",
            "",
            "-x",
            "x--y",
            "condition",
            "external",
            "serve",
            "children",
            "tests",
        ] {
            assert!(group(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn project_names_and_plurals() {
        assert!(project_name("k8s-operator-talk", "--repo").is_ok());
        for bad in [
            "K8s",
            "my_op",
            "-op",
            "1op",
            "test",
            "",
            "kube",
            "tokio",
            "k8s-openapi",
            "serde-json",
            "crdgen",
            "controller",
            "telemetry",
            "api",
            "envtest",
            "conversion-server",
            "deps",
            "incremental",
            "fn",
            "crate",
            "super",
            "gen",
        ] {
            assert!(project_name(bad, "--project-name").is_err(), "{bad}");
        }
        assert!(plural("applications").is_ok());
        for bad in ["Applications", "apps-x", "1apps", ""] {
            assert!(plural(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn owners_are_one_line() {
        assert!(owner("The \"Kube\" Authors \\ Co").is_ok());
        assert!(owner("").is_ok());
        assert!(owner("a\nb").is_err());
        assert!(owner("a\tb").is_err());
    }

    #[test]
    fn errors_name_the_input_and_the_fix() {
        let err = format!("{:#}", version("v1gamma").unwrap_err());
        assert!(err.starts_with("invalid --version \"v1gamma\""), "{err}");
        assert!(err.contains("\nhelp: "), "{err}");
    }

    #[test]
    fn repos_are_a_host_and_a_path() {
        for ok in [
            "github.com/a/b",
            "https://gitlab.com/g/sub/op.git",
            "git@github.com:a/b.git",
        ] {
            assert!(repo(ok).is_ok(), "{ok}");
        }
        for bad in [
            "foo",
            "github.com",
            "github.com/",
            "github.com/acme/",
            "gh/a/b",
            "github.com//b",
        ] {
            assert!(repo(bad).is_err(), "{bad}");
        }
    }
}
