//! Why an ask waits: each interim line and `status` of an open record carry `waiting` —
//! `owner_unreachable` through each cause Telegram can give (5xx, 401, 403, 409), `quiet_hours`
//! with the hold's end, `queued` with the cards ahead, `shown` with the card's deadline — a new
//! line comes when it changes and never more than one a second, nothing runs without a press,
//! an ask's own ttl still ends it `expired`, and `consentd ask` says it on stderr.
//! The daemon runs with `CONSENTD_TEST_FAST_RETRY` where Telegram fails, so its retries come
//! within 200 ms.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use consentd_emulator::{Emulator, Outcome, Scripted};
use serde_json::{json, Value};

use crate::consent::waiting as waiting_ask;
use crate::fixture::{noon_today, today_at, Daemon};

/// Calls to `method` (lower case) answered with `code`.
fn answered(bot: &Emulator, method: &str, code: u16) -> usize {
    bot.calls_to(method)
        .iter()
        .filter(|call| matches!(call.outcome, Some(Outcome::Error { code: c, .. }) if c == code))
        .count()
}

fn fast_retrying() -> Daemon {
    Daemon::builder()
        .env("CONSENTD_TEST_FAST_RETRY", "1")
        .start()
}

/// A waiting connection, its lines read as they come, each with when it came.
struct Watch {
    id: String,
    lines: mpsc::Receiver<(Instant, Value)>,
    seen: Vec<(Instant, Value)>,
}

impl Watch {
    fn ask(daemon: &Daemon, request: &Value) -> Watch {
        let mut stream = UnixStream::connect(&daemon.socket).unwrap();
        stream.write_all(format!("{request}\n").as_bytes()).unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line).unwrap();
                if send.send((Instant::now(), value)).is_err() {
                    return;
                }
            }
        });
        let mut watch = Watch {
            id: String::new(),
            lines,
            seen: Vec::new(),
        };
        let first = watch.next().expect("the first line");
        watch.id = first["id"].as_str().expect("an id").to_owned();
        watch
    }

    /// The next line, within 30 s; `None` once the daemon closed the connection.
    fn next(&mut self) -> Option<Value> {
        let (at, line) = match self.lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no line in 30 s: {:?}", self.seen),
        };
        self.seen.push((at, line.clone()));
        Some(line)
    }

    /// Reads lines until one's `waiting` satisfies `wanted`, and returns that `waiting`.
    fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some((_, line)) = self.seen.last() {
            if wanted(&line["waiting"]) {
                return line["waiting"].clone();
            }
        }
        loop {
            let Some(line) = self.next() else {
                panic!("the connection ended before {what}: {:?}", self.lines());
            };
            if wanted(&line["waiting"]) {
                return line["waiting"].clone();
            }
        }
    }

    /// Reads lines until the connection ends; the last one.
    fn last(&mut self) -> Value {
        while self.next().is_some() {}
        self.seen.last().unwrap().1.clone()
    }

    fn lines(&self) -> Vec<Value> {
        self.seen.iter().map(|(_, line)| line.clone()).collect()
    }
}

/// A `waiting` that says the owner is out of reach for the cause named `word`.
fn unreachable_for(word: &'static str) -> impl Fn(&Value) -> bool {
    move |waiting| {
        waiting["why"] == "owner_unreachable"
            && waiting["detail"]
                .as_str()
                .is_some_and(|detail| detail.starts_with(&format!("{word}: ")))
    }
}

fn time(value: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(value.as_str().unwrap())
        .unwrap()
        .into()
}

#[test]
fn an_outage_shows_each_cause_in_turn_and_nothing_runs_without_a_press() {
    let mut daemon = fast_retrying();
    daemon.bot.outage("getUpdates", Scripted::server_error(502));
    daemon
        .bot
        .outage("sendMessage", Scripted::server_error(502));
    daemon.wait_for("polls answered 502", |bot| {
        answered(bot, "getupdates", 502) >= 1
    });
    let mut watch = Watch::ask(&daemon, &waiting_ask("asked while Telegram fails"));
    let first = watch.until("a 5xx", unreachable_for("server_error"));
    let since = first["since"].clone();

    daemon.bot.outage("getUpdates", Scripted::unauthorized());
    daemon.bot.outage("sendMessage", Scripted::unauthorized());
    let revoked = watch.until("a 401", unreachable_for("token_revoked"));
    assert_eq!(revoked["since"], since, "one episode, its cause changed");
    let status = daemon.request(&json!({"v":1,"op":"status","id":watch.id}));
    assert!(
        unreachable_for("token_revoked")(&status["waiting"]),
        "{status}"
    );

    // The owner blocked the bot: polling works, every send to their chat answers 403.
    daemon.bot.outage(
        "sendMessage",
        Scripted::error(403, "Forbidden: bot was blocked by the user"),
    );
    daemon.bot.end_outage("getUpdates");
    watch.until("a 403", unreachable_for("blocked"));
    assert!(daemon.is_running(), "{}", daemon.log());

    daemon.bot.outage("getUpdates", Scripted::conflict());
    watch.until("a 409", unreachable_for("conflict"));
    daemon.bot.end_outage("sendMessage");
    assert_eq!(daemon.runs(), 0, "nothing runs without a press");
    assert!(daemon.is_running(), "{}", daemon.log());

    daemon.bot.end_outage("getUpdates");
    let shown = watch.until("the card shown", |w| w["why"] == "shown");
    let status = daemon.request(&json!({"v":1,"op":"status","id":watch.id}));
    assert_eq!(status["waiting"], shown, "status says the same");
    daemon.wait_for("the owner told the bot is back", |bot| {
        bot.messages(crate::fixture::OWNER)
            .into_iter()
            .filter_map(|m| m.text)
            .any(|text| text.contains("cut off from you"))
    });
    assert_eq!(daemon.runs(), 0, "nothing runs without a press");
    let card = daemon.card_of(&watch.id);
    daemon.press_yes(&card);
    let last = watch.last();
    assert_eq!(last["status"], "executed", "{last}");
    assert_eq!(last.get("waiting"), None, "a final line has no waiting");
    assert_eq!(daemon.runs(), 1);
    // The causes came in turn: each line's cause, repeats folded.
    let mut causes: Vec<String> = watch
        .lines()
        .iter()
        .filter_map(|line| match line["waiting"]["why"].as_str()? {
            "owner_unreachable" => line["waiting"]["detail"]
                .as_str()
                .map(|d| d.split(':').next().unwrap().to_owned()),
            why => Some(why.to_owned()),
        })
        .collect();
    causes.dedup();
    // Each cause first shows in the order it began (a retry that lands as the next phase
    // begins may show an earlier cause again for a moment).
    let mut order: Vec<&str> = Vec::new();
    for cause in causes.iter().map(String::as_str) {
        let phase = ["server_error", "token_revoked", "blocked", "conflict"].contains(&cause);
        if phase && !order.contains(&cause) {
            order.push(cause);
        }
    }
    assert_eq!(
        order,
        ["server_error", "token_revoked", "blocked", "conflict"],
        "{causes:?}\n{}",
        daemon.log()
    );
    assert!(daemon.is_running(), "{}", daemon.log());
}

#[test]
fn quiet_hours_say_until_when_and_a_ttl_still_ends_it_expired() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"00:00-23:59\"\nnight_card_limit = 0")
        .start();
    daemon.set_clock(noon_today());
    let mut ask = waiting_ask("held for the night");
    ask["ttl"] = json!(120);
    let mut watch = Watch::ask(&daemon, &ask);
    let held = watch.until("the hold", |w| w["why"] == "quiet_hours");
    assert_eq!(time(&held["until"]), today_at(23, 59), "{held}");
    let status = daemon.request(&json!({"v":1,"op":"status","id":watch.id}));
    assert_eq!(status["waiting"], held, "{status}");
    daemon.advance_clock(121);
    let last = watch.last();
    assert_eq!(last["status"], "expired", "{:?}", watch.lines());
    assert_eq!(daemon.runs(), 0);
}

#[test]
fn an_ask_with_a_ttl_ends_expired_while_the_owner_is_out_of_reach() {
    let daemon = fast_retrying();
    daemon.bot.outage("getUpdates", Scripted::conflict());
    daemon.bot.outage("sendMessage", Scripted::conflict());
    daemon.wait_for("polls refused", |bot| answered(bot, "getupdates", 409) >= 1);
    let mut ask = waiting_ask("asked with a ttl while cut off");
    ask["ttl"] = json!(60);
    let mut watch = Watch::ask(&daemon, &ask);
    watch.until("the 409", unreachable_for("conflict"));
    daemon.advance_clock(61);
    let last = watch.last();
    assert_eq!(last["status"], "expired", "{:?}", watch.lines());
    assert_eq!(daemon.runs(), 0, "never approved, never run");
}

/// Three cards wait behind a failing send; the fourth ask's first line counts them, and as
/// they go in a burst (three at once) its lines come at most one a second.
#[test]
fn a_queue_says_how_many_cards_are_ahead_and_lines_come_at_most_one_a_second() {
    let daemon = fast_retrying();
    daemon
        .bot
        .outage("sendMessage", Scripted::server_error(502));
    for n in 0..3 {
        daemon.request(&crate::fixture::good_ask(&format!("ahead {n}")));
    }
    daemon.wait_for("the first card's send failed", |bot| {
        answered(bot, "sendmessage", 502) >= 1
    });
    let mut watch = Watch::ask(&daemon, &waiting_ask("fourth in line"));
    assert_eq!(
        watch.seen[0].1["waiting"],
        json!({"why":"queued","ahead":3}),
        "{:?}",
        watch.lines()
    );
    daemon.bot.end_outage("sendMessage");
    let shown = watch.until("the card shown", |w| w["why"] == "shown");
    let card = daemon.card_of(&watch.id);
    let status = daemon.request(&json!({"v":1,"op":"status","id":watch.id}));
    assert_eq!(status["waiting"], shown, "{status}");
    assert!(
        time(&shown["until"]) > time(&status["created_at"]) + chrono::Duration::minutes(5),
        "the card's deadline: {shown}"
    );
    daemon.press_no(&card);
    watch.last();
    let gaps: Vec<Duration> = watch
        .seen
        .windows(2)
        .filter(|pair| pair[1].1.get("waiting").is_some())
        .map(|pair| pair[1].0 - pair[0].0)
        .collect();
    assert!(!gaps.is_empty(), "{:?}", watch.lines());
    for gap in &gaps {
        // The daemon spaces its lines by a second; reading them here can take a little off.
        assert!(
            *gap >= Duration::from_millis(900),
            "{gaps:?}: {:?}",
            watch.lines()
        );
    }
}

#[test]
fn consentd_ask_says_why_it_waits_on_stderr() {
    let daemon = fast_retrying();
    daemon.bot.outage("getUpdates", Scripted::conflict());
    daemon.bot.outage("sendMessage", Scripted::conflict());
    daemon.wait_for("polls refused", |bot| answered(bot, "getupdates", 409) >= 1);
    let mut child = daemon.cli_spawn(&[
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        "asked from the command line",
        "--field",
        "reply_to=https://example.org/1",
        "--cost-usd",
        "0.04",
    ]);
    // Its stderr, line by line as it comes.
    let (send, said) = mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    let mut lines = Vec::new();
    let mut until = |wanted: &str| loop {
        let line = said
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no line saying {wanted:?}: {lines:?}"));
        lines.push(line.clone());
        if line.contains(wanted) {
            return line;
        }
    };
    let cut = until("waits: the owner cannot be reached since ");
    assert!(cut.contains("(conflict: "), "{cut}");
    let id = cut.split(' ').next().unwrap().to_owned();
    daemon.bot.end_outage("getUpdates");
    daemon.bot.end_outage("sendMessage");
    let shown = until("waits: the card is in the owner's chat, answerable until ");
    assert!(shown.starts_with(&format!("{id} waits: ")), "{shown}");
    daemon.press_no(&daemon.card_of(&id));
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(4), "declined: {lines:?}");
    assert_eq!(daemon.runs(), 0);
}
