//! The journal's file: finding its head from the tail, cutting a torn tail after a crash, and
//! appending lines durably ([`JournalFile`]). The format and its verification are
//! consentd-core's, reached through the parent module.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::*;

/// The last line's `n` and `h`. Reads only the tail of the file and checks
/// the last line's shape and own hash (not its link to the line before).
/// When the last line is bad the whole file is verified, so the problem
/// reported is the first bad line with its true number.
///
/// Opened as `journal verify` opens it ([`open_to_verify`]): the anchor it gives is one to verify
/// against later, so it is never that of a file a symlink points at, nor waits on a FIFO.
pub fn head(path: &Path) -> Result<Result<Head, Problem>, JournalError> {
    let file = open_to_verify(path)?;
    Ok(head_at(&file)?)
}

fn head_at(file: &File) -> io::Result<Result<Head, Problem>> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Ok(Head::genesis()));
    }
    let mut window = HEAD_WINDOW;
    let mut buf = Vec::new();
    let line_start = loop {
        let from = len.saturating_sub(window);
        buf.resize((len - from) as usize, 0);
        file.read_exact_at(&mut buf, from)?;
        if buf.last() != Some(&b'\n') {
            return full_verify_for_head(file);
        }
        match memchr::memrchr(b'\n', &buf[..buf.len() - 1]) {
            Some(i) => break i + 1,
            None if from == 0 => break 0,
            None => window = window.saturating_mul(2),
        }
    };
    match head_of_line(&buf[line_start..buf.len() - 1]) {
        Some(head) => Ok(Ok(head)),
        None => full_verify_for_head(file),
    }
}

fn full_verify_for_head(file: &File) -> io::Result<Result<Head, Problem>> {
    // If the file verifies after all, it changed under us; its verified
    // head is then the right answer.
    Ok(verify_read(ReadAt { file, pos: 0 }, None)?.map(|v| v.head))
}

/// Cut a torn tail back to the last `'\n'`. Returns the number of bytes cut
/// (0 when whole). The cut is fsynced before returning.
pub fn repair_torn_tail(path: &Path) -> Result<u64, JournalError> {
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    Ok(cut_torn_tail(&file)?)
}

fn cut_torn_tail(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(0);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut end = len;
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let from = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - from) as usize];
        file.read_exact_at(chunk, from)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            break from + i as u64 + 1;
        }
        end = from;
    };
    file.set_len(keep)?;
    file.sync_all()?;
    Ok(len - keep)
}

/// An open journal for appending. Knows its head.
#[derive(Debug)]
pub struct JournalFile {
    file: File,
    head: Head,
    /// Bytes known to be on disk, whole lines only.
    len: u64,
    poisoned: bool,
}

impl JournalFile {
    /// Open (creating it mode 0640 if absent), cut a torn tail, read the
    /// head. Returns the journal and the number of bytes cut, for the
    /// daemon's `started` line. Fails with `Damaged` when the last line
    /// cannot be continued.
    pub fn open(path: &Path) -> Result<(JournalFile, u64), JournalError> {
        // No symlink is followed to the journal: one planted in its place would send the
        // daemon's lines (and their tail cut) to another file.
        let nofollow = nix::fcntl::OFlag::O_NOFOLLOW.bits();
        let created = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(JOURNAL_MODE)
            .custom_flags(nofollow)
            .open(path);
        let (file, cut) = match created {
            Ok(file) => {
                // The umask may have narrowed the mode given to open(2).
                file.set_permissions(Permissions::from_mode(JOURNAL_MODE))?;
                file.sync_all()?;
                sync_parent_dir(path)?;
                (file, 0)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let file = OpenOptions::new()
                    .read(true)
                    .append(true)
                    .custom_flags(nofollow)
                    .open(path)?;
                let cut = cut_torn_tail(&file)?;
                (file, cut)
            }
            Err(e) => return Err(e.into()),
        };
        let head = head_at(&file)?.map_err(JournalError::Damaged)?;
        let len = file.metadata()?.len();
        Ok((
            JournalFile {
                file,
                head,
                len,
                poisoned: false,
            },
            cut,
        ))
    }

    /// The last line on disk (genesis for an empty journal).
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Append lines that continue the chain from the head: each line's `n`,
    /// `prev`, `h` and text are checked, all are written, then one fsync.
    /// Returns only after the fsync. On a failed write or fsync the handle is
    /// poisoned and the journal must be reopened.
    pub fn append(&mut self, lines: &[Line]) -> Result<(), JournalError> {
        if self.poisoned {
            return Err(JournalError::Poisoned);
        }
        let Some(last) = lines.last() else {
            return Ok(());
        };
        check_continues(&self.head, lines).map_err(JournalError::Refused)?;
        let mut out = Vec::with_capacity(lines.iter().map(|l| l.text.len()).sum());
        for line in lines {
            out.extend_from_slice(line.text.as_bytes());
        }
        let written = (&self.file)
            .write_all(&out)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Try to leave whole lines only, so a reopen sees the old head
            // rather than a torn tail; either way this handle is done.
            self.poisoned = true;
            let _ = self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.sync_data());
            return Err(e.into());
        }
        self.len += out.len() as u64;
        self.head = Head {
            n: last.n,
            h: last.h.clone(),
        };
        Ok(())
    }
}

fn sync_parent_dir(path: &Path) -> io::Result<()> {
    // Makes the new directory entry durable, not just the file's data.
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}
