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
    let daemon = daemon.restart();
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
