//! The `pairing` table as `consentd pair` writes it: through its own short SQLite connection,
//! beside the running daemon's (SQLite takes care of the concurrency), never through the store's
//! thread, which belongs to the daemon.

use std::path::Path;

use anyhow::Context as _;
use chrono::Utc;
use rusqlite::{params, Connection, OptionalExtension};

use super::time::timestamp;

/// Stores the hash of a new pairing code in the database at `db_path`, unless an owner is paired
/// or pairing is locked after too many wrong codes.
pub fn store_code(
    db_path: &Path,
    code_hash: &str,
    expires_at: chrono::DateTime<Utc>,
    now: chrono::DateTime<Utc>,
) -> anyhow::Result<()> {
    let mut conn =
        Connection::open(db_path).with_context(|| format!("cannot open {}", db_path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // The checks and the write in one IMMEDIATE transaction: the daemon may pair meanwhile.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let conn = &tx;
    let owner: Option<i64> = conn
        .query_row("SELECT telegram_id FROM owner WHERE id = 1", [], |row| {
            row.get(0)
        })
        .optional()
        .context("the database has no pairing tables: is the daemon older than this command?")?;
    if let Some(owner) = owner {
        anyhow::bail!("consentd is already paired with Telegram user {owner}");
    }
    let locked: Option<String> = conn
        .query_row(
            "SELECT locked_until FROM pairing WHERE id = 1 AND locked_until > ?1",
            [timestamp(now)],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(until) = locked {
        anyhow::bail!("pairing is locked after too many wrong codes until {until}");
    }
    conn.execute(
        "INSERT INTO pairing (id, code_hash, expires_at, used) VALUES (1, ?1, ?2, 0)
         ON CONFLICT (id) DO UPDATE SET code_hash = excluded.code_hash,
             expires_at = excluded.expires_at, used = 0",
        params![code_hash, timestamp(expires_at)],
    )?;
    tx.commit()?;
    Ok(())
}
