//! The poller: long-polls getUpdates from the stored offset and hands each batch to the loop,
//! waiting until it is handled, so no update is confirmed to Telegram before its effects are
//! stored. A batch that cannot be read is probed to skip exactly its unreadable update. Telegram
//! refusing the bot (409, 401, a webhook set) or not answering (the network, 5xx) never stops
//! it: it notes the episode in [`Reach`],
//! retries with [`Backoff::unreachable`], and once getUpdates answers again has the loop tell the
//! owner how long they were cut off.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::telegram::{Incoming, Probe, SendError, Telegram, POLL_TIMEOUT_SECS, UNREADABLE};
use crate::unreachable::{self, Cause, Reach};
use consentd_core::clock::Clock;
use consentd_store::Store;

use super::Wake;

/// What the poller works with; `events` is the consent loop's inbox.
pub(super) struct Poller {
    pub(super) store: Store,
    pub(super) telegram: Telegram,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) reach: Reach,
    pub(super) events: mpsc::Sender<Wake>,
}

/// What a round of polling leaves to do.
enum Next {
    Poll,
    Wait(Duration),
    /// The consent loop has gone.
    Stop,
}

/// Failures in a row, for the waits between tries.
#[derive(Default)]
struct Streak {
    /// Network errors, 5xx, unreadable answers.
    failures: u32,
    /// Telegram refusing the bot (409, 401).
    refusals: u32,
}

/// The long-polling loop: one getUpdates at a time from the stored offset; each batch is handed
/// to the consent loop, which stores the next offset with what each update changed, before the
/// next getUpdates confirms them to Telegram.
pub(super) async fn poll(poller: Poller, shutdown: CancellationToken) {
    tokio::select! {
        () = shutdown.cancelled() => return,
        () = poller.check_webhook() => {}
    }
    let mut streak = Streak::default();
    loop {
        let offset = match poller.store.next_offset().await {
            Ok(offset) => offset,
            Err(error) => {
                tracing::error!(%error, "cannot read the polling offset");
                return;
            }
        };
        let batch = tokio::select! {
            () = shutdown.cancelled() => return,
            batch = poller.telegram.updates(offset, POLL_TIMEOUT_SECS) => batch,
        };
        let next = match batch {
            Ok(batch) => {
                streak = Streak::default();
                poller.answered(batch).await
            }
            // The same batch would come back at the same offset: find out whether its first
            // update is the one that cannot be read, without waiting.
            Err(SendError::Malformed(error)) => {
                let probe = tokio::select! {
                    () = shutdown.cancelled() => return,
                    probe = poller.telegram.probe(offset) => probe,
                };
                poller.probed(probe, &error, &mut streak).await
            }
            Err(error) => poller.failed(error, &mut streak),
        };
        let wait = match next {
            Next::Poll => continue,
            Next::Wait(wait) => wait,
            Next::Stop => return,
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

impl Poller {
    /// At start: a webhook set on the bot makes every getUpdates answer 409, so it is said at
    /// once, with how to remove it, as the start of an episode.
    async fn check_webhook(&self) {
        match self.telegram.webhook_url().await {
            Ok(None) => {}
            Ok(Some(_)) => self.reach.refused(Cause::Webhook, self.clock.now()),
            Err(error) => match unreachable::refusal(&error) {
                Some(cause) => self.reach.refused(cause, self.clock.now()),
                None => tracing::debug!(%error, "getWebhookInfo failed"),
            },
        }
    }

    /// getUpdates answered: an episode of refusals ends (the owner is told through the loop),
    /// and the batch is handed over.
    async fn answered(&self, batch: Vec<Incoming>) -> Next {
        if let Some(ended) = self.reach.answered(self.clock.now()) {
            if self.events.send(Wake::Reachable(ended)).await.is_err() {
                return Next::Stop;
            }
        }
        if batch.is_empty() || hand_over(batch, &self.events).await {
            Next::Poll
        } else {
            Next::Stop
        }
    }

    /// What a probe of an unreadable batch (`error`) found.
    async fn probed(
        &self,
        probe: Result<Probe, SendError>,
        error: &str,
        streak: &mut Streak,
    ) -> Next {
        // A 429 answering the probe binds the next getUpdates like any other.
        let mut retry_after = Duration::ZERO;
        match probe {
            Ok(Probe::Read(batch)) if !batch.is_empty() => {
                *streak = Streak::default();
                return self.answered(batch).await;
            }
            Ok(Probe::Unreadable {
                update_id,
                error: why,
            }) => {
                // Skipped, never acted on: nothing in it can be trusted, and only the offset
                // moves (past it alone); the loop logs the skip.
                tracing::warn!(update_id, %why, "this update makes its batch unreadable");
                let skip = Incoming::Other {
                    update_id,
                    what: UNREADABLE,
                };
                return match hand_over(vec![skip], &self.events).await {
                    true => Next::Poll,
                    false => Next::Stop,
                };
            }
            Ok(Probe::Read(_)) => {}
            Err(SendError::RetryAfter(after)) => retry_after = after,
            Err(probe_error) if unreachable::refusal(&probe_error).is_some() => {
                return self.failed(probe_error, streak);
            }
            Err(probe_error) => tracing::debug!(%probe_error, "probing the batch failed"),
        }
        streak.failures += 1;
        tracing::warn!(%error, "getUpdates answered unreadably; retrying");
        Next::Wait(Backoff::TELEGRAM.after(streak.failures).max(retry_after))
    }

    /// getUpdates failed: a refusal of the bot is an episode, said once and retried up to a
    /// minute apart; the network or a 5xx opens one too (waiting sessions hear the owner is out
    /// of reach), retried on Telegram's backoff like anything else.
    fn failed(&self, error: SendError, streak: &mut Streak) -> Next {
        if let Some(cause) = unreachable::outage(&error) {
            self.reach.refused(cause, self.clock.now());
        }
        if let Some(cause) = unreachable::refusal(&error) {
            self.reach.refused(cause, self.clock.now());
            tracing::debug!(%error, "getUpdates refused; retrying");
            let wait = Backoff::unreachable().after(streak.refusals);
            streak.refusals = streak.refusals.saturating_add(1);
            return Next::Wait(wait);
        }
        match error {
            SendError::RetryAfter(after) => Next::Wait(after),
            error => {
                streak.failures += 1;
                tracing::warn!(%error, "getUpdates failed; retrying");
                Next::Wait(Backoff::TELEGRAM.after(streak.failures))
            }
        }
    }
}

/// Hands a batch to the consent loop in `update_id` order and waits until it is handled; false
/// when the loop has gone. Telegram sends updates in order, but a batch out of order would
/// otherwise lose its lower ids: the loop skips any id below the offset already stored.
async fn hand_over(mut batch: Vec<Incoming>, events: &mpsc::Sender<Wake>) -> bool {
    batch.sort_by_key(Incoming::update_id);
    let (done, handled) = oneshot::channel();
    if events.send(Wake::Updates(batch, done)).await.is_err() {
        return false;
    }
    let _ = handled.await;
    true
}
