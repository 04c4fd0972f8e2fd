//! "Raise today" in the chat: whether a receipt carries it (the pure
//! [`consentd_core::raise::offered`] on the action's own day as of its claim), its button signed
//! for the action's record and digest beside the mandate's Stop, and the owner's press of it —
//! judged again on the store's facts at the press, applied as one compare-and-set on the
//! mandate's day.

use chrono::{DateTime, Utc};

use consentd_core::card;
use consentd_core::deadline::Now;
use consentd_core::press::{PressAction, PressRejection};
use consentd_core::raise::{self, DayLimits, RaiseFacts};
use consentd_store::outbox::{ButtonSpec, Sound};
use consentd_store::raises::NewRaise;
use consentd_store::{ActionRecord, Applied, Decided, MandateRow, Outgoing, Record, StoreError};

use super::drawer::signed_digest;
use super::queue::text_body;
use super::{Consent, Decision, PressSubject};

impl Consent {
    /// The limits a receipt's Raise would lift its mandate's day to, when the action just run
    /// used that day up, on that day, and the mandate was not raised then (`row` was read for
    /// the action's day, with its raise).
    pub(super) fn receipt_raise(
        &self,
        record: &Record,
        row: &MandateRow,
        action: &ActionRecord,
        now: DateTime<Utc>,
    ) -> Option<DayLimits> {
        let tz = self.config.owner.timezone;
        let facts = RaiseFacts {
            open: row.is_open(now),
            same_day: consentd_core::mandate::local_day(record.created_at, tz)
                == consentd_core::mandate::local_day(now, tz),
            raised: row.raised_today,
            granted: DayLimits {
                actions_per_day: row.actions_per_day,
                usd_per_day: row.usd_per_day,
            },
            usage: action.mandate_use?,
            cost: action.cost_usd.unwrap_or_default(),
        };
        raise::offered(&facts, &self.config.limits).ok()
    }

    /// A receipt's buttons signed: Stop for the mandate, Raise today for the action's record
    /// (so a Raise names the one receipt that used the day up); none once the mandate is over.
    pub(super) fn receipt_buttons(
        &self,
        buttons: Vec<card::Button>,
        row: &MandateRow,
        record: &Record,
        now: DateTime<Utc>,
    ) -> Vec<ButtonSpec> {
        if !row.is_open(now) {
            return Vec::new();
        }
        let (raise, stop): (Vec<_>, Vec<_>) = buttons
            .into_iter()
            .partition(|button| button.action == PressAction::Raise);
        let mut signed = self.signed(stop, &row.id, &row.digest.to_hex());
        signed.extend(self.signed(raise, &record.id, &signed_digest(record)));
        signed
    }

    /// A record as the subject of a Raise press: open while the raise still stands as of now
    /// (the mandate open, the action's day today, not raised yet, the day used up, a ceiling
    /// left to rise to); signed for the action's digest.
    pub(super) async fn raise_subject(
        &self,
        record: &Record,
        now: &Now,
    ) -> Result<PressSubject, StoreError> {
        let found = self
            .store
            .raise_subject(&record.id, now.wall, self.config.owner.timezone)
            .await?;
        let open = found
            .as_ref()
            .is_some_and(|found| raise::offered(&found.facts, &self.config.limits).is_ok());
        Ok(PressSubject {
            digest: signed_digest(record),
            open,
            window: None,
            offers_always: false,
            stale: (!open).then_some(card::owner::Stale::Raise),
            origin: record.listener.clone(),
        })
    }

    /// The owner's Raise today: judged again on the facts as of the press, then the mandate's
    /// day raised in one compare-and-set. A second press (or a replay) finds the day raised and
    /// is journaled as not open; nothing changes twice.
    pub(super) async fn raised(
        &self,
        record: Record,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let tz = self.config.owner.timezone;
        let found = self
            .store
            .raise_subject(&record.id, decision.now, tz)
            .await?;
        let offer = found.and_then(|found| {
            raise::offered(&found.facts, &self.config.limits)
                .ok()
                .map(|limits| (found, limits))
        });
        let Some((found, limits)) = offer else {
            return self
                .rejected(PressRejection::NotOpen, &decision, Some(record.id))
                .await;
        };
        let lang = self.language();
        let label = self.label(&record, lang);
        let reply = card::mandate::mandate_raised(&self.locales, lang, &label);
        let decided = Decided::Raise(NewRaise {
            record_id: record.id.clone(),
            mandate_id: found.mandate_id,
            day_start: found.day_start,
            limits,
            by: decision.from.id,
            reply: Outgoing::message(self.owner_chat(&decision), text_body(reply), Sound::Silent),
        });
        let applied = self
            .store
            .decide(decision.offset_with(decided), decision.now)
            .await?;
        if applied == Applied::Unchanged {
            self.rejected(PressRejection::NotOpen, &decision, Some(record.id))
                .await?;
        }
        Ok(())
    }
}
