//! The Telegram fault soak for docs/BENCHMARKS.md: a release `consentd serve` against the Bot API
//! emulator until at least 10,000 Bot API calls have been made, with 429s (`retry_after` 1 to
//! 30 s), 5xx, timeouts past teloxide's 17 s, dropped connections, cut-off answers, poison
//! updates, duplicate and out-of-order `update_id`s. Checked at the end: nothing panicked, only
//! the owner's valid Yes granted (one decision per record), every card was shown or its record
//! expired, and every 429's `retry_after` was waited out (measured on the emulator's clock).
//!
//! The poller backs off 2 s after a failed getUpdates and teloxide waits 10 s on a 5xx, so faults
//! on getUpdates and the sender are kept sparse and most fall on `answerCallbackQuery`, which
//! is answered off the loop: the soak stays minutes long, not hours.
//!
//! Run: `cargo bench --bench telegram_faults [-- CALLS]` (default 10000).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use consentd::emulator::{ChatSpec, Emulator, Outcome, Scripted, UserSpec};
use serde_json::{json, Value};

const TOKEN: &str = "123456:SOAK";
const OWNER: i64 = 42;
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

fn request(socket: &std::path::Path, request: &Value) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    stream.write_all(&frame).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    serde_json::from_str(answer.lines().last().unwrap_or("null")).unwrap()
}

fn poisoned(mut update: Value) -> Value {
    let mut deep = json!(0);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    update["callback_query"]["junk"] = deep;
    update
}

fn main() {
    let target: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let started = Instant::now();
    let (bot, _thread) = Emulator::start_in_thread(TOKEN).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("consentd.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[owner]
telegram_id = {OWNER}
timezone = "UTC"
[telegram]
api_url = "{url}"
[paths]
state_dir = "{dir}/state"
socket = "{dir}/consent.sock"
[client]
allowed_uids = []
[limits]
max_pending = {ASKS}
[gate]
quiet_hours = "off"
[categories.publish_x]
label = {{ en = "Post" }}
class = "external"
enabled = true
target = "required"
text = "required"
command = ["/bin/sh", "-c", "echo ran >> {dir}/ran.log; echo ok"]
"#,
            url = bot.api_url(),
            dir = dir.path().display()
        ),
    )
    .unwrap();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, "0").unwrap();
    let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_consentd"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("CONSENTD_BOT_TOKEN", TOKEN)
        .env("CONSENTD_LOG", "warn")
        .env("CONSENTD_TEST_CLOCK_FILE", &clock)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let socket = dir.path().join("consent.sock");
    while UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "no start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));

    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let mut scripted: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut script = |bot: &Emulator, method: &str, fault: Scripted, kind: &'static str| {
        *scripted.entry(kind).or_default() += 1;
        bot.script(method, fault);
    };
    // The sender's faults, queued up front: a 429 with each retry_after from 1 to 30 over the
    // run would take 465 s of waiting alone, so a spread of them, plus the other kinds.
    for after in [1, 2, 3, 5, 8, 13, 21, 30] {
        script(
            &bot,
            "sendMessage",
            Scripted::too_many_requests(after),
            "429",
        );
        script(&bot, "sendMessage", Scripted::Drop, "reset");
        script(
            &bot,
            "editMessageText",
            Scripted::MalformedJson,
            "malformed",
        );
    }
    script(&bot, "sendMessage", Scripted::server_error(502), "5xx");
    script(
        &bot,
        "sendMessage",
        Scripted::Delay(Duration::from_secs(18)),
        "timeout",
    );
    script(
        &bot,
        "editMessageText",
        Scripted::too_many_requests(4),
        "429",
    );

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
    let (mut pushed, mut duplicates, mut out_of_order, mut poison) = (0, 0, 0, 0);
    let mut last_id = 0;
    while bot.calls().len() < target {
        // The owner answers a third of the cards Yes and a third No, each once; the rest expire.
        for message in bot.messages(OWNER) {
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
        }
        // Faults on the next getUpdates and press answers.
        let roll = rng.below(1000);
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
        match rng.below(100) {
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
            if rng.below(10) == 0 {
                // Out of order: the higher id first.
                first["update_id"] = json!(base + 1);
                second["update_id"] = json!(base);
                out_of_order += 1;
            } else {
                first["update_id"] = json!(base);
                second["update_id"] = json!(base + 1);
            }
            if rng.below(250) == 0 {
                second = poisoned(second);
                poison += 1;
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
        if let Err(error) =
            bot.wait_until_blocking("the updates handled", Duration::from_secs(120), |bot| {
                bot.pending_updates().is_empty()
            })
        {
            let _ = child.kill();
            let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
            panic!("{error}\n{log}");
        }
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
    bot.wait_until_blocking("the outbox drained", Duration::from_secs(300), |bot| {
        bot.pending_scripts() == 0
    })
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let wall = started.elapsed();
    child.kill().unwrap();
    child.wait().unwrap();

    // The checks.
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap();
    assert!(!log.contains("panicked"), "{log}");
    let journal: Vec<Value> = std::fs::read_to_string(dir.path().join("state/decisions.jsonl"))
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
    let (mut granted, mut declined, mut expired, mut undelivered) = (0, 0, 0, 0);
    for id in &ids {
        let decisions = outcome.get(id).cloned().unwrap_or_default();
        assert_eq!(decisions.len(), 1, "{id}: {decisions:?}");
        let expected = match decided.get(id) {
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

    let calls = bot.calls();
    let mut by_outcome: BTreeMap<String, usize> = BTreeMap::new();
    for call in &calls {
        let kind = match &call.outcome {
            Some(Outcome::Ok(_)) => "ok".to_owned(),
            Some(Outcome::Error { code, .. }) => format!("error {code}"),
            Some(Outcome::Dropped) => "connection reset".to_owned(),
            Some(Outcome::MalformedJson) => "malformed JSON".to_owned(),
            None => "unanswered".to_owned(),
        };
        *by_outcome.entry(kind).or_default() += 1;
    }
    let mut gaps = Vec::new();
    for methods in [&SENDER[..], &["getupdates"][..]] {
        let calls: Vec<_> = calls
            .iter()
            .filter(|c| methods.contains(&c.method.as_str()))
            .collect();
        for (i, call) in calls.iter().enumerate() {
            if let Some(Outcome::Error {
                code: 429,
                retry_after: Some(after),
                ..
            }) = call.outcome
            {
                if let Some(next) = calls.get(i + 1) {
                    gaps.push((after, next.elapsed - call.elapsed));
                }
            }
        }
    }
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
    println!("faults scripted by kind: {scripted:?}");
    println!(
        "updates pushed: {pushed} (duplicates {duplicates}, out-of-order pairs {out_of_order}, poison {poison})"
    );
    println!("presses rejected (journal): {rejected}");
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
