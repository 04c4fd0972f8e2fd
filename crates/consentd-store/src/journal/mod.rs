//! The consent journal's file: an append-only, hash-chained JSON Lines file.
//!
//! The line format and its verification over bytes are consentd-core's
//! ([`consentd_core::journal`]), and its callers name them there. This module
//! owns what touches the file: verifying a file
//! by streaming it through the core's verifier ([`verify_file`]), and, in
//! `file`, finding the head from the tail, cutting a torn tail after a crash,
//! and appending lines durably ([`JournalFile`]); in `writer`, the thread that appends a
//! committed batch's lines while the store's thread goes on.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use consentd_core::journal::{
    check_continues, head_of_line, verify_read, verify_read_sealed, Anchor, Head, Key, Line,
    Problem, SealKeys, Verified,
};

mod file;
mod seal_key;
mod writer;
pub use file::{head, repair_torn_tail, JournalFile};
pub use seal_key::{new_k0, KeyFile, SealKeyError, MIN_EPOCH_SECS, SEAL_KEY_FILE};
pub(crate) use writer::{JournalWriter, Then};

/// Mode of a newly created journal: the daemon writes, its group may audit.
const JOURNAL_MODE: u32 = 0o640;

/// First tail window read by `head`; doubled until it holds the whole last line.
const HEAD_WINDOW: u64 = 8 * 1024;

/// Failures that say nothing about the journal's contents.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal I/O: {0}")]
    Io(#[from] io::Error),
    /// Opening for append found a last line that cannot be continued.
    #[error("journal cannot be continued: {0}")]
    Damaged(Problem),
    /// `append` was given lines that do not continue the chain.
    #[error("refusing to append: {0}")]
    Refused(String),
    /// A write or fsync failed earlier; what is on disk is only known after
    /// reopening (which re-reads the head and cuts any torn tail).
    #[error("journal handle is unusable after a failed write; reopen the journal")]
    Poisoned,
}

/// Verify a journal file, reading it in large chunks. The outer error is I/O
/// only; what is wrong with the journal is the inner `Problem`.
pub fn verify_file(
    path: &Path,
    anchor: Option<&Anchor>,
) -> Result<Result<Verified, Problem>, JournalError> {
    let file = open_to_verify(path)?;
    Ok(verify_read(file, anchor)?)
}

/// [`verify_file`], checking seals with `keys`.
pub fn verify_file_sealed(
    path: &Path,
    anchor: Option<&Anchor>,
    keys: SealKeys,
) -> Result<Result<Verified, Problem>, JournalError> {
    let file = open_to_verify(path)?;
    Ok(verify_read_sealed(file, anchor, keys)?)
}

/// [`verify_file_sealed`] with the verification keys `k0s` (none: seals are not checked), each
/// key's epochs dated up to `now_ms`: what `consentd journal verify` and `consentd doctor` run.
pub fn verify_file_with_keys(
    path: &Path,
    anchor: Option<&Anchor>,
    k0s: &[Key],
    now_ms: i64,
) -> Result<Result<Verified, Problem>, JournalError> {
    verify_file_sealed(
        path,
        anchor,
        SealKeys::verification(k0s).dated_up_to(now_ms),
    )
}

/// Opens a journal to verify it (or to read its head) as the daemon would take it: a regular file, not through a
/// symlink (the daemon refuses one at the journal's path: `ok` for whatever it points at would
/// vouch for a file that is not the journal), and without waiting (a FIFO would block the open
/// until someone wrote to it; a device such as /dev/zero never ends).
pub(crate) fn open_to_verify(path: &Path) -> Result<File, JournalError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(JournalError::Io(io::Error::other(format!(
                "{} is a symlink; verify the file it points at by its own path",
                path.display()
            ))))
        }
        Err(error) => return Err(error.into()),
    };
    if !file.metadata()?.is_file() {
        return Err(JournalError::Io(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        ))));
    }
    Ok(file)
}

/// Reads a file by position, leaving any cursor alone.
struct ReadAt<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.file.read_at(buf, self.pos)?;
        self.pos += k as u64;
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, TimeZone, Utc};
    use consentd_core::journal::{build_line, verify_bytes, GENESIS_PREV};
    use serde_json::json;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 14, 9, 26, 53).unwrap() + Duration::milliseconds(589)
    }

    /// Line `n` after `prev`; the format's own tests (in consentd-core) vary
    /// events and members, the file's tests only need a chain of lines.
    fn line_after(n: u64, prev: &str, salt: &str) -> Line {
        let mut members = vec![("id", json!(format!("c-{:06}", n.div_ceil(2))))];
        if !salt.is_empty() {
            members.push(("note", json!(salt)));
        }
        build_line(
            n,
            prev,
            t0() + Duration::seconds(n as i64),
            "asked",
            &members,
        )
    }

    /// Appends the next line of the chain, made by `make(n, prev)`.
    fn push(lines: &mut Vec<Line>, make: impl Fn(u64, &str) -> Line) {
        let prev = lines.last().map_or(GENESIS_PREV, |l| l.h.as_str());
        let line = make(lines.len() as u64 + 1, prev);
        lines.push(line);
    }

    fn journal(count: u64) -> Vec<Line> {
        let mut lines = Vec::new();
        for _ in 0..count {
            push(&mut lines, |n, prev| line_after(n, prev, ""));
        }
        lines
    }

    fn bytes(lines: &[Line]) -> Vec<u8> {
        lines.iter().flat_map(|l| l.text.bytes()).collect()
    }

    #[test]
    fn file_verifies_a_line_longer_than_the_read_buffer() {
        let mut lines = journal(30);
        // Far longer than the verifier's 256 KiB read buffer and `head`'s first window.
        let digest = json!("d".repeat(2 * 256 * 1024 + 17));
        push(&mut lines, |n, prev| {
            build_line(n, prev, t0(), "asked", &[("digest", digest.clone())])
        });
        push(&mut lines, |n, prev| line_after(n, prev, ""));
        let b = bytes(&lines);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        std::fs::write(&path, &b).unwrap();
        let v = verify_file(&path, None).unwrap().unwrap();
        assert_eq!(v.head.n, 32);
        // head must find a last line longer than its first window.
        std::fs::write(&path, bytes(&lines[..31])).unwrap();
        assert_eq!(
            head(&path).unwrap(),
            Ok(Head {
                n: 31,
                h: lines[30].h.clone()
            })
        );
    }

    #[test]
    fn torn_tail_is_reported_repaired_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let lines = journal(200);
        let mut b = bytes(&lines[..199]);
        let partial = &lines[199].text.as_bytes()[..123];
        b.extend_from_slice(partial);
        std::fs::write(&path, &b).unwrap();
        assert_eq!(
            verify_file(&path, None).unwrap(),
            Err(Problem::Torn { line: 200 })
        );
        assert_eq!(head(&path).unwrap(), Err(Problem::Torn { line: 200 }));
        assert_eq!(repair_torn_tail(&path).unwrap(), 123);
        assert_eq!(repair_torn_tail(&path).unwrap(), 0);
        let v = verify_file(&path, None).unwrap().unwrap();
        assert_eq!(v.head.n, 199);
        assert_eq!(v.head.h, lines[198].h);

        // A whole line that lost only its newline is torn too.
        let mut b = bytes(&lines[..3]);
        b.pop();
        std::fs::write(&path, &b).unwrap();
        assert_eq!(verify_bytes(&b, None), Err(Problem::Torn { line: 3 }));
        let (j, cut) = JournalFile::open(&path).unwrap();
        assert_eq!(cut, lines[2].text.len() as u64 - 1);
        assert_eq!(
            *j.head(),
            Head {
                n: 2,
                h: lines[1].h.clone()
            }
        );

        // A file that is nothing but a fragment is cut to empty.
        std::fs::write(&path, &lines[0].text.as_bytes()[..10]).unwrap();
        assert_eq!(
            verify_file(&path, None).unwrap(),
            Err(Problem::Torn { line: 1 })
        );
        let (j, cut) = JournalFile::open(&path).unwrap();
        assert_eq!(cut, 10);
        assert_eq!(*j.head(), Head::genesis());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }

    #[test]
    fn head_reads_the_tail_and_checks_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(head(&path).unwrap(), Ok(Head::genesis()));
        let lines = journal(50);
        std::fs::write(&path, bytes(&lines)).unwrap();
        assert_eq!(
            head(&path).unwrap(),
            Ok(Head {
                n: 50,
                h: lines[49].h.clone()
            })
        );
        // An altered last line, reported with its true number.
        let mut alt = lines.clone();
        alt[49].text = alt[49].text.replacen("\"c-0000", "\"c-1000", 1);
        std::fs::write(&path, bytes(&alt)).unwrap();
        assert_eq!(
            head(&path).unwrap(),
            Err(Problem::HashMismatch { line: 50 })
        );
        // A one-line journal.
        std::fs::write(&path, bytes(&lines[..1])).unwrap();
        assert_eq!(
            head(&path).unwrap(),
            Ok(Head {
                n: 1,
                h: lines[0].h.clone()
            })
        );
        assert!(matches!(
            head(&dir.path().join("absent")),
            Err(JournalError::Io(_))
        ));
    }

    #[test]
    fn journal_file_creates_appends_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consent.jsonl");
        let lines = journal(25);
        {
            let (mut j, cut) = JournalFile::open(&path).unwrap();
            assert_eq!(cut, 0);
            assert_eq!(*j.head(), Head::genesis());
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
            j.append(&lines[..1]).unwrap();
            j.append(&lines[1..10]).unwrap();
            j.append(&[]).unwrap();
            assert_eq!(
                *j.head(),
                Head {
                    n: 10,
                    h: lines[9].h.clone()
                }
            );
        }
        let (mut j, cut) = JournalFile::open(&path).unwrap();
        assert_eq!(cut, 0);
        assert_eq!(
            *j.head(),
            Head {
                n: 10,
                h: lines[9].h.clone()
            }
        );
        j.append(&lines[10..]).unwrap();
        drop(j);
        assert_eq!(std::fs::read(&path).unwrap(), bytes(&lines));
        let v = verify_file(&path, None).unwrap().unwrap();
        assert_eq!(
            v.head,
            Head {
                n: 25,
                h: lines[24].h.clone()
            }
        );
        // An existing file keeps its mode.
        std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        let _ = JournalFile::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A damaged last line cannot be continued.
        let mut alt = lines.clone();
        alt[24].text = alt[24].text.replacen("\"c-0000", "\"c-1000", 1);
        std::fs::write(&path, bytes(&alt)).unwrap();
        assert!(matches!(
            JournalFile::open(&path),
            Err(JournalError::Damaged(Problem::HashMismatch { line: 25 }))
        ));
    }

    #[test]
    fn append_refuses_lines_that_do_not_continue_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let lines = journal(5);
        let (mut j, _) = JournalFile::open(&path).unwrap();
        j.append(&lines[..2]).unwrap();
        let refused = |j: &mut JournalFile, batch: &[Line], why: &str| match j.append(batch) {
            Err(JournalError::Refused(msg)) => assert!(msg.contains(why), "{msg}"),
            other => panic!("expected refusal ({why}), got {other:?}"),
        };
        // Skipping a number, repeating one, starting over.
        refused(&mut j, &lines[3..4], "n is 4, the journal's next line is 3");
        refused(&mut j, &lines[1..2], "n is 2, the journal's next line is 3");
        refused(&mut j, &lines[..1], "n is 1");
        // Right number, wrong prev.
        let stray = line_after(3, &lines[0].h, "");
        refused(&mut j, &[stray], "prev is not the h of line 2");
        // A gap inside a batch refuses the whole batch.
        refused(&mut j, &[lines[2].clone(), lines[4].clone()], "n is 5");
        // Text altered after building, or fields that disagree with it.
        let mut alt = lines[2].clone();
        alt.text = alt.text.replacen("\"c-0000", "\"c-1000", 1);
        refused(&mut j, &[alt], "h does not match");
        let mut lie = lines[2].clone();
        lie.h = lines[3].h.clone();
        refused(&mut j, &[lie], "n or h differs");
        let mut two = lines[2].clone();
        two.text.push_str(&lines[3].text);
        refused(&mut j, &[two], "more than one line");
        let mut bare = lines[2].clone();
        bare.text.pop();
        refused(&mut j, &[bare], "newline");
        // Nothing was written by any refusal.
        assert_eq!(std::fs::read(&path).unwrap(), bytes(&lines[..2]));
        j.append(&lines[2..]).unwrap();
        assert_eq!(
            verify_file(&path, None).unwrap().unwrap().head.h,
            lines[4].h
        );
    }
}
