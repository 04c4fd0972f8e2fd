//! A card opened with its ask ([`crate::ask::OpenedCard`]), handed from the store's thread to the
//! sender as soon as its batch's requests have run, before the commit that makes it durable: the
//! sender draws it while the commit's fsync runs, and sends it the moment the store's thread
//! confirms the commit. A batch whose commit fails takes its card with it, unsent.
//!
//! The slot holds one card: one handed later replaces it, and the one replaced is sent the
//! usual way, from its outbox row (which stays queued until the sender marks it sent).

use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::ask::OpenedCard;

/// A card the store's thread handed over, with the word on its batch's commit to come.
#[derive(Debug)]
pub struct HandedCard {
    pub card: OpenedCard,
    pub commit: Commit,
}

/// Whether the batch that opened a handed card committed.
#[derive(Debug)]
pub struct Commit(oneshot::Receiver<bool>);

impl Commit {
    /// Waits for the batch's commit: `true` once it is durable, `false` when it failed (the
    /// card's record and row are gone with it) or the store's thread stopped before saying.
    pub async fn durable(self) -> bool {
        self.0.await.unwrap_or(false)
    }
}

/// The store thread's side of a handed card: it says how the batch's commit went.
#[derive(Debug)]
pub(crate) struct Handing(oneshot::Sender<bool>);

impl Handing {
    pub(crate) fn confirm(self, committed: bool) {
        // The sender may have gone (the daemon stopping): nobody is left to tell.
        let _ = self.0.send(committed);
    }
}

/// Where the store's thread leaves a handed card for the sender.
#[derive(Debug, Default)]
pub(crate) struct CardSlot(Mutex<Option<HandedCard>>);

impl CardSlot {
    /// Leaves `card` for the sender; the returned [`Handing`] confirms its commit.
    pub(crate) fn hand(&self, card: OpenedCard) -> Handing {
        let (confirm, commit) = oneshot::channel();
        *self.lock() = Some(HandedCard {
            card,
            commit: Commit(commit),
        });
        Handing(confirm)
    }

    pub(crate) fn take(&self) -> Option<HandedCard> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HandedCard>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
