//! A waiting connection's lines after the first: a new interim line each time the record's
//! `waiting` changes (the core's [`waiting`](consentd_core::waiting::waiting) from the card's
//! place in the queue or the chat and from [`Reach`](crate::unreachable::Reach)), at most one
//! per [`SPACING`], then the final line once the record is settled.
//!
//! The record's own changes wake a wait at once (a final line is never held back by the
//! spacing); the owner's reach and other records' changes (a queue moving) wake it too, the
//! latter at most once per [`SPACING`], so a busy daemon costs a waiting connection at most a
//! couple of store reads a second.

use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use consentd_core::waiting::{self, Facts, Place, Waiting};
use consentd_store::{Record, RecordState, StoreError};

use super::{outcome_line, summary_line, Intake, REASON_RECHECK};

/// The least time between two lines on one waiting connection.
pub(crate) const SPACING: Duration = Duration::from_secs(1);

/// What a waiting connection sends next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// The record still waits, for a new reason: this line says so.
    Interim { line: String, waiting: Waiting },
    /// The record is settled: its final line.
    Final(String),
}

impl Intake {
    /// Why `record` waits, while it waits for the owner (pending, or its card shown); `None`
    /// in any other state (granted or running: it no longer waits on the owner).
    pub(crate) async fn waiting_of(&self, record: &Record) -> Result<Option<Waiting>, StoreError> {
        let now = self.clock.now();
        if !matches!(record.state, RecordState::Pending | RecordState::CardShown) {
            return Ok(None);
        }
        // A card still in the queue is not in the chat yet, even once opened (its send is
        // being retried).
        let place = match self.store.card_queue(&record.id, now).await? {
            Some(queue) => Place::Queued {
                ahead: queue.ahead,
                held_until: queue.held_until,
            },
            None => match record.asked_part().and_then(|asked| asked.expires_at) {
                Some(until) if record.state == RecordState::CardShown => Place::Shown { until },
                // Its card row is being settled: it is the sender's next.
                _ => Place::Queued {
                    ahead: 0,
                    held_until: None,
                },
            },
        };
        let unreachable = self
            .reach
            .current()
            .map(|episode| (episode.since, episode.cause));
        Ok(Some(waiting::waiting(Facts {
            place,
            unreachable,
            now,
        })))
    }

    /// Waits until record `id` is settled (its final line) or its `waiting` differs from
    /// `shown`, the last one sent, and `not_before` has passed (an interim line).
    pub(crate) async fn wait_next(
        &self,
        id: &str,
        summary: bool,
        shown: Option<&Waiting>,
        not_before: Instant,
    ) -> Result<Next, StoreError> {
        let mut changes = self.store.subscribe();
        let mut reach = self.reach.watch();
        reach.borrow_and_update();
        loop {
            let record = self.store.record(id).await?.ok_or(StoreError::Missing)?;
            if self.settled(&record) {
                return Ok(Next::Final(match summary {
                    true => summary_line(&record, None),
                    false => outcome_line(&record, None),
                }));
            }
            let waiting = self.waiting_of(&record).await?;
            let computed = Instant::now();
            // Only a record that still waits for the owner gets an interim line.
            let differs = waiting.is_some() && waiting.as_ref() != shown;
            if let Some(waiting) = waiting.filter(|_| differs && computed >= not_before) {
                let line = match summary {
                    true => summary_line(&record, Some(waiting.clone())),
                    false => outcome_line(&record, Some(waiting.clone())),
                };
                return Ok(Next::Interim { line, waiting });
            }
            // Held back for a reason: the clock is read again now and then, as well.
            let mut wake = self
                .reason_wait_left(&record)
                .map(|left| computed + left.min(REASON_RECHECK));
            if differs {
                wake = Some(wake.map_or(not_before, |at| at.min(not_before)));
            }
            let mut others = false;
            loop {
                let at = match others {
                    true => Some(wake.map_or(computed + SPACING, |at| at.min(computed + SPACING))),
                    false => wake,
                };
                let timer = async {
                    match at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = timer => break,
                    Ok(()) = reach.changed() => break,
                    change = changes.recv() => match change {
                        Ok(change) if change.id == id => break,
                        // Missed some changes: read the record again soon rather than guess.
                        Ok(_) | Err(RecvError::Lagged(_)) => others = true,
                        Err(RecvError::Closed) => return Err(StoreError::Stopped),
                    },
                }
            }
        }
    }
}
