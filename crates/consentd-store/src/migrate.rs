//! The schema's migrations (`migrations/*.sql`), applied in order when the database opens, each
//! in its own transaction that also sets `user_version`; a database newer than this build
//! knows is refused, never opened.

use rusqlite::{Connection, OptionalExtension};

use crate::StoreError;

/// The numbered migrations, applied in order.
///
/// There is no migration 10, and there never was one: no commit of this repository holds one.
/// The stranger presses (11) and the journal's seals (12) were written side by side on branches
/// of their own, when 9 was the last migration, and merged with those numbers, before any
/// release. Only the number matters (`user_version`), so a database at 9 goes on to 11; a 10
/// must never be added now, since a database at 21 would never run it. 22 to 24 (the reason's
/// deadline, the listeners, the mandates' raises) were written side by side too, and numbered
/// in the order they were merged, before any database beyond 21 left this repository.
pub(crate) const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/0001_init.sql")),
    (2, include_str!("migrations/0002_telegram.sql")),
    (3, include_str!("migrations/0003_mandates.sql")),
    (4, include_str!("migrations/0004_gate.sql")),
    (5, include_str!("migrations/0005_binding.sql")),
    (6, include_str!("migrations/0006_mandate_use.sql")),
    (7, include_str!("migrations/0007_decline_reason.sql")),
    (8, include_str!("migrations/0008_withdrawn_approved.sql")),
    (9, include_str!("migrations/0009_agent_runs.sql")),
    (11, include_str!("migrations/0011_stranger_presses.sql")),
    (12, include_str!("migrations/0012_journal_seal.sql")),
    (13, include_str!("migrations/0013_refusal_repeats.sql")),
    (14, include_str!("migrations/0014_suggestions.sql")),
    (15, include_str!("migrations/0015_mandate_usage.sql")),
    (16, include_str!("migrations/0016_asked_monotonic.sql")),
    (17, include_str!("migrations/0017_joined_keys.sql")),
    (18, include_str!("migrations/0018_mandates_by_kind.sql")),
    (19, include_str!("migrations/0019_exact_rules.sql")),
    (20, include_str!("migrations/0020_declines_per_uid.sql")),
    (21, include_str!("migrations/0021_attachment_copies.sql")),
    (22, include_str!("migrations/0022_reason_until.sql")),
    (23, include_str!("migrations/0023_listeners.sql")),
    (24, include_str!("migrations/0024_mandate_raises.sql")),
];

/// The schema this build writes: the last migration's number. A database above it is refused;
/// one below it is brought up to it at open.
pub const SCHEMA: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

pub(crate) fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let current: u32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let latest = SCHEMA;
    if current > latest {
        return Err(StoreError::TooNew {
            found: current,
            latest,
        });
    }
    // Foreign keys are off while migrations run (the pragma is a no-op inside a transaction):
    // a migration that rebuilds a table (0008, `records`) drops the old one, which must not
    // cascade to the rows that name it. Each migration checks nothing dangles before it commits.
    conn.execute_batch("PRAGMA foreign_keys = OFF;")?;
    for (number, sql) in MIGRATIONS.iter().filter(|(number, _)| *number > current) {
        let applied = conn
            .execute_batch(&format!("BEGIN IMMEDIATE; {sql}\n"))
            .and_then(|()| dangling_references(conn))
            .and_then(|()| conn.execute_batch(&format!("PRAGMA user_version = {number}; COMMIT;")));
        if let Err(source) = applied {
            let _ = conn.execute_batch("ROLLBACK;");
            conn.execute_batch("PRAGMA foreign_keys = ON;")?;
            return Err(StoreError::Migration {
                number: *number,
                source,
            });
        }
    }
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    Ok(())
}

/// Fails when a row names a row that is not there (`PRAGMA foreign_key_check`).
fn dangling_references(conn: &Connection) -> rusqlite::Result<()> {
    let dangling: Option<String> = conn
        .query_row("PRAGMA foreign_key_check", [], |row| row.get(0))
        .optional()?;
    match dangling {
        None => Ok(()),
        Some(table) => Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            Some(format!("a row of {table} names a row that is not there")),
        )),
    }
}
