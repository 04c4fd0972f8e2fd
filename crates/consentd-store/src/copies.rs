//! How long a record's attachment copies are kept (docs/CONFIG.md, `attachment_retention`): while
//! the record is open or running; for the retention after it ran (`executed`, `failed`,
//! `outcome_unknown`, `approved`); not at all once it ends without running (`declined`,
//! `expired`, `refused`, `withdrawn`, a failed claim). A record keeps its copies while its
//! `copies_kept` is set (migration 0021): cleared in the transaction that ends a record that
//! never ran ([`crate::transitions::transition_in`]) and by [`Db::release_retained_copies`].
//!
//! A copy is a file named by its hash, which records with the same bytes share: it is removed
//! after the commit that released it, when no record keeps it any more
//! ([`Db::remove_released_copies`]) and no queued message is to send it (a receipt held for the
//! evening: such a copy goes at the next start). A crash between that commit and the removal leaves a file
//! no record keeps, which the sweep at the next start removes ([`crate::blobs::remove_orphans`]).
//! The `attachments` rows (name, media type, size, hash) stay: the journal and the records still
//! say what was shown, and `journal verify` reads no copy.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::cached::Cached;
use super::db::Db;
use super::state::RecordState;
use super::time::since;
use super::StoreError;

impl Db {
    /// The records that ran and ended at or before `now - retention` stop keeping their copies;
    /// the copies no record keeps then go once this is committed. Answers how many records
    /// released theirs.
    pub fn release_retained_copies(
        &mut self,
        now: DateTime<Utc>,
        retention: Duration,
    ) -> Result<usize, StoreError> {
        let cutoff = since(now, retention);
        let due = |conn: &rusqlite::Connection| -> Result<Vec<String>, StoreError> {
            let mut statement = conn.prepare_cached(
                "SELECT id FROM records INDEXED BY records_copies_kept
                 WHERE copies_kept = 1
                   AND state IN ('executed', 'failed', 'outcome_unknown', 'approved')
                   AND finished_at <= ?1",
            )?;
            let ids = statement
                .query_map([&cutoff], |row| row.get(0))?
                .collect::<Result<Vec<String>, _>>()?;
            Ok(ids)
        };
        // Read first, outside a write: nearly always there is nothing due.
        if due(&self.conn)?.is_empty() {
            return Ok(0);
        }
        let released = self.write_effects(now, None, |tx, _| {
            let ids = due(tx)?;
            for id in &ids {
                tx.execute_cached("UPDATE records SET copies_kept = 0 WHERE id = ?1", [id])?;
            }
            Ok(ids)
        })?;
        let count = released.len();
        self.released_copies.extend(released);
        Ok(count)
    }

    /// After a commit: removes the copies of the records it ended without running, and of those
    /// [`Db::release_retained_copies`] released, that no record keeps any more. A failure leaves
    /// the file to the sweep at the next start.
    pub(crate) fn remove_released_copies(&mut self, changed: &[(String, RecordState)]) {
        let mut ids = std::mem::take(&mut self.released_copies);
        ids.extend(
            changed
                .iter()
                .filter(|(_, state)| never_ran(*state))
                .map(|(id, _)| id.clone()),
        );
        let Some(dir) = self.attachments_dir.clone() else {
            return;
        };
        if ids.is_empty() {
            return;
        }
        crate::crash::point("before_copies_removed");
        for id in ids {
            let Ok(hashes) = self.copies_of(&id) else {
                continue;
            };
            for hash in hashes {
                if !matches!(crate::blobs::kept(&self.conn, &hash), Ok(false)) {
                    continue;
                }
                // Already gone is fine; one left over goes at the next start.
                let _ = std::fs::remove_file(dir.join(&hash));
            }
        }
    }

    /// The hashes of a record's attachments.
    fn copies_of(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT DISTINCT sha256 FROM attachments WHERE record_id = ?1")?;
        let hashes = statement
            .query_map(params![id], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(hashes)
    }
}

/// A final state reached without running: its record's copies go with it.
fn never_ran(state: RecordState) -> bool {
    matches!(
        state,
        RecordState::Declined
            | RecordState::Expired
            | RecordState::Refused
            | RecordState::Withdrawn
    )
}
