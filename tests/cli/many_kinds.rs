//! A project grows kind by kind, across groups and versions, without losing a user's line.

use crate::support::*;

/// Kinds chosen to trip every naming hazard: a Rust keyword (`Type`), prelude types
/// (`String`, `Self`), Kubernetes types the generated code uses (`Deployment`, `Service`,
/// `Event`), irregular plurals (`Person` -> `people`, `Self` -> `selves`, as kubebuilder has
/// them), a second version of a kind, two groups, and a kind whose two versions convert
/// through a conversion webhook.
pub const KINDS: &[&str] = &[
    "--version v1alpha1 --kind Application",
    "--version v1alpha1 --kind Widget",
    "--version v1 --kind Widget --controller=false",
    "--group batch --version v1 --kind Person",
    "--group batch --version v1 --kind Type",
    "--group batch --version v1beta1 --kind String --namespaced=false",
    "--group apps --version v1 --kind Deployment --deploy-image",
    "--group apps --version v1 --kind Self",
    "--group apps --version v1 --kind Service --deploy-image",
    "--group apps --version v2 --kind Service --controller=false",
    "--group apps --version v1 --kind Event",
    "--group ship --version v1 --kind Cruiser --controller=false",
    "--group ship --version v2 --kind Cruiser --controller=false",
];

/// Webhooks on kinds of every shape: a skeleton with both, one in a group with defaulting
/// only, a cluster-scoped one with validation only, a deploy-image kind, and two conversion
/// webhooks: Widget's v1 the hub of v1alpha1 (the version with a controller and admission
/// webhooks), and Cruiser's v1 the hub of v2, whose schema the generated test changes; and
/// Service's v1, a deploy-image hub whose defaulting webhook changes what is sent (an image
/// gets `:latest`), which the conversion suite must not mistake for a lossy conversion; and
/// both on Kubernetes' Pod, which skip kube-system and the manager's namespace.
pub const WEBHOOKS: &[&str] = &[
    "--version v1alpha1 --kind Widget --defaulting --programmatic-validation",
    "--group batch --version v1 --kind Person --defaulting",
    "--group batch --version v1beta1 --kind String --programmatic-validation",
    "--group apps --version v1 --kind Service --defaulting --programmatic-validation",
    "--version v1 --kind Widget --conversion --spoke v1alpha1",
    "--group ship --version v1 --kind Cruiser --conversion --spoke v2",
    "--group apps --version v1 --kind Service --conversion --spoke v2",
    "--group core --version v1 --kind Pod --defaulting --programmatic-validation",
];

/// What a user does once Cruiser's versions differ: v1 holds one `port`, v2 a list of
/// `ports`, and v2's conversion functions keep in an annotation what v1 cannot hold.
pub fn change_cruiser_schemas(dir: &std::path::Path) {
    let example = "    pub foo: String,\n";
    for (version, field) in [
        ("v1", "    #[serde(default)]\n    pub port: i32,\n"),
        (
            "v2",
            "    #[serde(default, skip_serializing_if = \"Vec::is_empty\")]\n    pub ports: Vec<i32>,\n",
        ),
    ] {
        let file = format!("src/api/ship/{version}/cruiser.rs");
        let types = read(dir, &file);
        assert!(types.contains(example), "{file} has no foo field:\n{types}");
        std::fs::write(
            dir.join(&file),
            types.replace(example, &format!("{example}{field}")),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("src/api/ship/v2/cruiser_conversion.rs"),
        include_str!("fixtures/cruiser_conversion.rs"),
    )
    .unwrap();
}

pub fn many_kinds_project(dir: &std::path::Path) {
    init(dir);
    for line in KINDS {
        create_api(dir, &args(line));
    }
    for line in WEBHOOKS {
        succeed(dir, &[&["create", "webhook"], &args(line)[..]].concat());
    }
}

#[test]
fn every_kind_is_registered_everywhere() {
    let (_tmp, dir) = project_dir();
    many_kinds_project(&dir);
    let project = read(&dir, "PROJECT");
    for kind in [
        "Application",
        "Widget",
        "Person",
        "Type",
        "String",
        "Deployment",
        "Self",
    ] {
        assert!(
            project.contains(&format!("kind: {kind}\n")),
            "PROJECT lacks {kind}"
        );
    }
    let api = read(&dir, "src/api/mod.rs");
    assert!(
        api.contains("conversion::with_webhook(merge_crds("),
        "Cruiser converts through its hub:\n{api}"
    );
    assert!(api.contains("mod cruiser_conversion;"), "{api}");
    assert!(
        api.contains("merge_crds("),
        "two versions of Widget become one CRD:\n{api}"
    );
    assert!(
        api.contains("\"v1\""),
        "v1, Widget's hub, is its storage version:\n{api}"
    );
    assert!(
        api.contains("mod type_;"),
        "keywords never become module names:\n{api}"
    );
    assert!(read(&dir, "src/api/batch/v1beta1/string.rs").contains("root = \"StringResource\""));
    assert!(read(&dir, "src/api/apps/v1/self_.rs").contains("root = \"SelfResource\""));
    assert!(read(&dir, "src/api/batch/v1/person.rs").contains("plural = \"people\""));
    assert!(read(&dir, "src/api/apps/v1/self_.rs").contains("plural = \"selves\""));

    // Each controller's RBAC rules name its own group and plural; the registry collects them.
    for (controller, group, plural) in [
        ("application", "minetto.dev", "applications"),
        ("batch/person", "batch.minetto.dev", "people"),
        ("apps/self_", "apps.minetto.dev", "selves"),
    ] {
        let code = read(&dir, &format!("src/controller/{controller}.rs"));
        for wanted in [format!("&[\"{group}\"]"), format!("&[\"{plural}\"]")] {
            assert!(code.contains(&wanted), "{controller}'s RBAC lacks {wanted}");
        }
    }
    let registry = read(&dir, "src/controller/mod.rs");
    assert!(registry.contains("batch::person::RBAC"), "{registry}");
    let samples = read(&dir, "config/samples/kustomization.yaml");
    assert!(
        samples.contains("batch.minetto.dev_v1_person.yaml")
            && samples.contains("minetto.dev_v1_widget.yaml")
    );
    let controllers = read(&dir, "src/controller/mod.rs");
    assert!(
        controllers.contains("batch::type_::run(ctx.clone())"),
        "{controllers}"
    );
    assert!(
        !controllers.contains("widget::run(ctx.clone()),\n        widget::run"),
        "one controller per kind"
    );
}

#[test]
fn adding_kinds_never_touches_a_line_the_user_wrote() {
    let (_tmp, dir) = project_dir();
    article_project(&dir);
    let edited = [
        "src/main.rs",
        "src/controller/application.rs",
        "src/api/v1alpha1/application.rs",
        "Makefile",
        "config/manager/manager.yaml",
        "tests/application.rs",
    ];
    for file in edited {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n# user line in {file}\n")).unwrap();
    }
    let before: Vec<String> = edited.iter().map(|f| read(&dir, f)).collect();
    for line in &KINDS[1..] {
        create_api(&dir, &args(line));
    }
    let after: Vec<String> = edited.iter().map(|f| read(&dir, f)).collect();
    assert_eq!(before, after);
}
