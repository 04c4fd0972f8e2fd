//! The database opened read-only, for a tool that checks a setup (`consentd doctor`) while the
//! daemon may be running: it never migrates, writes or takes a write lock, and a database from
//! an older daemon that lacks a table is an error on that read alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{OpenFlags, OptionalExtension as _};

use crate::DB_FILE;

/// The daemon's database in a state directory, read-only; `None` inside when there is none yet.
#[derive(Debug)]
pub struct ReadOnly {
    path: PathBuf,
    conn: Result<Option<rusqlite::Connection>, String>,
}

/// The last message to a chat that left the queue: sent, or dropped with Telegram's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastMessage {
    /// The outbox state: `sent` or `dropped`.
    pub state: String,
    /// When it was queued (RFC 3339, as stored).
    pub queued_at: String,
    /// Why it was dropped, when it was.
    pub error: Option<String>,
}

impl ReadOnly {
    /// Opens `state_dir`'s database read-only, if it exists; the error says why it cannot be read.
    pub fn open(state_dir: &Path) -> ReadOnly {
        let path = state_dir.join(DB_FILE);
        let conn = match path.try_exists() {
            Ok(false) => Ok(None),
            Err(error) => Err(error.to_string()),
            Ok(true) => rusqlite::Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .and_then(|conn| {
                conn.busy_timeout(Duration::from_secs(5))?;
                Ok(conn)
            })
            .map(Some)
            .map_err(|error| error.to_string()),
        };
        ReadOnly { path, conn }
    }

    /// The database's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The paired owner's Telegram id, if any.
    pub fn paired_owner(&self) -> Result<Option<i64>, String> {
        self.row("SELECT telegram_id FROM owner WHERE id = 1", [], |row| {
            row.get::<_, i64>(0)
        })
    }

    /// The newest message to `chat_id` that left the queue (sent or dropped).
    pub fn last_message_to(&self, chat_id: i64) -> Result<Option<LastMessage>, String> {
        self.row(
            "SELECT state, created_at, error FROM outbox WHERE chat_id = ?1 AND state != 'queued' \
             ORDER BY seq DESC LIMIT 1",
            [chat_id],
            |row| {
                Ok(LastMessage {
                    state: row.get(0)?,
                    queued_at: row.get(1)?,
                    error: row.get(2)?,
                })
            },
        )
    }

    /// When the newest message that reached `chat_id` was queued.
    pub fn last_sent_to(&self, chat_id: i64) -> Result<Option<String>, String> {
        self.row(
            "SELECT MAX(created_at) FROM outbox WHERE chat_id = ?1 AND state = 'sent'",
            [chat_id],
            |row| row.get::<_, Option<String>>(0),
        )
        .map(Option::flatten)
    }

    /// The journal anchor the last evening summary sent the owner, as stored.
    pub fn last_summary_anchor(&self) -> Result<Option<String>, String> {
        self.row(
            "SELECT anchor FROM summaries ORDER BY day DESC LIMIT 1",
            [],
            |row| row.get::<_, String>(0),
        )
    }

    /// One optional row of a query, `None` when there is no database or no row.
    fn row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, String> {
        match &self.conn {
            Ok(None) => Ok(None),
            Ok(Some(conn)) => conn
                .query_row(sql, params, map)
                .optional()
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.clone()),
        }
    }
}
