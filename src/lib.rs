//! consentd's command line: the clap definitions and what each subcommand runs. The agent's side
//! is the `consentd-client` crate, the daemon the `consentd-daemon` crate; this library is here
//! only so the integration tests can read the parser ([`cli::Cli`]) for its help texts.

pub mod cli;
