//! A record's state changes outside the ask: the guarded transition, and the owner's yes and no
//! with what they change besides the record (declines remembered, a kind's streak, a mandate
//! opened).

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::EventName;
use super::events::{Effects, JournalEvent};
use super::mandates::stop_in;
use super::outbox::Outgoing;
use super::records::{record_where, Record, Subject};
use super::settings::switch_category_in;
use super::silences::resume_in;
use super::state::RecordState;
use super::suggestions::{open_suggestion_in, suggested_and_covered, Opened};
use super::time::timestamp;
use super::transitions::{note_decider_name, transition_in, StateChange};
use super::StoreError;
use consentd_core::clock::Monotonic;

/// What the owner decided (or the sweep, for an expiry), drawn by the consent loop as a value
/// with everything it tells the owner; [`Db::decide`] applies it in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerDecision {
    /// The update's next getUpdates offset, stored with the decision (`None` for the sweep).
    pub next_offset: Option<i64>,
    pub decided: Decided,
}

/// What a decision changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// Yes (or Grant): the shown card is granted; a mandate request opens its mandate.
    Grant(CardDecision),
    /// Yes to an approval-only category's card: `approved`, final; nothing is claimed or run.
    Approve(CardDecision),
    /// Always here on a hook's gate card: approved as by [`Decided::Approve`], and its call
    /// saved as an exact rule (`exact_rules::save_in`), in the same transaction.
    Always(CardDecision),
    /// Remove on a saved rule: it answers nothing from now on, and `edit` is queued.
    RemoveRule {
        rule_id: String,
        by: i64,
        edit: Outgoing,
    },
    /// No (or Decline): the shown card is declined; at `streak_limit` no's in a row the kind is
    /// silenced for a day and `notice_if_silenced` is queued. With `reason_until` ("No, and
    /// say why…") the session's final line waits until then for the owner's reply.
    Decline {
        card: CardDecision,
        streak_limit: u32,
        /// Boxed: the notice is large, and rarely there.
        notice_if_silenced: Option<Box<Outgoing>>,
        reason_until: Option<DateTime<Utc>>,
    },
    /// Resume: the silence of `kind` that `silenced_by` started ends, and `reply` is queued.
    Resume {
        kind: String,
        silenced_by: String,
        by: i64,
        reply: Outgoing,
    },
    /// Stop: the open mandate ends now, and `reply` is queued.
    Stop {
        mandate_id: String,
        by: i64,
        reply: Outgoing,
    },
    /// A category's On or Off; `changed` when it was the other way (an old button pressed
    /// again is not journaled). `replies` are queued in order.
    Switch {
        kind: String,
        on: bool,
        changed: bool,
        by: i64,
        replies: Vec<Outgoing>,
    },
    /// The owner's press on a suggestion's button: its mandate request is made and its card
    /// queued for `card_chat` (`suggestions::open_suggestion_in`).
    OpenSuggestion {
        suggestion_id: String,
        card_chat: i64,
        /// The config's `max_pending`, which the card it opens counts against.
        max_pending: u32,
        /// The monotonic clock at the press, read with the decision's `now`: the request is
        /// asked then, and its term runs on both clocks from there.
        monotonic: Monotonic,
    },
    /// The owner's Raise today on a receipt: its mandate's limits lifted for the rest of the
    /// day, once (`raises::raise_in`).
    Raise(crate::raises::NewRaise),
    /// The card's ttl passed: it expires, and its edit (when there is an owner) is queued.
    Expire {
        id: String,
        card_edit: Option<Outgoing>,
    },
}

/// The owner's answer to a shown card: who answered, and the card's edit that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardDecision {
    pub id: String,
    pub by: i64,
    /// The presser's display name as Telegram gave it, kept for the card's later edits.
    pub decider_name: String,
    pub card_edit: Option<Outgoing>,
}

impl CardDecision {
    /// Keeps who decided and queues the card's edit.
    fn noted_in(&self, tx: &Connection, effects: &mut Effects) -> Result<(), StoreError> {
        note_decider_name(tx, &self.id, &self.decider_name)?;
        match &self.card_edit {
            Some(edit) => edit.queue_in(tx, effects),
            None => Ok(()),
        }
    }
}

/// What applying a decision came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Done,
    /// A no at the streak's limit: declined, and the kind silenced.
    Silenced,
    /// Nothing to change: a Resume whose silence was lifted or replaced, a Stop on a mandate
    /// no longer open (the offset is stored all the same).
    Unchanged,
}

impl Applied {
    fn done_if(changed: bool) -> Applied {
        if changed {
            Applied::Done
        } else {
            Applied::Unchanged
        }
    }
}

impl Db {
    /// Moves a record from `from` to `to` in one guarded compare-and-set, with its journal events.
    /// Fails with [`StoreError::IllegalTransition`] for a step the state machine lacks, and with
    /// [`StoreError::StateConflict`] when the record is no longer in `from` (someone was first).
    #[cfg(test)]
    pub fn transition(
        &mut self,
        id: &str,
        from: RecordState,
        to: RecordState,
        change: StateChange,
        events_to_journal: Vec<JournalEvent>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            transition_in(tx, id, from, to, &change)?;
            effects.events.extend(events_to_journal);
            effects.changed.push((id.to_owned(), to));
            record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)
        })
    }

    /// Applies what the owner decided (or the sweep, for an expiry) in one transaction: the
    /// record's or the kind's change, its journal events and the messages it queues, and the
    /// update's next offset. A card decision on a record no longer shown fails with
    /// [`StoreError::StateConflict`] and changes nothing.
    pub fn decide(
        &mut self,
        decision: &OwnerDecision,
        now: DateTime<Utc>,
    ) -> Result<Applied, StoreError> {
        self.write_effects(now, decision.next_offset, |tx, effects| {
            match &decision.decided {
                Decided::Grant(card) => {
                    grant_in(tx, effects, card)?;
                    Ok(Applied::Done)
                }
                Decided::Approve(card) => {
                    approve_in(tx, effects, card)?;
                    Ok(Applied::Done)
                }
                Decided::Always(card) => {
                    approve_in(tx, effects, card)?;
                    super::exact_rules::save_in(tx, effects, &card.id, card.by)?;
                    Ok(Applied::Done)
                }
                Decided::RemoveRule { rule_id, by, edit } => Ok(Applied::done_if(
                    super::exact_rules::remove_in(tx, effects, rule_id, *by, edit)?,
                )),
                Decided::Decline {
                    card,
                    streak_limit,
                    notice_if_silenced,
                    reason_until,
                } => {
                    let silenced = decline_in(tx, effects, card, *streak_limit, *reason_until)?;
                    if !silenced {
                        return Ok(Applied::Done);
                    }
                    if let Some(notice) = notice_if_silenced {
                        notice.queue_in(tx, effects)?;
                    }
                    Ok(Applied::Silenced)
                }
                Decided::Resume {
                    kind,
                    silenced_by,
                    by,
                    reply,
                } => Ok(Applied::done_if(resume_in(
                    tx,
                    effects,
                    kind,
                    silenced_by,
                    *by,
                    reply,
                )?)),
                Decided::Stop {
                    mandate_id,
                    by,
                    reply,
                } => Ok(Applied::done_if(stop_in(
                    tx, effects, mandate_id, *by, reply,
                )?)),
                Decided::Switch {
                    kind,
                    on,
                    changed,
                    by,
                    replies,
                } => {
                    switch_category_in(tx, effects, kind, *on, *changed, *by)?;
                    for reply in replies {
                        reply.queue_in(tx, effects)?;
                    }
                    Ok(Applied::Done)
                }
                Decided::OpenSuggestion {
                    suggestion_id,
                    card_chat,
                    max_pending,
                    monotonic,
                } => {
                    let asked = (*card_chat, *max_pending, monotonic);
                    let opened = open_suggestion_in(tx, effects, suggestion_id, asked)?;
                    Ok(Applied::done_if(matches!(opened, Opened::Card(_))))
                }
                Decided::Raise(raise) => Ok(Applied::done_if(crate::raises::raise_in(
                    tx, effects, raise,
                )?)),
                Decided::Expire { id, card_edit } => {
                    expire_in(tx, effects, id, card_edit.as_ref())?;
                    Ok(Applied::Done)
                }
            }
        })
    }
}

/// The card's ttl passed: `card_shown` → `expired`, journaled, and its edit queued.
fn expire_in(
    tx: &Connection,
    effects: &mut Effects,
    id: &str,
    card_edit: Option<&Outgoing>,
) -> Result<(), StoreError> {
    let change = StateChange {
        finished_at: Some(effects.now),
        ..StateChange::default()
    };
    transition_in(
        tx,
        id,
        RecordState::CardShown,
        RecordState::Expired,
        &change,
    )?;
    effects.changed.push((id.to_owned(), RecordState::Expired));
    effects.push(JournalEvent::new(EventName::Expired).with("id", id));
    match card_edit {
        Some(edit) => edit.queue_in(tx, effects),
        None => Ok(()),
    }
}

/// The owner's no: the card is declined, its digest remembered for the uid that asked, and that
/// uid's streak of the kind grows; at `streak_limit` the kind is silenced for that uid for a day.
/// With `reason_until` the record keeps until when it waits for the owner's reason.
/// Returns whether this no silenced it.
fn decline_in(
    tx: &Connection,
    effects: &mut Effects,
    card: &CardDecision,
    streak_limit: u32,
    reason_until: Option<DateTime<Utc>>,
) -> Result<bool, StoreError> {
    let (id, by, now) = (card.id.as_str(), card.by, effects.now);
    let record = decided_in(tx, effects, card, RecordState::Declined)?;
    if let Some(until) = reason_until {
        tx.execute_cached(
            "UPDATE records SET reason_until = ?2 WHERE id = ?1",
            params![id, timestamp(until)],
        )?;
    }
    let asked = record.asked()?;
    let (kind, digest, uid) = (asked.kind.as_str(), asked.digest.to_hex(), record.peer_uid);
    // The peer's own: the uid through the socket it asked by.
    let listener = record.listener.as_deref().unwrap_or("");
    tx.execute_cached(
        "INSERT INTO declines (peer_uid, listener, digest, declined_at) VALUES (?1, ?4, ?2, ?3)
         ON CONFLICT (peer_uid, listener, digest) DO UPDATE SET declined_at = excluded.declined_at",
        params![uid, digest, timestamp(now), listener],
    )?;
    // A silence that has run its day ended the streak, as the owner's Resume would have: the
    // next No starts a new one rather than silencing the kind again at once.
    let streak: i64 = tx.query_row_cached(
        "INSERT INTO kind_streaks (peer_uid, listener, kind, streak) VALUES (?1, ?4, ?2, 1)
         ON CONFLICT (peer_uid, listener, kind) DO UPDATE SET
             streak = CASE WHEN silenced_until <= ?3 THEN 1 ELSE streak + 1 END,
             silenced_until = CASE WHEN silenced_until <= ?3 THEN NULL ELSE silenced_until END,
             silenced_by = CASE WHEN silenced_until <= ?3 THEN NULL ELSE silenced_by END
         RETURNING streak",
        params![uid, kind, timestamp(now), listener],
        |row| row.get(0),
    )?;
    effects.push(
        JournalEvent::new(match record.subject() {
            Subject::Action => EventName::Declined,
            Subject::Mandate => EventName::MandateDeclined,
        })
        .with("id", id)
        .with("kind", kind)
        .with("digest", digest.as_str())
        .with("by", by),
    );
    let silenced = streak >= i64::from(streak_limit);
    if silenced {
        let until = now + chrono::Duration::days(1);
        tx.execute_cached(
            "UPDATE kind_streaks SET silenced_until = ?3, silenced_by = ?4
             WHERE peer_uid = ?1 AND listener = ?5 AND kind = ?2",
            params![uid, kind, timestamp(until), id, listener],
        )?;
        let silenced = JournalEvent::new(EventName::Silenced)
            .with("kind", kind)
            .with("uid", uid)
            .with("streak", streak)
            .with("until", timestamp(until));
        effects.push(crate::ask::with_origin(silenced, &record.peer()));
    }
    card.noted_in(tx, effects)?;
    Ok(silenced)
}

/// The owner's yes: the card is granted and the kind's streak of no's ends; a granted mandate
/// request opens its mandate.
fn grant_in(tx: &Connection, effects: &mut Effects, card: &CardDecision) -> Result<(), StoreError> {
    let (id, by, now) = (card.id.as_str(), card.by, effects.now);
    // A suggested mandate's card granted after a mandate for its target was: it would double
    // the day's limits. Refused as a press on a card no longer open (the consent loop says so).
    if suggested_and_covered(tx, id, now)? {
        return Err(StoreError::StateConflict {
            id: id.to_owned(),
            expected: RecordState::CardShown,
            actual: RecordState::CardShown,
        });
    }
    let record = decided_in(tx, effects, card, RecordState::Granted)?;
    let asked = record.asked()?;
    let (kind, digest) = (asked.kind.as_str(), asked.digest.to_hex());
    lift_silence_in(tx, effects, (&record.peer(), kind))?;
    match record
        .mandate_request()
        .and_then(|request| request.row.as_ref())
    {
        Some(terms) => {
            // The end was fixed when it was asked: the card showed it, and a Grant opens
            // exactly that.
            tx.execute_cached(
                "UPDATE mandates SET opened_at = ?2 WHERE id = ?1",
                params![id, timestamp(now)],
            )?;
            let opened = JournalEvent::new(EventName::MandateOpen)
                .with("id", id)
                .with("kind", kind)
                .with("digest", digest)
                .with("ends_at", terms.ends_at.map(timestamp).unwrap_or_default());
            effects.push(
                super::mandates::with_money_term(opened, terms.usd_per_day)
                    .with("actions_per_day", terms.actions_per_day)
                    .with("by", by),
            );
        }
        None => {
            effects.push(
                JournalEvent::new(EventName::Granted)
                    .with("id", id)
                    .with("kind", kind)
                    .with("digest", digest)
                    .with("by", by),
            );
        }
    }
    card.noted_in(tx, effects)
}

/// The owner's Yes to an approval-only category's card: `card_shown` → `approved` (final;
/// nothing is claimed or run), journaled `approved` with who decided. Like any yes it ends the
/// kind's streak of no's and lifts its silence.
fn approve_in(
    tx: &Connection,
    effects: &mut Effects,
    card: &CardDecision,
) -> Result<(), StoreError> {
    let (id, by, now) = (card.id.as_str(), card.by, effects.now);
    let change = StateChange {
        decided_at: Some(now),
        decided_by: Some(by),
        finished_at: Some(now),
        ..StateChange::default()
    };
    transition_in(
        tx,
        id,
        RecordState::CardShown,
        RecordState::Approved,
        &change,
    )?;
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    effects.changed.push((id.to_owned(), RecordState::Approved));
    let asked = record.asked()?;
    lift_silence_in(tx, effects, (&record.peer(), asked.kind.as_str()))?;
    effects.push(
        JournalEvent::new(EventName::Approved)
            .with("id", id)
            .with("kind", asked.kind.as_str())
            .with("digest", asked.digest.to_hex())
            .with("by", by),
    );
    card.noted_in(tx, effects)
}

/// A yes to a peer's card ends that peer's streak of no's of the kind, and with it a silence:
/// the silence's notice loses its Resume, which could only be refused now. Other peers' streaks
/// stay.
pub(super) fn lift_silence_in(
    tx: &Connection,
    effects: &mut Effects,
    (peer, kind): (&crate::Peer, &str),
) -> Result<(), StoreError> {
    let (uid, listener) = (peer.uid, peer.listener.as_deref().unwrap_or(""));
    let silenced_by: Option<String> = tx
        .query_row_cached(
            "SELECT silenced_by FROM kind_streaks
             WHERE peer_uid = ?1 AND listener = ?4 AND kind = ?2 AND silenced_until > ?3",
            params![uid, kind, timestamp(effects.now), listener],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    tx.execute_cached(
        "UPDATE kind_streaks SET streak = 0, silenced_until = NULL, silenced_by = NULL
         WHERE peer_uid = ?1 AND listener = ?3 AND kind = ?2",
        params![uid, kind, listener],
    )?;
    if let Some(silenced_by) = silenced_by {
        super::drawn::unbutton_in(
            tx,
            effects,
            consentd_core::press::PressAction::Resume,
            &silenced_by,
        )?;
    }
    Ok(())
}

/// The owner's press moves a shown card to `to`, decided at the transaction's time; the record
/// as it now stands.
fn decided_in(
    tx: &Connection,
    effects: &mut Effects,
    card: &CardDecision,
    to: RecordState,
) -> Result<Record, StoreError> {
    let change = StateChange {
        decided_at: Some(effects.now),
        decided_by: Some(card.by),
        ..StateChange::default()
    };
    transition_in(tx, &card.id, RecordState::CardShown, to, &change)?;
    let record = record_where(tx, "id = ?1", params![card.id])?.ok_or(StoreError::Missing)?;
    effects.changed.push((card.id.clone(), to));
    Ok(record)
}
