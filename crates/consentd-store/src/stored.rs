//! An attachment's stored copy, read back and checked against the SHA-256 the owner is shown.
//!
//! The store keeps each attachment under `state_dir/attachments/<sha256>` from the moment its ask
//! is stored. Two readers come later: the sender, which uploads it as a photo or document just
//! before the card, and the executor, which copies it into the run's directory after the yes.
//! Anything that can write to the state directory in between could change it, and a yes is for
//! exactly the bytes whose digest the card shows. So both readers go through
//! [`open`] and [`copy`]: the file is opened without following a symbolic link, must be a
//! regular file, and is hashed and counted while it is read; only a copy whose full SHA-256 and
//! size are the record's is good. What the caller does with a bad one is its own: the sender
//! drops the card as undeliverable, the executor does not start the command.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use sha2::{Digest as _, Sha256};

/// Read and written in pieces of this size, so a 20 MiB attachment never sits in memory twice.
const CHUNK: usize = 64 * 1024;
/// Hex digits of a SHA-256 that messages show, as many as the card shows.
const SHOWN_HEX: usize = 12;

/// What the record says the stored copy is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Lower-case hex, all 64 digits.
    pub sha256: String,
    pub bytes: u64,
}

/// Why a stored copy is not good.
#[derive(Debug, thiserror::Error)]
pub enum CopyProblem {
    #[error("its stored copy is gone")]
    Missing,
    #[error("its stored copy was replaced by a symbolic link")]
    Symlink,
    #[error("its stored copy is no longer a regular file")]
    NotAFile,
    #[error(
        "expected sha256 {} ({} bytes), found sha256 {} ({} bytes)",
        shown(&expected.sha256),
        expected.bytes,
        shown(found_sha256),
        found_bytes
    )]
    Changed {
        expected: Expected,
        found_sha256: String,
        found_bytes: u64,
    },
    #[error("cannot read its stored copy: {0}")]
    Read(io::Error),
    #[error("cannot write its copy: {0}")]
    Write(io::Error),
}

impl CopyProblem {
    /// True when the stored copy is no longer what the owner is shown (as opposed to a file
    /// that could not be read or written).
    pub fn is_change(&self) -> bool {
        matches!(
            self,
            CopyProblem::Missing
                | CopyProblem::Symlink
                | CopyProblem::NotAFile
                | CopyProblem::Changed { .. }
        )
    }
}

fn shown(sha256: &str) -> &str {
    sha256.get(..SHOWN_HEX).unwrap_or(sha256)
}

/// Opens a stored copy for reading. A symbolic link in its place is refused rather than
/// followed, and so is anything but a regular file: `O_NONBLOCK` keeps a FIFO put there from
/// blocking the open, and has no effect on a regular file's reads.
pub fn open(path: &Path) -> Result<File, CopyProblem> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|error| match error.raw_os_error().map(Errno::from_raw) {
            _ if error.kind() == io::ErrorKind::NotFound => CopyProblem::Missing,
            Some(Errno::ELOOP) => CopyProblem::Symlink,
            _ => CopyProblem::Read(error),
        })?;
    let meta = file.metadata().map_err(CopyProblem::Read)?;
    if !meta.file_type().is_file() {
        return Err(CopyProblem::NotAFile);
    }
    Ok(file)
}

/// Copies `source` into `sink` while hashing and counting it, and checks the result against
/// `expected`. At most `expected.bytes` bytes reach `sink`; a longer source is read to its end
/// only to report what it now is.
pub fn copy(
    mut source: File,
    expected: &Expected,
    sink: &mut impl Write,
) -> Result<(), CopyProblem> {
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(CopyProblem::Read(error)),
        };
        let piece = &chunk[..n];
        hasher.update(piece);
        let room = expected.bytes.saturating_sub(total);
        let keep = usize::try_from(room).map_or(n, |room| room.min(n));
        sink.write_all(&piece[..keep]).map_err(CopyProblem::Write)?;
        total += n as u64;
    }
    let found = hex::encode(hasher.finalize());
    if total != expected.bytes || found != expected.sha256 {
        return Err(CopyProblem::Changed {
            expected: expected.clone(),
            found_sha256: found,
            found_bytes: total,
        });
    }
    Ok(())
}

/// The whole stored copy in memory, checked (the sender uploads it in one piece).
pub fn read(path: &Path, expected: &Expected) -> Result<Vec<u8>, CopyProblem> {
    let source = open(path)?;
    // The size is the record's, not the file's: a grown file cannot make this allocate more.
    let mut bytes = Vec::with_capacity(usize::try_from(expected.bytes).unwrap_or(0));
    copy(source, expected, &mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use consentd_core::digest::Sha256Hash;

    fn expected(bytes: &[u8]) -> Expected {
        Expected {
            sha256: Sha256Hash::of(bytes).to_hex(),
            bytes: bytes.len() as u64,
        }
    }

    #[test]
    fn an_intact_copy_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        // Over a few chunks, and not a multiple of one.
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * CHUNK + 17).collect();
        std::fs::write(&path, &data).unwrap();
        assert_eq!(read(&path, &expected(&data)).unwrap(), data);
    }

    #[test]
    fn a_changed_copy_is_refused_with_what_it_now_is() {
        let dir = tempfile::tempdir().unwrap();
        let original = b"the bytes the owner was shown".to_vec();
        let mut flipped = original.clone();
        flipped[3] ^= 1;
        let mut longer = original.clone();
        longer.extend_from_slice(b" and more");
        let cases: [(&str, &[u8]); 4] = [
            ("same size, other bytes", &flipped),
            ("truncated", &original[..10]),
            ("grown", &longer),
            ("emptied", b""),
        ];
        let want = expected(&original);
        for (what, now) in cases {
            let path = dir.path().join("a");
            std::fs::write(&path, now).unwrap();
            let problem = read(&path, &want).unwrap_err();
            assert!(problem.is_change(), "{what}: {problem}");
            let found = Sha256Hash::of(now).to_hex();
            assert_eq!(
                problem.to_string(),
                format!(
                    "expected sha256 {} ({} bytes), found sha256 {} ({} bytes)",
                    &want.sha256[..12],
                    original.len(),
                    &found[..12],
                    now.len()
                ),
                "{what}"
            );
        }
    }

    #[test]
    fn only_the_full_digest_is_good() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"abc").unwrap();
        let mut want = expected(b"abc");
        // The same first 12 digits (all the card shows) but not the rest.
        let last = want.sha256.pop().unwrap();
        want.sha256.push(if last == '0' { '1' } else { '0' });
        assert!(matches!(
            read(&path, &want),
            Err(CopyProblem::Changed { .. })
        ));
    }

    #[test]
    fn anything_but_the_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"abc").unwrap();
        let want = expected(b"abc");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(read(&link, &want), Err(CopyProblem::Symlink)));

        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(read(&fifo, &want), Err(CopyProblem::NotAFile)));

        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(matches!(read(&sub, &want), Err(CopyProblem::NotAFile)));

        assert!(matches!(
            read(&dir.path().join("gone"), &want),
            Err(CopyProblem::Missing)
        ));
    }
}
