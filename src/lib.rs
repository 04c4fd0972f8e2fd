//! consentd: the consent layer between an AI agent (a "session") and the outside world.
//!
//! A session asks over a Unix socket for an action (a kind, a payload, attachments); consentd
//! refuses anything the owner could not see, records the ask durably, and — once the owner has
//! pressed Yes in their private Telegram chat — runs the category's command at most once.
//! Every step goes into a hash-chained journal.
//!
//! The parts, from the edge inwards (docs/ARCHITECTURE.md has the map and the invariants):
//! - [`cli`]: the `consentd` command line; `output`, its lines, which a closed pipe does not crash.
//! - [`config`]: the TOML config, parsed and then validated with every problem named by its key;
//!   `preflight`, the same config against this machine (token, commands, users).
//! - [`server`]: the Unix socket: peer credentials, framing, caps, timeouts, shutdown.
//! - [`protocol`]: the socket's JSON requests and responses, parsed strictly.
//! - [`refusal`]: the refusal gate — everything refused before a card, with its reason code;
//!   [`refusal::visible`] is the Unicode policy.
//! - [`digest`]: the canonical envelope of an action and its SHA-256 digest.
//! - `media`: an attachment's magic bytes against its declared media type.
//! - [`lookalike`]: look-alike targets (UTS #39): mixed scripts, and confusables of known targets.
//! - [`intake`]: an ask's journey from a parsed request to a stored record or a refusal.
//! - [`store`]: the SQLite store, its one owning thread, the record state machine, and the
//!   journal staging that keeps store and journal in step.
//! - `stored`: an attachment's stored copy, read back and checked against its SHA-256.
//! - [`journal`]: the journal's line format, appending, verification and repair.
//! - [`client`]: the `ask`, `status` and `list` clients.
//! - [`daemon`]: `serve`, wiring the parts together.
//! - `sandbox`: `consentd sandbox` (the default-on `sandbox` feature), the daemon against the
//!   `consentd-emulator` crate's Bot API emulator with the chat as a web page.

pub mod cli;
pub(crate) mod client;
pub mod clock;
pub mod config;
pub(crate) mod consent;
pub(crate) mod daemon;
pub mod executor;
pub(crate) mod failpoint;
pub(crate) mod intake;
pub mod journal;
pub(crate) mod output;
pub(crate) mod pair;
pub(crate) mod preflight;
pub mod press;
#[cfg(feature = "sandbox")]
pub(crate) mod sandbox;
pub(crate) mod sender;
pub(crate) mod server;
pub mod store;
pub(crate) mod stored;
pub(crate) mod telegram;

#[cfg(test)]
mod protocol_doc_tests;

// The rules, from consentd-core, under the names the daemon has always used for them.
pub use consentd_core::{
    action, card, commands, deadline, digest, gate, locale, lookalike, mandate, pairing, protocol,
    refusal, shown, split, styled,
};
