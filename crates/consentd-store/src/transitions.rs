//! The guarded step of the state machine: a record's state changes only by [`transition_in`], a
//! compare-and-set checked against [`RecordState::can_become`] (and by a trigger in SQLite), with
//! the columns a step may set ([`StateChange`]); the claim (`granted → running`) is one such step.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, params, Connection, OptionalExtension};

use super::cached::Cached;
use super::events::{EventName, JournalEvent};
use super::state::RecordState;
use super::time::timestamp;
use super::StoreError;

/// Columns a transition may set besides the state.
#[derive(Debug, Clone, Default)]
pub struct StateChange {
    pub reason: Option<String>,
    pub message: Option<String>,
    pub result: Option<String>,
    pub shown_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<i64>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The claim (docs/PROTOCOL.md, "Statuses"): granted → running. Returns the `used` line, for the
/// caller to journal
/// in the same transaction, after whatever must precede it.
pub(crate) fn claim_in(
    tx: &Connection,
    id: &str,
    digest: &str,
) -> Result<JournalEvent, StoreError> {
    transition_in(
        tx,
        id,
        RecordState::Granted,
        RecordState::Running,
        &StateChange::default(),
    )?;
    Ok(JournalEvent::new(EventName::Used)
        .with("id", id)
        .with("digest", digest))
}

/// Keeps the display name of whoever decided `id`, for the card's later edits.
pub(super) fn note_decider_name(tx: &Connection, id: &str, name: &str) -> Result<(), StoreError> {
    tx.execute_cached(
        "UPDATE records SET decided_by_name = ?2 WHERE id = ?1",
        params![id, name],
    )?;
    Ok(())
}

pub(crate) fn transition_in(
    tx: &Connection,
    id: &str,
    from: RecordState,
    to: RecordState,
    change: &StateChange,
) -> Result<(), StoreError> {
    if !from.can_become(to) {
        return Err(StoreError::IllegalTransition { from, to });
    }
    let updated = tx.execute_cached(
        "UPDATE records SET state = :to,
             reason = coalesce(:reason, reason), message = coalesce(:message, message),
             result = coalesce(:result, result), shown_at = coalesce(:shown_at, shown_at),
             expires_at = coalesce(:expires_at, expires_at),
             decided_at = coalesce(:decided_at, decided_at),
             decided_by = coalesce(:decided_by, decided_by),
             finished_at = coalesce(:finished_at, finished_at),
             copies_kept = CASE WHEN :to IN ('declined', 'expired', 'refused', 'withdrawn')
                 THEN 0 ELSE copies_kept END
         WHERE id = :id AND state = :from",
        named_params! {
            ":to": to.as_str(),
            ":from": from.as_str(),
            ":id": id,
            ":reason": change.reason,
            ":message": change.message,
            ":result": change.result,
            ":shown_at": change.shown_at.map(timestamp),
            ":expires_at": change.expires_at.map(timestamp),
            ":decided_at": change.decided_at.map(timestamp),
            ":decided_by": change.decided_by,
            ":finished_at": change.finished_at.map(timestamp),
        },
    )?;
    if updated == 1 {
        return Ok(());
    }
    let actual: Option<String> = tx
        .query_row_cached("SELECT state FROM records WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .optional()?;
    match actual.as_deref().and_then(RecordState::parse) {
        Some(actual) => Err(StoreError::StateConflict {
            id: id.to_owned(),
            expected: from,
            actual,
        }),
        None => Err(StoreError::Missing),
    }
}
