//! The Telegram fault soak for docs/BENCHMARKS.md: a release `consentd serve` against the Bot API
//! emulator until at least 10,000 Bot API calls have been made, with 429s (`retry_after` 1 to
//! 30 s), 5xx, timeouts past teloxide's 17 s, dropped connections, cut-off answers, poison
//! updates, duplicate and out-of-order `update_id`s. Checked at the end: nothing panicked, only
//! the owner's valid Yes granted (one decision per record, one run per grant), every forged
//! press Telegram handed over was rejected once, every card was shown or its record expired,
//! and every 429's `retry_after` was waited out (measured on the emulator's clock).
//!
//! Pacing: each round waits for the daemon to take the updates pushed and make a call, and a
//! fault is added for a method only once the last one for it was met; the sender's faults come
//! one at a time with a good send between, so no row's backoff grows to its 30 s ceiling. A loop
//! faster than the daemon would otherwise heap up faults, and the daemon would spend the run
//! backing off from them: that, not the daemon, was why an earlier draft stalled.
//!
//! Run: `cargo bench --bench telegram_faults [-- CALLS]` (default 10000; about 3 minutes).

mod support;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use consentd_emulator::{
    poisoned, retry_gaps, Call, ChatSpec, Emulator, Outcome, Scripted, UserSpec,
};
use serde_json::{json, Value};

use support::{Daemon, Options, OWNER, TOKEN};

const ASKS: usize = 20;
const SENDER: [&str; 4] = [
    "sendmessage",
    "editmessagetext",
    "sendphoto",
    "senddocument",
];

/// xorshift64*: reproducible faults without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One request, its last answer line.
fn request(socket: &Path, request: &Value) -> Value {
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    support::request(socket, &frame)
        .and_then(|mut lines| lines.pop())
        .unwrap_or(Value::Null)
}

fn main() {
    let target: usize = support::argument().unwrap_or(10_000);
    let started = Instant::now();
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    // The runs' log and the daemon's log and clock live beside the daemon's own directory.
    let dir = tempfile::tempdir().unwrap();
    let (clock, daemon_log) = (dir.path().join("clock"), dir.path().join("daemon.log"));
    std::fs::write(&clock, "0").unwrap();
    let category = format!(
        r#"
[categories.publish_x]
label = {{ en = "Post" }}
class = "external"
enabled = true
target = "required"
text = "required"
command = ["/bin/sh", "-c", "echo ran >> {dir}/ran.log; echo ok"]
"#,
        dir = dir.path().display()
    );
    let mut daemon = Daemon::start_with(
        &bot,
        &format!("max_pending = {ASKS}"),
        &category,
        Options {
            clock_file: Some(&clock),
            log_file: Some(&daemon_log),
            binary: None,
        },
    );
    let socket = daemon.socket.clone();

    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let mut scripted: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut script = |bot: &Emulator, method: &str, fault: Scripted, kind: &'static str| {
        *scripted.entry(kind).or_default() += 1;
        bot.script(method, fault);
    };
    // The sender's faults, one at a time and only after a good send since the last one, so that
    // no row meets them all in a row (its backoff would grow to 30 s a try): 429s with
    // retry_after from 1 to 30, and each other kind of fault.
    let mut sender_faults: VecDeque<(&str, Scripted, &'static str)> = [
        ("sendMessage", Scripted::too_many_requests(1), "429"),
        ("editMessageText", Scripted::MalformedJson, "malformed"),
        ("sendMessage", Scripted::Drop, "reset"),
        ("sendMessage", Scripted::too_many_requests(2), "429"),
        ("editMessageText", Scripted::too_many_requests(21), "429"),
        ("sendMessage", Scripted::server_error(502), "5xx"),
        ("sendMessage", Scripted::too_many_requests(3), "429"),
        ("editMessageText", Scripted::server_error(500), "5xx"),
        ("sendMessage", Scripted::MalformedJson, "malformed"),
        ("sendMessage", Scripted::too_many_requests(5), "429"),
        ("editMessageText", Scripted::Drop, "reset"),
        (
            "sendMessage",
            Scripted::Delay(Duration::from_secs(18)),
            "timeout",
        ),
        ("sendMessage", Scripted::too_many_requests(8), "429"),
        ("editMessageText", Scripted::too_many_requests(30), "429"),
        ("sendMessage", Scripted::Drop, "reset"),
        ("sendMessage", Scripted::too_many_requests(13), "429"),
    ]
    .into_iter()
    .collect();
    let mut last_sender_fault_at = 0;

    let ids: Vec<String> = (0..ASKS)
        .map(|n| {
            let answer = request(
                &socket,
                &json!({"v":1,"op":"ask","kind":"publish_x","target":"@soak",
                        "text":format!("soak ask {n}"),"wait":false}),
            );
            answer["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let owner = UserSpec::new(OWNER, "Mila");
    let chat = ChatSpec::private(OWNER);
    let mut decided: BTreeMap<String, bool> = BTreeMap::new();
    let (mut pushed, mut duplicates, mut out_of_order, mut poison, mut commands) = (0, 0, 0, 0, 0);
    let mut last_id = 0;
    // The ids of the forged presses (the poison ones aside), to account for each at the end.
    let (mut forged_ids, mut poison_ids) = (BTreeSet::new(), BTreeSet::new());
    let mut in_order_poison_ids = BTreeSet::new();
    let mut seen = 0;
    let mut round = 0u64;
    // Past the target, until every sendMessage fault was met (the owner's commands make sends);
    // edit faults left over meet the expiry edits at the end.
    while seen < target
        || sender_faults
            .iter()
            .any(|(method, ..)| *method == "sendMessage")
    {
        // The owner answers a third of the cards Yes and a third No, each once; the rest expire.
        // One answer every 100 rounds, so that the edits they cause are spread over the run.
        round += 1;
        // The newest copy of a card first: a send whose answer was lost is sent again, and only
        // the copy the daemon heard back about counts (an older copy's press is wrong_message).
        let answering = if round.is_multiple_of(100) {
            let mut messages = bot.messages(OWNER);
            messages.reverse();
            messages
        } else {
            Vec::new()
        };
        for message in answering {
            let Some(text) = message.text.as_deref() else {
                continue;
            };
            let Some((index, id)) = ids.iter().enumerate().find(|(_, id)| text.contains(*id))
            else {
                continue;
            };
            if message.buttons().is_empty() || decided.contains_key(id) || index % 3 == 2 {
                continue;
            }
            let yes = index % 3 == 0;
            let data = message.buttons()[usize::from(!yes)]
                .callback_data
                .clone()
                .unwrap();
            last_id = bot.push_press(&owner, chat, message.message_id, &data);
            decided.insert(id.clone(), yes);
            pushed += 1;
            break;
        }
        // The next sender fault, once the last one was met and a send went through since it
        // was added (looking only at the calls since then).
        if !sender_faults.is_empty()
            && SENDER.iter().all(|m| bot.pending_scripts_for(m) == 0)
            && bot
                .calls_since(last_sender_fault_at)
                .iter()
                .any(|c| SENDER.contains(&c.method.as_str()) && c.is_ok())
        {
            if let Some((method, fault, kind)) = sender_faults.pop_front() {
                last_sender_fault_at = bot.call_count();
                script(&bot, method, fault, kind);
            }
        }
        // Faults on the next getUpdates and press answers, each added only once the last one
        // for its method was met: otherwise a loop faster than the daemon heaps them up.
        let roll = if bot.pending_scripts_for("getUpdates") == 0 {
            rng.below(1000)
        } else {
            1000
        };
        match roll {
            0..=3 => script(&bot, "getUpdates", Scripted::MalformedJson, "malformed"),
            4..=6 => script(&bot, "getUpdates", Scripted::Drop, "reset"),
            7 => script(&bot, "getUpdates", Scripted::too_many_requests(1), "429"),
            8 if rng.below(4) == 0 => {
                let after = 1 + rng.below(30) as u32;
                script(
                    &bot,
                    "getUpdates",
                    Scripted::too_many_requests(after),
                    "429",
                );
            }
            _ => {}
        }
        let roll = if bot.pending_scripts_for("answerCallbackQuery") == 0 {
            rng.below(100)
        } else {
            100
        };
        match roll {
            0..=9 => script(&bot, "answerCallbackQuery", Scripted::Drop, "reset"),
            10..=19 => script(
                &bot,
                "answerCallbackQuery",
                Scripted::MalformedJson,
                "malformed",
            ),
            20..=22 => script(
                &bot,
                "answerCallbackQuery",
                Scripted::server_error(503),
                "5xx",
            ),
            23 if rng.below(10) == 0 => script(
                &bot,
                "answerCallbackQuery",
                Scripted::Delay(Duration::from_secs(18)),
                "timeout",
            ),
            _ => {}
        }
        // Forged presses on the cards (a changed tag), two at a time, sometimes duplicated,
        // sometimes out of order, now and then a poison update.
        let card = bot
            .messages(OWNER)
            .into_iter()
            .find(|m| !m.buttons().is_empty());
        if let Some(card) = card {
            let mut data = card.buttons()[0].callback_data.clone().unwrap();
            let tag = data.rfind('.').unwrap() + 1;
            let other = if data[tag..].starts_with('A') {
                "B"
            } else {
                "A"
            };
            data.replace_range(tag..=tag, other);
            let mut first = bot.callback_update(&owner, chat, card.message_id, &data);
            let mut second = bot.callback_update(&owner, chat, card.message_id, &data);
            let base = last_id + 1;
            let out_of_order_pair = rng.below(10) == 0;
            if out_of_order_pair {
                // Out of order: the higher id first.
                first["update_id"] = json!(base + 1);
                second["update_id"] = json!(base);
                out_of_order += 1;
            } else {
                first["update_id"] = json!(base);
                second["update_id"] = json!(base + 1);
            }
            let id_of = |update: &Value| update["update_id"].as_i64().unwrap();
            forged_ids.insert(id_of(&first));
            if rng.below(250) == 0 {
                // One pushed after a higher id may be confirmed away unseen, as Telegram would.
                if !out_of_order_pair {
                    in_order_poison_ids.insert(id_of(&second));
                }
                poison_ids.insert(id_of(&second));
                second = poisoned(second);
                poison += 1;
            } else {
                forged_ids.insert(id_of(&second));
            }
            bot.push_update(first.clone());
            bot.push_update(second);
            pushed += 2;
            if rng.below(10) == 0 {
                bot.push_update(first);
                duplicates += 1;
                pushed += 1;
            }
            last_id = base + 1;
        }
        // Now and then the owner asks the bot something: replies keep the sender busy all run.
        if rng.below(12) == 0 {
            let command = if rng.below(2) == 0 {
                "/help"
            } else {
                "/anchor"
            };
            last_id = bot.push_text(&owner, chat, command);
            pushed += 1;
            commands += 1;
        }
        // Paced by the daemon: the updates taken and at least one more call made.
        if let Err(error) =
            bot.wait_until_blocking("the updates handled", Duration::from_secs(120), |bot| {
                bot.pending_updates().is_empty() && bot.call_count() > seen
            })
        {
            let log = std::fs::read_to_string(&daemon_log).unwrap_or_default();
            panic!("{error}\n{log}");
        }
        seen = bot.call_count();
    }
    // Any edit fault still unmet meets the expiry edits below.
    for (method, fault, kind) in sender_faults.drain(..) {
        script(&bot, method, fault, kind);
    }
    // The rest expire: the daemon's clock moves past the ttl.
    std::fs::write(&clock, (16 * 60).to_string()).unwrap();
    let ended = |id: &String| {
        let state = request(&socket, &json!({"v":1,"op":"status","id":id}))["status"].clone();
        matches!(
            state.as_str(),
            Some("executed" | "declined" | "expired" | "failed")
        )
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !ids.iter().all(ended) {
        assert!(Instant::now() < deadline, "records never ended");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Every fault met but a press answer's, which no press is left to meet.
    bot.wait_until_blocking("the outbox drained", Duration::from_secs(300), |bot| {
        bot.pending_scripts() == bot.pending_scripts_for("answerCallbackQuery")
    })
    .unwrap();
    let unmet = bot.pending_scripts();
    // And every 429 retried: the last may have come with the expiry edits just now.
    bot.wait_until_blocking("every 429 retried", Duration::from_secs(120), |bot| {
        let calls = bot.calls();
        let throttled = calls
            .iter()
            .filter(|c| matches!(c.outcome, Some(Outcome::Error { code: 429, .. })))
            .count();
        all_retry_gaps(&calls).len() == throttled
    })
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let wall = started.elapsed();
    daemon.kill();

    // The checks.
    // Empty when CONSENTD_BENCH_LOG took the log elsewhere.
    let log = std::fs::read_to_string(&daemon_log).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
    let journal: Vec<Value> =
        std::fs::read_to_string(daemon.dir.path().join("state/decisions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let mut shown = BTreeSet::new();
    let mut outcome: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &journal {
        let (ev, id) = (line["ev"].as_str().unwrap(), line["id"].as_str());
        match (ev, id) {
            ("card_shown", Some(id)) => {
                shown.insert(id.to_owned());
            }
            ("granted" | "declined" | "expired", Some(id)) => outcome
                .entry(id.to_owned())
                .or_default()
                .push(ev.to_owned()),
            _ => {}
        }
    }
    // A genuine press on a copy of a card whose send went unanswered (the sender sent it again)
    // counts for nothing: that record then expires, and its press is one rejection more.
    let lost: BTreeSet<String> = journal
        .iter()
        .filter(|l| l["ev"] == "press_rejected" && l["reason"] == "wrong_message")
        .filter_map(|l| l["subject"].as_str().map(str::to_owned))
        .filter(|id| decided.contains_key(id))
        .collect();
    let (mut granted, mut declined, mut expired, mut undelivered) = (0, 0, 0, 0);
    for id in &ids {
        let decisions = outcome.get(id).cloned().unwrap_or_default();
        assert_eq!(decisions.len(), 1, "{id}: {decisions:?}");
        let expected = match decided.get(id) {
            _ if lost.contains(id) => "expired",
            Some(true) => "granted",
            Some(false) => "declined",
            None => "expired",
        };
        assert_eq!(decisions[0], expected, "{id}");
        match expected {
            "granted" => granted += 1,
            "declined" => declined += 1,
            _ => expired += 1,
        }
        if !shown.contains(id) {
            assert_eq!(expected, "expired", "{id} was decided without a card");
            undelivered += 1;
        }
    }
    let runs = std::fs::read_to_string(dir.path().join("ran.log"))
        .map(|l| l.lines().count())
        .unwrap_or(0);
    assert_eq!(runs, granted, "runs");
    let rejected = journal
        .iter()
        .filter(|l| l["ev"] == "press_rejected")
        .count();
    // Each forged press Telegram handed over is rejected once, its duplicates never again. The
    // rest were lower ids pushed after a higher one was confirmed: Telegram drops those.
    let calls = bot.calls();
    let forged_delivered = delivered_ids(&calls).intersection(&forged_ids).count();
    assert_eq!(rejected, forged_delivered + lost.len(), "presses rejected");
    // No poison was acted on: a rejection would be counted above. Each one handed over in order
    // was found and skipped.
    let poison_delivered: Vec<i64> = delivered_ids(&calls)
        .intersection(&poison_ids)
        .copied()
        .collect();
    if std::env::var_os("CONSENTD_BENCH_LOG").is_none() {
        for id in poison_delivered
            .iter()
            .filter(|id| in_order_poison_ids.contains(id))
        {
            assert!(
                log.lines().any(
                    |line| line.contains("skipping an update teloxide cannot read")
                        && line.contains(&format!("update_id={id}"))
                ),
                "poison {id} not skipped:\n{log}"
            );
        }
    }

    let mut by_outcome: BTreeMap<String, usize> = BTreeMap::new();
    for call in &calls {
        let kind = match &call.outcome {
            Some(Outcome::Ok(_)) => "ok".to_owned(),
            Some(Outcome::Error { code, .. }) => format!("error {code}"),
            Some(Outcome::Dropped) => "connection reset".to_owned(),
            Some(Outcome::MalformedJson) => "malformed JSON".to_owned(),
            None => "unanswered (timed out, or in flight at the end)".to_owned(),
        };
        *by_outcome.entry(kind).or_default() += 1;
    }
    let gaps = all_retry_gaps(&calls);
    for (after, gap) in &gaps {
        assert!(
            *gap >= Duration::from_secs(u64::from(*after)),
            "retry_after {after} s retried after {gap:?}"
        );
    }
    let worst = gaps
        .iter()
        .map(|(after, gap)| gap.as_secs_f64() - f64::from(*after))
        .fold(f64::NEG_INFINITY, f64::max);
    let longest = gaps.iter().max_by_key(|(after, _)| *after);

    println!("Bot API calls: {}", calls.len());
    println!("answers by kind: {by_outcome:?}");
    println!("faults scripted by kind: {scripted:?} (left unmet: {unmet})");
    println!(
        "updates pushed: {pushed} (duplicates {duplicates}, out-of-order pairs {out_of_order}, \
         poison {poison}, owner's commands {commands})"
    );
    println!(
        "forged presses: {} pushed, {forged_delivered} delivered, {rejected} rejected (journal); \
         poison updates: {} pushed, {} handed over, none acted on, the {} handed over in order \
         each skipped",
        forged_ids.len(),
        poison_ids.len(),
        poison_delivered.len(),
        poison_delivered
            .iter()
            .filter(|id| in_order_poison_ids.contains(id))
            .count()
    );
    println!(
        "asks: {ASKS}; granted {granted} (runs {runs}), declined {declined}, expired {expired} \
         (of them never shown: {undelivered})"
    );
    println!(
        "429s retried: {}; every retry came at least retry_after later; most extra wait {worst:.2} s; \
         longest retry_after {:?}",
        gaps.len(),
        longest
    );
    println!("wall time: {:.1} s", wall.as_secs_f64());
}

/// Every 429's `retry_after` and the gap to the next call on its path: the sender's methods, or
/// the poller's getUpdates (each makes one call at a time).
fn all_retry_gaps(calls: &[Call]) -> Vec<(u32, Duration)> {
    let mut gaps = retry_gaps(calls, &SENDER);
    gaps.extend(retry_gaps(calls, &["getupdates"]));
    gaps
}

/// The `update_id`s getUpdates handed over in answers that read.
fn delivered_ids(calls: &[Call]) -> BTreeSet<i64> {
    calls
        .iter()
        .filter(|c| c.method == "getupdates")
        .filter_map(|c| match &c.outcome {
            Some(Outcome::Ok(Value::Array(updates))) => Some(updates),
            _ => None,
        })
        .flatten()
        .filter_map(|u| u["update_id"].as_i64())
        .collect()
}
