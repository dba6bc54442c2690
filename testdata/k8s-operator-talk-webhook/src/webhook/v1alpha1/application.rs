//! Admission webhooks of Application (minetto.dev/v1alpha1): the API server calls `default`
//! before it stores an Application, then the validating function of the operation, each once
//! `opsdk create webhook` has wired it (`--defaulting`, `--programmatic-validation`:
//! `src/webhook/mod.rs` lists what is wired).
//! A refusal names the fields at fault (`FieldError`); `kubectl` shows it as
//! `The Application "<name>" is invalid: <field>: <reason>`.
//! This file is yours: opsdk writes it once.

use crate::api::v1alpha1::Application;
use crate::webhook::admission::{FieldError, Verdict};

/// Whether the API server asks `validate_delete` before deleting Application objects. Off, as
/// in kubebuilder (`verbs=create;update`): with it on, none can be deleted, nor the namespace
/// holding one, while no replica of the manager answers (failurePolicy Fail).
/// `make manifests` writes the choice into config/webhook.
pub const VALIDATE_DELETE: bool = false;

/// Fills in what was left out: an image without a tag or digest gets `:latest`, so that
/// what runs is written down. (`replicas` and `port` have defaults in the CRD schema.)
pub fn default(app: &mut Application) {
    let image = &app.spec.image;
    if !image.is_empty() && !has_tag_or_digest(image) {
        app.spec.image = format!("{image}:latest");
    }
}

pub fn validate_create(app: &Application) -> Verdict {
    check_spec(app)
}

/// Any field may change (a new port is rolled out with the Service), but not the image's
/// repository: a different application is a different Application. An update that leaves
/// the spec alone (labels, the controller's finalizer) is not judged by today's rules, so a
/// Application created before them can still be labeled and deleted. `new` comes defaulted
/// (the mutating webhook runs first), so it is compared with `old` defaulted too.
pub fn validate_update(old: &Application, new: &Application) -> Verdict {
    let mut unchanged = old.clone();
    default(&mut unchanged);
    if unchanged.spec == new.spec {
        return Ok(());
    }
    check_spec(new)?;
    let (before, after) = (repository(&old.spec.image), repository(&new.spec.image));
    if before != after {
        return Err(vec![FieldError::forbidden(
            "spec.image",
            format!(
                "the repository may not change (was {before:?}); only its tag or digest may: create another Application for another application"
            ),
        )]);
    }
    Ok(())
}

/// Called only when `VALIDATE_DELETE` is on.
pub fn validate_delete(_app: &Application) -> Verdict {
    Ok(())
}

fn check_spec(app: &Application) -> Verdict {
    let mut errors = Vec::new();
    if let Err(why) = check_image(&app.spec.image) {
        errors.push(FieldError::invalid("spec.image", &app.spec.image, why));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The image without its tag and digest.
fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => image,
    }
}

fn has_tag_or_digest(image: &str) -> bool {
    image.contains('@') || repository(image) != image
}

/// Checks an image reference as container runtimes parse it:
/// `[host[:port]/]path[:tag][@algorithm:hex]`, the path lowercase.
fn check_image(image: &str) -> Result<(), String> {
    if image.is_empty() {
        return Err("must name a container image, e.g. nginx:1.27".into());
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            !algorithm.is_empty()
                && algorithm
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c))
                && hex.len() >= 32
                && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !valid {
            return Err("the digest must be <algorithm>:<hex>, e.g. sha256:<64 hex digits>".into());
        }
    }
    let repository = repository(name);
    if repository != name {
        let tag = &name[repository.len() + 1..];
        let first = tag.chars().next();
        if tag.len() > 128
            || !first.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            || !tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err("the tag must be letters, digits, '_', '.' or '-', at most 128, not starting with '.' or '-'".into());
        }
    }
    let mut parts: Vec<&str> = repository.split('/').collect();
    if parts.len() > 1 && (parts[0].contains(['.', ':']) || parts[0] == "localhost") {
        let host = parts.remove(0);
        let (name, port) = host.split_once(':').unwrap_or((host, "0"));
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            || port.parse::<u16>().is_err()
        {
            return Err(format!("{host:?} is not a registry host[:port]"));
        }
    }
    for part in parts {
        if !path_component(part) {
            return Err(format!(
                "{part:?} must be lowercase letters and digits, separated by '.', '_', '__' or dashes"
            ));
        }
    }
    Ok(())
}

/// Lowercase letters and digits, separated by one '.', one '_', two '_' or any dashes.
fn path_component(part: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let starts_and_ends = part.starts_with(alnum) && part.ends_with(alnum);
    starts_and_ends
        && part
            .split(alnum)
            .all(|sep| matches!(sep, "" | "." | "_" | "__") || sep.chars().all(|c| c == '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references() {
        for good in [
            "nginx",
            "nginx:1.27",
            "library/nginx:latest",
            "ghcr.io/acme/app:v1.2.3",
            "localhost:5000/app",
            "registry.example.com:8443/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "my_app__x:tag",
        ] {
            assert_eq!(check_image(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx:-x",
            "app@sha256:xyz",
            "a//b",
            "-app",
            "app.",
            "bad host:1/app",
        ] {
            assert!(check_image(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tag_is_told_from_a_registry_port() {
        assert_eq!(repository("localhost:5000/app"), "localhost:5000/app");
        assert_eq!(repository("localhost:5000/app:v1"), "localhost:5000/app");
        assert!(!has_tag_or_digest("localhost:5000/app"));
        assert!(has_tag_or_digest("app@sha256:00"));
    }

    fn app(image: &str) -> Application {
        Application::new(
            "app",
            crate::api::v1alpha1::ApplicationSpec {
                image: image.into(),
                replicas: 1,
                port: 80,
            },
        )
    }

    #[test]
    fn only_a_changed_spec_is_judged_on_update() {
        // Made before the rules refused it: its labels and finalizer may still change.
        // The update reaches validation defaulted: "Nginx" has become "Nginx:latest".
        let (old, mut labeled) = (app("Nginx"), app("Nginx"));
        default(&mut labeled);
        labeled.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        assert_eq!(validate_update(&old, &labeled), Ok(()));
        assert!(
            validate_update(&old, &app("Nginx:2")).is_err(),
            "a changed spec meets today's rules"
        );
        assert!(
            validate_update(&app("nginx:1"), &app("httpd:1")).is_err(),
            "the repository may not change"
        );
        assert_eq!(validate_update(&app("nginx:1"), &app("nginx:2")), Ok(()));
    }
}
