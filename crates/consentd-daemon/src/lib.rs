//! consentd-daemon: the daemon, the consent layer between an AI agent (a "session") and the
//! outside world.
//!
//! A session asks over a Unix socket for an action (a kind, a payload, attachments); the daemon
//! refuses anything the owner could not see, records the ask durably, and — once the owner has
//! pressed Yes in their private Telegram chat — runs the category's command at most once.
//! Every step goes into a hash-chained journal.
//!
//! This crate is the IO around the rules of `consentd-core` and the store of `consentd-store`;
//! each path names the crate a thing lives in (`consentd_core::card`, `consentd_store::journal`).
//! The agent's side is `consentd-client`, whose file reading, output lines and hook rules the
//! daemon uses too; the command line is the root package's.
//!
//! Public is what the root package's subcommands call: [`daemon::serve`], [`sandbox::run`],
//! [`pair::pair`], [`seal_key::make_key`], [`preflight`] and [`config`]'s reading of the file,
//! with [`clock`] and [`press`] (the press key's file). Everything else is `pub(crate)`.
//!
//! What it promises never to do: run an action without a durable claim after the owner's press
//! or inside a mandate; run one twice; put a secret (the bot token, the press key) in a log, the
//! journal or anything the session can read. docs/ARCHITECTURE.md has the map and the
//! invariants; the parts, from the edge inwards:
//! - `config` and `preflight`: the config's file against this machine (token, commands, users).
//! - `server`: the Unix socket: peer credentials, framing, caps, timeouts, shutdown; `intake`,
//!   an ask's journey from a parsed request to a stored record or a refusal, and its `disk`,
//!   the intake's watch on the state directory's free space.
//! - `owner`, the owner the intake and the consent loop share; `consent`, the consent loop;
//!   `sender`, the outbox; `telegram`, the Bot API transport; `unreachable`, an episode of
//!   Telegram refusing the bot (409, 401) the daemon serves through; `executor`, the command,
//!   once; `actions`, the built-in actions a category may run instead of a command.
//! - `daemon`: `serve`, wiring the parts together; `pair`, a pairing code; `seal_key`, the
//!   journal's sealing key; `sandbox` (the default-on `sandbox` feature), the daemon against the
//!   `consentd-emulator` crate's Bot API emulator with the chat as a web page.
//! - `clock`, `failpoint`: the real clocks and, in a `test-hooks` build, the shifted clock and
//!   crash points.

pub(crate) mod actions;
pub(crate) mod backoff;
pub mod clock;
pub mod config;
pub(crate) mod consent;
pub mod daemon;
pub(crate) mod executor;
pub(crate) mod failpoint;
pub(crate) mod intake;
pub(crate) mod owner;
pub mod pair;
pub mod preflight;
pub mod press;
#[cfg(feature = "sandbox")]
pub mod sandbox;
pub mod seal_key;
pub(crate) mod sender;
pub(crate) mod server;
pub mod telegram;
pub(crate) mod unreachable;

#[cfg(test)]
mod protocol_doc_tests;
