//! Keeps `RESERVED_TYPE_NAMES` complete: every type name the kind's own files import or
//! define (the templates whose path names a resource or webhook, and the partials they
//! include) must be reserved, or a kind of that name would not compile.

use std::collections::BTreeSet;
use std::path::Path;

use super::RESERVED_TYPE_NAMES;

/// Template text with comments and string literals dropped and every tag made a word no name contains
/// (`{{ resource.kind }}Spec` -> `TagSpec`), so that names built by a tag are left out.
fn plain(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        // String literals out too (`"type": "Ready"` names no type): every other piece.
        let unquoted = code.split('"').step_by(2);
        out.extend(unquoted);
        out.push('\n');
    }
    for (open, close) in [("{{", "}}"), ("{%", "%}")] {
        while let Some(start) = out.find(open) {
            let end = out[start..]
                .find(close)
                .map_or(out.len(), |e| start + e + 2);
            out.replace_range(start..end, "Tag");
        }
    }
    out
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// A type's name: CamelCase, not a SCREAMING constant, not made by a tag.
fn is_type_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && !word.contains("Tag")
}

/// What `text` imports (`use` statements) and defines (struct, enum, trait, type).
fn names_in(text: &str) -> BTreeSet<String> {
    let text = plain(text);
    let mut names = BTreeSet::new();
    for statement in text.split(';') {
        let Some(start) = statement.lines().position(|line| {
            line.trim_start()
                .trim_start_matches("pub ")
                .starts_with("use ")
        }) else {
            continue;
        };
        let used: Vec<&str> = statement.lines().skip(start).collect();
        names.extend(
            words(&used.join("\n"))
                .into_iter()
                .filter(|w| is_type_name(w))
                .map(String::from),
        );
    }
    let all = words(&text);
    for pair in all.windows(2) {
        if ["struct", "enum", "trait", "type", "union"].contains(&pair[0]) && is_type_name(pair[1])
        {
            names.insert(pair[1].to_string());
        }
    }
    names
}

#[test]
fn every_name_next_to_a_kind_is_reserved() {
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut missing = BTreeSet::new();
    for entry in walkdir::WalkDir::new(&templates) {
        let path = entry.unwrap().into_path();
        let shown = path.to_string_lossy();
        let rust = shown.ends_with(".rs") || shown.ends_with(".rs.tera");
        if !rust || !(shown.contains("{{") || shown.contains("_partials")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        missing.extend(
            names_in(&text)
                .into_iter()
                .filter(|name| !RESERVED_TYPE_NAMES.contains(&name.as_str())),
        );
    }
    assert!(
        missing.is_empty(),
        "add to RESERVED_TYPE_NAMES: {missing:?}"
    );
}

#[test]
fn finds_imported_and_defined_names_only() {
    let text = "use a::{Bee, c::Dee};\n// use x::Commented;\npub struct Eel;\nenum Fox {}\nconst GNU: u8 = 1;\nstruct {{ k }}Spec;\nlet h = Ibex::new(\"type Jay\");";
    let names: Vec<_> = names_in(text).into_iter().collect();
    assert_eq!(names, ["Bee", "Dee", "Eel", "Fox"]);
}
