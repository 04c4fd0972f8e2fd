//! What users do, as updates for the bot: texts, replies, forwards, edits and button presses,
//! built, queued for `getUpdates`, and the answers scripted for the bot's next calls.

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::chat::{unix_now, ChannelSpec, ChatMessage, ChatSpec, ContentKind, FileInfo, UserSpec};
use crate::params::as_i64;
use crate::script::Scripted;
use crate::server::Emulator;
use crate::state::CallbackQueryState;

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

impl Emulator {
    /// Queues an answer for the next call to `method` (any case), after those already queued.
    pub fn script(&self, method: &str, answer: Scripted) {
        self.state()
            .scripts
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(answer);
        self.signal();
    }

    /// Answers every call to `method` (any case) with `answer` from now until
    /// [`Emulator::end_outage`]: an outage that lasts however many retries the bot makes (a
    /// token revoked, another poller), where [`Emulator::script`] answers a counted few. It wins
    /// over queued scripts, which wait until it ends.
    pub fn outage(&self, method: &str, answer: Scripted) {
        self.state()
            .outages
            .insert(method.to_ascii_lowercase(), answer);
        self.signal();
    }

    /// Ends the outage of `method` (any case): its calls are answered as before.
    pub fn end_outage(&self, method: &str) {
        self.state().outages.remove(&method.to_ascii_lowercase());
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

    /// Sets a webhook as `setWebhook` does (an empty `url` removes it): from then on
    /// `getUpdates` answers 409 until `deleteWebhook`, as Telegram does.
    pub fn set_webhook(&self, url: &str) {
        self.state().webhook = url.to_owned();
        self.signal();
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
    /// ([`Config::keep_file_bytes`](crate::Config::keep_file_bytes)).
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
}

impl Emulator {
    /// Adds (or replaces) a channel the bot may be asked to post to.
    pub fn add_channel(&self, channel: ChannelSpec) {
        self.state().channels.insert(channel.id, channel);
    }
}
