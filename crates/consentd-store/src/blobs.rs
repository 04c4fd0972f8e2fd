//! The attachment bytes on disk, `state_dir/attachments/<sha256>`: written for an ask inside the
//! transaction that stores its record ([`crate::Db::ask`]), and removed when no record names them.
//!
//! A blob is written only for an ask that creates or is covered by a record, before that record's
//! commit, so a committed record always has its bytes and a refused ask leaves none. A commit
//! that fails after the bytes were written removes those no record names at once
//! ([`remove_unnamed`]); a crash between the write and the commit leaves an orphan (or a
//! `.<sha256>.tmp` half-write), which [`remove_orphans`] takes away when the store opens. A blob
//! stays while a record keeps it: how long that is, and when one goes, is [`crate::copies`]'s;
//! a blob no record keeps any more is an orphan too.
//!
//! Removal never follows a symbolic link: an entry is unlinked by its name (a link itself, not
//! what it points to), a directory is left alone, and a name a record holds is never removed,
//! whatever the entry is.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use rusqlite::Connection;

use super::StoreError;
use consentd_core::action::Attachment;

/// Writes each attachment under its hash.
pub(crate) fn save_all(dir: &Path, attachments: &[Attachment]) -> Result<(), StoreError> {
    attachments
        .iter()
        .try_for_each(|attachment| save(dir, attachment))
}

/// Writes an attachment under its hash: to a temporary name, synced, renamed, directory synced.
/// Content-addressed, so a second write of the same bytes is skipped — if the file under that
/// name still holds them. One changed behind the daemon's back is replaced (the rename replaces a
/// symlink too), so a bad copy cannot keep failing every later ask of the same bytes.
fn save(dir: &Path, attachment: &Attachment) -> Result<(), StoreError> {
    let name = attachment.sha256.to_hex();
    let path = dir.join(&name);
    let failed = |source| StoreError::File {
        path: path.display().to_string(),
        source,
    };
    let expected = crate::stored::Expected {
        sha256: name.clone(),
        bytes: attachment.data.len() as u64,
    };
    let intact = crate::stored::open(&path)
        .and_then(|file| crate::stored::copy(file, &expected, &mut std::io::sink()));
    if intact.is_ok() {
        return Ok(());
    }
    let temporary = dir.join(format!(".{name}.tmp"));
    let mut file = std::fs::File::create(&temporary).map_err(failed)?;
    file.write_all(&attachment.data).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    std::fs::rename(&temporary, &path).map_err(failed)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(failed)
}

/// A queued message that sends a copy as a document (a mandate's receipt, held for the
/// evening or behind a backlog) keeps it too, whatever its record says: the owner is shown the
/// bytes that ran.
const QUEUED_DOCUMENT: &str = "json_extract(o.body, '$.document.sha256')";

/// Every hash a record or a queued message keeps a copy of ([`crate::copies`]).
fn named(conn: &Connection) -> Result<HashSet<String>, StoreError> {
    let mut query = conn.prepare(&format!(
        "SELECT a.sha256 FROM records r CROSS JOIN attachments a ON a.record_id = r.id
         WHERE r.copies_kept = 1
         UNION
         SELECT {QUEUED_DOCUMENT} FROM outbox o
         WHERE o.state = 'queued' AND {QUEUED_DOCUMENT} IS NOT NULL"
    ))?;
    let names = query
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<HashSet<_>, _>>()?;
    Ok(names)
}

/// Whether any record or queued message keeps the copy named `hash`. The records that keep
/// copies (open, running, retained) come first: a hash shared by a uid's whole history of
/// ended asks is never scanned.
pub(crate) fn kept(conn: &Connection, hash: &str) -> Result<bool, StoreError> {
    let kept = conn.query_row(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM records r CROSS JOIN attachments a
                            ON a.record_id = r.id WHERE r.copies_kept = 1 AND a.sha256 = ?1)
                 OR EXISTS (SELECT 1 FROM outbox o
                            WHERE o.state = 'queued' AND {QUEUED_DOCUMENT} = ?1)"
        ),
        [hash],
        |row| row.get(0),
    )?;
    Ok(kept)
}

/// Whether an entry of the attachments directory is the store's: a blob's name (64 lower-case
/// hex digits) or a blob's temporary name.
fn is_ours(name: &str) -> bool {
    let hex = |text: &str| {
        text.len() == 64
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    hex(name)
        || name
            .strip_prefix('.')
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .is_some_and(hex)
}

/// Removes the entries of `dir` that are the store's and that no record names: orphaned blobs
/// and temporary leftovers. Answers how many went. An entry that is a directory, or whose name
/// is not the store's, is left alone.
pub fn remove_orphans(conn: &Connection, dir: &Path) -> Result<u64, StoreError> {
    let named = named(conn)?;
    let listing = std::fs::read_dir(dir).map_err(|source| StoreError::File {
        path: dir.display().to_string(),
        source,
    })?;
    let mut removed = 0;
    for entry in listing.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // `file_type` does not follow a symbolic link: a link to a directory is a link.
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir || !is_ours(&name) || named.contains(&name) {
            continue;
        }
        if std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// After a failed commit: removes the blobs of `attachments` that no record names.
pub(crate) fn remove_unnamed(conn: &Connection, dir: &Path, attachments: &[Attachment]) {
    let Ok(named) = named(conn) else {
        // Unreadable now: the next start's sweep takes them.
        return;
    };
    for attachment in attachments {
        let name = attachment.sha256.to_hex();
        if !named.contains(&name) {
            // Already gone is fine; one left over goes at the next start.
            let _ = std::fs::remove_file(dir.join(&name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy is kept while a record keeps it, or while a queued message (a held receipt) is
    /// to send it as a document; not once that message is sent, nor for a record that let go.
    #[test]
    fn a_queued_document_keeps_its_copy_as_a_record_does() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrate::migrate(&conn).unwrap();
        let hash = "ab".repeat(32);
        let record = |id: &str, kept: bool| {
            conn.execute(
                "INSERT INTO records (id, peer_uid, kind, state, created_at, copies_kept)
                 VALUES (?1, 1000, 'post', 'executed', '2026-01-01T00:00:00Z', ?2)",
                rusqlite::params![id, kept],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO attachments (record_id, position, name, media_type, bytes, sha256)
                 VALUES (?1, 0, 'a.png', 'image/png', 3, ?2)",
                rusqlite::params![id, hash],
            )
            .unwrap();
        };
        record("r_1", false);
        assert!(
            !kept(&conn, &hash).unwrap(),
            "a record that let go keeps nothing"
        );
        assert!(!named(&conn).unwrap().contains(&hash));
        let body = serde_json::json!({"text": "receipt", "document": {"name": "a.png",
            "media_type": "image/png", "bytes": 3, "sha256": hash}});
        conn.execute(
            "INSERT INTO outbox (chat_id, what, body, created_at)
             VALUES (1, 'message', ?1, '2026-01-01T00:00:00Z')",
            [body.to_string()],
        )
        .unwrap();
        assert!(kept(&conn, &hash).unwrap(), "a queued document keeps it");
        assert!(named(&conn).unwrap().contains(&hash));
        conn.execute("UPDATE outbox SET state = 'sent'", [])
            .unwrap();
        assert!(!kept(&conn, &hash).unwrap(), "a sent one no longer does");
        record("r_2", true);
        assert!(kept(&conn, &hash).unwrap(), "a record that keeps it");
        assert!(!kept(&conn, &"cd".repeat(32)).unwrap(), "another hash");
    }

    #[test]
    fn only_blob_and_temporary_names_are_the_stores() {
        let hex = "ab".repeat(32);
        let cases: [(String, bool); 7] = [
            (hex.clone(), true),
            (format!(".{hex}.tmp"), true),
            (hex.to_uppercase(), false),
            (hex[..63].to_owned(), false),
            (format!("{hex}.tmp"), false),
            ("notes.txt".to_owned(), false),
            (format!(".{hex}"), false),
        ];
        for (name, ours) in cases {
            assert_eq!(is_ours(&name), ours, "{name}");
        }
    }
}
