//! The store's side of the consent loop: the owner, pairing, the polling offset, cards shown,
//! claims and outcomes, expiry, and the stranger rate limit. Each is one transaction with its
//! journal lines.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::{record_where, timestamp, transition_in, Db, Effects, Event, Record, StateChange};
use super::state::RecordState;
use super::StoreError;
use crate::pairing::{self, PairVerdict, PairingState};

/// The paired owner, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRow {
    pub telegram_id: i64,
    pub language_code: Option<String>,
}

/// How a run ended, as the store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub state: RecordState,
    pub result: Option<String>,
    pub message: Option<String>,
    pub stderr: Option<String>,
    /// What the journal says of the end (`exit`, `signal`, `timeout`, `restart`).
    pub detail: Option<String>,
}

/// What a claim came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Running: the `used` line is durable; the command may start.
    Claimed(Record),
    /// The category was turned off since the card: the record ends refused and nothing runs.
    CategoryOff(Record),
}

fn parse_time(text: Option<String>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
        .map(|t| t.with_timezone(&Utc))
}

impl Db {
    pub fn owner(&self) -> Result<Option<OwnerRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT telegram_id, language_code FROM owner WHERE id = 1",
                [],
                |row| {
                    Ok(OwnerRow {
                        telegram_id: row.get(0)?,
                        language_code: row.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    /// The next getUpdates offset (0 before the first update).
    pub fn next_offset(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT next_offset FROM telegram_state WHERE id = 1",
                [],
                |row| row.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    /// An update that changes nothing but the offset.
    pub fn skip_update(&mut self, next_offset: i64, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.write_effects(now, Some(next_offset), |_, _| Ok(()))
    }

    /// A `/start CODE` while nobody is paired: the pure decision on the stored pairing state,
    /// its next state, the owner when it paired (`owner_set` journaled) and the reply, all in one
    /// transaction — so a `consentd pair` writing a new code meanwhile is never overwritten.
    pub fn pairing_attempt(
        &mut self,
        given: &str,
        candidate: OwnerRow,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: impl FnOnce(
            &rusqlite::Transaction<'_>,
            &mut Effects,
            &PairVerdict,
        ) -> Result<(), StoreError>,
    ) -> Result<PairVerdict, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let state = tx
                .query_row_cached(
                    "SELECT code_hash, expires_at, used, failures, locked_until FROM pairing WHERE id = 1",
                    [],
                    |row| {
                        Ok(PairingState {
                            code_hash: row.get(0)?,
                            expires_at: parse_time(row.get(1)?),
                            used: row.get(2)?,
                            failures: row.get(3)?,
                            locked_until: parse_time(row.get(4)?),
                        })
                    },
                )
                .optional()?
                .unwrap_or_default();
            let (verdict, next) = pairing::decide(&state, given, now);
            tx.execute_cached(
                "INSERT INTO pairing (id, code_hash, expires_at, used, failures, locked_until)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET code_hash = excluded.code_hash,
                     expires_at = excluded.expires_at, used = excluded.used,
                     failures = excluded.failures, locked_until = excluded.locked_until",
                params![
                    next.code_hash,
                    next.expires_at.map(timestamp),
                    next.used,
                    next.failures,
                    next.locked_until.map(timestamp)
                ],
            )?;
            if verdict == PairVerdict::Paired {
                tx.execute_cached(
                    "INSERT INTO owner (id, telegram_id, language_code, set_at) VALUES (1, ?1, ?2, ?3)",
                    params![candidate.telegram_id, candidate.language_code, timestamp(now)],
                )?;
                effects.push(
                    Event::new("owner_set")
                        .with("owner", candidate.telegram_id)
                        .with("by", "pairing"),
                );
            }
            reply(tx, effects, &verdict)?;
            Ok(verdict)
        })
    }

    /// Whether a stranger may get the polite line now (at most once an hour); if so, notes it and
    /// runs `reply` (which queues the line) in the same transaction.
    pub fn stranger_may_hear(
        &mut self,
        user_id: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: impl FnOnce(&rusqlite::Transaction<'_>, &mut Effects) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        let since = timestamp(now - chrono::Duration::hours(1));
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let recent: Option<String> = tx
                .query_row_cached(
                    "SELECT last_at FROM stranger_replies WHERE user_id = ?1 AND last_at > ?2",
                    params![user_id, since],
                    |row| row.get(0),
                )
                .optional()?;
            if recent.is_some() {
                return Ok(false);
            }
            tx.execute_cached(
                "INSERT INTO stranger_replies (user_id, last_at) VALUES (?1, ?2)
                 ON CONFLICT (user_id) DO UPDATE SET last_at = excluded.last_at",
                params![user_id, timestamp(now)],
            )?;
            reply(tx, effects)?;
            Ok(true)
        })
    }

    /// A pending record's card is about to be sent: its ttl starts now and `card_shown` is
    /// journaled. Done before the send so that a press arriving the moment the card appears finds
    /// it open. Returns false when the record was no longer pending.
    pub fn card_showing(
        &mut self,
        record_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
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
            effects
                .changed
                .push((record_id.to_owned(), RecordState::CardShown));
            effects.push(
                Event::new("card_shown")
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
                Event::new("expired")
                    .with("id", record_id)
                    .with("detail", "undeliverable"),
            );
            Ok(())
        })
    }

    /// The card was sent: its message id is kept for edits and the outbox row is done.
    pub fn card_sent(
        &mut self,
        outbox_seq: i64,
        record_id: &str,
        message_id: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.write_effects(now, None, |tx, _| {
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

    /// The claim (SPEC §8): the category is checked again, then granted → running and the
    /// `used` line are durable before this returns; only then may the command start. A category
    /// turned off ends the record refused, and `on_refused` runs in that transaction.
    pub fn claim(
        &mut self,
        id: &str,
        category_enabled: bool,
        now: DateTime<Utc>,
        on_refused: impl FnOnce(
            &rusqlite::Transaction<'_>,
            &mut Effects,
            &Record,
        ) -> Result<(), StoreError>,
    ) -> Result<Claim, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            if !category_enabled {
                let change = StateChange {
                    reason: Some("category_off".to_owned()),
                    message: Some(format!(
                        "category {} was turned off before the action ran",
                        record.kind.as_deref().unwrap_or("?")
                    )),
                    finished_at: Some(now),
                    ..StateChange::default()
                };
                transition_in(tx, id, RecordState::Granted, RecordState::Refused, &change)?;
                effects.changed.push((id.to_owned(), RecordState::Refused));
                effects.push(
                    Event::new("denied")
                        .with("id", id)
                        .with("kind", record.kind.clone().unwrap_or_default())
                        .with("reason", "category_off"),
                );
                let record =
                    record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
                on_refused(tx, effects, &record)?;
                return Ok(Claim::CategoryOff(record));
            }
            transition_in(
                tx,
                id,
                RecordState::Granted,
                RecordState::Running,
                &StateChange::default(),
            )?;
            effects.changed.push((id.to_owned(), RecordState::Running));
            effects.push(
                Event::new("used")
                    .with("id", id)
                    .with("digest", record.digest.clone().unwrap_or_default()),
            );
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            Ok(Claim::Claimed(record))
        })
    }

    /// The end of a run: running → executed, failed or outcome_unknown, journaled.
    pub fn finish(
        &mut self,
        id: &str,
        finish: &Finish,
        after: impl FnOnce(&rusqlite::Transaction<'_>, &mut Effects, &Record) -> Result<(), StoreError>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let change = StateChange {
                result: finish.result.clone(),
                message: finish.message.clone(),
                finished_at: Some(now),
                ..StateChange::default()
            };
            transition_in(tx, id, RecordState::Running, finish.state, &change)?;
            tx.execute_cached(
                "UPDATE records SET stderr = ?2 WHERE id = ?1",
                params![id, finish.stderr],
            )?;
            effects.changed.push((id.to_owned(), finish.state));
            let mut event = Event::new(match finish.state {
                RecordState::Executed => "executed",
                RecordState::Failed => "failed",
                _ => "outcome_unknown",
            })
            .with("id", id);
            if let Some(detail) = &finish.detail {
                event = event.with("detail", detail.as_str());
            }
            effects.push(event);
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            after(tx, effects, &record)?;
            Ok(record)
        })
    }

    /// Records whose card is past its ttl by `now`.
    pub fn due_for_expiry(&self, now: DateTime<Utc>) -> Result<Vec<String>, StoreError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT id FROM records WHERE state = 'card_shown' AND expires_at <= ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map([timestamp(now)], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records in `state`, oldest first.
    pub fn records_in(&self, state: RecordState) -> Result<Vec<Record>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT id FROM records WHERE state = ?1 ORDER BY seq")?;
        let ids: Vec<String> = statement
            .query_map([state.as_str()], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        ids.iter()
            .map(|id| record_where(&self.conn, "id = ?1", params![id])?.ok_or(StoreError::Missing))
            .collect()
    }

    /// The owner's Resume: the kind's streak ends and it may ask again; `reply` (the answer to the
    /// owner) is queued in the same transaction.
    pub fn resume_kind(
        &mut self,
        kind: &str,
        by: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: impl FnOnce(&rusqlite::Transaction<'_>, &mut Effects) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let changed = tx.execute_cached(
                "UPDATE kind_streaks SET streak = 0, silenced_until = NULL
                 WHERE kind = ?1 AND silenced_until IS NOT NULL",
                [kind],
            )?;
            if changed > 0 {
                effects.push(Event::new("resumed").with("kind", kind).with("by", by));
                reply(tx, effects)?;
            }
            Ok(changed > 0)
        })
    }

    /// The kind's silence, if any: until when.
    pub fn silenced_until(&self, kind: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT silenced_until FROM kind_streaks WHERE kind = ?1",
                [kind],
                |row| row.get(0),
            )
            .optional()?
            .flatten())
    }
}
