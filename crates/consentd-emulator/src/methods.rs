//! The Bot API methods: `getUpdates` and its long poll, then one function per method family
//! with Telegram's checks in Telegram's order.

use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use crate::chat::{unix_now, utf16_len, CallbackAnswer, ChatMessage, ContentKind, FileInfo};
use crate::config::Config;
use crate::description;
use crate::description::{bad, ApiFail};
use crate::params::{as_bool, as_i64, str_param, update_id, Params, Upload};
use crate::server::Emulator;
use crate::state::{bot_user_json, EmuState};

const TEXT_LIMIT: usize = 4096;
const CAPTION_LIMIT: usize = 1024;
const CALLBACK_DATA_LIMIT: usize = 64;

impl Emulator {
    /// `getUpdates`: confirms by offset, then answers what is queued or waits for a push.
    pub(crate) async fn get_updates(&self, params: &Map<String, Value>) -> Result<Value, ApiFail> {
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
            if !state.webhook.is_empty() {
                return Err(ApiFail {
                    code: 409,
                    description: description::WEBHOOK_ACTIVE.to_owned(),
                    retry_after: None,
                });
            }
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
}

impl Emulator {
    /// Every method but `getUpdates`.
    pub(crate) fn dispatch(&self, method: &str, params: &Params) -> Result<Value, ApiFail> {
        let config = &self.inner.config;
        let mut state = self.state();
        let state = &mut *state;
        let p = &params.values;
        match method {
            "getme" => Ok(me_json(config)),
            "sendmessage" => state.send_message(config, p),
            "sendphoto" => state.send_file(config, params, ContentKind::Photo, "photo"),
            "senddocument" => state.send_file(config, params, ContentKind::Document, "document"),
            "editmessagetext" => state.edit_message(config, p, Edit::Text),
            "editmessagereplymarkup" => state.edit_message(config, p, Edit::ReplyMarkup),
            "deletemessage" => state.delete_message(p),
            "answercallbackquery" => state.answer_callback_query(p),
            "setmycommands" => state.set_my_commands(p),
            "getmycommands" => Ok(state
                .commands
                .get(&commands_key(p))
                .cloned()
                .unwrap_or_else(|| json!([]))),
            "deletewebhook" => {
                if p.get("drop_pending_updates").and_then(as_bool) == Some(true) {
                    state.updates.clear();
                }
                state.webhook.clear();
                Ok(json!(true))
            }
            "setwebhook" => {
                state.webhook = str_param(p, "url").unwrap_or_default();
                Ok(json!(true))
            }
            "getwebhookinfo" => Ok(json!({
                "url": state.webhook,
                "has_custom_certificate": false,
                "pending_update_count": if state.webhook.is_empty() { 0 } else { state.updates.len() },
            })),
            _ => Err(ApiFail {
                code: 404,
                description: description::NOT_FOUND.to_owned(),
                retry_after: None,
            }),
        }
    }
}

/// The two edits of a message's content: its text (and keyboard), or its keyboard alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    Text,
    ReplyMarkup,
}

impl Edit {
    /// The method, as the message's history names what replaced a version.
    fn method(self) -> &'static str {
        match self {
            Edit::Text => "editmessagetext",
            Edit::ReplyMarkup => "editmessagereplymarkup",
        }
    }
}

impl EmuState {
    /// `sendMessage`.
    fn send_message(&mut self, config: &Config, p: &Map<String, Value>) -> Result<Value, ApiFail> {
        let chat_id = self.send_target(p)?;
        let text = str_param(p, "text").unwrap_or_default();
        check_text(&text, description::TEXT_TOO_LONG)?;
        let entities = entities_param(p, &text)?;
        let markup = inline_markup(p)?;
        let mut message = ChatMessage::blank(chat_id, config.bot_id, true, ContentKind::Text);
        message.text = Some(text);
        message.entities = entities;
        Ok(self.post(config, p, message, markup))
    }

    /// `sendPhoto` and `sendDocument`: the file in parameter `field`, uploaded or by `file_id`.
    fn send_file(
        &mut self,
        config: &Config,
        params: &Params,
        kind: ContentKind,
        field: &str,
    ) -> Result<Value, ApiFail> {
        let p = &params.values;
        let chat_id = self.send_target(p)?;
        let caption = str_param(p, "caption").filter(|c| !c.is_empty());
        if caption
            .as_deref()
            .is_some_and(|c| utf16_len(c) > CAPTION_LIMIT)
        {
            return Err(bad(description::CAPTION_TOO_LONG));
        }
        let markup = inline_markup(p)?;
        let file = self.sent_file(config, params, kind, field)?;
        self.files.insert(file.file_id.clone(), file.clone());
        let mut message = ChatMessage::blank(chat_id, config.bot_id, true, kind);
        message.caption = caption;
        message.file = Some(file);
        Ok(self.post(config, p, message, markup))
    }

    /// The end of every send: the options it took, the message stored under the chat's next id,
    /// and the `Message` object answered.
    fn post(
        &mut self,
        config: &Config,
        p: &Map<String, Value>,
        mut message: ChatMessage,
        markup: Option<Value>,
    ) -> Value {
        fill_send_options(&mut message, p, markup);
        let message = self.add_message(message);
        self.render(config, &message)
    }

    /// The file a send names: a new upload (its bytes kept when asked to), or one sent before.
    fn sent_file(
        &mut self,
        config: &Config,
        params: &Params,
        kind: ContentKind,
        field: &str,
    ) -> Result<FileInfo, ApiFail> {
        match (params.uploads.get(field), params.values.get(field)) {
            (Some(upload), _) => {
                let file = file_info(kind, upload);
                if config.keep_file_bytes {
                    self.file_bytes
                        .insert(file.file_id.clone(), upload.data.clone());
                }
                Ok(file)
            }
            (None, Some(Value::String(file_id))) => self
                .files
                .get(file_id)
                .cloned()
                .ok_or_else(|| bad(description::WRONG_FILE)),
            _ => Err(bad(&format!(
                "Bad Request: there is no {field} in the request"
            ))),
        }
    }

    /// `editMessageText` and `editMessageReplyMarkup`, with Telegram's checks in its order.
    fn edit_message(
        &mut self,
        config: &Config,
        p: &Map<String, Value>,
        edit: Edit,
    ) -> Result<Value, ApiFail> {
        let (chat_id, message_id) = target_message(p)?;
        let new_text = match edit {
            Edit::Text => {
                let text = str_param(p, "text").unwrap_or_default();
                check_text(&text, description::EDITED_TEXT_TOO_LONG)?;
                Some(text)
            }
            Edit::ReplyMarkup => None,
        };
        let new_entities = match &new_text {
            Some(text) => entities_param(p, text)?,
            None => None,
        };
        // No reply_markup in an edit means no keyboard afterwards, as in Telegram.
        let markup = inline_markup(p)?;
        let message = self
            .find_mut(chat_id, message_id)
            .filter(|m| !m.deleted)
            .ok_or_else(|| bad(description::MESSAGE_TO_EDIT_NOT_FOUND))?;
        if !message.outgoing {
            return Err(bad(description::MESSAGE_CANT_BE_EDITED));
        }
        if new_text.is_some() && message.kind != ContentKind::Text {
            return Err(bad(description::NO_TEXT_TO_EDIT));
        }
        let text_same =
            new_text.is_none() || (new_text == message.text && new_entities == message.entities);
        if text_same && markup == message.reply_markup {
            return Err(bad(description::NOT_MODIFIED));
        }
        let now = unix_now();
        message.keep_revision(edit.method(), now);
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
        Ok(self.render(config, &message))
    }

    /// `deleteMessage`: the message stays in the chat, flagged.
    fn delete_message(&mut self, p: &Map<String, Value>) -> Result<Value, ApiFail> {
        let (chat_id, message_id) = target_message(p)?;
        let message = self
            .find_mut(chat_id, message_id)
            .filter(|m| !m.deleted)
            .ok_or_else(|| bad(description::MESSAGE_TO_DELETE_NOT_FOUND))?;
        message.deleted = true;
        Ok(json!(true))
    }

    /// `answerCallbackQuery`: once per query Telegram sent.
    fn answer_callback_query(&mut self, p: &Map<String, Value>) -> Result<Value, ApiFail> {
        let query_id = p
            .get("callback_query_id")
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        match self.callback_queries.get_mut(&query_id) {
            Some(query) if !query.answered => query.answered = true,
            _ => return Err(bad(description::QUERY_TOO_OLD)),
        }
        self.callback_answers.push(CallbackAnswer {
            callback_query_id: query_id,
            text: str_param(p, "text"),
            show_alert: p.get("show_alert").and_then(as_bool).unwrap_or(false),
            url: str_param(p, "url"),
            cache_time: p.get("cache_time").and_then(as_i64),
            at: SystemTime::now(),
        });
        Ok(json!(true))
    }

    /// `setMyCommands`, kept by scope and language for `getMyCommands`.
    fn set_my_commands(&mut self, p: &Map<String, Value>) -> Result<Value, ApiFail> {
        let commands = p
            .get("commands")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("Bad Request: parameter \"commands\" is required"))?;
        if !commands.iter().all(command_is_valid) {
            return Err(bad(description::BOT_COMMAND_INVALID));
        }
        self.commands
            .insert(commands_key(p), Value::Array(commands.clone()));
        Ok(json!(true))
    }
}

/// Telegram's rule for a bot command: a name of 1–32 lower-case letters, digits and `_`, and a
/// description of 1–256 characters.
fn command_is_valid(command: &Value) -> bool {
    let name = command["command"].as_str().unwrap_or_default();
    let description = command["description"].as_str().unwrap_or_default();
    let name_ok = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    name_ok && (1..=256).contains(&description.chars().count())
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

pub(crate) fn chat_id_param(params: &Map<String, Value>) -> Result<i64, ApiFail> {
    let value = params
        .get("chat_id")
        .ok_or_else(|| bad(description::CHAT_ID_EMPTY))?;
    // "@channelname" chat ids name channels: `EmuState::send_target` reads those for a send.
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

impl EmuState {
    /// The chat a send names in `chat_id`: a number, or `@username` of a known channel; a
    /// channel only where the bot is an administrator.
    pub(crate) fn send_target(&self, params: &Map<String, Value>) -> Result<i64, ApiFail> {
        let id = match params.get("chat_id") {
            Some(Value::String(name)) if name.starts_with('@') => self
                .channels
                .values()
                .find(|c| {
                    c.username
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(&name[1..]))
                })
                .map(|c| c.id)
                .ok_or_else(|| bad(description::CHAT_NOT_FOUND))?,
            _ => chat_id_param(params)?,
        };
        match self.channels.get(&id) {
            Some(channel) if !channel.bot_is_admin => Err(bad(description::NEED_ADMIN_RIGHTS)),
            _ => Ok(id),
        }
    }
}
