//! What peers may hold of the daemon: request bytes in flight, and connections per uid.
//!
//! Policy:
//! - **Bytes in flight.** Every byte of a request line is counted against one budget shared by
//!   all connections (`max_request_bytes_in_flight`) before it is read, and stays counted until
//!   the request has been handled, since the parsed request and its decoded attachments live as
//!   long. Room for the next bytes is taken in steps that grow with the line (4 KiB, then as much
//!   again as it holds, at most 1 MiB), so a small request costs little. A connection that holds
//!   nothing yet waits up to [`BUDGET_WAIT`] for its first step; one that already holds room and
//!   finds none for its next step does not wait: it gives back what it holds and is refused
//!   `too_large` at once. So the bytes are never buffered beyond the budget, and no connection
//!   waits while holding room another needs (holding and waiting is how partial lines would
//!   starve each other until the read timeout). Two requests of the largest size always fit the
//!   default budget side by side.
//! - **Each uid's share of the bytes.** One uid may hold at most half the budget, or one
//!   request of the largest size if that is more ([`ByteBudget::with_share`]); past its share it
//!   is refused at once, so one uid's unfinished lines can never take the room every other uid
//!   needs.
//! - **Per socket.** Each share is a peer's: a uid through one socket ([`PeerKey`]); the
//!   budget in all and the connection cap are the daemon's, shared by every socket.
//! - **Connections per uid.** Each uid may hold `max_connections_per_uid` connections (waiting
//!   ones included), far below the socket's cap in all, so one uid holding its whole share, or
//!   every waiting ask it may have, leaves the socket open to every other uid.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A peer as the budgets count it: a uid through one socket (its index among the sockets
/// served, the main one first), so a uid's share on one socket is apart from its share on
/// another (`[[listen]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PeerKey {
    pub socket: usize,
    pub uid: u32,
}

impl From<u32> for PeerKey {
    /// The uid on the main socket.
    fn from(uid: u32) -> Self {
        PeerKey { socket: 0, uid }
    }
}

/// How long a connection waits for room in the budget before it is refused.
pub(crate) const BUDGET_WAIT: Duration = Duration::from_secs(1);

/// The smallest and the largest step a request line's room grows by.
const FIRST_STEP: usize = 4 * 1024;
const LARGEST_STEP: usize = 1024 * 1024;

/// The request bytes all connections may hold together, and each uid.
#[derive(Debug, Clone)]
pub(crate) struct ByteBudget {
    room: Arc<Semaphore>,
    total: u64,
    /// Bytes each uid holds, and the most one may.
    shares: Arc<Mutex<HashMap<PeerKey, usize>>>,
    share: usize,
}

/// The budget one connection holds; given back when dropped.
#[derive(Debug, Default)]
pub(crate) struct Held {
    permit: Option<OwnedSemaphorePermit>,
    share: Option<ShareHeld>,
}

/// What one connection holds of its uid's share.
#[derive(Debug)]
struct ShareHeld {
    uid: PeerKey,
    bytes: usize,
    shares: Arc<Mutex<HashMap<PeerKey, usize>>>,
}

impl Drop for ShareHeld {
    fn drop(&mut self) {
        let mut shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = shares.get_mut(&self.uid) {
            *held = held.saturating_sub(self.bytes);
            if *held == 0 {
                shares.remove(&self.uid);
            }
        }
    }
}

impl Held {
    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.permit
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits)
    }
}

/// The budget, or the uid's share of it, had no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exhausted {
    /// The whole budget, for the refusal's message.
    pub total: u64,
    /// The uid's share, when that is what ran out.
    pub share: Option<usize>,
}

impl ByteBudget {
    /// A budget of `total` bytes, a uid's share being all of it (one peer alone, in tests).
    #[cfg(test)]
    pub(crate) fn new(total: u64) -> Self {
        Self::with_share(total, usize::try_from(total).unwrap_or(usize::MAX))
    }

    /// A budget of `total` bytes of which one uid may hold `share`.
    pub(crate) fn with_share(total: u64, share: usize) -> Self {
        // The config's ceiling (256 MiB) is far below what a semaphore can count.
        let permits = usize::try_from(total).unwrap_or(Semaphore::MAX_PERMITS);
        ByteBudget {
            room: Arc::new(Semaphore::new(permits.min(Semaphore::MAX_PERMITS))),
            total,
            shares: Arc::default(),
            share,
        }
    }

    /// Counts `bytes` more against `uid`'s share, or says the share is full.
    fn take_share(&self, held: &mut Held, uid: PeerKey, bytes: usize) -> Result<(), Exhausted> {
        let mut shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
        let holds = shares.entry(uid).or_insert(0);
        if *holds + bytes > self.share {
            return Err(Exhausted {
                total: self.total,
                share: Some(self.share),
            });
        }
        *holds += bytes;
        drop(shares);
        match &mut held.share {
            Some(share) => share.bytes += bytes,
            empty => {
                *empty = Some(ShareHeld {
                    uid,
                    bytes,
                    shares: self.shares.clone(),
                })
            }
        }
        Ok(())
    }

    /// How much room a line of `len` bytes asks for next: as much again as it holds, within
    /// the steps' bounds, and never past `left` (the bytes the line may still grow by).
    pub(crate) fn next_step(len: usize, left: usize) -> usize {
        len.clamp(FIRST_STEP, LARGEST_STEP).min(left).max(1)
    }

    /// Adds `bytes` to what `held` holds: at once when it holds some already, else waiting at
    /// most `wait` for them. On failure `held` is unchanged; the caller drops it to give its
    /// room back.
    pub(crate) async fn take(
        &self,
        held: &mut Held,
        uid: impl Into<PeerKey>,
        bytes: usize,
        wait: Duration,
    ) -> Result<(), Exhausted> {
        let uid = uid.into();
        let exhausted = Exhausted {
            total: self.total,
            share: None,
        };
        let count = u32::try_from(bytes).map_err(|_| exhausted)?;
        let more = match self.room.clone().try_acquire_many_owned(count) {
            Ok(more) => more,
            Err(_) if held.permit.is_some() => return Err(exhausted),
            Err(_) => tokio::time::timeout(wait, self.room.clone().acquire_many_owned(count))
                .await
                .map_err(|_| exhausted)?
                // The semaphore is never closed.
                .map_err(|_| exhausted)?,
        };
        // Dropping `more` on a full share gives the room back.
        self.take_share(held, uid, bytes)?;
        match &mut held.permit {
            Some(permit) => permit.merge(more),
            empty => *empty = Some(more),
        }
        Ok(())
    }

    /// Bytes free now, for tests.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.room.available_permits()
    }
}

/// Connections held per uid.
#[derive(Debug)]
pub(crate) struct PeerSlots {
    held: Arc<Mutex<HashMap<PeerKey, usize>>>,
    cap: usize,
}

/// One connection of a uid; gives its slot back when dropped.
#[derive(Debug)]
pub(crate) struct PeerSlot {
    held: Arc<Mutex<HashMap<PeerKey, usize>>>,
    uid: PeerKey,
}

impl PeerSlots {
    pub(crate) fn new(cap: usize) -> Self {
        PeerSlots {
            held: Arc::default(),
            cap,
        }
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// A slot for `uid`, or `None` when it already holds its whole share.
    pub(crate) fn try_take(&self, uid: impl Into<PeerKey>) -> Option<PeerSlot> {
        let uid = uid.into();
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(uid).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            held: self.held.clone(),
            uid,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.uid) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_grow_with_the_line_within_their_bounds() {
        let cases = [
            // (bytes held, bytes the line may still grow by, next step)
            (0, usize::MAX, FIRST_STEP),
            (100, usize::MAX, FIRST_STEP),
            (64 * 1024, usize::MAX, 64 * 1024),
            (8 * 1024 * 1024, usize::MAX, LARGEST_STEP),
            (0, 10, 10),
            (5 * 1024 * 1024, 3, 3),
            (0, 0, 1),
        ];
        for (len, left, step) in cases {
            assert_eq!(
                ByteBudget::next_step(len, left),
                step,
                "len {len}, left {left}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn room_is_shared_waited_for_within_the_bound_and_given_back() {
        let budget = ByteBudget::new(10);
        let mut first = Held::default();
        budget.take(&mut first, 1, 6, BUDGET_WAIT).await.unwrap();
        budget.take(&mut first, 1, 2, BUDGET_WAIT).await.unwrap();
        assert_eq!(first.bytes(), 8);
        assert_eq!(budget.free(), 2);
        // Holding room, it does not wait for more: refused at once, keeping what it holds.
        let started = tokio::time::Instant::now();
        assert_eq!(
            budget.take(&mut first, 1, 3, BUDGET_WAIT).await,
            Err(Exhausted {
                total: 10,
                share: None
            })
        );
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(first.bytes(), 8);
        // Not there within the wait: refused, and the second holds nothing.
        let mut second = Held::default();
        let started = tokio::time::Instant::now();
        assert_eq!(
            budget.take(&mut second, 1, 3, BUDGET_WAIT).await,
            Err(Exhausted {
                total: 10,
                share: None
            })
        );
        assert_eq!(started.elapsed(), BUDGET_WAIT);
        assert_eq!(second.bytes(), 0);
        // Given back while another waits: the waiter gets it.
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut third = Held::default();
                budget
                    .take(&mut third, 1, 9, BUDGET_WAIT)
                    .await
                    .map(|()| third)
            })
        };
        tokio::task::yield_now().await;
        drop(first);
        let third = waiter.await.unwrap().unwrap();
        assert_eq!(third.bytes(), 9);
        assert_eq!(budget.free(), 1);
        drop(third);
        assert_eq!(budget.free(), 10);
    }

    #[tokio::test]
    async fn a_step_larger_than_the_whole_budget_is_refused_at_once_after_the_wait() {
        let budget = ByteBudget::new(4);
        let mut held = Held::default();
        assert!(budget
            .take(&mut held, 1, 5, Duration::from_millis(1))
            .await
            .is_err());
        assert_eq!(budget.free(), 4);
    }

    #[tokio::test]
    async fn one_uid_holds_at_most_its_share_and_another_finds_room() {
        let budget = ByteBudget::with_share(10, 6);
        let mut first = Held::default();
        budget.take(&mut first, 1, 4, BUDGET_WAIT).await.unwrap();
        // The same uid on another connection: past its share of 6, refused at once.
        let mut second = Held::default();
        assert_eq!(
            budget.take(&mut second, 1, 3, BUDGET_WAIT).await,
            Err(Exhausted {
                total: 10,
                share: Some(6)
            })
        );
        assert_eq!(budget.free(), 6, "the refused take gave its room back");
        // Another uid has the rest.
        let mut other = Held::default();
        budget.take(&mut other, 2, 6, BUDGET_WAIT).await.unwrap();
        drop(first);
        budget.take(&mut second, 1, 3, BUDGET_WAIT).await.unwrap();
        assert_eq!(second.bytes(), 3, "the share given back is free again");
    }

    #[test]
    fn each_uid_has_its_own_share_given_back_on_drop() {
        let slots = PeerSlots::new(2);
        let a1 = slots.try_take(1000).unwrap();
        let _a2 = slots.try_take(1000).unwrap();
        assert!(slots.try_take(1000).is_none(), "a third for the same uid");
        let _b1 = slots.try_take(1001).expect("another uid is not held up");
        drop(a1);
        assert!(slots.try_take(1000).is_some(), "a slot given back is free");
    }
}
