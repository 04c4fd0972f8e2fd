//! Ask-to-card latency for docs/BENCHMARKS.md: a release `consentd serve` against the Bot API
//! emulator, one ask at a time, from the ask leaving the client to the card's `sendMessage`
//! reaching the emulator, both instants on the emulator's clock. Asks are spaced just over a
//! second apart, so the daemon's pacing of one message a second to the owner's chat (a Telegram
//! limit, not latency) never holds a card back.
//! Baseline in the same run: a bare `sendMessage` from this process to the same emulator, from
//! the request to its arrival, on the same clock; the difference is the daemon's own part (socket, checks, SQLite commit and journal
//! fsync, drawing the card, the outbox).
//!
//! Asks go in batches of 100 (max_pending's ceiling), each batch on a fresh daemon and state
//! directory, so no card ever waits behind another message's turn.
//!
//! Run: `cargo bench --bench card_latency [-- ASKS]` (default 1000; about 1.1 s per ask).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;

use support::{percentile, Daemon, OWNER, PUBLISH_X, TOKEN};

fn start_daemon(bot: &Emulator) -> Daemon {
    Daemon::start(bot, "max_pending = 100", PUBLISH_X)
}

fn ask(socket: &std::path::Path, n: usize) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    let frame = format!(
        "{{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\",\"target\":\"@bench\",\"text\":\"ask number {n}\",\"wait\":false}}\n"
    );
    stream.write_all(frame.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let value: serde_json::Value = serde_json::from_str(answer.trim()).unwrap();
    value["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

fn main() {
    let asks: usize = support::argument().unwrap_or(1000);
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();

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
    // ever waits behind another message's turn.
    let mut latencies = Vec::with_capacity(asks);
    let mut daemon = start_daemon(&bot);
    for n in 0..asks {
        if n > 0 && n % 100 == 0 {
            drop(daemon);
            daemon = start_daemon(&bot);
        }
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
        latencies.push(arrival - asked_at);
        // Just over a second apart: the pacing's steady rate, so no card waits for a turn.
        if let Some(rest) = Duration::from_millis(1050).checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    drop(daemon);

    // Per batch (a fresh daemon each), to show the figure does not drift with the run.
    let batch_medians: Vec<String> = latencies
        .chunks(100)
        .map(|batch| {
            let mut batch = batch.to_vec();
            batch.sort();
            format!("{:.2} ms", percentile(&batch, 0.5).as_secs_f64() * 1e3)
        })
        .collect();
    latencies.sort();
    baseline.sort();
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    let (b50, b99) = (percentile(&baseline, 0.5), percentile(&baseline, 0.99));
    println!("asks: {asks}");
    println!("ask to card sent: p50 {p50:?}, p99 {p99:?}");
    println!("per batch of 100, p50: {}", batch_medians.join(", "));
    println!("baseline sendMessage, request to arrival: p50 {b50:?}, p99 {b99:?}");
    println!(
        "daemon's own part (p50 difference): {:?}; latency / baseline at p50: {:.1}x",
        p50.saturating_sub(b50),
        p50.as_secs_f64() / b50.as_secs_f64()
    );
}
