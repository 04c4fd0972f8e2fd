//! The owner of the database and the journal file, and its one way to write.
//!
//! Every change is one transaction that also stages its journal lines; after the commit the
//! lines are appended to the journal file and fsync'd, in commit order, by the journal's thread
//! (`journal::JournalWriter`): a single write waits for it, a batch's requests are answered from
//! it. A crash at any instant leaves either neither (no commit) or both (the staged lines are
//! appended at the next start).
//! Opening checks the database, applies the migrations and reconciles the journal file with the
//! staged lines.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::cached::{Cached, STATEMENT_CACHE_CAPACITY};
use super::events::{Effects, EventName, JournalEvent};
use super::state::RecordState;
use super::StoreError;
use crate::journal::{JournalFile, JournalWriter, KeyFile, Then};
use consentd_core::journal::{self, Line};

/// SQLite's page cache for the store's one connection, in KiB (SQLite's default is 2,000).
/// The file's pages stay in the kernel's page cache anyway; this is only what SQLite keeps
/// parsed on top of it, and it counted toward the daemon's memory once a load had filled it.
const PAGE_CACHE_KIB: u32 = 512;

/// The WAL's size, in pages, at which SQLite checkpoints inside a commit (`wal_autocheckpoint`):
/// only a backstop, since the store's thread checkpoints when idle (`checkpoint`).
const WAL_BACKSTOP_PAGES: u32 = 4_000;

/// What opening the store found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Bytes of a torn last journal line cut away.
    pub torn_tail_cut_bytes: u64,
    /// Staged lines that a crash had kept from the journal file, appended now.
    pub lines_recovered: u64,
    /// Attachment blobs (and half-written temporary files) no record named, removed.
    pub orphans_removed: u64,
}

/// What a batch's writes produced, kept until it commits.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(super) lines: Vec<Line>,
    pub(super) changed: Vec<(String, RecordState)>,
    pub(super) queued: bool,
    /// Writes applied so far.
    pub(super) writes: usize,
    /// Whether the staged lines the journal file already has were deleted in this batch.
    pub(super) pruned: bool,
}

/// The owner of the database and the journal file.
#[derive(Debug)]
pub struct Db {
    pub(super) conn: Connection,
    /// The journal file's thread ([`JournalWriter`]): a batch's lines are appended there while
    /// this thread goes on.
    journal: JournalWriter,
    /// The sealing key, once `consentd journal seal-init` made one.
    pub(super) sealer: Option<KeyFile>,
    /// Records whose state changed since the last call to [`Db::take_changes`].
    pub(super) changed: Vec<(String, RecordState)>,
    /// Set when a transaction queued something for Telegram.
    pub(super) outbox_queued: bool,
    /// The open batch, while the store's thread applies one ([`crate::batch`]).
    pub(super) batch: Option<Batch>,
    /// Transactions committed since the store opened: a batch counts once.
    pub(super) commits: u64,
    /// [`Db::commits`] at the last idle checkpoint ([`crate::checkpoint`]).
    pub(super) checkpointed_at: u64,
    /// The refusal budget, when the daemon set one; without it every refusal is recorded.
    pub(super) refusals: Option<Refusals>,
    /// Where an ask's attachment bytes are written, in its transaction; `None` (a bare `Db`, as
    /// tests open it) writes none.
    pub(super) attachments_dir: Option<std::path::PathBuf>,
    /// Records whose copies were released since the last commit's removal
    /// ([`crate::copies`]).
    pub(super) released_copies: Vec<String>,
}

/// The refusal budget the daemon configured, and its state; used by the `refusals` module.
#[derive(Debug, Clone)]
pub(crate) struct Refusals {
    pub(crate) policy: consentd_core::refusal_budget::BudgetPolicy,
    pub(crate) budget: consentd_core::refusal_budget::RefusalBudget,
}

impl Db {
    /// Opens (creating if needed) the database and the journal, checks both, applies migrations,
    /// reconciles the journal file with the staged lines, and journals `started`.
    pub fn open(
        db_path: &Path,
        journal_path: &Path,
        now: DateTime<Utc>,
    ) -> Result<(Db, OpenReport), StoreError> {
        // SQLite's own open, with no symlink followed to the database or its -wal and -shm.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn =
            Connection::open_with_flags(db_path, flags).map_err(|source| StoreError::Open {
                path: db_path.display().to_string(),
                source,
            })?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        // WAL keeps readers off the writer's back; FULL syncs the WAL on every commit, so an
        // acknowledged decision survives a power loss (NORMAL may lose the last commits).
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Pragma(format!(
                "journal_mode is {mode}, not wal"
            )));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        // Checkpoints are the store thread's, when idle (`checkpoint`); SQLite's own, inside a
        // commit, only as the backstop.
        conn.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint = {WAL_BACKSTOP_PAGES};"
        ))?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{PAGE_CACHE_KIB};"))?;
        // One plan per statement, whatever is bound: without this a statement whose bound value
        // could pick a partial index (the state transition's `state = :from`) is compiled again
        // each time that value changes, which was a tenth of the store's time under load.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
        if integrity != "ok" {
            return Err(StoreError::Corrupt {
                path: db_path.display().to_string(),
                detail: integrity,
            });
        }
        crate::migrate::migrate(&conn)?;

        let (journal, torn_tail_cut_bytes) =
            JournalFile::open(journal_path).map_err(|source| StoreError::Journal {
                path: journal_path.display().to_string(),
                detail: source.to_string(),
            })?;
        let sealer = crate::sealing::check_at_start(db_path, journal_path)?;
        let journal = JournalWriter::start(journal)?;
        let mut db = Db {
            conn,
            journal,
            sealer,
            changed: Vec::new(),
            outbox_queued: false,
            refusals: None,
            attachments_dir: None,
            released_copies: Vec::new(),
            batch: None,
            commits: 0,
            checkpointed_at: 0,
        };
        let lines_recovered = db.reconcile_journal(journal_path)?;
        let report = OpenReport {
            torn_tail_cut_bytes,
            lines_recovered,
            orphans_removed: 0,
        };
        let mut started =
            JournalEvent::new(EventName::Started).with("version", env!("CARGO_PKG_VERSION"));
        if torn_tail_cut_bytes > 0 {
            started = started.with("torn_tail_cut_bytes", torn_tail_cut_bytes);
        }
        if lines_recovered > 0 {
            started = started.with("lines_recovered", lines_recovered);
        }
        db.write(now, |_, events| {
            events.push(started);
            Ok(())
        })?;
        Ok((db, report))
    }

    /// Brings the journal file level with the staged lines, or says how they disagree.
    fn reconcile_journal(&mut self, journal_path: &Path) -> Result<u64, StoreError> {
        let (last_n, last_h) = self.journal_state()?;
        let head = self.journal.head();
        let disagree = |detail: String| StoreError::JournalDisagrees {
            path: journal_path.display().to_string(),
            detail,
        };
        if head.n > last_n {
            return Err(disagree(format!(
                "the journal has {} lines but the store has staged only {last_n}",
                head.n
            )));
        }
        let missing: Vec<(i64, String, String, String)> = {
            let mut statement = self.conn.prepare_cached(
                "SELECT n, prev, h, line FROM journal_staged WHERE n > ?1 ORDER BY n",
            )?;
            let rows = statement.query_map([head.n as i64], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        if head.n == last_n {
            if head.h != last_h {
                return Err(disagree(format!(
                    "line {} of the journal is not the line the store wrote",
                    head.n
                )));
            }
        } else {
            let expected = last_n - head.n;
            let contiguous = missing.len() as u64 == expected
                && missing
                    .iter()
                    .zip(head.n + 1..)
                    .all(|((n, ..), want)| *n as u64 == want);
            if !contiguous {
                return Err(disagree(format!(
                    "the journal ends at line {} but the store wrote up to line {last_n} and \
                     kept only {} of the lines after it (lines were removed from the journal)",
                    head.n,
                    missing.len()
                )));
            }
            if missing[0].1 != head.h {
                return Err(disagree(format!(
                    "line {} of the journal is not the line the store wrote",
                    head.n
                )));
            }
        }
        let lines: Vec<Line> = missing
            .into_iter()
            .map(|(n, _, h, text)| Line {
                n: n as u64,
                h,
                text,
            })
            .collect();
        let recovered = lines.len() as u64;
        if !lines.is_empty() {
            self.append_journal(&lines)?;
        }
        self.conn
            .execute_cached("DELETE FROM journal_staged WHERE n <= ?1", [last_n as i64])?;
        Ok(recovered)
    }

    fn journal_state(&self) -> Result<(u64, String), StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT last_n, last_h FROM journal_state WHERE id = 1",
                [],
                |row| Ok((row.get::<_, i64>(0)? as u64, row.get(1)?)),
            )
            .optional()?
            .unwrap_or((0, journal::GENESIS_PREV.to_owned())))
    }

    /// Appends `lines` after every line handed to the journal's thread before them, and returns
    /// once they are durable.
    pub(super) fn append_journal(&mut self, lines: &[Line]) -> Result<(), StoreError> {
        self.journal.append(lines.to_vec())
    }

    /// Why the journal file can no longer be written, once it cannot ([`JournalWriter::failed`]).
    pub(crate) fn journal_failed(&self) -> Option<String> {
        self.journal.failed()
    }

    /// Hands a committed batch's `lines` to the journal's thread, and runs `then` there once
    /// they are durable (or could not be made so). The store's thread goes on meanwhile.
    pub(crate) fn journal_then(&self, lines: Vec<Line>, then: Then) {
        self.journal.append_then(lines, then);
    }

    /// Runs `change` in one IMMEDIATE transaction, stages the events it pushes as journal lines in
    /// the same transaction, commits, then appends and fsyncs the lines before returning.
    pub fn write<T>(
        &mut self,
        now: DateTime<Utc>,
        change: impl FnOnce(&Connection, &mut Vec<JournalEvent>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_effects(now, None, |tx, effects| change(tx, &mut effects.events))
    }

    /// [`Db::write`] with the full [`Effects`], and optionally the next Telegram offset stored in
    /// the same transaction as what the update changed.
    pub fn write_effects<T>(
        &mut self,
        now: DateTime<Utc>,
        next_offset: Option<i64>,
        change: impl FnOnce(&Connection, &mut Effects) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.in_batch() {
            return self.write_in_batch(now, next_offset, change);
        }
        let written_up_to = self.journal.head().n as i64;
        let tx = Transaction::new(&mut self.conn, TransactionBehavior::Immediate)?;
        // Lines the file already has need not be kept; doing it here costs no extra commit.
        tx.execute_cached("DELETE FROM journal_staged WHERE n <= ?1", [written_up_to])?;
        let mut effects = Effects::new(now);
        let value = change(&tx, &mut effects)?;
        let lines = seal_and_stage(&tx, &mut self.sealer, now, next_offset, &mut effects)?;
        tx.commit()?;
        self.commits += 1;
        self.changed.extend(effects.changed);
        self.outbox_queued |= effects.queued;
        if !lines.is_empty() {
            self.append_journal(&lines)?;
        }
        Ok(value)
    }

    /// Evolves the seal key to `now`'s epoch when no line is written (the daemon's seal clock).
    pub fn evolve_seal_key(&mut self, now: DateTime<Utc>) -> Result<(), StoreError> {
        crate::sealing::evolve(&self.conn, &mut self.sealer, now)
    }

    /// Whether writes now go into a batch.
    pub(crate) fn in_batch(&self) -> bool {
        self.batch.is_some()
    }

    /// One write of a batch, in its own savepoint: [`Db::write_effects`] inside a batch.
    pub(crate) fn write_in_batch<T>(
        &mut self,
        now: DateTime<Utc>,
        next_offset: Option<i64>,
        change: impl FnOnce(&Connection, &mut Effects) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.conn.is_autocommit() {
            // SQLite rolled the batch's transaction back itself (a full disk, an I/O error):
            // a savepoint now would open a transaction of its own and its release commit it,
            // apart from the batch and ahead of the journal file.
            return Err(StoreError::Batch(
                "the batch's transaction was rolled back".to_owned(),
            ));
        }
        let batch = self.batch.as_mut().expect("write_in_batch outside a batch");
        if !batch.pruned {
            // Lines the file already has need not be kept. Done by the batch's first write, not
            // when it begins: a batch of reads alone then changes nothing and costs no fsync.
            let written_up_to = self.journal.head().n as i64;
            self.conn
                .execute_cached("DELETE FROM journal_staged WHERE n <= ?1", [written_up_to])?;
            batch.pruned = true;
        }
        // Dropped on an error, the savepoint rolls back to where it began and is released.
        let savepoint = crate::savepoint::Savepoint::begin(&self.conn)?;
        let mut effects = Effects::new(now);
        let value = change(&self.conn, &mut effects)?;
        let lines = seal_and_stage(&self.conn, &mut self.sealer, now, next_offset, &mut effects)?;
        savepoint.release()?;
        let batch = self.batch.as_mut().expect("write_in_batch outside a batch");
        batch.lines.extend(lines);
        batch.changed.extend(effects.changed);
        batch.queued |= effects.queued;
        batch.writes += 1;
        if batch.writes == 2 {
            // Two requests applied, none committed: where a kill tests the batch's atomicity.
            crate::crash::point("mid_batch");
        }
        Ok(value)
    }

    /// Notes a record's new state for waiters, for a change made outside [`Db::write_effects`]'s
    /// own bookkeeping.
    pub(super) fn note_change(&mut self, id: &str, state: RecordState) {
        self.changed.push((id.to_owned(), state));
    }

    /// Whether anything was queued for Telegram since the last call.
    pub(crate) fn take_outbox_queued(&mut self) -> bool {
        std::mem::take(&mut self.outbox_queued)
    }

    /// The records whose state changed since the last call, for waiters.
    pub(crate) fn take_changes(&mut self) -> Vec<(String, RecordState)> {
        std::mem::take(&mut self.changed)
    }

    /// Transactions committed since the store opened; a batch of requests counts once.
    #[cfg(test)]
    pub fn commits(&self) -> u64 {
        self.commits
    }

    /// Where the journal file stands: the number and hash of its last durable line (a committed
    /// batch's lines may still be on their way to it).
    pub fn journal_head(&self) -> journal::Head {
        self.journal.head()
    }

    /// Runs a read-only query on the connection; for tests and diagnostics.
    #[cfg(test)]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The next getUpdates offset (0 before the first update).
    pub fn next_offset(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT next_offset FROM telegram_state WHERE id = 1",
                [],
                |row| row.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }
}

/// What every write does after its change, in its transaction or savepoint: the seal's key
/// made ready (an epoch change, or the announcement of a new key, journaled first), the next
/// Telegram offset stored, and the events staged as sealed, chained lines.
fn seal_and_stage(
    tx: &Connection,
    sealer: &mut Option<KeyFile>,
    now: DateTime<Utc>,
    next_offset: Option<i64>,
    effects: &mut Effects,
) -> Result<Vec<Line>, StoreError> {
    let sealing = crate::sealing::prepare(tx, sealer, now)?;
    if let Some(announce) = sealing.announce {
        let ev = if announce.rotated {
            EventName::SealRotated
        } else {
            EventName::SealStarted
        };
        let mut line = JournalEvent::new(ev);
        line.members = announce.members;
        effects.events.insert(0, line);
    }
    if let Some(offset) = next_offset {
        store_offset(tx, offset)?;
    }
    stage(tx, sealing.ts, &effects.events, sealing.key.as_ref())
}

/// Stores the next Telegram offset with what its update changed; it only ever moves forward.
pub(super) fn store_offset(tx: &Connection, offset: i64) -> Result<(), StoreError> {
    tx.execute_cached(
        "INSERT INTO telegram_state (id, next_offset) VALUES (1, ?1)
         ON CONFLICT (id) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)",
        [offset],
    )?;
    Ok(())
}

/// Turns events into chained lines and stages them in the transaction.
pub(super) fn stage(
    tx: &Connection,
    now: DateTime<Utc>,
    events: &[JournalEvent],
    seal: Option<&journal::SealKey>,
) -> Result<Vec<Line>, StoreError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let (mut n, mut prev) = tx
        .query_row_cached(
            "SELECT last_n, last_h FROM journal_state WHERE id = 1",
            [],
            |row| Ok((row.get::<_, i64>(0)? as u64, row.get::<_, String>(1)?)),
        )
        .optional()?
        .unwrap_or((0, journal::GENESIS_PREV.to_owned()));
    let mut lines = Vec::with_capacity(events.len());
    for event in events {
        n += 1;
        let mut line = journal::build_line(n, &prev, now, event.ev.as_str(), &event.members);
        if let Some(key) = seal {
            key.seal(&mut line);
        }
        tx.execute_cached(
            "INSERT INTO journal_staged (n, prev, h, line) VALUES (?1, ?2, ?3, ?4)",
            params![n as i64, prev, line.h, line.text],
        )?;
        prev = line.h.clone();
        lines.push(line);
    }
    tx.execute_cached(
        "INSERT INTO journal_state (id, last_n, last_h) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET last_n = excluded.last_n, last_h = excluded.last_h",
        params![n as i64, prev],
    )?;
    Ok(lines)
}
