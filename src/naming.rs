//! Name forms derived from user input: plurals (kubebuilder's, in `plural`), Rust identifiers
//! that never collide with keywords or the names our generated code imports. Pure functions,
//! unit-tested here.

mod builtin;
mod builtin_data;
mod builtin_samples;
mod flect_data;
#[cfg(test)]
mod names_in_scope;
mod plural;

pub use builtin::BuiltinType;
pub use builtin_samples::{manifest as builtin_manifest, sample as builtin_sample};

pub use plural::{DefaultPlural, default_plural, kubebuilder_plural, plural_of};

/// Rust keywords (strict and reserved, all editions). A module may not be named after one;
/// `self`, `super`, `crate` and `Self` cannot even be raw identifiers, so we suffix instead.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Type names a kind's struct must not take: the Rust prelude and std types our code names
/// unqualified, and every name the generated files import or define next to the kind's own
/// types (a unit test reads the templates for them).
const RESERVED_TYPE_NAMES: &[&str] = &[
    // The Rust 2024 prelude (std::prelude::rust_2024, which the generated crates use: a
    // kind named after one hides it, e.g. `Future` in the controller's `impl Future`), and
    // common std types
    "Future",
    "IntoFuture",
    "DoubleEndedIterator",
    "ExactSizeIterator",
    "AsyncFn",
    "AsyncFnMut",
    "AsyncFnOnce",
    "Self",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "String",
    "Vec",
    "Box",
    "ToString",
    "ToOwned",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Unpin",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "Iterator",
    "IntoIterator",
    "Extend",
    "Default",
    "Eq",
    "PartialEq",
    "Ord",
    "PartialOrd",
    "AsRef",
    "AsMut",
    "Into",
    "From",
    "TryFrom",
    "TryInto",
    "FromIterator",
    "Debug",
    "Hash",
    "Arc",
    "Duration",
    "BTreeMap",
    "HashMap",
    // names imported by the generated types, controller, registry and test files
    "CustomResource",
    "CustomResourceExt",
    "CustomResourceDefinition",
    "JsonSchema",
    "Serialize",
    "Deserialize",
    "Api",
    "Client",
    "Controller",
    "Action",
    "Resource",
    "ResourceExt",
    "Patch",
    "PatchParams",
    "DeleteParams",
    "PostParams",
    "ListParams",
    "ObjectMeta",
    "Event",
    "EventType",
    "Recorder",
    "Reporter",
    "Finalizer",
    "Context",
    "Error",
    "Metrics",
    "StreamExt",
    "Condition",
    "IntOrString",
    "ControlPlane",
    "ApiResource",
    "DynamicObject",
    "Value",
    "ApiServer",
    "ChildNames",
    "Children",
    "Expected",
    "FieldError",
    "GroupVersionKind",
    "Hub",
    "KubeSchema",
    "Namespaces",
    "Outcome",
    "Predicate",
    "PredicateConfig",
    "ReadyCounts",
    "Relist",
    "Reply",
    "Retries",
    "Rollout",
    "Rule",
    "Seen",
    "Served",
    "Settings",
    "State",
    "Target",
    "TryStreamExt",
    "Validity",
    "Verdict",
    "WatchStreamExt",
];

/// Whether `ident` is a Rust keyword, which no crate or module may be named.
pub fn is_keyword(ident: &str) -> bool {
    RUST_KEYWORDS.contains(&ident)
}

/// The indefinite article of a kind as read aloud in comments: `an` Application, `a`
/// Memcached (by its first letter: `a` before U and H, which mostly sound a consonant).
pub fn article(kind: &str) -> &'static str {
    match kind.chars().next() {
        Some('A' | 'E' | 'I' | 'O' | 'a' | 'e' | 'i' | 'o') => "an",
        _ => "a",
    }
}

/// A Rust module name for `snake`, never a keyword (`type` -> `type_`), with the dashes a
/// group may have as underscores (`cert-manager` -> `cert_manager`).
pub fn module_ident(snake: &str) -> String {
    let ident = snake.replace('-', "_");
    if is_keyword(&ident) {
        format!("{ident}_")
    } else {
        ident
    }
}

/// The Rust struct name for a kind: the kind itself, or `<Kind>Resource` (`<Kind>Object` if
/// that is taken too) when the kind would shadow a name the generated code relies on.
pub fn type_ident(kind: &str) -> String {
    [String::new(), "Resource".into(), "Object".into()]
        .into_iter()
        .map(|suffix| format!("{kind}{suffix}"))
        .find(|name| !RESERVED_TYPE_NAMES.contains(&name.as_str()))
        .expect("no reserved name ends in Object")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_article_follows_the_kinds_first_sound() {
        assert_eq!(article("Application"), "an");
        assert_eq!(article("Ingress"), "an");
        assert_eq!(article("Memcached"), "a");
        assert_eq!(article("User"), "a");
    }

    #[test]
    fn keywords_become_safe_module_names() {
        assert_eq!(module_ident("type"), "type_");
        assert_eq!(module_ident("self"), "self_");
        assert_eq!(module_ident("application"), "application");
        assert_eq!(module_ident("cert-manager"), "cert_manager");
    }

    #[test]
    fn colliding_kinds_get_a_distinct_type_name() {
        assert_eq!(type_ident("Application"), "Application");
        assert_eq!(type_ident("String"), "StringResource");
        assert_eq!(type_ident("Self"), "SelfResource");
        assert_eq!(type_ident("Condition"), "ConditionResource");
        assert_eq!(type_ident("Api"), "ApiObject", "ApiResource is kube's");
    }

    /// Every type and trait the 2024 edition's prelude brings into scope: the generated code
    /// names some of them unqualified (`impl Future`), and any may be named by a user's code.
    #[test]
    fn no_kind_hides_a_prelude_name() {
        let prelude = [
            "AsMut",
            "AsRef",
            "AsyncFn",
            "AsyncFnMut",
            "AsyncFnOnce",
            "Box",
            "Clone",
            "Copy",
            "Default",
            "DoubleEndedIterator",
            "Drop",
            "Eq",
            "ExactSizeIterator",
            "Extend",
            "Fn",
            "FnMut",
            "FnOnce",
            "From",
            "FromIterator",
            "Future",
            "IntoFuture",
            "Into",
            "IntoIterator",
            "Iterator",
            "Option",
            "Ord",
            "PartialEq",
            "PartialOrd",
            "Result",
            "Send",
            "Sized",
            "String",
            "Sync",
            "ToOwned",
            "ToString",
            "TryFrom",
            "TryInto",
            "Unpin",
            "Vec",
            "Some",
            "None",
            "Ok",
            "Err",
            "Debug",
            "Hash",
        ];
        for name in prelude {
            assert_ne!(
                type_ident(name),
                name,
                "a kind named {name} hides the prelude's"
            );
        }
    }
}
