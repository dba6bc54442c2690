use super::*;

fn tree(root: &Path) -> Vec<(String, String)> {
    let mut files: Vec<_> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.path() != root)
        .map(|e| {
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            let contents = fs::read_to_string(e.path()).unwrap_or_else(|_| "<dir>".into());
            (rel, contents)
        })
        .collect();
    files.sort();
    files
}

fn change<'a>(root: &Path, rel: &str, contents: Option<&'a str>) -> Change<'a> {
    Change {
        target: root.join(rel),
        contents,
    }
}

#[test]
fn every_change_is_made_and_nothing_is_left_beside_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("gone/deep")).unwrap();
    fs::write(root.join("gone/deep/old.txt"), "old").unwrap();
    fs::write(root.join("kept.txt"), "before").unwrap();
    let changes = [
        change(root, "new/dir/a.txt", Some("a")),
        change(root, "kept.txt", Some("after")),
        change(root, "gone/deep/old.txt", None),
    ];
    commit(root, &changes).unwrap();
    let expected = [
        ("kept.txt", "after"),
        ("new", "<dir>"),
        ("new/dir", "<dir>"),
        ("new/dir/a.txt", "a"),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    assert_eq!(tree(root), expected);
}

#[test]
fn a_step_that_fails_leaves_the_project_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::write(root.join("first.txt"), "first before").unwrap();
    fs::write(root.join("gone.txt"), "gone before").unwrap();
    fs::write(root.join("last.txt"), "last before").unwrap();
    // What stands where the last file would be moved aside cannot be cleared (a directory
    // with a file in it, which even root cannot remove as a file): the last step fails after
    // the others were made.
    fs::create_dir_all(root.join(".last.txt.opsdk-old/x")).unwrap();
    let before = tree(root);
    let changes = [
        change(root, "new/dir/a.txt", Some("a")),
        change(root, "first.txt", Some("first after")),
        change(root, "gone.txt", None),
        change(root, "last.txt", Some("last after")),
    ];
    let err = commit(root, &changes).unwrap_err();
    assert!(
        format!("{err:#}").contains(".last.txt.opsdk-old"),
        "{err:#}"
    );
    assert_eq!(tree(root), before);
}

#[cfg(unix)]
#[test]
fn a_link_at_the_staging_name_is_replaced_not_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    fs::write(&victim, "theirs").unwrap();
    std::os::unix::fs::symlink(&victim, root.join(".PROJECT.opsdk-tmp")).unwrap();
    commit(root, &[change(root, "PROJECT", Some("ours"))]).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "theirs");
    assert_eq!(fs::read_to_string(root.join("PROJECT")).unwrap(), "ours");
    assert!(
        !fs::symlink_metadata(root.join("PROJECT"))
            .unwrap()
            .is_symlink()
    );
}
