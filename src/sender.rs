//! The outbox's one sender: sends queued rows in order, paced to about one message a second to
//! the owner's chat with short bursts, retrying network errors and 5xx with backoff and honouring
//! a 429's `retry_after`. A card row is drawn when it is sent, so its ttl starts when the owner
//! can see it; its text parts and attachments go first, each remembered once sent, so a restart
//! resumes where it stopped.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::gate::{self, Class, Delivery};
use crate::lookalike::KnownTargets;
use crate::store::outbox::{ButtonSpec, Row, Sound, What};
use crate::store::{Record, RecordState, Store, StoreError};
use crate::telegram::{SendError, Telegram};

/// Messages a burst may hold; after it, one a second.
pub const BURST: f64 = 3.0;
/// The longest wait between attempts of a failing row.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How often the sender looks for held cards that have become due.
const HELD_RECHECK: Duration = Duration::from_secs(1);

/// A card as drawn for sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawnCard {
    /// The text's numbered parts, sent before the card (empty when the text fits the card).
    pub parts: Vec<String>,
    /// A caption per attachment, in order.
    pub captions: Vec<String>,
    pub text: String,
    pub buttons: Vec<ButtonSpec>,
    /// Sent without sound (the gate's decision; the drawer's own is replaced by it).
    pub silent: bool,
}

/// Draws a record's card; implemented by the consent loop, which knows the locale and the key.
pub trait Drawer: Send + Sync + std::fmt::Debug {
    /// The card for `record`, answerable until `expires_at`, its targets compared with `known`.
    fn draw(
        &self,
        record: &Record,
        known: &KnownTargets,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> DrawnCard;
    /// How long a shown card may be answered.
    fn ttl(&self) -> chrono::Duration;
    /// The gate's settings as the owner last set them, and the owner's zone.
    fn gate(&self) -> (crate::config::Gate, chrono_tz::Tz);
}

/// A token bucket: `BURST` at once, then one a second.
#[derive(Debug)]
struct Pace {
    tokens: f64,
    last: Instant,
}

impl Pace {
    fn new() -> Self {
        Pace {
            tokens: BURST,
            last: Instant::now(),
        }
    }

    async fn take(&mut self) {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64()).min(BURST);
        self.last = now;
        if self.tokens < 1.0 {
            let wait = Duration::from_secs_f64(1.0 - self.tokens);
            tokio::time::sleep(wait).await;
            self.tokens = 1.0;
            self.last = Instant::now();
        }
        self.tokens -= 1.0;
    }
}

/// Why a row stopped.
#[derive(Debug)]
enum RowError {
    Send(SendError),
    Store(StoreError),
}

impl From<SendError> for RowError {
    fn from(error: SendError) -> Self {
        RowError::Send(error)
    }
}

impl From<StoreError> for RowError {
    fn from(error: StoreError) -> Self {
        RowError::Store(error)
    }
}

/// Runs the sender until `shutdown`. Returns an error only for a 409 Conflict, which stops the
/// daemon.
pub async fn run(
    store: Store,
    telegram: Telegram,
    drawer: Arc<dyn Drawer>,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
) -> Result<(), SendError> {
    let ready = store.outbox_ready();
    let mut pace = Pace::new();
    loop {
        // Checked before every row: with a long backlog the outbox is never empty, and a row in
        // flight is finished rather than cut (cutting it could send it twice after a restart).
        if shutdown.is_cancelled() {
            return Ok(());
        }
        let now = clock.now();
        let row = match store.call(move |db| db.next_outbox(now)).await {
            Ok(row) => row,
            Err(error) => {
                tracing::error!(%error, "cannot read the outbox");
                if sleep_or_stop(Duration::from_secs(1), &shutdown).await {
                    return Ok(());
                }
                continue;
            }
        };
        tracing::debug!(row = ?row.as_ref().map(|r| (r.seq, r.what)), "outbox");
        let Some(row) = row else {
            // Held cards become due by time, not by a new row: look again at least every second.
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = ready.notified() => continue,
                () = tokio::time::sleep(HELD_RECHECK) => continue,
            }
        };
        let seq = row.seq;
        let attempts = row.attempts;
        let card_of = (row.what == What::Card)
            .then(|| row.record_id.clone())
            .flatten();
        match send_row(
            &store,
            &telegram,
            drawer.as_ref(),
            clock.as_ref(),
            &mut pace,
            row,
        )
        .await
        {
            Ok(()) => {}
            Err(RowError::Send(SendError::Conflict)) => return Err(SendError::Conflict),
            Err(RowError::Send(SendError::Permanent(reason))) => {
                tracing::warn!(seq, %reason, "Telegram refused an outbox row; dropping it");
                let now = clock.now();
                let _ = match card_of {
                    Some(record_id) => {
                        store
                            .call(move |db| db.card_undeliverable(seq, &record_id, &reason, now))
                            .await
                    }
                    None => store.call(move |db| db.outbox_dropped(seq, &reason)).await,
                };
            }
            Err(RowError::Send(error)) => {
                let wait = match &error {
                    SendError::RetryAfter(after) => *after,
                    _ => backoff(attempts),
                };
                tracing::info!(seq, %error, ?wait, "send failed; retrying");
                let text = error.to_string();
                let _ = store
                    .call(move |db| db.outbox_attempt_failed(seq, &text))
                    .await;
                if sleep_or_stop(wait, &shutdown).await {
                    return Ok(());
                }
            }
            Err(RowError::Store(error)) => {
                tracing::error!(seq, %error, "outbox row failed in the store");
                if sleep_or_stop(Duration::from_secs(1), &shutdown).await {
                    return Ok(());
                }
            }
        }
    }
}

/// 1 s, 2 s, 4 s, … up to [`MAX_BACKOFF`].
fn backoff(attempts: i64) -> Duration {
    let exponent = attempts.clamp(0, 5) as u32;
    Duration::from_secs(1u64 << exponent).min(MAX_BACKOFF)
}

/// Sleeps, or returns true at once when shutting down.
async fn sleep_or_stop(wait: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => true,
        () = tokio::time::sleep(wait) => false,
    }
}

async fn send_row(
    store: &Store,
    telegram: &Telegram,
    drawer: &dyn Drawer,
    clock: &dyn Clock,
    pace: &mut Pace,
    row: Row,
) -> Result<(), RowError> {
    let seq = row.seq;
    match row.what {
        What::Message => {
            let class = match row.sound {
                Sound::Silent => None,
                Sound::Urgent => Some(Class::Urgent),
                Sound::Receipt => Some(Class::Receipt),
                Sound::Gated => Some(Class::Summary),
            };
            let silent = match class {
                None => true,
                Some(class) => {
                    let (settings, tz) = drawer.gate();
                    match gate::decide(class, &settings, 0, clock.now(), tz) {
                        Delivery::Loud => false,
                        Delivery::Silent | Delivery::HoldUntil(_) => true,
                        // Counted in the evening summary instead.
                        Delivery::SummaryOnly => {
                            store.call(move |db| db.outbox_sent(seq)).await?;
                            return Ok(());
                        }
                    }
                }
            };
            pace.take().await;
            let text = row.body.text.unwrap_or_default();
            telegram
                .send_text(row.chat_id, &text, &row.body.buttons, silent)
                .await?;
            store.call(move |db| db.outbox_sent(seq)).await?;
        }
        What::Edit => {
            let record_id = row.record_id.clone().unwrap_or_default();
            let lookup = record_id.clone();
            let message_id = store
                .call(move |db| db.record_message_id(&lookup, "card"))
                .await?;
            match message_id {
                Some(message_id) => {
                    pace.take().await;
                    let text = row.body.text.unwrap_or_default();
                    telegram
                        .edit_text(row.chat_id, message_id, &text, &row.body.buttons)
                        .await?;
                    store.call(move |db| db.outbox_sent(seq)).await?;
                }
                // The card was never shown: there is nothing to edit.
                None => {
                    let reason = format!("record {record_id} has no card to edit");
                    store
                        .call(move |db| db.outbox_dropped(seq, &reason))
                        .await?;
                }
            }
        }
        What::Card => send_card(store, telegram, drawer, clock, pace, row).await?,
    }
    Ok(())
}

async fn send_card(
    store: &Store,
    telegram: &Telegram,
    drawer: &dyn Drawer,
    clock: &dyn Clock,
    pace: &mut Pace,
    row: Row,
) -> Result<(), RowError> {
    let seq = row.seq;
    let record_id = row.record_id.clone().unwrap_or_default();
    let lookup = record_id.clone();
    let record = store.call(move |db| db.record(&lookup)).await?;
    // Pending, or opened by an earlier attempt whose send failed: both still need their card.
    let Some(record) = record
        .filter(|record| matches!(record.state, RecordState::Pending | RecordState::CardShown))
    else {
        let reason = format!("record {record_id} ended before its card was sent");
        store
            .call(move |db| db.outbox_dropped(seq, &reason))
            .await?;
        return Ok(());
    };
    let now = clock.now();
    let (settings, tz) = drawer.gate();
    let window = gate::quiet_window(settings.quiet_hours, now, tz);
    let silent = if record.state == RecordState::Pending {
        // Tonight's count: the cards shown since tonight's quiet hours began.
        let tonight = match window {
            Some((start, _)) => store.call(move |db| db.cards_shown_since(start)).await?,
            None => 0,
        };
        let class = Class::Card {
            urgent_ask: record.urgent,
        };
        match gate::decide(class, &settings, tonight, now, tz) {
            Delivery::HoldUntil(until) => {
                // Still pending: its ttl starts when it is shown, after quiet hours.
                store.call(move |db| db.outbox_hold(seq, until)).await?;
                return Ok(());
            }
            Delivery::Silent => true,
            Delivery::Loud | Delivery::SummaryOnly => false,
        }
    } else {
        // A retry of a card already opened (and counted): quiet at night.
        window.is_some()
    };
    // Read once, so the parts and the card are drawn alike.
    let lookup = record_id.clone();
    let known = store.call(move |db| db.known_targets_for(&lookup)).await?;
    let mut drawn = drawer.draw(&record, &known, now, now + drawer.ttl());
    drawn.silent = silent;
    for (index, part) in drawn.parts.iter().enumerate() {
        let role = format!("part{}", index + 1);
        if already_sent(store, &record_id, &role).await? {
            continue;
        }
        pace.take().await;
        let message_id = telegram
            .send_text(row.chat_id, part, &[], drawn.silent)
            .await?;
        remember(store, &record_id, role, message_id).await?;
    }
    for (index, (attachment, caption)) in record.attachments.iter().zip(&drawn.captions).enumerate()
    {
        let role = format!("attachment{}", index + 1);
        if already_sent(store, &record_id, &role).await? {
            continue;
        }
        let path = store.attachment_path(&attachment.sha256);
        let bytes = tokio::fs::read(&path).await.map_err(|error| {
            SendError::Permanent(format!(
                "cannot read attachment {}: {error}",
                path.display()
            ))
        })?;
        pace.take().await;
        let message_id = telegram
            .send_file(
                row.chat_id,
                &attachment.name,
                &attachment.media_type,
                bytes,
                caption,
                drawn.silent,
            )
            .await?;
        remember(store, &record_id, role, message_id).await?;
    }
    // Opened now, after the parts and attachments: the ttl runs from when the card is shown,
    // and the card must be open before it can be pressed. A retry keeps the first deadline.
    pace.take().await;
    let now = clock.now();
    let expires_at = match record.expires_at.as_deref().and_then(parse_time) {
        Some(expires_at) if record.state == RecordState::CardShown => expires_at,
        _ => {
            let expires_at = now + drawer.ttl();
            let opening = record_id.clone();
            let opened = store
                .call(move |db| db.card_showing(&opening, expires_at, now))
                .await?;
            if !opened {
                let reason = format!("record {record_id} ended before its card was sent");
                store
                    .call(move |db| db.outbox_dropped(seq, &reason))
                    .await?;
                return Ok(());
            }
            expires_at
        }
    };
    let card = drawer.draw(&record, &known, now, expires_at);
    let message_id = telegram
        .send_text(row.chat_id, &card.text, &card.buttons, silent)
        .await?;
    store
        .call(move |db| db.card_sent(seq, &record_id, message_id, now))
        .await?;
    Ok(())
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

async fn already_sent(store: &Store, record_id: &str, role: &str) -> Result<bool, StoreError> {
    let (record_id, role) = (record_id.to_owned(), role.to_owned());
    Ok(store
        .call(move |db| db.record_message_id(&record_id, &role))
        .await?
        .is_some())
}

async fn remember(
    store: &Store,
    record_id: &str,
    role: String,
    message_id: i64,
) -> Result<(), StoreError> {
    let record_id = record_id.to_owned();
    store
        .call(move |db| db.record_message(&record_id, &role, message_id))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let waits: Vec<u64> = (0..8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[tokio::test(start_paused = true)]
    async fn pace_allows_a_burst_then_one_a_second() {
        let mut pace = Pace::new();
        let started = Instant::now();
        for _ in 0..3 {
            pace.take().await;
        }
        assert_eq!(started.elapsed(), Duration::ZERO, "the burst goes at once");
        pace.take().await;
        pace.take().await;
        let elapsed = started.elapsed().as_secs_f64();
        assert!(
            (1.9..2.1).contains(&elapsed),
            "then one a second: {elapsed}"
        );
    }
}
