//! What one uid can take from another, for docs/BENCHMARKS.md: the daemon's memory under 64
//! concurrent frames of 32 MiB (against its budget of request bytes in flight), and a
//! well-behaved client's round trip from another uid, alone and while one uid floods — its
//! whole share of connections held open, eight threads of refused asks and a stream of 32 MiB
//! frames.
//!
//! Run as root (the other uid is 65534): `cargo bench --bench peer_budgets [-- SECONDS]`
//! (default 5 per phase).

mod support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;
use support::{percentile, Daemon, PUBLISH_X, TOKEN};

const MIB: usize = 1024 * 1024;
const OTHER_UID: u32 = 65534;
/// Set in the environment of the bench's own child that plays the other uid's client.
const CLIENT_ENV: &str = "PEER_BUDGETS_CLIENT";

/// An ask whose one attachment fills a frame of `bytes`, the newline included.
fn big_frame(bytes: usize) -> Vec<u8> {
    let head = br#"{"v":1,"op":"ask","kind":"publish_x","target":"@a","text":"hi","cost_usd":"0.04","attachments":[{"name":"a.png","media_type":"image/png","data_b64":""#;
    let tail = b"\"}]}\n";
    let mut frame = Vec::with_capacity(bytes);
    frame.extend_from_slice(head);
    frame.resize(bytes - tail.len(), b'A');
    frame.extend_from_slice(tail);
    frame
}

/// Sends `frame`, tolerating a refusal before it is all written; the answer's reason.
fn send(socket: &Path, frame: &[u8]) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    let _ = stream.write_all(frame);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let Some(last) = text.lines().last() else {
        return "no answer".to_owned();
    };
    let last: serde_json::Value = serde_json::from_str(last).unwrap();
    last["reason"].as_str().unwrap_or("none").to_owned()
}

/// The other uid's client: `status` round trips for `seconds`, printed one per line in µs.
fn client(socket: &Path, seconds: f64) {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut out = std::io::stdout().lock();
    while Instant::now() < until {
        let started = Instant::now();
        let answer = support::request(socket, b"{\"v\":1,\"op\":\"status\",\"id\":\"r_none\"}\n")
            .expect("the other uid's client was not answered");
        let micros = started.elapsed().as_micros();
        assert_eq!(answer[0]["reason"], "bad_request", "{}", answer[0]);
        writeln!(out, "{micros}").unwrap();
    }
}

/// Runs [`client`] as `OTHER_UID` in a child of this bench; its sorted latencies.
fn other_uid_client(socket: &Path, seconds: f64) -> Vec<Duration> {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CLIENT_ENV, format!("{}\n{seconds}", socket.display()))
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut latencies: Vec<Duration> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| Duration::from_micros(line.parse().unwrap()))
        .collect();
    latencies.sort();
    latencies
}

fn show(name: &str, latencies: &[Duration]) -> Duration {
    let p99 = percentile(latencies, 0.99);
    println!(
        "{name}: {} round trips, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        latencies.len(),
        percentile(latencies, 0.50).as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
    p99
}

fn frame_attack(daemon: &Daemon) {
    let (idle_peak, _) = daemon.memory_kib();
    let frame = big_frame(32 * MIB);
    let started = Instant::now();
    let reasons: Vec<String> = std::thread::scope(|scope| {
        let senders: Vec<_> = (0..64)
            .map(|_| scope.spawn(|| send(&daemon.socket, &frame)))
            .collect();
        senders.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let (peak, rss) = daemon.memory_kib();
    let budget_kib = 64 * 1024;
    // Every frame is refused: most for room in the budget, the few read in full by their
    // category (the bench's publish_x takes no attachment) or their size.
    let mut counts = std::collections::BTreeMap::new();
    for reason in &reasons {
        *counts.entry(reason.as_str()).or_insert(0) += 1;
    }
    assert!(
        !counts.contains_key("none") && !counts.contains_key("no answer"),
        "{counts:?}"
    );
    println!(
        "64 concurrent 32 MiB frames in {:.2?}: refused {counts:?}; daemon VmHWM {idle_peak} -> \
         {peak} KiB (VmRSS after: {rss} KiB); budget {budget_kib} KiB: peak is {:.2}x the budget",
        started.elapsed(),
        peak as f64 / budget_kib as f64
    );
}

fn main() {
    if let Ok(args) = std::env::var(CLIENT_ENV) {
        let (socket, seconds) = args.split_once('\n').unwrap();
        client(Path::new(socket), seconds.parse().unwrap());
        return;
    }
    let seconds: f64 = support::argument().unwrap_or(5.0);
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(&bot, "max_request_bytes = 33554432", PUBLISH_X);
    // The other uid reaches the socket; the state directory stays the daemon's alone.
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    frame_attack(&daemon);

    let alone = show(
        "other uid alone",
        &other_uid_client(&daemon.socket, seconds),
    );
    let stop = AtomicBool::new(false);
    let refused = AtomicUsize::new(0);
    let frame = big_frame(32 * MIB);
    let during = std::thread::scope(|scope| {
        // Its whole share of connections, held open and silent.
        let held: Vec<UnixStream> = (0..64)
            .map(|_| UnixStream::connect(&daemon.socket).unwrap())
            .collect();
        for _ in 0..8 {
            scope.spawn(|| {
                let ask = b"{\"v\":1,\"op\":\"ask\",\"kind\":\"no_such_kind\",\"text\":\"x\"}\n";
                while !stop.load(Ordering::Relaxed) {
                    if let Some(answer) = support::request(&daemon.socket, ask) {
                        if answer[0]["status"] == "refused" {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = send(&daemon.socket, &frame);
            }
        });
        let latencies = other_uid_client(&daemon.socket, seconds);
        stop.store(true, Ordering::Relaxed);
        drop(held);
        latencies
    });
    let flooded = show("other uid while one uid floods", &during);
    println!(
        "the flooding uid's answered requests: {} (refusals, its over-share connections included)",
        refused.load(Ordering::Relaxed)
    );
    println!(
        "p99 during the flood against alone: {:.1}x",
        flooded.as_secs_f64() / alone.as_secs_f64()
    );
}
