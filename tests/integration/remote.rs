//! An agent on another machine, through real OpenSSH on loopback, as docs/REMOTE.md sets it up:
//! the daemon's host gives the machine a key whose only use is `consentd bridge` to its labelled
//! socket (`restrict` and a forced command in `authorized_keys`; `DisableForwarding`, `PermitTTY
//! no` and `ForceCommand` in an `sshd_config` `Match` block), and the machine's local socket runs
//! one `ssh` per connection (as a systemd socket unit with `Accept=yes` does). The test starts its
//! own `sshd` (Debian's `openssh-server`; `.ci/run` installs it) on a free port, with its own host
//! key and config, and logs in as the user running the test.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fixture::{current_uid, output_within_ten_seconds, stderr, stdout, Daemon, BIN};
use crate::listen::{request_at, wait_state_at};

const SSHD: &str = "/usr/sbin/sshd";

/// An `sshd` of the test's own, stopped when dropped.
struct Sshd {
    child: Child,
    port: u16,
    dir: PathBuf,
    user: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// Starts `sshd` in `dir`, the user's key allowed only `consentd bridge` to `socket`.
    fn start(dir: &Path, socket: &Path) -> Sshd {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: this test needs OpenSSH's server (apt-get install -y \
             openssh-server; .ci/run installs it when missing)"
        );
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::current())
            .unwrap()
            .expect("the test's user has a name")
            .name;
        // sshd wants its privilege separation directory when started as root.
        if current_uid() == 0 {
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        for key in ["host_key", "user_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .output()
                .expect("ssh-keygen runs");
            assert!(made.status.success(), "ssh-keygen: {}", stderr(&made));
        }
        let bridge = format!("{BIN} bridge --socket {}", socket.display());
        let public = std::fs::read_to_string(dir.join("user_key.pub")).unwrap();
        // The key's own restrictions: nothing but its forced command.
        std::fs::write(
            dir.join("authorized_keys"),
            format!("restrict,command=\"{bridge}\" {public}"),
        )
        .unwrap();
        let port = free_port();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {dir}/host_key\nPidFile none\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\n\
                 Match User {user}\n  DisableForwarding yes\n  PermitTTY no\n\
                 AllowAgentForwarding no\n  X11Forwarding no\n  ForceCommand {bridge}\n",
                dir = dir.display(),
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd starts");
        let mut sshd = Sshd {
            child,
            port,
            dir: dir.to_owned(),
            user,
        };
        sshd.wait_listening();
        sshd
    }

    /// Waits (at most 10 s) until sshd greets on its port.
    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut greeting = [0u8; 4];
                if stream.read_exact(&mut greeting).is_ok() && &greeting == b"SSH-" {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sshd exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "sshd is not listening: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    /// `ssh` as the user with the restricted key, with `args` after the options.
    fn ssh(&self, args: &[&str]) -> Command {
        let mut command = Command::new("ssh");
        command
            .args(["-F", "/dev/null", "-i"])
            .arg(self.dir.join("user_key"))
            .args([
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "ConnectTimeout=5",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(args)
            .arg(format!("{}@127.0.0.1", self.user));
        command
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The remote machine's local socket: each connection is one `ssh` whose stdin and stdout are
/// that connection, as a systemd socket unit with `Accept=yes` runs it.
struct RemoteSocket {
    path: PathBuf,
    sessions: Arc<Mutex<Vec<Child>>>,
    stop: Arc<AtomicBool>,
}

impl RemoteSocket {
    fn start(sshd: &Sshd, path: PathBuf) -> RemoteSocket {
        let listener = UnixListener::bind(&path).unwrap();
        let sessions: Arc<Mutex<Vec<Child>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let template = sshd.ssh(&["-T"]);
        let program = template.get_program().to_owned();
        let args: Vec<_> = template.get_args().map(ToOwned::to_owned).collect();
        let (running, stopping) = (sessions.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let input = OwnedFd::from(stream.try_clone().unwrap());
                let child = Command::new(&program)
                    .args(&args)
                    .stdin(Stdio::from(input))
                    .stdout(Stdio::from(OwnedFd::from(stream)))
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                running.lock().unwrap().push(child);
            }
        });
        RemoteSocket {
            path,
            sessions,
            stop,
        }
    }

    /// Kills every `ssh` open now: the connections they carry are cut.
    fn cut(&self) -> usize {
        let mut sessions = self.sessions.lock().unwrap();
        let mut cut = 0;
        for child in sessions.iter_mut() {
            if child.try_wait().unwrap().is_none() {
                let _ = child.kill();
                cut += 1;
            }
            let _ = child.wait();
        }
        sessions.clear();
        cut
    }
}

impl Drop for RemoteSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the stop.
        let _ = UnixStream::connect(&self.path);
        self.cut();
    }
}

/// `consentd ask` on the remote machine's socket, waiting for the owner.
fn ask_remotely(remote: &RemoteSocket, text: &str, key: &str) -> Child {
    Command::new(BIN)
        .args(["ask", "--socket"])
        .arg(&remote.path)
        .args([
            "--kind",
            "publish_x",
            "--target",
            "@mila_news",
            "--text",
            text,
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--idempotency-key",
            key,
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most 30 s) for `child` to exit; its output.
fn finished(child: Child, what: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "{what}: still running after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The id of the `count`th ask in the daemon's journal, waiting (at most 30 s) for it.
fn asked_id(daemon: &Daemon, count: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let asked = daemon
            .journal_events()
            .into_iter()
            .filter(|e| e["ev"] == "asked")
            .nth(count - 1);
        if let Some(line) = asked {
            return line["id"].as_str().unwrap().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no ask {count}: {}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_agent_on_another_machine_asks_over_openssh_and_its_key_does_nothing_else() {
    // The daemon's labelled socket, which the key's forced command joins.
    let daemon = crate::listen::with_devbox(Daemon::builder()).start();
    let devbox = crate::listen::devbox_socket(&daemon);
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start(dir.path(), &devbox);
    let remote = RemoteSocket::start(&sshd, dir.path().join("consentd.sock"));

    // An ask through SSH draws a card labelled with the socket's origin; Yes runs it once.
    let first = ask_remotely(&remote, "over ssh", "k-1");
    let id = asked_id(&daemon, 1);
    let card = daemon.card_of(&id);
    assert!(
        card.text.as_deref().unwrap().contains("From: devbox"),
        "{:?}",
        card.text
    );
    daemon.press_yes(&card);
    let output = finished(first, "the first ask");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let answer: Value = serde_json::from_str(stdout(&output).lines().last().unwrap()).unwrap();
    assert_eq!(answer["status"], "executed", "{answer}");
    assert_eq!(daemon.runs_by_record().get(&id), Some(&1));

    // The connection cut while the ask waits, then a new one: status finds the record and its
    // outcome, and nothing runs twice.
    let second = ask_remotely(&remote, "cut while waiting", "k-2");
    let cut_id = asked_id(&daemon, 2);
    let card = daemon.card_of(&cut_id);
    assert_eq!(remote.cut(), 1, "the waiting ask's ssh was running");
    // Cut before its final line: the client says it is still open (8), as when a daemon stops.
    let output = finished(second, "the cut ask");
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    let status = request_at(&remote.path, &json!({"v":1,"op":"status","id":cut_id}));
    assert_eq!(status["status"], "card_shown", "{status}");
    daemon.press_yes(&card);
    wait_state_at(&remote.path, &cut_id, "executed");
    let again = finished(
        ask_remotely(&remote, "cut while waiting", "k-2"),
        "asked again",
    );
    let answer: Value = serde_json::from_str(stdout(&again).lines().last().unwrap()).unwrap();
    assert_eq!(
        (answer["id"].as_str(), answer["status"].as_str()),
        (Some(cut_id.as_str()), Some("executed"))
    );
    let runs = daemon.runs_by_record();
    assert_eq!(runs.get(&cut_id), Some(&1), "{runs:?}");
    assert_eq!(runs.get(&id), Some(&1), "{runs:?}");
    assert_eq!(daemon.runs(), 2);

    // The key runs no command of its own: what it asks is ignored for the forced bridge.
    let mut command = sshd.ssh(&[]);
    command.arg("echo pwned");
    let command = output_within_ten_seconds(command, "a command");
    assert!(
        !stdout(&command).contains("pwned"),
        "a command ran: {}",
        stdout(&command)
    );
    // No TCP forward (`-W` opens the same channel `-L` does).
    let target = format!("127.0.0.1:{}", sshd.port);
    let tcp = output_within_ten_seconds(sshd.ssh(&["-W", &target]), "a TCP forward");
    assert!(!tcp.status.success(), "a TCP forward: {}", stderr(&tcp));
    assert!(
        !stdout(&tcp).contains("SSH-2.0"),
        "a TCP forward reached sshd"
    );
    // No forward to another Unix socket: the main socket answers nothing through it.
    let other = dir.path().join("other.sock");
    let forward = format!("{}:{}", other.display(), daemon.socket.display());
    let mut forwarding = sshd
        .ssh(&["-N", "-o", "StreamLocalBindUnlink=yes", "-L", &forward])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reached = reach_through(&other, Duration::from_secs(10));
    let _ = forwarding.kill();
    let _ = forwarding.wait();
    assert_eq!(reached, "", "the main socket answered through a forward");
    // No remote forward, TCP or Unix.
    for (what, spec) in [
        ("a remote TCP forward", format!("127.0.0.1:0:{target}")),
        (
            "a remote Unix forward",
            format!(
                "{}:{}",
                dir.path().join("r.sock").display(),
                devbox.display()
            ),
        ),
    ] {
        let remote_forward = output_within_ten_seconds(
            sshd.ssh(&["-N", "-o", "ExitOnForwardFailure=yes", "-R", &spec]),
            what,
        );
        assert!(
            !remote_forward.status.success(),
            "{what}: {}",
            stderr(&remote_forward)
        );
        assert!(
            stderr(&remote_forward).contains("forwarding failed"),
            "{what}: {}",
            stderr(&remote_forward)
        );
    }
    drop(remote);
    drop(sshd);
}

/// What a `list` request through the forwarded socket at `path` gets back, waiting for `ssh` to
/// make the socket (at most `patience`): the empty string when the forward carried nothing.
fn reach_through(path: &Path, patience: Duration) -> String {
    let deadline = Instant::now() + patience;
    let mut stream = loop {
        match UnixStream::connect(path) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(error) => panic!("ssh made no local socket {}: {error}", path.display()),
        }
    };
    stream.set_read_timeout(Some(patience)).unwrap();
    let _ = stream.write_all(b"{\"v\":1,\"op\":\"list\"}\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}
