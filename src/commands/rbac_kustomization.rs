//! config/rbac/kustomization.yaml is opsdk's, rewritten from PROJECT, but whether a kind's
//! admin, editor and viewer roles are installed is the user's choice, made as in kubebuilder
//! by commenting their lines out: a helper role's line the file has commented stays so.

use std::collections::HashSet;
use std::path::Path;

use crate::plan::Plan;

const FILE: &str = "config/rbac/kustomization.yaml";
const HELPER_ROLES: [&str; 3] = ["_admin_role.yaml", "_editor_role.yaml", "_viewer_role.yaml"];

/// Comments out, in the planned file, the helper roles' lines the file on disk has commented;
/// in what opsdk wrote before (`previous`) too, so that a commented line is no change of the
/// user's to keep: it goes with its kind (`delete api`).
pub fn keep_commented_roles(root: &Path, plan: &mut Plan) {
    let Ok(current) = std::fs::read_to_string(root.join(FILE)) else {
        return;
    };
    let commented: HashSet<&str> = current
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('#'))
        .map(str::trim)
        .filter(|entry| entry.starts_with("- ") && HELPER_ROLES.iter().any(|s| entry.ends_with(s)))
        .collect();
    let Some(file) = plan.files.iter_mut().find(|f| f.path == Path::new(FILE)) else {
        return;
    };
    if commented.is_empty() {
        return;
    }
    file.contents = comment_out(&file.contents, &commented);
    file.previous = (file.previous.as_deref()).map(|text| comment_out(text, &commented));
}

/// `text` with each line `commented` holds commented out.
fn comment_out(text: &str, commented: &HashSet<&str>) -> String {
    text.lines()
        .map(|line| match commented.contains(line.trim()) {
            true => format!("#{line}\n"),
            false => format!("{line}\n"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlannedFile, Policy};

    #[test]
    fn a_commented_helper_role_stays_commented_and_nothing_else_does() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("config/rbac")).unwrap();
        let on_disk = "resources:\n#- role.yaml\n#- a_admin_role.yaml\n# - a_viewer_role.yaml\n- a_editor_role.yaml\n";
        std::fs::write(root.path().join(FILE), on_disk).unwrap();
        let rendered = "resources:\n- role.yaml\n- a_admin_role.yaml\n- a_editor_role.yaml\n- a_viewer_role.yaml\n- b_admin_role.yaml\n";
        let mut plan = Plan::default();
        plan.add(PlannedFile {
            path: FILE.into(),
            contents: rendered.into(),
            policy: Policy::Regenerate,
            verbatim: true,
            previous: None,
        });
        keep_commented_roles(root.path(), &mut plan);
        assert_eq!(
            plan.files[0].contents,
            "resources:\n- role.yaml\n#- a_admin_role.yaml\n- a_editor_role.yaml\n#- a_viewer_role.yaml\n- b_admin_role.yaml\n"
        );
    }
}
