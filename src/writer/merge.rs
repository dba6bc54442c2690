//! Three-way line merge (diff3): carries opsdk's change to a file it wrote (from what it
//! wrote before, `base`, to what it writes now, `theirs`) into the user's copy (`ours`),
//! keeping the user's own changes. Where both changed the same lines, or lines with no
//! unchanged line between them, nothing is merged: the caller refuses, as before.
//!
//! The two alignments (base to ours, base to theirs) are made apart, so among repeated lines
//! one change made by both sides can land twice (a `WATCH_NAMESPACE` entry the user added by
//! hand and opsdk adds too). A merge is therefore only taken when every non-blank line occurs
//! in it at least as often as in the side with fewer and at most as often as in the side with
//! more; otherwise it is a conflict.

/// The merged text, or the 1-based line ranges of the user's copy where both sides changed.
/// With `union` (for a list, whose entries are a set), both sides changing one place never
/// conflict: the user's lines there are kept, less those opsdk removed, and opsdk's new ones
/// follow (an entry the user appended and one opsdk appends both land; one both add, once).
pub fn merge(
    base: &str,
    ours: &str,
    theirs: &str,
    union: bool,
) -> Result<String, Vec<(usize, usize)>> {
    let base: Vec<&str> = base.split_inclusive('\n').collect();
    let ours: Vec<&str> = ours.split_inclusive('\n').collect();
    let theirs: Vec<&str> = theirs.split_inclusive('\n').collect();
    let in_ours = matching(&base, &ours);
    let in_theirs = matching(&base, &theirs);

    // Base lines kept by both sides, in order, then the end of all three files.
    let stable = (0..base.len())
        .filter_map(|i| Some((i, in_ours[i]?, in_theirs[i]?)))
        .chain(std::iter::once((base.len(), ours.len(), theirs.len())));
    let mut merged = String::new();
    let mut conflicts = Vec::new();
    let (mut b, mut o, mut t) = (0, 0, 0);
    for (bi, oi, ti) in stable {
        let (base_chunk, our_chunk, their_chunk) = (&base[b..bi], &ours[o..oi], &theirs[t..ti]);
        let chunk = if our_chunk == base_chunk || our_chunk == their_chunk {
            their_chunk
        } else if their_chunk == base_chunk {
            our_chunk
        } else if union {
            // The user's lines, less those opsdk removed, then those opsdk added.
            let removed = |line: &&str| base_chunk.contains(line) && !their_chunk.contains(line);
            merged.extend(our_chunk.iter().filter(|l| !removed(l)).copied());
            let added = |line: &&str| !base_chunk.contains(line) && !our_chunk.contains(line);
            merged.extend(their_chunk.iter().filter(|l| added(l)).copied());
            &[]
        } else {
            conflicts.push((o + 1, oi.max(o + 1)));
            our_chunk
        };
        merged.extend(chunk.iter().copied());
        if bi < base.len() {
            merged.push_str(base[bi]);
        }
        (b, o, t) = (bi + 1, oi + 1, ti + 1);
    }
    if conflicts.is_empty()
        && let Some(line) = counted_twice(&ours, &theirs, &merged)
    {
        conflicts.push((line, line));
    }
    if conflicts.is_empty() {
        Ok(merged)
    } else {
        // A conflict where the user removed lines is reported at the next line they kept, or
        // at their last line.
        let last = ours.len().max(1);
        Err(conflicts
            .into_iter()
            .map(|(first, end)| (first.min(last), end.min(last)))
            .collect())
    }
}

/// The 1-based line of `ours` (or of the merge, for a line only opsdk has) holding the first
/// non-blank line that `merged` holds more often than both sides or less often than either.
fn counted_twice(ours: &[&str], theirs: &[&str], merged: &str) -> Option<usize> {
    let merged: Vec<&str> = merged.split_inclusive('\n').collect();
    let count = |lines: &[&str], line: &str| lines.iter().filter(|l| **l == line).count();
    let odd = merged.iter().chain(ours).chain(theirs).find(|line| {
        let (o, t, m) = (count(ours, line), count(theirs, line), count(&merged, line));
        !line.trim().is_empty() && (m > o.max(t) || m < o.min(t))
    })?;
    let at = ours.iter().position(|l| l == odd);
    Some(at.unwrap_or_else(|| merged.iter().position(|l| l == odd).unwrap_or(0)) + 1)
}

/// For each line of `a`, the line of `b` it is kept as in a longest common subsequence.
fn matching(a: &[&str], b: &[&str]) -> Vec<Option<usize>> {
    // Common ends first: most edits touch a few lines, so the table below stays small.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut kept: Vec<Option<usize>> = (0..a.len())
        .map(|i| {
            if i < prefix {
                Some(i)
            } else if i >= a.len() - suffix {
                Some(i + b.len() - a.len())
            } else {
                None
            }
        })
        .collect();
    // lengths[i][j]: the longest common subsequence of mid_a[i..] and mid_b[j..].
    let width = mid_b.len() + 1;
    let mut lengths = vec![0u32; (mid_a.len() + 1) * width];
    for i in (0..mid_a.len()).rev() {
        for j in (0..mid_b.len()).rev() {
            lengths[i * width + j] = if mid_a[i] == mid_b[j] {
                lengths[(i + 1) * width + j + 1] + 1
            } else {
                lengths[(i + 1) * width + j].max(lengths[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < mid_a.len() && j < mid_b.len() {
        if mid_a[i] == mid_b[j] {
            kept[prefix + i] = Some(prefix + j);
            (i, j) = (i + 1, j + 1);
        } else if lengths[(i + 1) * width + j] >= lengths[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::merge;

    const BASE: &str = "[package]\nname = \"op\"\nlicense = \"Apache-2.0\"\n\n[dependencies]\nkube = \"5\"\ntokio = \"1\"\n";

    #[test]
    fn opsdk_change_and_user_change_apart_both_land() {
        let ours = BASE.replace("tokio = \"1\"\n", "tokio = \"1\"\nreqwest = \"0.12\"\n");
        let theirs = BASE.replace("Apache-2.0", "MIT");
        let merged = merge(BASE, &ours, &theirs, false).unwrap();
        assert_eq!(
            merged,
            BASE.replace("Apache-2.0", "MIT")
                .replace("tokio = \"1\"\n", "tokio = \"1\"\nreqwest = \"0.12\"\n")
        );
    }

    #[test]
    fn the_same_line_changed_on_both_sides_is_a_conflict_on_the_users_line() {
        let ours = BASE.replace("Apache-2.0", "BSD-3-Clause");
        let theirs = BASE.replace("Apache-2.0", "MIT");
        assert_eq!(merge(BASE, &ours, &theirs, false), Err(vec![(3, 3)]));
    }

    #[test]
    fn an_identical_change_on_both_sides_is_taken_once() {
        let theirs = BASE.replace("Apache-2.0", "MIT");
        assert_eq!(merge(BASE, &theirs, &theirs, false).unwrap(), theirs);
    }

    #[test]
    fn lines_removed_by_opsdk_go_unless_the_user_changed_them() {
        let theirs = BASE.replace("\n[dependencies]\nkube = \"5\"\ntokio = \"1\"\n", "");
        let ours = BASE.replace("[package]", "# mine\n[package]");
        assert_eq!(
            merge(BASE, &ours, &theirs, false).unwrap(),
            theirs.replace("[package]", "# mine\n[package]")
        );
        let ours = BASE.replace("kube = \"5\"", "kube = \"6\"");
        assert!(merge(BASE, &ours, &theirs, false).is_err());
    }

    #[test]
    fn additions_at_both_ends_keep_their_places() {
        let ours = format!("# top\n{BASE}# bottom\n");
        let theirs = BASE.replace("[dependencies]\n", "[dependencies]\nserde = \"1\"\n");
        assert_eq!(
            merge(BASE, &ours, &theirs, false).unwrap(),
            format!("# top\n{theirs}# bottom\n")
        );
    }

    #[test]
    fn a_change_both_made_at_different_places_is_a_conflict_not_a_duplicate() {
        // The user set WATCH_NAMESPACE by hand; opsdk's namespaced render adds it too.
        let base =
            "env:\n- name: POD_NAME\n  value: a\n- name: POD_NAMESPACE\n  value: b\nports:\n";
        let ours = base.replace(
            "- name: POD_NAMESPACE",
            "- name: WATCH_NAMESPACE\n  value: c\n- name: POD_NAMESPACE",
        );
        let theirs = base.replace("ports:", "- name: WATCH_NAMESPACE\n  value: c\nports:");
        assert!(merge(base, &ours, &theirs, false).is_err());
    }

    #[test]
    fn a_conflict_on_lines_the_user_removed_at_the_end_names_their_last_line() {
        assert_eq!(
            merge("a\nb\nc\n", "a\nb\n", "a\nb\nC\n", false),
            Err(vec![(2, 2)])
        );
    }

    #[test]
    fn a_file_without_a_final_newline_merges() {
        let base = "a\nb\nc";
        assert_eq!(
            merge(base, "a\nb\nc\nd", "A\nb\nc", false).unwrap(),
            "A\nb\nc\nd"
        );
    }

    #[test]
    fn a_list_keeps_both_sides_entries_appended_at_its_end() {
        let base = "resources:\n- a.yaml\n";
        let (ours, theirs) = (format!("{base}- mine.yaml\n"), format!("{base}- b.yaml\n"));
        assert!(merge(base, &ours, &theirs, false).is_err());
        let merged = merge(base, &ours, &theirs, true).unwrap();
        assert_eq!(merged, "resources:\n- a.yaml\n- mine.yaml\n- b.yaml\n");
        // An entry both appended lands once.
        let both = theirs.replace("b.yaml", "b.yaml\n- c.yaml");
        assert_eq!(merge(base, &theirs, &both, true).unwrap(), both);
        // opsdk removing its entries next to the user's: the user's stay.
        let base = "resources:\n- a.yaml\n- b.yaml\n";
        let ours = "resources:\n#- a.yaml\n- mine.yaml\n- b.yaml\n";
        let removed = merge(base, ours, "resources:\n", true).unwrap();
        assert_eq!(removed, "resources:\n#- a.yaml\n- mine.yaml\n");
    }
}
