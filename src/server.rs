//! The Unix socket: binding it safely, who may talk, framing, caps and timeouts, shutdown.
//!
//! One request per connection: a JSON line of at most `max_request_bytes`, read within a time
//! limit; the answer is one or more JSON lines, the last one final. A bigger frame is refused
//! `too_large` as soon as the cap is passed, without reading the rest.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::intake::{Intake, Reply};
use crate::protocol::Response;
use crate::refusal::{Reason, Refusal};

/// How long a client may take to send its whole request line.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to accept an answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once, waiting ones included. Idle clients cost a task each, so this is
/// generous; the read timeout frees slots held by clients that never send.
pub const MAX_CONNECTIONS: usize = 4096;

/// The intake's limits; the daemon uses the constants above, tests shrink them.
#[derive(Debug, Clone)]
pub struct IntakeLimits {
    pub max_frame_bytes: u64,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub max_connections: usize,
    /// Peers allowed on the socket; empty allows any that can open it.
    pub allowed_uids: Vec<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another process is listening on {0}; is consentd already running?")]
    InUse(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    #[error("cannot prepare the socket {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A bound socket and the identity of its file, so shutdown removes only our own.
#[derive(Debug)]
pub struct BoundSocket {
    pub listener: std::os::unix::net::UnixListener,
    pub path: PathBuf,
    inode: (u64, u64),
}

impl BoundSocket {
    /// Removes the socket file if it is still the one we bound.
    pub fn remove(&self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.inode {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds the socket with mode 0660. A stale socket file is replaced only when nothing listens
/// on it. Call this while the process has one thread: it changes the umask around `bind` (a
/// `chmod` after `bind` would leave a window with the wrong mode).
pub fn bind_socket(path: &Path) -> Result<BoundSocket, SocketError> {
    let io = |source| SocketError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(io)?;
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(SocketError::InUse(path.to_owned())),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(path).map_err(io)?;
                    tracing::info!(socket = %path.display(), "replaced a stale socket file");
                }
                Err(error) => return Err(io(error)),
            }
        }
        Ok(_) => return Err(SocketError::NotASocket(path.to_owned())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(error)),
    }
    use nix::sys::stat::{umask, Mode};
    let previous = umask(Mode::from_bits_truncate(0o117));
    let bound = std::os::unix::net::UnixListener::bind(path);
    umask(previous);
    let listener = bound.map_err(io)?;
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    Ok(BoundSocket {
        listener,
        path: path.to_owned(),
        inode: (meta.dev(), meta.ino()),
    })
}

/// Accepts connections until `shutdown`, then waits for the open ones to finish.
pub async fn run(
    listener: UnixListener,
    intake: Intake,
    limits: IntakeLimits,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let tracker = TaskTracker::new();
    let limits = Arc::new(limits);
    let mut backoff = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = Duration::from_millis(10);
                stream
            }
            Err(error) => {
                // Out of descriptors or memory: back off instead of spinning.
                tracing::warn!(%error, "accept failed; backing off");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracker.spawn(refuse_busy(
                stream,
                limits.max_connections,
                limits.write_timeout,
            ));
            continue;
        };
        let intake = intake.clone();
        let limits = limits.clone();
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            if let Err(error) = serve_connection(stream, &intake, &limits, &shutdown).await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    tracker.close();
    // Waiting clients are told nothing more; their records stay and can be read with `status`.
    tracker.wait().await;
}

async fn refuse_busy(mut stream: UnixStream, cap: usize, write_timeout: Duration) {
    let refusal = Refusal::new(
        Reason::BadRequest,
        format!("the daemon already has {cap} connections open; try again shortly"),
    );
    let line = Response::refused(None, &refusal).to_line();
    let _ = tokio::time::timeout(write_timeout, stream.write_all(line.as_bytes())).await;
}

async fn write_line(
    stream: &mut UnixStream,
    line: &str,
    limits: &IntakeLimits,
) -> std::io::Result<()> {
    tokio::time::timeout(limits.write_timeout, stream.write_all(line.as_bytes()))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "client did not read"))?
}

/// What reading a request frame came to.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    Line(Vec<u8>),
    TooLarge,
    Empty,
}

/// Reads up to the first newline (or the end of input), never holding more than `max + 1`
/// bytes of it.
async fn read_frame(stream: &mut UnixStream, max: u64) -> std::io::Result<Frame> {
    let mut frame = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(if frame.is_empty() {
                Frame::Empty
            } else {
                Frame::Line(frame)
            });
        }
        let data = &chunk[..read];
        if let Some(newline) = data.iter().position(|&b| b == b'\n') {
            frame.extend_from_slice(&data[..newline]);
            return Ok(if frame.len() as u64 > max {
                Frame::TooLarge
            } else {
                Frame::Line(frame)
            });
        }
        frame.extend_from_slice(data);
        if frame.len() as u64 > max {
            return Ok(Frame::TooLarge);
        }
    }
}

async fn serve_connection(
    mut stream: UnixStream,
    intake: &Intake,
    limits: &IntakeLimits,
    shutdown: &CancellationToken,
) -> std::io::Result<()> {
    let credentials = stream.peer_cred()?;
    let uid = credentials.uid();
    if !limits.allowed_uids.is_empty() && !limits.allowed_uids.contains(&uid) {
        // Logged with the pid for the operator; authorised by uid only (pids are reused).
        tracing::warn!(uid, pid = ?credentials.pid(), "peer not on the allow-list");
        let line = "{\"v\":1,\"status\":\"refused\",\"reason\":\"peer_not_allowed\",\
                    \"message\":\"this uid may not use the consentd socket\"}\n";
        return write_line(&mut stream, line, limits).await;
    }
    let frame = match tokio::time::timeout(
        limits.read_timeout,
        read_frame(&mut stream, limits.max_frame_bytes),
    )
    .await
    {
        Err(_) => {
            let refusal = Refusal::new(
                Reason::BadRequest,
                format!(
                    "no complete request line within {}s",
                    limits.read_timeout.as_secs()
                ),
            );
            return write_line(
                &mut stream,
                &Response::refused(None, &refusal).to_line(),
                limits,
            )
            .await;
        }
        Ok(frame) => frame?,
    };
    let frame = match frame {
        Frame::Empty => return Ok(()),
        Frame::TooLarge => {
            let refusal = Refusal::new(
                Reason::TooLarge,
                format!(
                    "the request is larger than max_request_bytes ({} bytes)",
                    limits.max_frame_bytes
                ),
            );
            return write_line(
                &mut stream,
                &Response::refused(None, &refusal).to_line(),
                limits,
            )
            .await;
        }
        Frame::Line(frame) => frame,
    };
    let reply = match intake.handle(uid, &frame).await {
        Ok(reply) => reply,
        Err(error) => {
            tracing::error!(%error, "request failed inside the daemon");
            let line = "{\"v\":1,\"status\":\"error\",\"message\":\"internal error; see the daemon's log\"}\n";
            return write_line(&mut stream, line, limits).await;
        }
    };
    match reply {
        Reply::Final(line) => write_line(&mut stream, &line, limits).await,
        Reply::Wait { first, id, summary } => {
            write_line(&mut stream, &first, limits).await?;
            let (mut reader, _) = stream.split();
            let mut sink = [0u8; 256];
            // The client leaving (EOF or error) ends the wait; anything it sends is ignored.
            let client_gone = async {
                loop {
                    match reader.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => continue,
                    }
                }
            };
            let line = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = client_gone => return Ok(()),
                line = intake.wait_final(&id, summary) => line,
            };
            match line {
                Ok(line) => write_line(&mut stream, &line, limits).await,
                Err(error) => {
                    tracing::error!(%error, record = %id, "waiting for a record failed");
                    Ok(())
                }
            }
        }
    }
}
