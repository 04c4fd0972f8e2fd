//! Intake figures for docs/BENCHMARKS.md, measured side by side in one run:
//! - refusals per second over the socket from 8 concurrent clients, for a malformed frame (refused
//!   before the store) and for an ask with an invisible character (recorded and journaled, so it
//!   costs a SQLite commit and a journal fsync);
//! - the raw fsync rate of the same disk, the baseline for the journaled refusals;
//! - the resident memory of an idle `serve`, and after the load.
//!
//! Run: `cargo bench --bench intake` (optionally `-- SECONDS`, default 5 per load).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;

fn config(dir: &Path, api_url: &str) -> String {
    format!(
        r#"
[owner]
telegram_id = 42
[telegram]
api_url = "{api_url}"
[paths]
state_dir = "{dir}/state"
socket = "{dir}/consent.sock"
[client]
allowed_uids = []
[categories.publish_x]
label = {{ en = "Post" }}
class = "external"
enabled = true
target = "required"
text = "required"
cost = "none"
command = ["/bin/true"]
"#,
        dir = dir.display()
    )
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

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

/// Appends 512-byte records with an fdatasync after each, as the journal does.
fn fsyncs_per_second(dir: &Path, seconds: f64) -> f64 {
    let mut file = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    let record = [b'x'; 512];
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        file.write_all(&record).unwrap();
        file.sync_data().unwrap();
        count += 1;
    }
    count as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5.0);
    let dir = tempfile::tempdir().unwrap();
    // The daemon needs a Bot API to talk to; refusals never reach it.
    let (bot, _bot_thread) = consentd::emulator::Emulator::start_in_thread("1:BENCH").unwrap();
    let config_path = dir.path().join("consentd.toml");
    std::fs::write(&config_path, config(dir.path(), &bot.api_url())).unwrap();
    let socket = dir.path().join("consent.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_consentd"))
        .args(["serve", "--config"])
        .arg(&config_path)
        .env("CONSENTD_LOG", "warn")
        .env("CONSENTD_BOT_TOKEN", "1:BENCH")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !one_request(&socket, b"{\"v\":1,\"op\":\"status\",\"id\":\"r_x\"}\n") {
        assert!(Instant::now() < deadline, "consentd did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = rss_kib(daemon.id());

    let fsync_rate = fsyncs_per_second(dir.path(), seconds);
    let malformed = load(&socket, b"{\"v\":1,\"op\":\n", seconds);
    let invisible = load(
        &socket,
        b"{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@a\",\"text\":\"hi\xe2\x80\x8b\"}\n",
        seconds,
    );
    let loaded_rss = rss_kib(daemon.id());
    daemon.kill().unwrap();
    daemon.wait().unwrap();

    println!("clients: {CLIENTS}, {seconds} s per load");
    println!("raw fsync (512 B append + fdatasync): {fsync_rate:.0}/s");
    println!("refusals/s, malformed JSON (not journaled): {malformed:.0}");
    println!(
        "refusals/s, invisible character (recorded + journaled): {invisible:.0} = {:.2}x the raw fsync rate",
        invisible / fsync_rate
    );
    println!(
        "RSS idle: {} KiB; after the load: {} KiB",
        idle_rss, loaded_rss
    );
}
