//! Attachment copies end with their record (docs/CONFIG.md, `attachment_retention`): those of an
//! ask that
//! ends without running go when it ends, those of one that ran after the retention, and a crash
//! between the end and the removal leaves nothing once the daemon is back.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::attachments::PNG;
use super::fixture::Daemon;

const MIB: usize = 1024 * 1024;

/// A PNG of `size` bytes (its header, then filler) unique to `seed`.
fn png_of(size: usize, seed: u64) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.extend_from_slice(&seed.to_le_bytes());
    bytes.resize(size, 0);
    bytes
}

fn ask_with(bytes: &[u8], text: &str) -> Value {
    json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news","text":text,
        "cost_usd":"0.04","wait":false,
        "attachments":[{"name":"cover.png","media_type":"image/png",
            "data_b64":base64::engine::general_purpose::STANDARD.encode(bytes)}]})
}

/// The copies in the daemon's attachments directory.
pub(super) fn copies(daemon: &Daemon) -> Vec<String> {
    copies_in(&daemon.state_dir.join("attachments"))
}

fn copies_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Waits (10 s at most) until the attachments directory holds `expected` copies.
fn wait_copies(daemon: &Daemon, expected: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while copies(daemon).len() != expected {
        assert!(
            Instant::now() < deadline,
            "{what}: {:?} left",
            copies(daemon)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn id_of(answer: &Value) -> String {
    answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned()
}

/// 1.2 GB written and fsync'd: `.ci/run` runs it on its own, after the suite, so that it takes
/// no core from the suite's tests that wait on the daemon's timing.
#[test]
#[ignore = "run on its own by .ci/run: cargo test --test integration -- --ignored copies::"]
fn two_hundred_asks_with_a_6_mib_attachment_withdrawn_at_once_leave_no_copies() {
    let daemon = Daemon::builder()
        .max_request_bytes(16 * MIB as u64)
        .limit("max_request_bytes_in_flight", "67108864")
        .start();
    // Each round's bytes differ in their last 24 only: the rest is encoded once (a multiple of
    // 3 bytes, so the two encodings join), and each round costs the daemon, not the test.
    let head = png_of(6 * MIB - 24, 0);
    let head_b64 = base64::engine::general_purpose::STANDARD.encode(&head);
    for round in 0..200u64 {
        let mut tail = [0u8; 24];
        tail[..8].copy_from_slice(&round.to_le_bytes());
        let data_b64 = head_b64.clone() + &base64::engine::general_purpose::STANDARD.encode(tail);
        let ask = json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news",
            "text":"withdrawn at once","cost_usd":"0.04","wait":false,
            "attachments":[{"name":"cover.png","media_type":"image/png","data_b64":data_b64}]});
        let answer = daemon.request(&ask);
        let id = id_of(&answer);
        let withdrawn = daemon.request(&json!({"v":1,"op":"withdraw","id":id}));
        assert_eq!(
            withdrawn["status"], "withdrawn",
            "round {round}: {withdrawn}"
        );
        // Never more than the one in hand and one still going.
        assert!(
            copies(&daemon).len() <= 2,
            "round {round}: {:?}",
            copies(&daemon)
        );
    }
    wait_copies(&daemon, 0, "after 200 withdrawn asks");
}

/// A declined and an expired record's copies go when it ends; an executed one's are kept for
/// the retention, then go, on the test clock.
#[test]
fn copies_go_when_a_record_ends_unrun_and_after_the_retention_when_it_ran() {
    let daemon = Daemon::builder()
        .card_ttl("60s")
        .limit("attachment_retention", "\"1h\"")
        .start();
    // Declined.
    let id = id_of(&daemon.request(&ask_with(&png_of(4096, 1), "declined")));
    wait_copies(&daemon, 1, "the declined ask's copy");
    daemon.press_no(&daemon.card_of(&id));
    daemon.wait_state(&id, "declined");
    wait_copies(&daemon, 0, "after the decline");
    // Expired.
    let id = id_of(&daemon.request(&ask_with(&png_of(4096, 2), "expired")));
    daemon.card_of(&id);
    daemon.advance_clock(61);
    daemon.wait_state(&id, "expired");
    wait_copies(&daemon, 0, "after the expiry");
    // Executed: kept for the hour, then gone.
    let id = id_of(&daemon.request(&ask_with(&png_of(4096, 3), "executed")));
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    daemon.advance_clock(3_000);
    daemon.settle();
    assert_eq!(copies(&daemon).len(), 1, "within the retention");
    daemon.advance_clock(700);
    wait_copies(&daemon, 0, "past the retention");
    // The journal still verifies: it keeps the hashes, not the copies.
    let verified = consentd_store::journal::verify_file(&daemon.settled_journal(), None).unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

/// The daemon dies after the commit that withdrew an ask and before its copy was removed; the
/// copy is gone once it is back.
#[test]
fn a_crash_between_the_end_and_the_removal_leaves_no_copy_after_restart() {
    let mut daemon = Daemon::builder()
        .env("CONSENTD_CRASH_AT", "before_copies_removed")
        .start();
    let id = id_of(&daemon.request(&ask_with(&png_of(4096, 4), "withdrawn, then a crash")));
    // Its answer may or may not come before the crash: the commit is what counts.
    let _ =
        daemon.request_raw(format!("{{\"v\":1,\"op\":\"withdraw\",\"id\":\"{id}\"}}\n").as_bytes());
    let status = daemon.wait_exit();
    assert!(!status.success(), "{status:?}");
    assert_eq!(
        copies(&daemon).len(),
        1,
        "the crash came before the removal"
    );
    let daemon = daemon.restart();
    assert_eq!(copies(&daemon), Vec::<String>::new());
    let status = daemon.request(&json!({"v":1,"op":"status","id":id}));
    assert_eq!(status["status"], "withdrawn", "{status}");
}

/// The bytes of the copies in the daemon's attachments directory.
fn stored_bytes(daemon: &Daemon) -> u64 {
    std::fs::read_dir(daemon.state_dir.join("attachments"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

/// Space is reserved, not only checked: 8 asks at once, whose attachments together need more
/// than the room above `min_free_bytes`, on a small disk the copies fill (the test probe's
/// `N less attachments`). In each of 100 runs the free space never goes under the floor, some
/// ask is taken, and withdrawing them all gives the room back.
#[test]
fn eight_asks_at_once_never_take_free_space_under_the_floor() {
    const FLOOR: u64 = 1024 * 1024;
    const ROOM: u64 = 200 * 1024;
    const EACH: usize = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let free_file = dir.path().join("free");
    std::fs::write(&free_file, format!("{} less attachments", FLOOR + ROOM)).unwrap();
    let daemon = Daemon::builder()
        .max_pending(20)
        .limit("min_free_bytes", &FLOOR.to_string())
        .env(
            "CONSENTD_TEST_FREE_BYTES_FILE",
            free_file.display().to_string(),
        )
        .start();
    let started = Instant::now();
    for run in 0..100u64 {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let answers: Vec<Value> = (0..8u64)
            .map(|n| {
                let (barrier, socket) = (barrier.clone(), daemon.socket.clone());
                let request = ask_with(&png_of(EACH, run * 8 + n), &format!("run {run} ask {n}"));
                std::thread::spawn(move || {
                    let mut frame = serde_json::to_vec(&request).unwrap();
                    frame.push(b'\n');
                    barrier.wait();
                    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
                    std::io::Write::write_all(&mut stream, &frame).unwrap();
                    super::fixture::answer_lines(&mut stream).pop().unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect();
        let taken: Vec<String> = answers
            .iter()
            .filter(|answer| answer["status"] == "pending")
            .map(id_of)
            .collect();
        for answer in answers.iter().filter(|a| a["status"] != "pending") {
            assert_eq!(answer["reason"], "disk_full", "run {run}: {answer}");
        }
        let stored = stored_bytes(&daemon);
        assert!(
            stored <= ROOM,
            "run {run}: {stored} bytes stored, {ROOM} above the floor"
        );
        assert!(!taken.is_empty(), "run {run}: nothing taken");
        for id in taken {
            let withdrawn = daemon.request(&json!({"v":1,"op":"withdraw","id":id}));
            assert_eq!(withdrawn["status"], "withdrawn", "{withdrawn}");
        }
        wait_copies(&daemon, 0, "after the run's withdrawals");
    }
    assert!(
        started.elapsed() < Duration::from_secs(240),
        "100 runs took {:?}",
        started.elapsed()
    );
}
