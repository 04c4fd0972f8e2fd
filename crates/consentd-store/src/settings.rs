//! The store's side of the owner's chat settings and the evening summary: what the owner set
//! with `/quiet`, `/nightcards`, `/summary`, `/lang` and the category switches (each journaled),
//! the day's counts, and the summary sent once a day with the journal's anchor.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use rust_decimal::Decimal;

use super::cached::Cached;
use super::db::Db;
use super::events::EventName;
use super::events::{Effects, JournalEvent};
use super::outbox::Outgoing;
use super::time::timestamp;
use super::{StoreError, DB_FILE};
use consentd_core::gate::DayCounts;
use consentd_core::journal::GENESIS_PREV;

/// A mandate's use on one day, for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateSpend {
    pub id: String,
    pub kind: String,
    pub actions: u32,
    /// `None` for a mandate with no money term: the summary shows no money for it.
    pub usd: Option<Decimal>,
}

/// An evening summary, drawn before its transaction: its messages, and the anchor (`N:H`) they
/// show, which must still be the journal's when it is sent.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// `None` sends whatever the anchor (a test's summary, which shows none).
    pub anchor: Option<String>,
    pub messages: Vec<Outgoing>,
}

/// What became of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummarySent {
    /// Sent now.
    Now,
    /// The day's summary was sent before: nothing is sent.
    Before,
    /// The journal moved since it was drawn: nothing is sent; draw it again.
    AnchorMoved,
}

/// The owner's category switches as the database in `state_dir` holds them, read without
/// writing and before the store opens: `serve` judges its categories by them before it starts.
/// No database yet (a first start), or one not yet given its tables, holds no switches.
pub fn read_switches(state_dir: &Path) -> Result<BTreeMap<String, bool>, StoreError> {
    let path = state_dir.join(DB_FILE);
    // A path that cannot be looked at is opened all the same, for SQLite to say why it fails.
    if matches!(path.try_exists(), Ok(false)) {
        return Ok(BTreeMap::new());
    }
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|source| StoreError::Open {
        path: path.display().to_string(),
        source,
    })?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master
                        WHERE type = 'table' AND name = 'category_switches')",
        [],
        |row| row.get(0),
    )?;
    if !has_table {
        return Ok(BTreeMap::new());
    }
    let mut statement = conn.prepare("SELECT kind, enabled FROM category_switches")?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What the evening summary does with the receipts held through quiet hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldReceipts {
    /// Sends them, silently, just before itself (`receipts = "each"`).
    Send,
    /// Only counts them (`receipts = "summary"`, perhaps set since they were held).
    Count,
}

impl Db {
    /// The owner's switch for a category, where they have set one.
    pub fn category_switches(&self) -> Result<BTreeMap<String, bool>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT kind, enabled FROM category_switches")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What the owner has set in the chat, by key.
    pub fn owner_settings(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT key, value FROM owner_settings")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Sets one of the owner's settings, journaled `settings` with who set it; `reply` is queued
    /// in the same transaction.
    pub fn set_owner_setting(
        &mut self,
        key: &'static str,
        value: &str,
        by: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: &Outgoing,
    ) -> Result<(), StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            tx.execute_cached(
                "INSERT INTO owner_settings (key, value, set_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, set_at = excluded.set_at",
                params![key, value, timestamp(now)],
            )?;
            effects.push(
                JournalEvent::new(EventName::Settings)
                    .with("key", key)
                    .with("value", value)
                    .with("by", by),
            );
            if matches!(key, "quiet_hours" | "night_card_limit") {
                // Cards held under the old hours or limit are decided again under the new ones.
                let released = tx.execute_cached(
                    "UPDATE outbox SET hold_until = NULL
                     WHERE state = 'queued' AND hold_until IS NOT NULL",
                    [],
                )?;
                effects.queued |= released > 0;
            }
            reply.queue_in(tx, effects)
        })
    }

    /// When the last summary was sent, if ever.
    pub fn last_summary_sent_at(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let at: Option<String> = self
            .conn
            .query_row_cached(
                "SELECT sent_at FROM summaries ORDER BY sent_at DESC LIMIT 1",
                [],
                |row| row.get(0),
            )
            .optional()?;
        Ok(at
            .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
            .map(|at| at.with_timezone(&Utc)))
    }

    /// Whether the summary of local day `day` was sent.
    pub fn summary_sent_on(&self, day: NaiveDate) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT 1 FROM summaries WHERE day = ?1",
                [day.to_string()],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Sends the summary of `day` unless it was sent: `compose` queues it, given the journal's
    /// anchor `N:H12` as it stands before this transaction's own `summary_sent` line, which
    /// carries the same anchor. Returns whether it was sent now.
    pub fn send_summary(
        &mut self,
        day: NaiveDate,
        now: DateTime<Utc>,
        held: HeldReceipts,
        summary: &Summary,
    ) -> Result<SummarySent, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let sent: Option<i64> = tx
                .query_row_cached(
                    "SELECT 1 FROM summaries WHERE day = ?1",
                    [day.to_string()],
                    |row| row.get(0),
                )
                .optional()?;
            if sent.is_some() {
                return Ok(SummarySent::Before);
            }
            let (n, h): (i64, String) = tx
                .query_row_cached(
                    "SELECT last_n, last_h FROM journal_state WHERE id = 1",
                    [],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?
                .unwrap_or((0, GENESIS_PREV.to_owned()));
            if summary
                .anchor
                .as_deref()
                .is_some_and(|drawn| drawn != format!("{n}:{h}"))
            {
                // The journal moved since the summary was drawn: nothing is written, and the
                // caller draws it again on the new anchor.
                return Ok(SummarySent::AnchorMoved);
            }
            let anchor = format!("{n}:{}", &h[..12.min(h.len())]);
            tx.execute_cached(
                "INSERT INTO summaries (day, sent_at, anchor) VALUES (?1, ?2, ?3)",
                params![day.to_string(), timestamp(now), anchor],
            )?;
            // Receipts held through quiet hours go now, silently, just before the summary (their
            // rows are older, and their lane keeps its order); or, with receipts only counted,
            // are marked sent as the gate's summary-only ones are.
            tx.execute_cached(
                match held {
                    HeldReceipts::Send => {
                        "UPDATE outbox SET hold_until = NULL, sound = 'silent'
                         WHERE state = 'queued' AND sound = 'receipt' AND hold_until IS NOT NULL"
                    }
                    HeldReceipts::Count => {
                        "UPDATE outbox SET state = 'sent'
                         WHERE state = 'queued' AND sound = 'receipt' AND hold_until IS NOT NULL"
                    }
                },
                [],
            )?;
            effects.queued = true;
            // The owner is shown the whole hash (and the short form): the table and the
            // journal keep the contract's `N:H12`.
            for message in &summary.messages {
                message.queue_in(tx, effects)?;
            }
            effects.push(
                JournalEvent::new(EventName::SummarySent)
                    .with("day", day.to_string())
                    .with("anchor", anchor.as_str()),
            );
            Ok(SummarySent::Now)
        })
    }

    /// The anchor a summary drawn now shows, `N:H` (the whole hash): the journal's head as its
    /// transaction reads it.
    pub fn summary_anchor(&self) -> Result<String, StoreError> {
        let (n, h): (i64, String) = self
            .conn
            .query_row_cached(
                "SELECT last_n, last_h FROM journal_state WHERE id = 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?
            .unwrap_or((0, GENESIS_PREV.to_owned()));
        Ok(format!("{n}:{h}"))
    }

    /// What happened in `[start, end)`: asks stored, the owner's yeses (and mandates' covers),
    /// no's, expiries, runs executed and failed, refusals.
    pub fn day_counts(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<DayCounts, StoreError> {
        let (start, end) = (timestamp(start), timestamp(end));
        let count = |condition: &str| -> Result<u32, StoreError> {
            Ok(self.conn.query_row_cached(
                &format!("SELECT count(*) FROM records WHERE subject = 'action' AND {condition}"),
                params![start, end],
                |row| row.get(0),
            )?)
        };
        Ok(DayCounts {
            asked: count("state <> 'refused' AND created_at >= ?1 AND created_at < ?2")?,
            granted: count(
                "state IN ('granted', 'running', 'executed', 'failed', 'outcome_unknown')
                 AND decided_at >= ?1 AND decided_at < ?2",
            )?,
            declined: count("state = 'declined' AND decided_at >= ?1 AND decided_at < ?2")?,
            expired: count("state = 'expired' AND finished_at >= ?1 AND finished_at < ?2")?,
            executed: count("state = 'executed' AND finished_at >= ?1 AND finished_at < ?2")?,
            failed: count("state = 'failed' AND finished_at >= ?1 AND finished_at < ?2")?,
            refused: count("state = 'refused' AND created_at >= ?1 AND created_at < ?2")?
                + self.conn.query_row_cached(
                    // The refusals the budget counted, not recorded one by one (0013).
                    "SELECT coalesce(sum(count), 0) FROM refusal_repeats
                     WHERE closed_at >= ?1 AND closed_at < ?2",
                    params![start, end],
                    |row| row.get::<_, u32>(0),
                )?,
            by_rules: self.rule_uses_between(&start, &end)?,
        })
    }

    /// The actions asked in `[start, end)` through each labelled socket (by its origin, in
    /// order), refused ones left out as [`Db::day_counts`] leaves them out of `asked`.
    pub fn asks_by_origin(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<(String, u32)>, StoreError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT listener, count(*) FROM records
             WHERE subject = 'action' AND state <> 'refused' AND listener <> ''
               AND created_at >= ?1 AND created_at < ?2
             GROUP BY listener ORDER BY listener",
        )?;
        let rows = statement.query_map(params![timestamp(start), timestamp(end)], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Each mandate's use in `[start, end)`, oldest mandate first.
    pub fn mandate_spend(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<MandateSpend>, StoreError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT r.mandate_id, m.kind, r.cost_usd, m.usd_per_day FROM records r JOIN mandates m
                 ON m.id = r.mandate_id
             WHERE r.created_at >= ?1 AND r.created_at < ?2
             ORDER BY m.opened_at, m.id",
        )?;
        let rows = statement.query_map(params![timestamp(start), timestamp(end)], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        let mut spend: Vec<MandateSpend> = Vec::new();
        for row in rows {
            let (id, kind, cost, term) = row?;
            let money_term = super::mandate_rows::money_from_column(&term)
                .ok_or_else(|| StoreError::Encode(format!("stored amount {term}")))?
                .is_some();
            let cost: Decimal = match cost {
                Some(cost) => cost
                    .parse()
                    .map_err(|_| StoreError::Encode(format!("stored amount {cost}")))?,
                None => Decimal::ZERO,
            };
            match spend.iter_mut().find(|s| s.id == id) {
                Some(entry) => {
                    entry.actions += 1;
                    entry.usd = entry.usd.map(|usd| usd + cost);
                }
                None => spend.push(MandateSpend {
                    id,
                    kind,
                    actions: 1,
                    usd: money_term.then_some(cost),
                }),
            }
        }
        Ok(spend)
    }
}

/// Whether the owner's switch for `kind`, as stored, says off. The daemon keeps the switches in
/// memory too, and checks them there before an ask reaches the store; its copy turns off just
/// before the owner's Off is stored, but an ask, a mandate request, a rule's use or a claim may
/// have passed that check before, so each is judged again here, inside its own transaction,
/// where the Off is either committed before it or ordered after it (the category must still be
/// on at the claim: docs/PROTOCOL.md, "Statuses").
pub(super) fn switched_off_in(tx: &Connection, kind: &str) -> Result<bool, StoreError> {
    let enabled: Option<bool> = tx
        .query_row_cached(
            "SELECT enabled FROM category_switches WHERE kind = ?1",
            params![kind],
            |row| row.get(0),
        )
        .optional()?;
    Ok(enabled == Some(false))
}

/// The owner's On or Off for a category, journaled `category_on` or `category_off` when it
/// `changed` anything (an old button pressed again changes nothing).
pub(super) fn switch_category_in(
    tx: &Connection,
    effects: &mut Effects,
    kind: &str,
    on: bool,
    changed: bool,
    by: i64,
) -> Result<(), StoreError> {
    tx.execute_cached(
        "INSERT INTO category_switches (kind, enabled) VALUES (?1, ?2)
         ON CONFLICT (kind) DO UPDATE SET enabled = excluded.enabled",
        params![kind, on],
    )?;
    if changed {
        effects.push(
            JournalEvent::new(if on {
                EventName::CategoryOn
            } else {
                EventName::CategoryOff
            })
            .with("kind", kind)
            .with("by", by),
        );
    }
    Ok(())
}
