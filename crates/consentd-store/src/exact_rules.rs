//! Exact rules ("Always here", docs/HOOKS.md) in SQLite: a rule saved in the transaction of the
//! owner's Always press, a hook's call answered by one (its use counted and journaled in one
//! transaction), a rule removed, and the live rules for `/rules`.
//!
//! A rule names the uid that asked, the agent, the tool, the directory and the SHA-256 of the
//! call's text, and answers only the call that matches all of them and its kind. Whether its
//! kind may be answered at all (approval-only, on, not destructive) is the daemon's to judge
//! from the config before it asks (`consentd_core::exact::rule_may_answer`). The text is kept for
//! `/rules`; the journal names it, and the directory, by their SHA-256.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::cached::Cached;
use super::db::Db;
use super::drawn::unbutton_in;
use super::events::{Effects, EventName, JournalEvent};
use super::outbox::Outgoing;
use super::records::record_where;
use super::time::{parse_time, timestamp};
use super::StoreError;
use consentd_core::digest::Sha256Hash;
use consentd_core::exact::RuleQuery;
use consentd_core::press::PressAction;

/// A saved rule as `/rules` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedRule {
    /// "u_" and 20 hex digits.
    pub id: String,
    pub peer_uid: u32,
    pub agent: String,
    pub tool: String,
    pub cwd: String,
    /// The call's text, byte-exact, as its card showed it.
    pub command: String,
    pub command_sha256: String,
    pub kind: String,
    pub saved_at: DateTime<Utc>,
    pub uses: u64,
    pub removed_at: Option<DateTime<Utc>>,
}

impl SavedRule {
    pub fn is_live(&self) -> bool {
        self.removed_at.is_none()
    }
}

const RULE_COLUMNS: &str = "id, peer_uid, agent, tool, cwd, command, command_sha256, kind, \
    saved_at, uses, removed_at";

fn rule_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SavedRule> {
    let time = |column: usize, text: String| {
        parse_time(&text).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                column,
                rusqlite::types::Type::Text,
                format!("time {text}").into(),
            )
        })
    };
    Ok(SavedRule {
        id: row.get(0)?,
        peer_uid: row.get(1)?,
        agent: row.get(2)?,
        tool: row.get(3)?,
        cwd: row.get(4)?,
        command: row.get(5)?,
        command_sha256: row.get(6)?,
        kind: row.get(7)?,
        saved_at: time(8, row.get(8)?)?,
        uses: row.get::<_, i64>(9)?.max(0) as u64,
        removed_at: row
            .get::<_, Option<String>>(10)?
            .map(|text| time(10, text))
            .transpose()?,
    })
}

/// A fresh rule id: "u_" and 20 hex digits (80 random bits).
fn new_rule_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|error| StoreError::Random(error.to_string()))?;
    Ok(format!("u_{}", hex::encode(bytes)))
}

/// Saves the call of record `record_id` (just approved by the owner's Always press, in the same
/// transaction) as a rule for the uid that asked, journaled `rule_saved` with the text and the
/// directory by their SHA-256. The same call saved already keeps its one live rule. Returns
/// the rule's id.
pub(crate) fn save_in(
    tx: &Connection,
    effects: &mut Effects,
    record_id: &str,
    by: i64,
) -> Result<String, StoreError> {
    let record = record_where(tx, "id = ?1", params![record_id])?.ok_or(StoreError::Missing)?;
    let kind = record.asked()?.kind.to_owned();
    // The press's verdict asked for both (`offers_always`); a record without them is no
    // record an Always could be signed for.
    let not_asked = || StoreError::NotAsked {
        id: record.id.clone(),
    };
    let action = record.action().ok_or_else(not_asked)?;
    let hook = action.hook.as_ref().ok_or_else(not_asked)?;
    let text = action.text.as_deref().unwrap_or_default();
    let sha = Sha256Hash::of(text.as_bytes()).to_hex();
    let live: Option<String> = tx
        .query_row_cached(
            "SELECT id FROM exact_rules WHERE peer_uid = ?1 AND agent = ?2 AND tool = ?3
             AND cwd = ?4 AND command_sha256 = ?5 AND kind = ?6 AND removed_at IS NULL",
            params![record.peer_uid, hook.agent, hook.tool, hook.cwd, sha, kind],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(id) = live {
        return Ok(id);
    }
    let id = new_rule_id()?;
    tx.execute_cached(
        "INSERT INTO exact_rules (id, peer_uid, agent, tool, cwd, command, command_sha256, kind,
                                  record_id, saved_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            id,
            record.peer_uid,
            hook.agent,
            hook.tool,
            hook.cwd,
            text,
            sha,
            kind,
            record.id,
            timestamp(effects.now)
        ],
    )?;
    effects.push(
        JournalEvent::new(EventName::RuleSaved)
            .with("rule", id.as_str())
            .with("id", record.id.as_str())
            .with("kind", kind.as_str())
            .with("agent", hook.agent.as_str())
            .with("tool", hook.tool.as_str())
            .with("command", sha.as_str())
            .with("cwd", Sha256Hash::of(hook.cwd.as_bytes()).to_hex())
            .with("by", by),
    );
    Ok(id)
}

/// The owner's Remove: the rule is live no more (`removed_at`), journaled `rule_removed`, its
/// Remove buttons elsewhere taken away, and `edit` queued. A rule removed already changes
/// nothing. Returns whether it removed it.
pub(crate) fn remove_in(
    tx: &Connection,
    effects: &mut Effects,
    rule_id: &str,
    by: i64,
    edit: &Outgoing,
) -> Result<bool, StoreError> {
    let removed = tx.execute_cached(
        "UPDATE exact_rules SET removed_at = ?2 WHERE id = ?1 AND removed_at IS NULL",
        params![rule_id, timestamp(effects.now)],
    )?;
    if removed == 0 {
        return Ok(false);
    }
    effects.push(
        JournalEvent::new(EventName::RuleRemoved)
            .with("rule", rule_id)
            .with("by", by),
    );
    unbutton_in(tx, effects, PressAction::Remove, rule_id)?;
    edit.queue_in(tx, effects)?;
    Ok(true)
}

impl Db {
    /// The live rule that answers `query` for `peer_uid`, byte-exact: its uses counted and
    /// `rule_used` journaled in one transaction. `None` when no live rule matches, and then
    /// nothing is written. The caller has checked that the kind may be answered by a rule.
    pub fn use_rule(
        &mut self,
        peer_uid: u32,
        query: &RuleQuery,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        // The caller checked the daemon's copy of the switches; an Off stored since wins.
        if crate::settings::switched_off_in(&self.conn, &query.kind)? {
            return Ok(None);
        }
        let sha = Sha256Hash::of(query.text.as_bytes()).to_hex();
        let call = &query.call;
        let found: Option<String> = self
            .conn
            .query_row_cached(
                "SELECT id FROM exact_rules WHERE peer_uid = ?1 AND agent = ?2 AND tool = ?3
                 AND cwd = ?4 AND command_sha256 = ?5 AND kind = ?6 AND removed_at IS NULL",
                params![peer_uid, call.agent, call.tool, call.cwd, sha, query.kind],
                |row| row.get(0),
            )
            .optional()?;
        let Some(id) = found else {
            return Ok(None);
        };
        // The store's one thread runs this whole call: nothing removes the rule in between.
        self.write_effects(now, None, |tx, effects| {
            let at = timestamp(effects.now);
            tx.execute_cached(
                "UPDATE exact_rules SET uses = uses + 1, last_used_at = ?2 WHERE id = ?1",
                params![id, at],
            )?;
            tx.execute_cached(
                "INSERT INTO exact_rule_uses (rule_id, used_at) VALUES (?1, ?2)",
                params![id, at],
            )?;
            effects.push(
                JournalEvent::new(EventName::RuleUsed)
                    .with("rule", id.as_str())
                    .with("kind", query.kind.as_str()),
            );
            Ok(())
        })?;
        Ok(Some(id))
    }

    /// Every live rule, oldest first.
    pub fn live_rules(&self) -> Result<Vec<SavedRule>, StoreError> {
        let mut statement = self.conn.prepare_cached(&format!(
            "SELECT {RULE_COLUMNS} FROM exact_rules WHERE removed_at IS NULL
             ORDER BY saved_at, id"
        ))?;
        let rows = statement.query_map([], rule_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One rule, live or removed.
    pub fn saved_rule(&self, id: &str) -> Result<Option<SavedRule>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                &format!("SELECT {RULE_COLUMNS} FROM exact_rules WHERE id = ?1"),
                [id],
                rule_from_row,
            )
            .optional()?)
    }

    /// How many calls saved rules passed in `[start, end)`.
    pub(crate) fn rule_uses_between(&self, start: &str, end: &str) -> Result<u32, StoreError> {
        Ok(self.conn.query_row_cached(
            "SELECT count(*) FROM exact_rule_uses WHERE used_at >= ?1 AND used_at < ?2",
            params![start, end],
            |row| row.get(0),
        )?)
    }
}
