//! A read-only look into a state directory's database, for tests and tools: named questions that
//! return plain data, so that nothing outside this crate names SQLite or writes SQL.
//!
//! [`Inspect`] opens the database with `SQLITE_OPEN_READ_ONLY`: it never migrates, never writes
//! and never takes the writer's lock, so it may be used while the daemon runs (WAL lets a reader
//! beside the one writer) or on a stopped daemon's files. What it reads is the last commit, which
//! may be a step behind what the daemon has answered until its next batch is durable; a caller
//! that waits for a state polls. The one write a test needs, an outside tamper of the database,
//! is [`tamper`], only in a `test-hooks` build.

#[cfg(feature = "test-hooks")]
pub mod tamper;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use consentd_core::journal::Head;
use rusqlite::{Connection, OpenFlags};

use crate::state::RecordState;
use crate::time::timestamp;
use crate::{StoreError, DB_FILE};

mod setup;
pub use setup::LastMessage;

/// A read-only connection to a state directory's database.
#[derive(Debug)]
pub struct Inspect {
    conn: Connection,
}

/// One row of the outbox, as much of it as says where it goes and whether it is still due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub chat_id: i64,
    /// `queued`, `sent` or `dropped`.
    pub state: String,
    /// `silent`, `gated`, `receipt` or `urgent`.
    pub sound: String,
    /// Held until this time (the store's timestamp), or not held.
    pub hold_until: Option<String>,
}

impl OutboxRow {
    /// Queued and not held: the sender may send it now.
    pub fn is_queued_unheld(&self) -> bool {
        self.state == "queued" && self.hold_until.is_none()
    }
}

/// A record's id and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    pub id: String,
    pub state: RecordState,
}

/// An open mandate (granted, not stopped, not ended) and the targets it names, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenMandate {
    pub id: String,
    pub targets: Vec<String>,
}

/// The terms a suggestion's button would ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestedTerms {
    pub days: u32,
    /// Dollars with two decimals; `None` for a kind without a cost.
    pub usd_per_day: Option<String>,
    pub actions_per_day: u32,
    /// The mandate request's digest, which the button is signed for.
    pub digest: String,
}

/// An attachment whose record still keeps its copy under `attachments/<sha256>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAttachment {
    pub record_id: String,
    pub bytes: i64,
    pub sha256: String,
}

/// What the daemon still has to do at an instant, counted: when every count is zero, it has
/// done everything due then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueWork {
    /// Outbox rows queued and not held past the instant.
    pub outbox: u64,
    /// Records running, or granted and not yet claimed (a granted mandate request is no run).
    pub runs: u64,
    /// Cards still shown although their window has ended by the instant.
    pub expiries: u64,
}

impl DueWork {
    pub fn total(&self) -> u64 {
        self.outbox + self.runs + self.expiries
    }
}

impl Inspect {
    /// Opens `state_dir`'s database read-only; no symlink is followed to it. Fails when it does
    /// not exist: a read-only connection never creates one.
    pub fn open_read_only(state_dir: &Path) -> Result<Inspect, StoreError> {
        let path = state_dir.join(DB_FILE);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|source| StoreError::Open {
                path: path.display().to_string(),
                source,
            })?;
        // A checkpoint of the daemon's may hold the database a moment: wait, as the daemon does.
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(Inspect { conn })
    }

    /// The schema the database is at (`PRAGMA user_version`).
    pub fn schema(&self) -> Result<u32, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))?)
    }

    /// Every outbox row, in the order queued.
    pub fn outbox(&self) -> Result<Vec<OutboxRow>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT chat_id, state, sound, hold_until FROM outbox ORDER BY seq")?;
        let rows = statement.query_map([], |row| {
            Ok(OutboxRow {
                chat_id: row.get(0)?,
                state: row.get(1)?,
                sound: row.get(2)?,
                hold_until: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every record's id and state, in no particular order.
    pub fn records(&self) -> Result<Vec<RecordRow>, StoreError> {
        let mut statement = self.conn.prepare("SELECT id, state FROM records")?;
        let rows = statement.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut records = Vec::new();
        for row in rows {
            let (id, state) = row?;
            let state = RecordState::parse(&state).ok_or_else(|| {
                StoreError::Encode(format!("record {id} has an unknown state {state:?}"))
            })?;
            records.push(RecordRow { id, state });
        }
        Ok(records)
    }

    /// The journal's head as the database records it: the last line staged.
    pub fn journal_head(&self) -> Result<Head, StoreError> {
        let (n, h): (i64, String) =
            self.conn
                .query_row("SELECT last_n, last_h FROM journal_state", [], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?;
        let n = u64::try_from(n)
            .map_err(|_| StoreError::Encode(format!("the journal's head is at line {n}")))?;
        Ok(Head { n, h })
    }

    /// The mandates open now: granted, not stopped, not ended.
    pub fn open_mandates(&self) -> Result<Vec<OpenMandate>, StoreError> {
        let mut statement = self.conn.prepare(
            "SELECT id, targets FROM mandates WHERE opened_at IS NOT NULL
             AND stopped_at IS NULL AND ended_at IS NULL",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut open = Vec::new();
        for row in rows {
            let (id, targets) = row?;
            let targets = serde_json::from_str(&targets)
                .map_err(|error| StoreError::Encode(format!("mandate {id}'s targets: {error}")))?;
            open.push(OpenMandate { id, targets });
        }
        Ok(open)
    }

    /// The terms of every suggestion made, opened or not.
    pub fn suggested_terms(&self) -> Result<Vec<SuggestedTerms>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT days, usd_per_day, actions_per_day, digest FROM suggestions")?;
        let rows = statement.query_map([], |row| {
            Ok(SuggestedTerms {
                days: row.get(0)?,
                usd_per_day: row.get(1)?,
                actions_per_day: row.get(2)?,
                digest: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The attachments whose records still keep their copies.
    pub fn kept_attachments(&self) -> Result<Vec<KeptAttachment>, StoreError> {
        let mut statement = self.conn.prepare(
            "SELECT a.record_id, a.bytes, a.sha256 FROM attachments a
             JOIN records r ON r.id = a.record_id WHERE r.copies_kept = 1",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(KeptAttachment {
                record_id: row.get(0)?,
                bytes: row.get(1)?,
                sha256: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What is due at `now` and not yet done (see [`DueWork`]); counted in one read, so the
    /// three counts are of the same commit.
    pub fn due_work(&self, now: DateTime<Utc>) -> Result<DueWork, StoreError> {
        let now = timestamp(now);
        let (outbox, runs, expiries): (i64, i64, i64) = self.conn.query_row(
            "SELECT (SELECT COUNT(*) FROM outbox WHERE state = 'queued'
                     AND (hold_until IS NULL OR hold_until <= ?1)),
                    (SELECT COUNT(*) FROM records WHERE state = 'running'
                     OR (state = 'granted' AND id NOT IN (SELECT id FROM mandates))),
                    (SELECT COUNT(*) FROM records WHERE state = 'card_shown'
                     AND expires_at <= ?1)",
            [&now],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(DueWork {
            outbox: count(outbox),
            runs: count(runs),
            expiries: count(expiries),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Db;

    /// Read beside an open writer: the journal head it records is the file's, and a read-only
    /// connection refuses a write even if one were attempted.
    #[test]
    fn reads_beside_the_writer_and_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("decisions.jsonl");
        let now = DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let (_db, _) = Db::open(&dir.path().join(DB_FILE), &journal, now).unwrap();
        let inspect = Inspect::open_read_only(dir.path()).unwrap();
        let file_head = crate::journal::head(&journal).unwrap().unwrap();
        assert_eq!(inspect.journal_head().unwrap(), file_head);
        assert!(inspect.records().unwrap().is_empty());
        assert!(inspect.outbox().unwrap().is_empty());
        assert_eq!(inspect.due_work(now).unwrap().total(), 0);
        assert!(inspect
            .conn
            .execute("DELETE FROM outbox", [])
            .is_err_and(|e| e.to_string().contains("readonly")));
    }

    #[test]
    fn a_missing_database_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Inspect::open_read_only(dir.path()).is_err());
        assert!(!dir.path().join(DB_FILE).exists());
    }
}
