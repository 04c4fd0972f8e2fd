//! Strangers' rejected presses: each press is applied as `consentd_core::stranger` decides, its
//! window kept in `stranger_presses`, so a stranger pressing the owner's buttons over and over
//! costs the owner one notice an hour and the journal two lines per window; and the polite line
//! a stranger writing to the bot hears at most once an hour.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::events::{EventName, JournalEvent};
use super::outbox::Outgoing;
use super::time::{parse_time, timestamp};
use super::StoreError;
use consentd_core::stranger::{self, Window};

/// A stranger's rejected press, as the consent loop found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrangerPress {
    /// The presser's Telegram id (never their name: the journal carries ids only).
    pub user_id: i64,
    /// The rejection's reason code.
    pub reason: &'static str,
    /// The pressed subject, when it is a record id or a kind name.
    pub subject: Option<String>,
    /// The owner's notice, queued only for the first press of a window.
    pub notice: Option<Outgoing>,
}

/// The counted line of a closed window: `count` presses by `user_id` for `reason` after the one
/// already journaled.
fn counted(user_id: i64, reason: &str, count: u32) -> JournalEvent {
    JournalEvent::new(EventName::PressRejected)
        .with("reason", reason.to_owned())
        .with("by", user_id)
        .with("count", count)
}

fn window_of(tx: &Connection, user_id: i64, reason: &str) -> Result<Option<Window>, StoreError> {
    let row: Option<(String, u32)> = tx
        .query_row_cached(
            "SELECT opened_at, held FROM stranger_presses WHERE user_id = ?1 AND reason = ?2",
            params![user_id, reason],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    Ok(row.and_then(|(opened_at, held)| {
        Some(Window {
            opened_at: parse_time(&opened_at)?,
            held,
        })
    }))
}

impl Db {
    /// A stranger's rejected press at `now`, with the update's offset: journaled (or counted) and
    /// told to the owner as [`stranger::on_press`] decides, in one transaction. Returns whether
    /// it opened a window (so the owner was told, if there was a notice).
    pub fn stranger_press_rejected(
        &mut self,
        press: StrangerPress,
        next_offset: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.write_effects(now, next_offset, |tx, effects| {
            let StrangerPress {
                user_id,
                reason,
                subject,
                notice,
            } = press;
            let step = stranger::on_press(window_of(tx, user_id, reason)?, now);
            if let Some(count) = step.flush {
                effects.push(counted(user_id, reason, count));
            }
            if step.first {
                let mut event = JournalEvent::new(EventName::PressRejected)
                    .with("reason", reason)
                    .with("by", user_id);
                if let Some(subject) = subject {
                    event = event.with("subject", subject);
                }
                effects.push(event);
                if let Some(notice) = notice {
                    notice.queue_in(tx, effects)?;
                }
            }
            tx.execute_cached(
                "INSERT INTO stranger_presses (user_id, reason, opened_at, held)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (user_id, reason)
                 DO UPDATE SET opened_at = excluded.opened_at, held = excluded.held",
                params![
                    user_id,
                    reason,
                    timestamp(step.next.opened_at),
                    step.next.held
                ],
            )?;
            Ok(step.first)
        })
    }

    /// Closes the windows that are over at `now` (the sweep): each that held presses is
    /// journaled as one counted line; all are forgotten. Returns how many lines were written.
    pub fn close_stranger_windows(&mut self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let cutoff = timestamp(now - stranger::window());
        // Read first, outside a write: nearly always there is nothing to close.
        let mut statement = self.conn.prepare_cached(
            "SELECT user_id, reason, opened_at, held FROM stranger_presses WHERE opened_at <= ?1",
        )?;
        let due: Vec<(i64, String, String, u32)> = statement
            .query_map([&cutoff], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect::<Result<_, _>>()?;
        drop(statement);
        if due.is_empty() {
            return Ok(0);
        }
        self.write_effects(now, None, |tx, effects| {
            let mut lines = 0;
            for (user_id, reason, opened_at, held) in due {
                let window = parse_time(&opened_at).map(|opened_at| Window { opened_at, held });
                if let Some(count) = window.and_then(|w| stranger::flush(w, now)) {
                    effects.push(counted(user_id, &reason, count));
                    lines += 1;
                }
                tx.execute_cached(
                    "DELETE FROM stranger_presses WHERE user_id = ?1 AND reason = ?2",
                    params![user_id, reason],
                )?;
            }
            Ok(lines)
        })
    }

    /// Whether a stranger may get the polite line now (at most once an hour); if so, notes it and
    /// runs `reply` (which queues the line) in the same transaction.
    pub fn stranger_may_hear(
        &mut self,
        user_id: i64,
        next_offset: i64,
        now: DateTime<Utc>,
        reply: &Outgoing,
    ) -> Result<bool, StoreError> {
        let since = timestamp(now - chrono::Duration::hours(1));
        self.write_effects(now, Some(next_offset), |tx, effects| {
            let recent: Option<String> = tx
                .query_row_cached(
                    "SELECT last_at FROM stranger_replies WHERE user_id = ?1 AND last_at > ?2",
                    params![user_id, since],
                    |row| row.get(0),
                )
                .optional()?;
            if recent.is_some() {
                return Ok(false);
            }
            tx.execute_cached(
                "INSERT INTO stranger_replies (user_id, last_at) VALUES (?1, ?2)
                 ON CONFLICT (user_id) DO UPDATE SET last_at = excluded.last_at",
                params![user_id, timestamp(now)],
            )?;
            reply.queue_in(tx, effects)?;
            Ok(true)
        })
    }
}
