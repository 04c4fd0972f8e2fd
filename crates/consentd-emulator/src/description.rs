//! Error descriptions exactly as the Bot API writes them, and a failed call as it goes on the
//! wire.

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
/// A send to a channel where the bot is not an administrator.
pub const NEED_ADMIN_RIGHTS: &str = "Bad Request: need administrator rights in the channel chat";
pub const WRONG_FILE: &str = "Bad Request: wrong file identifier/HTTP URL specified";
pub const BOT_COMMAND_INVALID: &str = "Bad Request: BOT_COMMAND_INVALID";
pub const UNAUTHORIZED: &str = "Unauthorized";
/// `getUpdates` while a webhook is set: Telegram delivers to one or the other.
pub const WEBHOOK_ACTIVE: &str =
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";
pub const NOT_FOUND: &str = "Not Found";
pub const TOO_LARGE: &str = "Request Entity Too Large";

/// A failed Bot API call, as it goes on the wire.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{code} {description}")]
pub(crate) struct ApiFail {
    pub(crate) code: u16,
    pub(crate) description: String,
    pub(crate) retry_after: Option<u32>,
}

pub(crate) fn bad(description: &str) -> ApiFail {
    ApiFail {
        code: 400,
        description: description.to_owned(),
        retry_after: None,
    }
}
