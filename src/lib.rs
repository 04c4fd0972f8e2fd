//! consentd: the consent layer between an AI agent (a "session") and the outside world.
//!
//! A session asks over a Unix socket for an action (a kind, a payload, attachments); consentd
//! refuses anything the owner could not see, records the ask durably, and — once the owner has
//! pressed Yes in their private Telegram chat — runs the category's command at most once.
//! Every step goes into a hash-chained journal.
//!
//! This crate is the daemon and its command line: the IO around the rules of `consentd-core`
//! (re-exported here under their old names: [`refusal`], [`card`], [`protocol`], …) and the
//! store of `consentd-store` (re-exported as [`store`] and [`journal`]).
//!
//! What it offers as a library is small, and only for its own tests, benches and fuzz targets:
//! [`cli`] (the argument parser), [`config`] (the rules plus reading the file), [`clock`],
//! [`journal`] (the line format, verification, the file), [`press`] (the verdict plus the key's
//! file), [`store`]'s record states, and the core's modules. Everything
//! else is `pub(crate)`: the socket server, intake, the consent loop, the sender, the Telegram
//! transport, the daemon's wiring and the sandbox.
//!
//! What it promises never to do: run an action without a durable claim after the owner's press
//! or inside a mandate; run one twice; put a secret (the bot token, the press key) in a log, the
//! journal or anything the session can read. docs/ARCHITECTURE.md has the map and the
//! invariants; the parts, from the edge inwards:
//! - `cli`, the command line; `output`, its lines, which a closed pipe does not crash;
//!   `client`, the `ask`, `status` and `list` clients; `hook`, the agents' permission hooks
//!   (`consentd hook claude-code`, `consentd hook codex`) and their rules file.
//! - `config` and `preflight`: the config against this machine (token, commands, users).
//! - `server`: the Unix socket: peer credentials, framing, caps, timeouts, shutdown; `intake`,
//!   an ask's journey from a parsed request to a stored record or a refusal.
//! - `store` (the `consentd-store` crate): the SQLite store, its one owning thread, the record
//!   state machine, and the journal staging that keeps store and journal in step; `stored`, an
//!   attachment's stored copy read back against its SHA-256; `journal`, the journal file.
//! - `owner`, the owner the intake and the consent loop share; `consent`, the consent loop;
//!   `sender`, the outbox; `telegram`, the Bot API transport; `executor`, the command, once.
//! - `daemon`: `serve`, wiring the parts together; `sandbox` (the default-on `sandbox` feature),
//!   the daemon against the `consentd-emulator` crate's Bot API emulator with the chat as a web
//!   page.

pub mod cli;
pub(crate) mod client;
pub mod clock;
pub mod config;
pub(crate) mod consent;
pub(crate) mod daemon;
pub(crate) mod disk;
pub(crate) mod doctor;
pub(crate) mod executor;
pub(crate) mod failpoint;
pub(crate) mod hook;
pub(crate) mod intake;
pub(crate) mod mcp;
pub(crate) mod output;
pub(crate) mod owner;
pub(crate) mod pair;
pub(crate) mod preflight;
pub mod press;
#[cfg(feature = "sandbox")]
pub(crate) mod sandbox;
pub(crate) mod sender;
pub(crate) mod server;
pub(crate) mod telegram;

#[cfg(test)]
mod protocol_doc_tests;

// The rules, from consentd-core, under the names the daemon has always used for them.
pub use consentd_core::{
    action, card, commands, deadline, digest, exact, gate, kinds, locale, lookalike, mandate,
    pairing, protocol, reason, refusal, shown, split, styled, suggest,
};
// The store and the journal's file, from consentd-store, under the same names.
pub use consentd_store as store;
pub use consentd_store::journal;
pub(crate) use consentd_store::stored;
