//! When the WAL's pages go back into the database file (a checkpoint).
//!
//! Policy:
//! - SQLite's own checkpoint runs inside the commit that takes the WAL past its limit (1,000
//!   pages by default), so whoever waits on that commit — a session's answer, a card on its
//!   way to the owner — waits for the whole copy and its fsync as well, tens of milliseconds
//!   on a busy disk.
//! - The store's thread checkpoints instead when it is idle: once its queue is empty after a
//!   batch, and at least [`IDLE_CHECKPOINT_COMMITS`] commits have gone into the WAL since the
//!   last one. A request that arrives during it waits, as it would behind any batch.
//! - SQLite's own checkpoint stays as the backstop, at `db::WAL_BACKSTOP_PAGES` (set as the
//!   connection opens), for a load that never leaves the thread idle: the WAL stays bounded
//!   either way.
//! - A checkpoint is PASSIVE: it copies what no reader still needs and never blocks; what it
//!   leaves is copied by the next one. Durability does not depend on it: a commit is durable
//!   in the WAL (`synchronous = FULL`).

use crate::db::Db;
use crate::StoreError;

/// Commits since the last checkpoint that make an idle store's thread checkpoint: a few
/// hundred pages, so each idle checkpoint is short.
pub(crate) const IDLE_CHECKPOINT_COMMITS: u64 = 32;

impl Db {
    /// Checkpoints when enough commits went into the WAL since the last checkpoint; called by the
    /// store's thread when no request waits. Returns whether it checkpointed.
    pub(crate) fn checkpoint_when_idle(&mut self) -> Result<bool, StoreError> {
        if self.commits < self.checkpointed_at + IDLE_CHECKPOINT_COMMITS {
            return Ok(false);
        }
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        // Counted only once done: one that failed is tried again when the thread is next idle.
        self.checkpointed_at = self.commits;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::IDLE_CHECKPOINT_COMMITS;
    use crate::tests::{t0, Fixture};

    /// The database file's own size, and the size SQLite sees (the WAL's pages included).
    fn sizes(fixture: &Fixture, db: &crate::Db) -> (u64, u64) {
        let file = std::fs::metadata(&fixture.db_path).unwrap().len();
        let pages: i64 = db
            .connection()
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (file, pages as u64)
    }

    #[test]
    fn an_idle_store_copies_the_wal_into_the_database_only_after_enough_commits() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        db.connection()
            .execute_batch("CREATE TABLE filler (bytes BLOB)")
            .unwrap();
        let write = |db: &mut crate::Db| {
            db.write(t0(), |tx, _| {
                tx.execute("INSERT INTO filler VALUES (randomblob(8000))", [])?;
                Ok(())
            })
            .unwrap();
        };
        // From a checkpoint on.
        while !db.checkpoint_when_idle().unwrap() {
            write(&mut db);
        }
        for _ in 1..IDLE_CHECKPOINT_COMMITS {
            write(&mut db);
        }
        assert!(!db.checkpoint_when_idle().unwrap(), "too few commits yet");
        let (file, seen) = sizes(&fixture, &db);
        assert!(
            file < seen,
            "the new pages are in the WAL only: {file} < {seen}"
        );
        write(&mut db);
        assert!(db.checkpoint_when_idle().unwrap(), "enough commits");
        let (file, seen) = sizes(&fixture, &db);
        assert_eq!(file, seen, "the WAL's pages are in the database file");
        assert!(!db.checkpoint_when_idle().unwrap(), "nothing new since");
    }
}
