//! The store's side of "Raise today" ([`consentd_core::raise`]): a mandate's raise of one local
//! day (the `mandate_raises` row coverage reads beside its terms), the facts a receipt's Raise
//! press is judged on, and the press applied — its row and its `mandate_raised` line in one
//! transaction, at most one a day per mandate.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection};

use super::cached::Cached;
use super::db::Db;
use super::events::{Effects, EventName, JournalEvent};
use super::mandate_rows::{mandate_row, money_column, raise_on_day};
use super::outbox::Outgoing;
use super::records::record_where;
use super::time::timestamp;
use super::StoreError;
use consentd_core::mandate;
use consentd_core::raise::{DayLimits, RaiseFacts};

/// What a receipt's Raise names: the mandate that answered its action, the local day the action
/// was counted in, and the facts the press is judged on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaiseSubject {
    pub mandate_id: String,
    pub kind: String,
    /// The first instant of the owner's local day the action was counted in.
    pub day_start: DateTime<Utc>,
    pub facts: RaiseFacts,
}

/// A raise to apply: the owner's press on `record_id`'s receipt lifts `mandate_id`'s limits
/// to `limits` for the local day starting at `day_start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRaise {
    pub record_id: String,
    pub mandate_id: String,
    pub day_start: DateTime<Utc>,
    pub limits: DayLimits,
    pub by: i64,
    /// The owner's reply, queued with the raise.
    pub reply: Outgoing,
}

impl Db {
    /// The facts of a Raise press on the receipt of `record_id`, at `now`; `None` when the
    /// record is not an action a mandate answered (with its day's use kept at its claim).
    pub fn raise_subject(
        &self,
        record_id: &str,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Option<RaiseSubject>, StoreError> {
        let Some(record) = record_where(&self.conn, "id = ?1", params![record_id])? else {
            return Ok(None);
        };
        let Some(action) = record.action() else {
            return Ok(None);
        };
        let (Some(mandate_id), Some(usage)) = (action.mandate_id.clone(), action.mandate_use)
        else {
            return Ok(None);
        };
        let Some(row) = mandate_row(&self.conn, &mandate_id)? else {
            return Ok(None);
        };
        let (day_start, _) = mandate::local_day(record.created_at, tz);
        let facts = RaiseFacts {
            open: row.is_open(now),
            same_day: mandate::local_day(now, tz).0 == day_start,
            raised: raise_on_day(&self.conn, &mandate_id, record.created_at, tz)?,
            granted: DayLimits {
                actions_per_day: row.actions_per_day,
                usd_per_day: row.usd_per_day,
            },
            usage,
            cost: action.cost_usd.unwrap_or_default(),
        };
        Ok(Some(RaiseSubject {
            mandate_id,
            kind: row.kind,
            day_start,
            facts,
        }))
    }
}

/// The owner's Raise, as the decision applies it: one compare-and-set on the mandate's day
/// (a second press, or a replay of this one, finds the row there and changes nothing), only
/// while the mandate is open; its `mandate_raised` line and the owner's reply. Returns whether
/// it was raised.
pub(crate) fn raise_in(
    tx: &Connection,
    effects: &mut Effects,
    raise: &NewRaise,
) -> Result<bool, StoreError> {
    let now = effects.now;
    let Some(row) = mandate_row(tx, &raise.mandate_id)? else {
        return Ok(false);
    };
    if !row.is_open(now) {
        return Ok(false);
    }
    let inserted = tx.execute_cached(
        "INSERT INTO mandate_raises (mandate_id, day_start, actions_per_day, usd_per_day,
                                     record_id, raised_at, raised_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (mandate_id, day_start) DO NOTHING",
        params![
            raise.mandate_id,
            timestamp(raise.day_start),
            raise.limits.actions_per_day,
            money_column(raise.limits.usd_per_day),
            raise.record_id,
            timestamp(now),
            raise.by
        ],
    )?;
    if inserted == 0 {
        return Ok(false);
    }
    // Ids, the day and the amounts: the journal holds no text.
    let mut line = JournalEvent::new(EventName::MandateRaised)
        .with("id", raise.mandate_id.as_str())
        .with("kind", row.kind.as_str())
        .with("record", raise.record_id.as_str())
        .with("day", timestamp(raise.day_start))
        .with("actions_per_day", raise.limits.actions_per_day);
    if let Some(usd) = mandate::money_term(raise.limits.usd_per_day) {
        line = line.with("usd_per_day", consentd_core::action::format_usd(usd));
    }
    effects.push(line.with("by", raise.by));
    raise.reply.queue_in(tx, effects)?;
    Ok(true)
}
