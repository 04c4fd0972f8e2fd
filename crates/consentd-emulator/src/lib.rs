//! A fake Telegram Bot API server on loopback, for tests and for the browser sandbox.
//!
//! This crate offers [`Emulator`]: a server to start, updates to push, answers to script, and
//! the chat it keeps to read back. It promises never to reach the network beyond the loopback
//! address it binds, and never to know anything of consentd: it speaks only the Bot API, so a
//! test against it checks consentd's bot code, not a second copy of its assumptions.
//!
//! consentd's tests run the real bot code — teloxide requests and consentd's own long-polling
//! loop — against this server instead of Telegram. It answers `POST` (or `GET`)
//! `/bot{token}/{method}` the way the Bot API does: the same envelope
//! (`{"ok":true,"result":…}` / `{"ok":false,"error_code":…,"description":…}`), the same error
//! texts, objects complete enough for teloxide to deserialize, and the chat state those methods
//! imply (messages, their edits, their keyboards, deletions, answered callback queries).
//!
//! # What it emulates
//!
//! * Method names match case-insensitively (teloxide sends `SendMessage`, Telegram accepts any
//!   case); calls are recorded under the lower-case name.
//! * Bodies: JSON, `application/x-www-form-urlencoded`, `multipart/form-data` (teloxide's uploads:
//!   a text field `photo=attach://ID` plus a file part named `ID`), and query strings. Form and
//!   multipart values arrive as strings; numbers, booleans and JSON-serialized objects are parsed
//!   back, except in free-text fields (`text`, `caption`, …), so recorded params look alike
//!   whatever the encoding. An uploaded file is recorded as `{"name","bytes","sha256"}`.
//! * `getMe`, `getUpdates` (offset confirmation, `limit`, long polling woken at once by
//!   [`Emulator::push_update`], and — as Telegram does — a newer `getUpdates` ends an older one
//!   still waiting with 409 Conflict), `sendMessage`, `editMessageText`,
//!   `editMessageReplyMarkup`, `deleteMessage`, `answerCallbackQuery`, `sendPhoto`,
//!   `sendDocument`, `setMyCommands`, `getMyCommands`, `setWebhook`, `getWebhookInfo` and
//!   `deleteWebhook` (while a webhook is set, `getUpdates` answers 409 as Telegram does).
//!   Anything else answers 404 "Not Found", as Telegram does for an unknown method.
//! * Channels a test adds ([`Emulator::add_channel`]): `sendMessage`, `sendPhoto` and
//!   `sendDocument` take their `@username` or id as `chat_id`, refuse a channel where the bot is
//!   not an administrator ("need administrator rights in the channel chat") and an unknown
//!   `@username` ("chat not found"), and answer a channel post with `sender_chat` and no `from`.
//! * Telegram's checks that bot code must cope with: text 1–4096 and captions ≤ 1024 (counted in
//!   UTF-16 units, which is never fewer than code points, so a text passing here passes both
//!   ways of counting), whitespace-only text, callback data 1–64 bytes, an edit that changes
//!   nothing ("message is not modified"), editing or deleting a missing message, answering a
//!   callback query twice or one that was never sent. `parse_mode` is recorded, not interpreted.
//! * Message ids count per chat from 1, shared by the user's and the bot's messages, like a
//!   private chat. Update ids count from 1; a pushed update keeps its own `update_id` (so tests
//!   can push duplicates and out-of-order ids, delivered in push order), and later assigned ids
//!   continue above the highest seen, and above a poller's `offset` (a bot restarted against a
//!   fresh emulator has confirmed ids this one never gave out).
//!
//! # Scripted answers, and what teloxide 0.17 makes of them
//!
//! [`Emulator::script`] queues answers per method, consumed in order before normal handling;
//! [`Emulator::outage`] gives one answer to every call of a method until
//! [`Emulator::end_outage`].
//! Each row was observed through teloxide in this module's tests:
//!
//! | scripted answer | HTTP | teloxide `RequestError` |
//! |---|---|---|
//! | [`Scripted::too_many_requests`]`(3)` (429 with `parameters.retry_after`) | 429 | `RetryAfter(Seconds(3))`, the description is not kept |
//! | [`Scripted::conflict`] | 409 | `Api(ApiError::TerminatedByOtherGetUpdates)` |
//! | [`Scripted::not_modified`] | 400 | `Api(ApiError::MessageNotModified)` |
//! | [`Scripted::query_too_old`] | 400 | `Api(ApiError::Unknown(text))`: teloxide's `InvalidQueryId` expects "query id" in lower case, Telegram writes "query ID" |
//! | [`Scripted::server_error`]`(502)` | 502 | `Api(ApiError::Unknown("Bad Gateway"))`, but only after teloxide sleeps 10 s on any 5xx |
//! | [`Scripted::Drop`] | none: the connection is closed | `Network(..)` |
//! | [`Scripted::MalformedJson`] | 200, cut-off JSON | `InvalidJson { .. }` |
//! | [`Scripted::Delay`]`(d)` | the normal answer, `d` later | the normal result; `Network(..)` (a timeout) when `d` exceeds the client's timeout, 17 s by default |
//! | [`Scripted::AnswerLate`]`(d)` | handled at once (a message is in the chat), its answer `d` later | as for `Delay` |
//! | [`Scripted::unauthorized`] (a revoked token) | 401 | `Api(ApiError::InvalidToken)` |
//! | (a wrong token) | 401 "Unauthorized" | `Api(ApiError::InvalidToken)` |
//! | (an unknown method) | 404 "Not Found" | `Api(ApiError::InvalidToken)`: teloxide reads "Not Found" as a bad token |
//!
//! Errors the emulator produces itself, and teloxide's reading of them (also observed):
//! edit/delete of a missing or deleted message → `MessageToEditNotFound` /
//! `MessageToDeleteNotFound`; edit of a user's message → `MessageCantBeEdited`; text over 4096
//! → `MessageIsTooLong` on a send, `EditedMessageIsTooLong` on an edit; whitespace-only text →
//! `MessageTextIsEmpty`; callback data over 64 bytes → `ButtonDataInvalid`; a caption over
//! 1024, an invalid bot command, and a second or unknown `answerCallbackQuery` →
//! `Unknown(text)`.
//!
//! # Use
//!
//! From async code, [`Emulator::start`] serves on the current runtime; from sync code (a test
//! driving the daemon as a separate process), [`Emulator::start_in_thread`] runs its own runtime
//! on a thread until the returned [`EmulatorThread`] is dropped. Point the bot at
//! [`Emulator::api_url`]. Updates are built with [`Emulator::message_update`],
//! [`Emulator::callback_update`] and friends and queued with [`Emulator::push_update`]; what the
//! bot did is read back with [`Emulator::calls`], [`Emulator::messages`] and
//! [`Emulator::callback_answers`], and awaited with [`Emulator::wait_until`] /
//! [`Emulator::wait_until_blocking`], which re-check their condition after every call and
//! every state change instead of sleeping.
//!
//! # The sandbox's chat page
//!
//! `consentd sandbox` serves this emulator to a real daemon and shows the owner's chat in a
//! browser. For that it starts on a listener bound beforehand ([`Emulator::start_on`]), keeps
//! the bytes of uploaded files ([`Config::keep_file_bytes`], [`Emulator::file_bytes`]),
//! presses only buttons a message really carries ([`Emulator::press_button`], as Telegram's
//! servers check), and long-polls for changes ([`Emulator::version`],
//! [`Emulator::changed_since`]).
//!
//! # Parts
//!
//! * `server`: [`Emulator`] and [`Config`], starting and stopping, and the one HTTP handler.
//! * `methods`: the Bot API methods and Telegram's checks on their parameters.
//! * `params`: a request's parameters, whatever the encoding.
//! * `state`: the state behind the lock, and a message rendered as the Bot API's `Message`.
//! * `chat`: the chat as tests read it ([`ChatMessage`], [`UserSpec`], [`ChatSpec`], …).
//! * `updates`: what users do, built and queued as updates.
//! * `observe`: reading back calls and the chat, and waiting on them.
//! * `script`: [`Scripted`] answers and the record of each [`Call`].
//! * `connection`: connections a scripted answer can drop.
//! * [`description`]: the Bot API's error texts.

mod chat;
mod config;
mod connection;
pub mod description;
mod methods;
mod observe;
mod params;
mod script;
mod server;
mod state;
mod updates;

pub use chat::{
    Button, CallbackAnswer, ChannelSpec, ChatMessage, ChatSpec, ContentKind, FileInfo, Revision,
    UserSpec,
};
pub use config::Config;
pub use script::{retry_gaps, Call, Outcome, Scripted};
pub use server::{Emulator, EmulatorThread};
pub use updates::{poisoned, PressError};

#[cfg(test)]
mod tests;
