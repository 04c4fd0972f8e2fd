//! The emulator's state behind its one lock: calls, scripts, queued updates, chats, and how a
//! stored message renders as the Bot API's `Message` object.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde_json::{json, Map, Value};

use crate::chat::{
    utf16_len, CallbackAnswer, ChannelSpec, ChatMessage, ContentKind, FileInfo, UserSpec,
};
use crate::config::Config;
use crate::script::{Call, Scripted};

/// One chat: its messages, and the last message id given out in it.
#[derive(Debug, Default)]
pub(crate) struct ChatState {
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) last_message_id: i64,
}

/// A callback query sent to the bot, which it may answer once.
#[derive(Debug)]
pub(crate) struct CallbackQueryState {
    pub(crate) answered: bool,
}

/// Everything the emulator keeps, behind the one lock in [`crate::server::Inner`].
#[derive(Debug)]
pub(crate) struct EmuState {
    pub(crate) calls: Vec<Call>,
    pub(crate) scripts: HashMap<String, VecDeque<Scripted>>,
    /// Standing answers by method (lower case), given to every call until the outage ends.
    pub(crate) outages: HashMap<String, Scripted>,
    /// Updates not yet confirmed by an offset, in push order.
    pub(crate) updates: VecDeque<Value>,
    pub(crate) next_update_id: i64,
    /// Bumped by every `getUpdates`; a waiting poll that sees it change was superseded.
    pub(crate) poll_generation: u64,
    pub(crate) chats: BTreeMap<i64, ChatState>,
    pub(crate) users: HashMap<i64, UserSpec>,
    pub(crate) callback_queries: HashMap<String, CallbackQueryState>,
    pub(crate) last_callback_query: u64,
    pub(crate) callback_answers: Vec<CallbackAnswer>,
    /// By (scope as canonical JSON, language code).
    pub(crate) commands: BTreeMap<(String, String), Value>,
    pub(crate) files: HashMap<String, FileInfo>,
    /// Uploaded bytes by file id, when `Config::keep_file_bytes` is on.
    pub(crate) file_bytes: HashMap<String, axum::body::Bytes>,
    /// The webhook `setWebhook` set (empty: none), which makes `getUpdates` fail.
    pub(crate) webhook: String,
    /// The channels tests added, by id.
    pub(crate) channels: BTreeMap<i64, ChannelSpec>,
}

impl EmuState {
    pub(crate) fn new() -> EmuState {
        EmuState {
            calls: Vec::new(),
            scripts: HashMap::new(),
            outages: HashMap::new(),
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
            webhook: String::new(),
            channels: BTreeMap::new(),
        }
    }

    pub(crate) fn add_message(&mut self, mut message: ChatMessage) -> ChatMessage {
        let chat = self.chats.entry(message.chat_id).or_default();
        chat.last_message_id += 1;
        message.message_id = chat.last_message_id;
        chat.messages.push(message.clone());
        message
    }

    pub(crate) fn find(&self, chat_id: i64, message_id: i64) -> Option<&ChatMessage> {
        self.chats
            .get(&chat_id)?
            .messages
            .iter()
            .find(|m| m.message_id == message_id)
    }

    pub(crate) fn find_mut(&mut self, chat_id: i64, message_id: i64) -> Option<&mut ChatMessage> {
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
        if let Some(channel) = self.channels.get(&chat_id) {
            return channel.to_json();
        }
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
    pub(crate) fn render(&self, config: &Config, m: &ChatMessage) -> Value {
        let mut o = Map::new();
        o.insert("message_id".into(), json!(m.message_id));
        if let Some(channel) = self.channels.get(&m.chat_id) {
            // A channel post comes from the channel, not from a user.
            o.insert("sender_chat".into(), channel.to_json());
        } else {
            let from = if m.outgoing {
                bot_user_json(config)
            } else {
                self.user_json(m.from_id)
            };
            o.insert("from".into(), from);
        }
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
    pub(crate) fn inaccessible_message(&self, chat_id: i64, message_id: i64) -> Value {
        json!({"chat": self.chat_json(chat_id), "message_id": message_id, "date": 0})
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

pub(crate) fn bot_user_json(config: &Config) -> Value {
    json!({
        "id": config.bot_id,
        "is_bot": true,
        "first_name": config.bot_first_name,
        "username": config.bot_username,
    })
}
