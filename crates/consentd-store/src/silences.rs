//! A uid's silence of a kind (after its no streak) as stored: whether one lasts, and the owner's
//! Resume that lifts it.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::drawn::unbutton_in;
use super::events::{Effects, EventName, JournalEvent};
use super::outbox::Outgoing;
use super::time::timestamp;
use super::StoreError;
use consentd_core::press::PressAction;

impl Db {
    /// `peer`'s silence of the kind while it lasts at `now`: the record whose no started it
    /// (`None` for a silence from before silences were named).
    pub fn silence_of(
        &self,
        peer: &crate::Peer,
        kind: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Option<String>>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT silenced_by FROM kind_streaks
                 WHERE peer_uid = ?1 AND listener = ?4 AND kind = ?2 AND silenced_until > ?3",
                params![peer.uid, kind, timestamp(now), peer.column()],
                |row| row.get(0),
            )
            .optional()?)
    }
}

/// The owner's Resume on the notice of the silence `silenced_by` started: the streak of the kind
/// of that record's uid ends and that uid may ask it again (another uid's silence stays), and
/// `reply` is queued. A silence started by another record (a later
/// one) is left alone: an old Resume lifts only its own. (A silence from before silences were
/// named, after an upgrade, is lifted by any Resume of its kind.) Returns whether it lifted one.
pub(super) fn resume_in(
    tx: &rusqlite::Connection,
    effects: &mut Effects,
    kind: &str,
    silenced_by: &str,
    by: i64,
    reply: &Outgoing,
) -> Result<bool, StoreError> {
    let changed = tx.execute_cached(
        "UPDATE kind_streaks SET streak = 0, silenced_until = NULL, silenced_by = NULL
         WHERE kind = ?1 AND (silenced_by = ?2 OR silenced_by IS NULL)
             AND silenced_until > ?3
             AND peer_uid = (SELECT peer_uid FROM records WHERE id = ?2)
             AND listener = (SELECT listener FROM records WHERE id = ?2)",
        params![kind, silenced_by, timestamp(effects.now)],
    )?;
    if changed > 0 {
        effects.push(
            JournalEvent::new(EventName::Resumed)
                .with("kind", kind)
                .with("silenced_by", silenced_by)
                .with("by", by),
        );
        reply.queue_in(tx, effects)?;
        // Used: the notice keeps no button that could only be refused.
        unbutton_in(tx, effects, PressAction::Resume, silenced_by)?;
    }
    Ok(changed > 0)
}
