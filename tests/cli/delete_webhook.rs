//! `opsdk delete webhook`: a project that loses webhooks is the project that never had them;
//! every refusal leaves the tree as it was.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

use crate::support::*;

const APPLICATION: &[&str] = &["--version", "v1alpha1", "--kind", "Application"];
const WIDGET: &[&str] = &["--group", "batch", "--version", "v1", "--kind", "Widget"];
const CRUISER_V1: &[&str] = &["--group", "ship", "--version", "v1", "--kind", "Cruiser"];
const CRUISER_V2: &[&str] = &["--group", "ship", "--version", "v2", "--kind", "Cruiser"];
const DEFAULTING: &str = "--defaulting";
const VALIDATION: &str = "--programmatic-validation";

fn delete_webhook_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = opsdk(dir);
    cmd.args(["delete", "webhook"]).args(args);
    cmd
}

fn delete_webhook(dir: &Path, args: &[&str]) -> String {
    succeed(dir, &[&["delete", "webhook"], args].concat())
}

/// A project made by `init`, `create api` with each of `kinds` (the second version of a kind
/// without a controller), then `create webhook` with each of `webhooks`.
fn project(kinds: &[&[&str]], webhooks: &[Vec<&str>]) -> (TempDir, PathBuf) {
    let (tmp, dir) = project_dir();
    init(&dir);
    for kind in kinds {
        let controller = if *kind == CRUISER_V2 {
            "--controller=false"
        } else {
            "--controller"
        };
        create_api(&dir, &[kind, &["--resource", controller][..]].concat());
    }
    for args in webhooks {
        create_webhook(&dir, args);
    }
    (tmp, dir)
}

fn with(api: &[&'static str], flags: &[&'static str]) -> Vec<&'static str> {
    [api, flags].concat()
}

/// Every webhook of a version deleted leaves exactly the tree of a project that never had
/// them: the kind's webhook file and suite, the webhook server's files and config/webhook go
/// with the project's last webhook, another kind's stay.
#[test]
fn deleted_webhooks_leave_the_project_that_never_had_them() {
    let kinds = [APPLICATION, WIDGET];
    let widget_hooks = with(WIDGET, &[DEFAULTING, VALIDATION]);
    let application_hooks = with(APPLICATION, &[VALIDATION]);
    let (_tmp, dir) = project(&kinds, &[widget_hooks, application_hooks.clone()]);
    let stdout = delete_webhook(&dir, WIDGET);
    for line in [
        "remove src/webhook/batch/v1/widget.rs",
        "remove tests/batch_widget_v1_webhook.rs",
        "update src/webhook/mod.rs",
        "update PROJECT",
        "The defaulting and validating webhooks of batch.minetto.dev/v1 Widget deleted.",
    ] {
        assert!(stdout.contains(line), "{line:?} missing in:\n{stdout}");
    }
    let (_tmp2, expected) = project(&kinds, &[application_hooks]);
    assert_eq!(snapshot(&dir), snapshot(&expected));

    delete_webhook(&dir, &with(APPLICATION, &[VALIDATION]));
    let (_tmp3, expected) = project(&kinds, &[]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
    assert!(!dir.join("config/webhook").exists());
    assert!(!dir.join("src/webhook/admission.rs").exists());
}

/// One of a version's two admission webhooks goes: the kind's file, which holds both
/// functions, stays; the registry and PROJECT keep only the other.
#[test]
fn one_webhook_goes_and_the_other_stays() {
    let (_tmp, dir) = project(
        &[APPLICATION],
        &[with(APPLICATION, &[DEFAULTING, VALIDATION])],
    );
    let stdout = delete_webhook(&dir, &with(APPLICATION, &[DEFAULTING]));
    assert!(!stdout.contains("remove "), "{stdout}");
    assert!(!read(&dir, "src/webhook/mod.rs").contains("/mutate-"));
    let (_tmp2, expected) = project(&[APPLICATION], &[with(APPLICATION, &[VALIDATION])]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

/// A conversion webhook goes with every spoke's conversion file, when the hub is the kind's
/// first version (so the storage version stays), and says what converting no more means.
#[test]
fn a_conversion_goes_with_its_spokes_files() {
    let kinds = [CRUISER_V1, CRUISER_V2];
    let conversion = with(CRUISER_V1, &["--conversion", "--spoke", "v2"]);
    let (_tmp, dir) = project(&kinds, &[conversion, with(CRUISER_V1, &[VALIDATION])]);
    let stdout = delete_webhook(&dir, &with(CRUISER_V1, &["--conversion"]));
    assert!(
        stdout.contains("remove src/api/ship/v2/cruiser_conversion.rs"),
        "{stdout}"
    );
    assert!(stdout.contains("The CRD no longer converts"), "{stdout}");
    let (_tmp2, expected) = project(&kinds, &[with(CRUISER_V1, &[VALIDATION])]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

#[test]
fn what_cannot_go_is_refused_with_what_can() {
    let kinds = [CRUISER_V1, CRUISER_V2, APPLICATION];
    let hub_v2 = with(CRUISER_V2, &["--conversion", "--spoke", "v1"]);
    let webhooks = [
        hub_v2,
        with(APPLICATION, &[VALIDATION]),
        with(CRUISER_V1, &[VALIDATION]),
    ];
    let (_tmp, dir) = project(&kinds, &webhooks);
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            with(CRUISER_V2, &["--conversion"]),
            "error: without its conversion webhook, kind Cruiser would be stored in v1 (its first version) instead of v2",
            "help: delete v1 first (`opsdk delete api --group ship --version v1 --kind Cruiser`), keep the conversion webhook, or pass --force if no cluster stores Cruisers yet",
        ),
        (
            with(CRUISER_V1, &["--conversion"]),
            "error: ship.minetto.dev/v1 Cruiser is a spoke",
            "help: opsdk delete webhook --group ship --version v2 --kind Cruiser --conversion",
        ),
        (
            with(CRUISER_V2, &[DEFAULTING]),
            "error: ship.minetto.dev/v2 Cruiser has no webhook of --defaulting",
            "help: its webhooks: --conversion",
        ),
        (
            with(APPLICATION, &[DEFAULTING, VALIDATION]),
            "error: minetto.dev/v1alpha1 Application has no webhook of --defaulting",
            "help: its webhooks: --programmatic-validation",
        ),
        (
            with(&["--version", "v1", "--kind", "Nope"], &[]),
            "error: no API of kind \"Nope\" in PROJECT",
            "help: the project's APIs:",
        ),
    ];
    for (args, error, help) in &cases {
        let mut cmd = delete_webhook_cmd(&dir, args);
        assert_refused(&dir, &mut cmd, error);
        let stderr = String::from_utf8(cmd.output().unwrap().stderr).unwrap();
        assert!(stderr.contains(help), "{help:?} missing in:\n{stderr}");
    }

    // A spoke without admission webhooks has none of its own.
    let (_tmp2, spoke) = project(&kinds, &webhooks[..1]);
    let mut cmd = delete_webhook_cmd(&spoke, CRUISER_V1);
    assert_refused(
        &spoke,
        &mut cmd,
        "error: ship.minetto.dev/v1 Cruiser has no webhooks of its own: it converts through the conversion webhook of v2",
    );
    let stderr = String::from_utf8(cmd.output().unwrap().stderr).unwrap();
    let help = "help: to stop converting, opsdk delete webhook --group ship --version v2 --kind Cruiser --conversion";
    assert!(stderr.contains(help), "{stderr}");

    let (_tmp3, bare) = project(&[APPLICATION], &[]);
    let mut cmd = delete_webhook_cmd(&bare, APPLICATION);
    assert_refused(
        &bare,
        &mut cmd,
        "error: minetto.dev/v1alpha1 Application has no webhooks",
    );
}

/// The kind's webhook file is the user's once they change it: kept and named, unless
/// `--force`; `--dry-run` changes nothing.
#[test]
fn a_changed_webhook_file_is_kept_unless_forced() {
    let (_tmp, dir) = project(&[APPLICATION], &[with(APPLICATION, &[VALIDATION])]);
    let before = snapshot(&dir);
    let dry = delete_webhook(&dir, &with(APPLICATION, &["--dry-run"]));
    assert!(
        dry.contains("remove src/webhook/v1alpha1/application.rs"),
        "{dry}"
    );
    assert_eq!(snapshot(&dir), before);

    let file = "src/webhook/v1alpha1/application.rs";
    let text = read(&dir, file);
    std::fs::write(dir.join(file), format!("{text}\n// the user's line\n")).unwrap();
    let mut cmd = delete_webhook_cmd(&dir, APPLICATION);
    assert_refused(
        &dir,
        &mut cmd,
        "refusing to remove files you changed since opsdk wrote them: src/webhook/v1alpha1/application.rs (kept)",
    );
    delete_webhook(&dir, &with(APPLICATION, &["--force"]));
    let (_tmp2, expected) = project(&[APPLICATION], &[]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}

/// config/webhook/kustomization.yaml with an entry the user added goes with the last webhook
/// only with `--force`: kept and named otherwise, as a changed file is.
#[test]
fn a_webhook_kustomization_the_user_extended_is_kept_unless_forced() {
    let (_tmp, dir) = project(&[APPLICATION], &[with(APPLICATION, &[VALIDATION])]);
    let file = "config/webhook/kustomization.yaml";
    let text = read(&dir, file).replace("- service.yaml\n", "- service.yaml\n- webhook_pdb.yaml\n");
    assert!(text.contains("webhook_pdb.yaml"), "{text}");
    std::fs::write(dir.join(file), text).unwrap();
    let mut cmd = delete_webhook_cmd(&dir, APPLICATION);
    assert_refused(
        &dir,
        &mut cmd,
        "refusing to remove files you changed since opsdk wrote them: config/webhook/kustomization.yaml (kept)",
    );
    delete_webhook(&dir, &with(APPLICATION, &["--force"]));
    assert!(!dir.join(file).exists());
}

/// Before any cluster stores a kind, `--force` backs out of a conversion webhook whose hub is
/// not the kind's first version: the first becomes the storage version again, with a warning.
#[test]
fn force_takes_a_conversion_webhook_back_before_any_cluster_stores_the_kind() {
    let kinds = [CRUISER_V1, CRUISER_V2];
    let hub_v2 = with(CRUISER_V2, &["--conversion", "--spoke", "v1"]);
    let (_tmp, dir) = project(&kinds, &[hub_v2]);
    let forced = with(CRUISER_V2, &["--conversion", "--force"]);
    let output = delete_webhook_cmd(&dir, &forced).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warning = "warning: kind Cruiser is stored in v1 from now on, no longer in v2";
    assert!(stderr.contains(warning), "{stderr}");
    let (_tmp2, expected) = project(&kinds, &[]);
    assert_eq!(snapshot(&dir), snapshot(&expected));
}
