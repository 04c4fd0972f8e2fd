//! Intake figures for docs/BENCHMARKS.md, measured side by side in one run:
//! - refusals per second over the socket from 8 concurrent clients, for a malformed frame (refused
//!   before the store) and for an ask with an invisible character (before the refusal budget
//!   each was recorded and journaled, a SQLite commit and a journal fsync; now the first
//!   of each `refusal_window` is, and its repeats are counted in memory);
//! - the raw fsync rate of the same disk, the baseline for the journaled refusals;
//! - the resident memory of an idle `serve`, and after the load.
//!
//! Run: `cargo bench --bench intake` (optionally `-- SECONDS`, default 5 per load).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{Daemon, PUBLISH_X, TOKEN};

const CLIENTS: usize = 8;

fn one_request(socket: &Path, frame: &[u8]) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.write_all(frame);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer.windows(9).any(|w| w == b"\"refused\"")
}

/// Refusals per second from `CLIENTS` threads sending `frame` for `seconds`.
fn load(socket: &Path, frame: &'static [u8], seconds: f64) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (done, stop, socket) = (done.clone(), stop.clone(), socket.to_owned());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    assert!(one_request(&socket, frame), "not refused");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let seconds: f64 = support::argument().unwrap_or(5.0);
    // The daemon needs a Bot API to talk to; refusals never reach it.
    let (bot, _bot_thread) = consentd_emulator::Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(&bot, "", PUBLISH_X);
    let socket = daemon.socket.clone();
    std::thread::sleep(Duration::from_millis(500));
    let (_, idle_rss) = daemon.memory_kib();

    let fsync_rate = support::fsyncs_per_second(daemon.dir.path(), seconds);
    let malformed = load(&socket, b"{\"v\":1,\"op\":\n", seconds);
    let invisible = load(
        &socket,
        b"{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@a\",\"text\":\"hi\xe2\x80\x8b\"}\n",
        seconds,
    );
    let (_, loaded_rss) = daemon.memory_kib();
    drop(daemon);

    println!("clients: {CLIENTS}, {seconds} s per load");
    println!("raw fsync (512 B append + fdatasync): {fsync_rate:.0}/s");
    println!("refusals/s, malformed JSON (not journaled): {malformed:.0}");
    println!(
        "refusals/s, invisible character (under the refusal budget): {invisible:.0} = {:.2}x the raw fsync rate",
        invisible / fsync_rate
    );
    println!(
        "RSS idle: {} KiB; after the load: {} KiB",
        idle_rss, loaded_rss
    );
}
