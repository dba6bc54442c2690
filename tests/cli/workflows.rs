//! The generated GitHub Actions workflows pass actionlint v1.7.12, built from the Go module
//! proxy: the article's project and one with many kinds (the workflows do not depend on the
//! kinds, but the scaffold of each is what users commit), and the chart workflow of a project
//! with the Helm plugin.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::many_kinds::many_kinds_project;
use crate::support::{article_project, go_tool, project_dir, succeed};

const ACTIONLINT: &str = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12";
const WORKFLOWS: [&str; 3] = ["lint.yml", "test.yml", "image.yml"];

fn actionlint(bin: &Path, files: &[PathBuf]) -> Output {
    Command::new(bin)
        // The `run:` scripts too: actionlint hands them to shellcheck.
        .args(["-no-color", "-shellcheck=shellcheck"])
        .args(files)
        .output()
        .unwrap()
}

/// The project's workflows: the three every project has, and test-chart.yml with the chart.
fn workflows(dir: &Path) -> Vec<PathBuf> {
    let chart = dir.join("dist/chart").exists().then_some("test-chart.yml");
    WORKFLOWS
        .iter()
        .chain(chart.as_ref())
        .map(|name| dir.join(".github/workflows").join(name))
        .collect()
}

#[test]
#[ignore = "builds a Go program; run by hack/test.sh"]
fn generated_workflows_pass_actionlint() {
    let shellcheck = Command::new("shellcheck").arg("--version").output();
    assert!(
        shellcheck.is_ok_and(|out| out.status.success()),
        "shellcheck is missing (hack/test.sh installs it)"
    );
    let tmp = tempfile::TempDir::new().unwrap();
    let bin = go_tool("actionlint-v1.7.12", "actionlint", ACTIONLINT, tmp.path());
    let (_article, article) = project_dir();
    article_project(&article);
    let (_many, many) = project_dir();
    many_kinds_project(&many);
    let (_helm, helm) = project_dir();
    article_project(&helm);
    succeed(&helm, &["edit", "--plugins", "helm"]);
    assert_eq!(workflows(&helm).len(), 4);
    for dir in [&article, &many, &helm] {
        let files = workflows(dir);
        let out = actionlint(&bin, &files);
        assert!(
            out.status.success(),
            "actionlint on {}:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The linter does look: a step output that does not exist is an error.
    let test = article.join(".github/workflows/test.yml");
    let text = std::fs::read_to_string(&test).unwrap();
    let broken = text.replace(
        "steps.k8s-assets.outputs.cache-hit",
        "steps.k8s-assets.outputs.hit",
    );
    assert_ne!(broken, text);
    std::fs::write(&test, broken).unwrap();
    let out = actionlint(&bin, &workflows(&article));
    assert!(
        !out.status.success(),
        "actionlint accepted a broken workflow"
    );
}
