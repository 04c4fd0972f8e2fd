//! A runaway agent, for docs/BENCHMARKS.md: 10,000 asks from 16 concurrent clients in one burst
//! against a release `consentd serve` with `max_pending = 20` and the Bot API emulator. Measures
//! the burst's asks per second against the raw fsync rate of the same disk (measured here, in the
//! same run: each refused ask is recorded and journaled, so it costs a commit and an fsync), the
//! refusals' round trip, the daemon's memory before and after, and counts the cards the owner's
//! chat got (it must be `max_pending`).
//!
//! Run: `cargo bench --bench runaway [-- ASKS]` (default 10000).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;
use support::{percentile, Daemon, OWNER, PUBLISH_X, TOKEN};

const CLIENTS: usize = 16;
const MAX_PENDING: usize = 20;

/// One ask with `wait` on; a pending one's connection is returned open, a refusal must be the
/// connection's only line.
fn ask(socket: &std::path::Path, client: usize, n: usize) -> Option<UnixStream> {
    let mut stream = UnixStream::connect(socket).unwrap();
    let frame = format!(
        "{{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@bench\",\
         \"text\":\"runaway {client}-{n}\"}}\n"
    );
    stream.write_all(frame.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    match answer["status"].as_str() {
        Some("pending") => Some(reader.into_inner()),
        Some("refused") if answer["reason"] == "too_many_pending" => {
            let mut rest = String::new();
            reader.read_to_string(&mut rest).unwrap();
            assert!(rest.is_empty(), "a refusal was not final: {rest}");
            None
        }
        _ => panic!("unexpected answer {answer}"),
    }
}

fn main() {
    let asks: usize = support::argument().unwrap_or(10_000);
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(&bot, &format!("max_pending = {MAX_PENDING}"), PUBLISH_X);
    std::thread::sleep(Duration::from_millis(500));
    let (idle_peak, idle_rss) = daemon.memory_kib();
    let burst = || {
        let started = Instant::now();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let socket = daemon.socket.clone();
                std::thread::spawn(move || {
                    let mut held = Vec::new();
                    let mut refusals = Vec::new();
                    for n in (client..asks).step_by(CLIENTS) {
                        let sent = Instant::now();
                        match ask(&socket, client, n) {
                            Some(stream) => held.push(stream),
                            None => refusals.push(sent.elapsed()),
                        }
                    }
                    (held, refusals)
                })
            })
            .collect();
        let mut held = Vec::new();
        let mut refusals = Vec::new();
        for client in clients {
            let (client_held, client_refusals) = client.join().unwrap();
            held.extend(client_held);
            refusals.extend(client_refusals);
        }
        (started.elapsed(), held, refusals)
    };
    let (fsync, (burst, held, mut refusals)) =
        support::with_fsync_baseline(daemon.dir.path(), burst);
    let (peak, rss) = daemon.memory_kib();
    assert_eq!(held.len(), MAX_PENDING, "asks let through");
    assert_eq!(refusals.len(), asks - MAX_PENDING);

    // The cards go out at the sender's pace (about one a second): wait for them, then a little
    // more, so a card too many would have been seen.
    let cards = |bot: &Emulator| {
        bot.messages(OWNER)
            .iter()
            .filter(|m| m.outgoing && !m.buttons().is_empty())
            .count()
    };
    bot.wait_until_blocking("the cards", Duration::from_secs(120), |bot| {
        cards(bot) >= MAX_PENDING
    })
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let shown = cards(&bot);
    assert_eq!(shown, MAX_PENDING, "cards in the owner's chat");
    drop(held);

    refusals.sort();
    let rate = asks as f64 / burst.as_secs_f64();
    println!("asks: {asks} from {CLIENTS} clients, max_pending {MAX_PENDING}");
    println!("{fsync}");
    println!(
        "burst: {burst:.2?}, {rate:.0} asks/s = {:.2}x the raw fsync rate",
        rate / fsync.rate()
    );
    println!(
        "refused too_many_pending: {}, round trip p50 {:?}, p99 {:?}, max {:?}",
        refusals.len(),
        percentile(&refusals, 0.5),
        percentile(&refusals, 0.99),
        refusals.last().unwrap()
    );
    println!("cards in the owner's chat: {shown}");
    println!(
        "daemon memory: idle VmRSS {idle_rss} KiB (VmHWM {idle_peak}); after the burst VmRSS \
         {rss} KiB, VmHWM {peak} KiB = {:.2}x idle",
        peak as f64 / idle_peak as f64
    );
}
