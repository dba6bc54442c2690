//! opsdk's command-line tests: one binary, one module per concern.

mod bad_input;
mod create_api;
mod e2e;
mod generated;
mod golden;
mod init;
mod many_kinds;
mod support;
