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
//!   `sendDocument`, `setMyCommands`, `getMyCommands`, `deleteWebhook`. Anything else answers
//!   404 "Not Found", as Telegram does for an unknown method.
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
//! [`Emulator::script`] queues answers per method, consumed in order before normal handling.
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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::IntoFuture;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequest, Multipart, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

/// Error descriptions exactly as the Bot API writes them.
pub mod description {
    /// An edit that changes neither the content nor the keyboard.
    pub const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message \
        content and reply markup are exactly the same as a current content and reply markup of \
        the message";
    /// `answerCallbackQuery` too late, twice, or for an id Telegram never sent.
    pub const QUERY_TOO_OLD: &str =
        "Bad Request: query is too old and response timeout expired or query ID is invalid";
    /// A second `getUpdates` poller took over.
    pub const CONFLICT: &str = "Conflict: terminated by other getUpdates request; make sure that \
        only one bot instance is running";
    pub const MESSAGE_TO_EDIT_NOT_FOUND: &str = "Bad Request: message to edit not found";
    pub const MESSAGE_TO_DELETE_NOT_FOUND: &str = "Bad Request: message to delete not found";
    pub const MESSAGE_CANT_BE_EDITED: &str = "Bad Request: message can't be edited";
    pub const NO_TEXT_TO_EDIT: &str = "Bad Request: there is no text in the message to edit";
    pub const MESSAGE_IDENTIFIER_NOT_SPECIFIED: &str =
        "Bad Request: message identifier is not specified";
    pub const TEXT_IS_EMPTY: &str = "Bad Request: message text is empty";
    pub const TEXT_TOO_LONG: &str = "Bad Request: message is too long";
    /// What an edit to a too-long text answers (not the same as a send).
    pub const EDITED_TEXT_TOO_LONG: &str = "Bad Request: MESSAGE_TOO_LONG";
    pub const CAPTION_TOO_LONG: &str = "Bad Request: message caption is too long";
    pub const BUTTON_DATA_INVALID: &str = "Bad Request: BUTTON_DATA_INVALID";
    pub const BAD_REPLY_MARKUP: &str = "Bad Request: can't parse reply keyboard markup JSON object";
    pub const CHAT_ID_EMPTY: &str = "Bad Request: chat_id is empty";
    pub const CHAT_NOT_FOUND: &str = "Bad Request: chat not found";
    pub const WRONG_FILE: &str = "Bad Request: wrong file identifier/HTTP URL specified";
    pub const BOT_COMMAND_INVALID: &str = "Bad Request: BOT_COMMAND_INVALID";
    pub const UNAUTHORIZED: &str = "Unauthorized";
    pub const NOT_FOUND: &str = "Not Found";
    pub const TOO_LARGE: &str = "Request Entity Too Large";
}

/// Telegram's largest upload for bots; also bounds any request body.
const BODY_LIMIT: usize = 50 * 1024 * 1024;
const TEXT_LIMIT: usize = 4096;
const CAPTION_LIMIT: usize = 1024;
const CALLBACK_DATA_LIMIT: usize = 64;

/// Who the emulated bot is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub token: String,
    pub bot_id: i64,
    pub bot_first_name: String,
    pub bot_username: String,
    /// Keep the bytes of uploaded files for [`Emulator::file_bytes`]. Off by default: tests
    /// upload many megabytes and never read them back.
    pub keep_file_bytes: bool,
}

impl Config {
    /// A bot whose id is the token's numeric prefix, as with real tokens (`123456:ABC…`), so code
    /// that reads the id from the token agrees with `getMe`.
    pub fn new(token: &str) -> Config {
        let bot_id = token
            .split(':')
            .next()
            .and_then(|prefix| prefix.parse::<i64>().ok())
            .filter(|id| *id > 0)
            .unwrap_or(1_000_001);
        Config {
            token: token.to_owned(),
            bot_id,
            bot_first_name: "Emulated Bot".to_owned(),
            bot_username: "emulated_bot".to_owned(),
            keep_file_bytes: false,
        }
    }
}

/// An answer queued with [`Emulator::script`], given instead of (or, for `Delay`, before) the
/// normal handling of the next call to that method.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scripted {
    /// `{"ok":false,"error_code":code,"description":…}` with HTTP status `code`, plus
    /// `"parameters":{"retry_after":n}` when given.
    Error {
        code: u16,
        description: String,
        retry_after: Option<u32>,
    },
    /// Answer normally, this much later (to exercise client timeouts).
    Delay(Duration),
    /// Close the connection without answering.
    Drop,
    /// Answer 200 with a body cut off in the middle of the JSON.
    MalformedJson,
}

impl Scripted {
    pub fn error(code: u16, description: impl Into<String>) -> Scripted {
        Scripted::Error {
            code,
            description: description.into(),
            retry_after: None,
        }
    }

    /// 400 "message is not modified".
    pub fn not_modified() -> Scripted {
        Scripted::error(400, description::NOT_MODIFIED)
    }

    /// 400 "query is too old …", what a late `answerCallbackQuery` gets.
    pub fn query_too_old() -> Scripted {
        Scripted::error(400, description::QUERY_TOO_OLD)
    }

    /// 429 with `retry_after`, Telegram's flood control.
    pub fn too_many_requests(retry_after: u32) -> Scripted {
        Scripted::Error {
            code: 429,
            description: format!("Too Many Requests: retry after {retry_after}"),
            retry_after: Some(retry_after),
        }
    }

    /// 409, what a poller gets when another instance polls the same bot.
    pub fn conflict() -> Scripted {
        Scripted::error(409, description::CONFLICT)
    }

    /// A 5xx with the reason phrase as description, as Telegram's front ends answer.
    pub fn server_error(code: u16) -> Scripted {
        let reason = StatusCode::from_u16(code)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("Internal Server Error");
        Scripted::error(code, reason)
    }
}

/// How a recorded call was answered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Outcome {
    Ok(Value),
    Error {
        code: u16,
        description: String,
        retry_after: Option<u32>,
    },
    /// The connection was closed without an answer ([`Scripted::Drop`]).
    Dropped,
    /// A cut-off body was sent ([`Scripted::MalformedJson`]).
    MalformedJson,
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    /// Position in [`Emulator::calls`], from 0.
    pub seq: u64,
    /// The method name in lower case (`sendmessage`).
    pub method: String,
    /// All parameters as one JSON object, whatever the encoding; uploads as
    /// `{"name","bytes","sha256"}`.
    pub params: Value,
    pub at: SystemTime,
    /// Time since the emulator started, on a monotonic clock (for pacing and retry checks).
    pub elapsed: Duration,
    /// `false` when the token was wrong (answered 401).
    pub authorized: bool,
    /// `None` while the call is still being answered (a long poll, a scripted delay).
    pub outcome: Option<Outcome>,
}

impl Call {
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Ok(_)))
    }

    /// A parameter as an integer, whether sent as a number or a numeric string.
    pub fn param_i64(&self, name: &str) -> Option<i64> {
        self.params.get(name).and_then(as_i64)
    }

    pub fn param_str(&self, name: &str) -> Option<&str> {
        self.params.get(name).and_then(Value::as_str)
    }
}

/// What kind of message it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ContentKind {
    Text,
    Photo,
    Document,
}

/// A file the bot uploaded (or re-sent by `file_id`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileInfo {
    pub file_id: String,
    pub file_unique_id: String,
    /// The file name as sent; teloxide sends an empty one for `InputFile::memory` without
    /// `.file_name(..)`.
    pub name: String,
    pub media_type: String,
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
}

/// An earlier version of a message, replaced by an edit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Revision {
    pub text: Option<String>,
    pub entities: Option<Value>,
    pub caption: Option<String>,
    pub reply_markup: Option<Value>,
    /// Unix time of the edit that replaced this version.
    pub replaced_at: i64,
    /// The method that replaced it (`editmessagetext`, …).
    pub replaced_by: String,
}

/// One inline keyboard button.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Button {
    pub text: String,
    pub callback_data: Option<String>,
    pub url: Option<String>,
}

/// A message in a chat, as it currently stands, with its history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatMessage {
    pub chat_id: i64,
    pub message_id: i64,
    /// The sender's user id (the bot's own id for the bot's messages).
    pub from_id: i64,
    /// Sent by the bot (as opposed to pushed as a user's message).
    pub outgoing: bool,
    pub kind: ContentKind,
    /// Unix time.
    pub date: i64,
    pub text: Option<String>,
    pub caption: Option<String>,
    pub parse_mode: Option<String>,
    /// The message entities sent with an outgoing text (a JSON array), as Telegram keeps them.
    pub entities: Option<Value>,
    /// The inline keyboard as shown (`{"inline_keyboard":[[…]]}`); `None` when there is none.
    /// Other keyboards (reply keyboards) are not part of a message, as in the Bot API.
    pub reply_markup: Option<Value>,
    pub disable_notification: bool,
    pub protect_content: bool,
    pub reply_to_message_id: Option<i64>,
    pub file: Option<FileInfo>,
    pub forward_origin: Option<Value>,
    pub edit_date: Option<i64>,
    /// Earlier versions, oldest first; empty for a message never edited.
    pub history: Vec<Revision>,
    pub deleted: bool,
}

impl ChatMessage {
    fn blank(chat_id: i64, from_id: i64, outgoing: bool, kind: ContentKind) -> ChatMessage {
        ChatMessage {
            chat_id,
            message_id: 0,
            from_id,
            outgoing,
            kind,
            date: unix_now(),
            text: None,
            caption: None,
            parse_mode: None,
            entities: None,
            reply_markup: None,
            disable_notification: false,
            protect_content: false,
            reply_to_message_id: None,
            file: None,
            forward_origin: None,
            edit_date: None,
            history: Vec::new(),
            deleted: false,
        }
    }

    /// Keeps the current version in the history: `by` (a method or an update) replaces it at
    /// `now`.
    fn keep_revision(&mut self, by: &str, now: i64) {
        self.history.push(Revision {
            text: self.text.clone(),
            entities: self.entities.clone(),
            caption: self.caption.clone(),
            reply_markup: self.reply_markup.clone(),
            replaced_at: now,
            replaced_by: by.to_owned(),
        });
    }

    /// The inline keyboard's buttons, row by row, left to right.
    pub fn buttons(&self) -> Vec<Button> {
        self.button_rows().into_iter().flatten().collect()
    }

    /// The inline keyboard as it is laid out: its rows, each left to right.
    pub fn button_rows(&self) -> Vec<Vec<Button>> {
        let rows = self
            .reply_markup
            .as_ref()
            .and_then(|markup| markup.get("inline_keyboard"))
            .and_then(Value::as_array);
        rows.into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .map(|row| {
                row.iter()
                    .map(|button| Button {
                        text: button["text"].as_str().unwrap_or_default().to_owned(),
                        callback_data: button["callback_data"].as_str().map(str::to_owned),
                        url: button["url"].as_str().map(str::to_owned),
                    })
                    .collect()
            })
            .collect()
    }

    /// The text, or the caption for a photo or document.
    pub fn body(&self) -> Option<&str> {
        self.text.as_deref().or(self.caption.as_deref())
    }
}

/// An accepted `answerCallbackQuery`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallbackAnswer {
    pub callback_query_id: String,
    pub text: Option<String>,
    pub show_alert: bool,
    pub url: Option<String>,
    pub cache_time: Option<i64>,
    pub at: SystemTime,
}

/// A Telegram user who writes to or presses buttons of the bot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSpec {
    pub id: i64,
    pub first_name: String,
    pub username: Option<String>,
    pub language_code: Option<String>,
}

impl UserSpec {
    pub fn new(id: i64, first_name: &str) -> UserSpec {
        UserSpec {
            id,
            first_name: first_name.to_owned(),
            username: None,
            language_code: None,
        }
    }

    pub fn username(mut self, username: &str) -> UserSpec {
        self.username = Some(username.to_owned());
        self
    }

    pub fn language(mut self, language_code: &str) -> UserSpec {
        self.language_code = Some(language_code.to_owned());
        self
    }

    fn to_json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": false, "first_name": self.first_name});
        if let Some(username) = &self.username {
            user["username"] = json!(username);
        }
        if let Some(language_code) = &self.language_code {
            user["language_code"] = json!(language_code);
        }
        user
    }
}

/// Where a message is: a user's private chat with the bot, or a group (negative id, as in
/// Telegram).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatSpec {
    Private(i64),
    Group(i64),
}

impl ChatSpec {
    pub fn private(user_id: i64) -> ChatSpec {
        ChatSpec::Private(user_id)
    }

    /// A group; the id is made negative if it is not, since chat ids of groups are.
    pub fn group(id: i64) -> ChatSpec {
        ChatSpec::Group(-id.abs())
    }

    pub fn id(&self) -> i64 {
        match *self {
            ChatSpec::Private(id) | ChatSpec::Group(id) => id,
        }
    }
}

/// For every 429 among `calls` to `methods` (lower case), its `retry_after` and the time until the
/// next call to any of them, on the emulator's clock: a client that makes those calls one at a
/// time (one sender, one poller) honoured the 429 if each gap is at least its `retry_after`.
pub fn retry_gaps(calls: &[Call], methods: &[&str]) -> Vec<(u32, Duration)> {
    let calls: Vec<&Call> = calls
        .iter()
        .filter(|c| methods.contains(&c.method.as_str()))
        .collect();
    calls
        .iter()
        .enumerate()
        .filter_map(|(i, call)| match call.outcome {
            Some(Outcome::Error {
                code: 429,
                retry_after: Some(after),
                ..
            }) => calls
                .get(i + 1)
                .map(|next| (after, next.elapsed - call.elapsed)),
            _ => None,
        })
        .collect()
}

/// `update` made unreadable: a value nested deeper than serde_json's recursion limit is added to
/// its callback query, so teloxide cannot read the batch that holds it, and a second parse of the
/// raw answer cannot either. A real bot may meet such an update after a Bot API change.
pub fn poisoned(mut update: Value) -> Value {
    let mut deep = json!(0);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    update["callback_query"]["junk"] = deep;
    update
}

/// Why [`Emulator::press_button`] pressed nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PressError {
    #[error("no message {message_id} in chat {chat_id}")]
    NoMessage { chat_id: i64, message_id: i64 },
    #[error("message {message_id} has no button with that callback data")]
    NoButton { message_id: i64 },
}

/// A failed Bot API call, as it goes on the wire.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{code} {description}")]
struct ApiFail {
    code: u16,
    description: String,
    retry_after: Option<u32>,
}

fn bad(description: &str) -> ApiFail {
    ApiFail {
        code: 400,
        description: description.to_owned(),
        retry_after: None,
    }
}

/// A file part of a multipart request.
#[derive(Clone, Debug)]
struct Upload {
    name: String,
    media_type: Option<String>,
    bytes: u64,
    sha256: String,
    /// The content; kept by the emulator only when asked to ([`Config::keep_file_bytes`]).
    data: axum::body::Bytes,
}

impl Upload {
    fn descriptor(&self) -> Value {
        json!({"name": self.name, "bytes": self.bytes, "sha256": self.sha256})
    }
}

/// A request's parameters, whatever the encoding, and its uploads by parameter name.
#[derive(Debug, Default)]
struct Params {
    values: Map<String, Value>,
    uploads: HashMap<String, Upload>,
}

#[derive(Debug, Default)]
struct ChatState {
    messages: Vec<ChatMessage>,
    last_message_id: i64,
}

#[derive(Debug)]
struct CallbackQueryState {
    answered: bool,
}

#[derive(Debug)]
struct EmuState {
    calls: Vec<Call>,
    scripts: HashMap<String, VecDeque<Scripted>>,
    /// Updates not yet confirmed by an offset, in push order.
    updates: VecDeque<Value>,
    next_update_id: i64,
    /// Bumped by every `getUpdates`; a waiting poll that sees it change was superseded.
    poll_generation: u64,
    chats: BTreeMap<i64, ChatState>,
    users: HashMap<i64, UserSpec>,
    callback_queries: HashMap<String, CallbackQueryState>,
    last_callback_query: u64,
    callback_answers: Vec<CallbackAnswer>,
    /// By (scope as canonical JSON, language code).
    commands: BTreeMap<(String, String), Value>,
    files: HashMap<String, FileInfo>,
    /// Uploaded bytes by file id, when `Config::keep_file_bytes` is on.
    file_bytes: HashMap<String, axum::body::Bytes>,
}

impl EmuState {
    fn new() -> EmuState {
        EmuState {
            calls: Vec::new(),
            scripts: HashMap::new(),
            updates: VecDeque::new(),
            next_update_id: 1,
            poll_generation: 0,
            chats: BTreeMap::new(),
            users: HashMap::new(),
            callback_queries: HashMap::new(),
            last_callback_query: 0,
            callback_answers: Vec::new(),
            commands: BTreeMap::new(),
            files: HashMap::new(),
            file_bytes: HashMap::new(),
        }
    }

    fn add_message(&mut self, mut message: ChatMessage) -> ChatMessage {
        let chat = self.chats.entry(message.chat_id).or_default();
        chat.last_message_id += 1;
        message.message_id = chat.last_message_id;
        chat.messages.push(message.clone());
        message
    }

    fn find(&self, chat_id: i64, message_id: i64) -> Option<&ChatMessage> {
        self.chats
            .get(&chat_id)?
            .messages
            .iter()
            .find(|m| m.message_id == message_id)
    }

    fn find_mut(&mut self, chat_id: i64, message_id: i64) -> Option<&mut ChatMessage> {
        self.chats
            .get_mut(&chat_id)?
            .messages
            .iter_mut()
            .find(|m| m.message_id == message_id)
    }

    fn user_json(&self, id: i64) -> Value {
        match self.users.get(&id) {
            Some(user) => user.to_json(),
            None => json!({"id": id, "is_bot": false, "first_name": "User"}),
        }
    }

    fn chat_json(&self, chat_id: i64) -> Value {
        if chat_id > 0 {
            let mut chat = json!({"id": chat_id, "type": "private"});
            match self.users.get(&chat_id) {
                Some(user) => {
                    chat["first_name"] = json!(user.first_name);
                    if let Some(username) = &user.username {
                        chat["username"] = json!(username);
                    }
                }
                None => chat["first_name"] = json!("User"),
            }
            chat
        } else {
            json!({"id": chat_id, "type": "group", "title": "Group"})
        }
    }

    /// The Bot API `Message` object for a stored message.
    fn render(&self, config: &Config, m: &ChatMessage) -> Value {
        let mut o = Map::new();
        o.insert("message_id".into(), json!(m.message_id));
        let from = if m.outgoing {
            bot_user_json(config)
        } else {
            self.user_json(m.from_id)
        };
        o.insert("from".into(), from);
        o.insert("chat".into(), self.chat_json(m.chat_id));
        o.insert("date".into(), json!(m.date));
        if let Some(edit_date) = m.edit_date {
            o.insert("edit_date".into(), json!(edit_date));
        }
        if let Some(origin) = &m.forward_origin {
            o.insert("forward_origin".into(), origin.clone());
        }
        // As Telegram does: the message replied to, whole, without its own `reply_to_message`.
        let replied = m
            .reply_to_message_id
            .and_then(|id| self.find(m.chat_id, id))
            .filter(|replied| !replied.deleted);
        if let Some(replied) = replied {
            let replied = ChatMessage {
                reply_to_message_id: None,
                ..replied.clone()
            };
            o.insert("reply_to_message".into(), self.render(config, &replied));
        }
        if let Some(text) = &m.text {
            o.insert("text".into(), json!(text));
            // Telegram marks a leading /command in what users write; command parsers rely on it.
            if let Some(entity) = command_entity(text).filter(|_| !m.outgoing) {
                o.insert("entities".into(), json!([entity]));
            }
            if let Some(entities) = m.entities.as_ref().filter(|_| m.outgoing) {
                o.insert("entities".into(), entities.clone());
            }
        }
        if let Some(file) = &m.file {
            match m.kind {
                ContentKind::Photo => {
                    o.insert("photo".into(), photo_sizes(file));
                }
                ContentKind::Document => {
                    let mut document = json!({
                        "file_id": file.file_id,
                        "file_unique_id": file.file_unique_id,
                        "file_size": file.bytes,
                        "mime_type": file.media_type,
                    });
                    if !file.name.is_empty() {
                        document["file_name"] = json!(file.name);
                    }
                    o.insert("document".into(), document);
                }
                ContentKind::Text => {}
            }
        }
        if let Some(caption) = &m.caption {
            o.insert("caption".into(), json!(caption));
        }
        if let Some(markup) = &m.reply_markup {
            o.insert("reply_markup".into(), markup.clone());
        }
        if m.protect_content {
            o.insert("has_protected_content".into(), json!(true));
        }
        Value::Object(o)
    }

    /// What Telegram puts in `callback_query.message` for a message it no longer shows.
    fn inaccessible_message(&self, chat_id: i64, message_id: i64) -> Value {
        json!({"chat": self.chat_json(chat_id), "message_id": message_id, "date": 0})
    }
}

struct Inner {
    config: Config,
    addr: SocketAddr,
    started: Instant,
    state: Mutex<EmuState>,
    /// Signalled after every call and state change, for [`Emulator::wait_until`].
    changed: Notify,
    /// Counts the same events, for [`Emulator::wait_until_blocking`].
    generation: Mutex<u64>,
    generation_changed: Condvar,
    /// Wakes long polls: an update was pushed, a newer poll started, or shutdown.
    updates_changed: Notify,
    shutdown: watch::Sender<bool>,
}

/// The fake Bot API server. Cheap to clone; all clones share one server and one state.
#[derive(Clone)]
pub struct Emulator {
    inner: Arc<Inner>,
}

impl fmt::Debug for Emulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emulator")
            .field("api_url", &self.api_url())
            .field("bot_username", &self.inner.config.bot_username)
            .finish_non_exhaustive()
    }
}

/// The emulator's own runtime thread, from [`Emulator::start_in_thread`]; dropping it stops the
/// server and joins the thread.
#[derive(Debug)]
pub struct EmulatorThread {
    emulator: Emulator,
    thread: Option<JoinHandle<()>>,
}

impl EmulatorThread {
    /// Stops the server and waits for its thread to end.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.emulator.shutdown();
        if let Some(thread) = self.thread.take() {
            // A panic on the server thread was already reported there; the test result is
            // decided by what the test observed.
            let _ = thread.join();
        }
    }
}

impl Drop for EmulatorThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test thread must not turn every later query into a second panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Emulator {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio runtime.
    pub async fn start(token: &str) -> io::Result<Emulator> {
        Emulator::start_with(Config::new(token)).await
    }

    /// Like [`Emulator::start`], with the bot's identity chosen.
    pub async fn start_with(config: Config) -> io::Result<Emulator> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Emulator::serve(listener, config)
    }

    /// Serves on a listener bound beforehand (the sandbox binds it before the daemon's runtime
    /// starts, so that the daemon's config can name its address). Call it on a tokio runtime.
    pub fn start_on(listener: std::net::TcpListener, config: Config) -> io::Result<Emulator> {
        listener.set_nonblocking(true)?;
        Emulator::serve(TcpListener::from_std(listener)?, config)
    }

    fn serve(listener: TcpListener, config: Config) -> io::Result<Emulator> {
        let addr = listener.local_addr()?;
        let (shutdown, _) = watch::channel(false);
        let emulator = Emulator {
            inner: Arc::new(Inner {
                config,
                addr,
                started: Instant::now(),
                state: Mutex::new(EmuState::new()),
                changed: Notify::new(),
                generation: Mutex::new(0),
                generation_changed: Condvar::new(),
                updates_changed: Notify::new(),
                shutdown,
            }),
        };
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(emulator.clone());
        let mut stopped = emulator.inner.shutdown.subscribe();
        let server = axum::serve(
            KillableListener(listener),
            app.into_make_service_with_connect_info::<Connection>(),
        )
        .with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
        tokio::spawn(server.into_future());
        Ok(emulator)
    }

    /// Starts the server on a runtime of its own, on a new thread, for tests without a runtime
    /// (for example one that drives the daemon as a separate process).
    pub fn start_in_thread(token: &str) -> io::Result<(Emulator, EmulatorThread)> {
        Emulator::start_in_thread_with(Config::new(token))
    }

    /// Like [`Emulator::start_in_thread`], with the bot's identity chosen.
    pub fn start_in_thread_with(config: Config) -> io::Result<(Emulator, EmulatorThread)> {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("telegram-emulator".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = started_tx.send(Err(error));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match Emulator::start_with(config).await {
                        Ok(emulator) => {
                            let mut stopped = emulator.inner.shutdown.subscribe();
                            let _ = started_tx.send(Ok(emulator));
                            let _ = stopped.wait_for(|stop| *stop).await;
                        }
                        Err(error) => {
                            let _ = started_tx.send(Err(error));
                        }
                    }
                });
                // Dropping the runtime here ends the connections still open.
            })?;
        let emulator = started_rx.recv().map_err(|_| {
            io::Error::other("the emulator thread ended before it started serving")
        })??;
        let handle = EmulatorThread {
            emulator: emulator.clone(),
            thread: Some(thread),
        };
        Ok((emulator, handle))
    }

    /// Stops accepting connections and ends waiting long polls (they answer an empty list).
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        self.inner.updates_changed.notify_waiters();
        self.signal();
    }

    /// `http://127.0.0.1:PORT`, what `Bot::set_api_url` takes.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn bot_username(&self) -> String {
        self.inner.config.bot_username.clone()
    }

    pub fn bot_id(&self) -> i64 {
        self.inner.config.bot_id
    }

    fn state(&self) -> MutexGuard<'_, EmuState> {
        lock(&self.inner.state)
    }

    /// Wakes everything waiting on a change.
    fn signal(&self) {
        // The count moves before anyone is woken, so a waiter woken here sees it moved.
        *lock(&self.inner.generation) += 1;
        self.inner.changed.notify_waiters();
        self.inner.generation_changed.notify_all();
    }

    /// Queues an answer for the next call to `method` (any case), after those already queued.
    pub fn script(&self, method: &str, answer: Scripted) {
        self.state()
            .scripts
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(answer);
        self.signal();
    }

    /// Scripted answers not consumed yet, for every method.
    pub fn pending_scripts(&self) -> usize {
        self.state().scripts.values().map(VecDeque::len).sum()
    }

    /// Scripted answers not consumed yet for one method (any case).
    pub fn pending_scripts_for(&self, method: &str) -> usize {
        self.state()
            .scripts
            .get(&method.to_ascii_lowercase())
            .map_or(0, VecDeque::len)
    }

    /// Queues an update for `getUpdates`. An update without `update_id` gets the next one; either
    /// way the id is returned. Panics unless `update` is a JSON object.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let object = update.as_object_mut().expect("an update is a JSON object");
        let mut state = self.state();
        let id = match object.get("update_id").and_then(as_i64) {
            Some(id) => id,
            None => {
                let id = state.next_update_id;
                object.insert("update_id".into(), json!(id));
                id
            }
        };
        state.next_update_id = state.next_update_id.max(id + 1);
        // A raw callback query counts as sent, so the bot may answer it.
        if let Some(query_id) = update["callback_query"]["id"].as_str() {
            state
                .callback_queries
                .entry(query_id.to_owned())
                .or_insert(CallbackQueryState { answered: false });
        }
        state.updates.push_back(update);
        drop(state);
        self.inner.updates_changed.notify_waiters();
        self.signal();
        id
    }

    /// Pushes a user's text message; returns the update id.
    pub fn push_text(&self, from: &UserSpec, chat: ChatSpec, text: &str) -> i64 {
        let update = self.message_update(from, chat, text);
        self.push_update(update)
    }

    /// Pushes a press on a button with `data` under message `message_id`; returns the update id.
    pub fn push_press(&self, from: &UserSpec, chat: ChatSpec, message_id: i64, data: &str) -> i64 {
        let update = self.callback_update(from, chat, message_id, data);
        self.push_update(update)
    }

    /// Updates pushed and not yet confirmed by a `getUpdates` offset.
    pub fn pending_updates(&self) -> Vec<Value> {
        self.state().updates.iter().cloned().collect()
    }

    /// Makes a user known, so chats with them show their name.
    pub fn add_user(&self, user: &UserSpec) {
        self.state().users.insert(user.id, user.clone());
    }

    /// A `message` update for a text the user writes; the message is stored in the chat (with
    /// the next message id) so the bot can reply to it. Push it with [`Emulator::push_update`].
    pub fn message_update(&self, from: &UserSpec, chat: ChatSpec, text: &str) -> Value {
        let message = self.incoming(from, chat, text, None, None);
        json!({ "message": message })
    }

    /// A `message` update for a text the user writes in reply to message `reply_to` of the same
    /// chat (it carries `reply_to_message`, as Telegram's does).
    pub fn reply_update(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        text: &str,
        reply_to: i64,
    ) -> Value {
        let message = self.incoming(from, chat, text, None, Some(reply_to));
        json!({ "message": message })
    }

    /// Pushes a user's text in reply to message `reply_to`; returns the update id.
    pub fn push_reply(&self, from: &UserSpec, chat: ChatSpec, text: &str, reply_to: i64) -> i64 {
        let update = self.reply_update(from, chat, text, reply_to);
        self.push_update(update)
    }

    /// A `message` update for a text the user forwards from `original_sender` (it carries
    /// `forward_origin`).
    pub fn forwarded_message_update(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        text: &str,
        original_sender: &UserSpec,
    ) -> Value {
        let origin = json!({
            "type": "user",
            "date": unix_now() - 60,
            "sender_user": original_sender.to_json(),
        });
        let message = self.incoming(from, chat, text, Some(origin), None);
        json!({ "message": message })
    }

    fn incoming(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        text: &str,
        origin: Option<Value>,
        reply_to: Option<i64>,
    ) -> Value {
        let mut state = self.state();
        state.users.insert(from.id, from.clone());
        let mut message = ChatMessage::blank(chat.id(), from.id, false, ContentKind::Text);
        message.text = Some(text.to_owned());
        message.forward_origin = origin;
        message.reply_to_message_id = reply_to;
        let message = state.add_message(message);
        let rendered = state.render(&self.inner.config, &message);
        drop(state);
        self.signal();
        rendered
    }

    /// An `edited_message` update: the user changed message `message_id` to `text`. A stored
    /// message gets the new text (its old one goes to its history).
    pub fn edited_message_update(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        message_id: i64,
        text: &str,
    ) -> Value {
        let config = &self.inner.config;
        let mut state = self.state();
        state.users.insert(from.id, from.clone());
        let now = unix_now();
        let rendered = match state.find_mut(chat.id(), message_id) {
            Some(message) => {
                message.keep_revision("edited_message", now);
                message.text = Some(text.to_owned());
                message.edit_date = Some(now);
                let message = message.clone();
                state.render(config, &message)
            }
            None => {
                let mut message = ChatMessage::blank(chat.id(), from.id, false, ContentKind::Text);
                message.message_id = message_id;
                message.date = now - 60;
                message.text = Some(text.to_owned());
                message.edit_date = Some(now);
                state.render(config, &message)
            }
        };
        drop(state);
        self.signal();
        json!({ "edited_message": rendered })
    }

    /// Changes the text of one of the bot's messages the way anyone holding the bot's token could
    /// (an `editMessageText` that keeps its buttons), without the daemon's knowledge: what a
    /// press on a card altered behind the owner's back looks like. Returns false for a message
    /// it does not have.
    pub fn tamper_text(&self, chat_id: i64, message_id: i64, text: &str) -> bool {
        let mut state = self.state();
        let Some(message) = state.find_mut(chat_id, message_id) else {
            return false;
        };
        let now = unix_now();
        message.keep_revision("tamper", now);
        message.text = Some(text.to_owned());
        message.entities = None;
        message.edit_date = Some(now);
        drop(state);
        self.signal();
        true
    }

    /// A `callback_query` update: `from` pressed a button carrying `data` under message
    /// `message_id` of `chat`. The query carries the stored message as it now stands (or, for
    /// a deleted or unknown one, the inaccessible-message form Telegram uses), a fresh query id
    /// the bot may answer once, and the chat's `chat_instance`.
    pub fn callback_update(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        message_id: i64,
        data: &str,
    ) -> Value {
        let config = &self.inner.config;
        let mut state = self.state();
        state.users.insert(from.id, from.clone());
        state.last_callback_query += 1;
        let query_id = format!("{}{:08}", config.bot_id, state.last_callback_query);
        state
            .callback_queries
            .insert(query_id.clone(), CallbackQueryState { answered: false });
        let message = match state.find(chat.id(), message_id).filter(|m| !m.deleted) {
            Some(message) => state.render(config, message),
            None => state.inaccessible_message(chat.id(), message_id),
        };
        drop(state);
        self.signal();
        json!({
            "callback_query": {
                "id": query_id,
                "from": from.to_json(),
                "message": message,
                // Stable per chat, as Telegram's is.
                "chat_instance": format!("{}", chat.id().wrapping_mul(2_654_435_761)),
                "data": data,
            }
        })
    }

    /// An uploaded file and its bytes, by file id, when they were kept
    /// ([`Config::keep_file_bytes`]).
    pub fn file_bytes(&self, file_id: &str) -> Option<(FileInfo, axum::body::Bytes)> {
        let state = self.state();
        let info = state.files.get(file_id)?.clone();
        let bytes = state.file_bytes.get(file_id)?.clone();
        Some((info, bytes))
    }

    /// What a Telegram client does when the user taps an inline button: `from` presses the
    /// button carrying `data` under message `message_id` of `chat`, and the bot gets a
    /// `callback_query` update. Like Telegram's servers, only a button the message really
    /// carries can be pressed. Returns the update id and the callback query's id.
    pub fn press_button(
        &self,
        from: &UserSpec,
        chat: ChatSpec,
        message_id: i64,
        data: &str,
    ) -> Result<(i64, String), PressError> {
        let message = self
            .message(chat.id(), message_id)
            .filter(|m| !m.deleted)
            .ok_or(PressError::NoMessage {
                chat_id: chat.id(),
                message_id,
            })?;
        if !message
            .buttons()
            .iter()
            .any(|button| button.callback_data.as_deref() == Some(data))
        {
            return Err(PressError::NoButton { message_id });
        }
        let update = self.callback_update(from, chat, message_id, data);
        let query_id = update["callback_query"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok((self.push_update(update), query_id))
    }

    /// How many `getUpdates` calls have confirmed their `offset` (those answered by a script
    /// aside). Once it is above zero, an update pushed gets an id the poller will not skip.
    pub fn polls(&self) -> u64 {
        self.state().poll_generation
    }

    /// A number that grows with every call and every change of state: what a page shows is
    /// current as long as this has not moved.
    pub fn version(&self) -> u64 {
        *lock(&self.inner.generation)
    }

    /// Waits until [`Emulator::version`] differs from `seen`, at most `timeout`, and returns
    /// the version then (a long poll for the sandbox's page).
    pub async fn changed_since(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so a change between the check and the wait is seen.
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.version();
            if now != seen || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.version();
            }
        }
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    /// Time since the emulator started, on the clock of [`Call::elapsed`]: to time a call's
    /// arrival from an instant taken outside.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// The calls from position `from` on ([`Call::seq`]), copying only those.
    pub fn calls_since(&self, from: usize) -> Vec<Call> {
        self.state().calls.get(from..).unwrap_or_default().to_vec()
    }

    /// How many calls so far, without copying them.
    pub fn call_count(&self) -> usize {
        self.state().calls.len()
    }

    /// The calls to one method (any case).
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        let method = method.to_ascii_lowercase();
        self.state()
            .calls
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// The chat's messages, both directions, deleted ones included (flagged), oldest first.
    pub fn messages(&self, chat_id: i64) -> Vec<ChatMessage> {
        self.state()
            .chats
            .get(&chat_id)
            .map(|chat| chat.messages.clone())
            .unwrap_or_default()
    }

    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<ChatMessage> {
        self.state().find(chat_id, message_id).cloned()
    }

    /// The `Message` object the Bot API would return for a stored message now.
    pub fn message_json(&self, chat_id: i64, message_id: i64) -> Option<Value> {
        let state = self.state();
        let message = state.find(chat_id, message_id)?;
        Some(state.render(&self.inner.config, message))
    }

    /// The accepted `answerCallbackQuery` calls, in order.
    pub fn callback_answers(&self) -> Vec<CallbackAnswer> {
        self.state().callback_answers.clone()
    }

    /// Waits until `f` holds, re-checking after every call and state change; on timeout the
    /// error names `what` and lists the last calls.
    pub async fn wait_until<F: Fn(&Emulator) -> bool>(
        &self,
        what: &str,
        timeout: Duration,
        f: F,
    ) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so a change between the check and the wait is seen.
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if f(self) {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return if f(self) {
                    Ok(())
                } else {
                    Err(self.timeout_report(what, timeout))
                };
            }
        }
    }

    /// [`Emulator::wait_until`] for code without a runtime; the server must run elsewhere (on
    /// the thread of [`Emulator::start_in_thread`]).
    pub fn wait_until_blocking<F: Fn(&Emulator) -> bool>(
        &self,
        what: &str,
        timeout: Duration,
        f: F,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = *lock(&self.inner.generation);
            if f(self) {
                return Ok(());
            }
            let mut generation = lock(&self.inner.generation);
            while *generation == seen {
                let now = Instant::now();
                if now >= deadline {
                    drop(generation);
                    return if f(self) {
                        Ok(())
                    } else {
                        Err(self.timeout_report(what, timeout))
                    };
                }
                generation = self
                    .inner
                    .generation_changed
                    .wait_timeout(generation, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }

    fn timeout_report(&self, what: &str, timeout: Duration) -> String {
        let calls = self.calls();
        let recent: Vec<String> = calls
            .iter()
            .rev()
            .take(10)
            .rev()
            .map(|call| {
                let outcome = match &call.outcome {
                    None => "pending".to_owned(),
                    Some(Outcome::Ok(_)) => "ok".to_owned(),
                    Some(Outcome::Error {
                        code, description, ..
                    }) => format!("{code} {description}"),
                    Some(Outcome::Dropped) => "dropped".to_owned(),
                    Some(Outcome::MalformedJson) => "malformed".to_owned(),
                };
                format!("#{} {} → {}", call.seq, call.method, outcome)
            })
            .collect();
        format!(
            "timed out after {timeout:?} waiting until {what}; {} calls, last: [{}]",
            calls.len(),
            recent.join("; ")
        )
    }

    fn record(&self, method: String, params: Value, authorized: bool) -> u64 {
        let mut state = self.state();
        let seq = state.calls.len() as u64;
        state.calls.push(Call {
            seq,
            method,
            params,
            at: SystemTime::now(),
            elapsed: self.inner.started.elapsed(),
            authorized,
            outcome: None,
        });
        drop(state);
        self.signal();
        seq
    }

    fn finish(&self, seq: u64, outcome: Outcome) {
        if let Some(call) = self.state().calls.get_mut(seq as usize) {
            call.outcome = Some(outcome);
        }
        self.signal();
    }

    fn next_script(&self, method: &str) -> Option<Scripted> {
        self.state().scripts.get_mut(method)?.pop_front()
    }

    /// `getUpdates`: confirms by offset, then answers what is queued or waits for a push.
    async fn get_updates(&self, params: &Map<String, Value>) -> Result<Value, ApiFail> {
        let offset = params.get("offset").and_then(as_i64).unwrap_or(0);
        let limit = params
            .get("limit")
            .and_then(as_i64)
            .unwrap_or(100)
            .clamp(1, 100) as usize;
        let timeout = params
            .get("timeout")
            .and_then(as_i64)
            .unwrap_or(0)
            .max(0)
            .unsigned_abs();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        let generation = {
            let mut state = self.state();
            if offset > 0 {
                state
                    .updates
                    .retain(|update| update_id(update).is_none_or(|id| id >= offset));
                // The poller has seen every id below `offset`, perhaps from an earlier emulator:
                // an id below it would be skipped as handled.
                state.next_update_id = state.next_update_id.max(offset);
            } else if offset < 0 {
                // A negative offset keeps only the last -offset updates, as in the Bot API.
                let keep = offset.unsigned_abs() as usize;
                while state.updates.len() > keep {
                    state.updates.pop_front();
                }
            }
            state.poll_generation += 1;
            state.poll_generation
        };
        // An older poll still waiting learns it was superseded.
        self.inner.updates_changed.notify_waiters();
        self.signal();
        let mut stopped = self.inner.shutdown.subscribe();
        loop {
            let woken = self.inner.updates_changed.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let state = self.state();
                if state.poll_generation != generation {
                    return Err(ApiFail {
                        code: 409,
                        description: description::CONFLICT.to_owned(),
                        retry_after: None,
                    });
                }
                if !state.updates.is_empty() {
                    let batch: Vec<Value> = state.updates.iter().take(limit).cloned().collect();
                    return Ok(Value::Array(batch));
                }
            }
            if *stopped.borrow_and_update() || tokio::time::Instant::now() >= deadline {
                return Ok(json!([]));
            }
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep_until(deadline) => {}
                _ = stopped.changed() => {}
            }
        }
    }

    /// Every method but `getUpdates`.
    fn dispatch(&self, method: &str, params: &Params) -> Result<Value, ApiFail> {
        let config = &self.inner.config;
        let mut state = self.state();
        let state = &mut *state;
        let p = &params.values;
        match method {
            "getme" => Ok(me_json(config)),
            "sendmessage" => {
                let chat_id = chat_id_param(p)?;
                let text = str_param(p, "text").unwrap_or_default();
                check_text(&text, description::TEXT_TOO_LONG)?;
                let entities = entities_param(p, &text)?;
                let markup = inline_markup(p)?;
                let mut message =
                    ChatMessage::blank(chat_id, config.bot_id, true, ContentKind::Text);
                message.text = Some(text);
                message.entities = entities;
                fill_send_options(&mut message, p, markup);
                let message = state.add_message(message);
                Ok(state.render(config, &message))
            }
            "sendphoto" | "senddocument" => {
                let (kind, field) = if method == "sendphoto" {
                    (ContentKind::Photo, "photo")
                } else {
                    (ContentKind::Document, "document")
                };
                let chat_id = chat_id_param(p)?;
                let caption = str_param(p, "caption").filter(|c| !c.is_empty());
                if caption
                    .as_deref()
                    .is_some_and(|c| utf16_len(c) > CAPTION_LIMIT)
                {
                    return Err(bad(description::CAPTION_TOO_LONG));
                }
                let markup = inline_markup(p)?;
                let file = match (params.uploads.get(field), p.get(field)) {
                    (Some(upload), _) => {
                        let file = file_info(kind, upload);
                        if config.keep_file_bytes {
                            state
                                .file_bytes
                                .insert(file.file_id.clone(), upload.data.clone());
                        }
                        file
                    }
                    (None, Some(Value::String(file_id))) => state
                        .files
                        .get(file_id)
                        .cloned()
                        .ok_or_else(|| bad(description::WRONG_FILE))?,
                    _ => {
                        return Err(bad(&format!(
                            "Bad Request: there is no {field} in the request"
                        )))
                    }
                };
                state.files.insert(file.file_id.clone(), file.clone());
                let mut message = ChatMessage::blank(chat_id, config.bot_id, true, kind);
                message.caption = caption;
                message.file = Some(file);
                fill_send_options(&mut message, p, markup);
                let message = state.add_message(message);
                Ok(state.render(config, &message))
            }
            "editmessagetext" | "editmessagereplymarkup" => {
                let (chat_id, message_id) = target_message(p)?;
                let new_text = if method == "editmessagetext" {
                    let text = str_param(p, "text").unwrap_or_default();
                    check_text(&text, description::EDITED_TEXT_TOO_LONG)?;
                    Some(text)
                } else {
                    None
                };
                let new_entities = match &new_text {
                    Some(text) => entities_param(p, text)?,
                    None => None,
                };
                // No reply_markup in an edit means no keyboard afterwards, as in Telegram.
                let markup = inline_markup(p)?;
                let message = state
                    .find_mut(chat_id, message_id)
                    .filter(|m| !m.deleted)
                    .ok_or_else(|| bad(description::MESSAGE_TO_EDIT_NOT_FOUND))?;
                if !message.outgoing {
                    return Err(bad(description::MESSAGE_CANT_BE_EDITED));
                }
                if new_text.is_some() && message.kind != ContentKind::Text {
                    return Err(bad(description::NO_TEXT_TO_EDIT));
                }
                let text_same = new_text.is_none()
                    || (new_text == message.text && new_entities == message.entities);
                if text_same && markup == message.reply_markup {
                    return Err(bad(description::NOT_MODIFIED));
                }
                let now = unix_now();
                message.keep_revision(method, now);
                if let Some(text) = new_text {
                    message.text = Some(text);
                    message.entities = new_entities;
                    if let Some(parse_mode) = str_param(p, "parse_mode") {
                        message.parse_mode = Some(parse_mode);
                    }
                }
                message.reply_markup = markup;
                message.edit_date = Some(now);
                let message = message.clone();
                Ok(state.render(config, &message))
            }
            "deletemessage" => {
                let (chat_id, message_id) = target_message(p)?;
                let message = state
                    .find_mut(chat_id, message_id)
                    .filter(|m| !m.deleted)
                    .ok_or_else(|| bad(description::MESSAGE_TO_DELETE_NOT_FOUND))?;
                message.deleted = true;
                Ok(json!(true))
            }
            "answercallbackquery" => {
                let query_id = p
                    .get("callback_query_id")
                    .and_then(|v| match v {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .unwrap_or_default();
                match state.callback_queries.get_mut(&query_id) {
                    Some(query) if !query.answered => query.answered = true,
                    _ => return Err(bad(description::QUERY_TOO_OLD)),
                }
                state.callback_answers.push(CallbackAnswer {
                    callback_query_id: query_id,
                    text: str_param(p, "text"),
                    show_alert: p.get("show_alert").and_then(as_bool).unwrap_or(false),
                    url: str_param(p, "url"),
                    cache_time: p.get("cache_time").and_then(as_i64),
                    at: SystemTime::now(),
                });
                Ok(json!(true))
            }
            "setmycommands" => {
                let commands = p
                    .get("commands")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("Bad Request: parameter \"commands\" is required"))?;
                for command in commands {
                    let name = command["command"].as_str().unwrap_or_default();
                    let description = command["description"].as_str().unwrap_or_default();
                    let name_ok = (1..=32).contains(&name.len())
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                    let description_ok = (1..=256).contains(&description.chars().count());
                    if !name_ok || !description_ok {
                        return Err(bad(description::BOT_COMMAND_INVALID));
                    }
                }
                state
                    .commands
                    .insert(commands_key(p), Value::Array(commands.clone()));
                Ok(json!(true))
            }
            "getmycommands" => Ok(state
                .commands
                .get(&commands_key(p))
                .cloned()
                .unwrap_or_else(|| json!([]))),
            "deletewebhook" => {
                if p.get("drop_pending_updates").and_then(as_bool) == Some(true) {
                    state.updates.clear();
                }
                Ok(json!(true))
            }
            _ => Err(ApiFail {
                code: 404,
                description: description::NOT_FOUND.to_owned(),
                retry_after: None,
            }),
        }
    }
}

/// The one HTTP handler: every path, every method.
async fn handle(
    State(emulator): State<Emulator>,
    ConnectInfo(connection): ConnectInfo<Connection>,
    request: Request,
) -> Response {
    let Some((token, method)) = split_path(request.uri().path()) else {
        return envelope_error(404, description::NOT_FOUND, None);
    };
    let method = method.to_ascii_lowercase();
    if token != emulator.inner.config.token {
        let seq = emulator.record(method, json!({}), false);
        emulator.finish(
            seq,
            Outcome::Error {
                code: 401,
                description: description::UNAUTHORIZED.to_owned(),
                retry_after: None,
            },
        );
        return envelope_error(401, description::UNAUTHORIZED, None);
    }
    let params = match read_params(request).await {
        Ok(params) => params,
        Err(fail) => {
            let seq = emulator.record(method, json!({}), true);
            return answer(&emulator, seq, Err(fail));
        }
    };
    let seq = emulator.record(method.clone(), Value::Object(params.values.clone()), true);
    match emulator.next_script(&method) {
        Some(Scripted::Error {
            code,
            description,
            retry_after,
        }) => {
            return answer(
                &emulator,
                seq,
                Err(ApiFail {
                    code,
                    description,
                    retry_after,
                }),
            )
        }
        Some(Scripted::Drop) => {
            connection.kill();
            emulator.finish(seq, Outcome::Dropped);
            // Never written: the connection fails on the first write and is closed.
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        Some(Scripted::MalformedJson) => {
            emulator.finish(seq, Outcome::MalformedJson);
            return Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(r#"{"ok":true,"result":{"message_id":"#))
                .unwrap_or_else(|_| StatusCode::OK.into_response());
        }
        Some(Scripted::Delay(delay)) => {
            let mut stopped = emulator.inner.shutdown.subscribe();
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = stopped.wait_for(|stop| *stop) => {}
            }
        }
        None => {}
    }
    let result = if method == "getupdates" {
        emulator.get_updates(&params.values).await
    } else {
        emulator.dispatch(&method, &params)
    };
    answer(&emulator, seq, result)
}

/// Records the outcome and writes the envelope.
fn answer(emulator: &Emulator, seq: u64, result: Result<Value, ApiFail>) -> Response {
    match result {
        Ok(value) => {
            emulator.finish(seq, Outcome::Ok(value.clone()));
            json_response(StatusCode::OK, &json!({"ok": true, "result": value}))
        }
        Err(fail) => {
            emulator.finish(
                seq,
                Outcome::Error {
                    code: fail.code,
                    description: fail.description.clone(),
                    retry_after: fail.retry_after,
                },
            );
            envelope_error(fail.code, &fail.description, fail.retry_after)
        }
    }
}

fn envelope_error(code: u16, description: &str, retry_after: Option<u32>) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({ "retry_after": seconds });
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `/bot{token}/{method}` → (token, method).
fn split_path(path: &str) -> Option<(String, String)> {
    let (first, method) = path.strip_prefix('/')?.split_once('/')?;
    let method = method.strip_suffix('/').unwrap_or(method);
    if method.is_empty() || method.contains('/') {
        return None;
    }
    let token = percent_decode(first, false).strip_prefix("bot")?.to_owned();
    Some((token, percent_decode(method, false)))
}

/// Parameters that are always free text: never parsed as numbers or JSON.
const TEXT_PARAMS: &[&str] = &[
    "text",
    "caption",
    "callback_query_id",
    "inline_message_id",
    "parse_mode",
    "url",
    "photo",
    "document",
    "language_code",
    "description",
    "short_description",
    "name",
    "title",
    "file_name",
    "business_connection_id",
    "message_effect_id",
    "secret_token",
];

/// Parameters the Bot API takes as JSON-serialized strings; stored parsed.
const JSON_PARAMS: &[&str] = &[
    "reply_markup",
    "commands",
    "scope",
    "allowed_updates",
    "entities",
    "caption_entities",
    "link_preview_options",
    "reply_parameters",
];

/// A form or multipart value: numbers, booleans and JSON arrive as strings.
fn coerce(name: &str, raw: String) -> Value {
    if TEXT_PARAMS.contains(&name) || raw.starts_with("attach://") {
        return Value::String(raw);
    }
    match serde_json::from_str::<Value>(&raw) {
        Ok(value) if !value.is_string() && !value.is_null() => value,
        _ => Value::String(raw),
    }
}

async fn read_params(request: Request) -> Result<Params, ApiFail> {
    let mut params = Params::default();
    if let Some(query) = request.uri().query() {
        for (name, value) in parse_urlencoded(query) {
            let value = coerce(&name, value);
            params.values.insert(name, value);
        }
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        read_multipart(request, &mut params).await?;
    } else {
        let body = axum::body::to_bytes(request.into_body(), BODY_LIMIT)
            .await
            .map_err(|_| ApiFail {
                code: 413,
                description: description::TOO_LARGE.to_owned(),
                retry_after: None,
            })?;
        if content_type.starts_with("application/json") {
            if !body.is_empty() {
                match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Object(object)) => params.values.extend(object),
                    _ => return Err(bad("Bad Request: can't parse JSON object")),
                }
            }
        } else if !body.is_empty() {
            // Form-encoded, or no content type at all (curl without -H).
            let text = String::from_utf8_lossy(&body);
            for (name, value) in parse_urlencoded(&text) {
                let value = coerce(&name, value);
                params.values.insert(name, value);
            }
        }
    }
    for name in JSON_PARAMS {
        if let Some(Value::String(raw)) = params.values.get(*name) {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(raw)
            {
                params.values.insert((*name).to_owned(), parsed);
            }
        }
    }
    Ok(params)
}

/// Multipart: text parts become parameters, file parts uploads. A file is referred to either by
/// a text parameter `attach://PART` (teloxide's way) or by a part named like the parameter.
async fn read_multipart(request: Request, params: &mut Params) -> Result<(), ApiFail> {
    let too_large = |status: StatusCode| {
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiFail {
                code: 413,
                description: description::TOO_LARGE.to_owned(),
                retry_after: None,
            }
        } else {
            bad("Bad Request: can't parse multipart/form-data")
        }
    };
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|rejection| too_large(rejection.status()))?;
    let mut parts = Vec::new();
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|error| too_large(error.status()))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let media_type = field.content_type().map(str::to_owned);
        let data = field
            .bytes()
            .await
            .map_err(|error| too_large(error.status()))?;
        parts.push((name, file_name, media_type, data));
    }
    let referenced: HashSet<String> = parts
        .iter()
        .filter(|(_, file_name, _, _)| file_name.is_none())
        .filter_map(|(_, _, _, data)| {
            std::str::from_utf8(data)
                .ok()?
                .strip_prefix("attach://")
                .map(str::to_owned)
        })
        .collect();
    let mut files = HashMap::new();
    for (name, file_name, media_type, data) in parts {
        if file_name.is_some() || referenced.contains(&name) {
            let upload = Upload {
                name: file_name.unwrap_or_default(),
                media_type,
                bytes: data.len() as u64,
                sha256: hex::encode(Sha256::digest(&data)),
                data,
            };
            files.insert(name, upload);
        } else {
            let value = coerce(&name, String::from_utf8_lossy(&data).into_owned());
            params.values.insert(name, value);
        }
    }
    let mut used = HashSet::new();
    for (name, value) in params.values.iter_mut() {
        let part = value.as_str().and_then(|s| s.strip_prefix("attach://"));
        if let Some(upload) = part.and_then(|part| files.get_key_value(part)) {
            used.insert(upload.0.clone());
            *value = upload.1.descriptor();
            params.uploads.insert(name.clone(), upload.1.clone());
        }
    }
    for (name, upload) in files {
        if !used.contains(&name) && !params.values.contains_key(&name) {
            params.values.insert(name.clone(), upload.descriptor());
            params.uploads.insert(name, upload);
        }
    }
    Ok(())
}

fn parse_urlencoded(input: &str) -> Vec<(String, String)> {
    input
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name, true), percent_decode(value, true))
        })
        .collect()
}

fn percent_decode(input: &str, plus_is_space: bool) -> String {
    fn hex_digit(byte: u8) -> Option<u8> {
        (byte as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(high * 16 + low);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        Value::String(s) => match s.as_str() {
            "true" | "True" | "1" => Some(true),
            "false" | "False" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn str_param(params: &Map<String, Value>, name: &str) -> Option<String> {
    match params.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn update_id(update: &Value) -> Option<i64> {
    update.get("update_id").and_then(as_i64)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The `entities` of a text, checked as Telegram checks them: a JSON array of objects with a
/// known `type`, whose UTF-16 `offset` and `length` fall inside the text and on character
/// boundaries. Only the types consentd sends (and the ones a message's own text may carry) are
/// known here.
fn entities_param(params: &Map<String, Value>, text: &str) -> Result<Option<Value>, ApiFail> {
    const KNOWN: [&str; 6] = [
        "blockquote",
        "expandable_blockquote",
        "code",
        "pre",
        "bold",
        "italic",
    ];
    let Some(entities) = params.get("entities") else {
        return Ok(None);
    };
    let list = entities
        .as_array()
        .ok_or_else(|| bad("Bad Request: can't parse entities JSON object"))?;
    let units: Vec<u16> = text.encode_utf16().collect();
    let boundary = |at: usize| {
        at == units.len() || (at < units.len() && !(0xDC00..=0xDFFF).contains(&units[at]))
    };
    for entity in list {
        let kind = entity["type"].as_str().unwrap_or_default();
        let (Some(offset), Some(length)) = (entity["offset"].as_u64(), entity["length"].as_u64())
        else {
            return Err(bad(
                "Bad Request: can't parse entities: offset and length are required",
            ));
        };
        let Some(end) = offset
            .checked_add(length)
            .and_then(|end| usize::try_from(end).ok())
        else {
            return Err(bad(
                "Bad Request: can't parse entities: offset and length overflow",
            ));
        };
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        if !KNOWN.contains(&kind) {
            return Err(bad(&format!(
                "Bad Request: unsupported entity type \"{kind}\""
            )));
        }
        if end > units.len() {
            return Err(bad(&format!(
                "Bad Request: entity beginning at UTF-16 offset {offset} ends after the end of \
                 the text at UTF-16 offset {}",
                units.len()
            )));
        }
        if !boundary(offset) || !boundary(end) {
            return Err(bad(&format!(
                "Bad Request: entity begins or ends in the middle of a UTF-16 symbol at offset \
                 {offset}"
            )));
        }
    }
    Ok((!list.is_empty()).then(|| entities.clone()))
}

fn check_text(text: &str, too_long: &str) -> Result<(), ApiFail> {
    if text.trim().is_empty() {
        return Err(bad(description::TEXT_IS_EMPTY));
    }
    if utf16_len(text) > TEXT_LIMIT {
        return Err(bad(too_long));
    }
    Ok(())
}

fn chat_id_param(params: &Map<String, Value>) -> Result<i64, ApiFail> {
    let value = params
        .get("chat_id")
        .ok_or_else(|| bad(description::CHAT_ID_EMPTY))?;
    // "@channelname" chat ids name channels, which this emulator has none of.
    as_i64(value).ok_or_else(|| bad(description::CHAT_NOT_FOUND))
}

/// (chat_id, message_id) of the message an edit or a delete is about.
fn target_message(params: &Map<String, Value>) -> Result<(i64, i64), ApiFail> {
    if params.contains_key("inline_message_id") {
        // Inline messages belong to inline mode, which is not emulated.
        return Err(bad(description::MESSAGE_TO_EDIT_NOT_FOUND));
    }
    let chat_id = chat_id_param(params)?;
    let message_id = params
        .get("message_id")
        .and_then(as_i64)
        .ok_or_else(|| bad(description::MESSAGE_IDENTIFIER_NOT_SPECIFIED))?;
    Ok((chat_id, message_id))
}

/// The inline keyboard of a request's `reply_markup`, checked as Telegram checks it; `None` for
/// no markup, an empty keyboard, or another kind of keyboard.
fn inline_markup(params: &Map<String, Value>) -> Result<Option<Value>, ApiFail> {
    let Some(markup) = params.get("reply_markup") else {
        return Ok(None);
    };
    if markup.is_null() {
        return Ok(None);
    }
    let Some(keyboard) = markup.get("inline_keyboard") else {
        if markup.is_object() {
            return Ok(None);
        }
        return Err(bad(description::BAD_REPLY_MARKUP));
    };
    let rows = keyboard
        .as_array()
        .ok_or_else(|| bad(description::BAD_REPLY_MARKUP))?;
    for row in rows {
        let buttons = row
            .as_array()
            .ok_or_else(|| bad(description::BAD_REPLY_MARKUP))?;
        for button in buttons {
            if !button.get("text").is_some_and(Value::is_string) {
                return Err(bad(description::BAD_REPLY_MARKUP));
            }
            if let Some(data) = button.get("callback_data") {
                let data = data.as_str().unwrap_or_default();
                if data.is_empty() || data.len() > CALLBACK_DATA_LIMIT {
                    return Err(bad(description::BUTTON_DATA_INVALID));
                }
            }
        }
    }
    if rows
        .iter()
        .all(|row| row.as_array().is_some_and(Vec::is_empty))
    {
        return Ok(None);
    }
    Ok(Some(json!({ "inline_keyboard": rows })))
}

fn fill_send_options(
    message: &mut ChatMessage,
    params: &Map<String, Value>,
    markup: Option<Value>,
) {
    message.reply_markup = markup;
    message.parse_mode = str_param(params, "parse_mode");
    message.disable_notification = params
        .get("disable_notification")
        .and_then(as_bool)
        .unwrap_or(false);
    message.protect_content = params
        .get("protect_content")
        .and_then(as_bool)
        .unwrap_or(false);
    message.reply_to_message_id = params
        .get("reply_parameters")
        .and_then(|reply| reply.get("message_id"))
        .or_else(|| params.get("reply_to_message_id"))
        .and_then(as_i64);
}

fn commands_key(params: &Map<String, Value>) -> (String, String) {
    let scope = params
        .get("scope")
        .cloned()
        .unwrap_or_else(|| json!({"type": "default"}));
    let language = str_param(params, "language_code").unwrap_or_default();
    (scope.to_string(), language)
}

fn file_info(kind: ContentKind, upload: &Upload) -> FileInfo {
    // Telegram-like prefixes; the ids are stable per content so a re-upload finds the same file.
    let (id_prefix, unique_prefix) = match kind {
        ContentKind::Photo => ("AgACAgIAAxkBAAI", "AQAD"),
        _ => ("BQACAgIAAxkBAAI", "AgAD"),
    };
    FileInfo {
        file_id: format!("{id_prefix}{}", &upload.sha256[..32]),
        file_unique_id: format!("{unique_prefix}{}", &upload.sha256[..12]),
        name: upload.name.clone(),
        media_type: upload
            .media_type
            .clone()
            .filter(|media_type| media_type != "application/octet-stream")
            .unwrap_or_else(|| guess_media_type(&upload.name).to_owned()),
        bytes: upload.bytes,
        sha256: upload.sha256.clone(),
    }
}

fn guess_media_type(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "json" => "application/json",
        "csv" => "text/csv",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Two sizes, as Telegram sends for a small photo; the pixel sizes are made up (the image is
/// not decoded).
fn photo_sizes(file: &FileInfo) -> Value {
    json!([
        {
            "file_id": format!("{}s", file.file_id),
            "file_unique_id": format!("{}s", file.file_unique_id),
            "file_size": file.bytes.min(4096),
            "width": 90,
            "height": 90,
        },
        {
            "file_id": file.file_id,
            "file_unique_id": file.file_unique_id,
            "file_size": file.bytes,
            "width": 800,
            "height": 600,
        }
    ])
}

/// The `bot_command` entity Telegram adds to a text starting with `/command`.
fn command_entity(text: &str) -> Option<Value> {
    let command = text.split_whitespace().next()?;
    if !text.starts_with('/') || command.len() < 2 {
        return None;
    }
    Some(json!({"type": "bot_command", "offset": 0, "length": utf16_len(command)}))
}

fn bot_user_json(config: &Config) -> Value {
    json!({
        "id": config.bot_id,
        "is_bot": true,
        "first_name": config.bot_first_name,
        "username": config.bot_username,
    })
}

/// `getMe`: the full object; teloxide fails without `can_connect_to_business` and
/// `has_main_web_app`.
fn me_json(config: &Config) -> Value {
    let mut me = bot_user_json(config);
    me["can_join_groups"] = json!(true);
    me["can_read_all_group_messages"] = json!(false);
    me["supports_inline_queries"] = json!(false);
    me["can_connect_to_business"] = json!(false);
    me["has_main_web_app"] = json!(false);
    me
}

/// Accepts TCP connections whose stream a handler can break, so [`Scripted::Drop`] can close a
/// connection without an answer (axum offers no other way to not answer).
struct KillableListener(TcpListener);

/// The connection a request came on, handed to the handler as `ConnectInfo`.
#[derive(Clone, Debug)]
struct Connection {
    killed: Arc<AtomicBool>,
}

impl Connection {
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
    }
}

struct KillableStream {
    stream: TcpStream,
    killed: Arc<AtomicBool>,
}

impl KillableStream {
    fn check(&self) -> io::Result<()> {
        if self.killed.load(Ordering::SeqCst) {
            Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection dropped by a scripted answer",
            ))
        } else {
            Ok(())
        }
    }
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = Connection;

    async fn accept(&mut self) -> (KillableStream, Connection) {
        loop {
            match self.0.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let killed = Arc::new(AtomicBool::new(false));
                    let connection = Connection {
                        killed: killed.clone(),
                    };
                    return (KillableStream { stream, killed }, connection);
                }
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Connection> {
        Ok(Connection {
            killed: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for Connection {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Connection {
        stream.remote_addr().clone()
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use teloxide::prelude::*;
    use teloxide::types::{
        BotCommand, CallbackQueryId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile,
        MaybeInaccessibleMessage, MessageEntityKind, MessageId, MessageOrigin, UpdateKind,
    };
    use teloxide::{ApiError, RequestError};

    const TOKEN: &str = "123456:TEST-token_abc";
    const OWNER: i64 = 42;

    async fn start() -> Emulator {
        Emulator::start(TOKEN).await.expect("emulator starts")
    }

    /// A bot on the emulator, with proxies from the environment ignored so loopback stays
    /// loopback.
    fn bot_with(emulator: &Emulator, token: &str, timeout: Duration) -> Bot {
        let client = teloxide::net::default_reqwest_settings()
            .no_proxy()
            .timeout(timeout)
            .build()
            .expect("http client");
        Bot::with_client(token, client).set_api_url(emulator.api_url().parse().unwrap())
    }

    fn bot(emulator: &Emulator) -> Bot {
        bot_with(emulator, TOKEN, Duration::from_secs(17))
    }

    fn owner() -> UserSpec {
        UserSpec::new(OWNER, "Ann").username("ann").language("ru")
    }

    fn keyboard(yes: &str, no: &str) -> InlineKeyboardMarkup {
        InlineKeyboardMarkup::new([[
            InlineKeyboardButton::callback("Yes", yes),
            InlineKeyboardButton::callback("No", no),
        ]])
    }

    fn message_id(message: &Message) -> i64 {
        i64::from(message.id.0)
    }

    /// A plain HTTP/1.1 request, for what teloxide cannot send (other cases, forms, bad tokens)
    /// and for answers teloxide would stall on (5xx).
    fn raw_blocking(
        addr: SocketAddr,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(content_type) = content_type {
            head.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let response = String::from_utf8(response).expect("utf-8 response");
        let (head, body) = response.split_once("\r\n\r\n").expect("http response");
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, body.to_owned())
    }

    async fn raw(
        emulator: &Emulator,
        method: &'static str,
        path: String,
        content_type: Option<&'static str>,
        body: Vec<u8>,
    ) -> (u16, Value) {
        let addr = emulator.addr();
        let (status, body) = tokio::task::spawn_blocking(move || {
            raw_blocking(addr, method, &path, content_type, &body)
        })
        .await
        .unwrap();
        (status, serde_json::from_str(&body).expect("a JSON body"))
    }

    #[tokio::test]
    async fn get_me_deserializes_into_teloxide_me() {
        let emulator = start().await;
        let me = bot(&emulator).get_me().await.expect("getMe");
        assert_eq!(me.username(), emulator.bot_username());
        assert_eq!(me.id.0, 123_456);
        assert!(me.is_bot);
        assert_eq!(emulator.calls_to("getMe").len(), 1);
        assert!(emulator.calls()[0].is_ok());
    }

    #[tokio::test]
    async fn send_then_edit_text_then_markup_keeps_the_chat_state() {
        let emulator = start().await;
        let bot = bot(&emulator);
        emulator.add_user(&owner());
        let yes_no = keyboard("y:1", "n:1");
        let sent = bot
            .send_message(ChatId(OWNER), "Card")
            .reply_markup(yes_no.clone())
            .disable_notification(true)
            .await
            .expect("sendMessage");
        assert_eq!(sent.text(), Some("Card"));
        assert_eq!(sent.reply_markup(), Some(&yes_no));
        assert_eq!(sent.chat.id, ChatId(OWNER));
        assert_eq!(sent.from.as_ref().unwrap().id.0, 123_456);

        let edited = bot
            .edit_message_text(ChatId(OWNER), sent.id, "Card: granted")
            .reply_markup(yes_no.clone())
            .await
            .expect("editMessageText");
        assert_eq!(edited.text(), Some("Card: granted"));
        assert_eq!(edited.reply_markup(), Some(&yes_no));
        assert!(edited.edit_date().is_some());

        let undo = InlineKeyboardMarkup::new([[InlineKeyboardButton::callback("Undo", "u:1")]]);
        let edited = bot
            .edit_message_reply_markup(ChatId(OWNER), sent.id)
            .reply_markup(undo.clone())
            .await
            .expect("editMessageReplyMarkup");
        assert_eq!(edited.reply_markup(), Some(&undo));

        // An edit without reply_markup takes the keyboard away, as in Telegram.
        let done = bot
            .edit_message_text(ChatId(OWNER), sent.id, "Done")
            .await
            .expect("editMessageText");
        assert!(done.reply_markup().is_none());

        let messages = emulator.messages(OWNER);
        assert_eq!(messages.len(), 1);
        let card = &messages[0];
        assert!(card.outgoing && card.disable_notification && !card.deleted);
        assert_eq!(card.text.as_deref(), Some("Done"));
        assert!(card.reply_markup.is_none());
        let history: Vec<_> = card
            .history
            .iter()
            .map(|r| (r.text.as_deref().unwrap(), r.replaced_by.as_str()))
            .collect();
        assert_eq!(
            history,
            [
                ("Card", "editmessagetext"),
                ("Card: granted", "editmessagereplymarkup"),
                ("Card: granted", "editmessagetext"),
            ]
        );
        let first_buttons: Vec<_> = ChatMessage {
            reply_markup: card.history[0].reply_markup.clone(),
            ..card.clone()
        }
        .buttons()
        .into_iter()
        .map(|b| (b.text, b.callback_data.unwrap()))
        .collect();
        assert_eq!(
            first_buttons,
            [
                ("Yes".to_owned(), "y:1".to_owned()),
                ("No".to_owned(), "n:1".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn an_edit_that_changes_nothing_is_message_not_modified() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let yes_no = keyboard("y:1", "n:1");
        let sent = bot
            .send_message(ChatId(OWNER), "Card")
            .reply_markup(yes_no.clone())
            .await
            .unwrap();

        let err = bot
            .edit_message_text(ChatId(OWNER), sent.id, "Card")
            .reply_markup(yes_no.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageNotModified)),
            "{err:?}"
        );
        let err = bot
            .edit_message_reply_markup(ChatId(OWNER), sent.id)
            .reply_markup(yes_no.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageNotModified)),
            "{err:?}"
        );

        // The same answer scripted, for an edit that would otherwise succeed.
        emulator.script("editMessageText", Scripted::not_modified());
        let err = bot
            .edit_message_text(ChatId(OWNER), sent.id, "Other")
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageNotModified)),
            "{err:?}"
        );
        let card = emulator.message(OWNER, message_id(&sent)).unwrap();
        assert_eq!(card.text.as_deref(), Some("Card"));
        assert!(card.history.is_empty());
        assert_eq!(emulator.pending_scripts(), 0);
    }

    #[tokio::test]
    async fn editing_or_deleting_a_missing_message_fails_like_telegram() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let err = bot
            .edit_message_text(ChatId(OWNER), MessageId(999), "x")
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageToEditNotFound)),
            "{err:?}"
        );

        let sent = bot.send_message(ChatId(OWNER), "Card").await.unwrap();
        bot.delete_message(ChatId(OWNER), sent.id)
            .await
            .expect("deleteMessage");
        assert!(emulator.message(OWNER, message_id(&sent)).unwrap().deleted);
        let err = bot
            .edit_message_text(ChatId(OWNER), sent.id, "late")
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageToEditNotFound)),
            "{err:?}"
        );
        let err = bot
            .delete_message(ChatId(OWNER), sent.id)
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageToDeleteNotFound)),
            "{err:?}"
        );

        // The user's own messages cannot be edited by the bot.
        let update = emulator.message_update(&owner(), ChatSpec::private(OWNER), "hi");
        let theirs = MessageId(update["message"]["message_id"].as_i64().unwrap() as i32);
        let err = bot
            .edit_message_text(ChatId(OWNER), theirs, "hijacked")
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageCantBeEdited)),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn callback_queries_are_answered_once_and_scripted_too_old_is_unknown_to_teloxide() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let yes_no = keyboard("y:1", "n:1");
        let sent = bot
            .send_message(ChatId(OWNER), "Card")
            .reply_markup(yes_no.clone())
            .await
            .unwrap();
        emulator.push_press(&owner(), ChatSpec::private(OWNER), message_id(&sent), "y:1");

        let updates = bot.get_updates().await.unwrap();
        let UpdateKind::CallbackQuery(query) = &updates[0].kind else {
            panic!("not a callback query: {:?}", updates[0]);
        };
        assert_eq!(query.data.as_deref(), Some("y:1"));
        assert_eq!(query.from.id.0, OWNER as u64);
        assert!(!query.chat_instance.is_empty());
        let message = query.regular_message().expect("the card");
        assert_eq!(message.id, sent.id);
        assert_eq!(message.reply_markup(), Some(&yes_no));

        bot.answer_callback_query(query.id.clone())
            .text("Granted")
            .await
            .expect("answerCallbackQuery");
        let answers = emulator.callback_answers();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].callback_query_id, query.id.0);
        assert_eq!(answers[0].text.as_deref(), Some("Granted"));

        // Telegram's text says "query ID"; teloxide's InvalidQueryId expects "query id", so the
        // error arrives as Unknown. Matching on InvalidQueryId would never fire.
        let too_old = |err: &RequestError| matches!(err, RequestError::Api(ApiError::Unknown(text)) if text == description::QUERY_TOO_OLD);
        let err = bot
            .answer_callback_query(query.id.clone())
            .await
            .unwrap_err();
        assert!(too_old(&err), "a second answer: {err:?}");
        let err = bot
            .answer_callback_query(CallbackQueryId("never-sent".to_owned()))
            .await
            .unwrap_err();
        assert!(too_old(&err), "an unknown id: {err:?}");

        emulator.push_press(&owner(), ChatSpec::private(OWNER), message_id(&sent), "n:1");
        let updates = bot
            .get_updates()
            .offset(updates[0].id.0 as i32 + 1)
            .await
            .unwrap();
        let UpdateKind::CallbackQuery(second) = &updates[0].kind else {
            panic!("not a callback query");
        };
        emulator.script("answerCallbackQuery", Scripted::query_too_old());
        let err = bot
            .answer_callback_query(second.id.clone())
            .await
            .unwrap_err();
        assert!(too_old(&err), "scripted: {err:?}");
        assert_eq!(emulator.callback_answers().len(), 1);
    }

    #[tokio::test]
    async fn photo_and_document_uploads_record_length_and_sha256() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let photo: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let sent = bot
            .send_photo(ChatId(OWNER), InputFile::memory(photo.clone()))
            .caption("attachment 1")
            .await
            .expect("sendPhoto");
        assert_eq!(sent.caption(), Some("attachment 1"));
        assert_eq!(sent.photo().map(<[_]>::len), Some(2));
        let call = emulator.calls_to("sendphoto").pop().unwrap();
        let photo_sha = hex::encode(Sha256::digest(&photo));
        assert_eq!(call.params["photo"]["sha256"], json!(photo_sha));
        assert_eq!(call.params["photo"]["bytes"], json!(5000));
        assert_eq!(call.params["chat_id"], json!(OWNER));
        assert_eq!(call.params["caption"], json!("attachment 1"));

        let pdf = b"%PDF-1.4 not really a pdf".to_vec();
        let sent = bot
            .send_document(
                ChatId(OWNER),
                InputFile::memory(pdf.clone()).file_name("report.pdf"),
            )
            .await
            .expect("sendDocument");
        let document = sent.document().expect("a document");
        assert_eq!(document.file_name.as_deref(), Some("report.pdf"));
        assert_eq!(
            document
                .mime_type
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("application/pdf")
        );
        let call = emulator.calls_to("SendDocument").pop().unwrap();
        let pdf_sha = hex::encode(Sha256::digest(&pdf));
        assert_eq!(
            call.params["document"],
            json!({"name": "report.pdf", "bytes": pdf.len(), "sha256": pdf_sha})
        );

        // Sent again by file_id: the same file, no upload.
        let again = bot
            .send_document(ChatId(OWNER), InputFile::file_id(document.file.id.clone()))
            .await
            .expect("sendDocument by file_id");
        let stored = emulator.message(OWNER, message_id(&again)).unwrap();
        assert_eq!(stored.kind, ContentKind::Document);
        assert_eq!(stored.file.unwrap().sha256, pdf_sha);
        let kinds: Vec<_> = emulator.messages(OWNER).iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                ContentKind::Photo,
                ContentKind::Document,
                ContentKind::Document
            ]
        );
    }

    #[tokio::test]
    async fn get_updates_offset_confirms_earlier_updates() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let first = emulator.push_text(&owner(), ChatSpec::private(OWNER), "/start abc");
        let second = emulator.push_text(&owner(), ChatSpec::private(OWNER), "hello");
        assert_eq!((first, second), (1, 2));

        // Without an offset nothing is confirmed: the same batch again.
        for _ in 0..2 {
            let updates = bot.get_updates().await.unwrap();
            let ids: Vec<u32> = updates.iter().map(|u| u.id.0).collect();
            assert_eq!(ids, [1, 2]);
        }
        let updates = bot.get_updates().limit(1).await.unwrap();
        assert_eq!(updates.len(), 1);

        let updates = bot.get_updates().offset(2).await.unwrap();
        let ids: Vec<u32> = updates.iter().map(|u| u.id.0).collect();
        assert_eq!(ids, [2]);
        assert_eq!(emulator.pending_updates().len(), 1);

        let updates = bot.get_updates().offset(3).await.unwrap();
        assert!(updates.is_empty());
        assert!(emulator.pending_updates().is_empty());
        assert_eq!(
            emulator
                .calls_to("getupdates")
                .last()
                .unwrap()
                .param_i64("offset"),
            Some(3)
        );
    }

    #[tokio::test]
    async fn a_long_poll_returns_at_once_when_an_update_is_pushed() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let pusher = emulator.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            pusher.push_text(&owner(), ChatSpec::private(OWNER), "/pending");
        });
        let started = Instant::now();
        let updates = bot.get_updates().timeout(1).await.unwrap();
        let waited = started.elapsed();
        assert_eq!(updates.len(), 1);
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_millis(800),
            "{waited:?}"
        );

        // With nothing pushed, the poll lasts its timeout and answers an empty list.
        let started = Instant::now();
        let updates = bot.get_updates().offset(2).timeout(1).await.unwrap();
        assert!(updates.is_empty());
        assert!(started.elapsed() >= Duration::from_millis(950));
    }

    #[tokio::test]
    async fn a_newer_get_updates_ends_a_waiting_one_with_conflict() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let other = bot.clone();
        let first = tokio::spawn(async move { other.get_updates().timeout(5).await });
        emulator
            .wait_until("the first poll waits", Duration::from_secs(3), |e| {
                e.calls_to("getupdates")
                    .iter()
                    .any(|call| call.outcome.is_none())
            })
            .await
            .unwrap();
        let updates = bot.get_updates().await.unwrap();
        assert!(updates.is_empty());
        let err = first.await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                RequestError::Api(ApiError::TerminatedByOtherGetUpdates)
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn scripted_429_is_retry_after_and_409_is_conflict() {
        let emulator = start().await;
        let bot = bot(&emulator);
        emulator.script("sendMessage", Scripted::too_many_requests(3));
        let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
        assert!(
            matches!(err, RequestError::RetryAfter(seconds) if seconds.seconds() == 3),
            "{err:?}"
        );
        // Only the next call was scripted.
        bot.send_message(ChatId(OWNER), "x").await.unwrap();
        assert_eq!(emulator.messages(OWNER).len(), 1);

        emulator.script("getUpdates", Scripted::conflict());
        let err = bot.get_updates().await.unwrap_err();
        assert!(
            matches!(
                err,
                RequestError::Api(ApiError::TerminatedByOtherGetUpdates)
            ),
            "{err:?}"
        );
        let outcomes: Vec<_> = emulator
            .calls()
            .into_iter()
            .map(|call| match call.outcome {
                Some(Outcome::Error {
                    code, retry_after, ..
                }) => (code, retry_after),
                Some(Outcome::Ok(_)) => (200, None),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(outcomes, [(429, Some(3)), (200, None), (409, None)]);
    }

    #[tokio::test]
    async fn counting_views_agree_with_the_full_ones() {
        let emulator = start().await;
        let bot = bot(&emulator);
        emulator.script("sendMessage", Scripted::too_many_requests(1));
        emulator.script("SENDMESSAGE", Scripted::MalformedJson);
        emulator.script("getMe", Scripted::MalformedJson);
        assert_eq!(emulator.pending_scripts_for("sendmessage"), 2);
        assert_eq!(emulator.pending_scripts_for("getMe"), 1);
        assert_eq!(emulator.pending_scripts_for("editMessageText"), 0);
        let before = emulator.elapsed();
        let _ = bot.send_message(ChatId(OWNER), "one").await;
        let _ = bot.get_me().await;
        assert_eq!(emulator.pending_scripts_for("sendMessage"), 1);
        assert_eq!(emulator.pending_scripts_for("getme"), 0);
        assert_eq!(emulator.call_count(), emulator.calls().len());
        assert_eq!(emulator.call_count(), 2);
        let since: Vec<String> = emulator
            .calls_since(1)
            .into_iter()
            .map(|c| c.method)
            .collect();
        assert_eq!(since, ["getme"]);
        assert!(emulator.calls_since(5).is_empty());
        assert!(emulator.calls()[0].elapsed >= before);
        assert!(emulator.calls()[1].elapsed <= emulator.elapsed());
    }

    #[tokio::test]
    async fn dropped_connections_malformed_json_and_delays() {
        let emulator = start().await;
        let bot = bot(&emulator);
        emulator.script("sendMessage", Scripted::Drop);
        let err = bot.send_message(ChatId(OWNER), "x").await.unwrap_err();
        assert!(matches!(err, RequestError::Network(_)), "{err:?}");
        assert_eq!(
            emulator.calls_to("sendmessage")[0].outcome,
            Some(Outcome::Dropped)
        );
        bot.send_message(ChatId(OWNER), "after the drop")
            .await
            .expect("a new connection works");

        emulator.script("getMe", Scripted::MalformedJson);
        let err = bot.get_me().await.unwrap_err();
        assert!(matches!(err, RequestError::InvalidJson { .. }), "{err:?}");

        emulator.script("getMe", Scripted::Delay(Duration::from_millis(300)));
        let started = Instant::now();
        bot.get_me().await.expect("a delayed answer");
        assert!(started.elapsed() >= Duration::from_millis(300));

        // A delay past the client's timeout is a network error on the client's side.
        let impatient = bot_with(&emulator, TOKEN, Duration::from_millis(200));
        emulator.script("getMe", Scripted::Delay(Duration::from_secs(1)));
        let err = impatient.get_me().await.unwrap_err();
        assert!(matches!(err, RequestError::Network(_)), "{err:?}");
    }

    #[tokio::test]
    async fn server_errors_answer_the_envelope_with_their_status() {
        let emulator = start().await;
        emulator.script("getMe", Scripted::server_error(502));
        let (status, body) = raw(
            &emulator,
            "GET",
            format!("/bot{TOKEN}/getMe"),
            None,
            Vec::new(),
        )
        .await;
        assert_eq!(status, 502);
        assert_eq!(
            body,
            json!({"ok": false, "error_code": 502, "description": "Bad Gateway"})
        );
    }

    #[tokio::test(start_paused = true)]
    async fn teloxide_stalls_ten_seconds_on_a_server_error() {
        let emulator = start().await;
        let bot = bot(&emulator);
        emulator.script("getMe", Scripted::server_error(502));
        let started = tokio::time::Instant::now();
        let err = bot.get_me().await.unwrap_err();
        assert!(started.elapsed() >= Duration::from_secs(10));
        assert!(
            matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == "Bad Gateway"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn method_names_match_in_any_case_and_any_encoding() {
        let emulator = start().await;
        let (status, body) = raw(
            &emulator,
            "POST",
            format!("/bot{TOKEN}/sendmessage"),
            Some("application/json"),
            br#"{"chat_id":42,"text":"lower"}"#.to_vec(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["text"], json!("lower"));

        let (status, body) = raw(
            &emulator,
            "POST",
            format!("/bot{TOKEN}/SENDMESSAGE"),
            Some("application/x-www-form-urlencoded"),
            b"chat_id=42&text=upper+case%21&disable_notification=true".to_vec(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["text"], json!("upper case!"));

        let (status, body) = raw(
            &emulator,
            "GET",
            format!("/bot{TOKEN}/getme"),
            None,
            Vec::new(),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body["result"]["username"], json!(emulator.bot_username()));

        let calls = emulator.calls_to("SendMessage");
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().all(|call| call.method == "sendmessage"));
        // The form's strings are parsed back into what JSON would have carried.
        assert_eq!(calls[1].params["chat_id"], json!(42));
        assert_eq!(calls[1].params["disable_notification"], json!(true));
        assert!(emulator.messages(OWNER)[1].disable_notification);
    }

    #[tokio::test]
    async fn raw_multipart_with_a_file_part_named_like_the_parameter() {
        let emulator = start().await;
        let png = b"\x89PNG\r\n\x1a\n fake image bytes".to_vec();
        let mut body = Vec::new();
        let text_part = |name: &str, value: &str| {
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
        };
        body.extend(text_part("chat_id", "42").as_bytes());
        body.extend(text_part("caption", "123").as_bytes());
        body.extend(
            text_part(
                "reply_markup",
                r#"{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}"#,
            )
            .as_bytes(),
        );
        body.extend(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"cat.png\"\r\nContent-Type: image/png\r\n\r\n",
        );
        body.extend(&png);
        body.extend(b"\r\n--XyZ--\r\n");
        let (status, answer) = raw(
            &emulator,
            "POST",
            format!("/bot{TOKEN}/sendPhoto"),
            Some("multipart/form-data; boundary=XyZ"),
            body,
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["caption"], json!("123"));
        let call = emulator.calls_to("sendphoto").pop().unwrap();
        assert_eq!(call.params["chat_id"], json!(42));
        assert_eq!(call.params["caption"], json!("123"), "free text stays text");
        assert_eq!(
            call.params["photo"],
            json!({"name": "cat.png", "bytes": png.len(), "sha256": hex::encode(Sha256::digest(&png))})
        );
        let stored = &emulator.messages(OWNER)[0];
        assert_eq!(stored.file.as_ref().unwrap().media_type, "image/png");
        assert_eq!(stored.buttons()[0].callback_data.as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn a_wrong_token_is_401_and_an_unknown_method_404() {
        let emulator = start().await;
        let (status, body) = raw(
            &emulator,
            "POST",
            "/bot999:wrong/getMe".to_owned(),
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
        assert_eq!(status, 401);
        assert_eq!(
            body,
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
        );
        let wrong = bot_with(&emulator, "999:wrong", Duration::from_secs(5));
        let err = wrong.get_me().await.unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::InvalidToken)),
            "{err:?}"
        );
        assert!(emulator.calls().iter().all(|call| !call.authorized));

        let (status, body) = raw(
            &emulator,
            "POST",
            format!("/bot{TOKEN}/sendDice"),
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
        assert_eq!(status, 404);
        assert_eq!(body["description"], json!("Not Found"));
        let (status, _) = raw(&emulator, "GET", "/nothing".to_owned(), None, Vec::new()).await;
        assert_eq!(status, 404);
        // teloxide only calls methods that exist; a scripted 404 shows what it makes of one.
        emulator.script("getMe", Scripted::error(404, description::NOT_FOUND));
        let err = bot(&emulator).get_me().await.unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::InvalidToken)),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn telegram_limits_are_enforced() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let err = bot
            .send_message(ChatId(OWNER), "card")
            .reply_markup(keyboard(&"d".repeat(65), "n"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::ButtonDataInvalid)),
            "{err:?}"
        );
        bot.send_message(ChatId(OWNER), "card")
            .reply_markup(keyboard(&"d".repeat(64), "n"))
            .await
            .expect("64 bytes of callback data fit");

        bot.send_message(ChatId(OWNER), "a".repeat(4096))
            .await
            .expect("4096 fit");
        let err = bot
            .send_message(ChatId(OWNER), "a".repeat(4097))
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageIsTooLong)),
            "{err:?}"
        );
        // 2049 code points, 4098 UTF-16 units: too long for clients that count units.
        let err = bot
            .send_message(ChatId(OWNER), "😀".repeat(2049))
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageIsTooLong)),
            "{err:?}"
        );
        let err = bot.send_message(ChatId(OWNER), " \n ").await.unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::MessageTextIsEmpty)),
            "{err:?}"
        );
        let first = &emulator.messages(OWNER)[0];
        let err = bot
            .edit_message_text(
                ChatId(OWNER),
                MessageId(first.message_id as i32),
                "b".repeat(4097),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, RequestError::Api(ApiError::EditedMessageIsTooLong)),
            "{err:?}"
        );
        let err = bot
            .send_photo(ChatId(OWNER), InputFile::memory(vec![1u8; 10]))
            .caption("c".repeat(1025))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == description::CAPTION_TOO_LONG),
            "{err:?}"
        );
        assert_eq!(emulator.messages(OWNER).len(), 2);
    }

    #[tokio::test]
    async fn built_updates_deserialize_as_teloxide_updates() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let eve = UserSpec::new(7, "Eve");
        let yes_no = keyboard("y:1", "n:1");
        let card = bot
            .send_message(ChatId(OWNER), "card")
            .reply_markup(yes_no.clone())
            .await
            .unwrap();
        let chat = ChatSpec::private(OWNER);

        let update = emulator.message_update(&owner(), chat, "/pending now");
        let written = update["message"]["message_id"].as_i64().unwrap();
        assert_eq!(
            written, 2,
            "message ids are shared by both sides of the chat"
        );
        emulator.push_update(update);
        emulator.push_update(emulator.edited_message_update(
            &owner(),
            chat,
            written,
            "/pending later",
        ));
        emulator.push_update(emulator.forwarded_message_update(&owner(), chat, "fwd", &eve));
        emulator.push_update(emulator.message_update(&eve, ChatSpec::group(100), "hi all"));
        emulator.push_update(emulator.callback_update(&owner(), chat, message_id(&card), "y:1"));
        emulator.push_update(emulator.callback_update(&owner(), chat, 999, "y:1"));

        let updates = bot.get_updates().await.unwrap();
        assert_eq!(updates.len(), 6);
        let UpdateKind::Message(message) = &updates[0].kind else {
            panic!("{:?}", updates[0]);
        };
        assert_eq!(message.text(), Some("/pending now"));
        let entity = &message.entities().unwrap()[0];
        assert_eq!(
            (entity.kind.clone(), entity.offset, entity.length),
            (MessageEntityKind::BotCommand, 0, 8)
        );
        assert_eq!(
            message.from.as_ref().unwrap().language_code.as_deref(),
            Some("ru")
        );
        assert!(message.chat.is_private());

        let UpdateKind::EditedMessage(edited) = &updates[1].kind else {
            panic!("{:?}", updates[1]);
        };
        assert_eq!(edited.text(), Some("/pending later"));
        assert!(edited.edit_date().is_some());
        assert_eq!(emulator.message(OWNER, written).unwrap().history.len(), 1);

        let UpdateKind::Message(forwarded) = &updates[2].kind else {
            panic!("{:?}", updates[2]);
        };
        assert!(
            matches!(forwarded.forward_origin(), Some(MessageOrigin::User { sender_user, .. }) if sender_user.id.0 == 7)
        );

        let UpdateKind::Message(in_group) = &updates[3].kind else {
            panic!("{:?}", updates[3]);
        };
        assert!(in_group.chat.is_group());
        assert_eq!(in_group.chat.id, ChatId(-100));

        let UpdateKind::CallbackQuery(press) = &updates[4].kind else {
            panic!("{:?}", updates[4]);
        };
        let pressed = press.regular_message().unwrap();
        assert_eq!((pressed.id, pressed.text()), (card.id, Some("card")));
        assert_eq!(pressed.reply_markup(), Some(&yes_no));

        let UpdateKind::CallbackQuery(stale) = &updates[5].kind else {
            panic!("{:?}", updates[5]);
        };
        assert!(matches!(
            stale.message,
            Some(MaybeInaccessibleMessage::Inaccessible(_))
        ));
    }

    #[tokio::test]
    async fn pushed_ids_keep_duplicates_and_order_and_assigned_ids_continue_above() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let chat = ChatSpec::private(OWNER);
        let mut update = emulator.message_update(&owner(), chat, "one");
        update["update_id"] = json!(10);
        assert_eq!(emulator.push_update(update.clone()), 10);
        assert_eq!(emulator.push_update(update.clone()), 10);
        update["update_id"] = json!(5);
        assert_eq!(emulator.push_update(update), 5);
        assert_eq!(emulator.push_text(&owner(), chat, "two"), 11);

        let ids: Vec<u32> = bot
            .get_updates()
            .await
            .unwrap()
            .iter()
            .map(|u| u.id.0)
            .collect();
        assert_eq!(ids, [10, 10, 5, 11]);
        let ids: Vec<u32> = bot
            .get_updates()
            .offset(11)
            .await
            .unwrap()
            .iter()
            .map(|u| u.id.0)
            .collect();
        assert_eq!(ids, [11]);
    }

    #[tokio::test]
    async fn commands_round_trip_and_delete_webhook_can_drop_pending_updates() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let commands = vec![
            BotCommand::new("pending", "Open cards"),
            BotCommand::new("help", "Help"),
        ];
        bot.set_my_commands(commands.clone())
            .await
            .expect("setMyCommands");
        assert_eq!(bot.get_my_commands().await.unwrap(), commands);
        assert!(bot
            .get_my_commands()
            .language_code("ru")
            .await
            .unwrap()
            .is_empty());
        let err = bot
            .set_my_commands([BotCommand::new("Bad-Name", "x")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RequestError::Api(ApiError::Unknown(text)) if text == description::BOT_COMMAND_INVALID),
            "{err:?}"
        );

        emulator.push_text(&owner(), ChatSpec::private(OWNER), "stale");
        bot.delete_webhook().await.expect("deleteWebhook");
        assert_eq!(emulator.pending_updates().len(), 1);
        bot.delete_webhook()
            .drop_pending_updates(true)
            .await
            .expect("deleteWebhook");
        assert!(emulator.pending_updates().is_empty());
    }

    #[tokio::test]
    async fn wait_until_reports_what_it_waited_for() {
        let emulator = start().await;
        bot(&emulator).get_me().await.unwrap();
        let err = emulator
            .wait_until("a card is sent", Duration::from_millis(100), |e| {
                !e.calls_to("sendmessage").is_empty()
            })
            .await
            .unwrap_err();
        assert!(
            err.contains("a card is sent") && err.contains("getme → ok"),
            "{err}"
        );
    }

    #[test]
    fn thread_mode_serves_sync_callers_and_wait_until_blocking_sees_their_calls() {
        let (emulator, thread) = Emulator::start_in_thread(TOKEN).expect("emulator thread");
        let addr = emulator.addr();
        let caller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            raw_blocking(
                addr,
                "POST",
                &format!("/bot{TOKEN}/sendMessage"),
                Some("application/json"),
                br#"{"chat_id":42,"text":"from a sync caller"}"#,
            )
        });
        emulator
            .wait_until_blocking("the message is stored", Duration::from_secs(5), |e| {
                e.messages(OWNER)
                    .iter()
                    .any(|m| m.text.as_deref() == Some("from a sync caller"))
            })
            .unwrap();
        let (status, _) = caller.join().unwrap();
        assert_eq!(status, 200);

        let err = emulator
            .wait_until_blocking("never", Duration::from_millis(100), |_| false)
            .unwrap_err();
        assert!(
            err.contains("never") && err.contains("sendmessage"),
            "{err}"
        );

        thread.stop();
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "still listening"
        );
    }

    #[tokio::test]
    async fn a_poller_offset_moves_assigned_update_ids_above_it() {
        // A bot restarted against a fresh emulator has confirmed ids this one never gave out.
        let emulator = start().await;
        let bot = bot(&emulator);
        assert_eq!(emulator.polls(), 0);
        assert!(bot.get_updates().offset(40).await.unwrap().is_empty());
        assert_eq!(emulator.polls(), 1);
        let id = emulator.push_text(&owner(), ChatSpec::private(OWNER), "/pending");
        assert_eq!(id, 40);
        let ids: Vec<u32> = bot
            .get_updates()
            .offset(40)
            .await
            .unwrap()
            .iter()
            .map(|u| u.id.0)
            .collect();
        assert_eq!(ids, [40]);
    }

    #[tokio::test]
    async fn only_a_button_the_message_carries_can_be_pressed() {
        let emulator = start().await;
        let bot = bot(&emulator);
        let chat = ChatSpec::private(OWNER);
        let card = bot
            .send_message(ChatId(OWNER), "Card")
            .reply_markup(keyboard("y:1", "n:1"))
            .await
            .unwrap();
        let plain = bot.send_message(ChatId(OWNER), "Plain").await.unwrap();
        let (card, plain) = (message_id(&card), message_id(&plain));

        assert_eq!(
            emulator.press_button(&owner(), chat, card, "y:2"),
            Err(PressError::NoButton { message_id: card })
        );
        assert_eq!(
            emulator.press_button(&owner(), chat, plain, "y:1"),
            Err(PressError::NoButton { message_id: plain })
        );
        assert_eq!(
            emulator.press_button(&owner(), ChatSpec::private(7), card, "y:1"),
            Err(PressError::NoMessage {
                chat_id: 7,
                message_id: card
            })
        );
        assert!(emulator.pending_updates().is_empty());

        let (update_id, query_id) = emulator.press_button(&owner(), chat, card, "n:1").unwrap();
        let updates = bot.get_updates().await.unwrap();
        assert_eq!(updates.len(), 1);
        assert_eq!(updates[0].id.0 as i64, update_id);
        let UpdateKind::CallbackQuery(query) = &updates[0].kind else {
            panic!("not a callback query: {:?}", updates[0].kind);
        };
        assert_eq!(query.id.0, query_id);
        assert_eq!(query.data.as_deref(), Some("n:1"));
        assert_eq!(query.from.id.0 as i64, OWNER);
        bot.answer_callback_query(query.id.clone()).await.unwrap();
    }

    #[tokio::test]
    async fn file_bytes_are_kept_only_when_asked() {
        for keep in [false, true] {
            let mut config = Config::new(TOKEN);
            config.keep_file_bytes = keep;
            let emulator = Emulator::start_with(config).await.unwrap();
            let sent = bot(&emulator)
                .send_photo(
                    ChatId(OWNER),
                    InputFile::memory(vec![4, 5, 6, 7]).file_name("p.png"),
                )
                .await
                .unwrap();
            let file_id = sent.photo().unwrap().last().unwrap().file.id.0.clone();
            let kept = emulator.file_bytes(&file_id);
            if !keep {
                assert_eq!(kept, None);
                continue;
            }
            let (info, bytes) = kept.expect("kept");
            assert_eq!(&bytes[..], [4, 5, 6, 7]);
            assert_eq!((info.name.as_str(), info.bytes), ("p.png", 4));
            assert_eq!(emulator.file_bytes("no-such-file"), None);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn changed_since_wakes_on_a_change_and_otherwise_times_out() {
        let emulator = start().await;
        let seen = emulator.version();
        let waiter = tokio::spawn({
            let emulator = emulator.clone();
            async move { emulator.changed_since(seen, Duration::from_secs(60)).await }
        });
        tokio::task::yield_now().await;
        emulator.add_user(&owner());
        emulator.push_text(&owner(), ChatSpec::private(OWNER), "hello");
        let now = waiter.await.unwrap();
        assert!(now > seen, "{now} > {seen}");

        // Nothing changes: the wait ends at its timeout (on the paused clock) with the same version.
        let still = emulator.changed_since(now, Duration::from_secs(25)).await;
        assert_eq!(still, emulator.version());
        assert_eq!(still, now);
    }
}
