//! The session's side of the socket: `consentd ask`, `status` and `list`.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::output::{errln, Stream};

/// The socket used when neither `--socket` nor `$CONSENTD_SOCKET` names one (the config's default).
pub const DEFAULT_SOCKET: &str = "/run/consentd/consent.sock";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to consentd at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("lost the connection to consentd: {0}")]
    Io(#[from] std::io::Error),
    #[error("consentd sent a line that is not JSON: {0}")]
    BadLine(String),
    #[error("consentd closed the connection without an answer")]
    NoAnswer,
}

/// The socket path: `--socket`, else `$CONSENTD_SOCKET`, else the default.
pub fn socket_path(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("CONSENTD_SOCKET").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

/// Sends one request and returns the final (last) answer line, calling `on_line` for each line.
pub async fn request(
    socket: &Path,
    request: &Value,
    mut on_line: impl FnMut(&Value),
) -> Result<Value, ClientError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|source| ClientError::Connect {
            path: socket.display().to_string(),
            source,
        })?;
    let (reader, mut writer) = stream.into_split();
    let mut frame = serde_json::to_vec(request).map_err(|e| ClientError::BadLine(e.to_string()))?;
    frame.push(b'\n');
    // The daemon may refuse and close before reading everything (a too large frame): its answer
    // is still waiting to be read, so a failed write is not the end.
    let written = writer.write_all(&frame).await;
    let mut lines = BufReader::new(reader).lines();
    let mut last: Option<Value> = None;
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            // Linux resets a Unix socket whose peer closed with our request unread (a refusal
            // sent before reading it all); the answer was delivered before the reset.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset && last.is_some() => {
                break
            }
            Err(error) => return Err(error.into()),
        };
        let value: Value = serde_json::from_str(&line).map_err(|_| ClientError::BadLine(line))?;
        on_line(&value);
        last = Some(value);
    }
    match last {
        Some(value) => Ok(value),
        None => {
            written?;
            Err(ClientError::NoAnswer)
        }
    }
}

/// The exit code for an ask's final status (SPEC §2).
pub fn exit_code_for(status: &str) -> u8 {
    match status {
        "executed" | "granted" => 0,
        "refused" => 3,
        "declined" => 4,
        "expired" => 5,
        "failed" => 6,
        "outcome_unknown" => 7,
        "pending" | "card_shown" | "running" => 8,
        _ => 1,
    }
}

/// Shows the wait on stderr: a line that updates in place on a terminal, one line otherwise.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    terminal: bool,
    shown: bool,
    id: Option<String>,
    status: String,
}

impl Progress {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
            id: None,
            status: String::new(),
        }
    }

    /// Notes a line from the daemon.
    pub fn update(&mut self, line: &Value) {
        if let Some(id) = line.get("id").and_then(Value::as_str) {
            self.id = Some(id.to_owned());
        }
        if let Some(status) = line.get("status").and_then(Value::as_str) {
            self.status = status.to_owned();
        }
    }

    /// Redraws the line (on a terminal) or prints it once (otherwise).
    pub fn tick(&mut self) {
        if self.id.is_none() || crate::client::exit_code_for(&self.status) != 8 {
            return;
        }
        let id = self.id.as_deref().unwrap_or("?");
        let elapsed = self.started.elapsed().as_secs();
        if self.terminal {
            crate::output::write(
                Stream::Stderr,
                format_args!(
                    "\r\x1b[2Kwaiting for the owner's answer on {id} ({}) {}:{:02}",
                    self.status,
                    elapsed / 60,
                    elapsed % 60
                ),
                "",
            );
            self.shown = true;
        } else if !self.shown {
            errln!("waiting for the owner's answer on {id} ({})", self.status);
            self.shown = true;
        }
    }

    pub fn finish(&mut self) {
        if self.terminal && self.shown {
            errln!();
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

/// Sends `request`, showing progress on stderr every second until the final line.
pub async fn request_with_progress(socket: &Path, frame: &Value) -> Result<Value, ClientError> {
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Progress::new()));
    let ticker = {
        let progress = progress.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_secs(1));
            loop {
                interval.tick().await;
                progress.lock().unwrap_or_else(|p| p.into_inner()).tick();
            }
        })
    };
    let answer = request(socket, frame, |line| {
        progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .update(line);
    })
    .await;
    ticker.abort();
    progress.lock().unwrap_or_else(|p| p.into_inner()).finish();
    answer
}

/// A media type for an attachment, by its file name's extension.
pub fn guess_media_type(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        Some("json") => "application/json",
        Some("txt" | "md") => "text/plain",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("mp4") => "video/mp4",
        Some("mp3") => "audio/mpeg",
        Some("ogg") => "audio/ogg",
        Some("zip") => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_spec() {
        let table = [
            ("executed", 0),
            ("granted", 0),
            ("refused", 3),
            ("declined", 4),
            ("expired", 5),
            ("failed", 6),
            ("outcome_unknown", 7),
            ("pending", 8),
            ("error", 1),
        ];
        for (status, code) in table {
            assert_eq!(exit_code_for(status), code, "{status}");
        }
    }

    #[test]
    fn media_types_by_extension() {
        assert_eq!(guess_media_type(Path::new("a/cover.PNG")), "image/png");
        assert_eq!(guess_media_type(Path::new("x.jpeg")), "image/jpeg");
        assert_eq!(
            guess_media_type(Path::new("noext")),
            "application/octet-stream"
        );
    }
}
