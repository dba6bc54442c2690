//! opsdk: scaffolds Kubernetes operator projects in Rust.
//!
//! The pipeline: `cli` parses, `validate` checks, `context` computes every name once,
//! `render` turns the embedded templates into a `plan`, and `writer` checks the whole plan
//! before writing anything.

pub mod cli;
pub mod commands;
pub mod context;
pub mod external_crd;
pub mod format;
pub mod lockfile;
pub mod naming;
pub mod plan;
pub mod plugins;
pub mod project_file;
pub mod render;
pub mod validate;
pub mod versions;
pub mod writer;

use std::io::Write as _;

use anyhow::{Context as _, Result};
use clap::CommandFactory;

use cli::{Cli, Command, CreateCommand, DeleteCommand};

pub fn run(cli: Cli) -> Result<()> {
    let root = std::env::current_dir().context("reading the current directory")?;
    match cli.command {
        Command::Init(args) => commands::init::run(&root, &args),
        Command::Create(CreateCommand::Api(args)) => commands::create_api::run(&root, &args),
        Command::Create(CreateCommand::Webhook(args)) => {
            commands::create_webhook::run(&root, &args)
        }
        Command::Delete(DeleteCommand::Api(args)) => commands::delete_api::run(&root, &args),
        Command::Delete(DeleteCommand::Webhook(args)) => {
            commands::delete_webhook::run(&root, &args)
        }
        Command::Edit(args) => commands::edit::run(&root, &args),
        Command::Version => {
            let v = &versions::VERSIONS;
            let mut out = std::io::stdout().lock();
            writeln!(out, "opsdk {}", env!("CARGO_PKG_VERSION"))?;
            writeln!(
                out,
                "generates: kube {}, k8s-openapi {} ({}), Kubernetes {}",
                v.kube, v.k8s_openapi, v.k8s_feature, v.kubernetes
            )?;
            Ok(())
        }
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "opsdk", &mut std::io::stdout());
            Ok(())
        }
    }
}
