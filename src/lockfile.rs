//! The generated project's Cargo.lock: the versions opsdk's own CI builds and tests, shipped so
//! that `cargo build --locked` on a fresh scaffold is the tested build and no resolution runs at
//! scaffold or build time. `templates/Cargo.lock.tera` is that lock with the project's own
//! package named `{{ project.name }}`; hack/update-lockfile.sh rewrites it.
//!
//! Cargo writes the `[[package]]` entries sorted by name (then version and source), and
//! `--locked` refuses a lockfile whose text differs from what it would write. The project's own
//! entry therefore has to move to its place for the name the user chose.

/// Where the lockfile template sits in `templates/` (and so in the generated tree).
pub const TEMPLATE: &str = "Cargo.lock.tera";

const ENTRY: &str = "[[package]]\n";

/// `lock` with its package entries in Cargo's order. Entries of one name keep their relative
/// order (the template has them sorted by version already), so a stable sort by name suffices.
pub fn in_cargo_order(lock: &str) -> String {
    let mut parts = lock.split(ENTRY);
    let header = parts.next().unwrap_or_default();
    let mut entries: Vec<&str> = parts.collect();
    entries.sort_by_key(|entry| name_of(entry).unwrap_or_default());
    let mut out = String::with_capacity(lock.len());
    out.push_str(header);
    // Entries are separated by one blank line; the last one ends the file.
    let entries: Vec<String> = entries
        .iter()
        .map(|entry| format!("{ENTRY}{}\n", entry.trim_end_matches('\n')))
        .collect();
    out.push_str(&entries.join("\n"));
    out
}

/// Every package name in `lock` but `own`, the project's own (its name is not yet known when
/// the template is read).
pub fn dependency_names<'a>(lock: &'a str, own: &str) -> Vec<&'a str> {
    lock.split(ENTRY)
        .skip(1)
        .filter_map(name_of)
        .filter(|name| *name != own)
        .collect()
}

fn name_of(entry: &str) -> Option<&str> {
    entry
        .lines()
        .find_map(|line| line.strip_prefix("name = \""))
        .and_then(|rest| rest.strip_suffix('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "# header\nversion = 4\n\n[[package]]\nname = \"zeta\"\nversion = \"0.1.0\"\ndependencies = [\n \"alpha\",\n]\n\n[[package]]\nname = \"alpha\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"alpha\"\nversion = \"2.0.0\"\n\n[[package]]\nname = \"omega\"\nversion = \"1.0.0\"\n";

    #[test]
    fn the_projects_entry_moves_to_its_place_by_name() {
        let ordered = in_cargo_order(LOCK);
        let names: Vec<_> = ordered.split(ENTRY).skip(1).filter_map(name_of).collect();
        assert_eq!(names, ["alpha", "alpha", "omega", "zeta"]);
        assert!(ordered.starts_with("# header\nversion = 4\n\n[[package]]\nname = \"alpha\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"alpha\"\nversion = \"2.0.0\"\n\n"));
        assert!(
            ordered.ends_with(
                "name = \"zeta\"\nversion = \"0.1.0\"\ndependencies = [\n \"alpha\",\n]\n"
            )
        );
        assert_eq!(ordered.len(), LOCK.len());
    }

    #[test]
    fn a_lock_in_order_is_unchanged() {
        let ordered = in_cargo_order(LOCK);
        assert_eq!(in_cargo_order(&ordered), ordered);
    }

    #[test]
    fn dependency_names_leave_out_the_project() {
        assert_eq!(dependency_names(LOCK, "zeta"), ["alpha", "alpha", "omega"]);
    }
}
