//! The chat as tests see it: messages with their history and keyboards, the users and chats
//! that updates come from, the channels the bot posts to, and answered callback queries.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
    pub(crate) fn blank(
        chat_id: i64,
        from_id: i64,
        outgoing: bool,
        kind: ContentKind,
    ) -> ChatMessage {
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
    pub(crate) fn keep_revision(&mut self, by: &str, now: i64) {
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

    pub(crate) fn to_json(&self) -> Value {
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

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

pub(crate) fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// A channel, and whether the bot may post in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelSpec {
    /// Negative, like `-1001234567890`.
    pub id: i64,
    /// Without the `@`; `None` for a private channel.
    pub username: Option<String>,
    pub title: String,
    pub bot_is_admin: bool,
}

impl ChannelSpec {
    /// A public channel `@username` where the bot is an administrator.
    pub fn public(id: i64, username: &str) -> ChannelSpec {
        ChannelSpec {
            id,
            username: Some(username.to_owned()),
            title: username.to_owned(),
            bot_is_admin: true,
        }
    }

    /// A private channel (no username) where the bot is an administrator.
    pub fn private(id: i64) -> ChannelSpec {
        ChannelSpec {
            id,
            username: None,
            title: "Private channel".to_owned(),
            bot_is_admin: true,
        }
    }

    /// The same channel, where the bot is not an administrator.
    pub fn without_admin(mut self) -> ChannelSpec {
        self.bot_is_admin = false;
        self
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut chat = json!({"id": self.id, "type": "channel", "title": self.title});
        if let Some(username) = &self.username {
            chat["username"] = json!(username);
        }
        chat
    }
}
