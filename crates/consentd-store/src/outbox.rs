//! The durable outbox: what consentd will send to Telegram, queued in the same transaction as
//! the change it tells of, and sent by one sender in lanes (urgent notices, then cards, then the
//! rest), each lane in the order it was queued.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::cached::Cached;
use super::db::Db;
use super::events::Effects;
use super::time::timestamp;
use super::StoreError;
use consentd_core::styled::{Span, Styled};

/// A row's button (kept beside the text it goes with, so the transport need not know the store).
pub use consentd_core::styled::ButtonSpec;

/// What a row asks the sender to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// Draw a record's card (its parts and attachments first) and show it: the ttl starts then.
    Card,
    /// Send a message.
    Message,
    /// Edit a record's card (or the row's own message) to the given text and buttons; an edit
    /// without text only takes the message's buttons away.
    Edit,
}

impl What {
    fn as_str(self) -> &'static str {
        match self {
            What::Card => "card",
            What::Message => "message",
            What::Edit => "edit",
        }
    }

    fn parse(text: &str) -> Option<What> {
        [What::Card, What::Message, What::Edit]
            .into_iter()
            .find(|what| what.as_str() == text)
    }
}

/// Whether a row may make a sound (the gate decides when it is sent: docs/CONFIG.md, `[gate]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sound {
    /// Never: edits, replies to the owner's own commands, quiet notices.
    Silent,
    /// As the gate says for its class: with sound by day, silently in quiet hours.
    Gated,
    /// A receipt: gated, and not sent at all when receipts go to the summary.
    Receipt,
    /// At once with sound, even at night: a rejected press, an outcome unknown after a restart.
    Urgent,
}

impl Sound {
    fn as_str(self) -> &'static str {
        match self {
            Sound::Silent => "silent",
            Sound::Gated => "gated",
            Sound::Receipt => "receipt",
            Sound::Urgent => "urgent",
        }
    }

    fn parse(text: &str) -> Sound {
        match text {
            "silent" => Sound::Silent,
            "receipt" => Sound::Receipt,
            "urgent" => Sound::Urgent,
            _ => Sound::Gated,
        }
    }
}

/// The sender's lanes, highest first: each time it may send, it takes the oldest row of the
/// highest lane that has one ready, so an urgent notice never waits behind a backlog of cards,
/// and a card never behind edits and receipts. A row's lane follows from what it is, so it is
/// not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// Messages that sound at once even at night (the gate's urgent class).
    Urgent,
    /// Cards (their text parts and attachments travel with them).
    Card,
    /// Everything else: edits, receipts, summaries, notices, replies.
    Rest,
}

impl Lane {
    /// Every lane, highest first.
    pub const ALL: [Lane; 3] = [Lane::Urgent, Lane::Card, Lane::Rest];

    /// The lane of a row that does `what` and sounds as `sound`.
    pub fn of(what: What, sound: Sound) -> Lane {
        match (what, sound) {
            (What::Card, _) => Lane::Card,
            (What::Message, Sound::Urgent) => Lane::Urgent,
            (What::Message | What::Edit, _) => Lane::Rest,
        }
    }

    /// The rows of this lane, as an SQL condition over `outbox` (the same rule as [`Lane::of`]).
    fn condition(self) -> &'static str {
        match self {
            Lane::Urgent => "what = 'message' AND sound = 'urgent'",
            Lane::Card => "what = 'card'",
            Lane::Rest => "what <> 'card' AND NOT (what = 'message' AND sound = 'urgent')",
        }
    }
}

/// A queued card's place: what [`Db::card_queue`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardQueue {
    pub ahead: u32,
    pub held_until: Option<DateTime<Utc>>,
}

/// The oldest ready row of a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub row: Row,
    /// The row edits a record's card whose own row is still queued and due: it must wait until
    /// that card is sent (an edit that went first would find no card and be dropped, and the card
    /// would then be shown as it was drawn, buttons and all).
    pub waits_for_card: bool,
}

/// A row's content.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Body {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The spans that set apart what others wrote (message entities).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
    /// One row of buttons; empty removes them on an edit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buttons: Vec<ButtonSpec>,
    /// A message that is an attachment of a record, sent as a document whose caption is the
    /// text: its bytes are read from the store, and checked against these facts, as it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<consentd_core::digest::AttachmentFacts>,
}

impl Body {
    pub fn new(styled: Styled, buttons: Vec<ButtonSpec>) -> Body {
        Body {
            text: Some(styled.text),
            spans: styled.spans,
            buttons,
            document: None,
        }
    }

    /// The text and its spans.
    pub fn styled(&self) -> Styled {
        Styled {
            text: self.text.clone().unwrap_or_default(),
            spans: self.spans.clone(),
        }
    }
}

/// A queued row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub seq: i64,
    pub chat_id: i64,
    pub what: What,
    pub record_id: Option<String>,
    /// For an edit of a message that is no record's card: that message.
    pub message_id: Option<i64>,
    pub body: Body,
    pub sound: Sound,
    pub attempts: i64,
}

/// A row for the outbox, drawn by the consent loop before the transaction that queues it: a
/// decision carries its messages as values, so the store applies them with what they tell of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A message, or the edit of a record's card, to `chat`.
    Row {
        chat: i64,
        what: What,
        record_id: Option<String>,
        body: Body,
        sound: Sound,
    },
    /// The edit of message `message_id` in `chat` (a redrawn line with its new buttons).
    MessageEdit {
        chat: i64,
        message_id: i64,
        body: Body,
    },
}

impl Outgoing {
    /// A message to `chat` that sounds as `sound` says.
    pub fn message(chat: i64, body: Body, sound: Sound) -> Outgoing {
        Outgoing::Row {
            chat,
            what: What::Message,
            record_id: None,
            body,
            sound,
        }
    }

    /// The edit of a record's card in `chat`, silent (outcomes are not urgent) and without
    /// buttons: the card can no longer be answered.
    pub fn card_edit(chat: i64, record_id: &str, text: Styled) -> Outgoing {
        Outgoing::Row {
            chat,
            what: What::Edit,
            record_id: Some(record_id.to_owned()),
            body: Body::new(text, Vec::new()),
            sound: Sound::Silent,
        }
    }

    /// Queues the row in the transaction whose effects say a row was queued.
    pub(crate) fn queue_in(
        &self,
        tx: &Connection,
        effects: &mut Effects,
    ) -> Result<(), StoreError> {
        match self {
            Outgoing::Row {
                chat,
                what,
                record_id,
                body,
                sound,
            } => queue_in(
                tx,
                *chat,
                *what,
                record_id.as_deref(),
                body,
                *sound,
                effects.now,
            )?,
            Outgoing::MessageEdit {
                chat,
                message_id,
                body,
            } => queue_message_edit(tx, *chat, *message_id, body, effects.now)?,
        }
        effects.queued = true;
        Ok(())
    }
}

/// Queues a row inside a transaction.
pub fn queue_in(
    tx: &Connection,
    chat_id: i64,
    what: What,
    record_id: Option<&str>,
    body: &Body,
    sound: Sound,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let body = serde_json::to_string(body).map_err(|e| StoreError::Encode(e.to_string()))?;
    tx.execute_cached(
        "INSERT INTO outbox (chat_id, what, record_id, body, silent, sound, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            chat_id,
            what.as_str(),
            record_id,
            body,
            sound == Sound::Silent,
            sound.as_str(),
            timestamp(now)
        ],
    )?;
    Ok(())
}

/// Queues an edit of message `message_id` in `chat` (silent, like every edit): `body` is what it
/// shows next, or, without text, the same text with no buttons.
pub(crate) fn queue_message_edit(
    tx: &Connection,
    chat_id: i64,
    message_id: i64,
    body: &Body,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let body = serde_json::to_string(body).map_err(|e| StoreError::Encode(e.to_string()))?;
    tx.execute_cached(
        "INSERT INTO outbox (chat_id, what, message_id, body, silent, sound, created_at)
         VALUES (?1, 'edit', ?2, ?3, 1, 'silent', ?4)",
        params![chat_id, message_id, body, timestamp(now)],
    )?;
    Ok(())
}

impl Db {
    /// The oldest queued row that is not held past `now`, whatever its lane.
    #[cfg(test)]
    pub fn next_outbox(&self, now: DateTime<Utc>) -> Result<Option<Row>, StoreError> {
        self.next_where("TRUE", now)
    }

    /// The oldest queued row of `lane` that is not held past `now`, and whether it must wait for
    /// a card of the same record queued before it.
    pub fn next_in_lane(&self, lane: Lane, now: DateTime<Utc>) -> Result<Option<Head>, StoreError> {
        let Some(row) = self.next_where(lane.condition(), now)? else {
            return Ok(None);
        };
        let waits_for_card = match (&row.record_id, row.what) {
            (Some(record_id), What::Edit) => self.conn.query_row_cached(
                "SELECT EXISTS (SELECT 1 FROM outbox WHERE state = 'queued' AND what = 'card'
                 AND record_id = ?1 AND seq < ?2 AND (hold_until IS NULL OR hold_until <= ?3))",
                params![record_id, row.seq, timestamp(now)],
                |found| found.get(0),
            )?,
            _ => false,
        };
        Ok(Some(Head {
            row,
            waits_for_card,
        }))
    }

    /// The oldest queued row, not held past `now`, of those `condition` selects.
    fn next_where(&self, condition: &str, now: DateTime<Utc>) -> Result<Option<Row>, StoreError> {
        let row = self
            .conn
            .query_row_cached(
                &format!(
                    "SELECT seq, chat_id, what, record_id, body, sound, attempts, message_id
                     FROM outbox
                     WHERE state = 'queued' AND (hold_until IS NULL OR hold_until <= ?1)
                     AND ({condition})
                     ORDER BY seq LIMIT 1"
                ),
                [timestamp(now)],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, String>(5)?,
                        row.get::<_, i64>(6)?,
                        row.get::<_, Option<i64>>(7)?,
                    ))
                },
            )
            .optional()?;
        let Some((seq, chat_id, what, record_id, body, sound, attempts, message_id)) = row else {
            return Ok(None);
        };
        Ok(Some(Row {
            seq,
            chat_id,
            what: What::parse(&what).ok_or_else(|| StoreError::Encode(format!("outbox {what}")))?,
            record_id,
            message_id,
            body: serde_json::from_str(&body).map_err(|e| StoreError::Encode(e.to_string()))?,
            sound: Sound::parse(&sound),
            attempts,
        }))
    }

    /// A card over tonight's limit, or a routine receipt in quiet hours, waits until `until`;
    /// later rows go on meanwhile. A row made `silent` since the sender read it (a receipt the
    /// evening summary released) is not held again: it goes now.
    pub fn outbox_hold(&mut self, seq: i64, until: DateTime<Utc>) -> Result<(), StoreError> {
        self.conn.execute_cached(
            "UPDATE outbox SET hold_until = ?2 WHERE seq = ?1 AND sound <> 'silent'",
            params![seq, timestamp(until)],
        )?;
        self.note_card_moved(seq)
    }

    /// A card's row was held, released or sent: a session waiting on its record is told why
    /// it waits now, though the record's state may be the same.
    fn note_card_moved(&mut self, seq: i64) -> Result<(), StoreError> {
        let record: Option<(String, String)> = self
            .conn
            .query_row_cached(
                "SELECT records.id, records.state FROM outbox
                 JOIN records ON records.id = outbox.record_id
                 WHERE outbox.seq = ?1 AND outbox.what = 'card'",
                [seq],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let moved = record.and_then(|(id, state)| Some((id, crate::RecordState::parse(&state)?)));
        if let Some((id, state)) = moved {
            self.note_change(&id, state);
        }
        Ok(())
    }

    /// A held card is decided again at once.
    pub fn outbox_release(&mut self, seq: i64) -> Result<(), StoreError> {
        self.conn
            .execute_cached("UPDATE outbox SET hold_until = NULL WHERE seq = ?1", [seq])?;
        self.note_card_moved(seq)
    }

    /// Where a record's card waits in the sender's queue: the cards due before it (queued
    /// earlier and not held past `now`), and when the gate holds it; `None` when it has no
    /// queued card row (shown already, or never queued).
    pub fn card_queue(
        &self,
        record_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<CardQueue>, StoreError> {
        let row: Option<(i64, Option<String>)> = self
            .conn
            .query_row_cached(
                "SELECT seq, hold_until FROM outbox
                 WHERE state = 'queued' AND what = 'card' AND record_id = ?1
                 ORDER BY seq LIMIT 1",
                [record_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let Some((seq, held)) = row else {
            return Ok(None);
        };
        let ahead = self.conn.query_row_cached(
            "SELECT count(*) FROM outbox WHERE state = 'queued' AND what = 'card' AND seq < ?1
             AND (hold_until IS NULL OR hold_until <= ?2)",
            params![seq, timestamp(now)],
            |row| row.get(0),
        )?;
        Ok(Some(CardQueue {
            ahead,
            held_until: held.as_deref().and_then(super::time::parse_time),
        }))
    }

    /// Cards shown since `since` (tonight's, for the night limit).
    pub fn cards_shown_since(&self, since: DateTime<Utc>) -> Result<u32, StoreError> {
        Ok(self.conn.query_row_cached(
            "SELECT count(*) FROM records WHERE shown_at >= ?1",
            [timestamp(since)],
            |row| row.get(0),
        )?)
    }

    /// A row was sent (or is done: an edit that changed nothing).
    pub fn outbox_sent(&mut self, seq: i64) -> Result<(), StoreError> {
        self.conn
            .execute_cached("UPDATE outbox SET state = 'sent' WHERE seq = ?1", [seq])?;
        self.note_card_moved(seq)
    }

    /// A row that can never be sent (Telegram refused it for good).
    pub fn outbox_dropped(&mut self, seq: i64, error: &str) -> Result<(), StoreError> {
        self.conn.execute_cached(
            "UPDATE outbox SET state = 'dropped', error = ?2, attempts = attempts + 1 WHERE seq = ?1",
            params![seq, error],
        )?;
        Ok(())
    }

    /// A failed attempt, to be retried.
    pub fn outbox_attempt_failed(&mut self, seq: i64, error: &str) -> Result<(), StoreError> {
        self.conn.execute_cached(
            "UPDATE outbox SET attempts = attempts + 1, error = ?2 WHERE seq = ?1",
            params![seq, error],
        )?;
        Ok(())
    }

    /// Remembers the chat message that shows part of a record (a text part, an attachment).
    pub fn record_message(
        &mut self,
        record_id: &str,
        role: &str,
        message_id: i64,
    ) -> Result<(), StoreError> {
        self.conn.execute_cached(
            "INSERT INTO record_messages (record_id, role, message_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (record_id, role) DO UPDATE SET message_id = excluded.message_id",
            params![record_id, role, message_id],
        )?;
        Ok(())
    }

    /// The chat message of a record's part, attachment or card.
    pub fn record_message_id(
        &self,
        record_id: &str,
        role: &str,
    ) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT message_id FROM record_messages WHERE record_id = ?1 AND role = ?2",
                params![record_id, role],
                |row| row.get(0),
            )
            .optional()?)
    }
}
