//! Errors as opsdk prints them: one `error:` line and one `help:` line. clap's own errors
//! exit with clap's code 2; `--help` and `--version` print as clap prints them.

use std::process::ExitCode;

use clap::error::ErrorKind;

/// Prints `err` and returns the exit code.
pub fn report(err: &clap::Error) -> ExitCode {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    }
    let rendered = err.render().to_string();
    let (error, help) = if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        missing_command(&rendered)
    } else {
        one_line_each(&rendered)
    };
    eprintln!("{error}\nhelp: {help}");
    ExitCode::from(2)
}

/// Prints an error of a command: its chain on one `error:` line and its `help:` line, or,
/// for an error that carries none (a file that cannot be read or written), one saying what
/// to look at.
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    let shown = format!("{err:#}");
    if shown.contains("\nhelp: ") {
        eprintln!("error: {shown}");
    } else if err.chain().any(|cause| cause.is::<std::io::Error>()) {
        eprintln!(
            "error: {shown}\nhelp: check the path named above (it must be a readable, writable file or directory), then run the command again"
        );
    } else {
        eprintln!("error: {shown}\nhelp: run the command with --help for what it takes");
    }
    ExitCode::FAILURE
}

/// A command run without its subcommand (`opsdk create`), for which clap renders the
/// command's help: the subcommands it lists on the `error:` line, and where to read more.
fn missing_command(rendered: &str) -> (String, String) {
    let lines: Vec<&str> = rendered.lines().map(str::trim).collect();
    let usage = lines.iter().find_map(|line| line.strip_prefix("Usage: "));
    let command = usage.map_or("opsdk", |usage| usage.trim_end_matches(" <COMMAND>"));
    let names: Vec<&str> = (lines.iter())
        .skip_while(|line| **line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    (
        format!("error: {command} needs a command: {}", names.join(", ")),
        format!("`{command} --help` says what each one does"),
    )
}

/// clap's message as one `error:` line (its first paragraph, which may name several
/// arguments on lines of their own) and a `help:` line: clap's tip, or the usage.
fn one_line_each(rendered: &str) -> (String, String) {
    let lines: Vec<&str> = rendered.lines().map(str::trim).collect();
    let error = (lines.iter())
        .take_while(|line| !line.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let tip = lines.iter().find_map(|line| line.strip_prefix("tip: "));
    let usage = lines.iter().find_map(|line| line.strip_prefix("Usage: "));
    let help = match (tip, usage) {
        (Some(tip), _) => tip.to_string(),
        (None, Some(usage)) => format!("usage: {usage} (--help lists every flag)"),
        (None, None) if error.contains("[possible values: ") => {
            "pass one of the possible values".to_string()
        }
        (None, None) => "--help lists every command and flag".to_string(),
    };
    (error, help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn reported(args: &[&str]) -> (String, String) {
        let err = Cli::try_parse_from(args).unwrap_err();
        one_line_each(&err.render().to_string())
    }

    #[test]
    fn a_missing_argument_is_named_on_the_error_line() {
        let (error, help) = reported(&["opsdk", "create", "api", "--kind", "Widget"]);
        assert!(error.starts_with("error: the following required arguments were not provided"));
        assert!(error.contains("--version <VERSION>"), "{error}");
        assert!(help.starts_with("usage: opsdk create api"), "{help}");
    }

    #[test]
    fn a_missing_command_is_an_error_naming_the_commands() {
        let err = Cli::try_parse_from(["opsdk", "create"]).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
        let (error, help) = missing_command(&err.render().to_string());
        assert_eq!(error, "error: opsdk create needs a command: api, webhook");
        assert_eq!(help, "`opsdk create --help` says what each one does");
        let err = Cli::try_parse_from(["opsdk"]).unwrap_err();
        let (error, _) = missing_command(&err.render().to_string());
        assert!(
            error.starts_with("error: opsdk needs a command: init, create, delete"),
            "{error}"
        );
    }

    #[test]
    fn a_bad_value_names_the_choices() {
        let (error, _) = reported(&["opsdk", "init", "--license", "gpl"]);
        assert!(
            error.contains("'gpl'") && error.contains("apache2"),
            "{error}"
        );
        assert!(!error.contains('\n'));
    }

    #[test]
    fn an_unknown_flag_keeps_clap_s_tip() {
        let (error, help) = reported(&["opsdk", "init", "--domian", "a.io"]);
        assert!(error.contains("--domian"), "{error}");
        assert!(help.contains("--domain"), "{help}");
    }
}
