//! Ask-to-card latency for docs/BENCHMARKS.md: a release `consentd serve` against the Bot API
//! emulator, one ask at a time, from the ask leaving the client to the card's `sendMessage`
//! reaching the emulator, both instants on the emulator's clock. Asks are spaced just over a
//! second apart, so the daemon's pacing of one message a second to the owner's chat (a Telegram
//! limit, not latency) never holds a card back.
//! Baseline in the same run: a bare `sendMessage` from this process to the same emulator, from
//! the request to its arrival, on the same clock; the difference is the daemon's own part
//! (socket, checks, the ask's SQLite commit, the sender's reads and the card's opening in a commit
//! of its own, drawing the card; the two journal fsyncs run beside, on the journal's thread).
//!
//! Asks go in batches of 100 (max_pending's ceiling), each batch on a fresh daemon and state
//! directory, so no card ever waits behind another message's turn.
//!
//! `CONSENTD_BENCH_BEFORE=PATH` runs another build of the daemon (one from before a change) side
//! by side with this one: their batches alternate, ASKS asks each. In the second between two
//! asks the benchmark also times, on the state directories' disk, one raw fsync as a commit's
//! (28 KiB rewritten in place, then `fsync`) and as a journal line's (512 B appended, then
//! `fdatasync`), and one round trip over a Unix socket (connect, a request line, an answer
//! line) to a listener of its own: the goal for the daemon's part is at most two fsyncs and the
//! socket round trip, plus 0.5 ms, at the median.
//!
//! Run: `cargo bench --bench card_latency [-- ASKS]` (default 1000; about 1.1 s per ask).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;

use support::{percentile, Daemon, OWNER, PUBLISH_X, TOKEN};

fn ask(socket: &std::path::Path, n: usize) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    let frame = format!(
        "{{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@bench\",\"text\":\"ask number {n}\",\"wait\":false}}\n"
    );
    stream.write_all(frame.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let value: serde_json::Value = serde_json::from_str(answer.trim()).unwrap();
    // A refused ask has no card to wait for.
    assert_eq!(value["status"], "pending", "{answer}");
    value["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

/// The raw costs beside the asks, one sample of each per ask.
#[derive(Default)]
struct Raw {
    /// 28 KiB rewritten at the same offset, then `fsync`: about an ask's WAL frames.
    commit_fsync: Vec<Duration>,
    /// 512 B appended, then `fdatasync`: a journal line.
    journal_fsync: Vec<Duration>,
    /// Connect, one request line, one answer line, to this process's own listener.
    socket: Vec<Duration>,
}

impl Raw {
    fn sample(&mut self, probe: &Probe) {
        use std::os::unix::fs::FileExt;
        let started = Instant::now();
        probe.wal.write_all_at(&[b'w'; 28 * 1024], 0).unwrap();
        probe.wal.sync_all().unwrap();
        self.commit_fsync.push(started.elapsed());
        let started = Instant::now();
        (&probe.journal).write_all(&[b'j'; 512]).unwrap();
        probe.journal.sync_data().unwrap();
        self.journal_fsync.push(started.elapsed());
        let started = Instant::now();
        let mut stream = UnixStream::connect(&probe.socket).unwrap();
        stream.write_all(ASK_LINE.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        self.socket.push(started.elapsed());
    }
}

/// About the size of an ask's request line.
const ASK_LINE: &str = "{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@bench\",\"text\":\"ask number 100\",\"wait\":false}\n";

/// The files and the listener the raw costs are taken on, in a directory beside the daemons'.
struct Probe {
    _dir: tempfile::TempDir,
    wal: std::fs::File,
    journal: std::fs::File,
    socket: std::path::PathBuf,
}

impl Probe {
    fn new() -> Probe {
        let dir = tempfile::tempdir().unwrap();
        let wal = std::fs::File::create(dir.path().join("wal-probe")).unwrap();
        let journal = std::fs::File::create(dir.path().join("journal-probe")).unwrap();
        let socket = dir.path().join("probe.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        // Answers each connection's line with one line, and closes it, as the daemon does.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut line = Vec::new();
                let mut byte = [0u8; 1];
                while stream.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
                    line.push(byte[0]);
                }
                let _ = stream.write_all(b"{\"v\":1,\"status\":\"pending\",\"id\":\"r_0\"}\n");
            }
        });
        Probe {
            _dir: dir,
            wal,
            journal,
            socket,
        }
    }
}

/// Asks of one build: each the time from the ask leaving the client to its card's arrival.
#[derive(Default)]
struct Build {
    latencies: Vec<Duration>,
}

/// One ask on `daemon`, timed on the emulator's clock; the raw costs are sampled in the rest of
/// its second.
fn time_ask(bot: &Emulator, daemon: &Daemon, n: usize, raw: &mut Raw, probe: &Probe) -> Duration {
    let started = Instant::now();
    let from = bot.call_count();
    let asked_at = bot.elapsed();
    let id = ask(&daemon.socket, n);
    // Timed on the emulator's clock, when the call arrived rather than when this loop saw
    // it, and looking only at the calls since the ask: copying the whole history while the
    // card arrives held the emulator's lock longer as the run grew, and delayed the card.
    let card = || {
        bot.calls_since(from).into_iter().find(|call| {
            call.method == "sendmessage"
                && call.params["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(&id))
        })
    };
    let mut calls = bot.call_count();
    let arrival = loop {
        if let Some(call) = card() {
            break call.elapsed;
        }
        bot.wait_until_blocking("the card", Duration::from_secs(30), |bot| {
            bot.call_count() > calls
        })
        .unwrap();
        calls = bot.call_count();
    };
    std::thread::sleep(Duration::from_millis(300));
    raw.sample(probe);
    // Just over a second apart: the pacing's steady rate, so no card waits for a turn.
    if let Some(rest) = Duration::from_millis(1050).checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    arrival - asked_at
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

fn p50_p99(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    (percentile(samples, 0.5), percentile(samples, 0.99))
}

fn main() {
    let asks: usize = support::argument().unwrap_or(1000);
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let before = std::env::var_os("CONSENTD_BENCH_BEFORE").map(std::path::PathBuf::from);

    // Baseline: sendMessage straight to the emulator from this process, timed as the asks are:
    // from just before the request to its arrival, on the emulator's clock.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = teloxide::Bot::new(TOKEN).set_api_url(bot.api_url().parse().unwrap());
    let mut baseline = Vec::new();
    for n in 0..200 {
        let (from, sent_at) = (bot.call_count(), bot.elapsed());
        let request = teloxide::prelude::Requester::send_message(
            &client,
            teloxide::types::ChatId(OWNER + 1),
            format!("baseline {n}"),
        );
        runtime
            .block_on(std::future::IntoFuture::into_future(request))
            .unwrap();
        let arrival = bot.calls_since(from)[0].elapsed;
        baseline.push(arrival - sent_at);
    }

    // Batches of at most 100 asks (max_pending's ceiling), each on a fresh daemon, so no card
    // ever waits behind another message's turn; with a build to compare, the two alternate.
    let probe = Probe::new();
    let mut raw = Raw::default();
    let builds: Vec<Option<&std::path::Path>> = match &before {
        Some(path) => vec![None, Some(path.as_path())],
        None => vec![None],
    };
    let mut timed: Vec<Build> = builds.iter().map(|_| Build::default()).collect();
    let batches = asks.div_ceil(100);
    for batch in 0..batches {
        for (build, binary) in builds.iter().enumerate() {
            let options = support::Options {
                binary: *binary,
                ..support::Options::default()
            };
            // One uid asks them all: its share of max_pending is raised to the whole.
            let limits = "max_pending = 100\nmax_pending_per_uid = 100";
            let daemon = Daemon::start_with(&bot, limits, PUBLISH_X, options);
            for n in batch * 100..asks.min((batch + 1) * 100) {
                let latency = time_ask(&bot, &daemon, n, &mut raw, &probe);
                timed[build].latencies.push(latency);
            }
        }
    }
    report(&before, timed, baseline, raw);
}

/// Prints each build's figures beside the baseline and the raw costs, and the goal.
fn report(
    before: &Option<std::path::PathBuf>,
    timed: Vec<Build>,
    mut baseline: Vec<Duration>,
    mut raw: Raw,
) {
    let (b50, b99) = p50_p99(&mut baseline);
    let (commit50, commit99) = p50_p99(&mut raw.commit_fsync);
    let (journal50, journal99) = p50_p99(&mut raw.journal_fsync);
    let (socket50, socket99) = p50_p99(&mut raw.socket);
    println!(
        "baseline sendMessage, request to arrival: p50 {}, p99 {}",
        ms(b50),
        ms(b99)
    );
    println!(
        "raw fsync, 28 KiB rewritten + fsync: p50 {}, p99 {}",
        ms(commit50),
        ms(commit99)
    );
    println!(
        "raw fsync, 512 B appended + fdatasync: p50 {}, p99 {}",
        ms(journal50),
        ms(journal99)
    );
    println!(
        "socket round trip (connect, line, line): p50 {}, p99 {}",
        ms(socket50),
        ms(socket99)
    );
    let goal = commit50 * 2 + socket50 + Duration::from_micros(500);
    println!(
        "goal for the daemon's part at p50: two fsyncs + the socket + 0.5 ms = {}",
        ms(goal)
    );
    for (build, mut timed) in timed.into_iter().enumerate() {
        let name = match (build, before) {
            (0, _) => "this build".to_owned(),
            (_, Some(path)) => format!("before ({})", path.display()),
            (_, None) => unreachable!("one build without CONSENTD_BENCH_BEFORE"),
        };
        // Per batch of 100 (a fresh daemon each), to show the figure does not drift with the run.
        let batch_medians: Vec<String> = timed
            .latencies
            .chunks(100)
            .map(|batch| {
                let mut batch = batch.to_vec();
                batch.sort();
                ms(percentile(&batch, 0.5))
            })
            .collect();
        let (p50, p99) = p50_p99(&mut timed.latencies);
        let part = p50.saturating_sub(b50);
        println!("{name}: {} asks", timed.latencies.len());
        println!("  ask to card sent: p50 {}, p99 {}", ms(p50), ms(p99));
        println!("  per batch of 100, p50: {}", batch_medians.join(", "));
        println!(
            "  daemon's own part (p50 difference): {} ({:.1}x the baseline); goal {}: {}",
            ms(part),
            p50.as_secs_f64() / b50.as_secs_f64(),
            ms(goal),
            if part <= goal { "met" } else { "not met" }
        );
    }
}
