use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match opsdk::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return opsdk::cli::report_usage_error(&err),
    };
    match opsdk::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => opsdk::cli::report_error(&err),
    }
}
