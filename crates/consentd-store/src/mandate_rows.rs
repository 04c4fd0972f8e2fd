//! Reading mandates (docs/PROTOCOL.md, "Mandates"): a mandate's row with its terms and where it
//! stands, the usage of
//! its days counted from the asks it answered, and the open mandate that covers an action.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, OptionalExtension};
use rust_decimal::Decimal;

use super::cached::Cached;
use super::readings::stored_monotonic;
use super::time::{parse_time, timestamp};
use super::StoreError;
use consentd_core::action::{format_usd, Action};
use consentd_core::clock::Monotonic;
use consentd_core::deadline::{Now, Span};
use consentd_core::digest::Sha256Hash;
use consentd_core::mandate::{self, Coverage, CoveredAction, Mandate, Term, Usage};
use consentd_core::raise::DayLimits;

/// A mandate as stored: the terms asked, and once granted, when it opened and ends, and whether
/// the owner stopped it or its term ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateRow {
    /// The id of the record that asked for it.
    pub id: String,
    /// That record's digest: the terms the owner granted, which its Stop buttons are signed for.
    pub digest: Sha256Hash,
    pub kind: String,
    /// Empty for a kind with no target: any use of it.
    pub targets: Vec<String>,
    pub days: u32,
    /// `None`: no money term (a kind that never costs).
    pub usd_per_day: Option<Decimal>,
    pub actions_per_day: u32,
    pub reason: Option<String>,
    pub opened_at: Option<DateTime<Utc>>,
    pub ends_at: Option<DateTime<Utc>>,
    pub stopped_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The client's one line on where the request came from, when it sent one.
    pub origin: Option<String>,
    /// The labelled socket it was asked through; `None` for the main socket.
    pub listener: Option<String>,
    /// For a request the owner opened from a suggestion, the yeses it was suggested after:
    /// read from the suggestion, which no session can write.
    pub suggested_after: Option<u32>,
    /// When it was asked (its record's `created_at`), and the monotonic clock then, when it was
    /// kept: its term runs from the ask to `ends_at`, on both clocks.
    pub asked_at: DateTime<Utc>,
    pub asked_monotonic: Option<Monotonic>,
    /// The owner's raise of the day this row was read for, when read with a day's use
    /// ([`crate::Db::mandate_usage`], [`crate::Db::open_mandates`]); `None` otherwise.
    pub raised_today: Option<consentd_core::raise::DayLimits>,
}

impl MandateRow {
    /// The mandate as coverage sees it; `None` until the owner granted it.
    pub(crate) fn as_mandate(&self) -> Option<Mandate> {
        Some(Mandate {
            kind: self.kind.clone(),
            targets: self.targets.clone(),
            opened_at: self.opened_at?,
            ends_at: self.ends_at?,
            usd_per_day: self.usd_per_day,
            actions_per_day: self.actions_per_day,
            // An ended term covers nothing either; coverage checks the end by time as well.
            stopped: self.stopped_at.is_some() || self.ended_at.is_some(),
        })
    }

    /// Its term, from the ask to `ends_at`, on both clocks; `None` until the owner granted it.
    pub(crate) fn term(&self) -> Option<Span> {
        self.opened_at?;
        Some(Span {
            started_at: self.asked_at,
            ends_at: self.ends_at?,
            started_monotonic: self.asked_monotonic.clone(),
        })
    }

    /// Granted, not stopped, and its term not over at `now`.
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.opened_at.is_some()
            && self.stopped_at.is_none()
            && self.ended_at.is_none()
            && self.ends_at.is_some_and(|end| now < end)
    }
}

/// How the `usd_per_day` column holds "no money term": the column is NOT NULL, and a money term
/// is never zero (the terms check refuses it), so zero cannot mean anything else.
const NO_MONEY_TERM: &str = "0.00";

/// The `usd_per_day` column's text for a money term.
pub(crate) fn money_column(usd_per_day: Option<Decimal>) -> String {
    mandate::money_term(usd_per_day).map_or_else(|| NO_MONEY_TERM.to_owned(), format_usd)
}

/// A money term read back from the `usd_per_day` column.
pub(crate) fn money_from_column(text: &str) -> Option<Option<Decimal>> {
    let usd: Decimal = text.parse().ok()?;
    Some(mandate::money_term(Some(usd)))
}

pub(super) const MANDATE_COLUMNS: &str =
    "id, kind, targets, days, usd_per_day, actions_per_day, reason, \
    opened_at, ends_at, stopped_at, ended_at, \
    (SELECT digest FROM records WHERE records.id = mandates.id), \
    (SELECT origin FROM records WHERE records.id = mandates.id), \
    (SELECT approvals FROM suggestions WHERE suggestions.mandate_id = mandates.id), \
    (SELECT created_at FROM records WHERE records.id = mandates.id), \
    (SELECT asked_boot FROM records WHERE records.id = mandates.id), \
    (SELECT asked_since_boot_ms FROM records WHERE records.id = mandates.id), \
    (SELECT listener FROM records WHERE records.id = mandates.id)";

pub(super) fn mandate_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MandateRow> {
    let invalid = |column: usize, what: String| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, what.into())
    };
    let targets: String = row.get(2)?;
    let usd: String = row.get(4)?;
    Ok(MandateRow {
        id: row.get(0)?,
        kind: row.get(1)?,
        targets: serde_json::from_str(&targets).map_err(|e| invalid(2, e.to_string()))?,
        days: row.get(3)?,
        usd_per_day: money_from_column(&usd).ok_or_else(|| invalid(4, format!("amount {usd}")))?,
        actions_per_day: row.get(5)?,
        reason: row.get(6)?,
        opened_at: row
            .get::<_, Option<String>>(7)?
            .as_deref()
            .and_then(parse_time),
        ends_at: row
            .get::<_, Option<String>>(8)?
            .as_deref()
            .and_then(parse_time),
        stopped_at: row
            .get::<_, Option<String>>(9)?
            .as_deref()
            .and_then(parse_time),
        ended_at: row
            .get::<_, Option<String>>(10)?
            .as_deref()
            .and_then(parse_time),
        digest: stored_digest(row, 11)?.ok_or(rusqlite::Error::InvalidColumnType(
            11,
            "digest".to_owned(),
            rusqlite::types::Type::Null,
        ))?,
        origin: row.get(12)?,
        suggested_after: row.get(13)?,
        asked_at: row
            .get::<_, Option<String>>(14)?
            .as_deref()
            .and_then(parse_time)
            .ok_or_else(|| invalid(14, "its record's created_at".to_owned()))?,
        asked_monotonic: stored_monotonic(row.get(15)?, row.get(16)?),
        listener: row
            .get::<_, Option<String>>(17)?
            .and_then(crate::peer::listener_of),
        raised_today: None,
    })
}

/// A digest column as the store wrote it (64 hex digits), parsed; a text that is not one is an
/// error naming the column.
pub(super) fn stored_digest(
    row: &rusqlite::Row<'_>,
    column: usize,
) -> rusqlite::Result<Option<Sha256Hash>> {
    let Some(text) = row.get::<_, Option<String>>(column)? else {
        return Ok(None);
    };
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(&text, &mut bytes)
        .map(|()| Some(Sha256Hash(bytes)))
        .map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                column,
                rusqlite::types::Type::Text,
                format!("{text:?} is not a stored digest").into(),
            )
        })
}

pub(crate) fn mandate_row(conn: &Connection, id: &str) -> Result<Option<MandateRow>, StoreError> {
    Ok(conn
        .query_row_cached(
            &format!("SELECT {MANDATE_COLUMNS} FROM mandates WHERE id = ?1"),
            [id],
            mandate_from_row,
        )
        .optional()?)
}

/// A mandate's uses in a span of time, read from `records_by_mandate` alone (it carries the cost).
pub(crate) const USAGE_ON_DAY: &str =
    "SELECT cost_usd FROM records WHERE mandate_id = ?1 AND created_at >= ?2 AND created_at < ?3";

/// What a mandate used during the owner's local day of `now`: every ask it answered (whatever
/// came of the run: a paid call that failed may still have cost), and their costs.
pub(crate) fn usage_on_day(
    conn: &Connection,
    mandate_id: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Usage, StoreError> {
    let (start, end) = mandate::local_day(now, tz);
    let mut statement = conn.prepare_cached(USAGE_ON_DAY)?;
    let costs = statement.query_map(
        params![mandate_id, timestamp(start), timestamp(end)],
        |row| row.get::<_, Option<String>>(0),
    )?;
    sum_costs(costs)
}

/// The count and the sum of the costs read.
fn sum_costs(
    costs: impl Iterator<Item = rusqlite::Result<Option<String>>>,
) -> Result<Usage, StoreError> {
    let mut usage = Usage::NONE;
    for cost in costs {
        usage.actions += 1;
        if let Some(cost) = cost? {
            let amount: Decimal = cost
                .parse()
                .map_err(|_| StoreError::Encode(format!("stored amount {cost} is not a number")))?;
            usage.usd += amount;
        }
    }
    Ok(usage)
}

/// The first open mandate (oldest first) that covers `action` now, with its usage before it.
/// Only the mandates `peer`'s uid asked for, through any of its sockets: a standing yes given to
/// one session is not another's. (A uid's mandates are its own across sockets, as its
/// suggestions are, which open theirs on the main socket; each receipt names the socket its own
/// action came through.)
///
/// All the mandates of a kind, whoever asked for them, are bounded together by the config's
/// ceilings on a mandate's day (`day_ceilings`), the day's uses of stopped and ended ones
/// counted too: several mandates granted for one kind do not add their days up past what one
/// could hold, so the day's actions and money that run without a card stay within those
/// ceilings however many the owner granted.
pub(crate) fn covering_mandate(
    tx: &Connection,
    action: &Action,
    peer: &crate::peer::Peer,
    now: &Now,
    (tz, day_ceilings): (Tz, Usage),
) -> Result<Option<Cover>, StoreError> {
    let candidates: Vec<MandateRow> = {
        let mut statement = tx.prepare_cached(&format!(
            "SELECT {MANDATE_COLUMNS} FROM mandates
             WHERE kind = ?1 AND opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
               AND (SELECT peer_uid FROM records WHERE records.id = mandates.id) = ?2
             ORDER BY opened_at, id"
        ))?;
        let rows = statement.query_map(params![action.kind, peer.uid], mandate_from_row)?;
        rows.collect::<Result<_, _>>()?
    };
    // Most asks are of kinds no open mandate covers: they read nothing more.
    if candidates.is_empty() {
        return Ok(None);
    }
    let Some(day_at) = day_to_count(tx, &action.kind, now)? else {
        return Ok(None);
    };
    let covered = CoveredAction {
        kind: &action.kind,
        target: action.target.as_deref(),
        cost_usd: action.cost_usd.unwrap_or(Decimal::ZERO),
    };
    for row in candidates {
        let Some(terms) = row.as_mandate() else {
            continue;
        };
        // Its term over on the monotonic clock: a wall clock stepped back does not stretch it
        // (the sweep ends it within a second; until then it covers nothing).
        if row.term().is_none_or(|term| term.over(now)) {
            continue;
        }
        let now = now.wall;
        // Use only takes coverage away, so a mandate that would not cover the action unused
        // (another target, ended) is passed over without counting its day: an agent with many
        // mandates of a kind pays for one count per ask, not one per mandate.
        if mandate::coverage(&terms, &Usage::NONE, &covered, now) != Coverage::Covered {
            continue;
        }
        let usage = usage_on_day(tx, &row.id, day_at, tz)?;
        let terms = match mandate::coverage(&terms, &usage, &covered, now) {
            // Over the day's count or money as granted: the owner's raise of the day, if any,
            // is what this day runs under.
            Coverage::Outside(Term::Actions | Term::Money) => {
                match raise_on_day(tx, &row.id, day_at, tz)? {
                    Some(raised) => Mandate {
                        actions_per_day: raised.actions_per_day,
                        usd_per_day: raised.usd_per_day,
                        ..terms
                    },
                    None => terms,
                }
            }
            _ => terms,
        };
        if mandate::coverage(&terms, &usage, &covered, now) == Coverage::Covered {
            let kind = kind_usage_on_day(tx, &action.kind, day_at, tz)?;
            let within = kind.actions < day_ceilings.actions
                && kind.usd + covered.cost_usd <= day_ceilings.usd;
            return Ok(within.then_some(Cover {
                mandate: row,
                usage,
                counted_at: day_at,
            }));
        }
    }
    Ok(None)
}

/// A mandate that covers an ask, with its day's usage before the ask and the instant the ask is
/// counted at (the covered record's date, so that it is counted in the day it was counted for).
#[derive(Debug)]
pub(crate) struct Cover {
    pub(crate) mandate: MandateRow,
    pub(crate) usage: Usage,
    pub(crate) counted_at: DateTime<Utc>,
}

/// The instant whose local day a covered ask is counted in: the wall clock's reading, but no
/// later than the monotonic clock allows since the kind's latest mandate use. `None` when the wall
/// clock dates the ask well before that use: nothing is then covered, and the ask gets a card.
///
/// The day's count is read by the records' wall-clock dates, so the wall clock alone would move
/// it: stepped back into a day the mandates already lived through, that day would count only the
/// uses dated in it and its limits would start again; stepped forward past midnight, the next
/// day would start early. A step back (beyond the slack of asks that read the clock before they
/// queue for the store) covers nothing until the wall clock has caught up, as one dating an ask
/// before a grant does (`Term::BeforeOpened`); a step forward counts the day the latest use plus
/// the monotonic time since it reaches. A use from another boot, or asked before the monotonic
/// reading was kept, bounds nothing: the wall clock decides alone.
fn day_to_count(
    tx: &Connection,
    kind: &str,
    now: &Now,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let latest: Option<String> = tx.query_row_cached(LATEST_KIND_USE, [kind], |row| row.get(0))?;
    let Some((text, at)) = latest.and_then(|text| parse_time(&text).map(|at| (text, at))) else {
        return Ok(Some(now.wall));
    };
    if now.wall + STORE_QUEUE_SLACK < at {
        return Ok(None);
    }
    let reading: Option<(Option<String>, Option<i64>)> = tx
        .query_row_cached(LATEST_KIND_USE_READING, params![kind, text], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let since = reading
        .and_then(|(boot, ms)| stored_monotonic(boot, ms))
        .and_then(|asked| now.monotonic.since(&asked))
        .and_then(|elapsed| chrono::TimeDelta::from_std(elapsed).ok());
    Ok(Some(match since {
        Some(elapsed) => now.wall.min(at + elapsed),
        None => now.wall,
    }))
}

/// How far an ask's reading of the wall clock may fall behind one stored before it while it waits
/// for the store, and not be taken for a clock stepped back.
const STORE_QUEUE_SLACK: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// When the latest use of any mandate of a kind was asked (its record's `created_at`).
pub(crate) const LATEST_KIND_USE: &str = "SELECT max(created_at) FROM records
     WHERE mandate_id IN (SELECT id FROM mandates WHERE kind = ?1)";

/// The monotonic reading of the use [`LATEST_KIND_USE`] found, by its `created_at`.
const LATEST_KIND_USE_READING: &str = "SELECT asked_boot, asked_since_boot_ms FROM records
     WHERE mandate_id IN (SELECT id FROM mandates WHERE kind = ?1) AND created_at = ?2
     LIMIT 1";

/// The uses of every mandate of a kind in a span of time: the mandates by `mandates_by_kind`,
/// each one's uses from `records_by_mandate` alone.
pub(crate) const KIND_USAGE_ON_DAY: &str = "SELECT cost_usd FROM records
     WHERE mandate_id IN (SELECT id FROM mandates WHERE kind = ?1)
       AND created_at >= ?2 AND created_at < ?3";

/// What every mandate of `kind` used during the owner's local day of `now`, together.
pub(crate) fn kind_usage_on_day(
    conn: &Connection,
    kind: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Usage, StoreError> {
    let (start, end) = mandate::local_day(now, tz);
    let mut statement = conn.prepare_cached(KIND_USAGE_ON_DAY)?;
    let costs = statement.query_map(params![kind, timestamp(start), timestamp(end)], |row| {
        row.get::<_, Option<String>>(0)
    })?;
    sum_costs(costs)
}

/// The raise of `mandate_id` on the owner's local day of `at`, if the owner raised it then.
pub(crate) fn raise_on_day(
    conn: &Connection,
    mandate_id: &str,
    at: DateTime<Utc>,
    tz: Tz,
) -> Result<Option<DayLimits>, StoreError> {
    let (day_start, _) = mandate::local_day(at, tz);
    let found: Option<(u32, String)> = conn
        .query_row_cached(
            "SELECT actions_per_day, usd_per_day FROM mandate_raises
             WHERE mandate_id = ?1 AND day_start = ?2",
            params![mandate_id, timestamp(day_start)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    found
        .map(|(actions_per_day, usd)| {
            let usd_per_day = money_from_column(&usd).ok_or_else(|| {
                StoreError::Encode(format!("stored amount {usd} is not a number"))
            })?;
            Ok(DayLimits {
                actions_per_day,
                usd_per_day,
            })
        })
        .transpose()
}
