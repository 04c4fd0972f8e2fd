//! The sweep, ticked every [`SWEEP_EVERY`]: cards past their ttl expire (silence is never
//! consent), mandates past their term end, once a local day the evening summary is sent,
//! strangers' press windows that have closed journal what they counted, and the attachment
//! copies of what ran go once `attachment_retention` has passed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use consentd_core::card;
use consentd_core::deadline::Now;
use consentd_store::db::Db;
use consentd_store::outbox::{Sound, What};
use consentd_store::settings::HeldReceipts;
use consentd_store::{Decided, Outgoing, OwnerDecision, RecordState, StoreError};

use super::queue::{queue, say};
use super::{Consent, Wake};

/// How often the expiry sweep looks for cards past their ttl.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a drawn button counts at most: a mandate's term (7 days) and a day to spare.
const DRAWN_KEPT_DAYS: i64 = 8;

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
            .call(move |db| db.close_stranger_windows(now))
            .await;
        if let Err(error) = closed {
            tracing::error!(%error, "cannot close strangers' press windows");
        }
        // Refusal counts whose window has ended, when no later refusal wrote them.
        if let Err(error) = self
            .store
            .call(move |db| db.flush_refusal_counts(now))
            .await
        {
            tracing::error!(%error, "cannot journal the counted refusals");
        }
        // The copies of what ran, past `attachment_retention`, go.
        let retention = self.config.limits.attachment_retention;
        if let Err(error) = self
            .store
            .call(move |db| db.release_retained_copies(now, retention))
            .await
        {
            tracing::error!(%error, "cannot release the attachment copies past their retention");
        }
        expired
    }

    /// `look` on the store's thread, given both clocks read there, at one instant, as it runs:
    /// how the sweep finds what is due (cards, asks unshown, mandates). A reading taken before
    /// a card opened would be earlier than the card's own on the monotonic clock, which a window
    /// takes for a clock not to be trusted (late); and an old wall clock paired with a new
    /// monotonic one, around a step, would be late as well. Either way something the owner may
    /// still answer, or a session still waits on, would end.
    pub(super) async fn at_one_reading<T: Send + 'static>(
        &self,
        look: impl FnOnce(&mut Db, &Now) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<(DateTime<Utc>, T), StoreError> {
        let clock = self.clock.clone();
        self.store
            .call(move |db| {
                let reading = Now::read(clock.as_ref());
                Ok((reading.wall, look(db, &reading)?))
            })
            .await
    }

    async fn expire_cards(&self) -> Result<(), StoreError> {
        let (now, due) = self
            .at_one_reading(|db, now| db.due_for_expiry(now))
            .await?;
        for id in due {
            let lookup = id.clone();
            let Some(record) = self.store.call(move |db| db.record(&lookup)).await? else {
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
        let locales = self.locales.clone();
        let labels = self.labels(lang);
        self.at_one_reading(move |db, now| {
            db.end_due_mandates(now, |tx, effects, row| {
                let Some(owner) = owner else { return Ok(()) };
                let label = labels
                    .get(&row.kind)
                    .map_or(row.kind.as_str(), String::as_str);
                let text = card::mandate::mandate_ended(&locales, lang, &row.id, label);
                say(tx, effects, owner.id, text, Sound::Gated)
            })
        })
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
        if self.store.call(move |db| db.summary_sent_on(day)).await? {
            return Ok(());
        }
        // Since the last summary (else since local midnight): nothing falls between two.
        let (midnight, _) = consentd_core::mandate::local_day(now, tz);
        let start = self
            .store
            .call(|db| db.last_summary_sent_at())
            .await?
            .unwrap_or(midnight);
        let counts = self.store.call(move |db| db.day_counts(start, now)).await?;
        let spend = self
            .store
            .call(move |db| db.mandate_spend(start, now))
            .await?;
        // Receipts held through quiet hours go just before the summary, unless receipts are
        // only counted now (the config may have changed since they were held).
        let receipts = self.gate.read().unwrap_or_else(|p| p.into_inner()).receipts;
        let held = match receipts {
            consentd_core::config::Receipts::Summary => HeldReceipts::Count,
            consentd_core::config::Receipts::Each => HeldReceipts::Send,
        };
        let lang = owner.language;
        let labels = self.labels(lang);
        let locales = self.locales.clone();
        // Drawn inside the summary's transaction: the anchor is known only there.
        let render = move |anchor: &str| {
            let mandates: Vec<card::owner::MandateDay<'_>> = spend
                .iter()
                .map(|s| card::owner::MandateDay {
                    id: &s.id,
                    label: labels.get(&s.kind).map_or(s.kind.as_str(), String::as_str),
                    actions: s.actions,
                    usd: s.usd,
                })
                .collect();
            card::owner::summary(&locales, lang, day, &counts, &mandates, anchor)
        };
        // The open mandates follow, each with its Stop, as `/mandates` shows them.
        let open = self.mandates_replies(lang, now).await?;
        let sent = self
            .store
            .call(move |db| {
                db.send_summary(day, now, held, |tx, effects, anchor| {
                    say(tx, effects, owner.id, render(anchor), Sound::Gated)?;
                    for body in open.into_iter().skip(1) {
                        queue(
                            tx,
                            effects,
                            owner.id,
                            What::Message,
                            None,
                            body,
                            Sound::Gated,
                        )?;
                    }
                    Ok(())
                })
            })
            .await?;
        if sent {
            tracing::info!(%day, "evening summary sent");
            // Once a day, the buttons drawn long ago are forgotten (see `forget_drawn_before`).
            let before = now - chrono::Duration::days(DRAWN_KEPT_DAYS);
            self.store
                .call(move |db| db.forget_drawn_before(before))
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
