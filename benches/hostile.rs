//! Slow and hostile clients, for docs/BENCHMARKS.md: a well-behaved client's round trip (a
//! `status` request) measured alone, then during an attack on a release `consentd serve` — 1,000
//! connections that never send, and four clients sending, over and over, a 1 GiB frame (streamed
//! from a generator until the daemon refuses it), invalid UTF-8, JSON nested a million deep and a
//! million-character field. Every hostile request must get its refusal, and the well-behaved
//! client's p99 during the attack must stay under 100 ms.
//!
//! Run: `cargo bench --bench hostile [-- SECONDS]` (default 8 per phase; at most 9, so the idle
//! connections are still idle, inside the daemon's 10 s read timeout, until it ends).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;
use support::{percentile, Daemon, PUBLISH_X, TOKEN};

const IDLE: usize = 1000;
const P99_LIMIT: Duration = Duration::from_millis(100);

/// `status` round trips, one after another, until `stop`.
fn well_behaved(socket: &Path, stop: &AtomicBool) -> Vec<Duration> {
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let answer = support::request(socket, b"{\"v\":1,\"op\":\"status\",\"id\":\"r_none\"}\n")
            .expect("the well-behaved client was not answered");
        latencies.push(started.elapsed());
        assert_eq!(answer[0]["status"], "refused");
    }
    latencies
}

/// Streams an ask whose text runs on for 1 GiB until the daemon stops reading; its answer's
/// reason and the bytes it took.
fn gigabyte_frame(socket: &Path) -> (String, u64) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .write_all(b"{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@a\",\"text\":\"")
        .unwrap();
    let chunk = [b'x'; 64 * 1024];
    let mut sent = 0u64;
    while sent < 1 << 30 {
        match stream.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    (answer["reason"].as_str().unwrap().to_owned(), sent)
}

fn main() {
    let seconds: f64 = support::argument().unwrap_or(8.0);
    assert!(
        seconds <= 9.0,
        "the idle connections would be timed out mid-phase"
    );
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(
        &bot,
        // One uid plays every part here, so its share of connections is the ceiling.
        "max_request_bytes = 1048576\nmax_connections_per_uid = 1024",
        PUBLISH_X,
    );
    let socket = daemon.socket.clone();

    let stop = AtomicBool::new(false);
    let mut alone = std::thread::scope(|scope| {
        let client = scope.spawn(|| well_behaved(&socket, &stop));
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        client.join().unwrap()
    });

    let idle: Vec<UnixStream> = (0..IDLE)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    let million = "a".repeat(1_000_000);
    let frames: Vec<(&str, Vec<u8>, &str)> = vec![
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
            "a million-character field",
            format!(
                "{}\n",
                serde_json::json!({"v":1,"op":"ask","kind":"publish_x","target":"@a","text":"hi",
                    "fields":{"reply_to":million},"wait":false})
            )
            .into_bytes(),
            "too_large",
        ),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let (during, hostile, gigabytes) = std::thread::scope(|scope| {
        let client = scope.spawn(|| well_behaved(&socket, &stop));
        let attackers: Vec<_> = frames
            .iter()
            .map(|(name, frame, reason)| {
                let (socket, stop) = (&socket, &stop);
                scope.spawn(move || {
                    let mut count = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let answer = support::request(socket, frame).unwrap();
                        assert_eq!(answer[0]["reason"], *reason, "{name}: {}", answer[0]);
                        count += 1;
                    }
                    count
                })
            })
            .collect();
        let gigabyte = scope.spawn(|| {
            let mut taken = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let (reason, sent) = gigabyte_frame(&socket);
                assert_eq!(reason, "too_large");
                taken.push(sent);
            }
            taken
        });
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        let hostile: Vec<usize> = attackers.into_iter().map(|a| a.join().unwrap()).collect();
        (client.join().unwrap(), hostile, gigabyte.join().unwrap())
    });

    // The idle connections get theirs when the read timeout passes.
    let waited = Instant::now();
    for mut stream in idle {
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(
            answer.contains("no complete request line"),
            "idle connection: {answer}"
        );
    }
    let waited = waited.elapsed();

    alone.sort();
    let mut during = during;
    during.sort();
    let (a50, a99) = (percentile(&alone, 0.5), percentile(&alone, 0.99));
    let (d50, d99) = (percentile(&during, 0.5), percentile(&during, 0.99));
    println!("{seconds} s per phase");
    println!(
        "alone: {} status round trips, p50 {a50:?}, p99 {a99:?}",
        alone.len()
    );
    println!(
        "during the attack: {} status round trips, p50 {d50:?}, p99 {d99:?}, max {:?}; \
         p99 = {:.1}x alone",
        during.len(),
        during.last().unwrap(),
        d99.as_secs_f64() / a99.as_secs_f64()
    );
    for ((name, _, reason), count) in frames.iter().zip(&hostile) {
        println!("{name}: {count} refused {reason}");
    }
    println!(
        "1 GiB frames: {} refused too_large, the daemon took at most {} bytes of one",
        gigabytes.len(),
        gigabytes.iter().max().unwrap()
    );
    println!(
        "{IDLE} idle connections: all refused bad_request, the last {waited:.2?} after the attack"
    );
    assert!(
        d99 < P99_LIMIT,
        "p99 during the attack was {d99:?}, over {P99_LIMIT:?}"
    );
}
