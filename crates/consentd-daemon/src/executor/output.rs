//! What the daemon keeps of a command's output: its first stdout line (the result shown on the
//! card) and a bounded stderr tail, read to the end so the command never blocks on a pipe, and
//! how its exit is described.

use super::*;

/// Something that keeps part of a pipe's bytes.
pub(super) trait Keep {
    fn keep(&mut self, chunk: &[u8]);
}

/// Reads a pipe to its end, handing each chunk to `keep`; the pipe is always read to the end
/// so the writer never blocks on it.
pub(super) async fn drain(pipe: Option<impl AsyncRead + Unpin>, keep: &mut impl Keep) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => keep.keep(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Keeps stdout up to its first `\n` (or [`STDOUT_KEEP`] bytes), drops the rest.
#[derive(Debug, Default)]
pub(super) struct FirstLine {
    buf: Vec<u8>,
    /// A `\n` was seen: `buf` is the whole first line.
    ended: bool,
}

impl Keep for FirstLine {
    fn keep(&mut self, chunk: &[u8]) {
        if self.ended || self.buf.len() >= STDOUT_KEEP {
            return;
        }
        let room = STDOUT_KEEP - self.buf.len();
        let window = &chunk[..chunk.len().min(room)];
        match window.iter().position(|&b| b == b'\n') {
            Some(i) => {
                self.buf.extend_from_slice(&window[..i]);
                self.ended = true;
            }
            None => self.buf.extend_from_slice(window),
        }
    }
}

impl FirstLine {
    pub(super) fn result(&self) -> Option<String> {
        // Without a `\n`, a full buffer is a cut line (its end is not the line's end); a
        // short one is all of stdout, whose end is the line's end.
        let whole = self.ended || self.buf.len() < STDOUT_KEEP;
        let mut bytes = &self.buf[..];
        if whole {
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        }
        let line = String::from_utf8_lossy(bytes);
        let cut: String = line.chars().take(RESULT_MAX_CHARS).collect();
        (!cut.is_empty()).then_some(cut)
    }
}

/// Keeps the last [`STDERR_KEEP`] bytes of stderr.
#[derive(Debug, Default)]
pub(super) struct StderrTail {
    buf: Vec<u8>,
    cut: bool,
}

impl Keep for StderrTail {
    fn keep(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
        // Trimming only once twice the limit is reached keeps the copying amortised.
        if self.buf.len() > 2 * STDERR_KEEP {
            let excess = self.buf.len() - STDERR_KEEP;
            self.buf.drain(..excess);
            self.cut = true;
        }
    }
}

impl StderrTail {
    pub(super) fn finish(mut self) -> String {
        if self.buf.len() > STDERR_KEEP {
            let excess = self.buf.len() - STDERR_KEEP;
            self.buf.drain(..excess);
            self.cut = true;
        }
        let mut bytes = &self.buf[..];
        if self.cut {
            // Start on a character, not in the middle of a cut one (at most 3 bytes).
            let skip = bytes
                .iter()
                .take(3)
                .take_while(|&&b| b & 0xC0 == 0x80)
                .count();
            bytes = &bytes[skip..];
        }
        let text = String::from_utf8_lossy(bytes).into_owned();
        if text.len() <= STDERR_KEEP {
            return text;
        }
        // Invalid bytes grow into 3-byte U+FFFD; cut again from the front on a boundary.
        let mut start = text.len() - STDERR_KEEP;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_owned()
    }
}

pub(super) fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exit status {code}")
    } else if let Some(sig) = status.signal() {
        format!("killed by signal {sig}")
    } else {
        status.to_string()
    }
}
