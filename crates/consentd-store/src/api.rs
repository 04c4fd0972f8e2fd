//! What the daemon reads from the store: each read a named method of [`Store`] that answers
//! with plain data, so that no closure, and no connection, crosses from the daemon into the
//! store's thread. The writes are values ([`crate::writes`]).
//!
//! A read that comes before its batch's first write is answered at once ([`crate::batch`]), so
//! reading through several of these costs no commit's wait.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use consentd_core::clock::Clock;
use consentd_core::deadline::Now;
use consentd_core::gate::DayCounts;
use consentd_core::lookalike::KnownTargets;
use consentd_core::mandate::Usage;
use consentd_core::suggest::History;

use crate::drawn::Drawn;
use crate::outbox::{Head, Lane};
use crate::owner::OwnerRow;
use crate::settings::MandateSpend;
use crate::suggestions::Suggestion;
use crate::{MandateRow, Peer, Record, RecordState, SavedRule, Store, StoreError};

/// What a sweep looks for at one reading of both clocks, taken on the store's thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Cards past their window.
    Cards,
    /// Pending asks past their own ttl, their card never shown.
    Unshown,
}

/// What a finished run's ending is drawn from, read just before the outcome's write.
#[derive(Debug)]
pub struct EndingFacts {
    pub record: Record,
    /// The targets its card was drawn against.
    pub known: Result<KnownTargets, StoreError>,
    /// For an ask a mandate answered: its mandate, with its use on the ask's day.
    pub mandate: Result<Option<(MandateRow, Usage)>, StoreError>,
    /// The use of the kind's mandates on the ask's day, for an ask a mandate answered.
    pub kind_usage: Result<Usage, StoreError>,
}

impl Store {
    /// The owner's switches per category.
    pub async fn category_switches(&self) -> Result<BTreeMap<String, bool>, StoreError> {
        self.call(|db| db.category_switches()).await
    }

    /// The paired owner, if any.
    pub async fn owner(&self) -> Result<Option<OwnerRow>, StoreError> {
        self.call(|db| db.owner()).await
    }

    /// The owner's settings set in the chat.
    pub async fn owner_settings(&self) -> Result<BTreeMap<String, String>, StoreError> {
        self.call(|db| db.owner_settings()).await
    }

    /// The targets known at `at` (see [`crate::Db::known_targets`]).
    pub async fn known_targets(&self, at: DateTime<Utc>) -> Result<KnownTargets, StoreError> {
        self.call(move |db| db.known_targets(at)).await
    }

    /// The targets a record's card was drawn against.
    pub async fn known_targets_for(
        &self,
        record_id: &str,
        now: DateTime<Utc>,
    ) -> Result<KnownTargets, StoreError> {
        let id = record_id.to_owned();
        self.call(move |db| db.known_targets_for(&id, now)).await
    }

    /// A record by id.
    pub async fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let id = id.to_owned();
        self.call(move |db| db.record(&id)).await
    }

    /// A page of a peer's records, newest first, and the cursor of the next.
    pub async fn list(
        &self,
        peer: Peer,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<i64>), StoreError> {
        self.call(move |db| db.list(&peer, before_seq, limit)).await
    }

    /// The records in `state`.
    pub async fn records_in(&self, state: RecordState) -> Result<Vec<Record>, StoreError> {
        self.call(move |db| db.records_in(state)).await
    }

    /// The open records, read at one instant: those whose card is shown, then those pending.
    pub async fn open_records(&self) -> Result<(Vec<Record>, Vec<Record>), StoreError> {
        self.call(|db| {
            Ok((
                db.records_in(RecordState::CardShown)?,
                db.records_in(RecordState::Pending)?,
            ))
        })
        .await
    }

    /// The record whose card is chat message `message_id`.
    pub async fn record_of_card(&self, message_id: i64) -> Result<Option<Record>, StoreError> {
        self.call(move |db| db.record_of_card(message_id)).await
    }

    /// A record whose card is still to be sent (pending, or opened already), with the targets
    /// known at `at`, read together.
    pub async fn card_to_draw(
        &self,
        id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<(KnownTargets, Record)>, StoreError> {
        let id = id.to_owned();
        self.call(move |db| {
            let record = db.record(&id)?;
            match record.filter(|record| {
                matches!(record.state, RecordState::Pending | RecordState::CardShown)
            }) {
                Some(record) => Ok(Some((db.known_targets_for(&id, at)?, record))),
                None => Ok(None),
            }
        })
        .await
    }

    /// What a finished run's ending is drawn from, read before its outcome is written.
    pub async fn ending_facts(
        &self,
        id: &str,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<EndingFacts, StoreError> {
        let id = id.to_owned();
        self.call(move |db| {
            let record = db.record(&id)?.ok_or(StoreError::Missing)?;
            let known = db.known_targets_for(&id, now);
            let day = record.created_at;
            let mandate = match record
                .action()
                .and_then(|action| action.mandate_id.as_deref())
            {
                Some(mandate_id) => db.mandate_usage(mandate_id, day, tz),
                None => Ok(None),
            };
            let kind_usage = match &mandate {
                Ok(Some((row, _))) => db.kind_mandate_usage(&row.kind, day, tz),
                _ => Err(StoreError::Missing),
            };
            Ok(EndingFacts {
                record,
                known,
                mandate,
                kind_usage,
            })
        })
        .await
    }

    /// Where record `id`'s card waits in the sender's queue, as of `now`; `None` when it has
    /// no queued card.
    pub async fn card_queue(
        &self,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<crate::outbox::CardQueue>, StoreError> {
        let id = id.to_owned();
        self.call(move |db| db.card_queue(&id, now)).await
    }

    /// Cards shown since `since`.
    pub async fn cards_shown_since(&self, since: DateTime<Utc>) -> Result<u32, StoreError> {
        self.call(move |db| db.cards_shown_since(since)).await
    }

    /// The chat message of a record's part, attachment or card.
    pub async fn record_message_id(
        &self,
        record_id: &str,
        role: &str,
    ) -> Result<Option<i64>, StoreError> {
        let (id, role) = (record_id.to_owned(), role.to_owned());
        self.call(move |db| db.record_message_id(&id, &role)).await
    }

    /// The oldest ready row of each lane.
    pub async fn lane_heads(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Lane, Option<Head>)>, StoreError> {
        self.call(move |db| {
            Lane::ALL
                .into_iter()
                .map(|lane| Ok((lane, db.next_in_lane(lane, now)?)))
                .collect()
        })
        .await
    }

    /// How a message was drawn, if the daemon recorded it.
    pub async fn drawn_message(
        &self,
        chat_id: i64,
        message_id: i64,
    ) -> Result<Option<Drawn>, StoreError> {
        self.call(move |db| db.drawn_message(chat_id, message_id))
            .await
    }

    /// The next update to ask Telegram for.
    pub async fn next_offset(&self) -> Result<i64, StoreError> {
        self.call(|db| db.next_offset()).await
    }

    /// Whether a kind is silenced for a peer, and by which record.
    pub async fn silence_of(
        &self,
        peer: Peer,
        kind: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Option<String>>, StoreError> {
        let kind = kind.to_owned();
        self.call(move |db| db.silence_of(&peer, &kind, now)).await
    }

    /// An exact rule by id.
    pub async fn saved_rule(&self, id: &str) -> Result<Option<SavedRule>, StoreError> {
        let id = id.to_owned();
        self.call(move |db| db.saved_rule(&id)).await
    }

    /// The live exact rules.
    pub async fn live_rules(&self) -> Result<Vec<SavedRule>, StoreError> {
        self.call(|db| db.live_rules()).await
    }

    /// The facts of a Raise press on the receipt of `record_id` (see
    /// [`crate::Db::raise_subject`]).
    pub async fn raise_subject(
        &self,
        record_id: &str,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Option<crate::raises::RaiseSubject>, StoreError> {
        let id = record_id.to_owned();
        self.call(move |db| db.raise_subject(&id, now, tz)).await
    }

    /// The open mandates, each with its use today.
    pub async fn open_mandates(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Vec<(MandateRow, Usage)>, StoreError> {
        self.call(move |db| db.open_mandates(now, tz)).await
    }

    /// The open mandates whose term is over at one reading of `clock` on the store's thread,
    /// with that reading's wall time.
    pub async fn due_mandates(
        &self,
        clock: Arc<dyn Clock>,
    ) -> Result<(DateTime<Utc>, Vec<MandateRow>), StoreError> {
        self.call(move |db| {
            let reading = Now::read(clock.as_ref());
            Ok((reading.wall, db.due_mandates(&reading)?))
        })
        .await
    }

    /// The journal's head as the store knows it.
    pub async fn journal_head(&self) -> Result<consentd_core::journal::Head, StoreError> {
        self.call(|db| Ok(db.journal_head())).await
    }

    /// What is due at one reading of `clock`, taken on the store's thread as the look runs (a
    /// reading taken before a card opened would be earlier than the card's own), with that
    /// reading's wall time.
    pub async fn due(
        &self,
        what: Due,
        clock: Arc<dyn Clock>,
    ) -> Result<(DateTime<Utc>, Vec<String>), StoreError> {
        self.call(move |db| {
            let reading = Now::read(clock.as_ref());
            let due = match what {
                Due::Cards => db.due_for_expiry(&reading)?,
                Due::Unshown => db.due_unshown(&reading)?,
            };
            Ok((reading.wall, due))
        })
        .await
    }

    /// Whether the summary of local day `day` was sent.
    pub async fn summary_sent_on(&self, day: NaiveDate) -> Result<bool, StoreError> {
        self.call(move |db| db.summary_sent_on(day)).await
    }

    /// When the last summary was sent, if ever.
    pub async fn last_summary_sent_at(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.call(|db| db.last_summary_sent_at()).await
    }

    /// What happened in `[start, end)`.
    pub async fn day_counts(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<DayCounts, StoreError> {
        self.call(move |db| db.day_counts(start, end)).await
    }

    /// The actions asked through each labelled socket in `[start, end)`.
    pub async fn asks_by_origin(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<(String, u32)>, StoreError> {
        self.call(move |db| db.asks_by_origin(start, end)).await
    }

    /// What each mandate spent in `[start, end)`.
    pub async fn mandate_spend(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<MandateSpend>, StoreError> {
        self.call(move |db| db.mandate_spend(start, end)).await
    }

    /// What a peer asked of a kind (and target) lately, for a suggestion.
    pub async fn suggestion_history(
        &self,
        peer_uid: u32,
        kind: &str,
        target: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<History, StoreError> {
        let (kind, target) = (kind.to_owned(), target.map(str::to_owned));
        self.call(move |db| db.suggestion_history(peer_uid, &kind, target.as_deref(), now))
            .await
    }

    /// A suggestion by id.
    pub async fn suggestion(&self, id: &str) -> Result<Option<Suggestion>, StoreError> {
        let id = id.to_owned();
        self.call(move |db| db.suggestion(&id)).await
    }
}
