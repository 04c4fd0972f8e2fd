//! Changes to a stopped daemon's database made behind the store's back, as an outside hand (or
//! an older consentd) would leave them, so a test can check what the daemon makes of them.
//!
//! Only in a `test-hooks` build (which only `cargo test` and `cargo bench` turn on): each write
//! here bypasses the store's one way to change anything (no journal line, no guarded step), so a
//! shipped binary must neither contain nor offer it.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::{StoreError, DB_FILE};

/// Marks the database as written at schema `version` (`PRAGMA user_version`), as a newer
/// consentd would leave it, so a test can check that this build refuses to open it.
pub fn set_schema(state_dir: &Path, version: u32) -> Result<(), StoreError> {
    let conn = open_read_write(state_dir)?;
    conn.execute_batch(&format!("PRAGMA user_version = {version}"))?;
    Ok(())
}

/// Makes every kind's silence look as one started before the upgrade that records who silenced
/// it: `kind_streaks.silenced_by` cleared on every row. Returns how many rows it changed. The
/// daemon must be stopped: its next start has to find the database as an upgrade would.
pub fn forget_who_silenced(state_dir: &Path) -> Result<usize, StoreError> {
    let conn = open_read_write(state_dir)?;
    Ok(conn.execute("UPDATE kind_streaks SET silenced_by = NULL", [])?)
}

/// A read-write connection to a stopped daemon's database, never creating one.
fn open_read_write(state_dir: &Path) -> Result<Connection, StoreError> {
    let path = state_dir.join(DB_FILE);
    // No SQLITE_OPEN_CREATE: a tamper of a database that is not there is a test's mistake.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(&path, flags).map_err(|source| StoreError::Open {
        path: path.display().to_string(),
        source,
    })?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}
