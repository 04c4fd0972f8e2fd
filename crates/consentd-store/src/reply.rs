//! The store's side of the owner's replies to cards: which record's card a message is, and a
//! No's reason, kept on the record and journaled by its hash alone (`decline_reason`).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::EventName;
use super::events::JournalEvent;
use super::outbox::{self, Body, Sound, What};
use super::records::{record_where, Record};
use super::state::RecordState;
use super::time::timestamp;
use super::StoreError;
use consentd_core::digest::Sha256Hash;

impl Db {
    /// The record whose card is message `message_id` (cards go to the owner's chat only).
    pub fn record_of_card(&self, message_id: i64) -> Result<Option<Record>, StoreError> {
        record_where(
            &self.conn,
            "id IN (SELECT record_id FROM record_messages WHERE role = 'card' AND message_id = ?1)",
            params![message_id],
        )
    }

    /// Keeps the owner's reason for the No on record `id` and journals `decline_reason` with the
    /// reason's SHA-256 (never its text), with the update's offset and `reply` to the owner, in
    /// one transaction. Waiters hear of it: a session's final `declined` line carries it. Only
    /// a record declined with "No, and say why…" and without a reason yet takes one (the
    /// caller judged the time against its `reason_until`); otherwise nothing but the offset
    /// changes and this returns false.
    pub fn note_decline_reason(
        &mut self,
        id: &str,
        reason: &str,
        by: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: (i64, Body),
    ) -> Result<bool, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let kind: Option<Option<String>> = tx
                .query_row_cached(
                    "UPDATE records SET decline_reason = ?2, decline_reason_at = ?3
                     WHERE id = ?1 AND state = 'declined' AND decline_reason IS NULL
                       AND reason_until > ?3
                     RETURNING kind",
                    params![id, reason, timestamp(now)],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(kind) = kind else {
                return Ok(false);
            };
            effects.push(
                JournalEvent::new(EventName::DeclineReason)
                    .with("id", id)
                    .with("kind", kind.unwrap_or_default())
                    .with("sha256", Sha256Hash::of(reason.as_bytes()).to_hex())
                    .with("by", by),
            );
            effects.changed.push((id.to_owned(), RecordState::Declined));
            let (chat, body) = reply;
            outbox::queue_in(tx, chat, What::Message, None, &body, Sound::Silent, now)?;
            effects.queued = true;
            Ok(true)
        })
    }
}
