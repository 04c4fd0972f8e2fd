//! The messages that carry buttons, as the daemon drew them: for each, what it showed when
//! Telegram returned it (the hash of its text, entities and keyboard, which the daemon computes
//! from the message Telegram returns) and the callback data of its buttons. A press counts only on
//! the message its button was drawn on, still showing that (docs/CONTRACT-NOTES.md, "Telegram and
//! the consent loop"; see
//! [`consentd_core::press::MessageFacts`]).

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::Effects;
use super::outbox::{self, Body};
use super::time::timestamp;
use super::StoreError;
use consentd_core::press::{self, PressAction};

/// A message with buttons, as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    /// What it showed as Telegram returned it: 64 lowercase hex (never what was asked to be
    /// sent: Telegram may trim it).
    pub shows: String,
    /// The callback data of its buttons, in order.
    pub buttons: Vec<String>,
}

/// Remembers (or replaces) what `message_id` in `chat_id` was drawn with, inside a transaction.
pub(crate) fn drawn_in(
    tx: &Connection,
    chat_id: i64,
    message_id: i64,
    drawn: &Drawn,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let buttons =
        serde_json::to_string(&drawn.buttons).map_err(|e| StoreError::Encode(e.to_string()))?;
    tx.execute_cached(
        "INSERT INTO drawn_messages (chat_id, message_id, shows, buttons, drawn_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (chat_id, message_id) DO UPDATE SET shows = excluded.shows,
             buttons = excluded.buttons, drawn_at = excluded.drawn_at",
        params![chat_id, message_id, drawn.shows, buttons, timestamp(now)],
    )?;
    Ok(())
}

/// Queues, in the transaction that ends `subject`'s `action` (a mandate's Stop, a silence's
/// Resume), an edit that takes the buttons away from every message carrying that button, so
/// the owner is not left with a button that can only be refused. Each such message carries
/// that one button. The sender forgets a message once its buttons are gone; until then a press
/// on it is judged as before (and refused as no longer open). A message not sent yet (a receipt
/// held through quiet hours, say) loses the button before it goes. Returns how many edits were
/// queued.
pub(crate) fn unbutton_in(
    tx: &Connection,
    effects: &mut Effects,
    action: PressAction,
    subject: &str,
) -> Result<usize, StoreError> {
    // A cheap filter first (`_` in a record id matches any one character, which the check
    // below settles); then each button's data is read as a press would read it.
    let pattern = format!("%.{}.{subject}.%", action.letter());
    let found: Vec<(i64, i64, String)> = {
        let mut statement = tx.prepare_cached(
            "SELECT chat_id, message_id, buttons FROM drawn_messages WHERE buttons LIKE ?1
             ORDER BY drawn_at, message_id",
        )?;
        let rows = statement.query_map([&pattern], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    unbutton_unsent(tx, &pattern, action, subject)?;
    let mut queued = 0;
    for (chat_id, message_id, buttons) in found {
        let buttons: Vec<String> =
            serde_json::from_str(&buttons).map_err(|e| StoreError::Encode(e.to_string()))?;
        let carries = buttons.iter().any(|data| {
            press::parse_callback(data)
                .is_ok_and(|callback| callback.action == action && callback.subject == subject)
        });
        if carries {
            outbox::queue_message_edit(tx, chat_id, message_id, &Body::default(), effects.now)?;
            queued += 1;
        }
    }
    effects.queued |= queued > 0;
    Ok(queued)
}

/// Takes `subject`'s `action` button off the messages still waiting in the outbox.
fn unbutton_unsent(
    tx: &Connection,
    pattern: &str,
    action: PressAction,
    subject: &str,
) -> Result<(), StoreError> {
    let waiting: Vec<(i64, String)> = {
        let mut statement = tx.prepare_cached(
            "SELECT seq, body FROM outbox
             WHERE state = 'queued' AND what = 'message' AND body LIKE ?1",
        )?;
        let rows = statement.query_map([pattern], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    for (seq, body) in waiting {
        let mut body: Body =
            serde_json::from_str(&body).map_err(|e| StoreError::Encode(e.to_string()))?;
        let before = body.buttons.len();
        body.buttons.retain(|button| {
            !press::parse_callback(&button.data)
                .is_ok_and(|callback| callback.action == action && callback.subject == subject)
        });
        if body.buttons.len() != before {
            let body =
                serde_json::to_string(&body).map_err(|e| StoreError::Encode(e.to_string()))?;
            tx.execute_cached(
                "UPDATE outbox SET body = ?2 WHERE seq = ?1",
                params![seq, body],
            )?;
        }
    }
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
                "SELECT shows, buttons FROM drawn_messages
                 WHERE chat_id = ?1 AND message_id = ?2",
                params![chat_id, message_id],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
            )
            .optional()?;
        row.map(|(shows, buttons)| {
            let buttons =
                serde_json::from_str(&buttons).map_err(|e| StoreError::Encode(e.to_string()))?;
            Ok(Drawn { shows, buttons })
        })
        .transpose()
    }

    /// Forgets messages drawn before `before`: their buttons no longer count. Called once a
    /// day; nothing drawn lives that long that could still be answered (a card lasts minutes, a
    /// mandate's Stop at most its term, and `/mandates` or `/categories` draw fresh buttons).
    pub fn forget_drawn_before(&mut self, before: DateTime<Utc>) -> Result<usize, StoreError> {
        Ok(self.conn.execute_cached(
            "DELETE FROM drawn_messages WHERE drawn_at < ?1",
            [timestamp(before)],
        )?)
    }
}
