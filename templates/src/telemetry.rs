//! Structured logging: text for humans, JSON for log pipelines; `RUST_LOG` filters. The flags
//! of controller-runtime's zap logger that kubebuilder manifests pass are taken too, so that
//! they start this manager unchanged: `--zap-log-level`, `--zap-encoder`, `--zap-devel`.
//! Lines reach stdout from a thread of their own (`writer`).

mod writer;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

pub use writer::Lines;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line per event, for humans (zap's `console`).
    #[value(alias = "console")]
    Text,
    Json,
}

/// The logging flags.
#[derive(Clone, Debug, clap::Args)]
pub struct LogFlags {
    /// Log format: text (or console) or json
    #[arg(long, alias = "zap-encoder", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Level of the manager's logs, as controller-runtime's flag takes it: debug, info, error,
    /// or a verbosity (1 is debug, 2 and more trace). RUST_LOG, when set, wins
    #[arg(long = "zap-log-level", value_parser = parse_level)]
    pub level: Option<String>,
    /// controller-runtime's development mode: debug logs unless --zap-log-level says otherwise
    #[arg(long = "zap-devel", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub devel: bool,
    /// Taken so that kubebuilder manifests start; tracing has no stack traces to set a level for
    #[arg(long = "zap-stacktrace-level", hide = true)]
    pub stacktrace_level: Option<String>,
    /// Taken so that kubebuilder manifests start; timestamps are RFC 3339
    #[arg(long = "zap-time-encoding", hide = true)]
    pub time_encoding: Option<String>,
}

/// A `--zap-log-level` as an `EnvFilter` level: zap's names (`panic` logs errors only here),
/// or a verbosity, zap's level below debug.
fn parse_level(text: &str) -> Result<String, String> {
    match text.to_ascii_lowercase().as_str() {
        "debug" | "1" => Ok("debug".into()),
        "info" => Ok("info".into()),
        "error" | "panic" => Ok("error".into()),
        number if number.parse::<u8>().is_ok_and(|n| n > 1) => Ok("trace".into()),
        _ => Err(format!(
            "{text:?}: expected debug, info, error, panic or a verbosity from 1"
        )),
    }
}

impl LogFlags {
    /// The filter the flags ask for when RUST_LOG is not set: the level chosen for every
    /// crate, and kube's own request logs at info and above only while the level is info.
    fn filter(&self) -> String {
        let level = (self.level.as_deref()).unwrap_or(if self.devel { "debug" } else { "info" });
        match level {
            "info" => "info,kube=warn".into(),
            other => other.into(),
        }
    }
}

/// Logs to stdout as `flags` say. The lines still queued are written when what it returns
/// is dropped: keep it until the manager exits.
pub fn init(flags: &LogFlags) -> Logs {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(flags.filter()));
    let lines = Lines::to(std::io::stdout());
    let writer = match &lines {
        Ok(lines) => BoxMakeWriter::new(lines.clone()),
        Err(_) => BoxMakeWriter::new(std::io::stdout),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match flags.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
    if let Err(err) = &lines {
        tracing::warn!("logging from the manager's own thread, no thread for it: {err}");
    }
    for (flag, given) in [
        ("--zap-stacktrace-level", &flags.stacktrace_level),
        ("--zap-time-encoding", &flags.time_encoding),
    ] {
        if given.is_some() {
            tracing::warn!("{flag} has no effect here: kept for kubebuilder manifests");
        }
    }
    Logs(lines.ok())
}

/// Writes out the queued lines when dropped.
pub struct Logs(Option<Lines>);

impl Drop for Logs {
    fn drop(&mut self) {
        if let Some(lines) = &self.0 {
            lines.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        logs: LogFlags,
    }

    fn filter_of(args: &[&str]) -> Result<(String, LogFormat), clap::Error> {
        let flags = Flags::try_parse_from(std::iter::once("manager").chain(args.iter().copied()))?;
        Ok((flags.logs.filter(), flags.logs.log_format))
    }

    #[test]
    fn controller_runtimes_zap_flags_set_the_level_and_format() {
        for (args, filter, format) in [
            (vec![], "info,kube=warn", LogFormat::Text),
            (vec!["--zap-devel"], "debug", LogFormat::Text),
            (vec!["--zap-devel=false"], "info,kube=warn", LogFormat::Text),
            (
                vec!["--zap-devel", "--zap-log-level=info"],
                "info,kube=warn",
                LogFormat::Text,
            ),
            (vec!["--zap-log-level", "error"], "error", LogFormat::Text),
            (vec!["--zap-log-level=Panic"], "error", LogFormat::Text),
            (vec!["--zap-log-level=3"], "trace", LogFormat::Text),
            (
                vec!["--zap-encoder=json"],
                "info,kube=warn",
                LogFormat::Json,
            ),
            (
                vec!["--zap-encoder", "console"],
                "info,kube=warn",
                LogFormat::Text,
            ),
            (
                vec!["--log-format=json", "--zap-time-encoding=iso8601"],
                "info,kube=warn",
                LogFormat::Json,
            ),
        ] {
            let parsed = filter_of(&args).unwrap_or_else(|err| panic!("{args:?}: {err}"));
            assert_eq!(parsed, (filter.to_string(), format), "{args:?}");
        }
        for bad in [
            ["--zap-log-level=loud"],
            ["--zap-log-level=0"],
            ["--zap-encoder=xml"],
        ] {
            assert!(filter_of(&bad).is_err(), "{bad:?} accepted");
        }
    }
}
