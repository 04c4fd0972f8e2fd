//! The consent loop: what the owner's chat does to records, and what records do to the chat.
//!
//! One task handles `Wake`s one at a time: a batch of Telegram updates (each handled with its
//! next offset stored in the same transaction as what it changed), the expiry sweep's tick, and
//! from the intake an ask a mandate covered or a session's withdraw. Deciding is done by pure
//! functions — [`consentd_core::press::verify`],
//! [`consentd_core::pairing::decide`], the card renderers — and this module does the IO around them.
//!
//! This file holds the loop itself (the `Consent` it runs on, its `Wake`s, starting and
//! stopping, handing each update to its handler) and the facts its parts share. The parts are
//! `impl Consent` blocks split by what the owner or the clock did, so each reads on its own:
//! - `press`: a button press, judged (`consentd_core::press::verify`) and then applied — Yes, No,
//!   Grant, Decline, Resume, Stop, or a rejection;
//! - `stale`: why a press on a button that has moved on is refused, in the owner's words;
//! - `owner_text`: the owner's text — commands, settings, `/categories` and its switches;
//! - `reply`: a reply to a declined card, the No's reason;
//! - `pairing`: `/start` with a pairing code while there is no owner;
//! - `runs`: claiming a granted record, running it, recording how it ended;
//! - `suggest`: a mandate suggested after the owner's yeses, and its button's press;
//! - `raise`: Raise today on the receipt that used a mandate's day up, and its press;
//! - `recover`: at start, the claims a crash left without an outcome, and granted records;
//! - `expiry`: the sweep — cards and unshown asks past their ttl, mandates past their term,
//!   the evening summary (`summary`);
//! - `drawer`: cards, outcomes and receipts drawn for the owner, and the sender's [`Drawer`];
//! - `queue`: the outbox helpers every part queues its messages with;
//! - `poller`: the getUpdates loop that feeds the loop its batches, through Telegram refusing
//!   the bot; `reach`: the owner told how long they were cut off once it answers again;
//! - `withdraw`: a session's withdraw; `approval_only`: an approval-only category's yes
//!   (`approved`, nothing runs) and its receipt under a mandate.
//!
//! Siblings reach each other only through `impl Consent` methods or through the leaves
//! (`queue`, `drawer`, `stale`), so the module graph has no cycle.

mod approval_only;
mod drawer;
mod exact;
mod expiry;
mod owner_text;
mod pairing;
mod poller;
mod press;
mod queue;
mod raise;
mod reach;
mod recover;
mod reply;
mod runs;
mod stale;
mod suggest;
mod summary;
mod withdraw;

use crate::owner::{owner_language, Owner, SharedOwner};

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::executor::RunOutcome;
use crate::sender::{Drawer, Drawing};
use crate::telegram::{ChatRef, Incoming, Person, Telegram, UNREADABLE};
use crate::unreachable::{Reach, Unreachable};
use consentd_core::card;
use consentd_core::clock::Clock;
use consentd_core::config::Config;
use consentd_core::deadline::Window;
use consentd_core::locale::{Language, Locales};
use consentd_core::press::{MessageFacts, PressKey};
use consentd_store::owner::OwnerRow;
use consentd_store::{Record, Store, StoreError};

use expiry::tick_sweeps;
use poller::{poll, Poller};

/// What a category switch's buttons are signed for in place of a record's digest.
const CATEGORY_DIGEST: &str = "category";

/// A press's subject as the store knows it (owned: [`SubjectFacts`](consentd_core::press::SubjectFacts)
/// borrows from it).
#[derive(Debug)]
struct PressSubject {
    digest: String,
    open: bool,
    window: Option<Window>,
    /// Whether it offers Always here (a hook's gate card, `drawer::offers_always`).
    offers_always: bool,
    /// Why it is not open, in words the owner's press can be answered with.
    stale: Option<card::owner::Stale>,
    /// The labelled socket its ask came through, which the answer to a stale press names.
    origin: Option<String>,
}

/// Everything a press is judged on.
#[derive(Debug)]
struct PressFacts {
    callback: Option<consentd_core::press::Callback>,
    record: Option<Record>,
    subject: Option<PressSubject>,
    message: MessageFacts,
}

/// A text message in a private chat, as the loop reads it.
#[derive(Debug)]
struct Said {
    chat: ChatRef,
    text: String,
    /// The message it replies to, if any.
    reply_to: Option<i64>,
}

/// Who pressed, and the update's next offset and time, for what the press changes.
#[derive(Debug)]
struct Decision {
    from: Person,
    next: i64,
    now: DateTime<Utc>,
    /// The monotonic clock read with `now`: what the press starts (a suggestion's request)
    /// runs on both clocks from it.
    monotonic: consentd_core::clock::Monotonic,
    /// The pressed message (chat, message id), when Telegram said which.
    message: Option<(i64, i64)>,
}

impl Decision {
    /// What the press `decided`, to be stored with the update's next offset.
    pub(super) fn offset_with(
        &self,
        decided: consentd_store::Decided,
    ) -> consentd_store::OwnerDecision {
        consentd_store::OwnerDecision {
            next_offset: Some(self.next),
            decided,
        }
    }
}

/// What wakes the consent loop, one at a time. Its own helpers (the poller, the sweep's ticks)
/// send theirs on the loop's inbox; the intake sends [`Wake::Covered`] and [`Wake::Withdraw`] on
/// a channel of their own, never full, so a session is never held up by the loop.
#[derive(Debug)]
pub(crate) enum Wake {
    /// A batch of updates from one getUpdates; the poller waits for the reply before asking for
    /// the next batch, so no update is confirmed to Telegram before it is handled.
    Updates(Vec<Incoming>, oneshot::Sender<()>),
    /// Time to expire cards past their ttl, mandates past their term, and to send the evening
    /// summary.
    Sweep,
    /// An ask an open mandate covered: the store has already claimed it (running, `used`
    /// durable) in the transaction that took its share of the mandate; its run starts. (An
    /// approval-only category's is `approved` instead: its receipt is sent.) The record as that
    /// transaction left it: the loop starts from it without reading it again.
    Covered(Box<Record>),
    /// A session withdraws its own ask, done by the loop between its other events (so a press
    /// and a withdraw never interleave); the answer goes back on `reply`.
    Withdraw {
        id: String,
        peer: consentd_store::Peer,
        reply: oneshot::Sender<Result<consentd_store::Withdrawal, StoreError>>,
    },
    /// getUpdates answers again after this episode of Telegram refusing the bot: the owner is
    /// told how long they were cut off.
    Reachable(Unreachable),
}

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub(crate) struct Consent {
    pub(crate) config: Arc<Config>,
    pub(crate) store: Store,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) key: Arc<PressKey>,
    pub(crate) locales: Arc<Locales>,
    /// The owner, their switches, and the gate's settings (the config's, with what they set in
    /// the chat).
    pub(crate) owner: SharedOwner,
    /// Where runs get their private working directories.
    pub(crate) work_root: PathBuf,
    pub(crate) telegram: Telegram,
    /// Held by the sender while a message with buttons is sent and recorded.
    pub(crate) drawing: Drawing,
    /// Whether Telegram refuses the bot now (409, 401), and since when: the poller and the
    /// sender note it, the daemon's wiring owns it.
    pub(crate) reach: Reach,
}

/// Reads who the owner is at start: the config's `telegram_id`, else the paired one.
pub(crate) fn load_owner(config: &Config, stored: Option<OwnerRow>) -> Option<Owner> {
    match (config.owner.telegram_id, stored) {
        (Some(id), stored) => Some(Owner {
            id,
            language: owner_language(
                config,
                stored
                    .as_ref()
                    .filter(|row| row.telegram_id == id)
                    .and_then(|row| row.language_code.as_deref()),
            ),
        }),
        (None, Some(row)) => Some(Owner {
            id: row.telegram_id,
            language: owner_language(config, row.language_code.as_deref()),
        }),
        (None, None) => None,
    }
}

impl Consent {
    fn owner(&self) -> Option<Owner> {
        self.owner.owner()
    }

    fn language(&self) -> Language {
        self.owner.language(&self.config)
    }

    /// Whether `kind` is on (`OwnerState::category_enabled`).
    fn category_enabled(&self, kind: &str) -> bool {
        self.owner.category_enabled(&self.config, kind)
    }

    /// Runs the loop until `shutdown`. Telegram refusing the bot (409, 401) does not end it: the
    /// poller and the sender retry until it answers again.
    /// `recovered` is told once the claims a crash left behind are settled: asks served before
    /// then could be mistaken for them.
    pub(crate) async fn run(
        self,
        daemon_shutdown: CancellationToken,
        mut covered: mpsc::UnboundedReceiver<Wake>,
        recovered: oneshot::Sender<()>,
    ) -> anyhow::Result<()> {
        // The loop's own tasks stop when the daemon stops and when the loop itself ends.
        let shutdown = daemon_shutdown.child_token();
        let (events, mut inbox) = mpsc::channel::<Wake>(64);
        let runs = TaskTracker::new();
        let tasks = self.spawn_helpers(&events, &shutdown);

        self.set_command_menu();
        self.recover(&runs).await?;
        let _ = recovered.send(());
        let result = self
            .handle_until_stopped(&shutdown, &mut inbox, &mut covered, &runs)
            .await;
        shutdown.cancel();
        // The loop ends the daemon too.
        daemon_shutdown.cancel();
        self.run_covered_while_stopping(covered, &runs).await;
        self.finish_runs(&runs, inbox).await;
        tasks.wait().await;
        result
    }

    /// Starts the loop's helpers: the poller, the sender and the sweep's ticks.
    fn spawn_helpers(
        &self,
        events: &mpsc::Sender<Wake>,
        shutdown: &CancellationToken,
    ) -> TaskTracker {
        let tasks = TaskTracker::new();
        let poller = Poller {
            store: self.store.clone(),
            telegram: self.telegram.clone(),
            clock: self.clock.clone(),
            reach: self.reach.clone(),
            events: events.clone(),
        };
        tasks.spawn(poll(poller, shutdown.clone()));
        // A block the sender saw end is told to the owner by the loop, like the poller's.
        let (unblocked, mut ended) = mpsc::unbounded_channel();
        let to_loop = events.clone();
        tasks.spawn(async move {
            while let Some(episode) = ended.recv().await {
                if to_loop.send(Wake::Reachable(episode)).await.is_err() {
                    return;
                }
            }
        });
        tasks.spawn(self.clone().send_until(unblocked, shutdown.clone()));
        tasks.spawn(tick_sweeps(events.clone(), shutdown.clone()));
        tasks.close();
        tasks
    }

    /// The sender's task, until `shutdown`.
    async fn send_until(
        self,
        unblocked: mpsc::UnboundedSender<Unreachable>,
        shutdown: CancellationToken,
    ) {
        let (store, telegram, clock, drawing, reach) = (
            self.store.clone(),
            self.telegram.clone(),
            self.clock.clone(),
            self.drawing.clone(),
            self.reach.clone(),
        );
        let drawer: Arc<dyn Drawer> = Arc::new(self);
        let out = crate::sender::SenderParts {
            store,
            telegram,
            drawer,
            clock,
            drawing,
            reach,
            unblocked,
        };
        crate::sender::run(out, shutdown).await;
    }

    /// The loop proper: one event at a time until `shutdown` or the inbox closes.
    async fn handle_until_stopped(
        &self,
        shutdown: &CancellationToken,
        inbox: &mut mpsc::Receiver<Wake>,
        covered: &mut mpsc::UnboundedReceiver<Wake>,
        runs: &TaskTracker,
    ) -> anyhow::Result<()> {
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                event = inbox.recv() => event,
                Some(handed) = covered.recv() => Some(handed),
            };
            let Some(event) = event else { return Ok(()) };
            if let Err(error) = self.handle(event, runs).await {
                tracing::error!(%error, "the consent loop could not handle an event");
            }
        }
    }

    /// Claimed while stopping: they run now rather than become outcome_unknown at the next
    /// start. The channel closes when the socket server has finished its last connection, so a
    /// covered ask committed during the stop is not left behind.
    async fn run_covered_while_stopping(
        &self,
        mut covered: mpsc::UnboundedReceiver<Wake>,
        runs: &TaskTracker,
    ) {
        while let Some(handed) = covered.recv().await {
            // A withdraw that came in while stopping is still answered.
            if let Err(error) = self.handle(handed, runs).await {
                tracing::error!(%error, "could not settle a handed-over request while stopping");
            }
        }
    }

    /// Runs in flight finish and their outcomes are recorded even while stopping, so a clean
    /// stop never leaves a claim without an outcome. Other events are dropped: updates are
    /// fetched again after the restart, and the sweep runs again.
    async fn finish_runs(&self, runs: &TaskTracker, mut inbox: mpsc::Receiver<Wake>) {
        runs.close();
        // Each run records its own outcome before its task ends. Events still arriving are
        // dropped, so no helper blocks on a full inbox meanwhile.
        loop {
            tokio::select! {
                () = runs.wait() => break,
                event = inbox.recv() => if event.is_none() {
                    runs.wait().await;
                    break;
                },
            }
        }
    }

    /// Records a run's outcome; called by the run's own task when its command has ended.
    async fn record_outcome(&self, id: String, outcome: RunOutcome) {
        if let Err(error) = self.run_ended(id.clone(), outcome).await {
            tracing::error!(%error, record = %id, "could not record a run's outcome");
        }
    }

    async fn handle(&self, event: Wake, runs: &TaskTracker) -> Result<(), StoreError> {
        match event {
            Wake::Updates(batch, done) => {
                for incoming in batch {
                    self.incoming(incoming, runs).await?;
                }
                let _ = done.send(());
            }
            Wake::Sweep => self.expire_due().await?,
            Wake::Covered(record) => {
                // Covered asks start side by side, each on its own task (never two for one
                // record: the store handed each over once), so a burst of them is bounded by
                // the disk and the spawns, not by the loop taking them one at a time.
                let (consent, tracker) = (self.clone(), runs.clone());
                runs.spawn(async move {
                    let id = record.id.clone();
                    if let Err(error) = consent.run_claimed(*record, &tracker).await {
                        tracing::error!(%error, record = %id, "could not start a covered ask");
                    }
                });
            }
            Wake::Withdraw { id, peer, reply } => {
                let _ = reply.send(self.withdraw(id, peer).await);
            }
            Wake::Reachable(ended) => self.reachable_again(ended).await?,
        }
        Ok(())
    }

    async fn incoming(&self, incoming: Incoming, runs: &TaskTracker) -> Result<(), StoreError> {
        let next = incoming.update_id() + 1;
        let stored = self.store.next_offset().await?;
        if incoming.update_id() < stored {
            // Handled before (a duplicate or a late, out-of-order delivery): nothing changes twice.
            return Ok(());
        }
        let now = self.clock.now();
        match incoming {
            Incoming::Other { what, update_id } => {
                if what == UNREADABLE {
                    tracing::warn!(update_id, "skipping an update teloxide cannot read");
                } else {
                    tracing::debug!(what, "update ignored");
                }
                self.store
                    .tell(consentd_store::Tell::offset(next), now)
                    .await
            }
            Incoming::Text {
                from,
                chat,
                text,
                forwarded,
                reply_to,
                ..
            } => {
                if !chat.private || forwarded {
                    return self
                        .store
                        .tell(consentd_store::Tell::offset(next), now)
                        .await;
                }
                let said = Said {
                    chat,
                    text,
                    reply_to,
                };
                self.text(from, said, next, now).await
            }
            Incoming::Press { press, .. } => self.press(press, next, runs).await,
        }
    }
}
