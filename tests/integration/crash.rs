//! Store and journal agree after a crash at any instant: the daemon is killed with SIGKILL while
//! clients ask, at a different moment each round, and restarted.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use consentd_store::inspect::Inspect;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::Daemon;

/// One ask; the id when the daemon acknowledged it (pending or refused), None when cut off.
fn ask(socket: &std::path::Path, request: &Value) -> Option<String> {
    let mut stream = UnixStream::connect(socket).ok()?;
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    stream.write_all(&frame).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let value: Value = serde_json::from_str(answer.lines().last()?).ok()?;
    value["id"].as_str().map(str::to_owned)
}

/// The database's records are the journal's asked and denied ids, every acknowledged ask among
/// them, and its record of the journal's head is the file's.
fn assert_store_agrees(
    daemon: &Daemon,
    journaled: &BTreeSet<String>,
    acknowledged: &BTreeSet<String>,
    head: &consentd_core::journal::Head,
) {
    let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
    let stored: BTreeSet<String> = db
        .records()
        .unwrap()
        .into_iter()
        .map(|record| record.id)
        .collect();
    assert_eq!(
        &stored, journaled,
        "every record has its line and every line its record"
    );
    let lost: Vec<_> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged asks lost: {lost:?}");
    let stored_head = db.journal_head().unwrap();
    assert_eq!((stored_head.n, &stored_head.h), (head.n, &head.h));
}

#[test]
fn sigkill_at_any_moment_leaves_store_and_journal_in_agreement() {
    let mut daemon = Daemon::builder().max_pending(100).start();
    let mut acknowledged = BTreeSet::new();
    // Kill after this many acknowledged asks in each round: early, mid-burst, later.
    for (round, kill_after) in [1usize, 3, 7, 12, 20, 33].into_iter().enumerate() {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let clients: Vec<_> = (0..4)
            .map(|client| {
                let (stop, acked, socket) = (stop.clone(), acked.clone(), daemon.socket.clone());
                std::thread::spawn(move || {
                    for n in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        // Every third ask is refused (an invisible character): `denied` lines too.
                        let text = if n % 3 == 2 {
                            format!("r{round} c{client} n{n}\u{200B}")
                        } else {
                            format!("r{round} c{client} n{n}")
                        };
                        let request = json!({"v":1,"op":"ask","kind":"publish_x","target":"@m",
                            "text": text, "cost_usd":"0.01", "wait": false});
                        match ask(&socket, &request) {
                            Some(id) => acked.lock().unwrap().push(id),
                            None => break,
                        }
                    }
                })
            })
            .collect();
        while acked.lock().unwrap().len() < kill_after {
            std::thread::yield_now();
        }
        daemon.stop_with(Signal::SIGKILL);
        stop.store(true, Ordering::Relaxed);
        for client in clients {
            client.join().unwrap();
        }
        acknowledged.extend(acked.lock().unwrap().iter().cloned());
        daemon = daemon.restart();
    }
    assert!(daemon.stop_with(Signal::SIGTERM).success());

    let journal = consentd_store::journal::verify_file(&daemon.journal, None).unwrap();
    let verified = journal.unwrap_or_else(|problem| panic!("journal broken: {problem}"));
    let text = std::fs::read_to_string(&daemon.journal).unwrap();
    let mut journaled = BTreeSet::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        if matches!(value["ev"].as_str(), Some("asked" | "denied")) {
            assert!(
                journaled.insert(value["id"].as_str().unwrap().to_owned()),
                "twice: {line}"
            );
        }
    }
    assert_store_agrees(&daemon, &journaled, &acknowledged, &verified.head);
    // 7 starts and at least one line per acknowledged ask.
    assert!(verified.head.n as usize >= 7 + acknowledged.len());
}

/// Group commit: the daemon aborts with two requests of one batch applied and none committed
/// (`CONSENTD_CRASH_AT=mid_batch`), while 16 clients ask at once. Every acknowledged ask is
/// durable, nothing of the cut batch is half there, and the journal verifies.
#[test]
fn a_kill_in_the_middle_of_a_batch_keeps_every_answer_and_half_applies_nothing() {
    let mut daemon = Daemon::builder()
        .max_pending(100)
        .env("CONSENTD_CRASH_AT", "mid_batch")
        .start();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..16)
        .map(|client| {
            let (acked, socket) = (acked.clone(), daemon.socket.clone());
            std::thread::spawn(move || {
                // Bounded: if no batch ever held two writes, the test fails below, not hangs.
                for n in 0..500 {
                    let text = if n % 3 == 2 {
                        format!("c{client} n{n}\u{200B}")
                    } else {
                        format!("c{client} n{n}")
                    };
                    let request = json!({"v":1,"op":"ask","kind":"publish_x","target":"@m",
                        "text": text, "cost_usd":"0.01", "wait": false});
                    match ask(&socket, &request) {
                        Some(id) => acked.lock().unwrap().push(id),
                        None => break,
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let status = daemon.wait_exit();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(Signal::SIGABRT as i32),
        "the daemon never held two requests in one batch: {status:?}\n{}",
        daemon.log()
    );
    let acknowledged: BTreeSet<String> = acked.lock().unwrap().iter().cloned().collect();
    let mut daemon = daemon.restart();
    // Stopped, so that no card the restart opens is still on its way to the file.
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let journal = consentd_store::journal::verify_file(&daemon.journal, None).unwrap();
    let verified = journal.unwrap_or_else(|problem| panic!("journal broken: {problem}"));
    let text = std::fs::read_to_string(&daemon.journal).unwrap();
    let journaled: BTreeSet<String> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|value| matches!(value["ev"].as_str(), Some("asked" | "denied")))
        .map(|value| value["id"].as_str().unwrap().to_owned())
        .collect();
    assert_store_agrees(&daemon, &journaled, &acknowledged, &verified.head);
}

/// The durable steps between an ask and its card, each a crash point. The ask's batch commits
/// (its `asked` line staged in the commit), the sender is rung and opens the card in a commit of
/// its own (`card_shown` staged there), and the card leaves while both lines are still being
/// appended to the journal file; a crash at each point must leave a journal that verifies and
/// holds every line the owner or the session was shown.
const CARD_STEPS: &[(&str, &[&str])] = &[
    // The ask committed, nothing answered, nothing rung, its line not yet in the file.
    ("asked_committed", &["asked"]),
    // The card opened and committed, not yet sent, its line not yet in the file.
    ("card_shown_committed", &["asked", "card_shown"]),
    // The owner has the card; its line may or may not have reached the file.
    ("card_sent", &["asked", "card_shown"]),
];

/// The only record of the state directory.
fn the_record(daemon: &Daemon) -> String {
    let records = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .records()
        .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    records[0].id.clone()
}

/// The events the journal file holds for record `id`.
fn events_of(daemon: &Daemon, id: &str) -> Vec<String> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|line| line["id"] == id)
        .map(|line| line["ev"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_crash_at_each_step_from_an_ask_to_its_card_loses_no_line() {
    use std::os::unix::process::ExitStatusExt;
    for &(point, lines) in CARD_STEPS {
        let mut daemon = Daemon::builder().env("CONSENTD_CRASH_AT", point).start();
        let request = crate::fixture::good_ask(&format!("crash at {point}"));
        let answered = ask(&daemon.socket, &request);
        let status = daemon.wait_exit();
        assert_eq!(
            status.signal(),
            Some(Signal::SIGABRT as i32),
            "{point}: the crash point was not reached: {status:?}\n{}",
            daemon.log()
        );
        let id = the_record(&daemon);
        let before = events_of(&daemon, &id);
        match point {
            "asked_committed" => {
                assert_eq!(answered, None, "{point}: the ask was answered");
                assert!(
                    before.is_empty(),
                    "{point}: its line was in the file: {before:?}"
                );
            }
            "card_shown_committed" => {
                assert!(
                    !before.contains(&"card_shown".to_owned()),
                    "{point}: the opening's line was in the file: {before:?}"
                );
                assert!(
                    daemon.owner_chat().iter().all(|m| m.buttons().is_empty()),
                    "{point}: a card left before the crash"
                );
            }
            _ => {
                // The session's answer waits for the `asked` line to be in the file, the card
                // does not: the session may or may not have heard of the record yet, but if it
                // has, of this one, and its line is in the file.
                if let Some(answered) = &answered {
                    assert_eq!(answered, &id, "{point}");
                    assert!(
                        before.contains(&"asked".to_owned()),
                        "{point}: the session was answered before its line was in the file"
                    );
                }
                assert!(
                    daemon.owner_chat().iter().any(|m| !m.buttons().is_empty()
                        && m.text.as_deref().is_some_and(|t| t.contains(&id))),
                    "{point}: the owner never had the card"
                );
            }
        }
        let mut daemon = daemon.restart();
        // The card reaches the owner, opened once: the restart resends an opened card.
        daemon.card_of(&id);
        assert!(daemon.stop_with(Signal::SIGTERM).success(), "{point}");
        let verified = consentd_store::journal::verify_file(&daemon.journal, None)
            .unwrap()
            .unwrap_or_else(|problem| panic!("{point}: the journal does not verify: {problem}"));
        let after = events_of(&daemon, &id);
        for line in lines {
            assert_eq!(
                after.iter().filter(|ev| ev == line).count(),
                1,
                "{point}: the journal has no single {line} line for {id}: {after:?}"
            );
        }
        let stored = Inspect::open_read_only(&daemon.state_dir)
            .unwrap()
            .journal_head()
            .unwrap();
        assert_eq!(
            (stored.n, &stored.h),
            (verified.head.n, &verified.head.h),
            "{point}: the store's journal head is not the file's"
        );
        if point != "card_sent" {
            let started = daemon
                .journal_events()
                .into_iter()
                .filter(|line| line["ev"] == "started")
                .nth(1)
                .unwrap();
            assert!(
                started["lines_recovered"].as_u64() >= Some(1),
                "{point}: the restart recovered no staged line: {started}"
            );
        }
    }
}

/// A card leaves at its opening's commit, while its `card_shown` line is still on its way to the
/// file (each journal turn held back here a second by a test build's
/// `CONSENTD_TEST_JOURNAL_DELAY_MS`): the file trails what the owner sees by the lines in flight,
/// never runs past the database's head, and the record already says `card_shown`. A reader of
/// the journal waits for that head, as the fixture's does, and then finds every line.
#[test]
fn a_card_and_its_status_may_run_ahead_of_the_journal_file_never_past_the_database() {
    let daemon = Daemon::builder()
        .env("CONSENTD_TEST_JOURNAL_DELAY_MS", "1000")
        .start();
    // The ask is sent and its answer left unread: the answer waits for the `asked` line, and
    // whichever turn carries that line, `card_shown` reaches the file a second after the card at
    // the earliest.
    let text = "ahead of the file";
    let mut session = UnixStream::connect(&daemon.socket).unwrap();
    let mut frame = serde_json::to_vec(&crate::fixture::good_ask(text)).unwrap();
    frame.push(b'\n');
    session.write_all(&frame).unwrap();
    daemon.card_of(text);
    let raw = std::fs::read_to_string(&daemon.journal).unwrap();
    let committed = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .journal_head()
        .unwrap();
    let mut answer = String::new();
    session.read_to_string(&mut answer).unwrap();
    let id = serde_json::from_str::<Value>(answer.trim()).unwrap()["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned();
    let lines = |text: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .collect()
    };
    let has_card_shown = |text: &str| {
        lines(text)
            .iter()
            .any(|line| line["ev"] == "card_shown" && line["id"] == id.as_str())
    };
    assert!(
        !has_card_shown(&raw),
        "the line was in the file already: the window this test is about was not reached"
    );
    let last_in_file = lines(&raw)
        .last()
        .map_or(0, |line| line["n"].as_u64().unwrap());
    assert!(
        last_in_file <= committed.n,
        "the file (line {last_in_file}) ran past the database's head ({})",
        committed.n
    );
    let status = daemon.request(&json!({"v":1,"op":"status","id":id}));
    assert_eq!(status["status"], "card_shown", "{status}");
    let settled = daemon.journal_text();
    assert!(
        has_card_shown(&settled),
        "the settled journal lacks card_shown"
    );
    let settled_last = lines(&settled).last().unwrap()["n"].as_u64().unwrap();
    assert!(
        settled_last >= committed.n,
        "the settled journal (line {settled_last}) is behind the database's head {}",
        committed.n
    );
}
