//! The session's side of the socket: `consentd ask`, `status` and `list`.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::output::{errln, Stream};

/// The socket used when neither `--socket` nor `$CONSENTD_SOCKET` names one (the config's default).
pub(crate) const DEFAULT_SOCKET: &str = "/run/consentd/consent.sock";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon answered: the whole message, with what to check ([`no_daemon`]).
    #[error("{0}")]
    Connect(String),
    /// The OS error is the source, so a chain printed with `{:#}` says it once.
    #[error("lost the connection to consentd")]
    Io(#[from] std::io::Error),
    #[error("consentd sent a line that is not JSON: {0}")]
    BadLine(String),
    #[error("consentd closed the connection without an answer")]
    NoAnswer,
}

/// The socket a client talks to, and where its path came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Socket {
    pub path: PathBuf,
    /// `--socket`, `$CONSENTD_SOCKET` or the default: said when nothing answers there.
    pub from: SocketFrom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketFrom {
    Flag,
    Env,
    Default,
}

impl SocketFrom {
    fn said(self) -> &'static str {
        match self {
            SocketFrom::Flag => "from --socket",
            SocketFrom::Env => "from $CONSENTD_SOCKET",
            SocketFrom::Default => "the default; neither --socket nor $CONSENTD_SOCKET is set",
        }
    }
}

/// The socket: `--socket`, else `$CONSENTD_SOCKET` (unless empty), else the default.
pub fn socket_path(flag: Option<PathBuf>) -> Socket {
    let env = std::env::var_os("CONSENTD_SOCKET").filter(|path| !path.is_empty());
    let (path, from) = match (flag, env) {
        (Some(path), _) => (path, SocketFrom::Flag),
        (None, Some(path)) => (PathBuf::from(path), SocketFrom::Env),
        (None, None) => (PathBuf::from(DEFAULT_SOCKET), SocketFrom::Default),
    };
    Socket { path, from }
}

/// What failed when no daemon answered on `socket`, and what to check, in one line: the OS's
/// own words only when there is no better one.
pub(crate) fn no_daemon(socket: &Socket, error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let path = socket.path.display();
    let from = socket.from.said();
    let check = "check that `consentd serve` is running and that $CONSENTD_SOCKET (or --socket) \
                 names the socket its config sets in paths.socket";
    match error.kind() {
        ErrorKind::NotFound => {
            format!("cannot connect to consentd: there is no socket at {path} ({from}); {check}")
        }
        ErrorKind::ConnectionRefused => format!(
            "cannot connect to consentd: nothing is listening on {path} ({from}), a socket left \
             by a daemon that is not running; {check}"
        ),
        ErrorKind::PermissionDenied => format!(
            "cannot connect to consentd: this user may not open {path} ({from}); it must be in \
             the socket's group (`ls -l {path}` shows it: consent-agents in the packaged setup), \
             and log in again after being added"
        ),
        _ => format!("cannot connect to consentd at {path} ({from}): {error}"),
    }
}

/// Sends one request and returns the final (last) answer line, calling `on_line` for each line.
pub async fn request(
    socket: &Socket,
    request: &Value,
    mut on_line: impl FnMut(&Value),
) -> Result<Value, ClientError> {
    let stream = UnixStream::connect(&socket.path)
        .await
        .map_err(|error| ClientError::Connect(no_daemon(socket, &error)))?;
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

/// Exit code: the agent withdrew its ask before the owner answered; nothing ran.
pub(crate) const EXIT_WITHDRAWN: u8 = 9;

/// Exit code: the record is still open (pending, with `--no-wait` or a `status` without `--wait`).
const EXIT_OPEN: u8 = 8;

/// The exit code for an ask's final status (docs/PROTOCOL.md, "The command line").
pub(crate) fn exit_code_for(status: &str) -> u8 {
    match status {
        "executed" | "granted" | "approved" => 0,
        "refused" => 3,
        "declined" => 4,
        "expired" => 5,
        "failed" => 6,
        "outcome_unknown" => 7,
        "withdrawn" => EXIT_WITHDRAWN,
        "pending" | "card_shown" | "running" => EXIT_OPEN,
        _ => 1,
    }
}

/// The exit code for the answer to a request of `op`: an action `granted` is not yet run (the
/// claim is a moment away), so it is still open; a mandate's `granted` is its end.
pub(crate) fn exit_code_for_answer(op: &str, status: &str) -> u8 {
    match (op, status) {
        ("ask", "granted") => EXIT_OPEN,
        _ => exit_code_for(status),
    }
}

/// The exit code for a record as `status` shows it: the ask's code for its state once the record
/// is final, 8 while it is still open (pending, card shown, granted but not yet run, running).
/// A daemon that does not say `final` is taken at its status's word.
pub fn exit_code_for_record(record: &Value) -> u8 {
    let status = record.get("status").and_then(Value::as_str).unwrap_or("");
    match record.get("final").and_then(Value::as_bool) {
        Some(false) => EXIT_OPEN,
        _ => exit_code_for(status),
    }
}

/// Shows the wait on stderr: a line that updates in place on a terminal, one line otherwise.
#[derive(Debug)]
pub(crate) struct Progress {
    started: Instant,
    terminal: bool,
    shown: bool,
    id: Option<String>,
    status: String,
    /// Why the record waits, as last said on stderr.
    waiting: Option<consentd_core::waiting::Waiting>,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Self {
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
            id: None,
            status: String::new(),
            waiting: None,
        }
    }

    /// Notes a line from the daemon.
    pub(crate) fn update(&mut self, line: &Value) {
        if let Some(id) = line.get("id").and_then(Value::as_str) {
            self.id = Some(id.to_owned());
        }
        if let Some(status) = line.get("status").and_then(Value::as_str) {
            self.status = status.to_owned();
        }
        let waiting = crate::waiting::of(line);
        if waiting.is_some() && waiting != self.waiting {
            // The progress line comes first, naming the record the reasons are about.
            if !self.shown {
                self.tick();
            }
            self.say_why(waiting.as_ref());
            self.waiting = waiting;
        }
    }

    /// Prints why the record waits, on a line of its own (the terminal's progress line is
    /// redrawn below it at the next tick).
    fn say_why(&mut self, waiting: Option<&consentd_core::waiting::Waiting>) {
        let Some(waiting) = waiting else { return };
        let id = self.id.as_deref().unwrap_or("?");
        let sentence = crate::waiting::for_person(waiting);
        if self.terminal {
            crate::output::write(Stream::Stderr, format_args!("\r\x1b[2K"), "");
        }
        errln!("{id} waits: {sentence}");
    }

    /// Redraws the line (on a terminal) or prints it once (otherwise).
    pub(crate) fn tick(&mut self) {
        if self.id.is_none() || crate::client::exit_code_for(&self.status) != EXIT_OPEN {
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

    pub(crate) fn finish(&mut self) {
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

/// What a waiting `ask` does when the user presses Ctrl-C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnInterrupt {
    /// Withdraw the open ask: the owner's card says the agent took it back.
    Withdraw,
    /// Leave it open: the owner can still answer it; `status` reads the outcome.
    KeepOpen,
}

/// How a wait with progress ended.
#[derive(Debug)]
pub(crate) enum Waited {
    /// The daemon's final line.
    Final(Value),
    /// Ctrl-C came first: the record's id, when the daemon had named it, and the answer to the
    /// withdraw sent for it (none when the ask is kept open or had no id yet).
    Interrupted {
        id: Option<String>,
        withdrawn: Option<Result<Value, ClientError>>,
    },
}

/// Sends `request`, showing progress on stderr every second until the final line or Ctrl-C.
pub(crate) async fn request_with_progress(
    socket: &Socket,
    frame: &Value,
    on_interrupt: OnInterrupt,
) -> Result<Waited, ClientError> {
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
    });
    let waited = tokio::select! {
        answer = answer => answer.map(Waited::Final),
        _ = tokio::signal::ctrl_c() => {
            let id = progress.lock().unwrap_or_else(|p| p.into_inner()).id.clone();
            let withdrawn = match (on_interrupt, &id) {
                (OnInterrupt::Withdraw, Some(id)) => {
                    let request = serde_json::json!({"v": 1, "op": "withdraw", "id": id});
                    // Bounded, and a second Ctrl-C gives up on it: an interrupted client
                    // must never hang on a daemon that does not answer.
                    let gave_up = || ClientError::Io(std::io::ErrorKind::TimedOut.into());
                    Some(tokio::select! {
                        answer = self::request(socket, &request, |_| {}) => answer,
                        _ = tokio::time::sleep(Duration::from_secs(10)) => Err(gave_up()),
                        _ = tokio::signal::ctrl_c() => Err(gave_up()),
                    })
                }
                _ => None,
            };
            Ok(Waited::Interrupted { id, withdrawn })
        }
    };
    ticker.abort();
    progress.lock().unwrap_or_else(|p| p.into_inner()).finish();
    waited
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

/// The largest file an ask reads from disk: the daemon's ceiling on an attachment
/// (`limits.max_attachment_bytes`).
pub(crate) const MAX_FILE_BYTES: u64 = 20 << 20;

/// A regular file's bytes, at most [`MAX_FILE_BYTES`]: an attachment or a text an agent names by
/// its path (`consentd ask --attach` and `--text-file`, the MCP tool's `attachments`). Opened
/// without blocking (a FIFO would wait forever for a writer), judged by the opened file's own
/// metadata (no swap between a check and the read; /dev/zero is no regular file), and read with
/// a limit (files in /proc say they are empty and are not).
pub fn read_named_file(path: &Path) -> std::io::Result<Vec<u8>> {
    read_regular_file(path, MAX_FILE_BYTES, "a file named in an ask")
}

/// A regular file's bytes, at most `max` of them (`what` names the file in the error), read
/// as [`read_named_file`] reads one.
pub(crate) fn read_regular_file(path: &Path, max: u64, what: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "more than the {max} bytes {what} may have"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
            ("withdrawn", 9),
            ("approved", 0),
            ("error", 1),
        ];
        for (status, code) in table {
            assert_eq!(exit_code_for(status), code, "{status}");
            let as_answer = if status == "granted" { EXIT_OPEN } else { code };
            assert_eq!(
                exit_code_for_answer("ask", status),
                as_answer,
                "ask {status}"
            );
            assert_eq!(
                exit_code_for_answer("mandate", status),
                code,
                "mandate {status}"
            );
        }
    }

    #[test]
    fn a_record_exits_by_its_state_once_final_and_8_while_open() {
        let table = [
            (json!({"status": "executed", "final": true}), 0),
            (json!({"status": "granted", "final": true}), 0),
            (json!({"status": "refused", "final": true}), 3),
            (json!({"status": "declined", "final": true}), 4),
            (json!({"status": "expired", "final": true}), 5),
            (json!({"status": "failed", "final": true}), 6),
            (json!({"status": "outcome_unknown", "final": true}), 7),
            (json!({"status": "pending", "final": false}), 8),
            (json!({"status": "card_shown", "final": false}), 8),
            // An action the owner said yes to, about to run: not a yes to act on.
            (json!({"status": "granted", "final": false}), 8),
            (json!({"status": "running", "final": false}), 8),
            // A daemon from before `final`.
            (json!({"status": "declined"}), 4),
            (json!({"status": "card_shown"}), 8),
        ];
        for (record, code) in table {
            assert_eq!(exit_code_for_record(&record), code, "{record}");
        }
    }

    #[test]
    fn no_daemon_says_what_failed_and_what_to_check_once() {
        use std::io::{Error, ErrorKind};
        let socket = Socket {
            path: PathBuf::from("/run/consentd/consent.sock"),
            from: SocketFrom::Default,
        };
        let table = [
            (
                ErrorKind::NotFound,
                "there is no socket at /run/consentd/consent.sock",
            ),
            (ErrorKind::ConnectionRefused, "nothing is listening on"),
            (ErrorKind::PermissionDenied, "the socket's group"),
        ];
        for (kind, what) in table {
            let message = no_daemon(&socket, &Error::from(kind));
            assert!(
                message.starts_with("cannot connect to consentd"),
                "{message}"
            );
            assert!(message.contains(what), "{kind:?}: {message}");
            assert!(
                message.contains("neither --socket nor $CONSENTD_SOCKET"),
                "{message}"
            );
            assert!(!message.contains("os error"), "{kind:?}: {message}");
        }
        let refused = no_daemon(&socket, &Error::from(ErrorKind::ConnectionRefused));
        assert!(refused.contains("`consentd serve` is running"), "{refused}");
        assert!(refused.contains("paths.socket"), "{refused}");
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
