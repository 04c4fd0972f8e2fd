//! Reading records: the columns a [`Record`] is read from, with its attachments and, for a
//! mandate request, its mandate's row.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rusqlite::{named_params, params, Connection, OptionalExtension};
use rust_decimal::Decimal;

use super::cached::Cached;
use super::db::Db;
use super::mandate_rows::{mandate_row, stored_digest, MandateRow};
use super::peer::Peer;
use super::readings::stored_monotonic;
use super::state::RecordState;
use super::time::parse_time;
use super::StoreError;
use consentd_core::clock::Monotonic;
use consentd_core::deadline::{Span, Window};
use consentd_core::digest::{AttachmentFacts, Sha256Hash};
use consentd_core::exact::HookCall;

/// A stored record: what every record has, and a [`Body`] for what it asks, so a field exists
/// only on the records it means something for.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: i64,
    pub id: String,
    pub peer_uid: u32,
    /// The origin of the labelled socket it was asked through; `None` for the main socket.
    pub listener: Option<String>,
    pub state: RecordState,
    /// Times are parsed once, when the record is read (the store writes them with `timestamp`).
    pub created_at: DateTime<Utc>,
    /// The monotonic clock as it was asked (with `created_at`), when it was kept: its own ttl
    /// while it waits unshown, and a mandate request's term, are judged on it too.
    pub asked_monotonic: Option<Monotonic>,
    /// Why it ended where it did, when that has a reason code (a refusal, an expiry, a failure),
    /// and the words that go with it.
    pub reason: Option<String>,
    pub message: Option<String>,
    /// When it reached its final state.
    pub finished_at: Option<DateTime<Utc>>,
    pub body: Body,
}

/// What a record asks for, and what only that kind of record has.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// An action: what the owner sees and what runs.
    Action(Box<ActionRecord>),
    /// A request for a mandate.
    Mandate(Box<MandateRequest>),
    /// An ask refused before it had a digest: the gate never let it become an action.
    RefusedEarly {
        /// Its kind, when the session named a well-formed one.
        kind: Option<String>,
    },
}

/// What every record that was asked has — an action or a mandate request, never one refused
/// before it had them: the kind it asks for, its digest, and its card's times and answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub kind: String,
    /// The action's (or mandate request's) digest, parsed once when the record is read.
    pub digest: Sha256Hash,
    /// The client's one line on where the ask comes from, when it sent one.
    pub origin: Option<String>,
    pub shown_at: Option<DateTime<Utc>>,
    /// Its card's deadline once shown; while it waits unshown, its own ttl (see
    /// [`Record::own_ttl`]).
    pub expires_at: Option<DateTime<Utc>>,
    /// The monotonic clock when the card was shown, when it was kept.
    pub shown_monotonic: Option<Monotonic>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<i64>,
    /// The display name of whoever pressed, as Telegram gave it then.
    pub decided_by_name: Option<String>,
    /// For a declined record: the owner's reply to its card, the No's reason.
    pub decline_reason: Option<String>,
    /// For a record declined with "No, and say why…": until when its final line waits for
    /// that reason. `None` for a plain No, which takes no reason.
    pub reason_until: Option<DateTime<Utc>>,
}

/// A record of an action.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRecord {
    pub asked: Asked,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    /// Parsed once, when the record is read (the store writes it with `format_usd`).
    pub cost_usd: Option<Decimal>,
    pub attachments: Vec<AttachmentFacts>,
    pub idempotency_key: Option<String>,
    pub urgent: bool,
    /// Whether its category was approval-only when it was asked, as its card says: then the
    /// owner's Yes ends it `approved` and nothing runs, whatever the config says by then.
    pub agent_runs: bool,
    /// The agent's call, when a hook's gate asked (`hook`): its card shows it, and an Always
    /// press saves it as an exact rule.
    pub hook: Option<HookCall>,
    /// The mandate that answered it instead of a card.
    pub mandate_id: Option<String>,
    /// For an action a mandate answered: the mandate's day as of this action, itself included,
    /// taken in its claim's transaction — what its receipt shows, however many asks the
    /// mandate answered while it ran. `None` for one claimed before the store kept it.
    pub mandate_use: Option<consentd_core::mandate::Usage>,
    /// What its run left for the session, once it ran.
    pub result: Option<String>,
}

/// A record of a request for a mandate.
#[derive(Debug, Clone, PartialEq)]
pub struct MandateRequest {
    pub asked: Asked,
    /// Its terms and where the mandate stands.
    pub row: Option<MandateRow>,
}

impl Record {
    /// The peer that asked it: its uid, through the socket it came by.
    pub fn peer(&self) -> Peer {
        Peer {
            uid: self.peer_uid,
            listener: self.listener.clone(),
        }
    }

    /// Its kind and digest, and its card; [`StoreError::NotAsked`] for a record refused before
    /// it had them.
    pub fn asked(&self) -> Result<&Asked, StoreError> {
        self.asked_part().ok_or_else(|| StoreError::NotAsked {
            id: self.id.clone(),
        })
    }

    /// Its kind, digest and card, unless it was refused before it had them.
    pub fn asked_part(&self) -> Option<&Asked> {
        match &self.body {
            Body::Action(action) => Some(&action.asked),
            Body::Mandate(request) => Some(&request.asked),
            Body::RefusedEarly { .. } => None,
        }
    }

    /// The kind it asks for, when it has one (a record refused early may not).
    pub fn kind(&self) -> Option<&str> {
        match &self.body {
            Body::RefusedEarly { kind } => kind.as_deref(),
            _ => self.asked_part().map(|asked| asked.kind.as_str()),
        }
    }

    /// The action, for a record of one.
    pub fn action(&self) -> Option<&ActionRecord> {
        match &self.body {
            Body::Action(action) => Some(action),
            _ => None,
        }
    }

    /// The mandate request, for a record of one.
    pub fn mandate_request(&self) -> Option<&MandateRequest> {
        match &self.body {
            Body::Mandate(request) => Some(request),
            _ => None,
        }
    }

    /// What it asks for, as the `subject` column says: an ask refused early was stored as an
    /// action's.
    pub fn subject(&self) -> Subject {
        match self.body {
            Body::Mandate(_) => Subject::Mandate,
            _ => Subject::Action,
        }
    }

    /// When its card was shown and until when it may be answered, once it was shown.
    pub fn window(&self) -> Option<Window> {
        let asked = self.asked_part()?;
        Some(Window {
            shown_at: asked.shown_at?,
            expires_at: asked.expires_at?,
            shown_monotonic: asked.shown_monotonic.clone(),
        })
    }

    /// Its own ttl (an ask's `ttl`, kept as `expires_at` while it is pending) as a span on both
    /// clocks; `None` once its card is shown (then `expires_at` is the card's), or without one.
    pub fn own_ttl(&self) -> Option<Span> {
        (self.state == RecordState::Pending).then_some(())?;
        Some(Span {
            started_at: self.created_at,
            ends_at: self.asked_part()?.expires_at?,
            started_monotonic: self.asked_monotonic.clone(),
        })
    }

    /// Whether the record has its answer for the session: a final state, or a granted mandate
    /// request (a mandate request is never run, so `granted` is where it ends).
    pub fn is_final(&self) -> bool {
        self.state.is_final()
            || (self.subject() == Subject::Mandate && self.state == RecordState::Granted)
    }
}

/// What a record asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Action,
    Mandate,
}

impl Subject {
    pub fn as_str(self) -> &'static str {
        match self {
            Subject::Action => "action",
            Subject::Mandate => "mandate",
        }
    }
}

impl Db {
    pub fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        record_where(&self.conn, "id = ?1", params![id])
    }

    /// A peer's records, newest first, at most `limit`, strictly older than `before_seq`; with the
    /// cursor for the next page when there is one.
    pub fn list(
        &self,
        peer: &Peer,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<i64>), StoreError> {
        let mut statement = self.conn.prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM records
             WHERE peer_uid = :uid AND listener = :listener AND seq < :before
             ORDER BY seq DESC LIMIT :limit"
        ))?;
        let rows = statement.query_map(
            named_params! {
                ":uid": peer.uid,
                ":listener": peer.column(),
                ":before": before_seq.unwrap_or(i64::MAX),
                ":limit": (limit + 1) as i64,
            },
            record_from_row,
        )?;
        let mut records: Vec<Record> = rows.collect::<Result<_, _>>()?;
        let next = if records.len() > limit {
            records.truncate(limit);
            records.last().map(|record| record.seq)
        } else {
            None
        };
        for record in &mut records {
            complete(&self.conn, record)?;
        }
        Ok((records, next))
    }
}

/// The peer's open ask with a digest, for joining its card. `+peer_uid` keeps SQLite off
/// `records_by_peer`: to serve `ORDER BY seq DESC` it would walk every record the peer ever made,
/// and every refused ask is one, so a runaway agent's burst slowed each later ask on the store's
/// one thread (10,000 refusals took an ask from about 1 ms to 10). `records_open` holds only the
/// open asks, at most `max_pending`.
pub(super) const OPEN_BY_DIGEST: &str =
    "digest = ?1 AND +peer_uid = ?2 AND +listener = ?3 AND state IN ('pending', 'card_shown')";

const RECORD_COLUMNS: &str = "seq, id, peer_uid, kind, target, text, fields, cost_usd, digest, \
    idempotency_key, urgent, state, reason, message, result, created_at, shown_at, expires_at, \
    decided_at, decided_by, finished_at, subject, mandate_id, decided_by_name, shown_boot, \
    shown_since_boot_ms, mandate_actions_today, mandate_usd_today, decline_reason, origin, \
    agent_runs, asked_boot, asked_since_boot_ms, hook_agent, hook_tool, hook_cwd, reason_until, listener";

/// The query [`record_where`] runs: the latest record meeting `condition`.
pub(super) fn record_where_sql(condition: &str) -> String {
    format!("SELECT {RECORD_COLUMNS} FROM records WHERE {condition} ORDER BY seq DESC LIMIT 1")
}

pub(crate) fn record_where(
    conn: &Connection,
    condition: &str,
    params: impl rusqlite::Params,
) -> Result<Option<Record>, StoreError> {
    let record = conn
        .query_row_cached(&record_where_sql(condition), params, record_from_row)
        .optional()?;
    match record {
        Some(mut record) => {
            complete(conn, &mut record)?;
            Ok(Some(record))
        }
        None => Ok(None),
    }
}

fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    let state: String = row.get(11)?;
    Ok(Record {
        seq: row.get(0)?,
        id: row.get(1)?,
        peer_uid: row.get(2)?,
        listener: crate::peer::listener_of(row.get(37)?),
        state: RecordState::parse(&state).ok_or_else(|| invalid(11, format!("state {state}")))?,
        created_at: stored_time(row, 15)?.ok_or(rusqlite::Error::InvalidColumnType(
            15,
            "created_at".to_owned(),
            rusqlite::types::Type::Null,
        ))?,
        asked_monotonic: stored_monotonic(row.get(31)?, row.get(32)?),
        reason: row.get(12)?,
        message: row.get(13)?,
        finished_at: stored_time(row, 20)?,
        body: body_from_row(row)?,
    })
}

/// The body its columns make: a record without a kind and a digest was refused before it had
/// them, whatever its `subject`; the attachments and the mandate's row are read after.
fn body_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Body> {
    let kind: Option<String> = row.get(3)?;
    let (Some(kind), Some(digest)) = (kind.clone(), stored_digest(row, 8)?) else {
        return Ok(Body::RefusedEarly { kind });
    };
    let asked = Asked {
        kind,
        digest,
        origin: row.get(29)?,
        shown_at: stored_time(row, 16)?,
        expires_at: stored_time(row, 17)?,
        shown_monotonic: stored_monotonic(row.get(24)?, row.get(25)?),
        decided_at: stored_time(row, 18)?,
        decided_by: row.get(19)?,
        decided_by_name: row.get(23)?,
        decline_reason: row.get(28)?,
        reason_until: stored_time(row, 36)?,
    };
    if row.get::<_, String>(21)? == "mandate" {
        return Ok(Body::Mandate(Box::new(MandateRequest { asked, row: None })));
    }
    let fields: String = row.get(6)?;
    Ok(Body::Action(Box::new(ActionRecord {
        asked,
        target: row.get(4)?,
        text: row.get(5)?,
        fields: serde_json::from_str(&fields).map_err(|e| invalid(6, e.to_string()))?,
        cost_usd: stored_money(row, 7)?,
        attachments: Vec::new(),
        idempotency_key: row.get(9)?,
        urgent: row.get(10)?,
        agent_runs: row.get(30)?,
        hook: match (row.get(33)?, row.get(34)?, row.get(35)?) {
            (Some(agent), Some(tool), Some(cwd)) => Some(HookCall { agent, tool, cwd }),
            _ => None,
        },
        mandate_id: row.get(22)?,
        mandate_use: match (
            row.get::<_, Option<u32>>(26)?,
            row.get::<_, Option<String>>(27)?,
        ) {
            (Some(actions), Some(usd)) => Some(consentd_core::mandate::Usage {
                actions,
                usd: usd
                    .parse()
                    .map_err(|_| invalid(27, format!("amount {usd}")))?,
            }),
            _ => None,
        },
        result: row.get(14)?,
    })))
}

fn invalid(column: usize, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, what.into())
}

/// Reads what a record's row does not hold: an action's attachments, a mandate request's
/// terms.
fn complete(conn: &Connection, record: &mut Record) -> Result<(), StoreError> {
    match &mut record.body {
        Body::Action(action) => action.attachments = attachments_of(conn, &record.id)?,
        Body::Mandate(request) => request.row = mandate_row(conn, &record.id)?,
        Body::RefusedEarly { .. } => {}
    }
    Ok(())
}

fn attachments_of(conn: &Connection, id: &str) -> Result<Vec<AttachmentFacts>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT name, media_type, bytes, sha256 FROM attachments WHERE record_id = ?1 ORDER BY position",
    )?;
    let rows = statement.query_map([id], |row| {
        Ok(AttachmentFacts {
            name: row.get(0)?,
            media_type: row.get(1)?,
            bytes: row.get::<_, i64>(2)? as u64,
            sha256: row.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A time column as the store wrote it ([`super::time::timestamp`]), parsed; a text that is not
/// one is an error naming the column, never a silently missing time.
fn stored_time(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    let Some(text) = row.get::<_, Option<String>>(column)? else {
        return Ok(None);
    };
    parse_time(&text).map(Some).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            format!("{text:?} is not a stored time").into(),
        )
    })
}

/// A money column as the store wrote it, parsed; a text that is not an amount is an error naming
/// the column.
fn stored_money(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<Option<Decimal>> {
    let Some(text) = row.get::<_, Option<String>>(column)? else {
        return Ok(None);
    };
    text.parse::<Decimal>().map(Some).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, error.into())
    })
}
