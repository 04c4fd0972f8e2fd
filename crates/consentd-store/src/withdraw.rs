//! A record's ends other than a run's (docs/PROTOCOL.md): a session withdrawing its own open
//! ask, an approval-only category's yes (`approved`: nothing is claimed or run), and an ask's
//! own deadline (`ttl`) reached before its card was shown.

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::cached::Cached;
use super::db::Db;
use super::events::{EventName, JournalEvent};
use super::outbox::Outgoing;
use super::peer::Peer;
use super::readings::stored_monotonic;
use super::records::{record_where, Record};
use super::state::RecordState;
use super::time::parse_time;
use super::transitions::{transition_in, StateChange};
use super::StoreError;
use consentd_core::deadline::{Now, Span};

/// What became of a withdraw.
#[derive(Debug, Clone, PartialEq)]
pub enum Withdrawal {
    /// No record of that id is this peer's: answered as `status` answers it.
    NoRecord,
    /// It was open and is now `withdrawn`.
    Withdrawn(Record),
    /// It was withdrawn before: the same answer again.
    AlreadyWithdrawn(Record),
    /// Past the owner's answer, or ended: unchanged.
    NotWithdrawable(Record),
}

/// The pending asks with a ttl of their own, which the sweep judges every second: read through
/// `records_open` (see `cards::OPEN_RECORDS_IN`), not by a walk of every record ever made.
pub(crate) const DUE_UNSHOWN: &str =
    "SELECT id, created_at, expires_at, asked_boot, asked_since_boot_ms
     FROM records INDEXED BY records_open
     WHERE state IN ('pending', 'card_shown') AND state = 'pending' AND expires_at IS NOT NULL
     ORDER BY seq";

impl Db {
    /// A session takes back its own open ask: `pending` or `card_shown` → `withdrawn` (final),
    /// journaled `withdrawn`; a card still queued is dropped, and `card_edit` (the shown card
    /// redrawn without buttons, drawn by the consent loop) is queued in the same transaction.
    /// Any other record of this peer's is left as it is.
    pub fn withdraw(
        &mut self,
        id: &str,
        peer: &Peer,
        card_edit: Option<&Outgoing>,
        now: DateTime<Utc>,
    ) -> Result<Withdrawal, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let Some(record) =
                record_where(tx, "id = ?1", params![id])?.filter(|record| record.peer() == *peer)
            else {
                return Ok(Withdrawal::NoRecord);
            };
            let from = match record.state {
                RecordState::Withdrawn => return Ok(Withdrawal::AlreadyWithdrawn(record)),
                state @ (RecordState::Pending | RecordState::CardShown) => state,
                _ => return Ok(Withdrawal::NotWithdrawable(record)),
            };
            let change = StateChange {
                finished_at: Some(now),
                ..StateChange::default()
            };
            transition_in(tx, id, from, RecordState::Withdrawn, &change)?;
            // A card not sent yet is never sent (the sender would drop it anyway, finding the
            // record ended; this says why).
            tx.execute_cached(
                "UPDATE outbox SET state = 'dropped', error = 'withdrawn by the session'
                 WHERE record_id = ?1 AND what = 'card' AND state = 'queued'",
                [id],
            )?;
            effects
                .changed
                .push((id.to_owned(), RecordState::Withdrawn));
            let asked = record.asked()?;
            effects.push(
                JournalEvent::new(EventName::Withdrawn)
                    .with("id", id)
                    .with("kind", asked.kind.as_str())
                    .with("digest", asked.digest.to_hex()),
            );
            if let Some(edit) = card_edit {
                edit.queue_in(tx, effects)?;
            }
            let withdrawn = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            Ok(Withdrawal::Withdrawn(withdrawn))
        })
    }

    /// Pending records past their own deadline (an ask's `ttl`, kept as `expires_at` while
    /// pending) at `now`, on either clock: never shown, and now never will be. Pending records
    /// are few (at most `max_pending`), so each is judged here rather than in SQL.
    pub fn due_unshown(&self, now: &Now) -> Result<Vec<String>, StoreError> {
        let mut statement = self.conn.prepare_cached(DUE_UNSHOWN)?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                stored_monotonic(row.get(3)?, row.get(4)?),
            ))
        })?;
        let mut due = Vec::new();
        for row in rows {
            let (id, created_at, expires_at, asked_monotonic) = row?;
            let term = parse_time(&created_at).zip(parse_time(&expires_at)).map(
                |(started_at, ends_at)| Span {
                    started_at,
                    ends_at,
                    started_monotonic: asked_monotonic,
                },
            );
            // A deadline that cannot be read is taken as passed: the ask is never shown.
            if term.is_none_or(|term| term.over(now)) {
                due.push(id);
            }
        }
        Ok(due)
    }

    /// A pending record reached its deadline unshown: `expired` (journaled with `detail`
    /// `ttl`), its queued card dropped. Returns false when it was no longer pending.
    pub fn expire_unshown(&mut self, id: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let change = StateChange {
                message: Some(
                    "nobody answered before the ask's ttl; its card was never shown".into(),
                ),
                finished_at: Some(now),
                ..StateChange::default()
            };
            match transition_in(tx, id, RecordState::Pending, RecordState::Expired, &change) {
                Ok(()) => {}
                Err(StoreError::StateConflict { .. }) => return Ok(false),
                Err(error) => return Err(error),
            }
            tx.execute_cached(
                "UPDATE outbox SET state = 'dropped', error = 'the ask reached its ttl unshown'
                 WHERE record_id = ?1 AND what = 'card' AND state = 'queued'",
                [id],
            )?;
            effects.changed.push((id.to_owned(), RecordState::Expired));
            effects.push(
                JournalEvent::new(EventName::Expired)
                    .with("id", id)
                    .with("detail", "ttl"),
            );
            Ok(true)
        })
    }
}

#[cfg(test)]
#[path = "withdraw_tests.rs"]
mod tests;
