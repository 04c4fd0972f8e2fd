//! All of the store's SQL, run synchronously by the one thread that owns the database.
//!
//! Every change is one transaction that also stages its journal lines; after the commit the same
//! thread appends the staged lines to the journal file and fsyncs it. A crash at any instant
//! leaves either neither (no commit) or both (the staged lines are appended at the next start).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{
    named_params, params, Connection, OptionalExtension, Transaction, TransactionBehavior,
};
use serde_json::Value;

use super::cached::{Cached, STATEMENT_CACHE_CAPACITY};
use crate::action::{format_usd, Action};
use crate::clock::Monotonic;
use crate::deadline::Window;
use crate::digest::AttachmentFacts;
use crate::journal::{self, JournalFile, Line};
use crate::refusal::{Reason, Refusal};
use crate::store::mandates::MandateRow;
use crate::store::state::RecordState;
use crate::store::StoreError;

/// The numbered migrations, applied in order.
const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/0001_init.sql")),
    (2, include_str!("migrations/0002_telegram.sql")),
    (3, include_str!("migrations/0003_mandates.sql")),
    (4, include_str!("migrations/0004_gate.sql")),
    (5, include_str!("migrations/0005_binding.sql")),
    (6, include_str!("migrations/0006_mandate_use.sql")),
    (7, include_str!("migrations/0007_decline_reason.sql")),
];

/// A journal event waiting for its line: the event name and its own members, in order.
#[derive(Debug, Clone)]
pub struct Event {
    pub ev: &'static str,
    pub members: Vec<(&'static str, Value)>,
}

impl Event {
    pub fn new(ev: &'static str) -> Self {
        Self {
            ev,
            members: Vec::new(),
        }
    }

    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.members.push((key, value.into()));
        self
    }
}

/// What one write transaction produced besides its table changes: journal events, records whose
/// state changed (for waiters), and whether it queued anything for Telegram.
#[derive(Debug)]
pub struct Effects {
    /// The transaction's time, as the clock gave it to the write.
    pub now: DateTime<Utc>,
    pub events: Vec<Event>,
    pub changed: Vec<(String, RecordState)>,
    pub queued: bool,
}

impl Effects {
    pub fn new(now: DateTime<Utc>) -> Self {
        Effects {
            now,
            events: Vec::new(),
            changed: Vec::new(),
            queued: false,
        }
    }

    pub fn push(&mut self, event: Event) {
        self.events.push(event);
    }
}

/// What opening the store found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Bytes of a torn last journal line cut away.
    pub torn_tail_cut_bytes: u64,
    /// Staged lines that a crash had kept from the journal file, appended now.
    pub lines_recovered: u64,
}

/// A new ask that passed the refusal gate.
#[derive(Debug, Clone)]
pub struct NewAsk {
    pub peer_uid: u32,
    pub action: Action,
    pub digest: String,
    pub idempotency_key: Option<String>,
    pub urgent: bool,
}

/// The stateful rules an ask meets in the store.
#[derive(Debug, Clone, Copy)]
pub struct AskPolicy {
    pub owner_known: bool,
    /// The owner's chat, where a new record's card is queued in the same transaction.
    pub card_chat: Option<i64>,
    pub decline_memory: Duration,
    pub max_pending: u32,
    /// The owner's zone: a mandate's day is their local day.
    pub tz: chrono_tz::Tz,
    /// Whether the kind's category, as configured now, may be covered by a mandate (it is
    /// `mandate_ok` and not destructive): a config changed since a mandate opened wins.
    pub mandates_cover: bool,
}

/// What became of an ask.
#[derive(Debug, Clone, PartialEq)]
pub enum AskOutcome {
    /// A new pending record.
    Created(Record),
    /// An open record with the same digest: no second card.
    Joined(Record),
    /// An open mandate covered it: claimed (running, `used` durable) in the same transaction
    /// that took its share of the mandate's day. The command may start.
    Covered(Record),
    /// The same idempotency key and digest: the record asked before, in whatever state it is.
    Existing(Record),
    /// Refused; a refused record was stored and journaled.
    Refused { id: String, refusal: Refusal },
}

/// A stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: i64,
    pub id: String,
    pub peer_uid: u32,
    pub kind: Option<String>,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    pub cost_usd: Option<String>,
    pub attachments: Vec<AttachmentFacts>,
    pub digest: Option<String>,
    pub idempotency_key: Option<String>,
    pub urgent: bool,
    pub state: RecordState,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub result: Option<String>,
    pub created_at: String,
    pub shown_at: Option<String>,
    pub expires_at: Option<String>,
    pub decided_at: Option<String>,
    pub decided_by: Option<i64>,
    /// The display name of whoever pressed, as Telegram gave it then.
    pub decided_by_name: Option<String>,
    pub finished_at: Option<String>,
    /// The monotonic clock when the card was shown, when it was kept.
    pub shown_monotonic: Option<Monotonic>,
    /// An action, or a request for a mandate.
    pub subject: Subject,
    /// For an action: the mandate that answered it instead of a card.
    pub mandate_id: Option<String>,
    /// For an action a mandate answered: the mandate's day as of this action, itself included,
    /// taken in its claim's transaction — what its receipt shows, however many asks the
    /// mandate answered while it ran. `None` for one claimed before the store kept it.
    pub mandate_use: Option<crate::mandate::Usage>,
    /// For a mandate request: its terms and where the mandate stands.
    pub mandate: Option<MandateRow>,
    /// For a declined record: the owner's reply to its card, the No's reason.
    pub decline_reason: Option<String>,
}

impl Record {
    /// When its card was shown and until when it may be answered, once it was shown.
    pub fn window(&self) -> Option<Window> {
        let time = |text: &Option<String>| {
            text.as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        Some(Window {
            shown_at: time(&self.shown_at)?,
            expires_at: time(&self.expires_at)?,
            shown_monotonic: self.shown_monotonic.clone(),
        })
    }

    /// Whether the record has its answer for the session: a final state, or a granted mandate
    /// request (a mandate request is never run, so `granted` is where it ends).
    pub fn is_final(&self) -> bool {
        self.state.is_final()
            || (self.subject == Subject::Mandate && self.state == RecordState::Granted)
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

/// Columns a transition may set besides the state.
#[derive(Debug, Clone, Default)]
pub struct StateChange {
    pub reason: Option<String>,
    pub message: Option<String>,
    pub result: Option<String>,
    pub shown_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<i64>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The owner of the database and the journal file.
#[derive(Debug)]
pub struct Db {
    pub(super) conn: Connection,
    journal: JournalFile,
    /// Records whose state changed since the last call to [`Db::take_changes`].
    changed: Vec<(String, RecordState)>,
    /// Set when a transaction queued something for Telegram.
    outbox_queued: bool,
}

pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn since(now: DateTime<Utc>, span: Duration) -> String {
    let span = chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX);
    timestamp(
        now.checked_sub_signed(span)
            .unwrap_or(DateTime::<Utc>::MIN_UTC),
    )
}

/// A fresh record id: "r_" and 20 hex digits (80 random bits).
pub fn new_record_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|error| StoreError::Random(error.to_string()))?;
    Ok(format!("r_{}", hex::encode(bytes)))
}

impl Db {
    /// Opens (creating if needed) the database and the journal, checks both, applies migrations,
    /// reconciles the journal file with the staged lines, and journals `started`.
    pub fn open(
        db_path: &Path,
        journal_path: &Path,
        now: DateTime<Utc>,
    ) -> Result<(Db, OpenReport), StoreError> {
        let conn = Connection::open(db_path).map_err(|source| StoreError::Open {
            path: db_path.display().to_string(),
            source,
        })?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        // WAL keeps readers off the writer's back; FULL syncs the WAL on every commit, so an
        // acknowledged decision survives a power loss (NORMAL may lose the last commits).
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Pragma(format!(
                "journal_mode is {mode}, not wal"
            )));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
        if integrity != "ok" {
            return Err(StoreError::Corrupt {
                path: db_path.display().to_string(),
                detail: integrity,
            });
        }
        migrate(&conn)?;

        let (journal, torn_tail_cut_bytes) =
            JournalFile::open(journal_path).map_err(|source| StoreError::Journal {
                path: journal_path.display().to_string(),
                detail: source.to_string(),
            })?;
        let mut db = Db {
            conn,
            journal,
            changed: Vec::new(),
            outbox_queued: false,
        };
        let lines_recovered = db.reconcile_journal(journal_path)?;
        let report = OpenReport {
            torn_tail_cut_bytes,
            lines_recovered,
        };
        let mut started = Event::new("started").with("version", env!("CARGO_PKG_VERSION"));
        if torn_tail_cut_bytes > 0 {
            started = started.with("torn_tail_cut_bytes", torn_tail_cut_bytes);
        }
        if lines_recovered > 0 {
            started = started.with("lines_recovered", lines_recovered);
        }
        db.write(now, |_, events| {
            events.push(started);
            Ok(())
        })?;
        Ok((db, report))
    }

    /// Brings the journal file level with the staged lines, or says how they disagree.
    fn reconcile_journal(&mut self, journal_path: &Path) -> Result<u64, StoreError> {
        let (last_n, last_h) = self.journal_state()?;
        let head = self.journal.head().clone();
        let disagree = |detail: String| StoreError::JournalDisagrees {
            path: journal_path.display().to_string(),
            detail,
        };
        if head.n > last_n {
            return Err(disagree(format!(
                "the journal has {} lines but the store has staged only {last_n}",
                head.n
            )));
        }
        let missing: Vec<(i64, String, String, String)> = {
            let mut statement = self.conn.prepare_cached(
                "SELECT n, prev, h, line FROM journal_staged WHERE n > ?1 ORDER BY n",
            )?;
            let rows = statement.query_map([head.n as i64], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        if head.n == last_n {
            if head.h != last_h {
                return Err(disagree(format!(
                    "line {} of the journal is not the line the store wrote",
                    head.n
                )));
            }
        } else {
            let expected = last_n - head.n;
            let contiguous = missing.len() as u64 == expected
                && missing
                    .iter()
                    .zip(head.n + 1..)
                    .all(|((n, ..), want)| *n as u64 == want);
            if !contiguous {
                return Err(disagree(format!(
                    "the journal ends at line {} but the store wrote up to line {last_n} and \
                     kept only {} of the lines after it (lines were removed from the journal)",
                    head.n,
                    missing.len()
                )));
            }
            if missing[0].1 != head.h {
                return Err(disagree(format!(
                    "line {} of the journal is not the line the store wrote",
                    head.n
                )));
            }
        }
        let lines: Vec<Line> = missing
            .into_iter()
            .map(|(n, _, h, text)| Line {
                n: n as u64,
                h,
                text,
            })
            .collect();
        let recovered = lines.len() as u64;
        if !lines.is_empty() {
            self.append_journal(&lines)?;
        }
        self.conn
            .execute_cached("DELETE FROM journal_staged WHERE n <= ?1", [last_n as i64])?;
        Ok(recovered)
    }

    fn journal_state(&self) -> Result<(u64, String), StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT last_n, last_h FROM journal_state WHERE id = 1",
                [],
                |row| Ok((row.get::<_, i64>(0)? as u64, row.get(1)?)),
            )
            .optional()?
            .unwrap_or((0, journal::GENESIS_PREV.to_owned())))
    }

    fn append_journal(&mut self, lines: &[Line]) -> Result<(), StoreError> {
        self.journal
            .append(lines)
            .map_err(|error| StoreError::JournalWrite(error.to_string()))
    }

    /// Runs `change` in one IMMEDIATE transaction, stages the events it pushes as journal lines in
    /// the same transaction, commits, then appends and fsyncs the lines before returning.
    pub fn write<T>(
        &mut self,
        now: DateTime<Utc>,
        change: impl FnOnce(&Transaction<'_>, &mut Vec<Event>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_effects(now, None, |tx, effects| change(tx, &mut effects.events))
    }

    /// [`Db::write`] with the full [`Effects`], and optionally the next Telegram offset stored in
    /// the same transaction as what the update changed.
    pub fn write_effects<T>(
        &mut self,
        now: DateTime<Utc>,
        next_offset: Option<i64>,
        change: impl FnOnce(&Transaction<'_>, &mut Effects) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let written_up_to = self.journal.head().n as i64;
        let tx = Transaction::new(&mut self.conn, TransactionBehavior::Immediate)?;
        // Lines the file already has need not be kept; doing it here costs no extra commit.
        tx.execute_cached("DELETE FROM journal_staged WHERE n <= ?1", [written_up_to])?;
        let mut effects = Effects::new(now);
        let value = change(&tx, &mut effects)?;
        if let Some(offset) = next_offset {
            tx.execute_cached(
                "INSERT INTO telegram_state (id, next_offset) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)",
                [offset],
            )?;
        }
        let lines = stage(&tx, now, &effects.events)?;
        tx.commit()?;
        self.changed.extend(effects.changed);
        self.outbox_queued |= effects.queued;
        if !lines.is_empty() {
            self.append_journal(&lines)?;
        }
        Ok(value)
    }

    /// Notes a record's new state for waiters, for a change made outside [`Db::write_effects`]'s
    /// own bookkeeping.
    pub(super) fn note_change(&mut self, id: &str, state: RecordState) {
        self.changed.push((id.to_owned(), state));
    }

    /// Whether anything was queued for Telegram since the last call.
    pub fn take_outbox_queued(&mut self) -> bool {
        std::mem::take(&mut self.outbox_queued)
    }

    /// The records whose state changed since the last call, for waiters.
    pub fn take_changes(&mut self) -> Vec<(String, RecordState)> {
        std::mem::take(&mut self.changed)
    }

    /// Where the journal stands: the last line's number and hash.
    pub fn journal_head(&self) -> journal::Head {
        self.journal.head().clone()
    }

    /// Stores an ask, or refuses it by the stateful rules: idempotency, owner, decline memory,
    /// a silenced kind, joining an open card, `max_pending`.
    pub fn ask(
        &mut self,
        ask: &NewAsk,
        policy: AskPolicy,
        now: DateTime<Utc>,
    ) -> Result<AskOutcome, StoreError> {
        let id = new_record_id()?;
        let mut queued_card = false;
        let outcome = self.write(now, |tx, events| match judge_ask(tx, ask, policy, now)? {
            AskVerdict::Existing(record) => Ok(AskOutcome::Existing(record)),
            AskVerdict::Refuse(refusal) => refuse_in(
                tx,
                events,
                &id,
                ask.peer_uid,
                Some(&ask.action.kind),
                refusal,
                now,
            ),
            AskVerdict::Join(open) => Ok(AskOutcome::Joined(open)),
            AskVerdict::Cover(mandate, usage) => {
                covered_in(tx, events, &id, ask, &mandate, usage, now)
            }
            AskVerdict::Create => {
                let created = created_in(tx, events, &id, ask, policy.card_chat, now)?;
                queued_card = policy.card_chat.is_some();
                Ok(created)
            }
        })?;
        self.outbox_queued |= queued_card;
        match &outcome {
            AskOutcome::Created(record) | AskOutcome::Covered(record) => {
                self.changed.push((record.id.clone(), record.state))
            }
            AskOutcome::Refused { id, .. } => self.changed.push((id.clone(), RecordState::Refused)),
            AskOutcome::Joined(_) | AskOutcome::Existing(_) => {}
        }
        Ok(outcome)
    }

    /// Stores a refusal decided before the store saw the ask (the refusal gate's).
    pub fn refuse(
        &mut self,
        peer_uid: u32,
        kind: Option<&str>,
        refusal: Refusal,
        now: DateTime<Utc>,
    ) -> Result<String, StoreError> {
        let id = new_record_id()?;
        self.write(now, |tx, events| {
            refuse_in(tx, events, &id, peer_uid, kind, refusal, now)
        })?;
        self.changed.push((id.clone(), RecordState::Refused));
        Ok(id)
    }

    /// Moves a record from `from` to `to` in one guarded compare-and-set, with its journal events.
    /// Fails with [`StoreError::IllegalTransition`] for a step the state machine lacks, and with
    /// [`StoreError::StateConflict`] when the record is no longer in `from` (someone was first).
    pub fn transition(
        &mut self,
        id: &str,
        from: RecordState,
        to: RecordState,
        change: StateChange,
        events_to_journal: Vec<Event>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, None, |tx, effects| {
            transition_in(tx, id, from, to, &change)?;
            effects.events.extend(events_to_journal);
            effects.changed.push((id.to_owned(), to));
            record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)
        })
    }

    /// The owner's no: the card is declined, its digest remembered, and the kind's streak grows;
    /// at `streak_limit` the kind is silenced for a day. `after` runs in the same transaction
    /// (to queue the card's edit and the notice), told whether this no silenced the kind.
    /// Returns whether it did.
    pub fn decline(
        &mut self,
        id: &str,
        by: i64,
        streak_limit: u32,
        next_offset: Option<i64>,
        after: impl FnOnce(&Transaction<'_>, &mut Effects, &Record, bool) -> Result<(), StoreError>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, next_offset, |tx, effects| {
            let change = StateChange {
                decided_at: Some(now),
                decided_by: Some(by),
                ..StateChange::default()
            };
            transition_in(
                tx,
                id,
                RecordState::CardShown,
                RecordState::Declined,
                &change,
            )?;
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            effects.changed.push((id.to_owned(), RecordState::Declined));
            let digest = record.digest.clone().unwrap_or_default();
            let kind = record.kind.clone().unwrap_or_default();
            tx.execute_cached(
                "INSERT INTO declines (digest, declined_at) VALUES (?1, ?2)
                 ON CONFLICT (digest) DO UPDATE SET declined_at = excluded.declined_at",
                params![digest, timestamp(now)],
            )?;
            let streak: i64 = tx.query_row_cached(
                "INSERT INTO kind_streaks (kind, streak) VALUES (?1, 1)
                 ON CONFLICT (kind) DO UPDATE SET streak = streak + 1
                 RETURNING streak",
                [&kind],
                |row| row.get(0),
            )?;
            effects.push(
                Event::new(match record.subject {
                    Subject::Action => "declined",
                    Subject::Mandate => "mandate_declined",
                })
                .with("id", id)
                .with("kind", kind.as_str())
                .with("digest", digest.as_str())
                .with("by", by),
            );
            let silenced = streak >= i64::from(streak_limit);
            if silenced {
                let until = now + chrono::Duration::days(1);
                tx.execute_cached(
                    "UPDATE kind_streaks SET silenced_until = ?2, silenced_by = ?3 WHERE kind = ?1",
                    params![kind, timestamp(until), id],
                )?;
                effects.push(
                    Event::new("silenced")
                        .with("kind", kind.as_str())
                        .with("streak", streak)
                        .with("until", timestamp(until)),
                );
            }
            after(tx, effects, &record, silenced)?;
            Ok(silenced)
        })
    }

    /// The owner's yes: the card is granted and the kind's streak of no's ends. `after` runs in
    /// the same transaction (to queue the card's edit).
    pub fn grant(
        &mut self,
        id: &str,
        by: i64,
        next_offset: Option<i64>,
        after: impl FnOnce(&Transaction<'_>, &mut Effects, &Record) -> Result<(), StoreError>,
        now: DateTime<Utc>,
    ) -> Result<Record, StoreError> {
        self.write_effects(now, next_offset, |tx, effects| {
            let change = StateChange {
                decided_at: Some(now),
                decided_by: Some(by),
                ..StateChange::default()
            };
            transition_in(
                tx,
                id,
                RecordState::CardShown,
                RecordState::Granted,
                &change,
            )?;
            let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
            effects.changed.push((id.to_owned(), RecordState::Granted));
            let kind = record.kind.clone().unwrap_or_default();
            lift_silence_in(tx, effects, &kind)?;
            let record = match &record.mandate {
                Some(terms) => {
                    // The end was fixed when it was asked: the card showed it, and a Grant
                    // opens exactly that.
                    tx.execute_cached(
                        "UPDATE mandates SET opened_at = ?2 WHERE id = ?1",
                        params![id, timestamp(now)],
                    )?;
                    let opened = Event::new("mandate_open")
                        .with("id", id)
                        .with("kind", kind.as_str())
                        .with("digest", record.digest.clone().unwrap_or_default())
                        .with("ends_at", terms.ends_at.map(timestamp).unwrap_or_default());
                    effects.push(
                        super::mandates::with_money_term(opened, terms.usd_per_day)
                            .with("actions_per_day", terms.actions_per_day)
                            .with("by", by),
                    );
                    record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?
                }
                None => {
                    effects.push(
                        Event::new("granted")
                            .with("id", id)
                            .with("kind", kind.as_str())
                            .with("digest", record.digest.clone().unwrap_or_default())
                            .with("by", by),
                    );
                    record
                }
            };
            after(tx, effects, &record)?;
            Ok(record)
        })
    }

    pub fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        record_where(&self.conn, "id = ?1", params![id])
    }

    /// A peer's records, newest first, at most `limit`, strictly older than `before_seq`; with the
    /// cursor for the next page when there is one.
    pub fn list(
        &self,
        peer_uid: u32,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<(Vec<Record>, Option<i64>), StoreError> {
        let mut statement = self.conn.prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM records
             WHERE peer_uid = :uid AND seq < :before ORDER BY seq DESC LIMIT :limit"
        ))?;
        let rows = statement.query_map(
            named_params! {
                ":uid": peer_uid,
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
            record.attachments = attachments_of(&self.conn, &record.id)?;
        }
        Ok((records, next))
    }

    /// The owner's switch for a category, where they have set one.
    pub fn category_switches(&self) -> Result<BTreeMap<String, bool>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT kind, enabled FROM category_switches")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Runs a read-only query on the connection; for tests and diagnostics.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let current: u32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let latest = MIGRATIONS.last().map_or(0, |(number, _)| *number);
    if current > latest {
        return Err(StoreError::TooNew {
            found: current,
            latest,
        });
    }
    for (number, sql) in MIGRATIONS.iter().filter(|(number, _)| *number > current) {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {sql}\nPRAGMA user_version = {number}; COMMIT;"
        ))
        .map_err(|source| StoreError::Migration {
            number: *number,
            source,
        })?;
    }
    Ok(())
}

/// Turns events into chained lines and stages them in the transaction.
fn stage(
    tx: &Transaction<'_>,
    now: DateTime<Utc>,
    events: &[Event],
) -> Result<Vec<Line>, StoreError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let (mut n, mut prev) = tx
        .query_row_cached(
            "SELECT last_n, last_h FROM journal_state WHERE id = 1",
            [],
            |row| Ok((row.get::<_, i64>(0)? as u64, row.get::<_, String>(1)?)),
        )
        .optional()?
        .unwrap_or((0, journal::GENESIS_PREV.to_owned()));
    let mut lines = Vec::with_capacity(events.len());
    for event in events {
        n += 1;
        let line = journal::build_line(n, &prev, now, event.ev, &event.members);
        tx.execute_cached(
            "INSERT INTO journal_staged (n, prev, h, line) VALUES (?1, ?2, ?3, ?4)",
            params![n as i64, prev, line.h, line.text],
        )?;
        prev = line.h.clone();
        lines.push(line);
    }
    tx.execute_cached(
        "INSERT INTO journal_state (id, last_n, last_h) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET last_n = excluded.last_n, last_h = excluded.last_h",
        params![n as i64, prev],
    )?;
    Ok(lines)
}

/// The refusals an ask and a mandate request meet in the store before anything else: no owner,
/// the identical request declined recently, the kind silenced.
pub(super) fn stateful_refusal(
    tx: &Transaction<'_>,
    digest: &str,
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
            "SELECT declined_at FROM declines WHERE digest = ?1 AND declined_at > ?2",
            params![digest, since(now, policy.decline_memory)],
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
            "SELECT silenced_until FROM kind_streaks WHERE kind = ?1 AND silenced_until > ?2",
            params![kind, timestamp(now)],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(until) = silenced_until {
        return Ok(Some(Refusal::new(
            Reason::KindSilenced,
            format!(
                "the owner declined {kind} several times in a row; no cards of this kind until \
                 {until} or until the owner resumes it"
            ),
        )));
    }
    Ok(None)
}

/// `max_pending` asks are already waiting for the owner.
pub(super) fn pending_refusal(
    tx: &Transaction<'_>,
    policy: AskPolicy,
) -> Result<Option<Refusal>, StoreError> {
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

/// What the store's state makes of an ask, decided before anything is written.
#[derive(Debug)]
enum AskVerdict {
    /// Asked before with the same idempotency key and digest.
    Existing(Record),
    Refuse(Refusal),
    /// The same peer's open record with the same digest.
    Join(Record),
    /// An open mandate covers it, with its day's usage before this ask.
    Cover(super::mandates::MandateRow, crate::mandate::Usage),
    /// A new pending record.
    Create,
}

/// The stateful checks in their fixed order: idempotency, the stateful refusals, joining an
/// open record, a covering mandate, `max_pending`.
fn judge_ask(
    tx: &Transaction<'_>,
    ask: &NewAsk,
    policy: AskPolicy,
    now: DateTime<Utc>,
) -> Result<AskVerdict, StoreError> {
    if let Some(key) = &ask.idempotency_key {
        if let Some(existing) = record_where(
            tx,
            "peer_uid = ?1 AND idempotency_key = ?2",
            params![ask.peer_uid, key],
        )? {
            if existing.digest.as_deref() == Some(ask.digest.as_str()) {
                return Ok(AskVerdict::Existing(existing));
            }
            return Ok(AskVerdict::Refuse(Refusal::new(
                Reason::IdentityConflict,
                format!(
                    "idempotency_key {} was used for record {} with another digest",
                    crate::protocol::quote(key),
                    existing.id
                ),
            )));
        }
    }
    if let Some(refusal) = stateful_refusal(tx, &ask.digest, &ask.action.kind, policy, now)? {
        return Ok(AskVerdict::Refuse(refusal));
    }
    // Joined only by the same peer: another peer's record is not theirs to read or wait on.
    if let Some(open) = record_where(tx, OPEN_BY_DIGEST, params![ask.digest, ask.peer_uid])? {
        return Ok(AskVerdict::Join(open));
    }
    if policy.owner_known && policy.mandates_cover {
        if let Some((mandate, usage)) =
            super::mandates::covering_mandate(tx, &ask.action, ask.peer_uid, now, policy.tz)?
        {
            return Ok(AskVerdict::Cover(mandate, usage));
        }
    }
    if let Some(refusal) = pending_refusal(tx, policy)? {
        return Ok(AskVerdict::Refuse(refusal));
    }
    Ok(AskVerdict::Create)
}

/// A new pending record, with its card queued for `card_chat` in the same transaction.
fn created_in(
    tx: &Transaction<'_>,
    events: &mut Vec<Event>,
    id: &str,
    ask: &NewAsk,
    card_chat: Option<i64>,
    now: DateTime<Utc>,
) -> Result<AskOutcome, StoreError> {
    insert_pending(tx, id, ask, now)?;
    if let Some(chat) = card_chat {
        crate::store::outbox::queue_in(
            tx,
            chat,
            crate::store::outbox::What::Card,
            Some(id),
            &crate::store::outbox::Body::default(),
            crate::store::outbox::Sound::Gated,
            now,
        )?;
    }
    let mut asked = asked_event(id, ask);
    if ask.urgent {
        asked = asked.with("urgent", true);
    }
    events.push(asked);
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    Ok(AskOutcome::Created(record))
}

/// The `asked` journal line of a stored ask.
fn asked_event(id: &str, ask: &NewAsk) -> Event {
    let asked = Event::new("asked")
        .with("id", id)
        .with("kind", ask.action.kind.as_str())
        .with("digest", ask.digest.as_str())
        .with("uid", ask.peer_uid);
    match ask.action.cost_string() {
        Some(cost) => asked.with("cost_usd", cost),
        None => asked,
    }
}

/// An ask an open mandate covers: stored, granted by the mandate and claimed in this one
/// transaction, which is also the one that takes its share of the mandate's day — so two asks
/// racing for the last action of a day are decided one after the other, by the store's lock.
fn covered_in(
    tx: &Transaction<'_>,
    events: &mut Vec<Event>,
    id: &str,
    ask: &NewAsk,
    mandate: &super::mandates::MandateRow,
    before: crate::mandate::Usage,
    now: DateTime<Utc>,
) -> Result<AskOutcome, StoreError> {
    insert_pending(tx, id, ask, now)?;
    let cost = ask.action.cost_usd.unwrap_or_default();
    // The day as of this action, kept with it: its receipt, drawn when the run ends, shows
    // this and not the day as later asks have made it.
    let today = crate::mandate::Usage {
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
    transition_in(tx, id, RecordState::Pending, RecordState::Granted, &granted)?;
    let used = claim_in(tx, id, &ask.digest)?;
    events.push(asked_event(id, ask));
    events.push(
        Event::new("mandate_use")
            .with("id", id)
            .with("mandate", mandate.id.as_str())
            .with("actions_today", today.actions)
            .with("usd_today", format_usd(today.usd)),
    );
    events.push(used);
    let record = record_where(tx, "id = ?1", params![id])?.ok_or(StoreError::Missing)?;
    Ok(AskOutcome::Covered(record))
}

/// The claim (SPEC §8): granted → running. Returns the `used` line, for the caller to journal
/// in the same transaction, after whatever must precede it.
pub(crate) fn claim_in(tx: &Transaction<'_>, id: &str, digest: &str) -> Result<Event, StoreError> {
    transition_in(
        tx,
        id,
        RecordState::Granted,
        RecordState::Running,
        &StateChange::default(),
    )?;
    Ok(Event::new("used").with("id", id).with("digest", digest))
}

pub(crate) fn refuse_in(
    tx: &Transaction<'_>,
    events: &mut Vec<Event>,
    id: &str,
    peer_uid: u32,
    kind: Option<&str>,
    refusal: Refusal,
    now: DateTime<Utc>,
) -> Result<AskOutcome, StoreError> {
    // Only a well-formed kind is kept; an unknown one is the session's text and may be anything.
    let kind = kind.filter(|kind| crate::config::is_valid_kind(kind));
    tx.execute_cached(
        "INSERT INTO records (id, peer_uid, kind, state, reason, message, created_at, finished_at)
         VALUES (?1, ?2, ?3, 'refused', ?4, ?5, ?6, ?6)",
        params![
            id,
            peer_uid,
            kind,
            refusal.reason.as_str(),
            refusal.message,
            timestamp(now)
        ],
    )?;
    let mut denied = Event::new("denied").with("id", id);
    if let Some(kind) = kind {
        denied = denied.with("kind", kind);
    }
    events.push(denied.with("reason", refusal.reason.as_str()));
    Ok(AskOutcome::Refused {
        id: id.to_owned(),
        refusal,
    })
}

fn insert_pending(
    tx: &Transaction<'_>,
    id: &str,
    ask: &NewAsk,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let action = &ask.action;
    let fields =
        serde_json::to_string(&action.fields).map_err(|e| StoreError::Encode(e.to_string()))?;
    tx.execute_cached(
        "INSERT INTO records (id, peer_uid, kind, target, text, fields, cost_usd, digest,
                              idempotency_key, urgent, state, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11)",
        params![
            id,
            ask.peer_uid,
            action.kind,
            action.target,
            action.text,
            fields,
            action.cost_usd.map(format_usd),
            ask.digest,
            ask.idempotency_key,
            ask.urgent,
            timestamp(now)
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

/// A yes ends the kind's streak of no's, and with it a silence: the silence's notice loses its
/// Resume, which could only be refused now.
fn lift_silence_in(
    tx: &Transaction<'_>,
    effects: &mut Effects,
    kind: &str,
) -> Result<(), StoreError> {
    let silenced_by: Option<String> = tx
        .query_row_cached(
            "SELECT silenced_by FROM kind_streaks WHERE kind = ?1 AND silenced_until > ?2",
            params![kind, timestamp(effects.now)],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    tx.execute_cached(
        "UPDATE kind_streaks SET streak = 0, silenced_until = NULL, silenced_by = NULL
         WHERE kind = ?1",
        [kind],
    )?;
    if let Some(silenced_by) = silenced_by {
        super::drawn::unbutton_in(tx, effects, crate::press::PressAction::Resume, &silenced_by)?;
    }
    Ok(())
}

/// Keeps the display name of whoever decided `id`, for the card's later edits.
pub(crate) fn note_decider_name(
    tx: &Transaction<'_>,
    id: &str,
    name: &str,
) -> Result<(), StoreError> {
    tx.execute_cached(
        "UPDATE records SET decided_by_name = ?2 WHERE id = ?1",
        params![id, name],
    )?;
    Ok(())
}

pub(crate) fn transition_in(
    tx: &Transaction<'_>,
    id: &str,
    from: RecordState,
    to: RecordState,
    change: &StateChange,
) -> Result<(), StoreError> {
    if !from.can_become(to) {
        return Err(StoreError::IllegalTransition { from, to });
    }
    let updated = tx.execute_cached(
        "UPDATE records SET state = :to,
             reason = coalesce(:reason, reason), message = coalesce(:message, message),
             result = coalesce(:result, result), shown_at = coalesce(:shown_at, shown_at),
             expires_at = coalesce(:expires_at, expires_at),
             decided_at = coalesce(:decided_at, decided_at),
             decided_by = coalesce(:decided_by, decided_by),
             finished_at = coalesce(:finished_at, finished_at)
         WHERE id = :id AND state = :from",
        named_params! {
            ":to": to.as_str(),
            ":from": from.as_str(),
            ":id": id,
            ":reason": change.reason,
            ":message": change.message,
            ":result": change.result,
            ":shown_at": change.shown_at.map(timestamp),
            ":expires_at": change.expires_at.map(timestamp),
            ":decided_at": change.decided_at.map(timestamp),
            ":decided_by": change.decided_by,
            ":finished_at": change.finished_at.map(timestamp),
        },
    )?;
    if updated == 1 {
        return Ok(());
    }
    let actual: Option<String> = tx
        .query_row_cached("SELECT state FROM records WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .optional()?;
    match actual.as_deref().and_then(RecordState::parse) {
        Some(actual) => Err(StoreError::StateConflict {
            id: id.to_owned(),
            expected: from,
            actual,
        }),
        None => Err(StoreError::Missing),
    }
}

/// The peer's open ask with a digest, for joining its card. `+peer_uid` keeps SQLite off
/// `records_by_peer`: to serve `ORDER BY seq DESC` it would walk every record the peer ever made,
/// and every refused ask is one, so a runaway agent's burst slowed each later ask on the store's
/// one thread (10,000 refusals took an ask from about 1 ms to 10). `records_open` holds only the
/// open asks, at most `max_pending`.
pub(super) const OPEN_BY_DIGEST: &str =
    "digest = ?1 AND +peer_uid = ?2 AND state IN ('pending', 'card_shown')";

const RECORD_COLUMNS: &str = "seq, id, peer_uid, kind, target, text, fields, cost_usd, digest, \
    idempotency_key, urgent, state, reason, message, result, created_at, shown_at, expires_at, \
    decided_at, decided_by, finished_at, subject, mandate_id, decided_by_name, shown_boot, \
    shown_since_boot_ms, mandate_actions_today, mandate_usd_today, decline_reason";

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
            record.attachments = attachments_of(conn, &record.id)?;
            if record.subject == Subject::Mandate {
                record.mandate = super::mandates::mandate_row(conn, &record.id)?;
            }
            Ok(Some(record))
        }
        None => Ok(None),
    }
}

fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    let fields: String = row.get(6)?;
    let state: String = row.get(11)?;
    let invalid = |column: usize, what: String| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, what.into())
    };
    Ok(Record {
        seq: row.get(0)?,
        id: row.get(1)?,
        peer_uid: row.get(2)?,
        kind: row.get(3)?,
        target: row.get(4)?,
        text: row.get(5)?,
        fields: serde_json::from_str(&fields).map_err(|e| invalid(6, e.to_string()))?,
        cost_usd: row.get(7)?,
        attachments: Vec::new(),
        digest: row.get(8)?,
        idempotency_key: row.get(9)?,
        urgent: row.get(10)?,
        state: RecordState::parse(&state).ok_or_else(|| invalid(11, format!("state {state}")))?,
        reason: row.get(12)?,
        message: row.get(13)?,
        result: row.get(14)?,
        created_at: row.get(15)?,
        shown_at: row.get(16)?,
        expires_at: row.get(17)?,
        decided_at: row.get(18)?,
        decided_by: row.get(19)?,
        finished_at: row.get(20)?,
        shown_monotonic: match (
            row.get::<_, Option<String>>(24)?,
            row.get::<_, Option<i64>>(25)?,
        ) {
            (Some(boot), Some(ms)) => Some(Monotonic {
                boot,
                since_boot: Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
            }),
            _ => None,
        },
        subject: match row.get::<_, String>(21)?.as_str() {
            "mandate" => Subject::Mandate,
            _ => Subject::Action,
        },
        mandate_id: row.get(22)?,
        decided_by_name: row.get(23)?,
        mandate: None,
        mandate_use: match (
            row.get::<_, Option<u32>>(26)?,
            row.get::<_, Option<String>>(27)?,
        ) {
            (Some(actions), Some(usd)) => Some(crate::mandate::Usage {
                actions,
                usd: usd
                    .parse()
                    .map_err(|_| invalid(27, format!("amount {usd}")))?,
            }),
            _ => None,
        },
        decline_reason: row.get(28)?,
    })
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
