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
use consentd_store::outbox::Sound;
use consentd_store::settings::{HeldReceipts, Summary, SummarySent};
use consentd_store::writes::DaySummary;
use consentd_store::{Decided, Outgoing, OwnerDecision, RecordState, StoreError};

use super::queue::{say, text_body};
use super::{Consent, Wake};

/// How often the expiry sweep looks for cards past their ttl.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a drawn button counts at most: a mandate's term (7 days) and a day to spare.
const DRAWN_KEPT_DAYS: i64 = 8;

/// How many times a summary is drawn again when the journal moved under it before it is left
/// for the next sweep.
const SUMMARY_TRIES: usize = 4;

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

    /// The evening summary, once a local day, at `summary_at` or at the first sweep after it
    /// (the daemon may have been down then).
    async fn summary_if_due(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let tz = self.config.owner.timezone;
        let summary_at = self
            .gate
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .summary_at;
        let day = now.with_timezone(&tz).date_naive();
        match consentd_core::gate::local_instant(day, summary_at, tz) {
            Some(at) if now >= at => {}
            _ => return Ok(()),
        }
        if self.store.summary_sent_on(day).await? {
            return Ok(());
        }
        // Since the last summary (else since local midnight): nothing falls between two.
        let (midnight, _) = consentd_core::mandate::local_day(now, tz);
        let start = self.store.last_summary_sent_at().await?.unwrap_or(midnight);
        let counts = self.store.day_counts(start, now).await?;
        let spend = self.store.mandate_spend(start, now).await?;
        // Receipts held through quiet hours go just before the summary, unless receipts are
        // only counted now (the config may have changed since they were held).
        let receipts = self.gate.read().unwrap_or_else(|p| p.into_inner()).receipts;
        let held = match receipts {
            consentd_core::config::Receipts::Summary => HeldReceipts::Count,
            consentd_core::config::Receipts::Each => HeldReceipts::Send,
        };
        let lang = owner.language;
        let labels = self.labels(lang);
        let locales = &self.locales;
        // Drawn on the journal's head as read now; the store sends it only if that is still the
        // head its transaction reads, else it is drawn again on the new one.
        let render = |anchor: &str| {
            let mandates: Vec<card::owner::MandateDay<'_>> = spend
                .iter()
                .map(|s| card::owner::MandateDay {
                    id: &s.id,
                    label: labels.get(&s.kind).map_or(s.kind.as_str(), String::as_str),
                    actions: s.actions,
                    usd: s.usd,
                })
                .collect();
            card::owner::summary(locales, lang, day, &counts, &mandates, anchor)
        };
        // The open mandates follow, each with its Stop, as `/mandates` shows them.
        let open = self.mandates_replies(lang, now).await?;
        let mut sent = SummarySent::AnchorMoved;
        for _ in 0..SUMMARY_TRIES {
            let anchor = self.store.summary_anchor().await?;
            let messages = std::iter::once(say(owner.id, render(&anchor), Sound::Gated))
                .chain(
                    open.iter()
                        .skip(1)
                        .map(|body| Outgoing::message(owner.id, body.clone(), Sound::Gated)),
                )
                .collect();
            let summary = DaySummary {
                day,
                held,
                summary: Summary {
                    anchor: Some(anchor),
                    messages,
                },
            };
            sent = self.store.send_summary(summary, now).await?;
            if sent != SummarySent::AnchorMoved {
                break;
            }
        }
        if sent == SummarySent::AnchorMoved {
            tracing::warn!(%day, "the journal kept moving under the summary; tried at the next sweep");
        }
        if sent == SummarySent::Now {
            tracing::info!(%day, "evening summary sent");
            // Once a day, the buttons drawn long ago are forgotten (see `forget_drawn_before`).
            let before = now - chrono::Duration::days(DRAWN_KEPT_DAYS);
            self.store
                .upkeep(consentd_store::Upkeep::ForgetDrawnBefore { before }, now)
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
