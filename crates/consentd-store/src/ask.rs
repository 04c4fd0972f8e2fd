//! The ask in the store: the stateful rules it meets in their fixed order (idempotency, the
//! owner's switch for its kind, owner, decline memory, a silenced kind, joining an open card, a
//! covering mandate, `max_pending`) and what is written for each outcome, in one transaction.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::EventName;
use super::events::{Effects, JournalEvent};
use super::ids::new_record_id;
use super::mandate_rows::{covering_mandate, Cover};
use super::peer::Peer;
use super::readings::monotonic_ms;
use super::records::{record_where, Record, OPEN_BY_DIGEST};
use super::refusals::refusal_in;
use super::state::RecordState;
use super::time::{since, timestamp};
use super::transitions::{claim_in, transition_in, StateChange};
use super::StoreError;
use consentd_core::action::{format_usd, Action};
use consentd_core::clock::Monotonic;
use consentd_core::deadline::Now;
use consentd_core::reason::{Reason, Refusal};

/// A new ask that passed the refusal gate.
#[derive(Debug, Clone)]
pub struct NewAsk {
    /// Who asks: its uid and the socket it came by.
    pub peer: Peer,
    pub action: Action,
    pub digest: String,
    pub idempotency_key: Option<String>,
    pub urgent: bool,
    /// The ask's own `ttl`: its record is never shown (or answerable) past `created_at + ttl`,
    /// by either clock.
    pub ttl: Option<Duration>,
    /// The daemon's monotonic clock as the ask was taken, read with the ask's `now`: its own
    /// ttl and a mandate it might use are judged on it too.
    pub monotonic: Monotonic,
    /// Its category is approval-only (`mode = "approve"`): a mandate that covers it ends it
    /// `approved` at once, and nothing is claimed or run.
    pub agent_runs: bool,
    /// The agent's call, when a hook's gate asks: kept with the record (not in its digest).
    pub hook: Option<consentd_core::exact::HookCall>,
}

impl NewAsk {
    /// Both clocks as the ask was taken at `now`.
    fn reading(&self, now: DateTime<Utc>) -> Now {
        Now {
            wall: now,
            monotonic: self.monotonic.clone(),
        }
    }
}

/// The stateful rules an ask meets in the store.
#[derive(Debug, Clone, Copy)]
pub struct AskPolicy {
    pub owner_known: bool,
    /// The owner's chat, where a new record's card is queued in the same transaction.
    pub card_chat: Option<i64>,
    pub decline_memory: Duration,
    pub max_pending: u32,
    /// One peer uid's share of `max_pending`: its open asks and mandate requests together.
    pub max_pending_per_uid: u32,
    /// The bytes of attachment copies one uid's open and retained records may hold.
    pub attachment_bytes_per_uid: u64,
    /// The owner's zone: a mandate's day is their local day.
    pub tz: chrono_tz::Tz,
    /// Whether the kind's category, as configured now, may be covered by a mandate (it is
    /// `mandate_ok` and not destructive): a config changed since a mandate opened wins.
    pub mandates_cover: bool,
    /// The config's ceilings on a mandate's day (`mandate_max_usd_per_day`,
    /// `mandate_max_actions_per_day`), which bound all the mandates of a kind together.
    pub mandate_day: consentd_core::mandate::Usage,
}

/// What became of an ask.
#[derive(Debug, Clone, PartialEq)]
pub enum AskOutcome {
    /// A new pending record.
    Created(Record),
    /// An open record with the same digest: no second card.
    Joined(Record),
    /// An open mandate covered it: claimed (running, `used` durable) in the same transaction
    /// that took its share of the mandate's day. The command may start. For an approval-only
    /// category it is `approved` instead, and nothing runs: the loop sends its receipt.
    Covered(Record),
    /// The same idempotency key and digest: the record asked before, in whatever state it is.
    Existing(Record),
    /// Refused: `id` is the refused record stored and journaled for it, or the one its repeats
    /// are counted under, or none when the peer's refusal budget is spent (see
    /// [`crate::refusals`]).
    Refused {
        id: Option<String>,
        refusal: Refusal,
    },
}

impl Db {
    /// Stores an ask, or refuses it by the stateful rules: idempotency, owner, decline memory,
    /// a silenced kind, joining an open card, `max_pending`. A refusal is recorded or only
    /// counted as the refusal budget says. The attachment bytes are written only for an ask
    /// that creates or is covered by a record, inside its transaction before the commit: a
    /// committed record always has its blobs, and a refused ask leaves none.
    pub fn ask(
        &mut self,
        ask: &NewAsk,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        let id = new_record_id()?;
        let mut queued_card = false;
        let blobs = self.attachments_dir.clone();
        let mut wrote_blobs = false;
        let written = self.write_with_refusals(now, |tx, effects, refusals| {
            let events = &mut effects.events;
            let mut store_blobs = || -> Result<(), StoreError> {
                if let Some(dir) = &blobs {
                    wrote_blobs = !ask.action.attachments.is_empty();
                    crate::blobs::save_all(dir, &ask.action.attachments)?;
                }
                Ok(())
            };
            let outcome = match judge_ask(tx, ask, policy, now)? {
                AskVerdict::Existing(record) => AskOutcome::Existing(record),
                AskVerdict::Refuse(refusal) => {
                    let kind = Some(ask.action.kind.as_str());
                    let (answered, judged) =
                        refusal_in(tx, events, refusals, &id, &ask.peer, kind, &refusal, now)?;
                    let refused = AskOutcome::Refused {
                        id: answered,
                        refusal,
                    };
                    return Ok((refused, Some(judged)));
                }
                AskVerdict::Join(open) => {
                    if let Some(key) = &ask.idempotency_key {
                        keep_joined_key(tx, &ask.peer, key, &open.id)?;
                    }
                    AskOutcome::Joined(open)
                }
                AskVerdict::Cover(cover) => {
                    store_blobs()?;
                    covered_in(tx, events, &id, ask, &cover, now)?
                }
                AskVerdict::Create => {
                    store_blobs()?;
                    let created = created_in(tx, effects, &id, ask, policy.card_chat, now)?;
                    queued_card = policy.card_chat.is_some();
                    created
                }
            };
            Ok((outcome, None))
        });
        let (outcome, judged) = match written {
            Ok(written) => written,
            Err(error) => {
                // The commit failed: bytes written for it that no record names go now.
                if let (Some(dir), true) = (&blobs, wrote_blobs) {
                    crate::blobs::remove_unnamed(&self.conn, dir, &ask.action.attachments);
                }
                return Err(error);
            }
        };
        self.outbox_queued |= queued_card;
        if let Some(judged) = judged {
            self.note_refusal(judged, now);
        }
        // A created record's change (`pending`) was noted in its transaction.
        if let AskOutcome::Covered(record) = &outcome {
            self.changed.push((record.id.clone(), record.state));
        }
        Ok(outcome)
    }
}

/// The owner's Off for `kind`, as committed. The intake checked the daemon's copy of the switches
/// before; this is an Off committed since, which neither an ask (a covered one would run) nor a
/// mandate request (its card would ask for a kind the owner just turned off) may outrun.
pub(super) fn switched_off_refusal(
    tx: &Connection,
    kind: &str,
) -> Result<Option<Refusal>, StoreError> {
    if !crate::settings::switched_off_in(tx, kind)? {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        Reason::CategoryOff,
        format!("category {kind} is off; the owner can turn it on with /categories"),
    )))
}

/// The refusals an ask and a mandate request meet in the store before anything else: no owner,
/// the identical request declined recently, the kind silenced. Decline memory and a silence are
/// the peer's own: another uid's no's, or the same uid's through another socket, never refuse it.
pub(super) fn stateful_refusal(
    tx: &Connection,
    (peer, digest): (&Peer, &str),
    kind: &str,
    policy: AskPolicy,
    now: DateTime<Utc>,
) -> Result<Option<Refusal>, StoreError> {
    if !policy.owner_known {
        return Ok(Some(Refusal::new(
            Reason::NoOwner,
            "consentd has no owner yet; pair one with `consentd pair`",
        )));
    }
    let declined_at: Option<String> = tx
        .query_row_cached(
            "SELECT declined_at FROM declines
             WHERE peer_uid = ?1 AND listener = ?4 AND digest = ?2 AND declined_at > ?3",
            params![
                peer.uid,
                digest,
                since(now, policy.decline_memory),
                peer.column()
            ],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(at) = declined_at {
        return Ok(Some(Refusal::new(
            Reason::DeclinedRecently,
            format!("the owner declined this exact action at {at}"),
        )));
    }
    let silenced_until: Option<String> = tx
        .query_row_cached(
            "SELECT silenced_until FROM kind_streaks
             WHERE peer_uid = ?1 AND listener = ?4 AND kind = ?2 AND silenced_until > ?3",
            params![peer.uid, kind, timestamp(now), peer.column()],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(until) = silenced_until {
        return Ok(Some(Refusal::new(
            Reason::KindSilenced,
            format!(
                "the owner declined {kind} from uid {}{} several times in a row; no cards of \
                 this kind from it until {until} or until the owner resumes it",
                peer.uid,
                through(peer)
            ),
        )));
    }
    Ok(None)
}

/// `peer` already has its share (`max_pending_per_uid`, per socket and uid) of open asks, or
/// `max_pending` asks are already waiting for the owner. A mandate request is one open ask like
/// any other.
pub(super) fn pending_refusal(
    tx: &Connection,
    policy: AskPolicy,
    peer: &Peer,
) -> Result<Option<Refusal>, StoreError> {
    let own: i64 = tx.query_row_cached(
        "SELECT count(*) FROM records
         WHERE peer_uid = ?1 AND +listener = ?2 AND state IN ('pending', 'card_shown')",
        params![peer.uid, peer.column()],
        |row| row.get(0),
    )?;
    if own >= i64::from(policy.max_pending_per_uid) {
        return Ok(Some(Refusal::new(
            Reason::TooManyPending,
            format!(
                "uid {}{} already has {own} asks waiting for the owner; its share is {} \
                 (max_pending_per_uid), so wait for one to end or withdraw one",
                peer.uid,
                through(peer),
                policy.max_pending_per_uid
            ),
        )));
    }
    let open: i64 = tx.query_row_cached(
        "SELECT count(*) FROM records WHERE state IN ('pending', 'card_shown')",
        [],
        |row| row.get(0),
    )?;
    if open < i64::from(policy.max_pending) {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        Reason::TooManyPending,
        format!(
            "{open} asks are already waiting for the owner; at most {} may wait at once",
            policy.max_pending
        ),
    )))
}

/// `too_large` when the ask's attachments and the copies its uid's records keep (open, or ran
/// and within `attachment_retention`) would pass `attachment_bytes_per_uid`.
fn bytes_refusal(
    tx: &Connection,
    ask: &NewAsk,
    policy: AskPolicy,
) -> Result<Option<Refusal>, StoreError> {
    let needs: u64 = ask
        .action
        .attachments
        .iter()
        .map(|a| a.data.len() as u64)
        .sum();
    if needs == 0 {
        return Ok(None);
    }
    let held: i64 = tx.query_row_cached(
        "SELECT coalesce(sum(a.bytes), 0) FROM attachments a JOIN records r ON r.id = a.record_id
         WHERE r.peer_uid = ?1 AND r.copies_kept = 1",
        params![ask.peer.uid],
        |row| row.get(0),
    )?;
    let held = held.unsigned_abs();
    if held.saturating_add(needs) <= policy.attachment_bytes_per_uid {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        Reason::TooLarge,
        format!(
            "uid {} holds {held} bytes of attachments in open and kept asks; this ask's {needs} \
             bytes would pass limits.attachment_bytes_per_uid ({})",
            ask.peer.uid, policy.attachment_bytes_per_uid
        ),
    )))
}

/// What the store's state makes of an ask, decided before anything is written.
#[derive(Debug)]
enum AskVerdict {
    /// Asked before with the same idempotency key and digest.
    Existing(Record),
    Refuse(Refusal),
    /// The same peer's open record with the same digest.
    Join(Record),
    /// An open mandate covers it.
    Cover(Cover),
    /// A new pending record.
    Create,
}

/// The record `key` names for this peer: the one asked with it, or the open one an ask with it
/// joined.
fn keyed_record(tx: &Connection, peer: &Peer, key: &str) -> Result<Option<Record>, StoreError> {
    if let Some(own) = record_where(
        tx,
        "peer_uid = ?1 AND listener = ?3 AND idempotency_key = ?2",
        params![peer.uid, key, peer.column()],
    )? {
        return Ok(Some(own));
    }
    record_where(
        tx,
        "id = (SELECT record_id FROM joined_keys
               WHERE peer_uid = ?1 AND listener = ?3 AND idempotency_key = ?2)",
        params![peer.uid, key, peer.column()],
    )
}

/// Keeps the key of an ask that joined `record_id`, so that the key names that record from now
/// on (migration 0017). Only reached with a key no record answers to ([`keyed_record`] came
/// first), so it is never a second name for another record.
fn keep_joined_key(
    tx: &Connection,
    peer: &Peer,
    key: &str,
    record_id: &str,
) -> Result<(), StoreError> {
    tx.execute_cached(
        "INSERT INTO joined_keys (peer_uid, listener, idempotency_key, record_id)
         VALUES (?1, ?2, ?3, ?4)",
        params![peer.uid, peer.column(), key, record_id],
    )?;
    Ok(())
}

/// The stateful checks in their fixed order: idempotency, the owner's switch for the kind as
/// stored, the stateful refusals, joining an open record, a covering mandate, `max_pending`.
fn judge_ask(
    tx: &Connection,
    ask: &NewAsk,
    policy: AskPolicy,
    now: DateTime<Utc>,
) -> Result<AskVerdict, StoreError> {
    if let Some(key) = &ask.idempotency_key {
        if let Some(existing) = keyed_record(tx, &ask.peer, key)? {
            if existing
                .asked_part()
                .is_some_and(|asked| asked.digest.to_hex() == ask.digest)
            {
                return Ok(AskVerdict::Existing(existing));
            }
            return Ok(AskVerdict::Refuse(Refusal::new(
                Reason::IdentityConflict,
                format!(
                    "idempotency_key {} was used for record {} with another digest",
                    consentd_core::protocol::quote(key),
                    existing.id
                ),
            )));
        }
    }
    if let Some(refusal) = switched_off_refusal(tx, &ask.action.kind)? {
        return Ok(AskVerdict::Refuse(refusal));
    }
    if let Some(refusal) =
        stateful_refusal(tx, (&ask.peer, &ask.digest), &ask.action.kind, policy, now)?
    {
        return Ok(AskVerdict::Refuse(refusal));
    }
    // Joined only by the same peer: another peer's record is not theirs to read or wait on.
    // Never an approval-only ask: its yes lets the agent run the action itself, once for each
    // ask that gets it, so two asks joined on one card would turn one yes into two runs.
    if !ask.agent_runs {
        if let Some(open) = record_where(
            tx,
            OPEN_BY_DIGEST,
            params![ask.digest, ask.peer.uid, ask.peer.column()],
        )? {
            return Ok(AskVerdict::Join(open));
        }
    }
    if let Some(refusal) = bytes_refusal(tx, ask, policy)? {
        return Ok(AskVerdict::Refuse(refusal));
    }
    if policy.owner_known && policy.mandates_cover {
        if let Some(cover) = covering_mandate(
            tx,
            &ask.action,
            &ask.peer,
            &ask.reading(now),
            (policy.tz, policy.mandate_day),
        )? {
            return Ok(AskVerdict::Cover(cover));
        }
    }
    if let Some(refusal) = pending_refusal(tx, policy, &ask.peer)? {
        return Ok(AskVerdict::Refuse(refusal));
    }
    Ok(AskVerdict::Create)
}

/// A new pending record, with its card queued for `card_chat` in the same transaction: the
/// sender opens it as it sends it. The outcome is the record as created, `pending`: what the
/// session's first line says.
fn created_in(
    tx: &Connection,
    effects: &mut Effects,
    id: &str,
    ask: &NewAsk,
    card_chat: Option<i64>,
    now: DateTime<Utc>,
) -> Result<AskOutcome, StoreError> {
    insert_pending(tx, id, ask, now)?;
    if let Some(chat) = card_chat {
        crate::outbox::queue_in(
            tx,
            chat,
            crate::outbox::What::Card,
            Some(id),
            &crate::outbox::Body::default(),
            crate::outbox::Sound::Gated,
            now,
        )?;
    }
    let mut asked = asked_event(id, ask);
    if ask.urgent {
        asked = asked.with("urgent", true);
    }
    effects.push(asked);
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    effects.changed.push((record.id.clone(), record.state));
    Ok(AskOutcome::Created(record))
}

/// The `asked` journal line of a stored ask.
fn asked_event(id: &str, ask: &NewAsk) -> JournalEvent {
    let asked = JournalEvent::new(EventName::Asked)
        .with("id", id)
        .with("kind", ask.action.kind.as_str())
        .with("digest", ask.digest.as_str())
        .with("uid", ask.peer.uid);
    let asked = match ask.action.cost_string() {
        Some(cost) => asked.with("cost_usd", cost),
        None => asked,
    };
    with_origin(asked, &ask.peer)
}

/// An ask an open mandate covers: stored, granted by the mandate and claimed in this one
/// transaction, which is also the one that takes its share of the mandate's day — so two asks
/// racing for the last action of a day are decided one after the other, by the store's lock.
fn covered_in(
    tx: &Connection,
    events: &mut Vec<JournalEvent>,
    id: &str,
    ask: &NewAsk,
    cover: &Cover,
    now: DateTime<Utc>,
) -> Result<AskOutcome, StoreError> {
    let (mandate, before) = (&cover.mandate, cover.usage);
    // Dated when its day was counted: a use is counted in the day its date falls in, and the
    // next ask's day is bounded by it (`covering_mandate`).
    insert_pending(tx, id, ask, cover.counted_at)?;
    let cost = ask.action.cost_usd.unwrap_or_default();
    // The day as of this action, kept with it: its receipt, drawn when the run ends, shows
    // this and not the day as later asks have made it.
    let today = consentd_core::mandate::Usage {
        actions: before.actions + 1,
        usd: before.usd + cost,
    };
    tx.execute_cached(
        "UPDATE records SET mandate_id = ?2, mandate_actions_today = ?3, mandate_usd_today = ?4
         WHERE id = ?1",
        params![id, mandate.id, today.actions, format_usd(today.usd)],
    )?;
    let granted = StateChange {
        decided_at: Some(now),
        ..StateChange::default()
    };
    events.push(asked_event(id, ask));
    events.push(
        JournalEvent::new(EventName::MandateUse)
            .with("id", id)
            .with("mandate", mandate.id.as_str())
            .with("actions_today", today.actions)
            .with("usd_today", format_usd(today.usd)),
    );
    if ask.agent_runs {
        // Approval-only: the mandate's yes ends it; there is nothing to claim.
        let approved = StateChange {
            finished_at: Some(now),
            ..granted
        };
        transition_in(
            tx,
            id,
            RecordState::Pending,
            RecordState::Approved,
            &approved,
        )?;
        events.push(
            JournalEvent::new(EventName::Approved)
                .with("id", id)
                .with("kind", ask.action.kind.as_str())
                .with("digest", ask.digest.as_str())
                .with("mandate", mandate.id.as_str()),
        );
    } else {
        transition_in(tx, id, RecordState::Pending, RecordState::Granted, &granted)?;
        events.push(claim_in(tx, id, &ask.digest)?);
    }
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    Ok(AskOutcome::Covered(record))
}

fn insert_pending(
    tx: &Connection,
    id: &str,
    ask: &NewAsk,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let action = &ask.action;
    let fields =
        serde_json::to_string(&action.fields).map_err(|e| StoreError::Encode(e.to_string()))?;
    // An ask's own ttl is its pending record's `expires_at`: the deadline it is never shown
    // past (the sender takes the earlier of it and the card's ttl; the sweep expires it unshown).
    let deadline = ask
        .ttl
        .and_then(|ttl| chrono::Duration::from_std(ttl).ok())
        .map(|ttl| timestamp(now + ttl));
    tx.execute_cached(
        "INSERT INTO records (id, peer_uid, kind, target, text, fields, cost_usd, digest,
                              idempotency_key, urgent, state, created_at, origin, expires_at,
                              agent_runs, asked_boot, asked_since_boot_ms, hook_agent, hook_tool,
                              hook_cwd, listener)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11, ?12, ?13, ?14, ?15,
                 ?16, ?17, ?18, ?19, ?20)",
        params![
            id,
            ask.peer.uid,
            action.kind,
            action.target,
            action.text,
            fields,
            action.cost_usd.map(format_usd),
            ask.digest,
            ask.idempotency_key,
            ask.urgent,
            timestamp(now),
            action.origin,
            deadline,
            ask.agent_runs,
            ask.monotonic.boot,
            monotonic_ms(&ask.monotonic),
            ask.hook.as_ref().map(|hook| hook.agent.as_str()),
            ask.hook.as_ref().map(|hook| hook.tool.as_str()),
            ask.hook.as_ref().map(|hook| hook.cwd.as_str()),
            ask.peer.column()
        ],
    )?;
    for (position, attachment) in action.attachments.iter().enumerate() {
        tx.execute_cached(
            "INSERT INTO attachments (record_id, position, name, media_type, bytes, sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                position as i64,
                attachment.name,
                attachment.media_type,
                attachment.data.len() as i64,
                attachment.sha256.to_hex()
            ],
        )?;
    }
    Ok(())
}

/// The `asked` line names the labelled socket an ask came through (`origin`); an ask on the
/// main socket's line has none.
pub(super) fn with_origin(line: JournalEvent, peer: &Peer) -> JournalEvent {
    match &peer.listener {
        Some(origin) => line.with("origin", origin.as_str()),
        None => line,
    }
}

/// How a refusal's message names the socket after the uid: ` through "devbox"`, or nothing
/// for the main socket.
pub(super) fn through(peer: &Peer) -> String {
    peer.listener
        .as_deref()
        .map_or_else(String::new, |origin| format!(" through {origin:?}"))
}
