//! The store's side of mandates (SPEC §7): a mandate request stored as a record with its terms,
//! the mandate opened by the owner's Grant, the usage of its days counted from the asks it
//! answered, Stop, and the end of its term. Deciding whether a mandate covers an action is
//! [`crate::mandate::coverage`]; this module reads what it needs and writes what it decided, in
//! the same transaction.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use rust_decimal::Decimal;

use super::cached::Cached;
use super::db::{
    new_record_id, pending_refusal, record_where, refuse_in, stateful_refusal, timestamp,
    AskOutcome, AskPolicy, Db, Effects, Event, Record,
};
use super::drawn::unbutton_in;
use super::StoreError;
use crate::action::{format_usd, Action};
use crate::mandate::{self, Coverage, CoveredAction, Mandate, MandateRequest, Usage};
use crate::press::PressAction;

/// A mandate request that passed the refusal gate.
#[derive(Debug, Clone)]
pub struct NewMandate {
    pub peer_uid: u32,
    pub request: MandateRequest,
    pub digest: String,
}

/// A mandate as stored: the terms asked, and once granted, when it opened and ends, and whether
/// the owner stopped it or its term ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateRow {
    /// The id of the record that asked for it.
    pub id: String,
    /// That record's digest: the terms the owner granted, which its Stop buttons are signed for.
    pub digest: String,
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
}

impl MandateRow {
    /// The mandate as coverage sees it; `None` until the owner granted it.
    pub fn as_mandate(&self) -> Option<Mandate> {
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

fn parse_time(text: Option<String>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
        .map(|t| t.with_timezone(&Utc))
}

const MANDATE_COLUMNS: &str = "id, kind, targets, days, usd_per_day, actions_per_day, reason, \
    opened_at, ends_at, stopped_at, ended_at, \
    (SELECT digest FROM records WHERE records.id = mandates.id)";

fn mandate_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MandateRow> {
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
        opened_at: parse_time(row.get(7)?),
        ends_at: parse_time(row.get(8)?),
        stopped_at: parse_time(row.get(9)?),
        ended_at: parse_time(row.get(10)?),
        digest: row.get::<_, Option<String>>(11)?.unwrap_or_default(),
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

/// What a mandate used during the owner's local day of `now`: every ask it answered (whatever
/// came of the run: a paid call that failed may still have cost), and their costs.
pub(crate) fn usage_on_day(
    conn: &Connection,
    mandate_id: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Usage, StoreError> {
    let (start, end) = mandate::local_day(now, tz);
    let mut statement = conn.prepare_cached(
        "SELECT cost_usd FROM records WHERE mandate_id = ?1 AND created_at >= ?2 AND created_at < ?3",
    )?;
    let costs = statement.query_map(
        params![mandate_id, timestamp(start), timestamp(end)],
        |row| row.get::<_, Option<String>>(0),
    )?;
    let mut usage = Usage {
        actions: 0,
        usd: Decimal::ZERO,
    };
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
/// Only the mandates `peer_uid` asked for: a standing yes given to one session is not another's.
pub(crate) fn covering_mandate(
    tx: &Transaction<'_>,
    action: &Action,
    peer_uid: u32,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Option<(MandateRow, Usage)>, StoreError> {
    let candidates: Vec<MandateRow> = {
        let mut statement = tx.prepare_cached(&format!(
            "SELECT {MANDATE_COLUMNS} FROM mandates
             WHERE kind = ?1 AND opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
               AND (SELECT peer_uid FROM records WHERE records.id = mandates.id) = ?2
             ORDER BY opened_at, id"
        ))?;
        let rows = statement.query_map(params![action.kind, peer_uid], mandate_from_row)?;
        rows.collect::<Result<_, _>>()?
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
        let usage = usage_on_day(tx, &row.id, now, tz)?;
        if mandate::coverage(&terms, &usage, &covered, now) == Coverage::Covered {
            return Ok(Some((row, usage)));
        }
    }
    Ok(None)
}

impl Db {
    /// Stores a mandate request, or refuses it by the stateful rules an ask meets: the owner,
    /// decline memory for the identical request, a silenced kind, joining the same open request,
    /// `max_pending`. A new request's card is queued in the same transaction.
    pub fn ask_mandate(
        &mut self,
        ask: &NewMandate,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        let id = new_record_id()?;
        let request = &ask.request;
        let outcome = self.write_effects(now, None, |tx, effects| {
            let refuse = |effects: &mut Effects, refusal| {
                refuse_in(
                    tx,
                    &mut effects.events,
                    &id,
                    ask.peer_uid,
                    Some(&request.kind),
                    refusal,
                    now,
                )
            };
            if let Some(refusal) = stateful_refusal(tx, &ask.digest, &request.kind, policy, now)? {
                return refuse(effects, refusal);
            }
            // The same open request is joined, not asked again: no second card.
            if let Some(open) = open_request(tx, &ask.digest, ask.peer_uid)? {
                return Ok(AskOutcome::Joined(open));
            }
            if let Some(refusal) = pending_refusal(tx, policy)? {
                return refuse(effects, refusal);
            }
            tx.execute_cached(
                "INSERT INTO records (id, peer_uid, kind, digest, subject, state, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'mandate', 'pending', ?5)",
                params![id, ask.peer_uid, request.kind, ask.digest, timestamp(now)],
            )?;
            let targets = serde_json::to_string(&request.targets)
                .map_err(|e| StoreError::Encode(e.to_string()))?;
            tx.execute_cached(
                "INSERT INTO mandates (id, kind, targets, days, usd_per_day, actions_per_day, reason,
                                       ends_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    id,
                    request.kind,
                    targets,
                    request.days,
                    money_column(request.usd_per_day),
                    request.actions_per_day,
                    request.reason,
                    timestamp(mandate::ends_at(now, request.days))
                ],
            )?;
            if let Some(chat) = policy.card_chat {
                super::outbox::queue_in(
                    tx,
                    chat,
                    super::outbox::What::Card,
                    Some(&id),
                    &super::outbox::Body::default(),
                    super::outbox::Sound::Gated,
                    now,
                )?;
                effects.queued = true;
            }
            // Amounts and counts, never the targets or the reason: the journal holds no text.
            // No money term has no amount to journal.
            let asked = Event::new("mandate_asked")
                .with("id", id.as_str())
                .with("kind", request.kind.as_str())
                .with("digest", ask.digest.as_str())
                .with("uid", ask.peer_uid)
                .with("targets", request.targets.len())
                .with("days", request.days);
            effects.push(
                with_money_term(asked, request.usd_per_day)
                    .with("actions_per_day", request.actions_per_day),
            );
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            effects.changed.push((id.clone(), record.state));
            Ok(AskOutcome::Created(record))
        })?;
        if let AskOutcome::Refused { id, .. } = &outcome {
            self.note_change(id, super::RecordState::Refused);
        }
        Ok(outcome)
    }

    /// The owner's Stop: the mandate covers nothing from this transaction on; `mandate_stop` is
    /// journaled and `reply` (the answer to the owner) is queued with it. Returns false when the
    /// mandate was not open (already stopped or ended), and then changes nothing but the offset.
    pub fn stop_mandate(
        &mut self,
        id: &str,
        by: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: impl FnOnce(&Transaction<'_>, &mut Effects, &MandateRow) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let Some(row) = mandate_row(tx, id)? else {
                return Ok(false);
            };
            if !row.is_open(now) {
                return Ok(false);
            }
            tx.execute_cached(
                "UPDATE mandates SET stopped_at = ?2, stopped_by = ?3 WHERE id = ?1",
                params![id, timestamp(now), by],
            )?;
            effects.push(
                Event::new("mandate_stop")
                    .with("id", id)
                    .with("kind", row.kind.as_str())
                    .with("by", by),
            );
            // Its Stop buttons (receipts, `/mandates`, summaries) could only be refused now.
            unbutton_in(tx, effects, PressAction::Stop, id)?;
            reply(tx, effects, &row)?;
            Ok(true)
        })
    }

    /// Mandates whose term is over by `now` and not yet marked: each is ended with `mandate_end`
    /// journaled, and `notice` may queue a word to the owner in the same transaction.
    pub fn end_due_mandates(
        &mut self,
        now: DateTime<Utc>,
        mut notice: impl FnMut(&Transaction<'_>, &mut Effects, &MandateRow) -> Result<(), StoreError>,
    ) -> Result<usize, StoreError> {
        // Looked for first without the write lock: the sweep asks every second.
        let any_due: bool = self.conn.query_row_cached(
            "SELECT EXISTS (SELECT 1 FROM mandates
                 WHERE opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
                   AND ends_at <= ?1)",
            [timestamp(now)],
            |row| row.get(0),
        )?;
        if !any_due {
            return Ok(0);
        }
        self.write_effects(now, None, |tx, effects| {
            let due: Vec<MandateRow> = {
                let mut statement = tx.prepare_cached(&format!(
                    "SELECT {MANDATE_COLUMNS} FROM mandates
                     WHERE opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
                       AND ends_at <= ?1 ORDER BY ends_at, id"
                ))?;
                let rows = statement.query_map([timestamp(now)], mandate_from_row)?;
                rows.collect::<Result<_, _>>()?
            };
            for row in &due {
                tx.execute_cached(
                    "UPDATE mandates SET ended_at = ?2 WHERE id = ?1",
                    params![row.id, timestamp(now)],
                )?;
                effects.push(
                    Event::new("mandate_end")
                        .with("id", row.id.as_str())
                        .with("kind", row.kind.as_str())
                        .with("reason", "term"),
                );
                unbutton_in(tx, effects, PressAction::Stop, &row.id)?;
                notice(tx, effects, row)?;
            }
            Ok(due.len())
        })
    }

    /// The open mandates, oldest first, each with its usage today.
    pub fn open_mandates(
        &self,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Vec<(MandateRow, Usage)>, StoreError> {
        let rows: Vec<MandateRow> = {
            let mut statement = self.conn.prepare_cached(&format!(
                "SELECT {MANDATE_COLUMNS} FROM mandates
                 WHERE opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
                 ORDER BY opened_at, id"
            ))?;
            let rows = statement.query_map([], mandate_from_row)?;
            rows.collect::<Result<_, _>>()?
        };
        rows.into_iter()
            .filter(|row| row.is_open(now))
            .map(|row| {
                let usage = usage_on_day(&self.conn, &row.id, now, tz)?;
                Ok((row, usage))
            })
            .collect()
    }

    /// One mandate and its usage today.
    pub fn mandate_usage(
        &self,
        id: &str,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Option<(MandateRow, Usage)>, StoreError> {
        let Some(row) = mandate_row(&self.conn, id)? else {
            return Ok(None);
        };
        let usage = usage_on_day(&self.conn, id, now, tz)?;
        Ok(Some((row, usage)))
    }
}

/// A journal line with the mandate's `usd_per_day`, when it has a money term.
pub(crate) fn with_money_term(event: Event, usd_per_day: Option<Decimal>) -> Event {
    match mandate::money_term(usd_per_day) {
        Some(usd) => event.with("usd_per_day", format_usd(usd)),
        None => event,
    }
}

/// The same peer's open request with this digest.
fn open_request(
    tx: &Transaction<'_>,
    digest: &str,
    peer_uid: u32,
) -> Result<Option<Record>, StoreError> {
    record_where(tx, OPEN_REQUEST_BY_DIGEST, params![digest, peer_uid])
}

/// The peer's open mandate request with a digest; `+peer_uid` for the reason given at
/// [`super::db::OPEN_BY_DIGEST`].
pub(super) const OPEN_REQUEST_BY_DIGEST: &str =
    "digest = ?1 AND +peer_uid = ?2 AND subject = 'mandate' \
     AND state IN ('pending', 'card_shown')";
