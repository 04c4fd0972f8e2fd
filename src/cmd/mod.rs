//! What each subcommand runs, one file for each (`ask` also holds `mandate`, `records` the
//! session's `status`, `list`, `kinds` and `withdraw`), and what they share: the async runtime,
//! the log, and a result turned into the exit code.

use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::Command;
use consentd_client::errln;
use consentd_client::session::EXIT_ERROR;

pub(crate) mod ask;
mod bridge;
mod check_config;
mod doctor;
mod hook;
pub(crate) mod journal;
mod mcp;
mod pair;
mod records;
#[cfg(feature = "sandbox")]
mod sandbox;
mod serve;

/// Exit code: a usage error.
const EXIT_USAGE: u8 = 2;

/// Runs a parsed subcommand and returns the process's exit code.
pub(crate) fn run(command: Command) -> ExitCode {
    match command {
        Command::Serve { config } => serve::serve(&config),
        #[cfg(feature = "sandbox")]
        Command::Sandbox { port, state_dir } => sandbox::sandbox(port, state_dir),
        Command::CheckConfig { file, file_only } => check_config::check_config(&file, file_only),
        Command::Hook(hook) => hook::hook(hook),
        Command::Doctor(args) => doctor::doctor(args),
        Command::Pair { config } => pair::pair(&config),
        Command::Journal(command) => journal::journal(command),
        Command::Kinds { common } => records::kinds(common),
        Command::Withdraw { id, common } => records::withdraw(id, common),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Bridge { socket } => bridge::bridge(&socket),
        Command::Ask(args) => ask::ask(args),
        Command::Mandate(args) => ask::mandate(args),
        Command::Status { id, wait, common } => records::status(id, wait, common),
        Command::List { cursor, common } => records::list(cursor, common),
    }
}

pub(crate) fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONSENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

pub(crate) fn report(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            errln!("consentd: {error:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

pub(crate) fn with_runtime<T>(
    future: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(future)
}
