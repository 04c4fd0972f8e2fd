//! consentd's store: the one thread that owns the SQLite database and the consent journal's file,
//! so the async runtime never waits on disk.
//!
//! What this crate offers:
//! - [`Store`], the async handle: it sends closures to the thread that owns [`Db`] and awaits
//!   their answers. The thread also tells waiters when a record's state changes. Attachment bytes
//!   are kept beside the database, named by their SHA-256, written and synced before the record
//!   that names them is committed.
//! - The migrations (`migrations/*.sql`, applied in order when the database opens) and the typed
//!   records read from it: [`Record`] and its [`state`] machine, [`mandates`], the [`outbox`], the
//!   [`drawn`] messages, the owner's [`settings`].
//! - [`journal`]: the journal's file — appending durably ([`journal::JournalFile`]), finding the
//!   head from the tail, cutting a torn tail after a crash, verifying a file; the line format is
//!   consentd-core's. The store stages its journal lines in the same step as the transaction that
//!   causes them, so store and journal stay in step.
//! - [`stored`]: an attachment's stored copy, read back against its SHA-256.
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

mod ask;
mod base;
mod cached;
pub mod consent;
pub mod db;
mod decide;
pub mod drawn;
pub mod journal;
mod known;
mod mandate_rows;
pub mod mandates;
pub mod outbox;
pub mod pairing;
mod records;
mod reply;
mod sealing;
pub mod settings;
pub mod state;
pub mod stored;
mod withdraw;

#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, oneshot, Notify};

pub use ask::{AskOutcome, AskPolicy, NewAsk};
pub use base::{Db, Effects, JournalEvent, OpenReport, StateChange};
use consentd_core::action::Attachment;
pub use decide::{Applied, CardDecision, Decided, OwnerDecision};
pub use mandates::{MandateRow, NewMandate};
pub use outbox::Outgoing;
pub use records::{Asked, Record, Subject};
pub use sealing::paired_owner;
pub use state::RecordState;
pub use withdraw::Withdrawal;

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
    #[error("the database is at schema {found}, newer than this consentd knows ({latest})")]
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
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// A change of a record's state, for waiters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChanged {
    pub id: String,
    pub state: RecordState,
}

type Job = Box<dyn FnOnce(&mut Db) + Send>;

/// The async handle to the store's thread. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
    changes: broadcast::Sender<RecordChanged>,
    attachments_dir: PathBuf,
    outbox_ready: Arc<Notify>,
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
        let (mut db, report) = Db::open(&state_dir.join(DB_FILE), journal_path, now)?;
        db.take_changes();
        let (jobs, queue) = mpsc::channel::<Job>();
        let (changes, _) = broadcast::channel(1024);
        let announcer = changes.clone();
        let outbox_ready = Arc::new(Notify::new());
        let sender_bell = outbox_ready.clone();
        let thread = std::thread::Builder::new()
            .name("consentd-store".into())
            .spawn(move || {
                // Held while the thread owns the database: released when it ends.
                let _lock = lock;
                for job in queue {
                    job(&mut db);
                    for (id, state) in db.take_changes() {
                        // No receiver is fine: nobody is waiting.
                        let _ = announcer.send(RecordChanged { id, state });
                    }
                    if db.take_outbox_queued() {
                        sender_bell.notify_one();
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
            },
            StoreThread(thread),
            report,
        ))
    }

    /// Runs `job` on the store's thread and returns its answer.
    pub async fn call<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Box::new(move |db: &mut Db| {
                let _ = reply.send(job(db));
            }))
            .map_err(|_| StoreError::Stopped)?;
        answer.await.map_err(|_| StoreError::Stopped)?
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

    /// Stores an ask: its attachment bytes first (synced), then the record.
    pub async fn ask(
        &self,
        ask: NewAsk,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        let dir = self.attachments_dir.clone();
        self.call(move |db| {
            for attachment in &ask.action.attachments {
                save_attachment(&dir, attachment)?;
            }
            db.ask(&ask, policy, now)
        })
        .await
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

/// Creates a directory (and its parents) only the daemon can enter.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

/// Writes an attachment under its hash: to a temporary name, synced, renamed, directory synced.
/// Content-addressed, so a second write of the same bytes is skipped — if the file under that
/// name still holds them. One changed behind the daemon's back is replaced (the rename replaces a
/// symlink too), so a bad copy cannot keep failing every later ask of the same bytes.
fn save_attachment(dir: &Path, attachment: &Attachment) -> Result<(), StoreError> {
    let name = attachment.sha256.to_hex();
    let path = dir.join(&name);
    let failed = |source| StoreError::File {
        path: path.display().to_string(),
        source,
    };
    let expected = crate::stored::Expected {
        sha256: name.clone(),
        bytes: attachment.data.len() as u64,
    };
    let intact = crate::stored::open(&path)
        .and_then(|file| crate::stored::copy(file, &expected, &mut std::io::sink()));
    if intact.is_ok() {
        return Ok(());
    }
    let temporary = dir.join(format!(".{name}.tmp"));
    let mut file = std::fs::File::create(&temporary).map_err(failed)?;
    file.write_all(&attachment.data).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    std::fs::rename(&temporary, &path).map_err(failed)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(failed)
}
