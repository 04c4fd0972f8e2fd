//! The outbox's one sender: sends queued rows lane by lane (urgent notices, then cards, then
//! edits, receipts and the rest; `lanes`), each lane in order, all paced together to about one
//! message a second to the owner's chat with short bursts, retrying network errors and 5xx with backoff and honouring
//! a 429's `retry_after`. A card row is drawn when it is sent, so its ttl starts when the owner
//! can see it; its text parts and attachments go first, each remembered once sent, so a restart
//! resumes where it stopped. Telegram refusing the bot (409, 401), or a 403 on the owner's chat
//! (they blocked it), holds every lane, up to a minute between tries, and never stops the
//! daemon: the rows wait and go once it answers (a 403 elsewhere drops its row).

mod card;
mod lanes;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::telegram::{SendError, Sent, Telegram};
use crate::unreachable::{self, Cause, Reach, Unreachable};
use consentd_core::card::CardError;
use consentd_core::clock::Clock;
use consentd_core::digest::AttachmentFacts;
use consentd_core::gate::{self, Delivery, NoticeClass};
use consentd_core::lookalike::KnownTargets;
use consentd_core::styled::Styled;
use consentd_store::drawn::Drawn;
use consentd_store::outbox::{ButtonSpec, Head, Lane, Row, Sound, What};
use consentd_store::stored;
use consentd_store::{Record, SenderNote, Store, StoreError};

use card::send_card;
use lanes::{Choice, LaneView};

/// Messages a burst may hold; after it, one a second.
pub(crate) const BURST: f64 = 3.0;
/// How often the sender looks for held cards that have become due.
const HELD_RECHECK: Duration = Duration::from_secs(1);

/// A card as drawn for sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DrawnCard {
    /// The text's numbered parts, sent before the card (empty when the text fits the card).
    pub parts: Vec<Styled>,
    /// A caption per attachment, in order.
    pub captions: Vec<Styled>,
    pub text: Styled,
    pub buttons: Vec<ButtonSpec>,
}

/// Draws a record's card; implemented by the consent loop, which knows the locale and the key.
pub(crate) trait Drawer: Send + Sync + std::fmt::Debug {
    /// The card for `record`, answerable until `expires_at`, its targets (and one-word field
    /// values) compared with `known`; an error for a mandate card that its warnings no longer
    /// let fit one message (an ask's card always fits: the intake kept room for them).
    fn draw(
        &self,
        record: &Record,
        known: &KnownTargets,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<DrawnCard, CardError>;
    /// How long a shown card may be answered.
    fn ttl(&self) -> chrono::Duration;
    /// The gate's settings as the owner last set them, and the owner's zone.
    fn gate(&self) -> (consentd_core::config::Gate, chrono_tz::Tz);
    /// The owner's chat, once paired: a 403 there means they blocked the bot.
    fn owner_chat(&self) -> Option<i64>;
}

/// Held by the sender from the moment it sends or edits a message until the store knows what the
/// message now carries (its id, its text as Telegram returned it, its buttons). A press reads
/// those facts only once it can take the lock, so a press on a card that has just appeared
/// (Telegram answers the owner and the sender at the same time) is judged against the card as
/// drawn, not against a store that has not heard of it yet.
pub(crate) type Drawing = Arc<tokio::sync::Mutex<()>>;

/// What a message with buttons was drawn with, as Telegram returned it; `None` when its answer
/// said nothing (an edit that changed nothing leaves what was recorded before).
fn drawn_from(sent: &Sent, buttons: &[ButtonSpec]) -> Option<Drawn> {
    Some(Drawn {
        shows: sent.shows.clone()?,
        buttons: buttons.iter().map(|button| button.data.clone()).collect(),
    })
}

/// A token bucket: `BURST` at once, then one a second.
#[derive(Debug)]
struct Pace {
    tokens: f64,
    last: Instant,
    /// Off only in a test that replays days of simulated time (`clock::unpaced`).
    unpaced: bool,
}

impl Pace {
    fn new() -> Self {
        Pace {
            tokens: BURST,
            last: Instant::now(),
            unpaced: crate::clock::unpaced(),
        }
    }

    async fn take(&mut self) {
        if self.unpaced {
            return;
        }
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

/// What the sender works with.
#[derive(Debug)]
pub(crate) struct SenderParts {
    pub store: Store,
    pub telegram: Telegram,
    pub drawer: Arc<dyn Drawer>,
    pub clock: Arc<dyn Clock>,
    pub drawing: Drawing,
    /// Where a refusal of the bot itself (409, 401) or the owner's block (403) is noted, once
    /// per episode.
    pub reach: Reach,
    /// Where a block that a delivery ended goes, for the consent loop to tell the owner.
    pub unblocked: tokio::sync::mpsc::UnboundedSender<Unreachable>,
}

/// Runs the sender until `shutdown`. Nothing Telegram answers stops it.
pub(crate) async fn run(parts: SenderParts, shutdown: CancellationToken) {
    let SenderParts {
        store,
        telegram,
        drawer,
        clock,
        drawing,
        reach,
        unblocked,
    } = parts;
    let ready = store.outbox_ready();
    let mut pace = Pace::new();
    let mut backoffs = Backoffs::default();
    let out = Out {
        store: &store,
        telegram: &telegram,
        drawer: drawer.as_ref(),
        clock: clock.as_ref(),
        drawing: &drawing,
        reach: &reach,
        unblocked: &unblocked,
    };
    loop {
        // Checked before every row: with a long backlog the outbox is never empty, and a row in
        // flight is finished rather than cut (cutting it could send it twice after a restart).
        if shutdown.is_cancelled() {
            return;
        }
        let now = clock.now();
        let heads = match store.lane_heads(now).await {
            Ok(heads) => heads,
            Err(error) => {
                tracing::error!(%error, "cannot read the outbox");
                if sleep_or_stop(Duration::from_secs(1), &shutdown).await {
                    return;
                }
                continue;
            }
        };
        let views: Vec<(Lane, LaneView)> = heads
            .iter()
            .map(|(lane, head)| (*lane, backoffs.view(*lane, head.as_ref())))
            .collect();
        let wake = match lanes::choose(&views, Instant::now()) {
            Choice::Send(lane) => {
                let Some(head) = heads
                    .into_iter()
                    .find(|(l, _)| *l == lane)
                    .and_then(|h| h.1)
                else {
                    continue;
                };
                tracing::debug!(seq = head.row.seq, what = ?head.row.what, ?lane, "outbox");
                let outcome = send_row(&out, &mut pace, head.row.clone()).await;
                match settle(&out, lane, &head.row, outcome, &mut backoffs).await {
                    Some(wait) if sleep_or_stop(wait, &shutdown).await => return,
                    _ => continue,
                }
            }
            Choice::WaitUntil(until) => until.min(Instant::now() + HELD_RECHECK),
            // Held cards become due by time, not by a new row: look again at least every second.
            Choice::Idle => Instant::now() + HELD_RECHECK,
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = ready.notified() => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}

/// The lanes whose oldest row failed, each with that row and when it may be tried again. A
/// lane waits out its own backoff; the others go on meanwhile.
#[derive(Debug, Default)]
struct Backoffs(HashMap<Lane, (i64, Instant)>);

impl Backoffs {
    /// What `lane` offers, its oldest row being `head`.
    fn view(&self, lane: Lane, head: Option<&Head>) -> LaneView {
        let backoff_until = match (self.0.get(&lane), head) {
            (Some((seq, until)), Some(head)) if *seq == head.row.seq => Some(*until),
            _ => None,
        };
        LaneView {
            has_row: head.is_some(),
            waits_for_card: head.is_some_and(|head| head.waits_for_card),
            backoff_until,
        }
    }
}

/// Records how a row's send went. Returns how long the whole sender waits before the next row:
/// a 429's `retry_after` and a refusal of the bot (409, 401) hold every lane, for Telegram's
/// limit and its refusal are the bot's, not a lane's.
async fn settle(
    out: &Out<'_>,
    lane: Lane,
    row: &Row,
    outcome: Result<(), RowError>,
    backoffs: &mut Backoffs,
) -> Option<Duration> {
    let (store, seq) = (out.store, row.seq);
    let to_owner = out.drawer.owner_chat() == Some(row.chat_id);
    match outcome {
        Ok(()) => {
            backoffs.0.remove(&lane);
            if let Some(ended) = to_owner
                .then(|| out.reach.delivered(out.clock.now()))
                .flatten()
            {
                let _ = out.unblocked.send(ended);
            }
            None
        }
        Err(RowError::Send(SendError::Forbidden(error))) if to_owner => {
            // The owner blocked the bot: the row waits, unsent, like every other lane, until
            // they unblock it; nothing is dropped and no card ends for it.
            let _ = store
                .sent(SenderNote::AttemptFailed {
                    seq,
                    error: error.clone(),
                })
                .await;
            out.reach.refused(Cause::Blocked, out.clock.now());
            let wait = Backoff::unreachable().after(attempts(row.attempts));
            tracing::debug!(seq, %error, ?wait, "the owner blocked the bot; every lane waits");
            Some(wait)
        }
        Err(RowError::Send(SendError::Permanent(reason) | SendError::Forbidden(reason))) => {
            backoffs.0.remove(&lane);
            tracing::warn!(seq, %reason, "Telegram refused an outbox row; dropping it");
            let now = out.clock.now();
            let card_of = (row.what == What::Card)
                .then(|| row.record_id.clone())
                .flatten();
            let _ = match card_of {
                Some(record_id) => {
                    store
                        .sent(SenderNote::CardUndeliverable {
                            seq,
                            record_id,
                            reason,
                            now,
                        })
                        .await
                }
                None => store.sent(SenderNote::Dropped { seq, error: reason }).await,
            };
            None
        }
        Err(RowError::Send(error)) => {
            let text = error.to_string();
            let _ = store
                .sent(SenderNote::AttemptFailed { seq, error: text })
                .await;
            if let Some(cause) = unreachable::refusal(&error) {
                // Said once per episode (`Reach`); the row waits, unsent, for Telegram.
                out.reach.refused(cause, out.clock.now());
                let wait = Backoff::unreachable().after(attempts(row.attempts));
                tracing::debug!(seq, %error, ?wait, "Telegram refuses the bot; every lane waits");
                return Some(wait);
            }
            match error {
                SendError::RetryAfter(after) => {
                    tracing::info!(seq, %error, ?after, "rate limited; every lane waits");
                    Some(after)
                }
                _ => {
                    let wait = backoff(row.attempts);
                    tracing::info!(seq, %error, ?wait, ?lane, "send failed; retrying");
                    backoffs.0.insert(lane, (seq, Instant::now() + wait));
                    None
                }
            }
        }
        Err(RowError::Store(error)) => {
            tracing::error!(seq, %error, "outbox row failed in the store");
            Some(Duration::from_secs(1))
        }
    }
}

/// The wait before trying a row again after `attempts` failed tries.
fn backoff(tries: i64) -> Duration {
    Backoff::TELEGRAM.after(attempts(tries))
}

/// A row's failed tries as a backoff counts them.
fn attempts(tries: i64) -> u32 {
    u32::try_from(tries.max(0)).unwrap_or(u32::MAX)
}

/// Sleeps, or returns true at once when shutting down.
async fn sleep_or_stop(wait: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => true,
        () = tokio::time::sleep(wait) => false,
    }
}

/// What sending a row needs.
struct Out<'a> {
    store: &'a Store,
    telegram: &'a Telegram,
    drawer: &'a dyn Drawer,
    clock: &'a dyn Clock,
    drawing: &'a Drawing,
    reach: &'a Reach,
    unblocked: &'a tokio::sync::mpsc::UnboundedSender<Unreachable>,
}

async fn send_row(out: &Out<'_>, pace: &mut Pace, row: Row) -> Result<(), RowError> {
    let seq = row.seq;
    let store = out.store;
    match row.what {
        What::Message => {
            let class = match row.sound {
                Sound::Silent => None,
                Sound::Urgent => Some(NoticeClass::Urgent),
                Sound::Receipt => Some(NoticeClass::Receipt),
                Sound::Gated => Some(NoticeClass::Summary),
            };
            let silent = match class {
                None => true,
                Some(class) => {
                    let (settings, tz) = out.drawer.gate();
                    match gate::decide(class, &settings, 0, out.clock.now(), tz) {
                        Delivery::Loud => false,
                        Delivery::Silent => true,
                        // A routine receipt in quiet hours waits for the evening summary,
                        // which releases it (`Store::send_summary`); later rows go on meanwhile.
                        Delivery::HoldUntil(until) => {
                            store.sent(SenderNote::Hold { seq, until }).await?;
                            return Ok(());
                        }
                        // Counted in the evening summary instead.
                        Delivery::SummaryOnly => {
                            store.sent(SenderNote::Done { seq }).await?;
                            return Ok(());
                        }
                    }
                }
            };
            if let Some(document) = &row.body.document {
                // A receipt's attachment, sent as a card's is: the bytes checked first.
                let bytes = read_attachment(store, document).await?;
                pace.take().await;
                let caption = row.body.styled();
                out.telegram
                    .send_file(row.chat_id, &document.name, bytes, &caption, silent)
                    .await?;
                store.sent(SenderNote::Done { seq }).await?;
                return Ok(());
            }
            pace.take().await;
            let text = row.body.styled();
            let buttons = row.body.buttons;
            // Only a message with buttons can be pressed: only its send holds presses back.
            let _drawing = match buttons.is_empty() {
                true => None,
                false => Some(out.drawing.lock().await),
            };
            let sent = out
                .telegram
                .send_text(row.chat_id, &text, &buttons, silent)
                .await?;
            if let Some(drawn) = drawn_from(&sent, &buttons).filter(|_| !buttons.is_empty()) {
                let (chat, now) = (row.chat_id, out.clock.now());
                store
                    .sent(SenderNote::Drawn {
                        chat,
                        message_id: sent.message_id,
                        drawn,
                        now,
                    })
                    .await?;
            }
            store.sent(SenderNote::Done { seq }).await?;
        }
        What::Edit => send_edit(out, pace, row).await?,
        What::Card => send_card(out, pace, row).await?,
    }
    Ok(())
}

/// Edits a record's card, or the row's own message. An edit that takes its buttons away leaves
/// nothing to press on it; one without text takes only the buttons away.
async fn send_edit(out: &Out<'_>, pace: &mut Pace, row: Row) -> Result<(), RowError> {
    let (store, seq, chat) = (out.store, row.seq, row.chat_id);
    let message_id = match row.message_id {
        Some(message_id) => Some(message_id),
        None => {
            let lookup = row.record_id.clone().unwrap_or_default();
            store.record_message_id(&lookup, "card").await?
        }
    };
    let Some(message_id) = message_id else {
        // The card was never shown: there is nothing to edit.
        let record_id = row.record_id.unwrap_or_default();
        let reason = format!("record {record_id} has no card to edit");
        store
            .sent(SenderNote::Dropped { seq, error: reason })
            .await?;
        return Ok(());
    };
    pace.take().await;
    if row.body.text.is_none() {
        out.telegram.remove_buttons(chat, message_id).await?;
        store.sent(SenderNote::Undrawn { chat, message_id }).await?;
        store.sent(SenderNote::Done { seq }).await?;
        return Ok(());
    }
    let text = row.body.styled();
    let buttons = row.body.buttons;
    let _drawing = out.drawing.lock().await;
    let sent = out
        .telegram
        .edit_text(chat, message_id, &text, &buttons)
        .await?;
    let now = out.clock.now();
    match drawn_from(&sent, &buttons) {
        _ if buttons.is_empty() => store.sent(SenderNote::Undrawn { chat, message_id }).await?,
        Some(drawn) => {
            store
                .sent(SenderNote::Drawn {
                    chat,
                    message_id,
                    drawn,
                    now,
                })
                .await?
        }
        // Not modified: it shows what was recorded before.
        None => {}
    }
    store.sent(SenderNote::Done { seq }).await?;
    Ok(())
}

/// An attachment's stored bytes, checked against the record's SHA-256 and size before they are
/// uploaded: the owner must be shown exactly the bytes the card's digest covers. A copy that
/// changed since the ask (or cannot be read) is a permanent failure, so the card is dropped as
/// undeliverable and its record ends expired; the run's own check would refuse it anyway.
async fn read_attachment(store: &Store, facts: &AttachmentFacts) -> Result<Vec<u8>, SendError> {
    let path = store.attachment_path(&facts.sha256);
    let expected = stored::Expected {
        sha256: facts.sha256.clone(),
        bytes: facts.bytes,
    };
    let read = tokio::task::spawn_blocking(move || stored::read(&path, &expected)).await;
    let name = &facts.name;
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(problem)) if problem.is_change() => Err(SendError::Permanent(format!(
            "attachment {name:?} changed after it was asked for, so its card was not sent: {problem}"
        ))),
        Ok(Err(problem)) => Err(SendError::Permanent(format!(
            "attachment {name:?}: {problem}"
        ))),
        Err(error) => Err(SendError::Permanent(format!(
            "attachment {name:?}: the read did not finish: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_backoff_is_telegrams_from_its_first_failure() {
        let waits: Vec<u64> = (-1..7).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 1, 2, 4, 8, 16, 30, 30]);
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
