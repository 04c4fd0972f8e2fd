//! The evening summary, sent once a local day by the sweep, with the open mandates after it.

use chrono::{DateTime, Utc};

use consentd_core::card;
use consentd_store::outbox::Sound;
use consentd_store::settings::{HeldReceipts, Summary, SummarySent};
use consentd_store::writes::DaySummary;
use consentd_store::{Outgoing, StoreError};

use super::queue::say;
use super::Consent;

/// How long a drawn button counts at most: a mandate's term (7 days) and a day to spare.
const DRAWN_KEPT_DAYS: i64 = 8;

/// How many times a summary is drawn again when the journal moved under it before it is left
/// for the next sweep.
const SUMMARY_TRIES: usize = 4;

impl Consent {
    /// The evening summary, once a local day, at `summary_at` or at the first sweep after it
    /// (the daemon may have been down then).
    pub(super) async fn summary_if_due(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let tz = self.config.owner.timezone;
        let summary_at = self.owner.gate().summary_at;
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
        let origins = self.store.asks_by_origin(start, now).await?;
        // Receipts held through quiet hours go just before the summary, unless receipts are
        // only counted now (the config may have changed since they were held).
        let receipts = self.owner.gate().receipts;
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
            card::owner::summary(locales, lang, day, &counts, &origins, &mandates, anchor)
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
