//! Durable decisions per second under a mandate, for docs/BENCHMARKS.md: a release `consentd
//! serve` and the Bot API emulator; the owner grants mandates (one per kind, each with one target
//! and 100 actions a day, the ceiling: the open mandates of a kind share the config's ceilings on
//! a day, so each hundred decisions needs a kind of its own), then clients send asks they cover,
//! each waiting for its final line — the
//! covered claim committed and journaled, the command run with the action's JSON on its stdin,
//! the outcome committed and journaled with its receipt queued. First one client, then 16.
//!
//! Two baselines in the same run: the raw fsync rate of the same disk, and the rate at which 16
//! threads can spawn the same command with a JSON action on its stdin and wait for it (on two
//! cores the spawns, not the disk, may be the limit). Also the daemon's memory, idle and after
//! the load.
//!
//! Run: `cargo bench --bench decisions [-- DECISIONS]` (default 1200 for 16 clients; one client
//! makes a sixth of that).

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use consentd_emulator::{ChatSpec, Emulator, UserSpec};
use serde_json::json;
use support::{percentile, Daemon, OWNER, TOKEN};

/// `mandate_max_actions_per_day`'s ceiling: the most one kind's mandates cover in a day.
const ACTIONS: usize = 100;
/// The command every decision runs: it reads the action's JSON and prints its result, as an
/// action command does (the example in the README), without leaving the machine.
const COMMAND: [&str; 3] = [
    "/bin/sh",
    "-c",
    "cat >/dev/null; echo https://example.test/post",
];

/// A kind and the one target its mandate names.
#[derive(Debug, Clone)]
struct Slot {
    kind: String,
    target: String,
}

/// `count` slots, each its own kind.
fn slots(count: usize) -> Vec<Slot> {
    (0..count)
        .map(|m| Slot {
            kind: format!("publish_x{m}"),
            target: format!("@bench{m}"),
        })
        .collect()
}

/// The categories of `slots`, alike but for their names.
fn categories(slots: &[Slot]) -> String {
    slots.iter().map(|slot| category(&slot.kind)).collect()
}

fn category(kind: &str) -> String {
    format!(
        r#"
[categories.{kind}]
label = {{ en = "Post" }}
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
cost = "none"
command = {COMMAND:?}
"#
    )
}

fn line(value: &serde_json::Value) -> Vec<u8> {
    let mut frame = serde_json::to_vec(value).unwrap();
    frame.push(b'\n');
    frame
}

/// Asks for a mandate on the slot's kind and target, waits for its card and grants it as the owner.
fn grant(daemon: &Daemon, bot: &Emulator, slot: &Slot) {
    let request = json!({"v":1,"op":"mandate","kind":slot.kind,"targets":[slot.target],"days":1,
        "usd_per_day":"0.00","actions_per_day":ACTIONS,"reason":"Benchmark","wait":false});
    let answer = support::request(&daemon.socket, &line(&request)).unwrap();
    assert_eq!(
        answer[0]["status"], "pending",
        "the mandate request: {answer:?}"
    );
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

/// How fast `threads` threads spawn [`COMMAND`] with a JSON action on stdin and wait for it.
fn spawn_rate(threads: usize, total: usize) -> f64 {
    let action = br#"{"id":"r_bench","kind":"publish_x","target":"@bench","text":"decision"}"#;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..total / threads {
                    let mut child = Command::new(COMMAND[0])
                        .args(&COMMAND[1..])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .spawn()
                        .unwrap();
                    child.stdin.take().unwrap().write_all(action).unwrap();
                    let output = child.wait_with_output().unwrap();
                    assert!(output.status.success());
                }
            });
        }
    });
    (total / threads * threads) as f64 / started.elapsed().as_secs_f64()
}

/// `count` covered asks from `clients` threads over `slots`; the time and each ask's latency.
fn load(
    daemon: &Daemon,
    slots: &[Slot],
    clients: usize,
    count: usize,
) -> (Duration, Vec<Duration>) {
    let started = Instant::now();
    let mut latencies: Vec<Duration> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..clients)
            .map(|client| {
                scope.spawn(move || {
                    let mut latencies = Vec::new();
                    for n in (client..count).step_by(clients) {
                        let slot = &slots[n % slots.len()];
                        let ask = json!({"v":1,"op":"ask","kind":slot.kind,
                            "target":slot.target,"text":format!("decision {n}")});
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
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    latencies.sort();
    (started.elapsed(), latencies)
}

fn main() {
    let decisions: usize = support::argument().unwrap_or(1200);
    let single = decisions / 6;
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let slots = slots(single.div_ceil(ACTIONS) + decisions.div_ceil(ACTIONS));
    let daemon = Daemon::start(&bot, "max_pending = 100", &categories(&slots));
    std::thread::sleep(Duration::from_millis(500));
    let (_, idle_rss) = daemon.memory_kib();
    for slot in &slots {
        grant(&daemon, &bot, slot);
    }
    let (one_slots, many_slots) = slots.split_at(single.div_ceil(ACTIONS));

    let spawns = spawn_rate(16, 800);
    let (fsync, (one, many)) = support::with_fsync_baseline(daemon.dir.path(), || {
        let one = load(&daemon, one_slots, 1, single);
        let many = load(&daemon, many_slots, 16, decisions);
        (one, many)
    });
    let (loaded_peak, loaded_rss) = daemon.memory_kib();

    println!("{fsync}");
    println!("16 threads spawning the command and waiting: {spawns:.0}/s");
    let lower = fsync.rate().min(spawns);
    for (clients, count, (elapsed, latencies)) in [(1, single, one), (16, decisions, many)] {
        let rate = count as f64 / elapsed.as_secs_f64();
        println!(
            "{clients:>2} client(s), {count} decisions (ask -> command -> receipt queued): \
             {rate:.0}/s = {:.2}x the raw fsync rate, {:.2}x the spawn rate, {:.2}x the lower; \
             ask to final line p50 {:?}, p99 {:?}",
            rate / fsync.rate(),
            rate / spawns,
            rate / lower,
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        );
    }
    println!(
        "daemon memory: idle VmRSS {idle_rss} KiB; after the load VmRSS {loaded_rss} KiB, VmHWM \
         {loaded_peak} KiB"
    );
}
