//! The bounds on what a session can make the daemon write: no attachment is kept for a
//! refused ask and none is left without a record, a refusal flood from one uid grows the journal
//! by a bounded number of lines that still account for every refusal, and a full disk refuses
//! asks `disk_full` without losing a decision, telling the owner once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use base64::Engine as _;
use consentd_core::digest::Sha256Hash;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, stdout, Daemon, DaemonBuilder};

/// A 1×1 PNG, complete.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\
\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\x0aIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\x0d\x0a\x2d\xb4\
\x00\x00\x00\x00IEND\xaeB\x60\x82";

/// A PNG of its own for each `n`: one pixel byte differs, so its SHA-256 does.
fn png(n: u8) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    let at = bytes.len() - 20;
    bytes[at] ^= n.wrapping_add(1);
    bytes
}

fn ask(text: &str, cover: Option<&[u8]>, key: Option<&str>) -> Value {
    let mut ask = json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news","text":text,
        "cost_usd":"0.04","wait":false});
    if let Some(bytes) = cover {
        ask["attachments"] = json!([{"name":"cover.png","media_type":"image/png",
            "data_b64":base64::engine::general_purpose::STANDARD.encode(bytes)}]);
    }
    if let Some(key) = key {
        ask["idempotency_key"] = json!(key);
    }
    ask
}

fn blob(daemon: &Daemon, bytes: &[u8]) -> PathBuf {
    daemon
        .state_dir
        .join("attachments")
        .join(Sha256Hash::of(bytes).to_hex())
}

/// The names in the attachments directory.
fn listing(daemon: &Daemon) -> BTreeSet<String> {
    std::fs::read_dir(daemon.state_dir.join("attachments"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn pending(daemon: &Daemon, request: &Value) -> String {
    let answer = daemon.request(request);
    assert_eq!(answer["status"], "pending", "{answer}");
    answer["id"].as_str().unwrap().to_owned()
}

fn decline(daemon: &Daemon, id: &str) {
    let card = daemon.card_of(id);
    daemon.press_no(&card);
    daemon.wait_state(id, "declined");
}

/// How each stateful refusal is brought about: the steps before the ask with the cover.
type Setup = fn(&Daemon, &[u8]);
/// The daemon's builder for a case.
type Builder = fn() -> DaemonBuilder;

#[test]
fn no_attachment_is_stored_for_a_stateful_refusal() {
    // (reason, builder, what comes before, the refused ask's idempotency key)
    let cases: [(&str, Builder, Setup, Option<&str>); 5] = [
        (
            "too_many_pending",
            || Daemon::builder().max_pending(1),
            |daemon, _| {
                pending(daemon, &ask("Waiting", None, None));
            },
            None,
        ),
        (
            "declined_recently",
            Daemon::builder,
            |daemon, cover| {
                let id = pending(daemon, &ask("With a cover", Some(cover), None));
                decline(daemon, &id);
                // Its bytes were the declined record's and went with it (or go at once): a
                // refused ask must not write them again.
                let deadline = Instant::now() + std::time::Duration::from_secs(10);
                while blob(daemon, cover).exists() {
                    assert!(
                        Instant::now() < deadline,
                        "the declined record's copy stayed"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            },
            None,
        ),
        (
            "kind_silenced",
            || Daemon::builder().decline_streak(1),
            |daemon, _| {
                let id = pending(daemon, &ask("Declined", None, None));
                decline(daemon, &id);
            },
            None,
        ),
        (
            "identity_conflict",
            Daemon::builder,
            |daemon, _| {
                pending(daemon, &ask("First", None, Some("k-1")));
            },
            Some("k-1"),
        ),
        ("no_owner", || Daemon::builder().no_owner(), |_, _| {}, None),
    ];
    for (n, (reason, builder, setup, key)) in cases.into_iter().enumerate() {
        let daemon = builder().start();
        let cover = png(n as u8);
        setup(&daemon, &cover);
        let before = listing(&daemon);
        let answer = daemon.request(&ask("With a cover", Some(&cover), key));
        assert_eq!(answer["status"], "refused", "{reason}: {answer}");
        assert_eq!(answer["reason"], reason, "{reason}: {answer}");
        assert!(
            !blob(&daemon, &cover).exists(),
            "{reason}: its cover was kept"
        );
        assert_eq!(listing(&daemon), before, "{reason}: attachments/ changed");
    }
}

#[test]
fn an_ask_that_creates_a_record_keeps_its_attachment() {
    let daemon = Daemon::start();
    let cover = png(9);
    pending(&daemon, &ask("With a cover", Some(&cover), None));
    assert_eq!(std::fs::read(blob(&daemon, &cover)).unwrap(), cover);
}

#[test]
fn blobs_no_record_names_are_removed_at_start_without_following_a_link() {
    let mut daemon = Daemon::start();
    let named = png(1);
    pending(&daemon, &ask("With a cover", Some(&named), None));
    daemon.stop_with(Signal::SIGTERM);

    let dir = daemon.state_dir.join("attachments");
    let orphan = Sha256Hash::of(b"orphan").to_hex();
    std::fs::write(dir.join(&orphan), b"orphan").unwrap();
    let half = format!(".{}.tmp", Sha256Hash::of(b"half").to_hex());
    std::fs::write(dir.join(&half), b"ha").unwrap();
    // A link under a blob's name, to a file and to a directory outside: the links go, never
    // what they point to.
    let outside = daemon.dir.path().join("outside.txt");
    std::fs::write(&outside, b"keep me").unwrap();
    let outside_dir = daemon.dir.path().join("outside");
    std::fs::create_dir(&outside_dir).unwrap();
    std::fs::write(outside_dir.join("inner"), b"keep me too").unwrap();
    let link = Sha256Hash::of(b"link").to_hex();
    std::os::unix::fs::symlink(&outside, dir.join(&link)).unwrap();
    let dir_link = Sha256Hash::of(b"dir link").to_hex();
    std::os::unix::fs::symlink(&outside_dir, dir.join(&dir_link)).unwrap();
    // Not a name of the store's: left alone.
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();

    let daemon = daemon.restart();
    let left = listing(&daemon);
    let expected: BTreeSet<String> = [Sha256Hash::of(&named).to_hex(), "notes.txt".to_owned()]
        .into_iter()
        .collect();
    assert_eq!(left, expected);
    assert_eq!(std::fs::read(blob(&daemon, &named)).unwrap(), named);
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    assert_eq!(
        std::fs::read(outside_dir.join("inner")).unwrap(),
        b"keep me too"
    );
    assert!(daemon
        .log()
        .contains("removed attachment files no record names"));
}

/// Refusals of five keys from one uid, the clock moved on as they come.
const FLOOD: usize = 2_000;
const PER_MINUTE: u64 = 3;
const WINDOW_SECONDS: u64 = 30;

fn flood_ask(n: usize) -> Value {
    let mut ask = ask("Hello", None, None);
    match n % 5 {
        0 => ask["text"] = json!(format!("Hello{}\u{200b}x", "a".repeat(n % 7))),
        1 => ask["text"] = json!("Cafe\u{301}"),
        2 => ask["kind"] = json!("post_nowhere"),
        3 => ask["fields"] = json!({"colour": "red"}),
        _ => ask["cost_usd"] = json!("0.041"),
    }
    ask
}

/// What a flood from one uid left in the journal.
struct Flood {
    refusals: u64,
    keys: u64,
    /// The real time it took.
    real: std::time::Duration,
    /// The daemon's time it took: the clock moved on, and the real time it ran.
    seconds: u64,
    denied: u64,
    /// The `denied_repeats` lines' counts.
    repeats: Vec<u64>,
    /// Lines that are neither (besides `started`).
    other: usize,
}

/// [`FLOOD`] refusals of five keys, the daemon's clock moved on by `step` seconds every hundred;
/// then the daemon is stopped, which writes the counts of the windows still open. The journal's
/// lines are counted from its start: a fresh daemon's, with only what the test asked.
fn flood(mut daemon: Daemon, step: i64) -> Flood {
    let started = Instant::now();
    let (wall_before, _) = daemon.clocks();
    let mut reasons = BTreeSet::new();
    for n in 0..FLOOD {
        if n > 0 && n % 100 == 0 {
            daemon.advance_clock(step);
        }
        let answer = daemon.request(&flood_ask(n));
        assert_eq!(answer["status"], "refused", "{n}: {answer}");
        reasons.insert(answer["reason"].as_str().unwrap().to_owned());
    }
    let real = started.elapsed();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let verify = consentd(&["journal", "verify", daemon.journal.to_str().unwrap()]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    let new = daemon.journal_events();
    let repeats: Vec<&Value> = new.iter().filter(|e| e["ev"] == "denied_repeats").collect();
    for line in &repeats {
        assert!(
            line.get("text").is_none() && line.get("message").is_none(),
            "{line}"
        );
        assert!(line["uid"].is_u64() && line["reason"].is_string(), "{line}");
    }
    let (wall_after, _) = daemon.clocks();
    Flood {
        refusals: FLOOD as u64,
        keys: reasons.len() as u64,
        real,
        seconds: (wall_after - wall_before) as u64 + real.as_secs() + 1,
        denied: new.iter().filter(|e| e["ev"] == "denied").count() as u64,
        repeats: repeats
            .iter()
            .map(|e| e["count"].as_u64().unwrap())
            .collect(),
        other: new
            .iter()
            .filter(|e| {
                !matches!(
                    e["ev"].as_str(),
                    Some("denied" | "denied_repeats" | "started")
                )
            })
            .count(),
    }
}

#[test]
fn a_refusal_flood_from_one_uid_grows_the_journal_by_a_bounded_number_of_lines() {
    let daemon = Daemon::builder()
        .refusal_budget(PER_MINUTE as u32, &format!("{WINDOW_SECONDS}s"))
        .start();
    // A repeat is answered with its own message (the character's position differs) under the
    // record it is counted with.
    let one = daemon.request(&flood_ask(0));
    let other = daemon.request(&flood_ask(5));
    assert_eq!(one["reason"], "invisible_character", "{one}");
    assert!(one["id"].is_string(), "the first is recorded: {one}");
    assert_eq!(
        one["id"], other["id"],
        "repeats share the first one's record"
    );
    assert_ne!(one["message"], other["message"]);
    // 2,000 more over some five minutes of the daemon's time.
    let flood = flood(daemon, 15);
    let refusals = flood.refusals + 2;
    assert_eq!(flood.keys, 5);
    let counted: u64 = flood.repeats.iter().sum();
    assert_eq!(
        flood.denied + counted,
        refusals,
        "every refusal accounted for"
    );
    assert_eq!(flood.other, 0, "nothing else was written for them");

    let windows = flood.seconds / WINDOW_SECONDS + 1;
    // Recorded: one per key and window at most, and no more than the bucket lets through (a
    // minute's burst, then one every 60 s / PER_MINUTE).
    let refilled = (flood.seconds * PER_MINUTE).div_ceil(60);
    let recorded_bound = (flood.keys * windows).min(PER_MINUTE + refilled);
    // Counted: one line per key and window, a window with no record lasting a minute or more.
    let count_bound = flood.keys * windows;
    assert!(
        flood.denied <= recorded_bound,
        "{} > {recorded_bound}",
        flood.denied
    );
    let lines = flood.denied + flood.repeats.len() as u64;
    assert!(
        lines <= recorded_bound + count_bound,
        "{lines} lines > {recorded_bound} + {count_bound}"
    );
    eprintln!(
        "refusal budget {PER_MINUTE}/min, window {WINDOW_SECONDS}s: {refusals} refusals in {:?} \
         real, {} s of the daemon's time: {lines} journal lines ({} denied, {} \
         denied_repeats), {:.1} lines a minute",
        flood.real,
        flood.seconds,
        flood.denied,
        flood.repeats.len(),
        lines as f64 * 60.0 / flood.seconds as f64,
    );
}

/// The figure's other half, and `refusal_window = "0s"` at work: with the coalescing off and a
/// bucket the flood does not empty, every refusal is recorded and journaled, as before the
/// budget; at the defaults the same flood, in real time, is a line or two per key.
#[test]
fn the_same_flood_with_coalescing_off_is_a_line_per_refusal_and_at_the_defaults_a_few() {
    let before = flood(Daemon::builder().refusal_budget(6000, "0s").start(), 0);
    assert_eq!(before.denied, before.refusals);
    assert!(before.repeats.is_empty());
    let after = flood(Daemon::builder().refusal_budget(60, "60s").start(), 0);
    let counted: u64 = after.repeats.iter().sum();
    assert_eq!(after.denied + counted, after.refusals);
    let windows = after.seconds / 60 + 1;
    assert!(after.denied + after.repeats.len() as u64 <= 2 * after.keys * windows);
    for (name, flood) in [("one by one", &before), ("at the defaults", &after)] {
        let lines = flood.denied + flood.repeats.len() as u64;
        eprintln!(
            "refusal flood, {name}: {} refusals in {:?}: {lines} journal lines, {:.0} lines a \
             minute at that rate",
            flood.refusals,
            flood.real,
            lines as f64 * 60.0 / flood.real.as_secs_f64(),
        );
    }
}

fn fill(file: &Path, free: u64) {
    std::fs::write(file, free.to_string()).unwrap();
}

/// The owner's messages that tell of a full disk.
fn disk_notices(daemon: &Daemon) -> Vec<consentd_emulator::ChatMessage> {
    daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.text.as_deref().is_some_and(|t| t.contains("nearly full")))
        .collect()
}

#[test]
fn a_full_disk_refuses_asks_disk_full_keeps_decisions_and_tells_the_owner_once() {
    let dir = tempfile::tempdir().unwrap();
    let free_file = dir.path().join("free");
    let daemon = Daemon::builder()
        .env(
            "CONSENTD_TEST_FREE_BYTES_FILE",
            free_file.display().to_string(),
        )
        .start();
    // A run claimed and held before the disk fills.
    std::fs::write(daemon.dir.path().join("hold"), b"").unwrap();
    let running = pending(&daemon, &ask("Running", None, None));
    daemon.press_yes(&daemon.card_of(&running));
    daemon.wait_state(&running, "running");
    let lines_before = daemon.journal_events().len();

    fill(&free_file, 1000);
    let state_dir = daemon.state_dir.display().to_string();
    for n in 0..20u8 {
        let answer = daemon.request(&ask(&format!("Full {n}"), Some(&png(n)), None));
        assert_eq!(answer["status"], "refused", "{answer}");
        assert_eq!(answer["reason"], "disk_full", "{answer}");
        assert!(answer.get("id").is_none(), "not recorded: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(
            message.contains(&state_dir) && message.contains("1000 bytes free"),
            "{message}"
        );
        assert!(!blob(&daemon, &png(n)).exists(), "{n}: its cover was kept");
    }
    // The run still ends, durably.
    std::fs::remove_file(daemon.dir.path().join("hold")).unwrap();
    daemon.wait_state(&running, "executed");
    let new: Vec<Value> = daemon.journal_events()[lines_before..].to_vec();
    assert!(
        new.iter()
            .any(|e| e["ev"] == "executed" && e["id"] == running),
        "{new:?}"
    );
    assert!(
        new.iter().all(|e| e["reason"] != "disk_full"),
        "disk_full is not journaled: {new:?}"
    );
    // Room again: asks are taken. Its card is queued after anything the refusals queued, so
    // once it is sent, so is every notice they made.
    fill(&free_file, 1 << 40);
    let after = pending(&daemon, &ask("Room again", None, None));
    daemon.card_of(&after);
    let notices = disk_notices(&daemon);
    assert_eq!(notices.len(), 1, "one notice for 20 refused asks");
    assert!(
        !notices[0].disable_notification,
        "an urgent notice has sound"
    );
    assert!(notices[0].text.as_deref().unwrap().contains(&state_dir));

    // Full again: a second episode, a second notice, and only one.
    fill(&free_file, 10);
    for n in 0..5u8 {
        let answer = daemon.request(&ask(&format!("Full again {n}"), None, None));
        assert_eq!(answer["reason"], "disk_full", "{answer}");
    }
    fill(&free_file, 1 << 40);
    let last = pending(&daemon, &ask("Room once more", None, None));
    daemon.card_of(&last);
    assert_eq!(disk_notices(&daemon).len(), 2);
}
