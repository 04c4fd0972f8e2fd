//! Sealing the journal's lines as the store writes them, and checking the whole journal at start
//! (docs/adr/0004-journal-seals.md). The key file and the line format are `journal`'s; this is
//! where the store decides which key a transaction's lines get and when a family is announced.

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;

use crate::journal::{self, KeyFile};
use crate::StoreError;
use consentd_core::journal::{announcement, SealKey, SealKeys};

/// A line announcing a family of keys, to come first among a transaction's lines.
pub(crate) struct Announce {
    /// `seal_rotated` (a new `k0` after another), else `seal_started`.
    pub rotated: bool,
    pub members: Vec<(&'static str, Value)>,
}

/// What a transaction's lines are sealed with.
pub(crate) struct Prepared {
    /// The lines' `ts`: the transaction's time, or the start of the key's epoch when the clock
    /// is behind it (a line's time always falls in the epoch it is sealed in).
    pub ts: DateTime<Utc>,
    pub key: Option<SealKey>,
    pub announce: Option<Announce>,
}

/// Before a transaction stages its lines: evolves the key to `now`'s epoch (durably, erasing the
/// old one) or, for a family not yet announced, starts its first epoch now and says to announce
/// it (recording the announcement in `tx`, with the lines).
pub(crate) fn prepare(
    tx: &Connection,
    sealer: &mut Option<KeyFile>,
    now: DateTime<Utc>,
) -> Result<Prepared, StoreError> {
    let Some(file) = sealer.as_mut() else {
        return Ok(Prepared {
            ts: now,
            key: None,
            announce: None,
        });
    };
    let seal_error = |e: journal::SealKeyError| StoreError::JournalWrite(e.to_string());
    let now_ms = now.timestamp_millis();
    let announced = announced(tx)?;
    let mut announce = None;
    if announced.as_deref() == Some(file.key_id.as_str()) {
        file.key_at(now_ms).map_err(seal_error)?;
    } else {
        if file.key().epoch != file.epochs.first {
            return Err(StoreError::JournalWrite(format!(
                "the seal key {} was evolved but never announced in the journal; make a new one \
                 with `consentd journal rotate`",
                file.key_id
            )));
        }
        // A family's epochs continue after every epoch the journal was sealed in, or the
        // verifier (and the next start) refuses its announcement.
        let first = file
            .key()
            .epoch
            .max(file.sealed_up_to.map_or(0, |e| e.saturating_add(1)));
        if first != file.key().epoch || file.epochs.at(now_ms) != first {
            // Made by `seal-init` a while ago and never used: its first epoch starts now.
            file.rebase(first, now_ms).map_err(seal_error)?;
        }
        tx.execute(
            "INSERT INTO journal_seal (id, key_id) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET key_id = excluded.key_id",
            [&file.key_id],
        )?;
        announce = Some(Announce {
            rotated: announced.is_some(),
            members: announcement(&file.key_id, &file.epochs),
        });
    }
    let key = file.key().clone();
    let ts = if file.epochs.at(now_ms) < key.epoch {
        Utc.timestamp_millis_opt(file.epochs.starts(key.epoch))
            .single()
            .unwrap_or(now)
    } else {
        now
    };
    Ok(Prepared {
        ts,
        key: Some(key),
        announce,
    })
}

/// Evolves the seal key to `now`'s epoch (durably, erasing the old one) without writing a line,
/// so a past epoch's key does not wait on disk for the next decision (a quiet night) for whoever
/// takes the machine. Only an announced family evolves: one not yet announced starts its first
/// epoch at its announcement.
pub(crate) fn evolve(
    conn: &Connection,
    sealer: &mut Option<KeyFile>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let Some(file) = sealer.as_mut() else {
        return Ok(());
    };
    if announced(conn)?.as_deref() == Some(file.key_id.as_str()) {
        file.key_at(now.timestamp_millis())
            .map_err(|e| StoreError::JournalWrite(e.to_string()))?;
    }
    Ok(())
}

/// The id of the family the journal last announced.
fn announced(conn: &Connection) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row("SELECT key_id FROM journal_seal WHERE id = 1", [], |row| {
            row.get(0)
        })
        .optional()?)
}

/// At start: loads the key file beside the database and verifies the whole journal, with the
/// seals of the current epoch (the only key the machine holds). Refuses a break, naming the
/// first bad line, and a sealed journal whose key file is gone.
pub(crate) fn check_at_start(
    db_path: &Path,
    journal_path: &Path,
) -> Result<Option<KeyFile>, StoreError> {
    let refuse = |detail: String| StoreError::Journal {
        path: journal_path.display().to_string(),
        detail,
    };
    let dir = db_path.parent().unwrap_or(Path::new("."));
    let mut sealer = KeyFile::load(dir).map_err(|e| refuse(e.to_string()))?;
    let keys = SealKeys {
        k0s: Vec::new(),
        current: sealer.as_ref().map(|f| (f.key_id.clone(), f.key().clone())),
        not_after_ms: None,
    };
    let verified = journal::verify_file_sealed(journal_path, None, keys)
        .map_err(|e| refuse(e.to_string()))?
        .map_err(|problem| {
            refuse(format!(
                "{problem}. The journal is kept as it is: copy it away as evidence and start \
                 a new one (docs/OPERATOR.md, \"A broken journal\")"
            ))
        })?;
    let sealed_up_to = verified.seals.last_epoch.map(|(e, _, _)| e);
    if let Some(file) = sealer.as_mut() {
        file.sealed_up_to = sealed_up_to;
    }
    if sealer.is_none() && sealed_up_to.is_some() {
        return Err(refuse(format!(
            "the journal is sealed, but {} is missing from {}; lines written now would be \
             unsealed. Make a new key with `consentd journal seal-init --config FILE`",
            journal::SEAL_KEY_FILE,
            dir.display()
        )));
    }
    Ok(sealer)
}

/// The paired owner's Telegram id and language code, for `seal-init`/`rotate` to send the new
/// verification key to: read with a short read-only connection (the key itself never goes near
/// the database). `None` when the database does not exist yet or nobody paired.
pub fn paired_owner(db_path: &Path) -> Result<Option<(i64, Option<String>)>, StoreError> {
    if !db_path.exists() {
        return Ok(None);
    }
    let conn =
        rusqlite::Connection::open_with_flags(db_path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let row = conn
        .query_row(
            "SELECT telegram_id, language_code FROM owner WHERE id = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional();
    // A database from before pairing existed has no owner table: nobody is paired.
    Ok(row.unwrap_or(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::events::{EventName, JournalEvent};
    use chrono::Duration;
    use consentd_core::journal::Key;

    const K0: Key = [0x42; 32];

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 14, 9, 0, 0).unwrap()
    }

    fn note(db: &mut Db, at: DateTime<Utc>) {
        db.write(at, |_, events| {
            events.push(JournalEvent::new(EventName::Settings).with("key", "x"));
            Ok(())
        })
        .unwrap();
    }

    fn lines(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_key_made_long_ago_starts_at_its_announcement_and_a_clock_gone_back_keeps_the_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let (db_path, journal_path) = (dir.path().join("c.db"), dir.path().join("j.jsonl"));
        drop(Db::open(&db_path, &journal_path, t0()).unwrap());
        // Made a day before the daemon's next start: its first epoch starts at the announcement.
        let from = (t0() - Duration::days(1)).timestamp_millis();
        KeyFile::create(dir.path(), &K0, 1, from, 60).unwrap();
        let (mut db, _) = Db::open(&db_path, &journal_path, t0()).unwrap();
        let announced = lines(&journal_path);
        let seal_line = announced
            .iter()
            .find(|l| l["ev"] == "seal_started")
            .unwrap();
        assert_eq!(seal_line["from_ms"], t0().timestamp_millis());
        assert!(seal_line["s"].as_str().unwrap().starts_with("1:"));
        // Three epochs on, then the clock steps back two minutes: the epoch stays, and the line's
        // time is the epoch's start, so it still falls in the epoch it is sealed in.
        note(&mut db, t0() + Duration::seconds(185));
        note(&mut db, t0() + Duration::seconds(65));
        let all = lines(&journal_path);
        let back = all.last().unwrap();
        assert!(back["s"].as_str().unwrap().starts_with("4:"), "{back}");
        assert_eq!(back["ts"], "2026-03-14T09:03:00.000Z");
        drop(db);
        let keys = SealKeys::verification(&[K0]);
        let verified = journal::verify_file_sealed(&journal_path, None, keys)
            .unwrap()
            .unwrap();
        assert_eq!(verified.seals.last_epoch.map(|(e, _, _)| e), Some(4));
        // Reopened: the key on disk decides the epoch, and the start's check passes.
        let (db, _) = Db::open(&db_path, &journal_path, t0()).unwrap();
        assert_eq!(db.sealer.as_ref().unwrap().key().epoch, 4);
    }

    #[test]
    fn a_key_made_after_the_old_one_was_lost_continues_the_journals_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let (db_path, journal_path) = (dir.path().join("c.db"), dir.path().join("j.jsonl"));
        drop(Db::open(&db_path, &journal_path, t0()).unwrap());
        KeyFile::create(dir.path(), &K0, 1, t0().timestamp_millis(), 60).unwrap();
        let (mut db, _) = Db::open(&db_path, &journal_path, t0()).unwrap();
        note(&mut db, t0() + Duration::seconds(185));
        drop(db);
        // The key file is lost. The start is refused, as it should be; `rotate` needs an old key,
        // so the owner runs `seal-init`, which has no old epoch to go on and starts at epoch 1.
        std::fs::remove_file(dir.path().join(journal::SEAL_KEY_FILE)).unwrap();
        assert!(Db::open(&db_path, &journal_path, t0() + Duration::minutes(9)).is_err());
        const K1: Key = [0x17; 32];
        let later = t0() + Duration::minutes(10);
        KeyFile::create(dir.path(), &K1, 1, later.timestamp_millis(), 60).unwrap();
        let (mut db, _) = Db::open(&db_path, &journal_path, later).unwrap();
        note(&mut db, later + Duration::seconds(30));
        drop(db);
        // The new family's epochs continue after the old one's: the journal still verifies, and
        // the daemon starts again.
        let keys = SealKeys::verification(&[K0, K1]);
        journal::verify_file_sealed(&journal_path, None, keys)
            .unwrap()
            .unwrap();
        Db::open(&db_path, &journal_path, later + Duration::minutes(1)).unwrap();
    }
}
