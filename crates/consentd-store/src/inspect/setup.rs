//! What `consentd doctor` reads of a setup: the paired owner, the last message to them, and the
//! anchor the last evening summary sent.

use rusqlite::OptionalExtension as _;

use super::Inspect;
use crate::StoreError;

/// The last message to a chat that left the queue (sent, or dropped with Telegram's reason),
/// or that waits after a failed try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastMessage {
    /// The outbox state: `sent`, `dropped`, or `queued` (retried after a failed try).
    pub state: String,
    /// When it was queued (RFC 3339, as stored).
    pub queued_at: String,
    /// Why it was dropped, when it was.
    pub error: Option<String>,
}

impl Inspect {
    /// The paired owner's Telegram id, if any.
    pub fn paired_owner(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT telegram_id FROM owner WHERE id = 1", [], |row| {
                row.get::<_, i64>(0)
            })
            .optional()?)
    }

    /// The newest message to `chat_id` that left the queue (sent or dropped), or that is still
    /// queued after a failed try (a 403 from an owner who blocked the bot leaves it there,
    /// retried until they unblock it).
    pub fn last_message_to(&self, chat_id: i64) -> Result<Option<LastMessage>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT state, created_at, error FROM outbox WHERE chat_id = ?1 \
                 AND (state != 'queued' OR (attempts > 0 AND error IS NOT NULL)) \
                 ORDER BY seq DESC LIMIT 1",
                [chat_id],
                |row| {
                    Ok(LastMessage {
                        state: row.get(0)?,
                        queued_at: row.get(1)?,
                        error: row.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// When the newest message that reached `chat_id` was queued.
    pub fn last_sent_to(&self, chat_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self.conn.query_row(
            "SELECT MAX(created_at) FROM outbox WHERE chat_id = ?1 AND state = 'sent'",
            [chat_id],
            |row| row.get::<_, Option<String>>(0),
        )?)
    }

    /// The journal anchor the last evening summary sent the owner, as stored.
    pub fn last_summary_anchor(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT anchor FROM summaries ORDER BY day DESC LIMIT 1",
                [],
                |row| row.get::<_, String>(0),
            )
            .optional()?)
    }
}
