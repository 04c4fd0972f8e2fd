//! The store's side of mandates (docs/PROTOCOL.md, "Mandates"): a mandate request stored as a
//! record with its terms,
//! the mandate opened by the owner's Grant, the usage of its days counted from the asks it
//! answered, Stop, and the end of its term. Deciding whether a mandate covers an action is
//! [`consentd_core::mandate::coverage`]; this module reads what it needs and writes what it decided, in
//! the same transaction.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection};
use rust_decimal::Decimal;

use super::ask::{pending_refusal, stateful_refusal, switched_off_refusal, AskOutcome, AskPolicy};
use super::cached::Cached;
use super::db::Db;
use super::drawn::unbutton_in;
use super::events::EventName;
use super::events::{Effects, JournalEvent};
use super::ids::new_record_id;
pub use super::mandate_rows::MandateRow;
use super::mandate_rows::{
    mandate_from_row, mandate_row, money_column, usage_on_day, MANDATE_COLUMNS,
};
use super::outbox::{Body, Outgoing, Sound};
use super::peer::Peer;
use super::readings::monotonic_ms;
use super::records::{record_where, Record};
use super::refusals::refusal_in;
use super::time::timestamp;
use super::StoreError;
use consentd_core::action::format_usd;
use consentd_core::clock::Monotonic;
use consentd_core::deadline::Now;
use consentd_core::mandate::{self, MandateRequest, Usage};
use consentd_core::press::PressAction;
use consentd_core::reason::Refusal;

/// The notices of mandates whose term ends, drawn before the sweep's transaction, by mandate id.
#[derive(Debug, Clone, Default)]
pub struct MandateNotices {
    /// The owner's chat; with none (before pairing) nothing is told.
    pub chat: Option<i64>,
    pub bodies: std::collections::BTreeMap<String, Body>,
}

/// The open mandates whose term is over at `now`, on either clock.
fn due_mandates_in(conn: &Connection, now: &Now) -> Result<Vec<MandateRow>, StoreError> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {MANDATE_COLUMNS} FROM mandates
         WHERE opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL
         ORDER BY ends_at, id"
    ))?;
    let rows = statement.query_map([], mandate_from_row)?;
    let mut due = Vec::new();
    for row in rows {
        let row = row?;
        if row.term().is_none_or(|term| term.over(now)) {
            due.push(row);
        }
    }
    Ok(due)
}

/// A mandate request that passed the refusal gate.
#[derive(Debug, Clone)]
pub struct NewMandate {
    /// Who asks: its uid and the socket it came by.
    pub peer: Peer,
    pub request: MandateRequest,
    pub digest: String,
    /// The daemon's monotonic clock as it was asked (with the ask's `now`): the term runs on
    /// it too. `None` leaves the term to the wall clock alone.
    pub monotonic: Option<Monotonic>,
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
        let written = self.write_with_refusals(now, |tx, effects, refusals| {
            let refuse = |effects: &mut Effects, refusal: Refusal| {
                let kind = Some(request.kind.as_str());
                let events = &mut effects.events;
                let (answered, judged) =
                    refusal_in(tx, events, refusals, &id, &ask.peer, kind, &refusal, now)?;
                let refused = AskOutcome::Refused {
                    id: answered,
                    refusal,
                };
                Ok((refused, Some(judged)))
            };
            if let Some(refusal) = switched_off_refusal(tx, &request.kind)? {
                return refuse(effects, refusal);
            }
            if let Some(refusal) =
                stateful_refusal(tx, (&ask.peer, &ask.digest), &request.kind, policy, now)?
            {
                return refuse(effects, refusal);
            }
            // The same open request is joined, not asked again: no second card.
            if let Some(open) = open_request(tx, &ask.digest, &ask.peer)? {
                return Ok((AskOutcome::Joined(open), None));
            }
            if let Some(refusal) = pending_refusal(tx, policy, &ask.peer)? {
                return refuse(effects, refusal);
            }
            let asked = insert_request(tx, effects, ask, &id, policy.card_chat, now)?;
            effects.push(asked);
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            effects.changed.push((id.clone(), record.state));
            Ok((AskOutcome::Created(record), None))
        })?;
        let (outcome, judged) = written;
        if let Some(judged) = judged {
            self.note_refusal(judged, now);
        }
        Ok(outcome)
    }

    /// The open mandates whose term is over at `now`, on either clock. The open mandates are
    /// judged here, not in SQL: the monotonic clock is not in a column.
    pub fn due_mandates(&self, now: &Now) -> Result<Vec<MandateRow>, StoreError> {
        due_mandates_in(&self.conn, now)
    }

    /// Mandates whose term is over at `now`, on either clock, and not yet marked: each is ended
    /// with `mandate_end` journaled, and its notice (drawn beforehand) queued in the same
    /// transaction. With an owner to tell, a mandate due without a notice drawn for it (it fell
    /// due after the caller looked) is left for the next sweep, so that none ends untold.
    pub fn end_due_mandates(
        &mut self,
        now: &Now,
        notices: &MandateNotices,
    ) -> Result<usize, StoreError> {
        // Looked for first without the write lock: the sweep asks every second.
        if due_mandates_in(&self.conn, now)?.is_empty() {
            return Ok(0);
        }
        self.write_effects(now.wall, None, |tx, effects| {
            let mut due = due_mandates_in(tx, now)?;
            if notices.chat.is_some() {
                due.retain(|row| notices.bodies.contains_key(&row.id));
            }
            let now = now.wall;
            for row in &due {
                tx.execute_cached(
                    "UPDATE mandates SET ended_at = ?2 WHERE id = ?1",
                    params![row.id, timestamp(now)],
                )?;
                effects.push(
                    JournalEvent::new(EventName::MandateEnd)
                        .with("id", row.id.as_str())
                        .with("kind", row.kind.as_str())
                        .with("reason", "term"),
                );
                unbutton_in(tx, effects, PressAction::Stop, &row.id)?;
                if let (Some(chat), Some(body)) = (notices.chat, notices.bodies.get(&row.id)) {
                    Outgoing::message(chat, body.clone(), Sound::Gated).queue_in(tx, effects)?;
                }
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
            .map(|mut row| {
                let usage = usage_on_day(&self.conn, &row.id, now, tz)?;
                row.raised_today = crate::mandate_rows::raise_on_day(&self.conn, &row.id, now, tz)?;
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
        let Some(mut row) = mandate_row(&self.conn, id)? else {
            return Ok(None);
        };
        let usage = usage_on_day(&self.conn, id, now, tz)?;
        row.raised_today = crate::mandate_rows::raise_on_day(&self.conn, id, now, tz)?;
        Ok(Some((row, usage)))
    }

    /// What every mandate of `kind` used during the owner's local day of `now`, together: the
    /// day the open mandates of a kind share (`covering_mandate`).
    pub fn kind_mandate_usage(
        &self,
        kind: &str,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> Result<Usage, StoreError> {
        crate::mandate_rows::kind_usage_on_day(&self.conn, kind, now, tz)
    }
}

/// A journal line with the mandate's `usd_per_day`, when it has a money term.
pub(crate) fn with_money_term(event: JournalEvent, usd_per_day: Option<Decimal>) -> JournalEvent {
    match mandate::money_term(usd_per_day) {
        Some(usd) => event.with("usd_per_day", format_usd(usd)),
        None => event,
    }
}

/// The same peer's open request with this digest.
pub(super) fn open_request(
    tx: &Connection,
    digest: &str,
    peer: &Peer,
) -> Result<Option<Record>, StoreError> {
    record_where(
        tx,
        OPEN_REQUEST_BY_DIGEST,
        params![digest, peer.uid, peer.column()],
    )
}

/// The peer's open mandate request with a digest; `+peer_uid` for the reason given at
/// [`super::records::OPEN_BY_DIGEST`].
pub(super) const OPEN_REQUEST_BY_DIGEST: &str =
    "digest = ?1 AND +peer_uid = ?2 AND +listener = ?3 AND subject = 'mandate' \
     AND state IN ('pending', 'card_shown')";

/// The owner's Stop on mandate `id`, while it is open: stopped, `mandate_stop` journaled, its
/// Stop buttons taken away and `reply` queued. Returns whether it stopped it.
pub(super) fn stop_in(
    tx: &Connection,
    effects: &mut Effects,
    id: &str,
    by: i64,
    reply: &Outgoing,
) -> Result<bool, StoreError> {
    let now = effects.now;
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
        JournalEvent::new(EventName::MandateStop)
            .with("id", id)
            .with("kind", row.kind.as_str())
            .with("by", by),
    );
    // Its Stop buttons (receipts, `/mandates`, summaries) could only be refused now.
    unbutton_in(tx, effects, PressAction::Stop, id)?;
    reply.queue_in(tx, effects)?;
    Ok(true)
}

/// Stores a mandate request that may be made — its record, its terms, and its card queued for
/// `card_chat` — and returns its `mandate_asked` line, for the caller to add members to and
/// journal. The session's request and a suggestion the owner opened both come here.
pub(crate) fn insert_request(
    tx: &Connection,
    effects: &mut Effects,
    ask: &NewMandate,
    id: &str,
    card_chat: Option<i64>,
    now: DateTime<Utc>,
) -> Result<JournalEvent, StoreError> {
    let request = &ask.request;
    tx.execute_cached(
        "INSERT INTO records (id, peer_uid, kind, digest, subject, state, created_at,
                              origin, asked_boot, asked_since_boot_ms, listener)
         VALUES (?1, ?2, ?3, ?4, 'mandate', 'pending', ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            ask.peer.uid,
            request.kind,
            ask.digest,
            timestamp(now),
            request.origin,
            ask.monotonic.as_ref().map(|m| m.boot.as_str()),
            ask.monotonic.as_ref().map(monotonic_ms),
            ask.peer.column()
        ],
    )?;
    let targets =
        serde_json::to_string(&request.targets).map_err(|e| StoreError::Encode(e.to_string()))?;
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
    if let Some(chat) = card_chat {
        super::outbox::queue_in(
            tx,
            chat,
            super::outbox::What::Card,
            Some(id),
            &super::outbox::Body::default(),
            super::outbox::Sound::Gated,
            now,
        )?;
        effects.queued = true;
    }
    // Amounts and counts, never the targets or the reason: the journal holds no text.
    // No money term has no amount to journal.
    let asked = JournalEvent::new(EventName::MandateAsked)
        .with("id", id)
        .with("kind", request.kind.as_str())
        .with("digest", ask.digest.as_str())
        .with("uid", ask.peer.uid)
        .with("targets", request.targets.len())
        .with("days", request.days);
    let asked = crate::ask::with_origin(asked, &ask.peer);
    Ok(
        with_money_term(asked, request.usd_per_day)
            .with("actions_per_day", request.actions_per_day),
    )
}
