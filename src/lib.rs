//! consentd's command line: the clap definitions ([`cli`]) and what each subcommand runs (`cmd`).
//! The agent's side is the `consentd-client` crate, the daemon the `consentd-daemon` crate.
//!
//! A library only so the integration tests can read the parser, [`cli::Cli`], for its help
//! texts; `src/main.rs` calls [`main`].

use std::process::ExitCode;

use clap::Parser as _;

pub mod cli;
mod cmd;

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    cmd::run(cli::Cli::parse().command)
}
