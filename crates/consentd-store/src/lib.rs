//! consentd's store: the one thread that owns the SQLite database, and the one that appends to
//! the consent journal's file (`journal::JournalWriter`), so the async runtime never waits on
//! disk.
//!
//! What this crate offers:
//! - [`Store`], the async handle: it sends closures to the thread that owns [`Db`] and awaits
//!   their answers. The thread also tells waiters when a record's state changes. Attachment bytes
//!   are kept beside the database, named by their SHA-256, written and synced inside the
//!   transaction of the record that names them, before its commit, and only for an ask that
//!   creates or is covered by a record (`blobs`). A record keeps its copies while it is open or
//!   running, and for `attachment_retention` after it ran; one that ends without running releases
//!   them in the transaction that ends it, and a copy no record keeps is removed after the commit
//!   or, after a crash, at open (`copies`).
//! - The refusal budget's state (`refusals`): which refused asks are recorded, which only counted
//!   in a `denied_repeats` line; the rule is consentd-core's `refusal_budget`.
//! - The migrations (`migrations/*.sql`, applied in order when the database opens) and the typed
//!   records read from it: [`Record`] and its [`state`] machine, [`mandates`], the [`outbox`], the
//!   [`drawn`] messages, the owner's [`settings`].
//! - [`journal`]: the journal's file — appending durably ([`journal::JournalFile`]), finding the
//!   head from the tail, cutting a torn tail after a crash, verifying a file; the line format is
//!   consentd-core's. The store stages its journal lines in the same step as the transaction that
//!   causes them, so store and journal stay in step.
//! - [`stored`]: an attachment's stored copy, read back against its SHA-256.
//! - [`inspect`]: a read-only look at a state directory's database for tests and tools, by named
//!   questions returning plain data (and, in a `test-hooks` build, `inspect::tamper`).
//! - Exact rules ("Always here", `exact_rules`): a rule saved in the Always press's transaction,
//!   the byte-exact call it answers ([`Db::use_rule`]), its removal, and [`SavedRule`] for
//!   `/rules`.
//!
//! Public is what the daemon, its tests, benches and fuzz targets reach, and the types their
//! signatures name; the store's own helpers are `pub(crate)` or private to their modules.
//!
//! What it promises never to do: no network, no Telegram, no rendering decisions. It decides
//! nothing about what the owner is shown or what a press means: it applies the values it is given
//! (a transition, journal events, outbox rows with their text already rendered) in one
//! transaction; where a rule must be judged inside that transaction (a mandate's coverage, a
//! pairing attempt, a claim's window) the rule is consentd-core's. No network crate reaches it
//! (`.ci/run` checks `cargo tree -p consentd-store -e normal`), and it depends on consentd-core,
//! never on the daemon.

pub mod api;
mod ask;
mod batch;
mod blobs;
mod cached;
mod cards;
mod checkpoint;
pub mod claims;
mod copies;
mod crash;
mod db;
mod decide;
pub mod drawn;
pub mod events;
mod exact_rules;
mod ids;
pub mod inspect;
pub mod journal;
mod known;
mod mandate_rows;
pub mod mandates;
mod migrate;
pub use migrate::SCHEMA;
pub mod outbox;
pub mod owner;
pub mod pairing;
mod peer;
pub mod raises;
mod readings;
mod records;
mod refusals;
mod reply;
mod savepoint;
mod sealing;
pub mod settings;
mod silences;
pub mod space;
pub mod state;
pub mod stored;
pub mod strangers;
pub mod suggestions;
pub mod time;
mod transitions;
mod withdraw;
pub mod writes;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod exact_rules_tests;
#[cfg(test)]
mod suggestions_tests;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, oneshot, Notify};

pub use ask::{AskOutcome, AskPolicy, NewAsk};
pub use batch::MAX_BATCH;
pub use crash::set_crash_hook;
pub(crate) use db::Db;
pub use db::OpenReport;
pub use decide::{Applied, CardDecision, Decided, OwnerDecision};
pub use events::{Effects, JournalEvent};
pub use exact_rules::SavedRule;
pub use mandates::{MandateRow, NewMandate};
pub use outbox::Outgoing;
pub use peer::Peer;
pub use records::{ActionRecord, Asked, Body, MandateRequest, Record, Subject};
pub use sealing::paired_owner;
pub use state::RecordState;
pub use transitions::StateChange;
pub use withdraw::Withdrawal;
pub use writes::{SenderNote, Tell, Upkeep};

/// The database's file name in the state directory.
pub const DB_FILE: &str = "consentd.db";

/// Errors of the store. A refused ask is not an error: see [`AskOutcome::Refused`].
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("the database {path} failed its integrity check: {detail}")]
    Corrupt { path: String, detail: String },
    #[error(
        "the database is at schema {found}, newer than this consentd knows ({latest}): a newer \
         consentd wrote it, and this one will not open it. Run the newer binary again, or restore \
         the backup taken before the upgrade (docs/OPERATOR.md, \"Upgrading\")"
    )]
    TooNew { found: u32, latest: u32 },
    #[error("migration {number} failed: {source}")]
    Migration {
        number: u32,
        source: rusqlite::Error,
    },
    #[error("{0}")]
    Pragma(String),
    #[error("cannot open the journal {path}: {detail}")]
    Journal { path: String, detail: String },
    #[error("the journal {path} and the store disagree: {detail}")]
    JournalDisagrees { path: String, detail: String },
    #[error("cannot append to the journal: {0}")]
    JournalWrite(String),
    #[error("illegal record state transition {from} -> {to}")]
    IllegalTransition { from: RecordState, to: RecordState },
    #[error("record {id} is {actual}, not {expected}")]
    StateConflict {
        id: String,
        expected: RecordState,
        actual: RecordState,
    },
    #[error("no such record")]
    Missing,
    #[error("record {id} was refused before it had a kind and a digest")]
    NotAsked { id: String },
    #[error("cannot write {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot encode a record: {0}")]
    Encode(String),
    #[error("no randomness from the operating system: {0}")]
    Random(String),
    #[error("another consentd is using this state directory ({path} is locked: {detail})")]
    Locked { path: String, detail: String },
    #[error("the store's thread has stopped")]
    Stopped,
    #[error("the batch this request was applied in was not made durable: {0}")]
    Batch(String),
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// A change of a record's state, for waiters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChanged {
    pub id: String,
    pub state: RecordState,
}

/// A request for the store's thread: it runs, and gives back how to answer once its batch is
/// durable (or not: the batch's failure, if any).
struct Job {
    run: Box<dyn FnOnce(&mut Db) -> Answer + Send>,
    /// Answered once its batch commits, its journal lines staged in the commit, rather than
    /// once they are in the journal file too: only a card's opening, so that the card leaves
    /// while its line is being appended ([`batch`]).
    at_commit: bool,
}
type Answer = Box<dyn FnOnce(Option<&StoreError>) + Send>;

impl Job {
    /// A request answered once what it wrote is in the journal file.
    fn new(run: impl FnOnce(&mut Db) -> Answer + Send + 'static) -> Job {
        Job {
            run: Box::new(run),
            at_commit: false,
        }
    }
}

/// The async handle to the store's thread. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
    changes: broadcast::Sender<RecordChanged>,
    attachments_dir: PathBuf,
    outbox_ready: Arc<Notify>,
    space: Arc<space::SpaceWatch>,
}

/// What the store's thread tells the rest of the daemon after a batch.
struct Bells {
    changes: broadcast::Sender<RecordChanged>,
    outbox: Arc<Notify>,
}

impl Bells {
    /// Bells nobody listens to, for a test of a batch.
    #[cfg(test)]
    fn unheard() -> Bells {
        Bells {
            changes: broadcast::channel(16).0,
            outbox: Arc::new(Notify::new()),
        }
    }

    /// Announces what a durable write outside a batch changed.
    fn ring(&self, db: &mut Db) {
        let changes = db.take_changes();
        db.remove_released_copies(&changes);
        for (id, state) in changes {
            // No receiver is fine: nobody is waiting.
            let _ = self.changes.send(RecordChanged { id, state });
        }
        if db.take_outbox_queued() {
            self.outbox.notify_one();
        }
    }
}

/// The store's thread; joining it waits until every queued job has run.
#[derive(Debug)]
pub struct StoreThread(std::thread::JoinHandle<()>);

impl StoreThread {
    pub fn join(self) {
        // A panic on the store thread was already reported by the panic hook.
        let _ = self.0.join();
    }
}

impl Store {
    /// Opens the store in `state_dir` (database `consentd.db`, attachments in `attachments/`) with
    /// the journal at `journal_path`, and starts its thread.
    pub fn open(
        state_dir: &Path,
        journal_path: &Path,
        now: DateTime<Utc>,
    ) -> Result<(Store, StoreThread, OpenReport), StoreError> {
        let lock = lock_state_dir(state_dir)?;
        let attachments_dir = state_dir.join("attachments");
        create_private_dir(&attachments_dir).map_err(|source| StoreError::File {
            path: attachments_dir.display().to_string(),
            source,
        })?;
        let (mut db, mut report) = Db::open(&state_dir.join(DB_FILE), journal_path, now)?;
        db.take_changes();
        // What a crash left between a blob's write and its record's commit.
        report.orphans_removed = blobs::remove_orphans(&db.conn, &attachments_dir)?;
        db.attachments_dir = Some(attachments_dir.clone());
        let (jobs, queue) = mpsc::channel::<Job>();
        let (changes, _) = broadcast::channel(1024);
        let outbox_ready = Arc::new(Notify::new());
        let bells = Bells {
            changes: changes.clone(),
            outbox: outbox_ready.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("consentd-store".into())
            .spawn(move || {
                // Held while the thread owns the database: released when it ends.
                let _lock = lock;
                let mut waiting = None;
                while let Some(first) = waiting.take().or_else(|| queue.recv().ok()) {
                    let mut jobs = vec![first];
                    jobs.extend(queue.try_iter().take(MAX_BATCH - 1));
                    run_batch(&mut db, jobs, &bells);
                    match queue.try_recv() {
                        Ok(job) => waiting = Some(job),
                        // Nobody waits: the WAL's pages go back into the database now, rather
                        // than inside a commit someone waits for (`checkpoint`).
                        // One that fails is tried again when next idle, and SQLite's own
                        // checkpoint still bounds the WAL meanwhile.
                        Err(mpsc::TryRecvError::Empty) => {
                            let _ = db.checkpoint_when_idle();
                        }
                        Err(mpsc::TryRecvError::Disconnected) => break,
                    }
                }
            })
            .map_err(|error| {
                StoreError::Encode(format!("cannot start the store thread: {error}"))
            })?;
        Ok((
            Store {
                jobs,
                changes,
                attachments_dir,
                outbox_ready,
                space: Arc::new(space::SpaceWatch::new(Arc::new(space::Statvfs))),
            },
            StoreThread(thread),
            report,
        ))
    }

    /// Runs `job` on the store's thread and returns its answer, once what it wrote is durable.
    /// Only the store's own methods pass jobs: the daemon asks by name ([`api`], [`writes`]).
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.submit(job)?.await.map_err(|_| StoreError::Stopped)?
    }

    /// [`Store::call`], answered once its batch commits: what it wrote is durable in the
    /// database, its journal lines staged there, and they reach the journal file after the
    /// answer. Only for the card's opening (see [`batch`] for why that is safe).
    pub(crate) async fn call_at_commit<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.submit_when(job, true)?
            .await
            .map_err(|_| StoreError::Stopped)?
    }

    /// Queues `job` now; the returned receiver gets its answer once its batch is durable.
    fn submit<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<T, StoreError>>, StoreError> {
        self.submit_when(job, false)
    }

    /// Queues `job` now, answered at its batch's commit or once its lines are in the journal.
    fn submit_when<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
        at_commit: bool,
    ) -> Result<oneshot::Receiver<Result<T, StoreError>>, StoreError> {
        let (reply, answer) = oneshot::channel();
        let run = move |db: &mut Db| -> Answer {
            let result = job(db);
            Box::new(move |failed: Option<&StoreError>| {
                let result = match (result, failed) {
                    (Ok(_), Some(failure)) => Err(StoreError::Batch(failure.to_string())),
                    (result, _) => result,
                };
                let _ = reply.send(result);
            })
        };
        let mut job = Job::new(run);
        job.at_commit = at_commit;
        self.jobs.send(job).map_err(|_| StoreError::Stopped)?;
        Ok(answer)
    }

    /// Applies an owner's decision on the store's thread (see [`Db::decide`]).
    pub async fn decide(
        &self,
        decision: OwnerDecision,
        now: DateTime<Utc>,
    ) -> Result<Applied, StoreError> {
        self.call(move |db| db.decide(&decision, now)).await
    }

    /// Subscribes to record state changes. Subscribe before reading a record's state, so that no
    /// change falls between the read and the subscription.
    pub fn subscribe(&self) -> broadcast::Receiver<RecordChanged> {
        self.changes.subscribe()
    }

    /// Stores an ask (and, for one that creates or is covered by a record, its attachment bytes,
    /// synced before the record's commit; see [`Db::ask`]).
    pub async fn ask(
        &self,
        ask: NewAsk,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        self.call(move |db| db.ask(&ask, policy, now)).await
    }

    /// The state directory, whose file system's free space the daemon watches.
    pub fn state_dir(&self) -> &Path {
        self.attachments_dir
            .parent()
            .unwrap_or(&self.attachments_dir)
    }

    /// Watches free space with `probe` instead of the kernel's `statvfs` (a test's full disk).
    pub fn with_free_space(mut self, probe: Arc<dyn space::FreeSpace>) -> Store {
        self.space = Arc::new(space::SpaceWatch::new(probe));
        self
    }

    /// The state directory's free space against `floor` bytes (see [`space::SpaceWatch::check`]).
    pub fn space(&self, floor: u64, needs: u64) -> space::Space {
        self.space.check(self.state_dir(), floor, needs)
    }

    /// Reserves `needs` bytes above `floor` for an ask's attachments (see
    /// [`space::SpaceWatch::reserve`]); held until the returned reservation is dropped.
    pub fn reserve_space(
        &self,
        floor: u64,
        needs: u64,
    ) -> Result<space::Reservation, space::Space> {
        self.space.reserve(self.state_dir(), floor, needs)
    }

    /// Notified whenever a transaction queued something for Telegram.
    pub fn outbox_ready(&self) -> Arc<Notify> {
        self.outbox_ready.clone()
    }

    /// Where an attachment's bytes are kept.
    pub fn attachment_path(&self, sha256_hex: &str) -> PathBuf {
        self.attachments_dir.join(sha256_hex)
    }

    /// Stops the thread after the queued jobs; the returned thread handle can then be joined.
    pub fn close(self) {
        drop(self.jobs);
    }
}

/// Applies `jobs` as one batch ([`batch`]) and answers them once it is durable; the jobs that
/// come before its first write, having written nothing, are answered at once. When a batch
/// cannot even begin, each job runs on its own, as before batching, and is answered at once.
/// Once the batch commits the sender is rung and the jobs answered at commit are answered;
/// its lines then go to the journal's thread, which answers the rest and announces the records'
/// changes once they are in the file, while this thread goes on to the next batch.
fn run_batch(db: &mut Db, jobs: Vec<Job>, bells: &Bells) {
    // A batch that cannot begin (the disk failing, say) is not an error of its own: each write
    // then tries its own transaction and reports what stops it to its request.
    let batched = db.begin_batch().is_ok();
    let unwritten = db.rows_written();
    let mut at_commit: Vec<Answer> = Vec::new();
    let mut at_journal: Vec<Answer> = Vec::with_capacity(jobs.len());
    for job in jobs {
        let answer = (job.run)(db);
        if batched && db.rows_written() == unwritten {
            // Nothing is written in this batch yet, this job included: what it read was made
            // durable by an earlier batch, so its answer need not wait for this one's fsync.
            answer(None);
        } else if job.at_commit {
            at_commit.push(answer);
        } else {
            at_journal.push(answer);
        }
    }
    if !batched {
        // Each write committed and appended its lines on its own, before the next ran.
        at_commit
            .into_iter()
            .chain(at_journal)
            .for_each(|answer| answer(None));
        bells.ring(db);
        return;
    }
    let lines = match db.commit_batch() {
        Ok(lines) => lines,
        Err(failure) => {
            // Nothing of the batch is announced: it was rolled back. Nor may a refusal's window
            // name a record the batch rolled back.
            db.take_changes();
            db.take_outbox_queued();
            db.forget_refusal_windows();
            for answer in at_commit.into_iter().chain(at_journal) {
                answer(Some(&failure));
            }
            return;
        }
    };
    crash::committed(&lines);
    // Durable now, its lines staged in the commit: the sender may open and send a card it
    // queued, while the lines are appended.
    let changes = db.take_changes();
    db.remove_released_copies(&changes);
    if db.take_outbox_queued() {
        bells.outbox.notify_one();
    }
    for answer in at_commit {
        answer(None);
    }
    let tell = bells.changes.clone();
    db.journal_then(
        lines,
        Box::new(move |failed| {
            for answer in at_journal {
                answer(failed);
            }
            if failed.is_none() {
                for (id, state) in changes {
                    // No receiver is fine: nobody is waiting.
                    let _ = tell.send(RecordChanged { id, state });
                }
            }
        }),
    );
}

/// Takes the state directory for this process alone: two daemons on one state directory would
/// each turn the other's running claims into `outcome_unknown` and fork the journal's chain.
/// `consentd journal seal-init`/`rotate` take it too, so they run only while `serve` does not.
pub fn lock_state_dir(state_dir: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = state_dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&path)
        .map_err(|source| StoreError::File {
            path: path.display().to_string(),
            source,
        })?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(
        |(_, errno)| StoreError::Locked {
            path: path.display().to_string(),
            detail: errno.desc().to_owned(),
        },
    )
}

/// Creates a directory (and its parents) only the daemon can enter. A symlink in its place is
/// refused, not followed: it could lead the daemon's files anywhere.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(std::io::Error::other(format!(
            "{} is a symlink, not a directory",
            path.display()
        )));
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}
