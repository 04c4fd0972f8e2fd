//! One write's savepoint inside a group-commit batch ([`crate::batch`]).

use rusqlite::Connection;

use crate::StoreError;

/// One write's savepoint in a batch, made and ended through cached statements (rusqlite's own
/// `Savepoint` parses its SQL at every use). Dropped unreleased, it rolls the write back.
pub(crate) struct Savepoint<'c> {
    conn: &'c Connection,
    released: bool,
}

impl<'c> Savepoint<'c> {
    pub(crate) fn begin(conn: &'c Connection) -> Result<Savepoint<'c>, StoreError> {
        conn.prepare_cached("SAVEPOINT batch_write")?.execute([])?;
        Ok(Savepoint {
            conn,
            released: false,
        })
    }

    pub(crate) fn release(mut self) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("RELEASE batch_write")?
            .execute([])?;
        self.released = true;
        Ok(())
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if !self.released {
            for sql in ["ROLLBACK TO batch_write", "RELEASE batch_write"] {
                let _ = self
                    .conn
                    .prepare_cached(sql)
                    .and_then(|mut statement| statement.execute([]));
            }
        }
    }
}
