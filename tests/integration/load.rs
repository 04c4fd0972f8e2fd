//! Hostile load on the real daemon: a runaway agent's burst of asks against `max_pending`, and
//! slow or malicious clients beside a well-behaved one. These tests check what each client is
//! told and that the daemon stays usable; the timings and memory figures are printed, and the
//! full-size runs with their figures are `benches/runaway.rs` and `benches/hostile.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fixture::{answer_lines, good_ask, Daemon};

/// The burst: 16 clients, 100 asks each. The benchmark sends 10,000; this many already gives
/// every client hundreds of refusals racing the store's lock, within a minute on a busy machine.
const CLIENTS: usize = 16;
const ASKS_PER_CLIENT: usize = 100;
/// Small, so the cards it lets through reach the chat quickly despite the sender's pacing.
const MAX_PENDING: usize = 5;

/// How long any single answer may take before the test calls the daemon stuck.
const STUCK: Duration = Duration::from_secs(30);

/// `VmHWM` (peak) and `VmRSS` of a process, in KiB.
pub(crate) fn memory_kib(pid: nix::unistd::Pid) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Sends `request` and reads the first answer line, leaving the connection open.
fn first_line(daemon: &Daemon, request: &Value) -> (Value, BufReader<UnixStream>) {
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    stream.set_read_timeout(Some(STUCK)).unwrap();
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    stream.write_all(&frame).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let answer = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:?}"));
    (answer, reader)
}

/// Reads what is left on a connection until the daemon closes it.
fn rest_of(mut reader: BufReader<UnixStream>) -> String {
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    rest
}

#[test]
fn a_runaway_agent_gets_max_pending_cards_and_every_other_ask_is_refused_at_once() {
    let daemon = Arc::new(Daemon::builder().max_pending(MAX_PENDING as u32).start());
    let (idle_peak, idle_rss) = memory_kib(daemon.pid());
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let daemon = daemon.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                let mut refused = 0;
                for n in 0..ASKS_PER_CLIENT {
                    // Distinct texts, so no ask joins another's open card; `wait` on, as an agent
                    // would: a refusal must still come back at once, as the only line.
                    let mut ask = good_ask(&format!("runaway {client}-{n}"));
                    ask["wait"] = json!(true);
                    let (answer, reader) = first_line(&daemon, &ask);
                    match answer["status"].as_str() {
                        Some("pending") => held.push((answer, reader)),
                        Some("refused") => {
                            assert_eq!(answer["reason"], "too_many_pending", "{answer}");
                            let rest = rest_of(reader);
                            assert!(rest.is_empty(), "a refusal was not final: {rest:?}");
                            refused += 1;
                        }
                        _ => panic!("unexpected answer {answer}"),
                    }
                }
                (held, refused)
            })
        })
        .collect();
    let mut held = Vec::new();
    let mut refused = 0;
    for client in clients {
        let (client_held, client_refused) = client.join().unwrap();
        held.extend(client_held);
        refused += client_refused;
    }
    let burst = started.elapsed();
    let (peak, rss) = memory_kib(daemon.pid());
    let total = CLIENTS * ASKS_PER_CLIENT;
    eprintln!(
        "{total} asks from {CLIENTS} clients in {burst:?}; daemon VmHWM {idle_peak} -> {peak} KiB, \
         VmRSS {idle_rss} -> {rss} KiB"
    );
    assert_eq!(held.len(), MAX_PENDING, "asks let through");
    assert_eq!(refused, total - MAX_PENDING);
    // Refused asks are recorded without their text, so the burst costs rows, not memory: the
    // peak stays within a few MiB of the idle daemon's (a debug build's heap, measured at about
    // 3 MiB of growth here).
    assert!(
        peak < idle_peak + 32 * 1024,
        "the burst grew the daemon from {idle_peak} to {peak} KiB"
    );

    // The journal agrees: as many `asked` as cards, every other ask `denied` too_many_pending.
    let events = daemon.journal_events();
    let count = |ev: &str| events.iter().filter(|e| e["ev"] == ev).count();
    assert_eq!(count("asked"), MAX_PENDING);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["ev"] == "denied" && e["reason"] == "too_many_pending")
            .count(),
        total - MAX_PENDING
    );

    // The owner's chat gets exactly the held asks' cards, nothing for the refused ones.
    let cards: Vec<_> = held
        .iter()
        .map(|(answer, _)| daemon.card_of(answer["id"].as_str().unwrap()))
        .collect();
    let with_buttons = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| !m.buttons().is_empty())
        .count();
    assert_eq!(with_buttons, MAX_PENDING, "{:?}", daemon.owner_chat());

    // The owner answers the held asks; their waiting clients get their final lines.
    for card in &cards {
        daemon.press_yes(card);
    }
    for (answer, reader) in held {
        let rest = rest_of(reader);
        let last: Value = serde_json::from_str(rest.lines().last().unwrap_or_default())
            .unwrap_or_else(|_| panic!("{}: no final line in {rest:?}", answer["id"]));
        assert_eq!(last["status"], "executed", "{last}");
    }

    // Right after the burst, a well-formed ask is taken and gets its card.
    let answer = daemon.request(&good_ask("after the burst"));
    assert_eq!(answer["status"], "pending", "{answer}");
    daemon.card_of(answer["id"].as_str().unwrap());
}

/// Streams an ask whose text never ends, up to 1 GiB, from a generator: returns how many bytes
/// the daemon took before it stopped reading, and its answer.
fn gigabyte_frame(daemon: &Daemon) -> (u64, Value) {
    const GIB: u64 = 1 << 30;
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    stream.set_read_timeout(Some(STUCK)).unwrap();
    stream.set_write_timeout(Some(STUCK)).unwrap();
    let prefix = b"{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@a\",\"text\":\"";
    stream.write_all(prefix).unwrap();
    let chunk = [b'x'; 64 * 1024];
    let mut sent = prefix.len() as u64;
    while sent < GIB {
        match stream.write(&chunk) {
            Ok(n) => sent += n as u64,
            // The daemon answered and closed: the rest of the gigabyte is never read.
            Err(_) => break,
        }
    }
    let mut answers = answer_lines(&mut stream);
    assert_eq!(answers.len(), 1, "{answers:?}");
    (sent, answers.remove(0))
}

#[test]
fn hostile_clients_each_get_their_refusal_while_a_well_behaved_one_is_served() {
    // The idle connections, the attackers and the well-behaved client share one uid here, so
    // its share of connections is raised to the ceiling (1,024).
    let daemon = Arc::new(
        Daemon::builder()
            .limit("max_connections_per_uid", "1024")
            .start(),
    );
    // 1,000 connections that never send: each holds a slot until the read timeout answers it.
    let idle: Vec<UnixStream> = (0..1000)
        .map(|_| UnixStream::connect(&daemon.socket).unwrap())
        .collect();

    // The well-behaved client asks for a record's status over and over during the attack.
    let attack_over = Arc::new(AtomicBool::new(false));
    // Raised on every way out, a failed assertion included: the client's thread holds the
    // daemon, which would otherwise outlive the test.
    let _end_attack = EndOnDrop(attack_over.clone());
    let good = {
        let (daemon, attack_over) = (daemon.clone(), attack_over.clone());
        std::thread::spawn(move || {
            let mut latencies = Vec::new();
            while !attack_over.load(Ordering::Relaxed) {
                let started = Instant::now();
                let answer = daemon.request(&json!({"v":1,"op":"status","id":"r_none"}));
                latencies.push(started.elapsed());
                assert_eq!(answer["status"], "refused", "{answer}");
            }
            latencies
        })
    };

    let (sent, answer) = gigabyte_frame(&daemon);
    assert_eq!(answer["reason"], "too_large", "{answer}");
    // The cap is 1 MiB; what the daemon took beyond it is what the socket's buffers hold.
    assert!(
        sent < 64 << 20,
        "the daemon read {sent} bytes of a frame over its 1 MiB cap"
    );

    let million = "a".repeat(1_000_000);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "invalid UTF-8",
            b"{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"text\":\"\xc3\x28\xa0\"}\n".to_vec(),
            "bad_request",
        ),
        (
            "JSON nested a million deep",
            format!("{}\n", "[".repeat(1_000_000)).into_bytes(),
            "bad_request",
        ),
        (
            "a million-character text",
            format!("{}\n", good_ask(&million)).into_bytes(),
            "too_large",
        ),
        (
            "a million-character field",
            {
                let mut ask = good_ask("hi");
                ask["fields"]["reply_to"] = json!(million);
                format!("{ask}\n").into_bytes()
            },
            "too_large",
        ),
    ];
    for (name, frame, reason) in cases {
        let answers = daemon.request_raw(&frame);
        assert_eq!(answers.len(), 1, "{name}: {answers:?}");
        assert_eq!(answers[0]["status"], "refused", "{name}: {}", answers[0]);
        assert_eq!(answers[0]["reason"], reason, "{name}: {}", answers[0]);
    }

    // The idle ones are told, each, once the read timeout passes.
    let idle_started = Instant::now();
    for (n, stream) in idle.into_iter().enumerate() {
        stream.set_read_timeout(Some(STUCK)).unwrap();
        let answer = rest_of(BufReader::new(stream));
        let answer: Value = serde_json::from_str(answer.trim())
            .unwrap_or_else(|_| panic!("idle connection {n}: {answer:?}"));
        assert_eq!(answer["reason"], "bad_request", "idle connection {n}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("no complete request line"),
            "idle connection {n}: {answer}"
        );
    }
    attack_over.store(true, Ordering::Relaxed);
    let mut latencies = good.join().unwrap();
    assert!(
        !latencies.is_empty(),
        "the well-behaved client was never served"
    );
    latencies.sort();
    eprintln!(
        "the daemon took {sent} bytes of the 1 GiB frame; well-behaved client: {} requests \
         during the attack, p50 {:?}, p99 {:?}, max {:?}; idle clients answered {:?} after the \
         attack's frames",
        latencies.len(),
        latencies[latencies.len() / 2],
        latencies[(latencies.len() - 1) * 99 / 100],
        latencies.last().unwrap(),
        idle_started.elapsed(),
    );
    // Still the daemon it was: a well-formed ask is taken.
    let answer = daemon.request(&good_ask("after the attack"));
    assert_eq!(answer["status"], "pending", "{answer}");
}

/// Raises its flag when dropped.
struct EndOnDrop(Arc<AtomicBool>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
