//! The store's side of the consent loop: the owner, pairing, the polling offset, cards shown,
//! claims and outcomes, expiry, and the stranger rate limit. Each is one transaction with its
//! journal lines.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::drawn::{drawn_in, unbutton_in, Drawn};
use super::events::EventName;
use super::events::{Effects, JournalEvent};
use super::outbox::{self, Body, Outgoing, Sound, What};
use super::readings::{monotonic_ms, stored_monotonic};
use super::records::{record_where, Record};
use super::state::RecordState;
use super::time::{parse_time, timestamp};
use super::transitions::{claim_in, transition_in, StateChange};
use super::StoreError;

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
use consentd_core::clock::Monotonic;
use consentd_core::deadline::{Now, Window};
use consentd_core::pairing::{self, PairVerdict, PairingState};
use consentd_core::press::PressAction;

/// The paired owner, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRow {
    pub telegram_id: i64,
    pub language_code: Option<String>,
}

/// The replies to a pairing attempt, drawn before it, one for each verdict: the store queues the
/// one its verdict takes in the attempt's own transaction.
#[derive(Debug, Clone)]
pub struct PairReplies {
    pub paired: Outgoing,
    pub wrong: Outgoing,
    /// The reply to an attempt while pairing is locked, drawn for the lock's end it names (read
    /// with [`crate::Store::pairing_lock`]).
    pub locked: Option<(DateTime<Utc>, Outgoing)>,
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

    /// Until when pairing is locked, if it is (or was).
    pub fn pairing_lock(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let until: Option<Option<String>> = self
            .conn
            .query_row_cached("SELECT locked_until FROM pairing WHERE id = 1", [], |row| {
                row.get(0)
            })
            .optional()?;
        Ok(until.flatten().as_deref().and_then(parse_time))
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
        replies: &PairReplies,
    ) -> Result<Option<PairVerdict>, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let state = tx
                .query_row_cached(
                    "SELECT code_hash, expires_at, used, failures, locked_until FROM pairing WHERE id = 1",
                    [],
                    |row| {
                        Ok(PairingState {
                            code_hash: row.get(0)?,
                            expires_at: row.get::<_, Option<String>>(1)?.as_deref().and_then(parse_time),
                            used: row.get(2)?,
                            failures: row.get(3)?,
                            locked_until: row.get::<_, Option<String>>(4)?.as_deref().and_then(parse_time),
                        })
                    },
                )
                .optional()?
                .unwrap_or_default();
            let (verdict, next) = pairing::decide(&state, given, now);
            let reply = match &verdict {
                PairVerdict::Paired => &replies.paired,
                PairVerdict::Locked { until } => match &replies.locked {
                    Some((drawn_for, reply)) if drawn_for == until => reply,
                    // Drawn for another lock (a `consentd pair` or an attempt meanwhile):
                    // nothing is written, and the caller draws it again.
                    _ => return Ok(None),
                },
                _ => &replies.wrong,
            };
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
                    JournalEvent::new(EventName::OwnerSet)
                        .with("owner", candidate.telegram_id)
                        .with("by", "pairing"),
                );
            }
            reply.queue_in(tx, effects)?;
            Ok(Some(verdict))
        })
    }

    /// Whether a stranger may get the polite line now (at most once an hour); if so, notes it and
    /// runs `reply` (which queues the line) in the same transaction.
    pub fn stranger_may_hear(
        &mut self,
        user_id: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: &Outgoing,
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
            reply.queue_in(tx, effects)?;
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
                    || crate::settings::switched_off_in(tx, record.asked()?.kind)?
                {
                    let kind = record.asked()?.kind;
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

    /// Uid `peer_uid`'s silence of the kind while it lasts at `now`: the record whose no started
    /// it (`None` for a silence from before silences were named).
    pub fn silence_of(
        &self,
        peer_uid: u32,
        kind: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Option<String>>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT silenced_by FROM kind_streaks
                 WHERE peer_uid = ?1 AND kind = ?2 AND silenced_until > ?3",
                params![peer_uid, kind, timestamp(now)],
                |row| row.get(0),
            )
            .optional()?)
    }
}

/// The owner's Resume on the notice of the silence `silenced_by` started: the streak of the kind
/// of that record's uid ends and that uid may ask it again (another uid's silence stays), and
/// `reply` is queued. A silence started by another record (a later
/// one) is left alone: an old Resume lifts only its own. (A silence from before silences were
/// named, after an upgrade, is lifted by any Resume of its kind.) Returns whether it lifted one.
pub(super) fn resume_in(
    tx: &rusqlite::Connection,
    effects: &mut Effects,
    kind: &str,
    silenced_by: &str,
    by: i64,
    reply: &Outgoing,
) -> Result<bool, StoreError> {
    let changed = tx.execute_cached(
        "UPDATE kind_streaks SET streak = 0, silenced_until = NULL, silenced_by = NULL
         WHERE kind = ?1 AND (silenced_by = ?2 OR silenced_by IS NULL)
             AND silenced_until > ?3
             AND peer_uid = (SELECT peer_uid FROM records WHERE id = ?2)",
        params![kind, silenced_by, timestamp(effects.now)],
    )?;
    if changed > 0 {
        effects.push(
            JournalEvent::new(EventName::Resumed)
                .with("kind", kind)
                .with("silenced_by", silenced_by)
                .with("by", by),
        );
        reply.queue_in(tx, effects)?;
        // Used: the notice keeps no button that could only be refused.
        unbutton_in(tx, effects, PressAction::Resume, silenced_by)?;
    }
    Ok(changed > 0)
}
