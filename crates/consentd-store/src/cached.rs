//! `execute` and `query_row` through the connection's statement cache.
//!
//! rusqlite's plain `execute` and `query_row` compile their SQL on every call, and compiling a
//! statement on `records` also compiles the triggers that guard its state machine. Profiling an
//! ask-to-card run showed about a sixth of the daemon's CPU in SQLite's parser; the store's SQL
//! is a fixed set of strings, so each is compiled once and reused (see docs/BENCHMARKS.md).

use rusqlite::{Connection, Params, Row};

/// Enough for every fixed statement of the store, so the hot ones are never evicted.
pub(crate) const STATEMENT_CACHE_CAPACITY: usize = 128;

pub(crate) trait Cached {
    /// [`Connection::execute`], compiled once per connection.
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// [`Connection::query_row`], compiled once per connection.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}
