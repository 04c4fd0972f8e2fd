//! What one peer may hold of the daemon (issue: budgets per peer and in all): request bytes in
//! flight, and connections per uid, measured on the real daemon.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::fixture::{answer_lines, current_uid, Daemon, BIN};
use super::load::memory_kib;

const MIB: u64 = 1024 * 1024;
/// A uid that is not the test's: the tests run as root (as CI does), which may switch to it.
const OTHER_UID: u32 = 65534;
/// The defaults of `max_connections_per_uid` and `max_request_bytes_in_flight`.
const PER_UID: usize = 64;
const IN_FLIGHT_KIB: u64 = 64 * 1024;

/// Lets `OTHER_UID` reach the socket: the test dir and the socket's directory traversable, the
/// socket writable. The state directory itself stays the daemon's alone.
pub(super) fn open_socket_to_others(daemon: &Daemon) {
    for dir in [daemon.dir.path(), daemon.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
}

fn refusal_of(stream: &mut UnixStream) -> serde_json::Value {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    answer_lines(stream).pop().expect("an answer line")
}

#[test]
fn a_second_uid_is_served_while_the_first_holds_its_whole_connection_cap() {
    assert_eq!(
        current_uid(),
        0,
        "this test switches uid, so it runs as root"
    );
    let daemon = Daemon::builder()
        .allowed_uids(vec![current_uid(), OTHER_UID])
        .start();
    open_socket_to_others(&daemon);
    // The first uid takes its whole share and says nothing: each holds a slot until the
    // daemon's read timeout (10 s), longer than the test needs.
    let holders: Vec<UnixStream> = (0..PER_UID)
        .map(|_| UnixStream::connect(&daemon.socket).unwrap())
        .collect();
    let mut over = UnixStream::connect(&daemon.socket).unwrap();
    let refusal = refusal_of(&mut over);
    assert_eq!(refusal["reason"], "bad_request", "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains(&format!("this uid already has {PER_UID} connections open")),
        "{refusal}"
    );
    // Another uid, meanwhile: served at once, twice over.
    for _ in 0..2 {
        let output = Command::new(BIN)
            .args(["list", "--json"])
            .env("CONSENTD_SOCKET", &daemon.socket)
            .uid(OTHER_UID)
            .gid(OTHER_UID)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the other uid was not served: {stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert!(last["records"].is_array(), "{last}");
    }
    // The first uid's slots come back as its connections close: once the daemon has seen them
    // close (it learns of each on its own task, so not at the instant of the drop).
    drop(holders);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = daemon.request(&serde_json::json!({"v": 1, "op": "list"}));
        if answer["records"].is_array() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{answer}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `frame` on `count` connections at once; each one's last answer line. A frame refused
/// before it is all read makes the rest of its write fail: that is expected.
pub(super) fn send_at_once(
    socket: &std::path::Path,
    frame: Vec<u8>,
    count: usize,
) -> Vec<serde_json::Value> {
    let frame = std::sync::Arc::new(frame);
    let senders: Vec<_> = (0..count)
        .map(|_| {
            let (socket, frame) = (socket.to_owned(), frame.clone());
            std::thread::spawn(move || {
                let mut stream = UnixStream::connect(socket).unwrap();
                let _ = stream.write_all(&frame);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                let text = String::from_utf8(answer).unwrap();
                serde_json::from_str(text.lines().last().expect("every frame is answered")).unwrap()
            })
        })
        .collect();
    senders.into_iter().map(|t| t.join().unwrap()).collect()
}

/// An ask whose one attachment fills a frame of `bytes` (the newline included).
fn big_frame(bytes: usize) -> Vec<u8> {
    let head = br#"{"v":1,"op":"ask","kind":"publish_x","target":"@a","text":"hi","cost_usd":"0.04","attachments":[{"name":"a.png","media_type":"image/png","data_b64":""#;
    let tail = b"\"}]}\n";
    let mut frame = Vec::with_capacity(bytes);
    frame.extend_from_slice(head);
    frame.resize(bytes - tail.len(), b'A');
    frame.extend_from_slice(tail);
    frame
}

#[test]
fn memory_stays_bounded_under_64_concurrent_frames_of_32_mib() {
    let daemon = Daemon::builder().max_request_bytes(32 * MIB).start();
    let (idle_peak, _) = memory_kib(daemon.pid());
    let answers = send_at_once(&daemon.socket, big_frame(32 * MIB as usize), 64);
    let reasons: Vec<String> = answers
        .iter()
        .map(|last| {
            format!(
                "{} {}",
                last["reason"].as_str().unwrap_or_default(),
                last["message"]
            )
        })
        .collect();
    // Each is refused: its 24 MiB attachment is over max_attachment_bytes once read in full,
    // or it waited for room in the budget and was refused before it was read.
    assert!(
        reasons.iter().all(|reason| reason.starts_with("too_large")),
        "{reasons:?}"
    );
    let (peak, _) = memory_kib(daemon.pid());
    // The bound: the budget held as frames, the parsed request and the decoded attachment
    // beside it (a little over three times the budget at the peak), and the idle daemon.
    let bound = idle_peak + 4 * IN_FLIGHT_KIB;
    eprintln!("64 frames of 32 MiB: daemon VmHWM {idle_peak} -> {peak} KiB (bound {bound} KiB)");
    assert!(
        peak <= bound,
        "peak {peak} KiB over {bound} KiB under 64 concurrent 32 MiB frames"
    );
    let answer = daemon.request(&serde_json::json!({"v": 1, "op": "list"}));
    assert!(
        answer["records"].is_array(),
        "the daemon still serves: {answer}"
    );
}
