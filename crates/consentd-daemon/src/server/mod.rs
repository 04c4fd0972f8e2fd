//! The Unix socket: binding it safely, who may talk, framing, caps and timeouts, shutdown.
//!
//! One request per connection: a JSON line of at most `max_request_bytes`, read within a time
//! limit; the answer is one or more JSON lines, the last one final. A bigger frame is refused
//! `too_large` as soon as the cap is passed, without reading the rest. What all connections
//! together may hold, and each uid, is [`budget`]'s.
//!
//! Besides the main socket, each `[[listen]]` socket is served the same way by its own accept
//! loop, with its own allow-list; the connection caps and the bytes in flight are shared by
//! all, and each share is a peer's: a uid through one socket. Every request is handed to the
//! intake with its [`Peer`], so what one socket's peer asked is never another's.

mod budget;

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::budget::{ByteBudget, Exhausted, Held, PeerKey, PeerSlots, BUDGET_WAIT};
use crate::backoff::Backoff;
use crate::intake::{Intake, Next, Reply, SPACING};
use consentd_core::protocol::Response;
use consentd_core::refusal::{Reason, Refusal};
use consentd_store::Peer;

/// How long a client may take to send its whole request line.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to accept an answer.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once, waiting ones included. Idle clients cost a task each, so this is
/// generous; the read timeout frees slots held by clients that never send.
pub(crate) const MAX_CONNECTIONS: usize = 4096;

/// The intake's limits; the daemon uses the constants above, tests shrink them.
#[derive(Debug, Clone)]
pub(crate) struct IntakeLimits {
    pub max_frame_bytes: u64,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub max_connections: usize,
    /// Connections one uid may hold open.
    pub max_connections_per_uid: usize,
    /// Request bytes all connections may hold together (`max_request_bytes_in_flight`).
    pub max_bytes_in_flight: u64,
}

/// A socket the daemon serves and who may use it: the main one, or a labelled one.
#[derive(Debug)]
pub(crate) struct Served {
    pub listener: UnixListener,
    /// Its `[[listen]]` origin; `None` for the main socket.
    pub origin: Option<String>,
    /// Peers allowed on it; empty allows any that can open it.
    pub allowed_uids: Vec<u32>,
}

/// What every socket's connections share: the caps and budgets, and the tasks to wait for.
struct Shared {
    intake: Intake,
    limits: Arc<IntakeLimits>,
    slots: Arc<Semaphore>,
    peers: PeerSlots,
    budget: ByteBudget,
    tracker: TaskTracker,
    shutdown: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SocketError {
    #[error("another process is listening on {0}; is consentd already running?")]
    InUse(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    #[error(
        "the directory of the labelled socket {0} does not exist: make it, with the group of \
         the users that may reach it (docs/REMOTE.md, \"Labelled sockets\"); consentd does not \
         make a directory whose owner and mode only the operator can choose"
    )]
    NoDirectory(PathBuf),
    #[error("cannot prepare the socket {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A bound socket and the identity of its file, so shutdown removes only our own.
#[derive(Debug)]
pub(crate) struct BoundSocket {
    pub listener: std::os::unix::net::UnixListener,
    pub path: PathBuf,
    inode: (u64, u64),
}

impl BoundSocket {
    /// Removes the socket file if it is still the one we bound.
    pub(crate) fn remove(&self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.inode {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds the socket with mode 0660. A stale socket file is replaced only when nothing listens
/// on it. Call this while the process has one thread: it changes the umask around `bind` (a
/// `chmod` after `bind` would leave a window with the wrong mode). The main socket's directory
/// is made when missing (`make_directory`); a labelled socket's never is.
pub(crate) fn bind_socket(path: &Path, make_directory: bool) -> Result<BoundSocket, SocketError> {
    let io = |source| SocketError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() && !make_directory {
            return Err(SocketError::NoDirectory(path.to_owned()));
        }
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

/// Accepts connections on every socket until `shutdown`, then waits for the open ones to
/// finish.
pub(crate) async fn run(
    sockets: Vec<Served>,
    intake: Intake,
    limits: IntakeLimits,
    shutdown: CancellationToken,
) {
    // One more byte than the largest line: a line exactly at the cap is read with its newline.
    let largest = limits.max_frame_bytes.saturating_add(1);
    let total = limits.max_bytes_in_flight.max(largest);
    // A peer's share: half the budget, or one line of the largest size if that is more.
    let share = usize::try_from((total / 2).max(largest)).unwrap_or(usize::MAX);
    let shared = Arc::new(Shared {
        intake,
        slots: Arc::new(Semaphore::new(limits.max_connections)),
        peers: PeerSlots::new(limits.max_connections_per_uid),
        budget: ByteBudget::with_share(total, share),
        tracker: TaskTracker::new(),
        limits: Arc::new(limits),
        shutdown,
    });
    let mut loops = tokio::task::JoinSet::new();
    for (index, socket) in sockets.into_iter().enumerate() {
        loops.spawn(accept(index, socket, shared.clone()));
    }
    while loops.join_next().await.is_some() {}
    shared.tracker.close();
    // Waiting clients are told nothing more; their records stay and can be read with `status`.
    shared.tracker.wait().await;
}

/// One socket's accept loop; `index` tells its peers from the same uids' on other sockets.
async fn accept(index: usize, socket: Served, shared: Arc<Shared>) {
    let Served {
        listener,
        origin,
        allowed_uids,
    } = socket;
    let allowed_uids = Arc::new(allowed_uids);
    let limits = &shared.limits;
    let mut failures = 0;
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                failures = 0;
                stream
            }
            Err(error) => {
                // Out of descriptors or memory: back off instead of spinning.
                tracing::warn!(%error, "accept failed; backing off");
                tokio::time::sleep(Backoff::ACCEPT.after(failures)).await;
                failures += 1;
                continue;
            }
        };
        let Ok(slot) = shared.slots.clone().try_acquire_owned() else {
            shared.tracker.spawn(refuse_busy(
                stream,
                limits.max_connections,
                limits.write_timeout,
            ));
            continue;
        };
        // Taken here, in the order the connections came, so a peer's next connection over its
        // share is the one refused, whatever order the tasks then run in.
        let uid = match stream.peer_cred() {
            Ok(credentials) => credentials.uid(),
            Err(error) => {
                tracing::debug!(%error, "no peer credentials; closing");
                continue;
            }
        };
        let key = PeerKey { socket: index, uid };
        let Some(peer_slot) = shared.peers.try_take(key) else {
            let cap = shared.peers.cap();
            tracing::warn!(uid, origin, cap, "a uid is at its connection cap");
            let refusal = Refusal::new(
                Reason::BadRequest,
                format!(
                    "this uid already has {cap} connections open (max_connections_per_uid); \
                     close one or try again shortly"
                ),
            );
            shared
                .tracker
                .spawn(refuse_at_once(stream, refusal, limits.write_timeout));
            continue;
        };
        let connection = Connection {
            intake: shared.intake.clone(),
            limits: limits.clone(),
            budget: shared.budget.clone(),
            shutdown: shared.shutdown.clone(),
            peer: Peer::through(uid, origin.as_deref()),
            key,
            allowed_uids: allowed_uids.clone(),
        };
        shared.tracker.spawn(async move {
            if let Err(error) = connection.serve(stream).await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(peer_slot);
            drop(slot);
        });
    }
}

async fn refuse_busy(stream: UnixStream, cap: usize, write_timeout: Duration) {
    let refusal = Refusal::new(
        Reason::BadRequest,
        format!("the daemon already has {cap} connections open; try again shortly"),
    );
    refuse_at_once(stream, refusal, write_timeout).await;
}

/// Answers a connection refused before its request is read, and closes it.
async fn refuse_at_once(mut stream: UnixStream, refusal: Refusal, write_timeout: Duration) {
    let line = Response::refused(None, &refusal).to_line();
    let _ = tokio::time::timeout(write_timeout, stream.write_all(line.as_bytes())).await;
}

async fn write_line(
    stream: &mut (impl AsyncWriteExt + Unpin),
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
    /// The bytes in flight budget, or the uid's share of it, had no room for the rest of it.
    Busy(Exhausted),
    Empty,
}

/// Reads up to the first newline (or the end of input), never holding more than `max + 1`
/// bytes of it, and each byte only once `budget` had room for it. The room taken is returned
/// with the line, to be held until the request has been handled.
async fn read_frame(
    stream: &mut UnixStream,
    max: u64,
    budget: &ByteBudget,
    uid: PeerKey,
) -> std::io::Result<(Frame, Held)> {
    let limit = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    let mut frame: Vec<u8> = Vec::new();
    let mut held = Held::default();
    loop {
        // Nothing is allocated for a client until it has sent something.
        stream.readable().await?;
        if frame.capacity() == frame.len() {
            let step = ByteBudget::next_step(frame.len(), limit - frame.len().min(limit));
            if let Err(exhausted) = budget.take(&mut held, uid, step, BUDGET_WAIT).await {
                return Ok((Frame::Busy(exhausted), Held::default()));
            }
            frame.reserve_exact(step);
        }
        let before = frame.len();
        let read = match stream.try_read_buf(&mut frame) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        };
        if read == 0 {
            let frame = if frame.is_empty() {
                Frame::Empty
            } else {
                Frame::Line(frame)
            };
            return Ok((frame, held));
        }
        if let Some(newline) = frame[before..].iter().position(|&b| b == b'\n') {
            frame.truncate(before + newline);
            let frame = if frame.len() as u64 > max {
                Frame::TooLarge
            } else {
                Frame::Line(frame)
            };
            return Ok((frame, held));
        }
        if frame.len() as u64 > max {
            return Ok((Frame::TooLarge, held));
        }
    }
}

/// The refusal of a line the budget, or its uid's share, had no room for.
fn busy_refusal(exhausted: Exhausted, uid: u32) -> Refusal {
    let Exhausted { total, share } = exhausted;
    let message = match share {
        Some(share) => {
            tracing::warn!(
                uid,
                share,
                "a uid is holding its share of the request bytes"
            );
            format!(
                "this uid is holding its share ({share} bytes) of the daemon's {total} request \
                 bytes in flight (max_request_bytes_in_flight); send the request again once its \
                 other requests are read"
            )
        }
        None => {
            tracing::warn!(total, "request bytes in flight at their budget");
            format!(
                "the daemon is holding its budget of {total} request bytes in flight \
                 (max_request_bytes_in_flight); send the request again shortly"
            )
        }
    };
    Refusal::new(Reason::TooLarge, message)
}

/// One connection and what it may use of the daemon.
struct Connection {
    intake: Intake,
    limits: Arc<IntakeLimits>,
    budget: ByteBudget,
    shutdown: CancellationToken,
    /// The uid on the other end and the socket it came by, as the intake sees it.
    peer: Peer,
    /// The same, as the budgets count it.
    key: PeerKey,
    /// Its socket's allow-list; empty allows any uid.
    allowed_uids: Arc<Vec<u32>>,
}

impl Connection {
    async fn serve(self, mut stream: UnixStream) -> std::io::Result<()> {
        let credentials = stream.peer_cred()?;
        let uid = credentials.uid();
        let limits = &*self.limits;
        if !self.allowed_uids.is_empty() && !self.allowed_uids.contains(&uid) {
            // Logged with the pid for the operator; authorised by uid only (pids are reused).
            let origin = self.peer.listener.as_deref();
            tracing::warn!(uid, origin, pid = ?credentials.pid(), "peer not on the allow-list");
            let line = "{\"v\":1,\"status\":\"refused\",\"reason\":\"peer_not_allowed\",\
                        \"message\":\"this uid may not use the consentd socket\"}\n";
            return write_line(&mut stream, line, limits).await;
        }
        let Some((frame, held)) = self.read_request(&mut stream, uid).await? else {
            return Ok(());
        };
        let reply = self.intake.handle(&self.peer, &frame).await;
        // The request's bytes and what was parsed from them are gone: the room is free again
        // while the client waits for its answer.
        drop(frame);
        drop(held);
        match reply {
            Ok(reply) => self.answer(stream, reply).await,
            Err(error) => {
                tracing::error!(%error, "request failed inside the daemon");
                let line = "{\"v\":1,\"status\":\"error\",\"message\":\"internal error; see the daemon's log\"}\n";
                write_line(&mut stream, line, limits).await
            }
        }
    }

    /// The request line, with the budget it holds; `None` when the client was answered
    /// already (a refusal) or left, or the daemon is stopping.
    async fn read_request(
        &self,
        stream: &mut UnixStream,
        uid: u32,
    ) -> std::io::Result<Option<(Vec<u8>, Held)>> {
        let limits = &*self.limits;
        let read = tokio::time::timeout(
            limits.read_timeout,
            read_frame(stream, limits.max_frame_bytes, &self.budget, self.key),
        );
        // A client that has not sent its request does not hold up a shutdown.
        let read = tokio::select! {
            () = self.shutdown.cancelled() => return Ok(None),
            read = read => read,
        };
        let message = match read {
            Err(_) => format!(
                "no complete request line within {}s",
                limits.read_timeout.as_secs()
            ),
            Ok(frame) => match frame? {
                (Frame::Line(frame), held) => return Ok(Some((frame, held))),
                (Frame::Empty, _) => return Ok(None),
                (Frame::TooLarge, _) => {
                    let message = format!(
                        "the request is larger than max_request_bytes ({} bytes)",
                        limits.max_frame_bytes
                    );
                    self.refuse(stream, &Refusal::new(Reason::TooLarge, message))
                        .await?;
                    return Ok(None);
                }
                (Frame::Busy(exhausted), _) => {
                    self.refuse(stream, &busy_refusal(exhausted, uid)).await?;
                    return Ok(None);
                }
            },
        };
        self.refuse(stream, &Refusal::new(Reason::BadRequest, message))
            .await?;
        Ok(None)
    }

    async fn refuse(&self, stream: &mut UnixStream, refusal: &Refusal) -> std::io::Result<()> {
        let line = Response::refused(None, refusal).to_line();
        write_line(stream, &line, &self.limits).await
    }

    /// Sends the reply; for one that waits, an interim line each time why it waits changes (at
    /// most one per [`SPACING`]) and the final line when the record ends, unless the client
    /// leaves or the daemon stops first.
    async fn answer(&self, mut stream: UnixStream, reply: Reply) -> std::io::Result<()> {
        let limits = &*self.limits;
        let (first, id, summary, mut shown) = match reply {
            Reply::Final(line) => return write_line(&mut stream, &line, limits).await,
            Reply::Wait {
                first,
                id,
                summary,
                waiting,
            } => (first, id, summary, waiting),
        };
        write_line(&mut stream, &first, limits).await?;
        let mut not_before = tokio::time::Instant::now() + SPACING;
        let (mut reader, mut writer) = stream.split();
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
        tokio::pin!(client_gone);
        loop {
            let next = tokio::select! {
                () = self.shutdown.cancelled() => return Ok(()),
                () = &mut client_gone => return Ok(()),
                next = self.intake.wait_next(&id, summary, shown.as_ref(), not_before) => next,
            };
            match next {
                Ok(Next::Final(line)) => return write_line(&mut writer, &line, limits).await,
                Ok(Next::Interim { line, waiting }) => {
                    write_line(&mut writer, &line, limits).await?;
                    shown = Some(waiting);
                    not_before = tokio::time::Instant::now() + SPACING;
                }
                Err(error) => {
                    tracing::error!(%error, record = %id, "waiting for a record failed");
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::clock::SystemClock;

    const CONFIG: &str = r#"
[owner]
telegram_id = 42
[paths]
state_dir = "/nonexistent"
"#;

    /// A server on a temp socket with the given limits; the listener is bound before it runs, so
    /// connections made before `start` wait in the backlog.
    struct Harness {
        dir: tempfile::TempDir,
        listener: Option<UnixListener>,
        shutdown: CancellationToken,
    }

    impl Harness {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let listener = UnixListener::bind(dir.path().join("s.sock")).unwrap();
            Harness {
                dir,
                listener: Some(listener),
                shutdown: CancellationToken::new(),
            }
        }

        async fn connect(&self) -> UnixStream {
            UnixStream::connect(self.dir.path().join("s.sock"))
                .await
                .unwrap()
        }

        fn start(&mut self, limits: IntakeLimits) -> tokio::task::JoinHandle<()> {
            let config = consentd_core::config::parse(CONFIG, "test").unwrap();
            let (store, _thread, _) = consentd_store::Store::open(
                self.dir.path(),
                &self.dir.path().join("j.jsonl"),
                chrono::Utc::now(),
            )
            .unwrap();
            let intake = Intake {
                config: Arc::new(config),
                store,
                clock: Arc::new(SystemClock),
                owner: {
                    let owner = crate::owner::SharedOwner::default();
                    owner.set_owner(Some(crate::owner::Owner {
                        id: 42,
                        language: consentd_core::locale::Language::En,
                    }));
                    owner
                },
                locales: Arc::new(consentd_core::locale::Locales::new().unwrap()),
                handoff: tokio::sync::mpsc::unbounded_channel().0,
                reach: Default::default(),
            };
            let main = Served {
                listener: self.listener.take().unwrap(),
                origin: None,
                allowed_uids: Vec::new(),
            };
            tokio::spawn(run(vec![main], intake, limits, self.shutdown.clone()))
        }
    }

    fn limits(max_connections: usize) -> IntakeLimits {
        IntakeLimits {
            max_frame_bytes: 1024,
            // Long enough never to fire in the tests on the real clock.
            read_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_connections,
            max_connections_per_uid: max_connections,
            max_bytes_in_flight: 64 * 1024 * 1024,
        }
    }

    /// The last answer line. A refusal sent before the request was read in full ends in a
    /// reset after the answer (the daemon closes with the rest unread), as clients know.
    async fn answer(stream: &mut UnixStream) -> serde_json::Value {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !bytes.is_empty() => {
                    break
                }
                Err(e) => panic!("reading the answer: {e}"),
            }
        }
        let text = String::from_utf8(bytes).unwrap();
        serde_json::from_str(text.lines().last().expect("an answer line")).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_stalls_is_answered_and_closed_after_the_read_timeout() {
        let mut harness = Harness::new();
        let mut silent = harness.connect().await;
        let mut partial = harness.connect().await;
        partial.write_all(b"{\"v\":1,\"op\":").await.unwrap();
        let started = tokio::time::Instant::now();
        let server = harness.start(limits(8));
        for stream in [&mut silent, &mut partial] {
            let refusal = answer(stream).await;
            assert_eq!(refusal["reason"], "bad_request");
            assert_eq!(refusal["message"], "no complete request line within 10s");
        }
        // The paused clock moved exactly to the timeout: no real time was slept through.
        assert!(started.elapsed() >= Duration::from_secs(10));
        harness.shutdown.cancel();
        server.await.unwrap();
    }

    // On the real clock: a paused clock would advance past the holders' read timeout while the
    // store's thread works. Nothing here waits for a timer.
    #[tokio::test]
    async fn connections_over_the_cap_are_refused_at_once() {
        let mut harness = Harness::new();
        let mut holders = vec![harness.connect().await, harness.connect().await];
        let mut over = harness.connect().await;
        let server = harness.start(limits(2));
        let refusal = answer(&mut over).await;
        assert_eq!(refusal["reason"], "bad_request");
        assert!(
            refusal["message"]
                .as_str()
                .unwrap()
                .contains("already has 2 connections open"),
            "{refusal}"
        );
        // The holders are still served when they speak.
        for holder in &mut holders {
            holder
                .write_all(b"{\"v\":1,\"op\":\"list\"}\n")
                .await
                .unwrap();
            assert!(answer(holder).await.get("records").is_some());
        }
        harness.shutdown.cancel();
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_frame_exactly_at_the_cap_is_read_and_one_byte_more_is_too_large() {
        let mut harness = Harness::new();
        let list = b"{\"v\":1,\"op\":\"list\"}";
        let pad = |total: usize| {
            let mut frame = list[..list.len() - 1].to_vec();
            frame.extend(std::iter::repeat_n(b' ', total - list.len()));
            frame.push(b'}');
            frame.push(b'\n');
            frame
        };
        let mut at_cap = harness.connect().await;
        let mut over_cap = harness.connect().await;
        let server = harness.start(limits(8));
        at_cap.write_all(&pad(1024)).await.unwrap();
        assert!(answer(&mut at_cap).await.get("records").is_some());
        let _ = over_cap.write_all(&pad(1025)).await;
        assert_eq!(answer(&mut over_cap).await["reason"], "too_large");
        harness.shutdown.cancel();
        server.await.unwrap();
    }

    // On the real clock, like the cap test above; nothing waits for a timer.
    #[tokio::test]
    async fn a_uid_at_its_own_cap_is_refused_while_the_socket_has_room() {
        let mut harness = Harness::new();
        let mut holders = vec![harness.connect().await, harness.connect().await];
        let mut over = harness.connect().await;
        let server = harness.start(IntakeLimits {
            max_connections_per_uid: 2,
            ..limits(8)
        });
        let refusal = answer(&mut over).await;
        assert_eq!(refusal["reason"], "bad_request");
        let message = refusal["message"].as_str().unwrap();
        assert!(
            message.contains("this uid already has 2 connections open"),
            "{refusal}"
        );
        for holder in &mut holders {
            holder
                .write_all(b"{\"v\":1,\"op\":\"list\"}\n")
                .await
                .unwrap();
            assert!(answer(holder).await.get("records").is_some());
        }
        // Their slots are given back: the uid is served again.
        let mut again = harness.connect().await;
        again
            .write_all(b"{\"v\":1,\"op\":\"list\"}\n")
            .await
            .unwrap();
        assert!(answer(&mut again).await.get("records").is_some());
        harness.shutdown.cancel();
        server.await.unwrap();
    }

    /// A request the intake refuses before it reaches the store, so the paused clock has no
    /// store thread to outrun.
    const UNKNOWN_OP: &[u8] = b"{\"v\":1,\"op\":\"nope\"}\n";

    #[tokio::test(start_paused = true)]
    async fn bytes_beyond_the_budget_are_refused_after_the_wait_and_freed_when_given_back() {
        let mut harness = Harness::new();
        // The holder's unfinished line takes the whole budget (the cap and one byte).
        let mut holder = harness.connect().await;
        holder.write_all(&[b' '; 1000]).await.unwrap();
        let mut second = harness.connect().await;
        let server = harness.start(IntakeLimits {
            max_bytes_in_flight: 1025,
            ..limits(8)
        });
        let started = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(1)).await;
        second.write_all(UNKNOWN_OP).await.unwrap();
        let refusal = answer(&mut second).await;
        assert_eq!(refusal["reason"], "too_large", "{refusal}");
        let message = refusal["message"].as_str().unwrap();
        assert!(
            message.contains("budget of 1025 request bytes in flight"),
            "{refusal}"
        );
        assert!(started.elapsed() >= BUDGET_WAIT, "{:?}", started.elapsed());
        // The holder's line ends: it is answered, and its room is free for the next client.
        holder.shutdown().await.unwrap();
        assert_eq!(answer(&mut holder).await["reason"], "bad_request");
        let mut third = harness.connect().await;
        third.write_all(UNKNOWN_OP).await.unwrap();
        let answered = answer(&mut third).await;
        assert_eq!(answered["reason"], "bad_request", "{answered}");
        assert!(
            !answered["message"].as_str().unwrap().contains("budget"),
            "{answered}"
        );
        harness.shutdown.cancel();
        server.await.unwrap();
    }
}
