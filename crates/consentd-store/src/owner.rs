//! The owner as stored, and how they are paired: a `/start CODE` judged by consentd-core's
//! pairing rule against the stored pairing state, in one transaction with its reply.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::{EventName, JournalEvent};
use super::outbox::Outgoing;
use super::time::{parse_time, timestamp};
use super::StoreError;
use consentd_core::pairing::{self, PairVerdict, PairingState};

/// The paired owner, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRow {
    pub telegram_id: i64,
    pub language_code: Option<String>,
}

/// The replies to a pairing attempt, drawn before it, one for each verdict: the store queues the
/// one its verdict takes in the attempt's own transaction.
#[derive(Debug, Clone)]
pub struct PairReplies {
    pub paired: Outgoing,
    pub wrong: Outgoing,
    /// The reply to an attempt while pairing is locked, drawn for the lock's end it names (read
    /// with [`crate::Store::pairing_lock`]).
    pub locked: Option<(DateTime<Utc>, Outgoing)>,
}

impl Db {
    pub fn owner(&self) -> Result<Option<OwnerRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT telegram_id, language_code FROM owner WHERE id = 1",
                [],
                |row| {
                    Ok(OwnerRow {
                        telegram_id: row.get(0)?,
                        language_code: row.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    /// Until when pairing is locked, if it is (or was).
    pub fn pairing_lock(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let until: Option<Option<String>> = self
            .conn
            .query_row_cached("SELECT locked_until FROM pairing WHERE id = 1", [], |row| {
                row.get(0)
            })
            .optional()?;
        Ok(until.flatten().as_deref().and_then(parse_time))
    }

    /// A `/start CODE` while nobody is paired: the pure decision on the stored pairing state,
    /// its next state, the owner when it paired (`owner_set` journaled) and the reply, all in one
    /// transaction — so a `consentd pair` writing a new code meanwhile is never overwritten.
    pub fn pairing_attempt(
        &mut self,
        given: &str,
        candidate: OwnerRow,
        next_offset: i64,
        now: DateTime<Utc>,
        replies: &PairReplies,
    ) -> Result<Option<PairVerdict>, StoreError> {
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let state = tx
                .query_row_cached(
                    "SELECT code_hash, expires_at, used, failures, locked_until FROM pairing WHERE id = 1",
                    [],
                    |row| {
                        Ok(PairingState {
                            code_hash: row.get(0)?,
                            expires_at: row.get::<_, Option<String>>(1)?.as_deref().and_then(parse_time),
                            used: row.get(2)?,
                            failures: row.get(3)?,
                            locked_until: row.get::<_, Option<String>>(4)?.as_deref().and_then(parse_time),
                        })
                    },
                )
                .optional()?
                .unwrap_or_default();
            let (verdict, next) = pairing::decide(&state, given, now);
            let reply = match &verdict {
                PairVerdict::Paired => &replies.paired,
                PairVerdict::Locked { until } => match &replies.locked {
                    Some((drawn_for, reply)) if drawn_for == until => reply,
                    // Drawn for another lock (a `consentd pair` or an attempt meanwhile):
                    // nothing is written, and the caller draws it again.
                    _ => return Ok(None),
                },
                _ => &replies.wrong,
            };
            tx.execute_cached(
                "INSERT INTO pairing (id, code_hash, expires_at, used, failures, locked_until)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET code_hash = excluded.code_hash,
                     expires_at = excluded.expires_at, used = excluded.used,
                     failures = excluded.failures, locked_until = excluded.locked_until",
                params![
                    next.code_hash,
                    next.expires_at.map(timestamp),
                    next.used,
                    next.failures,
                    next.locked_until.map(timestamp)
                ],
            )?;
            if verdict == PairVerdict::Paired {
                tx.execute_cached(
                    "INSERT INTO owner (id, telegram_id, language_code, set_at) VALUES (1, ?1, ?2, ?3)",
                    params![candidate.telegram_id, candidate.language_code, timestamp(now)],
                )?;
                effects.push(
                    JournalEvent::new(EventName::OwnerSet)
                        .with("owner", candidate.telegram_id)
                        .with("by", "pairing"),
                );
            }
            reply.queue_in(tx, effects)?;
            Ok(Some(verdict))
        })
    }
}
