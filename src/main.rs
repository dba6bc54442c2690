use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match opsdk::run(opsdk::cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One `error:` line (the chain joined), then any `help:` line the error carries.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
