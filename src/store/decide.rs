//! A record's state changes outside the ask: the guarded transition, and the owner's yes and no
//! with what they change besides the record (declines remembered, a kind's streak, a mandate
//! opened).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Transaction};

use super::base::EventName;
use super::base::{timestamp, transition_in, Db, Effects, Event, StateChange};
use super::cached::Cached;
use super::records::{record_where, Record, Subject};
use super::state::RecordState;
use super::StoreError;

impl Db {
    /// Moves a record from `from` to `to` in one guarded compare-and-set, with its journal events.
    /// Fails with [`StoreError::IllegalTransition`] for a step the state machine lacks, and with
    /// [`StoreError::StateConflict`] when the record is no longer in `from` (someone was first).
    pub fn transition(
        &mut self,
        id: &str,
        from: RecordState,
        to: RecordState,
        change: StateChange,
        events_to_journal: Vec<Event>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            transition_in(tx, id, from, to, &change)?;
            effects.events.extend(events_to_journal);
            effects.changed.push((id.to_owned(), to));
            record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)
        })
    }

    /// The owner's no: the card is declined, its digest remembered, and the kind's streak grows;
    /// at `streak_limit` the kind is silenced for a day. `after` runs in the same transaction
    /// (to queue the card's edit and the notice), told whether this no silenced the kind.
    /// Returns whether it did.
    pub fn decline(
        &mut self,
        id: &str,
        by: i64,
        streak_limit: u32,
        next_offset: Option<i64>,
        after: impl FnOnce(&Transaction<'_>, &mut Effects, &Record, bool) -> Result<(), StoreError>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, next_offset, |tx, effects| {
            let record = decided_in(tx, effects, id, by, RecordState::Declined)?;
            let digest = record.digest.clone().unwrap_or_default();
            let kind = record.kind.clone().unwrap_or_default();
            tx.execute_cached(
                "INSERT INTO declines (digest, declined_at) VALUES (?1, ?2)
                 ON CONFLICT (digest) DO UPDATE SET declined_at = excluded.declined_at",
                params![digest, timestamp(now)],
            )?;
            let streak: i64 = tx.query_row_cached(
                "INSERT INTO kind_streaks (kind, streak) VALUES (?1, 1)
                 ON CONFLICT (kind) DO UPDATE SET streak = streak + 1
                 RETURNING streak",
                [&kind],
                |row| row.get(0),
            )?;
            effects.push(
                Event::new(match record.subject {
                    Subject::Action => EventName::Declined,
                    Subject::Mandate => EventName::MandateDeclined,
                })
                .with("id", id)
                .with("kind", kind.as_str())
                .with("digest", digest.as_str())
                .with("by", by),
            );
            let silenced = streak >= i64::from(streak_limit);
            if silenced {
                let until = now + chrono::Duration::days(1);
                tx.execute_cached(
                    "UPDATE kind_streaks SET silenced_until = ?2, silenced_by = ?3 WHERE kind = ?1",
                    params![kind, timestamp(until), id],
                )?;
                effects.push(
                    Event::new(EventName::Silenced)
                        .with("kind", kind.as_str())
                        .with("streak", streak)
                        .with("until", timestamp(until)),
                );
            }
            after(tx, effects, &record, silenced)?;
            Ok(silenced)
        })
    }

    /// The owner's yes: the card is granted and the kind's streak of no's ends. `after` runs in
    /// the same transaction (to queue the card's edit).
    pub fn grant(
        &mut self,
        id: &str,
        by: i64,
        next_offset: Option<i64>,
        after: impl FnOnce(&Transaction<'_>, &mut Effects, &Record) -> Result<(), StoreError>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, next_offset, |tx, effects| {
            let record = decided_in(tx, effects, id, by, RecordState::Granted)?;
            let kind = record.kind.clone().unwrap_or_default();
            lift_silence_in(tx, effects, &kind)?;
            let record = match &record.mandate {
                Some(terms) => {
                    // The end was fixed when it was asked: the card showed it, and a Grant
                    // opens exactly that.
                    tx.execute_cached(
                        "UPDATE mandates SET opened_at = ?2 WHERE id = ?1",
                        params![id, timestamp(now)],
                    )?;
                    let opened = Event::new(EventName::MandateOpen)
                        .with("id", id)
                        .with("kind", kind.as_str())
                        .with("digest", record.digest.clone().unwrap_or_default())
                        .with("ends_at", terms.ends_at.map(timestamp).unwrap_or_default());
                    effects.push(
                        super::mandates::with_money_term(opened, terms.usd_per_day)
                            .with("actions_per_day", terms.actions_per_day)
                            .with("by", by),
                    );
                    record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?
                }
                None => {
                    effects.push(
                        Event::new(EventName::Granted)
                            .with("id", id)
                            .with("kind", kind.as_str())
                            .with("digest", record.digest.clone().unwrap_or_default())
                            .with("by", by),
                    );
                    record
                }
            };
            after(tx, effects, &record)?;
            Ok(record)
        })
    }
}

/// A yes ends the kind's streak of no's, and with it a silence: the silence's notice loses its
/// Resume, which could only be refused now.
pub(super) fn lift_silence_in(
    tx: &Transaction<'_>,
    effects: &mut Effects,
    kind: &str,
) -> Result<(), StoreError> {
    let silenced_by: Option<String> = tx
        .query_row_cached(
            "SELECT silenced_by FROM kind_streaks WHERE kind = ?1 AND silenced_until > ?2",
            params![kind, timestamp(effects.now)],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    tx.execute_cached(
        "UPDATE kind_streaks SET streak = 0, silenced_until = NULL, silenced_by = NULL
         WHERE kind = ?1",
        [kind],
    )?;
    if let Some(silenced_by) = silenced_by {
        super::drawn::unbutton_in(tx, effects, crate::press::PressAction::Resume, &silenced_by)?;
    }
    Ok(())
}

/// The owner's press moves a shown card to `to`, decided by `by` at the transaction's time; the
/// record as it now stands.
fn decided_in(
    tx: &Transaction<'_>,
    effects: &mut Effects,
    id: &str,
    by: i64,
    to: RecordState,
) -> Result<Record, StoreError> {
    let change = StateChange {
        decided_at: Some(effects.now),
        decided_by: Some(by),
        ..StateChange::default()
    };
    transition_in(tx, id, RecordState::CardShown, to, &change)?;
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    effects.changed.push((id.to_owned(), to));
    Ok(record)
}
