//! Group commit: the store's thread applies every request waiting in its queue in one
//! transaction, each request's writes in its own savepoint, and makes them durable together.
//!
//! Policy:
//! - A batch is what is waiting when the thread turns to its queue, at most [`MAX_BATCH`]
//!   requests; one waiting request is a batch of one, and costs what it did before batching
//!   (one commit, one journal fsync).
//! - Each write ([`Db::write_effects`]) inside a batch is a savepoint: its error rolls back that
//!   write alone, and the request that made it gets the error; the others go on.
//! - The batch commits once (one WAL fsync under `synchronous=FULL`), then its journal lines are
//!   appended in one write and one fsync. The chain's order is the order of the writes, which is
//!   the commit order.
//! - No request is answered, and no record change is announced, before that: an answer reports
//!   only what is durable. The one exception is a request that comes before the batch's first
//!   write and writes nothing itself (a read): all it saw was made durable by earlier batches,
//!   so it is answered at once instead of waiting for the batch's fsync.
//! - Nor is the sender rung for a card the batch queued: it opens and sends the card from its
//!   outbox row once the batch is durable, so a batch that fails to commit takes its card with
//!   it, unsent.
//! - If the commit or the journal's append fails, every request of the batch not yet answered
//!   is answered with the failure (a request that had failed on its own keeps its own error).
//! - A crash anywhere in a batch leaves the state of the last commit: none of the batch, or all
//!   of it with its journal lines staged in the same commit (appended at the next start, as for
//!   a single write). No request of a batch was answered before its commit.

use crate::db::{Batch, Db};
use crate::StoreError;
use consentd_core::journal::Line;

/// The most requests one batch takes: enough to share one fsync among a burst of agents, few
/// enough that the first of them is not held long behind the last.
pub const MAX_BATCH: usize = 256;

impl Db {
    /// Opens a batch: one IMMEDIATE transaction that the writes until [`Db::commit_batch`] share.
    pub(crate) fn begin_batch(&mut self) -> Result<(), StoreError> {
        debug_assert!(self.batch.is_none(), "a batch inside a batch");
        self.conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        self.batch = Some(Batch::default());
        Ok(())
    }

    /// How many rows this connection has inserted, updated or deleted since it opened (SQLite's
    /// `total_changes`, triggers' rows included): unchanged across a job, the job wrote nothing.
    pub(crate) fn rows_written(&self) -> u64 {
        self.conn.total_changes()
    }

    /// Commits the batch and gives back its journal lines, to be appended with
    /// [`Db::append_batch_lines`]. Only after both may the batch's requests be answered.
    pub(crate) fn commit_batch(&mut self) -> Result<Vec<Line>, StoreError> {
        let Some(batch) = self.batch.take() else {
            return Ok(Vec::new());
        };
        let commit = self
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut c| c.execute([]));
        if let Err(error) = commit {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(error.into());
        }
        self.commits += 1;
        self.changed.extend(batch.changed);
        self.outbox_queued |= batch.queued;
        Ok(batch.lines)
    }

    /// Appends a committed batch's journal lines with one write and one fsync.
    pub(crate) fn append_batch_lines(&mut self, lines: &[Line]) -> Result<(), StoreError> {
        if lines.is_empty() {
            return Ok(());
        }
        self.append_journal(lines)
    }

    /// Commits the batch and appends its lines: the store's thread does the two apart.
    #[cfg(test)]
    pub(crate) fn finish_batch(&mut self) -> Result<(), StoreError> {
        let lines = self.commit_batch()?;
        self.append_batch_lines(&lines)
    }
}
