//! Durable decisions per second under a mandate, for docs/BENCHMARKS.md: a release `consentd
//! serve` and the Bot API emulator; the owner grants mandates (one per target, 100 actions a day
//! each, the ceiling), then clients send asks they cover, each waiting for its final line — the
//! covered claim committed and journaled, `/bin/true` run, the outcome committed and journaled
//! with its receipt queued. Baseline in the same run: the raw fsync rate of the same disk. Also
//! the daemon's memory idle and after the load.
//!
//! Run: `cargo bench --bench decisions [-- MANDATES]` (default 10, so 1,000 decisions).

mod support;

use std::time::{Duration, Instant};

use consentd_emulator::{ChatSpec, Emulator, UserSpec};
use serde_json::json;
use support::{percentile, Daemon, OWNER, PUBLISH_X, TOKEN};

const CLIENTS: usize = 4;
/// `mandate_max_actions_per_day`'s ceiling: the most one mandate covers in a day.
const ACTIONS: usize = 100;

fn line(value: &serde_json::Value) -> Vec<u8> {
    let mut frame = serde_json::to_vec(value).unwrap();
    frame.push(b'\n');
    frame
}

/// Asks for a mandate on `target`, waits for its card and grants it as the owner.
fn grant(daemon: &Daemon, bot: &Emulator, target: &str) {
    let request = json!({"v":1,"op":"mandate","kind":"publish_x","targets":[target],"days":1,
        "usd_per_day":"1.00","actions_per_day":ACTIONS,"reason":"Benchmark","wait":false});
    let answer = support::request(&daemon.socket, &line(&request)).unwrap();
    let id = answer[0]["id"].as_str().unwrap().to_owned();
    let card = || {
        bot.messages(OWNER).into_iter().find(|m| {
            m.outgoing
                && !m.buttons().is_empty()
                && m.text.as_deref().is_some_and(|t| t.contains(&id))
        })
    };
    bot.wait_until_blocking("the mandate's card", Duration::from_secs(60), |_| {
        card().is_some()
    })
    .unwrap();
    let card = card().unwrap();
    let grant = card.buttons()[0].callback_data.clone().unwrap();
    bot.press_button(
        &UserSpec::new(OWNER, "Mila"),
        ChatSpec::private(OWNER),
        card.message_id,
        &grant,
    )
    .unwrap();
    let status = line(&json!({"v":1,"op":"status","id":id}));
    let deadline = Instant::now() + Duration::from_secs(30);
    while support::request(&daemon.socket, &status).unwrap()[0]["status"] != "granted" {
        assert!(Instant::now() < deadline, "mandate {id} was not granted");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn main() {
    let mandates: usize = support::argument().unwrap_or(10);
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(&bot, "max_pending = 100", PUBLISH_X);
    std::thread::sleep(Duration::from_millis(500));
    let (_, idle_rss) = daemon.memory_kib();
    let targets: Vec<String> = (0..mandates).map(|m| format!("@bench{m}")).collect();
    for target in &targets {
        grant(&daemon, &bot, target);
    }
    let decisions = mandates * ACTIONS;

    let load = || {
        let started = Instant::now();
        let latencies: Vec<Duration> = std::thread::scope(|scope| {
            let clients: Vec<_> = (0..CLIENTS)
                .map(|client| {
                    let (daemon, targets) = (&daemon, &targets);
                    scope.spawn(move || {
                        let mut latencies = Vec::new();
                        for n in (client..decisions).step_by(CLIENTS) {
                            let ask = json!({"v":1,"op":"ask","kind":"publish_x",
                            "target":targets[n % targets.len()],"text":format!("decision {n}")});
                            let sent = Instant::now();
                            let answer = support::request(&daemon.socket, &line(&ask)).unwrap();
                            latencies.push(sent.elapsed());
                            let last = answer.last().unwrap();
                            assert_eq!(last["status"], "executed", "{answer:?}");
                        }
                        latencies
                    })
                })
                .collect();
            clients
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .collect()
        });
        (started.elapsed(), latencies)
    };
    let (fsync, (elapsed, mut latencies)) = support::with_fsync_baseline(daemon.dir.path(), load);
    let (loaded_peak, loaded_rss) = daemon.memory_kib();

    latencies.sort();
    let rate = decisions as f64 / elapsed.as_secs_f64();
    println!("{decisions} covered asks under {mandates} mandates from {CLIENTS} clients");
    println!("{fsync}");
    println!(
        "decisions (ask -> /bin/true -> receipt queued): {rate:.0}/s = {:.2}x the raw fsync rate",
        rate / fsync.rate()
    );
    println!(
        "ask to final line: p50 {:?}, p99 {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    println!(
        "daemon memory: idle VmRSS {idle_rss} KiB; after the load VmRSS {loaded_rss} KiB, VmHWM \
         {loaded_peak} KiB"
    );
}
