//! The messages that carry buttons, as the daemon drew them: for each, the hash of its text as
//! Telegram returned it when it was sent, and the callback data of its buttons. A press counts
//! only on the message its button was drawn on, still showing that text (SPEC §6; see
//! [`crate::press::MessageFacts`]).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Transaction};

use super::cached::Cached;
use super::db::{timestamp, Db};
use super::StoreError;
use crate::digest::Sha256Hash;

/// A message with buttons, as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    /// Lowercase hex SHA-256 of the text as Telegram returned it.
    pub text_sha256: String,
    /// The callback data of its buttons, in order.
    pub buttons: Vec<String>,
}

impl Drawn {
    /// `text` is the message's text as Telegram returned it (never what was asked to be sent:
    /// Telegram may trim it).
    pub fn new(text: &str, buttons: Vec<String>) -> Drawn {
        Drawn {
            text_sha256: text_hash(text),
            buttons,
        }
    }

    /// Whether `text` is the text this message was drawn with.
    pub fn shows(&self, text: &str) -> bool {
        text_hash(text) == self.text_sha256
    }
}

fn text_hash(text: &str) -> String {
    Sha256Hash::of(text.as_bytes()).to_hex()
}

/// Remembers (or replaces) what `message_id` in `chat_id` was drawn with, inside a transaction.
pub fn drawn_in(
    tx: &Transaction<'_>,
    chat_id: i64,
    message_id: i64,
    drawn: &Drawn,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let buttons =
        serde_json::to_string(&drawn.buttons).map_err(|e| StoreError::Encode(e.to_string()))?;
    tx.execute_cached(
        "INSERT INTO drawn_messages (chat_id, message_id, text_sha256, buttons, drawn_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (chat_id, message_id) DO UPDATE SET text_sha256 = excluded.text_sha256,
             buttons = excluded.buttons, drawn_at = excluded.drawn_at",
        params![
            chat_id,
            message_id,
            drawn.text_sha256,
            buttons,
            timestamp(now)
        ],
    )?;
    Ok(())
}

impl Db {
    /// Remembers what a message with buttons was drawn with, once Telegram has it.
    pub fn message_drawn(
        &mut self,
        chat_id: i64,
        message_id: i64,
        drawn: &Drawn,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.write(now, |tx, _| drawn_in(tx, chat_id, message_id, drawn, now))
    }

    /// The message lost its buttons (an edit took them away): nothing can be pressed on it.
    pub fn message_undrawn(&mut self, chat_id: i64, message_id: i64) -> Result<(), StoreError> {
        self.conn.execute_cached(
            "DELETE FROM drawn_messages WHERE chat_id = ?1 AND message_id = ?2",
            params![chat_id, message_id],
        )?;
        Ok(())
    }

    /// What a message was drawn with, if it carries buttons the daemon drew.
    pub fn drawn_message(
        &self,
        chat_id: i64,
        message_id: i64,
    ) -> Result<Option<Drawn>, StoreError> {
        let row = self
            .conn
            .query_row_cached(
                "SELECT text_sha256, buttons FROM drawn_messages
                 WHERE chat_id = ?1 AND message_id = ?2",
                params![chat_id, message_id],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
            )
            .optional()?;
        row.map(|(text_sha256, buttons)| {
            let buttons =
                serde_json::from_str(&buttons).map_err(|e| StoreError::Encode(e.to_string()))?;
            Ok(Drawn {
                text_sha256,
                buttons,
            })
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_message_knows_its_own_text_only() {
        let drawn = Drawn::new("Post to X\nTarget: @mila_news", vec!["1.ab.y.r_1.t".into()]);
        assert!(drawn.shows("Post to X\nTarget: @mila_news"));
        for other in [
            "Post to X\nTarget: @mila_news ",
            "Post to X\nTarget: @mіla_news",
            "Post to X",
            "",
        ] {
            assert!(!drawn.shows(other), "{other:?}");
        }
    }
}
