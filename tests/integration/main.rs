//! The one integration test binary: each module drives the real `consentd` binary through its
//! real surfaces — the socket, the command line, the journal file.

mod ask;
mod attachments;
mod binding;
mod budgets;
mod budgets_disk;
mod chat;
mod cli_help;
mod clients;
mod closed_stdout;
mod config_cli;
mod consent;
mod crash;
mod crashfs;
mod faults;
mod fixture;
mod gate;
mod hooks;
mod hooks_gate;
mod journal_cli;
mod journal_seals;
mod lanes_strangers;
mod load;
mod locales;
mod lookalike;
mod mandates;
mod mcp;
mod owner;
mod privilege;
mod protocol_additions;
mod runs;
mod sandbox;
mod session_cli;
mod socket;
mod tamper;
mod unicode;
