//! consentd's rules, with no IO: what a session may ask, what the owner is shown, and what a
//! press means.
//!
//! What this crate offers:
//! - [`config`]: the config's TOML parsed and validated, every problem named by its key.
//! - [`protocol`]: the socket's JSON requests and responses, parsed strictly ([`kinds`], the
//!   answer listing the categories); [`action`] and
//!   [`digest`], an action's canonical envelope and its SHA-256.
//! - [`refusal`]: the gate — everything refused before a card, with its reason code ([`reason`],
//!   a leaf the parser and the checks share);
//!   [`refusal::visible`] is the Unicode policy; [`lookalike`] marks look-alike targets (UTS #39).
//! - [`card`]: the cards, receipts and replies in the owner's language ([`locale`]), as text with
//!   Telegram entities ([`styled`]), long texts in parts ([`split`]), and [`shown`], strings from
//!   others written so that nothing in them is hidden.
//! - [`exact`]: exact rules ("Always here"), the hook call an ask carries and the `rule` op.
//! - [`press`]: a button's signed data and the verdict on a press; [`deadline`] and [`clock`],
//!   time as two clocks so a stepped wall clock cannot stretch a card.
//! - [`mandate`]: standing permissions' terms and what they cover; [`gate`], the notification
//!   gate (quiet hours, the night limit); [`commands`], the owner's commands; [`pairing`].
//! - [`journal`]: the consent journal's line format, and its verification over bytes (the file
//!   is the daemon's).
//!
//! Only what the daemon, its tests, benches and fuzz targets call is public; everything else is
//! `pub(crate)`, so a rule can change shape inside the crate without reaching its callers.
//!
//! What it promises never to do: no async runtime, no database, no network. The compiler keeps
//! that promise — none of tokio, rusqlite, reqwest, axum or teloxide is a dependency (`cargo tree
//! -p consentd-core -e normal`). It reads no file either: its callers read the config file and
//! the press key and hand it their contents.

pub mod action;
pub mod card;
pub mod clock;
pub mod commands;
pub mod config;
pub mod deadline;
pub mod digest;
pub mod exact;
pub mod gate;
pub mod graphemes;
pub mod journal;
pub mod kinds;
pub mod locale;
pub mod lookalike;
pub mod mandate;
pub(crate) mod media;
pub mod pairing;
pub mod press;
pub mod protocol;
pub mod raise;
pub mod reason;
pub mod refusal;
pub mod refusal_budget;
pub mod shown;
pub mod split;
pub mod stranger;
pub mod styled;
pub mod suggest;
pub mod waiting;
