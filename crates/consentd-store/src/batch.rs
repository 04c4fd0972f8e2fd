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
//!   handed to the journal's thread (`journal::JournalWriter`), which appends them in one write
//!   and one fsync while this thread goes on to the next batch. The chain's order is the order of
//!   the writes, which is the commit order.
//! - No request is answered, and no record change is announced, before its lines are in the
//!   journal file: an answer reports only what is durable. Two exceptions. A request that comes
//!   before the batch's first write and writes nothing itself (a read) is answered at once: all
//!   it saw was committed by earlier batches. A card's opening (`Store::show_card`) is answered
//!   at the commit, so that the card leaves while its `card_shown` line is being appended.
//! - The sender is rung for a card the batch queued once the batch commits, not before: it opens
//!   and sends the card from its outbox row, so a batch that fails to commit takes its card with
//!   it, unsent; and it need not wait for the batch's journal fsync.
//! - Why answering at the commit is safe: a committed line is staged in the same transaction as
//!   what it tells of, and the store opens by appending every staged line the file lacks before
//!   anything else, so the journal cannot lose it; the file only trails the database by the
//!   lines in flight. What reaches the owner was committed first.
//! - If the commit fails, every request of the batch not yet answered is answered with the
//!   failure (a request that had failed on its own keeps its own error); if the journal's append
//!   fails, every request still waiting for it is, and the lines stay staged for the next start.
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

    /// Commits the batch and gives back its journal lines, for the journal's thread. Only after
    /// both may the batch's requests be answered (a card's opening: after the commit).
    pub(crate) fn commit_batch(&mut self) -> Result<Vec<Line>, StoreError> {
        let Some(batch) = self.batch.take() else {
            return Ok(Vec::new());
        };
        // A journal file that can no longer be written takes nothing more: what this batch would
        // send (a card, a receipt) or start (a run) could not have its line in the file.
        if let Some(reason) = self.journal_failed() {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(StoreError::JournalWrite(reason));
        }
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

    /// Commits the batch and appends its lines, waiting for them: the store's thread hands them
    /// over instead.
    #[cfg(test)]
    pub(crate) fn finish_batch(&mut self) -> Result<(), StoreError> {
        let lines = self.commit_batch()?;
        self.append_journal(&lines)
    }
}
