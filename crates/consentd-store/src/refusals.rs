//! The refusal budget at the store: which refused asks get a record and a `denied` line, which are
//! only counted, and the `denied_repeats` lines that say how many. The rule is consentd-core's
//! ([`consentd_core::refusal_budget`]); its state lives here, on the store's one thread, so it is
//! judged in the same order as the writes.
//!
//! Durability: a recorded refusal is committed and journaled as before. A count is held in memory
//! until its window ends, and written at the next write that meets a refusal, at the sweep
//! ([`Db::flush_refusal_counts`]) or at shutdown ([`Db::drain_refusal_counts`]). A crash loses
//! at most the counts of the windows still open — never a record, never a decision: a refusal
//! decides nothing, and its session had its answer. A batch whose commit fails (group commit,
//! [`crate::batch`]) forgets the windows too, since one may name a record it rolled back: their
//! counts are lost the same way.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection};

use consentd_core::reason::Refusal;
use consentd_core::refusal_budget::{BudgetPolicy, Closed, RefusalBudget, RefusalKey, Verdict};

use super::cached::Cached;
use super::db::{Db, Refusals};
use super::events::{Effects, EventName, JournalEvent};
use super::ids::new_record_id;
use super::peer::Peer;
use super::state::RecordState;
use super::time::timestamp;
use super::StoreError;

/// What a write made of one refusal, noted in the budget once the write is committed.
#[derive(Debug)]
pub(crate) struct Judged {
    verdict: Option<Verdict>,
    /// The record written for it, if one was.
    recorded: Option<String>,
}

/// A refusal met in a write: recorded under `id`, or only counted, as the budget says, with the
/// lines of the windows ended by `now`. Answers the id the session is given: `id`, the record
/// its repeats are counted under, or none.
#[allow(clippy::too_many_arguments)]
pub(crate) fn refusal_in(
    tx: &Connection,
    events: &mut Vec<JournalEvent>,
    refusals: Option<&Refusals>,
    id: &str,
    peer: &Peer,
    kind: Option<&str>,
    refusal: &Refusal,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Judged), StoreError> {
    let Some(refusals) = refusals else {
        refuse_in(tx, events, id, peer, kind, refusal, now)?;
        let judged = Judged {
            verdict: None,
            recorded: Some(id.to_owned()),
        };
        return Ok((Some(id.to_owned()), judged));
    };
    events.extend(refusals.budget.due(now).iter().map(count_line));
    let verdict = refusals
        .budget
        .judge(&key(peer, kind, refusal), refusals.policy, now);
    let (answered, recorded) = match &verdict {
        Verdict::Record { .. } => {
            refuse_in(tx, events, id, peer, kind, refusal, now)?;
            (Some(id.to_owned()), Some(id.to_owned()))
        }
        Verdict::Count { id: under, .. } => (under.clone(), None),
    };
    let judged = Judged {
        verdict: Some(verdict),
        recorded,
    };
    Ok((answered, judged))
}

/// The budget's key of a refusal. Only a well-formed kind is kept, as in its record.
fn key(peer: &Peer, kind: Option<&str>, refusal: &Refusal) -> RefusalKey {
    RefusalKey {
        uid: peer.uid,
        listener: peer.listener.clone(),
        kind: kind
            .filter(|kind| consentd_core::config::is_valid_kind(kind))
            .map(str::to_owned),
        reason: refusal.reason,
    }
}

/// The `denied_repeats` line of a window: its record if it had one, the key, and the count. No
/// message, like every line: it could hold the session's text.
fn count_line(closed: &Closed) -> JournalEvent {
    let mut line = JournalEvent::new(EventName::DeniedRepeats);
    if let Some(id) = &closed.id {
        line = line.with("id", id.as_str());
    }
    line = line.with("uid", closed.key.uid);
    if let Some(kind) = &closed.key.kind {
        line = line.with("kind", kind.as_str());
    }
    line.with("reason", closed.key.reason.as_str())
        .with("count", closed.count)
}

impl Db {
    /// Turns the refusal budget on (or changes its policy); without it, every refusal is recorded.
    pub fn set_refusal_budget(&mut self, policy: BudgetPolicy) {
        match &mut self.refusals {
            Some(refusals) => refusals.policy = policy,
            None => {
                self.refusals = Some(Refusals {
                    policy,
                    budget: RefusalBudget::default(),
                })
            }
        }
    }

    /// Forgets every window and bucket (their counts unwritten): after a batch that failed to
    /// commit, whose records a window may name.
    pub(crate) fn forget_refusal_windows(&mut self) {
        if let Some(refusals) = &mut self.refusals {
            refusals.budget = RefusalBudget::default();
        }
    }

    /// Notes a write's refusal in the budget, and its record for waiters.
    pub(crate) fn note_refusal(&mut self, judged: Judged, now: DateTime<Utc>) {
        if let Some(id) = &judged.recorded {
            self.note_change(id, RecordState::Refused);
        }
        if let (Some(refusals), Some(verdict)) = (&mut self.refusals, judged.verdict) {
            refusals.budget.close_due(now);
            refusals
                .budget
                .note(&verdict, judged.recorded, refusals.policy, now);
        }
    }

    /// Runs `change` in a write with the refusal budget taken out of `self` for it, and puts it
    /// back whatever came of the write.
    pub(crate) fn write_with_refusals<T>(
        &mut self,
        now: DateTime<Utc>,
        change: impl FnOnce(&Connection, &mut Effects, Option<&Refusals>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let refusals = self.refusals.take();
        let result = self.write_effects(now, None, |tx, effects| {
            change(tx, effects, refusals.as_ref())
        });
        self.refusals = refusals;
        result
    }

    /// Stores a refusal decided before the store saw the ask (the refusal gate's), or counts it
    /// as the budget says. Answers the id the session is given, if any. A refusal only counted,
    /// with no line due, touches neither the database nor the journal.
    pub fn refuse(
        &mut self,
        peer: &Peer,
        kind: Option<&str>,
        refusal: Refusal,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        if let Some(refusals) = &mut self.refusals {
            let verdict = refusals
                .budget
                .judge(&key(peer, kind, &refusal), refusals.policy, now);
            if let Verdict::Count { id, .. } = &verdict {
                if refusals.budget.due(now).is_empty() {
                    let id = id.clone();
                    refusals.budget.note(&verdict, None, refusals.policy, now);
                    return Ok(id);
                }
            }
        }
        let id = new_record_id()?;
        let (answered, judged) = self.write_with_refusals(now, |tx, effects, refusals| {
            let events = &mut effects.events;
            refusal_in(tx, events, refusals, &id, peer, kind, &refusal, now)
        })?;
        self.note_refusal(judged, now);
        Ok(answered)
    }

    /// Writes the lines of the windows ended by `now`; the sweep calls it. Answers how many.
    pub fn flush_refusal_counts(&mut self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let due = self
            .refusals
            .as_ref()
            .map(|refusals| refusals.budget.due(now))
            .unwrap_or_default();
        let written = self.write_counts(&due, now)?;
        if let Some(refusals) = &mut self.refusals {
            refusals.budget.close_due(now);
        }
        Ok(written)
    }

    /// Writes the lines of every window with something counted, open or not: at shutdown.
    pub fn drain_refusal_counts(&mut self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let all = self
            .refusals
            .as_mut()
            .map(|refusals| refusals.budget.drain())
            .unwrap_or_default();
        self.write_counts(&all, now)
    }

    /// One write with the `denied_repeats` lines of `closed`, if there are any.
    fn write_counts(&mut self, closed: &[Closed], now: DateTime<Utc>) -> Result<usize, StoreError> {
        if closed.is_empty() {
            return Ok(0);
        }
        let closed_at = timestamp(now);
        self.write(now, |tx, events| {
            for window in closed.iter().filter(|window| window.count > 0) {
                // Beside its line, for the evening summary's count of the day's refusals.
                tx.execute_cached(
                    "INSERT INTO refusal_repeats (closed_at, uid, kind, reason, count)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        closed_at,
                        window.key.uid,
                        window.key.kind,
                        window.key.reason.as_str(),
                        // A count of refusals in one window: far below i64's range.
                        i64::try_from(window.count).unwrap_or(i64::MAX)
                    ],
                )?;
            }
            events.extend(closed.iter().map(count_line));
            Ok(())
        })?;
        Ok(closed.len())
    }
}

/// A refused record and its `denied` line.
pub(crate) fn refuse_in(
    tx: &Connection,
    events: &mut Vec<JournalEvent>,
    id: &str,
    peer: &Peer,
    kind: Option<&str>,
    refusal: &Refusal,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    // Only a well-formed kind is kept; an unknown one is the session's text and may be anything.
    let kind = kind.filter(|kind| consentd_core::config::is_valid_kind(kind));
    tx.execute_cached(
        "INSERT INTO records (id, peer_uid, kind, state, reason, message, created_at, finished_at,
                              copies_kept, listener)
         VALUES (?1, ?2, ?3, 'refused', ?4, ?5, ?6, ?6, 0, ?7)",
        params![
            id,
            peer.uid,
            kind,
            refusal.reason.as_str(),
            refusal.message,
            timestamp(now),
            peer.column()
        ],
    )?;
    let mut denied = JournalEvent::new(EventName::Denied).with("id", id);
    if let Some(kind) = kind {
        denied = denied.with("kind", kind);
    }
    events.push(denied.with("reason", refusal.reason.as_str()));
    Ok(())
}

#[cfg(test)]
mod tests;
