//! A card's life in the store: opened (its ttl starting, `card_shown` journaled) just before its
//! send, its message kept once sent or the record ended when Telegram refuses it for good, and
//! the open cards past their window found for the sweep.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::drawn::{drawn_in, Drawn};
use super::events::{EventName, JournalEvent};
use super::readings::{monotonic_ms, stored_monotonic};
use super::records::{record_where, Record};
use super::state::RecordState;
use super::time::{parse_time, timestamp};
use super::transitions::{transition_in, StateChange};
use super::StoreError;
use consentd_core::clock::Monotonic;
use consentd_core::deadline::{Now, Window};

/// The records in a state. The plan does not depend on what is bound (the store's connection
/// keeps one plan per statement), so the open states say the `records_open` index's own
/// condition and name it, to be read through it rather than by a walk of every record.
const RECORDS_IN: &str = "SELECT id FROM records WHERE state = ?1 ORDER BY seq";
pub(crate) const OPEN_RECORDS_IN: &str = "SELECT id FROM records INDEXED BY records_open
     WHERE state IN ('pending', 'card_shown') AND state = ?1 ORDER BY seq";
/// The shown cards the sweep judges every second, read through `records_open` (see
/// [`OPEN_RECORDS_IN`]) rather than by a walk of every record ever made.
pub(crate) const DUE_FOR_EXPIRY: &str =
    "SELECT id, shown_at, expires_at, shown_boot, shown_since_boot_ms
     FROM records INDEXED BY records_open
     WHERE state IN ('pending', 'card_shown') AND state = 'card_shown' ORDER BY seq";

impl Db {
    /// A pending record's card is about to be sent: its ttl starts now and `card_shown` is
    /// journaled. Done before the send so that a press arriving the moment the card appears finds
    /// it open. Returns false when the record was no longer pending.
    pub fn card_showing(
        &mut self,
        record_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
        monotonic: &Monotonic,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let change = StateChange {
                shown_at: Some(now),
                expires_at: Some(expires_at),
                ..StateChange::default()
            };
            match transition_in(
                tx,
                record_id,
                RecordState::Pending,
                RecordState::CardShown,
                &change,
            ) {
                Ok(()) => {}
                Err(StoreError::StateConflict { .. }) => return Ok(false),
                Err(error) => return Err(error),
            }
            tx.execute_cached(
                "UPDATE records SET shown_boot = ?2, shown_since_boot_ms = ?3 WHERE id = ?1",
                params![record_id, monotonic.boot, monotonic_ms(monotonic)],
            )?;
            effects
                .changed
                .push((record_id.to_owned(), RecordState::CardShown));
            effects.push(
                JournalEvent::new(EventName::CardShown)
                    .with("id", record_id)
                    .with("expires_at", timestamp(expires_at)),
            );
            Ok(true)
        })
    }

    /// Telegram refused a card (or its parts or attachments) for good: the row is dropped and the
    /// record ends expired — the owner never saw it, and silence is never consent — instead of
    /// waiting forever (or for its ttl) and holding a `max_pending` slot.
    pub fn card_undeliverable(
        &mut self,
        outbox_seq: i64,
        record_id: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.write_effects(now, None, |tx, effects| {
            tx.execute_cached(
                "UPDATE outbox SET state = 'dropped', error = ?2, attempts = attempts + 1 WHERE seq = ?1",
                params![outbox_seq, reason],
            )?;
            let change = StateChange {
                message: Some(format!("the card could not be delivered to the owner: {reason}")),
                finished_at: Some(now),
                ..StateChange::default()
            };
            // Pending, or opened just before the send that Telegram refused: the owner never saw
            // a card to answer either way.
            let state: Option<String> = tx
                .query_row_cached("SELECT state FROM records WHERE id = ?1", [record_id], |row| row.get(0))
                .optional()?;
            let from = match state.as_deref().and_then(RecordState::parse) {
                Some(state @ (RecordState::Pending | RecordState::CardShown)) => state,
                _ => return Ok(()),
            };
            transition_in(tx, record_id, from, RecordState::Expired, &change)?;
            effects.changed.push((record_id.to_owned(), RecordState::Expired));
            effects.push(
                JournalEvent::new(EventName::Expired)
                    .with("id", record_id)
                    .with("detail", "undeliverable"),
            );
            Ok(())
        })
    }

    /// The card was sent: its message id is kept for edits, what it was drawn with is kept for
    /// its presses, and the outbox row is done.
    pub fn card_sent(
        &mut self,
        outbox_seq: i64,
        record_id: &str,
        (chat_id, message_id): (i64, i64),
        drawn: Option<&Drawn>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.write_effects(now, None, |tx, _| {
            if let Some(drawn) = drawn {
                drawn_in(tx, chat_id, message_id, drawn, now)?;
            }
            tx.execute_cached(
                "UPDATE outbox SET state = 'sent' WHERE seq = ?1",
                [outbox_seq],
            )?;
            tx.execute_cached(
                "INSERT INTO record_messages (record_id, role, message_id) VALUES (?1, 'card', ?2)
                 ON CONFLICT (record_id, role) DO UPDATE SET message_id = excluded.message_id",
                params![record_id, message_id],
            )?;
            Ok(())
        })
    }

    /// Records whose card is past its ttl at `now`, by the wall clock or by the monotonic one
    /// (see [`consentd_core::deadline`]). Open cards are few (at most `max_pending`), so each is judged
    /// here rather than in SQL. A card the wall clock dates in the future (the clock was
    /// stepped back) stays until its monotonic time is up, and no longer; presses on it are
    /// refused meanwhile.
    pub fn due_for_expiry(&self, now: &Now) -> Result<Vec<String>, StoreError> {
        let mut statement = self.conn.prepare_cached(DUE_FOR_EXPIRY)?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<i64>>(4)?,
            ))
        })?;
        let mut due = Vec::new();
        for row in rows {
            let (id, shown_at, expires_at, boot, since_boot_ms) = row?;
            let window = match (
                shown_at.as_deref().and_then(parse_time),
                expires_at.as_deref().and_then(parse_time),
            ) {
                (Some(shown_at), Some(expires_at)) => Window {
                    shown_at,
                    expires_at,
                    shown_monotonic: stored_monotonic(boot, since_boot_ms),
                },
                // A shown card without its window cannot be answered: it is due.
                _ => {
                    due.push(id);
                    continue;
                }
            };
            if window.over(now) {
                due.push(id);
            }
        }
        Ok(due)
    }

    /// Records in `state`, oldest first. The open states are read through `records_open`.
    pub fn records_in(&self, state: RecordState) -> Result<Vec<Record>, StoreError> {
        let open = matches!(state, RecordState::Pending | RecordState::CardShown);
        let mut statement =
            self.conn
                .prepare_cached(if open { OPEN_RECORDS_IN } else { RECORDS_IN })?;
        let ids: Vec<String> = statement
            .query_map([state.as_str()], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        ids.iter()
            .map(|id| record_where(&self.conn, "id = ?1", params![id])?.ok_or(StoreError::Missing))
            .collect()
    }
}
