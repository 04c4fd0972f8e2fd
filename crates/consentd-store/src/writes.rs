//! What the daemon asks the store to write: each write a value, applied by a named method of
//! [`Store`] on the store's thread, in one transaction with what it tells of (its journal lines
//! and its outbox rows, their text already drawn by the daemon). Each write is committed and
//! journaled as any request is ([`crate::batch`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use consentd_core::clock::{Clock, Monotonic};
use consentd_core::deadline::Now;
use consentd_core::exact::RuleQuery;
use consentd_core::lookalike::KnownTargets;
use consentd_core::pairing::PairVerdict;
use consentd_core::reason::Refusal;
use consentd_core::refusal_budget::BudgetPolicy;

use crate::claims::{Claim, ClaimNotices, ClaimWindow, Finish};
use crate::drawn::Drawn;
use crate::mandates::MandateNotices;
use crate::outbox::{Body, Outgoing};
use crate::owner::{OwnerRow, PairReplies};
use crate::settings::{HeldReceipts, Summary, SummarySent};
use crate::strangers::StrangerPress;
use crate::suggestions::Suggestion;
use crate::Peer;
use crate::{
    AskOutcome, AskPolicy, JournalEvent, NewMandate, Record, Store, StoreError, Withdrawal,
};

/// Journal lines and messages for the owner (or a stranger) committed together, and, for an
/// update from Telegram, the polling offset past it: what a reply, a notice or a rejected press
/// writes.
#[derive(Debug, Clone, Default)]
pub struct Tell {
    pub next_offset: Option<i64>,
    pub events: Vec<JournalEvent>,
    pub messages: Vec<Outgoing>,
}

impl Tell {
    /// Only the offset past an update that changes nothing else.
    pub fn offset(next_offset: i64) -> Tell {
        Tell {
            next_offset: Some(next_offset),
            ..Tell::default()
        }
    }

    /// `messages` queued, past update `next_offset` if one caused them.
    pub fn messages(next_offset: Option<i64>, messages: Vec<Outgoing>) -> Tell {
        Tell {
            next_offset,
            events: Vec::new(),
            messages,
        }
    }
}

/// The sender's word on an outbox row or a message it sent.
#[derive(Debug, Clone)]
pub enum SenderNote {
    /// A card over tonight's limit, or a routine receipt in quiet hours, waits until then.
    Hold { seq: i64, until: DateTime<Utc> },
    /// A held card is decided again at once.
    Release { seq: i64 },
    /// A row was sent (or is done).
    Done { seq: i64 },
    /// A row that can never be sent.
    Dropped { seq: i64, error: String },
    /// A failed attempt, to be retried.
    AttemptFailed { seq: i64, error: String },
    /// The chat message that shows part of a record.
    RecordMessage {
        record_id: String,
        role: String,
        message_id: i64,
    },
    /// A message was drawn with buttons, as `drawn` says.
    Drawn {
        chat: i64,
        message_id: i64,
        drawn: Drawn,
        now: DateTime<Utc>,
    },
    /// A message no longer has buttons.
    Undrawn { chat: i64, message_id: i64 },
    /// A record's card was sent as `message_id` (see [`crate::Db::card_sent`]).
    Card {
        seq: i64,
        record_id: String,
        chat: i64,
        message_id: i64,
        drawn: Option<Drawn>,
        now: DateTime<Utc>,
    },
    /// A record's card can never be sent (see [`crate::Db::card_undeliverable`]).
    CardUndeliverable {
        seq: i64,
        record_id: String,
        reason: String,
        now: DateTime<Utc>,
    },
}

/// The store's upkeep, done by the daemon's timers and at its start and stop; each answers
/// how many things it changed.
#[derive(Debug, Clone)]
pub enum Upkeep {
    /// The journal's seal key moves on.
    EvolveSealKey,
    /// Refusal counts whose window has ended are journaled.
    FlushRefusalCounts,
    /// Every refusal count is journaled (the daemon stopping).
    DrainRefusalCounts,
    /// Strangers' press windows that have ended are closed.
    CloseStrangerWindows,
    /// The copies of what ran, past their retention, are released.
    ReleaseRetainedCopies { retention: Duration },
    /// A pending ask past its own ttl, its card never shown, expires.
    ExpireUnshown { id: String },
    /// Drawn messages older than this are forgotten.
    ForgetDrawnBefore { before: DateTime<Utc> },
    /// The refusal budget's policy.
    RefusalBudget(BudgetPolicy),
}

/// A pending record's card is about to be sent: its ttl starts.
#[derive(Debug, Clone)]
pub struct CardShowing {
    pub record_id: String,
    pub expires_at: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub monotonic: Monotonic,
}

/// A granted record's claim to run.
#[derive(Debug, Clone)]
pub struct ClaimRun {
    pub id: String,
    pub category_enabled: bool,
    pub now: Now,
    pub window: ClaimWindow,
    pub notices: ClaimNotices,
}

/// The end of a run, with what the owner is told of it, drawn beforehand.
#[derive(Debug, Clone)]
pub struct Finished {
    pub id: String,
    pub finish: Finish,
    pub ending: Vec<Outgoing>,
}

/// An owner's reason for a No, kept on the record, with its reply.
#[derive(Debug, Clone)]
pub struct DeclineReason {
    pub id: String,
    pub reason: String,
    pub by: i64,
    pub next_offset: i64,
    pub reply: (i64, Body),
}

/// One of the owner's settings set in the chat, with its reply.
#[derive(Debug, Clone)]
pub struct OwnerSetting {
    pub key: &'static str,
    pub value: String,
    pub by: i64,
    pub next_offset: i64,
    pub reply: Outgoing,
}

/// A `/start CODE` while nobody is paired, with its replies.
#[derive(Debug, Clone)]
pub struct PairingAttempt {
    pub code: String,
    pub candidate: OwnerRow,
    pub next_offset: i64,
    pub replies: PairReplies,
}

/// The evening summary of `day`.
#[derive(Debug, Clone)]
pub struct DaySummary {
    pub day: NaiveDate,
    pub held: HeldReceipts,
    pub summary: Summary,
}

/// A suggestion offered to the owner with its message.
#[derive(Debug, Clone)]
pub struct SuggestionOffer {
    pub suggestion: Suggestion,
    pub message: Outgoing,
    pub day_start: DateTime<Utc>,
}

impl Store {
    /// Commits `tell`'s lines and messages together.
    pub async fn tell(&self, tell: Tell, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.call(move |db| {
            db.write_effects(now, tell.next_offset, |tx, effects| {
                for event in tell.events {
                    effects.push(event);
                }
                for message in &tell.messages {
                    message.queue_in(tx, effects)?;
                }
                Ok(())
            })
        })
        .await
    }

    /// Records what the sender did with a row or a message.
    pub async fn sent(&self, note: SenderNote) -> Result<(), StoreError> {
        self.call(move |db| match note {
            SenderNote::Hold { seq, until } => db.outbox_hold(seq, until),
            SenderNote::Release { seq } => db.outbox_release(seq),
            SenderNote::Done { seq } => db.outbox_sent(seq),
            SenderNote::Dropped { seq, error } => db.outbox_dropped(seq, &error),
            SenderNote::AttemptFailed { seq, error } => db.outbox_attempt_failed(seq, &error),
            SenderNote::RecordMessage {
                record_id,
                role,
                message_id,
            } => db.record_message(&record_id, &role, message_id),
            SenderNote::Drawn {
                chat,
                message_id,
                drawn,
                now,
            } => db.message_drawn(chat, message_id, &drawn, now),
            SenderNote::Undrawn { chat, message_id } => db.message_undrawn(chat, message_id),
            SenderNote::Card {
                seq,
                record_id,
                chat,
                message_id,
                drawn,
                now,
            } => db.card_sent(seq, &record_id, (chat, message_id), drawn.as_ref(), now),
            SenderNote::CardUndeliverable {
                seq,
                record_id,
                reason,
                now,
            } => db.card_undeliverable(seq, &record_id, &reason, now),
        })
        .await
    }

    /// Does one piece of upkeep; answers how many things it changed.
    pub async fn upkeep(&self, upkeep: Upkeep, now: DateTime<Utc>) -> Result<usize, StoreError> {
        self.call(move |db| match upkeep {
            Upkeep::EvolveSealKey => db.evolve_seal_key(now).map(|()| 1),
            Upkeep::FlushRefusalCounts => db.flush_refusal_counts(now),
            Upkeep::DrainRefusalCounts => db.drain_refusal_counts(now),
            Upkeep::CloseStrangerWindows => db.close_stranger_windows(now),
            Upkeep::ReleaseRetainedCopies { retention } => {
                db.release_retained_copies(now, retention)
            }
            Upkeep::ExpireUnshown { id } => db.expire_unshown(&id, now).map(usize::from),
            Upkeep::ForgetDrawnBefore { before } => db.forget_drawn_before(before),
            Upkeep::RefusalBudget(policy) => {
                db.set_refusal_budget(policy);
                Ok(0)
            }
        })
        .await
    }

    /// Opens a pending card about to be sent, and reads the targets known as of its opening;
    /// `None` when the record was no longer pending. Answered once the opening commits, its
    /// `card_shown` line staged in the commit: the card may leave while the line is appended to
    /// the journal file (see `batch` for why the journal cannot lose it).
    pub async fn show_card(
        &self,
        showing: CardShowing,
    ) -> Result<Option<KnownTargets>, StoreError> {
        self.call_at_commit(move |db| {
            let CardShowing {
                record_id,
                expires_at,
                now,
                monotonic,
            } = showing;
            if !db.card_showing(&record_id, expires_at, now, &monotonic)? {
                return Ok(None);
            }
            db.known_targets_for(&record_id, now).map(Some)
        })
        .await
    }

    /// Uses the exact rule that answers `query`, if one does; answers its id.
    pub async fn use_rule(
        &self,
        peer_uid: u32,
        query: RuleQuery,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        self.call(move |db| db.use_rule(peer_uid, &query, now))
            .await
    }

    /// Stores a mandate request (see [`crate::Db::ask_mandate`]).
    pub async fn ask_mandate(
        &self,
        ask: NewMandate,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        self.call(move |db| db.ask_mandate(&ask, policy, now)).await
    }

    /// Records (or counts) a refused ask; answers its record's id when one was recorded.
    pub async fn refuse(
        &self,
        peer: Peer,
        kind: Option<String>,
        refusal: Refusal,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        self.call(move |db| db.refuse(&peer, kind.as_deref(), refusal, now))
            .await
    }

    /// Claims a granted record to run.
    pub async fn claim(&self, claim: ClaimRun) -> Result<Claim, StoreError> {
        self.call(move |db| {
            db.claim(
                &claim.id,
                claim.category_enabled,
                (&claim.now, claim.window),
                &claim.notices,
            )
        })
        .await
    }

    /// Records a run's end with its ending's messages.
    pub async fn finish(
        &self,
        finished: Finished,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.call(move |db| db.finish(&finished.id, &finished.finish, &finished.ending, now))
            .await
    }

    /// A peer withdraws its ask (see [`crate::Db::withdraw`]).
    pub async fn withdraw(
        &self,
        id: String,
        peer: Peer,
        card_edit: Option<Outgoing>,
        now: DateTime<Utc>,
    ) -> Result<Withdrawal, StoreError> {
        self.call(move |db| db.withdraw(&id, &peer, card_edit.as_ref(), now))
            .await
    }

    /// Keeps the owner's reason for a No; answers whether the record still took it.
    pub async fn note_decline_reason(
        &self,
        note: DeclineReason,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.call(move |db| {
            db.note_decline_reason(
                &note.id,
                &note.reason,
                note.by,
                note.next_offset,
                now,
                note.reply,
            )
        })
        .await
    }

    /// A stranger's press that did not count (see [`crate::Db::stranger_press_rejected`]).
    pub async fn stranger_press_rejected(
        &self,
        press: StrangerPress,
        next_offset: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.call(move |db| db.stranger_press_rejected(press, next_offset, now))
            .await
    }

    /// A stranger's message: `reply` is queued if they may hear one now (once an hour).
    pub async fn stranger_reply(
        &self,
        user_id: i64,
        next_offset: i64,
        reply: Outgoing,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.call(move |db| db.stranger_may_hear(user_id, next_offset, now, &reply))
            .await
    }

    /// Stores one of the owner's settings with its reply.
    pub async fn set_owner_setting(
        &self,
        setting: OwnerSetting,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.call(move |db| {
            db.set_owner_setting(
                setting.key,
                &setting.value,
                setting.by,
                setting.next_offset,
                now,
                &setting.reply,
            )
        })
        .await
    }

    /// Until when pairing is locked, if it is (or was): what a locked attempt's reply names.
    pub async fn pairing_lock(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.call(|db| db.pairing_lock()).await
    }

    /// A pairing attempt; `None` when the lock it met is not the one its reply was drawn for
    /// (nothing is written: draw it again).
    pub async fn pair(
        &self,
        attempt: PairingAttempt,
        now: DateTime<Utc>,
    ) -> Result<Option<PairVerdict>, StoreError> {
        self.call(move |db| {
            db.pairing_attempt(
                &attempt.code,
                attempt.candidate,
                attempt.next_offset,
                now,
                &attempt.replies,
            )
        })
        .await
    }

    /// The anchor a summary drawn now shows.
    pub async fn summary_anchor(&self) -> Result<String, StoreError> {
        self.call(|db| db.summary_anchor()).await
    }

    /// Sends a day's summary unless it was sent (see [`crate::Db::send_summary`]).
    pub async fn send_summary(
        &self,
        summary: DaySummary,
        now: DateTime<Utc>,
    ) -> Result<SummarySent, StoreError> {
        self.call(move |db| db.send_summary(summary.day, now, summary.held, &summary.summary))
            .await
    }

    /// Ends the mandates due at one reading of `clock` on the store's thread, with their
    /// notices (see [`crate::Db::end_due_mandates`]).
    pub async fn end_due_mandates(
        &self,
        clock: Arc<dyn Clock>,
        notices: MandateNotices,
    ) -> Result<usize, StoreError> {
        self.call(move |db| db.end_due_mandates(&Now::read(clock.as_ref()), &notices))
            .await
    }

    /// Offers a suggestion with its message; answers whether it was made.
    pub async fn offer_suggestion(
        &self,
        offer: SuggestionOffer,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.call(move |db| {
            db.offer_suggestion(&offer.suggestion, &offer.message, offer.day_start, now)
        })
        .await
    }
}
