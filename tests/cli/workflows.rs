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

/// Every action is pinned by commit with its release in a comment, so that a moved or stolen
/// tag cannot change what runs with the repository's token (the image job can push).
#[test]
fn every_action_is_pinned_by_commit() {
    let (_helm, helm) = project_dir();
    article_project(&helm);
    succeed(&helm, &["edit", "--plugins", "helm"]);
    let mut actions = 0;
    for file in workflows(&helm) {
        let text = std::fs::read_to_string(&file).unwrap();
        // The repository's own workflows (`./.github/...`) are the commit's.
        let uses = text.lines().filter_map(|l| l.trim().strip_prefix("uses: "));
        for spec in uses.filter(|spec| !spec.starts_with("./")) {
            let pinned = spec
                .split_once('@')
                .and_then(|(_, at)| at.split_once(" # v"));
            let commit = pinned.map(|(commit, _)| commit).unwrap_or_default();
            assert!(
                commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}: {spec}",
                file.display()
            );
            actions += 1;
        }
    }
    assert!(actions >= 10, "{actions} actions");
    assert!(helm.join(".github/dependabot.yml").exists());
}

/// The image is pushed from main and tags only once lint and tests pass on that commit: they run
/// from image.yml then, and not a second time on their own.
#[test]
fn the_image_is_pushed_only_after_lint_and_tests_pass() {
    let (_article, article) = project_dir();
    article_project(&article);
    let read = |name: &str| {
        let text = std::fs::read_to_string(article.join(".github/workflows").join(name)).unwrap();
        serde_yaml::from_str::<serde_yaml::Value>(&text).unwrap()
    };
    let image = read("image.yml");
    let jobs = &image["jobs"];
    assert_eq!(
        jobs["push"]["needs"],
        serde_yaml::from_str::<serde_yaml::Value>("[lint, test]").unwrap()
    );
    for name in ["lint", "test"] {
        assert_eq!(
            jobs[name]["uses"].as_str(),
            Some(format!("./.github/workflows/{name}.yml").as_str())
        );
        let called = read(&format!("{name}.yml"));
        let on = &called["on"];
        assert!(
            on.get("workflow_call").is_some(),
            "{name}.yml cannot be called"
        );
        assert_eq!(
            on["push"]["branches-ignore"][0].as_str(),
            Some("main"),
            "{name}.yml runs twice on main"
        );
        assert_eq!(
            on["push"]["tags-ignore"][0].as_str(),
            Some("v*"),
            "{name}.yml runs twice on tags"
        );
    }
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
        // actionlint finds the workflows a job calls (`uses: ./.github/...`) from the
        // repository's root: a clone's.
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir)
            .status();
        assert!(
            git.is_ok_and(|s| s.success()),
            "git init in {}",
            dir.display()
        );
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

    // The linter does look: a step that does not exist is an error. (Actions pinned by commit
    // are not in its table of known actions, so it no longer checks their inputs and outputs.)
    let test = article.join(".github/workflows/test.yml");
    let text = std::fs::read_to_string(&test).unwrap();
    let broken = text.replace(
        "steps.k8s-assets.outputs.cache-hit",
        "steps.k8s-asset.outputs.cache-hit",
    );
    assert_ne!(broken, text);
    std::fs::write(&test, broken).unwrap();
    let out = actionlint(&bin, &workflows(&article));
    assert!(
        !out.status.success(),
        "actionlint accepted a broken workflow"
    );
    std::fs::write(&test, text.replace("  workflow_call:\n", "")).unwrap();
    let out = actionlint(&bin, &workflows(&article));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("workflow_call"),
        "actionlint accepted image.yml calling a workflow that cannot be called"
    );
}
