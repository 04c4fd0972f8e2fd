//! The poller: long-polls getUpdates from the stored offset and hands each batch to the loop,
//! waiting until it is handled, so no update is confirmed to Telegram before its effects are
//! stored. A batch that cannot be read is probed to skip exactly its unreadable update.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::telegram::{Incoming, Probe, SendError, Telegram, POLL_TIMEOUT_SECS, UNREADABLE};
use consentd_store::Store;

use super::Wake;

/// The long-polling loop: one getUpdates at a time from the stored offset; each batch is handed
/// to the consent loop, which stores the next offset with what each update changed, before the
/// next getUpdates confirms them to Telegram.
pub(super) async fn poll(
    store: Store,
    telegram: Telegram,
    events: mpsc::Sender<Wake>,
    shutdown: CancellationToken,
    conflict: CancellationToken,
) {
    let mut failures: u32 = 0;
    loop {
        let offset = match store.next_offset().await {
            Ok(offset) => offset,
            Err(error) => {
                tracing::error!(%error, "cannot read the polling offset");
                return;
            }
        };
        let batch = tokio::select! {
            () = shutdown.cancelled() => return,
            batch = telegram.updates(offset, POLL_TIMEOUT_SECS) => batch,
        };
        let wait = match batch {
            Ok(batch) if batch.is_empty() => {
                failures = 0;
                continue;
            }
            Ok(batch) => {
                failures = 0;
                if !hand_over(batch, &events).await {
                    return;
                }
                continue;
            }
            // The same batch would come back at the same offset: find out whether its first
            // update is the one that cannot be read, without waiting.
            Err(SendError::Malformed(error)) => {
                let probe = tokio::select! {
                    () = shutdown.cancelled() => return,
                    probe = telegram.probe(offset) => probe,
                };
                // A 429 answering the probe binds the next getUpdates like any other.
                let mut retry_after = Duration::ZERO;
                match probe {
                    Ok(Probe::Read(batch)) if !batch.is_empty() => {
                        failures = 0;
                        if !hand_over(batch, &events).await {
                            return;
                        }
                        continue;
                    }
                    Ok(Probe::Unreadable {
                        update_id,
                        error: why,
                    }) => {
                        // Skipped, never acted on: nothing in it can be trusted, and only the
                        // offset moves (past it alone); the loop logs the skip.
                        tracing::warn!(update_id, %why, "this update makes its batch unreadable");
                        let skip = Incoming::Other {
                            update_id,
                            what: UNREADABLE,
                        };
                        if !hand_over(vec![skip], &events).await {
                            return;
                        }
                        continue;
                    }
                    Ok(Probe::Read(_)) => {}
                    Err(SendError::Conflict) => {
                        tracing::error!("Telegram answered 409 Conflict while probing; stopping");
                        conflict.cancel();
                        return;
                    }
                    Err(SendError::RetryAfter(after)) => retry_after = after,
                    Err(probe_error) => tracing::debug!(%probe_error, "probing the batch failed"),
                }
                failures += 1;
                tracing::warn!(%error, "getUpdates answered unreadably; retrying");
                Backoff::TELEGRAM.after(failures).max(retry_after)
            }
            Err(SendError::Conflict) => {
                tracing::error!(
                    "Telegram answered 409 Conflict: another program is polling this bot; stopping"
                );
                conflict.cancel();
                return;
            }
            Err(SendError::RetryAfter(after)) => after,
            Err(error) => {
                failures += 1;
                tracing::warn!(%error, "getUpdates failed; retrying");
                Backoff::TELEGRAM.after(failures)
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
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
