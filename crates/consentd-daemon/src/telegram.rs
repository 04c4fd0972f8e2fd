//! Telegram at one edge: the only module that knows teloxide's types.
//!
//! It sends what the outbox asks for and reads updates by long polling, turning them into
//! [`Incoming`] values the consent loop decides on. Errors become [`SendError`]: retry later
//! (network, 5xx, 429 with its `retry_after`), never (a 4xx), or wait for a person to fix the
//! bot (409: another instance is polling the same bot or a webhook is set; 401: the token was
//! revoked; 403 on the owner's chat: they blocked it), retrying meanwhile
//! (`crate::unreachable`).

use std::time::Duration;

use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageTextSetters, GetUpdatesSetters, SendDocumentSetters,
    SendMessageSetters, SetMyCommandsSetters,
};
use teloxide::prelude::Requester;
use teloxide::types::{
    AllowedUpdate, BotCommand, CallbackQueryId, ChatId, InlineKeyboardButton, InlineKeyboardMarkup,
    InputFile, MaybeInaccessibleMessage, MessageEntity, MessageEntityKind, MessageId, UpdateKind,
};
use teloxide::{ApiError, Bot, RequestError};

use consentd_core::styled::{ButtonSpec, Style, Styled};

mod posts;

pub(crate) use posts::{recipient, Posted};

/// How long one getUpdates call waits for updates, in seconds; well under the HTTP client's
/// 17 s timeout, so a long poll is never cut by the client.
pub(crate) const POLL_TIMEOUT_SECS: u32 = 10;
/// The longest a 429's `retry_after` is honoured; beyond it we retry sooner rather than stall.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Why a request did not go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("rate limited for {0:?}")]
    RetryAfter(Duration),
    /// The network: Telegram's servers could not be reached, or the answer did not arrive.
    #[error("transient: {0}")]
    Transient(String),
    /// Telegram answered with a server error (5xx) or another answer worth a retry.
    #[error("Telegram's servers failed: {0}")]
    ServerError(String),
    #[error("refused by Telegram: {0}")]
    Permanent(String),
    /// 403: the chat refuses the bot. For the owner's chat it means they blocked it, an episode
    /// the sender waits out (`crate::unreachable`); for anyone else the row is dropped.
    #[error("forbidden by Telegram: {0}")]
    Forbidden(String),
    #[error(
        "another consentd (or another program) is polling this bot: Telegram answered 409 Conflict"
    )]
    Conflict,
    /// getUpdates answered 409 because a webhook is set: Telegram delivers to one or the other.
    #[error("a webhook is set for this bot, so getUpdates answers 409 Conflict")]
    WebhookSet,
    /// 401: Telegram no longer knows the token (revoked, or never right).
    #[error("Telegram answered 401 Unauthorized: the bot token was revoked or is wrong")]
    Unauthorized,
    /// An answer teloxide could not read: cut off in transit, or (for getUpdates) a batch holding
    /// an update it cannot parse, which fails the whole batch. Retried like `Transient`; the
    /// poller also probes for a poison update (see [`Telegram::probe`]).
    #[error("unreadable answer: {0}")]
    Malformed(String),
}

/// What a getUpdates of one update found at an offset whose batch could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The first pending update reads fine (or none is pending): the batch's failure lies later
    /// in it, or was in transit. Handle these and poll again.
    Read(Vec<Incoming>),
    /// The first pending update is complete JSON that teloxide cannot read, and it has this id.
    /// Nothing in it can be trusted, so it can only be skipped, never acted on.
    Unreadable { update_id: i64, error: String },
}

/// The `update_id` of the first update in a getUpdates answer, when the answer is complete
/// (balanced) JSON; `None` for a body cut off in transit, which is worth a retry rather than a
/// skip. It scans without recursion because one poison is nesting deeper than serde_json's
/// recursion limit, which a second parse would trip over too.
pub(crate) fn first_update_id(raw: &str) -> Option<i64> {
    let bytes = raw.as_bytes();
    let mut depth = 0usize;
    let mut id = None;
    let mut first_done = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if i >= bytes.len() {
                    return None;
                }
                // The answer is `{"ok":true,"result":[{"update_id":N,…},…]}`: the first
                // element's own keys are at depth 3.
                if depth == 3 && !first_done && id.is_none() && &raw[start..i] == "update_id" {
                    id = number_after_colon(&raw[i + 1..]);
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                first_done |= depth == 2;
            }
            _ => {}
        }
        i += 1;
    }
    // Ids beyond i32 cannot be sent back as an offset (teloxide's type): not skippable.
    id.filter(|_| depth == 0)
        .filter(|id| (0..i64::from(i32::MAX)).contains(id))
}

/// `: 123,` or `: 123}` → 123; anything else (a string, a fraction) → `None`.
fn number_after_colon(rest: &str) -> Option<i64> {
    let value = rest.trim_start().strip_prefix(':')?.trim_start();
    let digits = &value[..value.bytes().take_while(u8::is_ascii_digit).count()];
    let after = value[digits.len()..].trim_start();
    (after.starts_with(',') || after.starts_with('}'))
        .then(|| digits.parse().ok())
        .flatten()
}

fn classify(error: RequestError) -> SendError {
    match error {
        RequestError::RetryAfter(seconds) => {
            SendError::RetryAfter(seconds.duration().min(MAX_RETRY_AFTER))
        }
        RequestError::Api(ApiError::TerminatedByOtherGetUpdates) => SendError::Conflict,
        RequestError::Api(ApiError::CantGetUpdates) => SendError::WebhookSet,
        // teloxide reads Telegram's 404 "Not Found" (a token of the wrong shape) as this too.
        RequestError::Api(ApiError::InvalidToken) => SendError::Unauthorized,
        // teloxide knows a 409 only by its exact description; Telegram's own words are longer
        // ("Conflict: can't use getUpdates method while webhook is active; use deleteWebhook
        // …"), so they arrive unknown: a webhook set and another poller are told apart here.
        RequestError::Api(ApiError::Unknown(description))
            if description.starts_with("Conflict") =>
        {
            if description.contains("webhook") {
                SendError::WebhookSet
            } else {
                SendError::Conflict
            }
        }
        RequestError::Api(ApiError::Unknown(description)) => {
            // teloxide keeps no status code: 5xx arrive as unknown descriptions, 4xx start with
            // their class. Unknown 4xx are final; anything else may pass on a retry.
            let final_class = ["Bad Request", "Unauthorized", "Not Found"]
                .iter()
                .any(|class| description.starts_with(class));
            if description.starts_with("Forbidden") {
                SendError::Forbidden(description)
            } else if final_class {
                SendError::Permanent(description)
            } else {
                SendError::ServerError(description)
            }
        }
        // teloxide names some 403s (the bot blocked, a user deactivated): their text says so.
        RequestError::Api(api) if api.to_string().starts_with("Forbidden") => {
            SendError::Forbidden(api.to_string())
        }
        RequestError::Api(api) => SendError::Permanent(api.to_string()),
        RequestError::MigrateToChatId(_) => SendError::Permanent(error.to_string()),
        RequestError::InvalidJson { .. } => SendError::Malformed(error.to_string()),
        RequestError::Network(_) | RequestError::Io(_) => SendError::Transient(error.to_string()),
    }
}

/// What an [`Incoming::Other`] says when the update could not be read: skipped with a warning.
pub(crate) const UNREADABLE: &str = "an update teloxide cannot read";

/// Someone in Telegram.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Person {
    pub id: i64,
    pub name: String,
    pub language_code: Option<String>,
}

/// Where a message or press happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChatRef {
    pub id: i64,
    pub private: bool,
}

/// A button press, as the consent loop judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Press {
    pub query_id: String,
    pub from: Person,
    pub chat: Option<ChatRef>,
    pub message_id: Option<i64>,
    /// What the pressed message shows now ([`fingerprint`]); `None` when Telegram no longer
    /// shows the bot the message.
    pub message_shows: Option<String>,
    pub data: Option<String>,
}

/// What the owner sees of a message, as one hash: its text, its entities (the quotation, the
/// values) and its keyboard (each button's label and what it does), as Telegram keeps them.
/// Computed the same way from the answer to a send and from a press's `callback_query.message`,
/// so a press counts only while the message shows exactly what was drawn: another text, a
/// quotation taken away, or a button relabelled (the Yes's data under a "No") all differ.
pub(crate) fn fingerprint(message: &teloxide::types::Message) -> String {
    let entities: Vec<serde_json::Value> = message
        .entities()
        .unwrap_or_default()
        .iter()
        .map(|entity| serde_json::to_value(entity).unwrap_or_default())
        .collect();
    let keyboard: Vec<Vec<serde_json::Value>> = message
        .reply_markup()
        .map(|markup| {
            markup
                .inline_keyboard
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|button| serde_json::to_value(button).unwrap_or_default())
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default();
    let shown = serde_json::json!({
        "text": message.text().unwrap_or_default(),
        "entities": entities,
        "keyboard": keyboard,
    });
    consentd_core::digest::Sha256Hash::of(shown.to_string().as_bytes()).to_hex()
}

/// An update, reduced to what the consent loop looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// A new text message.
    Text {
        update_id: i64,
        from: Person,
        chat: ChatRef,
        text: String,
        /// Forwarded from elsewhere: never a command.
        forwarded: bool,
        /// The id of the message (in the same chat) this one replies to, if it is a reply.
        reply_to: Option<i64>,
    },
    /// A button press.
    Press { update_id: i64, press: Press },
    /// Anything else (an edited message, a photo, a channel post): it only moves the offset.
    Other { update_id: i64, what: &'static str },
}

impl Incoming {
    pub(crate) fn update_id(&self) -> i64 {
        match self {
            Incoming::Text { update_id, .. }
            | Incoming::Press { update_id, .. }
            | Incoming::Other { update_id, .. } => *update_id,
        }
    }
}

fn person(user: &teloxide::types::User) -> Person {
    let mut name = user.first_name.clone();
    if let Some(last) = &user.last_name {
        name.push(' ');
        name.push_str(last);
    }
    Person {
        id: user.id.0 as i64,
        name,
        language_code: user.language_code.clone(),
    }
}

fn convert(update: teloxide::types::Update) -> Incoming {
    let update_id = i64::from(update.id.0);
    match update.kind {
        UpdateKind::Message(message) => match (message.from.as_ref(), message.text()) {
            (Some(from), Some(text)) => Incoming::Text {
                update_id,
                from: person(from),
                chat: ChatRef {
                    id: message.chat.id.0,
                    private: message.chat.is_private(),
                },
                text: text.to_owned(),
                forwarded: message.forward_origin().is_some(),
                reply_to: message
                    .reply_to_message()
                    .map(|replied| i64::from(replied.id.0)),
            },
            _ => Incoming::Other {
                update_id,
                what: "message without text",
            },
        },
        // teloxide reads a kind it cannot parse as `Error` and keeps the batch: skipped, and
        // said so (see `UNREADABLE`), never acted on.
        UpdateKind::Error(_) => Incoming::Other {
            update_id,
            what: UNREADABLE,
        },
        UpdateKind::EditedMessage(_) => Incoming::Other {
            update_id,
            what: "edited message",
        },
        UpdateKind::CallbackQuery(query) => Incoming::Press {
            update_id,
            press: press(&query),
        },
        _ => Incoming::Other {
            update_id,
            what: "another kind of update",
        },
    }
}

fn press(query: &teloxide::types::CallbackQuery) -> Press {
    Press {
        query_id: query.id.0.clone(),
        from: person(&query.from),
        chat: query.message.as_ref().map(|message| ChatRef {
            id: message.chat().id.0,
            private: message.chat().is_private(),
        }),
        message_id: query
            .message
            .as_ref()
            .map(|message| i64::from(message.id().0)),
        message_shows: match &query.message {
            Some(MaybeInaccessibleMessage::Regular(message)) => Some(fingerprint(message)),
            _ => None,
        },
        data: query.data.clone(),
    }
}

/// A message sent or edited, as Telegram returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sent {
    pub message_id: i64,
    /// What it shows ([`fingerprint`]); `None` for an edit that changed nothing.
    pub shows: Option<String>,
}

/// The spans as Telegram message entities.
fn entities(styled: &Styled) -> Vec<MessageEntity> {
    styled
        .spans
        .iter()
        .map(|span| {
            let kind = match span.style {
                Style::Quote => MessageEntityKind::Blockquote,
                Style::Value => MessageEntityKind::Code,
            };
            MessageEntity::new(kind, span.offset, span.length)
        })
        .collect()
}

/// The buttons as an inline keyboard: a new row wherever a button's row changes.
fn keyboard(buttons: &[ButtonSpec]) -> InlineKeyboardMarkup {
    let rows = buttons.chunk_by(|a, b| a.row == b.row).map(|row| {
        row.iter()
            .map(|button| InlineKeyboardButton::callback(button.label.clone(), button.data.clone()))
            .collect::<Vec<_>>()
    });
    InlineKeyboardMarkup::new(rows)
}

/// The bot, pointed at Telegram or at a local Bot API server.
#[derive(Clone)]
pub struct Telegram {
    bot: Bot,
}

/// Written by hand: teloxide's `Bot` prints its token in `Debug`.
impl std::fmt::Debug for Telegram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telegram")
            .field("api_url", &self.bot.api_url().as_str())
            .finish_non_exhaustive()
    }
}

impl Telegram {
    /// `api_url` is the config's `telegram.api_url`. The token is held by teloxide and never
    /// printed (see the `Debug` impl).
    pub fn new(token: &str, api_url: &str) -> Result<Telegram, String> {
        let url = reqwest_url(api_url)?;
        Ok(Telegram {
            bot: Bot::new(token).set_api_url(url),
        })
    }

    /// The bot's username, for the pairing link.
    pub async fn username(&self) -> Result<String, SendError> {
        let me = self.bot.get_me().await.map_err(classify)?;
        Ok(me.username.clone().unwrap_or_default())
    }

    /// The webhook Telegram delivers the bot's updates to, if one is set (`getWebhookInfo`):
    /// while one is, `getUpdates` fails, so `doctor` says so.
    pub async fn webhook_url(&self) -> Result<Option<String>, SendError> {
        let info = self.bot.get_webhook_info().await.map_err(classify)?;
        Ok(info.url.map(|url| url.to_string()))
    }

    /// One long poll from `offset`.
    pub(crate) async fn updates(
        &self,
        offset: i64,
        timeout_secs: u32,
    ) -> Result<Vec<Incoming>, SendError> {
        self.get_updates(offset, timeout_secs, None)
            .await
            .map_err(classify)
    }

    /// After a batch from `offset` could not be read: fetches only its first update, without
    /// waiting, to tell an answer cut off in transit (retry) from a poison update that would
    /// fail every batch at this offset forever (skip it, and only it).
    pub(crate) async fn probe(&self, offset: i64) -> Result<Probe, SendError> {
        match self.get_updates(offset, 0, Some(1)).await {
            Ok(updates) => Ok(Probe::Read(updates)),
            Err(RequestError::InvalidJson { source, raw }) => match first_update_id(&raw) {
                Some(update_id) if update_id >= offset => Ok(Probe::Unreadable {
                    update_id,
                    error: source.to_string(),
                }),
                _ => Err(SendError::Malformed(source.to_string())),
            },
            Err(error) => Err(classify(error)),
        }
    }

    async fn get_updates(
        &self,
        offset: i64,
        timeout_secs: u32,
        limit: Option<u8>,
    ) -> Result<Vec<Incoming>, RequestError> {
        let mut request = self
            .bot
            .get_updates()
            .offset(offset as i32)
            .timeout(timeout_secs)
            .allowed_updates([
                AllowedUpdate::Message,
                AllowedUpdate::EditedMessage,
                AllowedUpdate::CallbackQuery,
            ]);
        if let Some(limit) = limit {
            request = request.limit(limit);
        }
        let updates = request.await?;
        Ok(updates.into_iter().map(convert).collect())
    }

    /// Sets the bot's command menu, for clients in `language_code` (or for every other client
    /// when `None`).
    pub(crate) async fn set_commands(
        &self,
        language_code: Option<&str>,
        commands: &[(&str, String)],
    ) -> Result<(), SendError> {
        let commands: Vec<BotCommand> = commands
            .iter()
            .map(|(name, description)| BotCommand::new(*name, description.clone()))
            .collect();
        let mut request = self.bot.set_my_commands(commands);
        if let Some(code) = language_code {
            request = request.language_code(code);
        }
        request.await.map_err(classify)?;
        Ok(())
    }

    /// Sends a plain-text message (no parse mode: its spans go as entities) with an optional
    /// row of buttons.
    pub(crate) async fn send_text(
        &self,
        chat: i64,
        text: &Styled,
        buttons: &[ButtonSpec],
        silent: bool,
    ) -> Result<Sent, SendError> {
        let mut request = self
            .bot
            .send_message(ChatId(chat), &text.text)
            .link_preview_options(no_link_preview())
            .disable_notification(silent);
        if !text.spans.is_empty() {
            request = request.entities(entities(text));
        }
        if !buttons.is_empty() {
            request = request.reply_markup(keyboard(buttons));
        }
        let message = request.await.map_err(classify)?;
        Ok(Sent {
            message_id: i64::from(message.id.0),
            shows: Some(fingerprint(&message)),
        })
    }

    /// Sends an attachment as a document: Telegram keeps a document's bytes exactly as sent,
    /// while it re-encodes a photo (scaled down, transparency flattened), and the owner must be
    /// able to see the very bytes that run.
    pub(crate) async fn send_file(
        &self,
        chat: i64,
        name: &str,
        bytes: Vec<u8>,
        caption: &Styled,
        silent: bool,
    ) -> Result<i64, SendError> {
        let file = InputFile::memory(bytes).file_name(name.to_owned());
        let message = self
            .bot
            .send_document(ChatId(chat), file)
            .caption(&caption.text)
            .caption_entities(entities(caption))
            .disable_notification(silent)
            .await
            .map_err(classify)?;
        Ok(i64::from(message.id.0))
    }

    /// Edits a message's text and buttons (none removes them). An edit that changes nothing is
    /// done, not an error.
    pub(crate) async fn edit_text(
        &self,
        chat: i64,
        message_id: i64,
        text: &Styled,
        buttons: &[ButtonSpec],
    ) -> Result<Sent, SendError> {
        let mut request = self
            .bot
            .edit_message_text(ChatId(chat), MessageId(message_id as i32), &text.text)
            .link_preview_options(no_link_preview())
            .reply_markup(keyboard(buttons));
        if !text.spans.is_empty() {
            request = request.entities(entities(text));
        }
        match request.await {
            Ok(message) => Ok(Sent {
                message_id,
                shows: Some(fingerprint(&message)),
            }),
            Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(Sent {
                message_id,
                shows: None,
            }),
            Err(error) => Err(classify(error)),
        }
    }

    /// Takes every button away from a message, leaving its text as it is. A message that has
    /// none already is done, not an error.
    pub(crate) async fn remove_buttons(&self, chat: i64, message_id: i64) -> Result<(), SendError> {
        let request = self
            .bot
            .edit_message_reply_markup(ChatId(chat), MessageId(message_id as i32));
        match request.await {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(error) => Err(classify(error)),
        }
    }

    /// Answers a press at once (Telegram times queries out within seconds). A query that is
    /// already too old is not worth retrying.
    pub(crate) async fn answer_press(
        &self,
        query_id: &str,
        text: Option<&str>,
    ) -> Result<(), SendError> {
        let mut request = self
            .bot
            .answer_callback_query(CallbackQueryId(query_id.to_owned()));
        if let Some(text) = text {
            request = request.text(text);
        }
        match request.await {
            Ok(_) | Err(RequestError::Api(ApiError::InvalidQueryId)) => Ok(()),
            // teloxide matches only the lower-case "query id is invalid"; Telegram writes "ID".
            Err(RequestError::Api(ApiError::Unknown(description)))
                if description.contains("query is too old") =>
            {
                Ok(())
            }
            Err(error) => Err(classify(error)),
        }
    }
}

fn reqwest_url(api_url: &str) -> Result<reqwest::Url, String> {
    api_url
        .parse()
        .map_err(|error| format!("telegram.api_url {api_url:?}: {error}"))
}

/// No message of the daemon's carries a link preview. A URL in an action's text would otherwise
/// get one in the card itself, between the quoted text and its buttons: a title, a description
/// and a picture written by the page's owner (the agent, when it owns the page), which can read
/// as the card's own lines; and Telegram fetches the page as the card is sent, telling its owner
/// that the card is being shown.
fn no_link_preview() -> teloxide::types::LinkPreviewOptions {
    teloxide::types::LinkPreviewOptions {
        is_disabled: true,
        url: None,
        prefer_small_media: false,
        prefer_large_media: false,
        show_above_text: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let telegram = Telegram::new("123456:SECRET-token", "http://127.0.0.1:9").unwrap();
        let printed = format!("{telegram:?}");
        assert!(!printed.contains("SECRET"), "{printed}");
        assert!(printed.contains("127.0.0.1"), "{printed}");
    }

    #[test]
    fn a_poison_update_is_found_by_its_id_and_a_cut_body_is_not() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        for (raw, id) in [
            (
                r#"{"ok":true,"result":[{"update_id":7,"message":{}}]}"#,
                Some(7),
            ),
            // Keys after the nesting, ids inside strings and nested objects do not count.
            (
                &*format!(
                    r#"{{"ok":true,"result":[{{"x":{deep},"s":"\"update_id\":9","m":{{"update_id":8}},"update_id" : 12 }}]}}"#
                ),
                Some(12),
            ),
            // Only the first update's id.
            (
                r#"{"ok":true,"result":[{"message":1},{"update_id":5}]}"#,
                None,
            ),
            (r#"{"ok":true,"result":{"message_id":"#, None),
            (r#"{"ok":true,"result":[{"update_id":7,"message":{"#, None),
            (r#"{"ok":true,"result":[{"update_id":7.5}]}"#, None),
            (r#"{"ok":true,"result":[{"update_id":"7"}]}"#, None),
            (r#"{"ok":true,"result":[{"update_id":99999999999}]}"#, None),
            (
                r#"{"ok":true,"result":[{"update_id":7,"t":"\\"}]}"#,
                Some(7),
            ),
            ("<html>Bad Gateway</html>", None),
            ("", None),
        ] {
            assert_eq!(first_update_id(raw), id, "{raw}");
        }
    }

    #[test]
    fn errors_are_classified_for_retry() {
        assert_eq!(
            classify(RequestError::Api(ApiError::TerminatedByOtherGetUpdates)),
            SendError::Conflict
        );
        assert_eq!(
            classify(RequestError::Api(ApiError::CantGetUpdates)),
            SendError::WebhookSet
        );
        // Telegram's own words, which teloxide does not recognise (the emulator's too).
        assert_eq!(
            classify(RequestError::Api(ApiError::Unknown(
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook \
                 to delete the webhook first"
                    .to_owned()
            ))),
            SendError::WebhookSet
        );
        assert_eq!(
            classify(RequestError::Api(ApiError::Unknown(
                "Conflict: terminated by other getUpdates request; make sure that only one bot \
                 instance is running"
                    .to_owned()
            ))),
            SendError::Conflict
        );
        assert_eq!(
            classify(RequestError::Api(ApiError::InvalidToken)),
            SendError::Unauthorized
        );
        assert_eq!(
            classify(RequestError::Api(ApiError::Unknown(
                "Internal Server Error".into()
            ))),
            SendError::ServerError("Internal Server Error".into())
        );
        assert!(matches!(
            classify(RequestError::Api(ApiError::Unknown(
                "Bad Request: BUTTON_DATA_INVALID".into()
            ))),
            SendError::Permanent(_)
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::BotBlocked)),
            SendError::Forbidden(_)
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::Unknown(
                "Forbidden: user is deactivated".into()
            ))),
            SendError::Forbidden(_)
        ));
        assert_eq!(
            classify(RequestError::RetryAfter(
                teloxide::types::Seconds::from_seconds(3600)
            )),
            SendError::RetryAfter(MAX_RETRY_AFTER)
        );
    }
}
