//! The store's side of suggested mandates ([`consentd_core::suggest`]): the history a
//! suggestion is decided on, the suggestion made (its row, its `mandate_suggested` line and its
//! message, in one transaction), and the owner's press that opens its mandate card.

use chrono::{DateTime, Duration, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use rust_decimal::Decimal;

use super::cached::Cached;
use super::db::Db;
use super::drawn::unbutton_in;
use super::events::{Effects, EventName, JournalEvent};
use super::ids::new_record_id;
use super::mandate_rows::{money_column, money_from_column};
use super::mandates::{insert_request, open_request, NewMandate};
use super::outbox::Outgoing;
use super::peer::Peer;
use super::records::record_where;
use super::time::{parse_time, timestamp};
use super::StoreError;
use consentd_core::clock::Monotonic;
use consentd_core::mandate::MandateRequest;
use consentd_core::press::PressAction;
use consentd_core::suggest::{Approval, History, SUGGESTIONS_A_DAY, WINDOW_DAYS};

/// The latest moment the owner met a suggestion for kind `?1` and target `?2` (any uid's): when
/// it was made, opened, its card answered, or the mandate it became stopped, whichever is
/// latest. A Decline (or a Stop) on day 6 keeps the next one away until day 13, not day 7.
const LAST_MET: &str = "SELECT max(max(s.created_at, coalesce(s.opened_at, ''),
                                      coalesce(r.decided_at, ''), coalesce(m.stopped_at, '')))
                        FROM suggestions s LEFT JOIN records r ON r.id = s.mandate_id
                                           LEFT JOIN mandates m ON m.id = s.mandate_id
                        WHERE s.kind = ?1 AND s.target IS ?2";

/// A suggestion as stored: the mandate request its button opens and what it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// "m_" and 20 hex digits: the subject its button is signed for.
    pub id: String,
    /// The uid whose asks the owner said yes to; the mandate request is made in its name.
    pub peer_uid: u32,
    pub request: MandateRequest,
    /// The request's digest, which its button is signed for.
    pub digest: String,
    pub approvals: u32,
    pub created_at: DateTime<Utc>,
    pub opened_at: Option<DateTime<Utc>>,
}

impl Suggestion {
    /// Its button still opens its card: not opened yet, and not older than the week in which it
    /// stands for the owner's answer.
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.opened_at.is_none() && now < self.created_at + Duration::days(WINDOW_DAYS)
    }

    /// The target it names, for a kind with one.
    pub fn target(&self) -> Option<&str> {
        self.request.targets.first().map(String::as_str)
    }
}

/// A fresh suggestion id: "m_" and 20 hex digits (80 random bits).
pub fn new_suggestion_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|error| StoreError::Random(error.to_string()))?;
    Ok(format!("m_{}", hex::encode(bytes)))
}

/// What [`Db::open_suggestion`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// The mandate request with this id was made, and its card queued.
    Card(String),
    /// Opened before, or past its week: nothing changed.
    NotOpen,
    /// An open mandate names its kind and target now: nothing changed.
    Covered,
    /// The uid already asked for exactly these terms, and that card is open: it stands for
    /// this one (as a second identical request would join it), and nothing changed.
    AskedAlready,
    /// `max_pending` asks already wait for the owner: nothing changed.
    Full,
}

impl Db {
    /// The history [`consentd_core::suggest::decide`] needs for `peer_uid`'s asks of `kind` to
    /// `target` as of `now`: the owner's yeses in the last 7 days (asks a mandate answered are
    /// not yeses), whether an open mandate of that uid names them, and the last suggestions (for
    /// this kind and target whoever's, and for anything).
    pub fn suggestion_history(
        &self,
        peer_uid: u32,
        kind: &str,
        target: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<History, StoreError> {
        let since = timestamp(now - Duration::days(WINDOW_DAYS));
        let approvals = {
            let mut statement = self.conn.prepare_cached(
                "SELECT created_at, cost_usd FROM records
                 WHERE peer_uid = ?1 AND kind = ?2 AND target IS ?3 AND subject = 'action'
                   AND mandate_id IS NULL AND decided_by IS NOT NULL AND agent_runs = 0
                   AND state IN ('granted', 'running', 'executed', 'failed', 'outcome_unknown')
                   AND created_at > ?4
                 ORDER BY created_at",
            )?;
            let rows = statement.query_map(params![peer_uid, kind, target, since], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?))
            })?;
            let mut approvals = Vec::new();
            for row in rows {
                let (asked_at, cost) = row?;
                approvals.push(Approval {
                    asked_at: stored_time(&asked_at)?,
                    cost_usd: cost.as_deref().map(stored_money).transpose()?,
                });
            }
            approvals
        };
        let last = |sql: &str, args: &[&dyn rusqlite::ToSql]| -> Result<_, StoreError> {
            let found: Option<String> = self.conn.query_row_cached(sql, args, |row| row.get(0))?;
            found.as_deref().map(stored_time).transpose()
        };
        Ok(History {
            approvals,
            covered_by_open_mandate: open_mandate_names(&self.conn, peer_uid, kind, target, now)?,
            last_suggested: last(LAST_MET, &[&kind, &target])?,
            recent_suggested_any: {
                let mut statement = self.conn.prepare_cached(
                    "SELECT created_at FROM suggestions ORDER BY created_at DESC LIMIT ?1",
                )?;
                let limit = i64::try_from(SUGGESTIONS_A_DAY).unwrap_or(i64::MAX);
                let rows = statement.query_map([limit], |row| row.get::<_, String>(0))?;
                let mut made = Vec::new();
                for at in rows {
                    made.push(stored_time(&at?)?);
                }
                made
            },
        })
    }

    /// Makes a suggestion: its row, its `mandate_suggested` line and `message` (the owner's
    /// silent message with its signed button), in one transaction. Made only if, inside that
    /// transaction, none for the same kind and target was made or answered in the last 7 days
    /// and fewer than two at all since `day_start`: two runs ending at once cannot both make
    /// the day's third, nor two for the same kind and target.
    /// Returns whether it was made.
    pub fn offer_suggestion(
        &mut self,
        suggestion: &Suggestion,
        message: &Outgoing,
        day_start: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            let week = timestamp(now - Duration::days(WINDOW_DAYS));
            let request = &suggestion.request;
            let target = suggestion.target();
            let today: i64 = tx.query_row_cached(
                "SELECT count(*) FROM suggestions WHERE created_at >= ?1",
                [timestamp(day_start)],
                |row| row.get(0),
            )?;
            let today = usize::try_from(today).unwrap_or(usize::MAX) >= SUGGESTIONS_A_DAY;
            let met: Option<String> =
                tx.query_row_cached(LAST_MET, params![request.kind, target], |row| row.get(0))?;
            if today || met.is_some_and(|at| at > week) {
                return Ok(false);
            }
            tx.execute_cached(
                "INSERT INTO suggestions (id, kind, target, peer_uid, days, usd_per_day,
                                          actions_per_day, reason, digest, approvals, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    suggestion.id,
                    request.kind,
                    target,
                    suggestion.peer_uid,
                    request.days,
                    money_column(request.usd_per_day),
                    request.actions_per_day,
                    request.reason.as_deref().unwrap_or_default(),
                    suggestion.digest,
                    suggestion.approvals,
                    timestamp(now)
                ],
            )?;
            // Counts and amounts, never the target or the words: the journal holds no text.
            let mut line = JournalEvent::new(EventName::MandateSuggested)
                .with("id", suggestion.id.as_str())
                .with("kind", request.kind.as_str())
                .with("digest", suggestion.digest.as_str())
                .with("uid", suggestion.peer_uid)
                .with("approvals", suggestion.approvals)
                .with("targets", request.targets.len())
                .with("days", request.days);
            if let Some(usd) = request.usd_per_day {
                line = line.with("usd_per_day", consentd_core::action::format_usd(usd));
            }
            effects.push(line.with("actions_per_day", request.actions_per_day));
            message.queue_in(tx, effects)?;
            Ok(true)
        })
    }

    /// The suggestion named `id`, if there is one.
    pub fn suggestion(&self, id: &str) -> Result<Option<Suggestion>, StoreError> {
        suggestion_in(&self.conn, id)
    }
}

/// The owner's press on a suggestion's button, as the decision applies it: the suggestion is
/// opened in one compare-and-set, its button taken away, and its mandate request made in the
/// uid's name with its card queued for `card_chat` — an ordinary request, which only the
/// owner's Grant on that card opens. `mandate_asked` names the suggestion it came from. The
/// request is asked at the press: `monotonic` is that press's reading of the monotonic clock.
pub(crate) fn open_suggestion_in(
    tx: &Connection,
    effects: &mut Effects,
    suggestion_id: &str,
    (card_chat, max_pending, monotonic): (i64, u32, &Monotonic),
) -> Result<Opened, StoreError> {
    let now = effects.now;
    let mandate_id = new_record_id()?;
    let mandate_id = mandate_id.as_str();
    let Some(suggestion) = suggestion_in(tx, suggestion_id)?.filter(|s| s.is_open(now)) else {
        return Ok(Opened::NotOpen);
    };
    // A mandate granted for it since would be doubled behind the owner's back.
    let (kind, target) = (&suggestion.request.kind, suggestion.target());
    if open_mandate_names(tx, suggestion.peer_uid, kind, target, now)? {
        return Ok(Opened::Covered);
    }
    // What a session's identical request meets: joining the open one, and `max_pending`.
    if open_request(tx, &suggestion.digest, &Peer::main(suggestion.peer_uid))?.is_some() {
        return Ok(Opened::AskedAlready);
    }
    let waiting: u32 = tx.query_row_cached(
        "SELECT count(*) FROM records WHERE state IN ('pending', 'card_shown')",
        [],
        |row| row.get(0),
    )?;
    if waiting >= max_pending {
        return Ok(Opened::Full);
    }
    let changed = tx.execute_cached(
        "UPDATE suggestions SET opened_at = ?2, mandate_id = ?3 WHERE id = ?1 AND opened_at IS NULL",
        params![suggestion_id, timestamp(now), mandate_id],
    )?;
    if changed == 0 {
        return Ok(Opened::NotOpen);
    }
    unbutton_in(tx, effects, PressAction::Suggest, suggestion_id)?;
    // Standing permissions are the uid's, whichever socket it asked through: the request the
    // owner opens is the uid's on the main socket.
    let new = NewMandate {
        peer: Peer::main(suggestion.peer_uid),
        request: suggestion.request,
        digest: suggestion.digest,
        monotonic: Some(monotonic.clone()),
    };
    let asked = insert_request(tx, effects, &new, mandate_id, Some(card_chat), now)?;
    effects.push(asked.with("suggestion", suggestion_id));
    let record = record_where(tx, "id = ?1", params![mandate_id])?.ok_or(StoreError::Missing)?;
    effects.changed.push((mandate_id.to_owned(), record.state));
    Ok(Opened::Card(mandate_id.to_owned()))
}

fn suggestion_in(conn: &Connection, id: &str) -> Result<Option<Suggestion>, StoreError> {
    type Row = (
        String,
        Option<String>,
        u32,
        u32,
        String,
        u32,
        String,
        String,
        u32,
        String,
        Option<String>,
    );
    let row: Option<Row> = conn
        .query_row_cached(
            "SELECT kind, target, peer_uid, days, usd_per_day, actions_per_day, reason, digest,
                    approvals, created_at, opened_at
             FROM suggestions WHERE id = ?1",
            [id],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                    row.get(8)?,
                    row.get(9)?,
                    row.get(10)?,
                ))
            },
        )
        .optional()?;
    let Some((kind, target, peer_uid, days, usd, actions, reason, digest, approvals, at, opened)) =
        row
    else {
        return Ok(None);
    };
    let usd_per_day = money_from_column(&usd)
        .ok_or_else(|| StoreError::Encode(format!("stored amount {usd} is not a number")))?;
    Ok(Some(Suggestion {
        id: id.to_owned(),
        peer_uid,
        request: MandateRequest {
            kind,
            targets: target.into_iter().collect(),
            days,
            usd_per_day,
            actions_per_day: actions,
            reason: Some(reason).filter(|r| !r.is_empty()),
            origin: None,
        },
        digest,
        approvals,
        created_at: stored_time(&at)?,
        opened_at: opened.as_deref().map(stored_time).transpose()?,
    }))
}

/// Whether the mandate request `id` came from a suggestion whose kind and target an open mandate
/// of the same uid names now: its Grant would open a second one beside it, doubling the day's
/// limits behind the owner's back.
pub(crate) fn suggested_and_covered(
    tx: &Connection,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let found: Option<(String, Option<String>, u32)> = tx
        .query_row_cached(
            "SELECT kind, target, peer_uid FROM suggestions WHERE mandate_id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    match found {
        Some((kind, target, uid)) => open_mandate_names(tx, uid, &kind, target.as_deref(), now),
        None => Ok(false),
    }
}

/// Whether an open mandate of `peer_uid` names `kind` and `target` (for a kind without one,
/// any open mandate of the kind).
fn open_mandate_names(
    conn: &Connection,
    peer_uid: u32,
    kind: &str,
    target: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT targets FROM mandates
         WHERE kind = ?1 AND opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
           AND ends_at > ?2 AND (SELECT peer_uid FROM records WHERE records.id = mandates.id) = ?3",
    )?;
    let rows = statement.query_map(params![kind, timestamp(now), peer_uid], |row| {
        row.get::<_, String>(0)
    })?;
    for targets in rows {
        let targets: Vec<String> =
            serde_json::from_str(&targets?).map_err(|e| StoreError::Encode(e.to_string()))?;
        let names = match target {
            Some(target) => targets.iter().any(|t| t == target),
            None => targets.is_empty(),
        };
        if names {
            return Ok(true);
        }
    }
    Ok(false)
}

fn stored_time(text: &str) -> Result<DateTime<Utc>, StoreError> {
    parse_time(text).ok_or_else(|| StoreError::Encode(format!("stored time {text:?} is not one")))
}

fn stored_money(text: &str) -> Result<Decimal, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Encode(format!("stored amount {text} is not a number")))
}
