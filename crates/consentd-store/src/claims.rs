//! The claim and the run's end: `granted → running` with its `used` line durable before the
//! command may start (the card's window and the category judged again first), and the outcome
//! journaled when the run ends. Each is one transaction with its journal lines.

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::cached::Cached;
use super::db::Db;
use super::events::{Effects, EventName, JournalEvent};
use super::outbox::{self, Body, Outgoing, Sound, What};
use super::records::{record_where, Record};
use super::state::RecordState;
use super::transitions::{claim_in, transition_in, StateChange};
use super::StoreError;
use consentd_core::deadline::Now;

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
    /// The card's window had passed by the claim (the daemon stopped between the yes and the
    /// claim): the record ends expired and nothing runs.
    Expired(Record),
}

/// Whether a claim judges the card's window again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimWindow {
    /// The claim follows the grant in the same run of the daemon: the press's verdict judged
    /// the window on both clocks a moment ago, and the milliseconds since must not turn a yes
    /// given in time into an expiry.
    JudgedAtGrant,
    /// The claim comes after a restart: the window is judged again.
    JudgeAgain,
}

/// What a claim that does not run tells the owner, drawn by the caller beforehand; the store
/// queues the one that applies in the claim's own transaction.
#[derive(Debug, Clone, Default)]
pub struct ClaimNotices {
    /// The owner's chat; with none (before pairing) nothing is queued.
    pub chat: Option<i64>,
    /// The card's edit when the category was turned off.
    pub refused_edit: Option<Body>,
    /// The card's edit when the window had passed.
    pub expired_edit: Option<Body>,
    /// The notice when the window had passed: the owner said yes, and it did not run.
    pub expired_notice: Option<Body>,
}

impl ClaimNotices {
    fn queue(
        &self,
        tx: &rusqlite::Connection,
        effects: &mut Effects,
        record_id: &str,
        edit: Option<&Body>,
        notice: Option<&Body>,
    ) -> Result<(), StoreError> {
        let Some(chat) = self.chat else {
            return Ok(());
        };
        if let Some(edit) = edit {
            outbox::queue_in(
                tx,
                chat,
                What::Edit,
                Some(record_id),
                edit,
                Sound::Silent,
                effects.now,
            )?;
            effects.queued = true;
        }
        if let Some(notice) = notice {
            outbox::queue_in(
                tx,
                chat,
                What::Message,
                None,
                notice,
                Sound::Gated,
                effects.now,
            )?;
            effects.queued = true;
        }
        Ok(())
    }
}

impl Db {
    /// The claim (docs/PROTOCOL.md, "Statuses"): the card's window and the category are checked
    /// again, then granted
    /// → running and the `used` line are durable before this returns; only then may the command
    /// start. A yes claimed after its card's window (the daemon stopped in between) ends the
    /// record expired; a category turned off ends it refused. Either way nothing runs, and the
    /// owner is told in the same transaction (`notices`).
    pub fn claim(
        &mut self,
        id: &str,
        category_enabled: bool,
        (now, window): (&Now, ClaimWindow),
        notices: &ClaimNotices,
    ) -> Result<Claim, StoreError> {
        self.write_effects(now.wall, None, |tx, effects| {
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            let late = window == ClaimWindow::JudgeAgain
                && record
                    .window()
                    .is_some_and(|window| window.judge(now).is_err());
            let (to, reason, message, event) =
                if late {
                    (
                    RecordState::Expired,
                    None,
                    "the yes came in time, but consentd could not run it before the card's time \
                     was up; nothing ran"
                        .to_owned(),
                    JournalEvent::new(EventName::Expired).with("id", id).with("detail", "claim"),
                )
                } else if !category_enabled
                    || crate::settings::switched_off_in(tx, &record.asked()?.kind)?
                {
                    let kind = record.asked()?.kind.as_str();
                    (
                        RecordState::Refused,
                        Some("category_off".to_owned()),
                        format!("category {kind} was turned off before the action ran"),
                        JournalEvent::new(EventName::Denied)
                            .with("id", id)
                            .with("kind", kind)
                            .with("reason", "category_off"),
                    )
                } else {
                    let used = claim_in(tx, id, &record.asked()?.digest.to_hex())?;
                    effects.changed.push((id.to_owned(), RecordState::Running));
                    effects.push(used);
                    let record =
                        record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
                    return Ok(Claim::Claimed(record));
                };
            let change = StateChange {
                reason,
                message: Some(message),
                finished_at: Some(now.wall),
                ..StateChange::default()
            };
            transition_in(tx, id, RecordState::Granted, to, &change)?;
            effects.changed.push((id.to_owned(), to));
            effects.push(event);
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            if late {
                let (edit, notice) = (&notices.expired_edit, &notices.expired_notice);
                notices.queue(tx, effects, id, edit.as_ref(), notice.as_ref())?;
                Ok(Claim::Expired(record))
            } else {
                notices.queue(tx, effects, id, notices.refused_edit.as_ref(), None)?;
                Ok(Claim::CategoryOff(record))
            }
        })
    }

    /// The end of a run: running → executed, failed or outcome_unknown, journaled.
    pub fn finish(
        &mut self,
        id: &str,
        finish: &Finish,
        ending: &[Outgoing],
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
            let mut event = JournalEvent::new(match finish.state {
                RecordState::Executed => EventName::Executed,
                RecordState::Failed => EventName::Failed,
                _ => EventName::OutcomeUnknown,
            })
            .with("id", id);
            if let Some(detail) = &finish.detail {
                event = event.with("detail", detail.as_str());
            }
            effects.push(event);
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            for message in ending {
                message.queue_in(tx, effects)?;
            }
            Ok(record)
        })
    }
}
