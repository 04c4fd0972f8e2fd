//! The sweep, ticked every [`SWEEP_EVERY`]: cards past their ttl expire (silence is never
//! consent), mandates past their term end, once a local day the evening summary is sent,
//! strangers' press windows that have closed journal what they counted, and the attachment
//! copies of what ran go once `attachment_retention` has passed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use consentd_core::card;
use consentd_store::api::Due;
use consentd_store::mandates::MandateNotices;
use consentd_store::{Decided, Outgoing, OwnerDecision, RecordState, StoreError};

use super::queue::text_body;
use super::{Consent, Wake};

/// How often the expiry sweep looks for cards past their ttl.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl Consent {
    /// Cards past their ttl: expired, edited to say so without buttons; the session hears
    /// `expired`. Silence is never consent, and never a no.
    pub(super) async fn expire_due(&self) -> Result<(), StoreError> {
        self.end_due_mandates().await?;
        let now = self.clock.now();
        // Expiry first and the summary's failure only logged: a summary that cannot be made
        // must not keep cards from expiring.
        let expired = match self.expire_unshown().await {
            Ok(()) => self.expire_cards().await,
            Err(error) => Err(error),
        };
        if let Err(error) = self.summary_if_due(now).await {
            tracing::error!(%error, "cannot send the evening summary");
        }
        // A stranger's window that has closed journals the presses it counted.
        let closed = self
            .store
            .upkeep(consentd_store::Upkeep::CloseStrangerWindows, now)
            .await;
        if let Err(error) = closed {
            tracing::error!(%error, "cannot close strangers' press windows");
        }
        // Refusal counts whose window has ended, when no later refusal wrote them.
        if let Err(error) = self
            .store
            .upkeep(consentd_store::Upkeep::FlushRefusalCounts, now)
            .await
        {
            tracing::error!(%error, "cannot journal the counted refusals");
        }
        // The copies of what ran, past `attachment_retention`, go.
        let retention = self.config.limits.attachment_retention;
        if let Err(error) = self
            .store
            .upkeep(
                consentd_store::Upkeep::ReleaseRetainedCopies { retention },
                now,
            )
            .await
        {
            tracing::error!(%error, "cannot release the attachment copies past their retention");
        }
        expired
    }

    /// What is due, looked for at one reading of both clocks taken on the store's thread as
    /// the look runs ([`consentd_store::Store::due`]): a reading taken before a card opened would
    /// be earlier than the card's own on the monotonic clock, which a window takes for a clock
    /// not to be trusted (late); and an old wall clock paired with a new monotonic one, around
    /// a step, would be late as well. Either way something the owner may still answer, or a
    /// session still waits on, would end.
    pub(super) async fn due(&self, what: Due) -> Result<(DateTime<Utc>, Vec<String>), StoreError> {
        self.store.due(what, self.clock.clone()).await
    }

    async fn expire_cards(&self) -> Result<(), StoreError> {
        let (now, due) = self.due(Due::Cards).await?;
        for id in due {
            let lookup = id.clone();
            let Some(record) = self.store.record(&lookup).await? else {
                continue;
            };
            let edit = self
                .outcome_text(&record, RecordState::Expired, None, now)
                .await;
            let decided = Decided::Expire {
                card_edit: self
                    .owner()
                    .map(|owner| Outgoing::card_edit(owner.id, &id, edit)),
                id,
            };
            let result = self
                .store
                .decide(
                    OwnerDecision {
                        next_offset: None,
                        decided,
                    },
                    now,
                )
                .await;
            match result {
                // Answered in the meantime: not expired.
                Ok(_) | Err(StoreError::StateConflict { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Mandates whose term is over: ended, `mandate_end` journaled, the owner told quietly.
    async fn end_due_mandates(&self) -> Result<(), StoreError> {
        let lang = self.language();
        let owner = self.owner();
        let labels = self.labels(lang);
        // The notices are drawn for the mandates due now; one that falls due between this look
        // and the write is left for the next sweep (`Store::end_due_mandates`).
        let (_, due) = self.store.due_mandates(self.clock.clone()).await?;
        if due.is_empty() {
            return Ok(());
        }
        let bodies = due
            .iter()
            .map(|row| {
                let label = labels
                    .get(&row.kind)
                    .map_or(row.kind.as_str(), String::as_str);
                let text = card::mandate::mandate_ended(&self.locales, lang, &row.id, label);
                (row.id.clone(), text_body(text))
            })
            .collect();
        let notices = MandateNotices {
            chat: owner.map(|owner| owner.id),
            bodies,
        };
        self.store
            .end_due_mandates(self.clock.clone(), notices)
            .await
            .map(|_| ())
    }

    /// Pending asks past their own ttl: expired, never shown (a card held for the morning, or
    /// still queued, is dropped).
    pub(super) async fn expire_unshown(&self) -> Result<(), StoreError> {
        let (now, due) = self.due(consentd_store::api::Due::Unshown).await?;
        for id in due {
            self.store
                .upkeep(consentd_store::Upkeep::ExpireUnshown { id }, now)
                .await?;
        }
        Ok(())
    }
}

/// Asks the loop for an expiry sweep every [`SWEEP_EVERY`] until `shutdown`.
pub(super) async fn tick_sweeps(events: mpsc::Sender<Wake>, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = ticks.tick() => {
                if events.send(Wake::Sweep).await.is_err() {
                    break;
                }
            }
        }
    }
}
