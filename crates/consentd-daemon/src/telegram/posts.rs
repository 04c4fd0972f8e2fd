//! Posts in a channel or group for the `telegram_post` built-in action: a text or a file sent to
//! `@name` or a numeric chat id, and the link of what was posted.

use teloxide::prelude::Requester as _;
use teloxide::types::{ChatId, InputFile, Message, Recipient};

use super::{classify, SendError, Telegram};

/// A message the bot posted, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Posted {
    pub(crate) chat_id: i64,
    pub(crate) message_id: i64,
    /// The chat's public name, when it has one.
    pub(crate) username: Option<String>,
}

impl Posted {
    fn of(message: &Message) -> Posted {
        Posted {
            chat_id: message.chat.id.0,
            message_id: i64::from(message.id.0),
            username: message.chat.username().map(str::to_owned),
        }
    }

    /// The message's link: `https://t.me/NAME/ID` in a public chat, `https://t.me/c/ID/ID` in a
    /// private channel or supergroup (whose ids are `-100` and the id the link uses); `None` in a
    /// basic group, which has no links.
    pub(crate) fn link(&self) -> Option<String> {
        if let Some(name) = &self.username {
            return Some(format!("https://t.me/{name}/{}", self.message_id));
        }
        let id = self.chat_id.to_string();
        let inner = id.strip_prefix("-100")?;
        Some(format!("https://t.me/c/{inner}/{}", self.message_id))
    }
}

/// Where a post goes: `@name` of a public channel or group, or a channel's or group's numeric id
/// (negative); `None` for anything else. A person's chat (a positive id) is never a target: a
/// post there would land beside consentd's own messages in the owner's chat, in the bot's name,
/// and could pass for one of them.
pub(crate) fn recipient(target: &str) -> Option<Recipient> {
    if let Some(name) = target.strip_prefix('@') {
        let valid = (4..=32).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        return valid.then(|| Recipient::ChannelUsername(target.to_owned()));
    }
    target
        .parse::<i64>()
        .ok()
        .filter(|id| *id < 0)
        .map(|id| Recipient::Id(ChatId(id)))
}

impl Telegram {
    /// Posts `text` as it is: no parse mode, no entities, so the post reads as the card showed.
    pub(crate) async fn post_text(&self, to: Recipient, text: &str) -> Result<Posted, SendError> {
        let message = self.bot.send_message(to, text).await.map_err(classify)?;
        Ok(Posted::of(&message))
    }

    /// Posts a file under `name`: as a photo (Telegram shows it inline) or as a document.
    pub(crate) async fn post_file(
        &self,
        to: Recipient,
        name: &str,
        bytes: Vec<u8>,
        photo: bool,
    ) -> Result<Posted, SendError> {
        let file = InputFile::memory(bytes).file_name(name.to_owned());
        let sent = if photo {
            self.bot.send_photo(to, file).await
        } else {
            self.bot.send_document(to, file).await
        };
        Ok(Posted::of(&sent.map_err(classify)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_links_as_its_chat_allows() {
        let posted = |chat_id: i64, username: Option<&str>| Posted {
            chat_id,
            message_id: 42,
            username: username.map(str::to_owned),
        };
        let cases = [
            (
                posted(-1001234567890, Some("news")),
                Some("https://t.me/news/42"),
            ),
            (
                posted(-1001234567890, None),
                Some("https://t.me/c/1234567890/42"),
            ),
            (posted(-4567, None), None),
        ];
        for (posted, link) in cases {
            assert_eq!(posted.link().as_deref(), link, "{posted:?}");
        }
    }

    #[test]
    fn a_target_is_a_channel_name_or_a_chat_id() {
        assert_eq!(
            recipient("@news_room"),
            Some(Recipient::ChannelUsername("@news_room".into()))
        );
        assert_eq!(
            recipient("-1001234567890"),
            Some(Recipient::Id(ChatId(-1001234567890)))
        );
        // A person's chat, the owner's among them, is refused.
        for bad in ["news", "@a b", "@x", "https://t.me/news", "", "42", "0"] {
            assert_eq!(recipient(bad), None, "{bad:?}");
        }
    }
}
