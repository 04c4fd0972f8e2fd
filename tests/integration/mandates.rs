//! Mandates end to end (docs/PROTOCOL.md, "Mandates"): asked on a card, opened by the owner's
//! Grant, covering asks
//! without a card (with a receipt and Stop), and every way out of one — the day's count and
//! money, another target, the end of the term, Stop — back to the usual card.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{stderr, stdout, today_at, Daemon, OWNER};

pub(crate) fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

pub(crate) fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

/// A mandate request for `publish_x` on `targets`.
pub(crate) fn mandate_request(targets: &[&str], days: u32, usd: &str, actions: u32) -> Value {
    json!({"v":1,"op":"mandate","kind":"publish_x","targets":targets,"days":days,
        "usd_per_day":usd,"actions_per_day":actions,"reason":"Daily news","wait":false})
}

/// An ask for `publish_x` to `target` costing `cost`.
pub(crate) fn ask_to(target: &str, text: &str, cost: &str) -> Value {
    json!({"v":1,"op":"ask","kind":"publish_x","target":target,"text":text,"cost_usd":cost,
        "wait":false})
}

pub(crate) fn press(
    daemon: &Daemon,
    from: &UserSpec,
    chat: ChatSpec,
    message: &ChatMessage,
    data: &str,
) {
    daemon.bot.push_press(from, chat, message.message_id, data);
}

pub(crate) fn button(message: &ChatMessage, index: usize) -> String {
    message.buttons()[index].callback_data.clone().unwrap()
}

/// Asks for a mandate and grants it as the owner; returns its id.
pub(crate) fn grant(
    daemon: &Daemon,
    targets: &[&str],
    days: u32,
    usd: &str,
    actions: u32,
) -> String {
    granted_with_button(daemon, targets, days, usd, actions).0
}

/// [`grant`], also returning the Grant button's callback data.
fn granted_with_button(
    daemon: &Daemon,
    targets: &[&str],
    days: u32,
    usd: &str,
    actions: u32,
) -> (String, String) {
    let answer = daemon.request(&mandate_request(targets, days, usd, actions));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let grant = button(&card, 0);
    press(daemon, &owner(), ChatSpec::private(OWNER), &card, &grant);
    daemon.wait_state(&id, "granted");
    (id, grant)
}

/// The first answer to an ask: its id and status.
pub(crate) fn ask(daemon: &Daemon, request: &Value) -> (String, String) {
    let answer = daemon.request(request);
    (
        answer["id"].as_str().unwrap_or_default().to_owned(),
        answer["status"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The message in the owner's chat that names record `id` and carries a Stop button.
pub(crate) fn receipt_of(daemon: &Daemon, id: &str) -> ChatMessage {
    let find = |messages: Vec<ChatMessage>| {
        messages.into_iter().find(|m| {
            m.outgoing
                && m.text.as_deref().is_some_and(|t| t.contains(id))
                && m.buttons().iter().any(|b| b.text == "Stop")
        })
    };
    daemon.wait_for(&format!("the receipt of {id}"), |bot| {
        find(bot.messages(OWNER)).is_some()
    });
    find(daemon.bot.messages(OWNER)).unwrap()
}

pub(crate) fn events_of(daemon: &Daemon, id: &str) -> Vec<String> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id)
        .map(|e| e["ev"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_mandate_is_asked_on_a_card_and_opened_only_by_the_owners_grant() {
    let mut daemon = Daemon::start();
    let client = daemon.cli_spawn(&[
        "mandate",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--target",
        "@mila_shop",
        "--days",
        "7",
        "--usd-per-day",
        "5.00",
        "--actions-per-day",
        "10",
        "--reason",
        "Daily news while I travel",
    ]);
    let asked = daemon.wait_for_event("mandate_asked");
    let id = asked["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let text = card.text.clone().unwrap();
    for shown in [
        "Standing permission: Post to X",
        "Target: @mila_news",
        "Target: @mila_shop",
        "Until:",
        "At most $5.00 and 10 actions a day",
        "Reason: Daily news while I travel",
        id.as_str(),
    ] {
        assert!(
            text.contains(shown),
            "the mandate card lacks {shown:?}:\n{text}"
        );
    }
    let labels: Vec<String> = card.buttons().iter().map(|b| b.text.clone()).collect();
    assert_eq!(labels, ["Grant", "Decline", "Decline, and say why…"]);
    // Nobody but the owner opens it.
    press(
        &daemon,
        &stranger(),
        ChatSpec::private(777),
        &card,
        &button(&card, 0),
    );
    daemon.settle();
    assert_eq!(
        daemon.request(&json!({"v":1,"op":"status","id":id}))["status"],
        "card_shown"
    );

    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &button(&card, 0),
    );
    let output = client.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), id);
    daemon.wait_for("the card's edit", |bot| {
        bot.message(OWNER, card.message_id)
            .and_then(|m| m.text)
            .is_some_and(|t| t.contains("Outcome: approved. Decided by Mila"))
    });
    assert_eq!(
        events_of(&daemon, &id),
        ["mandate_asked", "card_shown", "mandate_open"]
    );
    assert!(
        daemon
            .journal_events()
            .iter()
            .any(|e| e["ev"] == "press_rejected" && e["reason"] == "not_owner"),
        "the stranger's press is journaled"
    );

    // A granted mandate request is final: a restart neither runs it nor loses it.
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let daemon = daemon.restart();
    let (covered, status) = ask(&daemon, &ask_to("@mila_shop", "After the restart", "0.04"));
    assert!(
        matches!(status.as_str(), "running" | "executed"),
        "{status}"
    );
    daemon.wait_state(&covered, "executed");
    assert_eq!(daemon.runs(), 1);
}

#[test]
fn inside_a_mandate_an_ask_runs_without_a_card_and_the_owner_gets_a_receipt() {
    let daemon = Daemon::start();
    let mandate = grant(&daemon, &["@mila_news"], 7, "5.00", 10);
    let output = daemon.cli(&[
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        "Morning news",
        "--cost-usd",
        "2.40",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("posted"), "{}", stdout(&output));
    let id = daemon
        .journal_events()
        .into_iter()
        .rev()
        .find(|e| e["ev"] == "mandate_use")
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .unwrap();
    let receipt = receipt_of(&daemon, &id);
    let text = receipt.text.clone().unwrap();
    for shown in [
        format!("standing permission {mandate}"),
        "Target: @mila_news".to_owned(),
        "Cost: $2.40".to_owned(),
        "Outcome: done".to_owned(),
        "Today: 1 of 10 actions, $2.40 of $5.00".to_owned(),
        "Until:".to_owned(),
        "Morning news".to_owned(),
    ] {
        assert!(
            text.contains(&shown),
            "the receipt lacks {shown:?}:\n{text}"
        );
    }
    assert!(
        !daemon
            .owner_chat()
            .iter()
            .any(|m| m.buttons().iter().any(|b| b.text == "Yes")),
        "no card was drawn"
    );
    assert_eq!(
        events_of(&daemon, &id),
        ["asked", "mandate_use", "used", "executed"]
    );
    let use_line = daemon
        .journal_events()
        .into_iter()
        .find(|e| e["ev"] == "mandate_use")
        .unwrap();
    assert_eq!(use_line["mandate"], mandate.as_str());
    assert_eq!(use_line["actions_today"], 1);
    assert_eq!(use_line["usd_today"], "2.40");
}

#[test]
fn outside_a_mandate_the_ask_gets_the_usual_card() {
    let daemon = Daemon::start();
    grant(&daemon, &["@mila_news"], 1, "1.00", 2);
    let cases: [(&str, &str, &str); 4] = [
        ("another target", "@other", "0.10"),
        ("the target in another case", "@Mila_News", "0.10"),
        ("over the day's money", "@mila_news", "1.01"),
        ("another kind", "", "0.10"),
    ];
    for (name, target, cost) in cases {
        let request = if target.is_empty() {
            json!({"v":1,"op":"ask","kind":"send_letter","fields":{"to":"a@example.org"},
                "wait":false})
        } else {
            ask_to(target, name, cost)
        };
        let (id, status) = ask(&daemon, &request);
        assert_eq!(status, "pending", "{name}: {id} was not sent to a card");
        daemon.card_of(&id);
    }
    // The target with a trailing space is not covered either: the card could not show the
    // space, so it is refused before any mandate is looked at.
    let padded = daemon.request(&ask_to("@mila_news ", "padded", "0.10"));
    assert_eq!(padded["status"], "refused", "{padded}");
    assert_eq!(padded["message"], "target has a trailing space", "{padded}");
    // Two covered asks use up the day's count; the third goes to a card.
    for text in ["first", "second"] {
        let (id, status) = ask(&daemon, &ask_to("@mila_news", text, "0.10"));
        assert_eq!(status, "running", "{text} is covered");
        daemon.wait_state(&id, "executed");
    }
    let (id, status) = ask(&daemon, &ask_to("@mila_news", "third", "0.10"));
    assert_eq!(status, "pending", "over the day's count: a card");
    daemon.card_of(&id);

    // After the term: `mandate_end`, and a card.
    daemon.advance_clock(24 * 3600);
    let ended = daemon.wait_for_event("mandate_end");
    assert_eq!(ended["reason"], "term");
    let (id, status) = ask(&daemon, &ask_to("@mila_news", "after the term", "0.10"));
    assert_eq!(status, "pending", "after the term: a card");
    daemon.card_of(&id);
    assert_eq!(daemon.runs(), 2);
}

/// Sends `requests` at once, each on its own connection, and returns the first answer of each.
fn race(daemon: &Daemon, requests: Vec<Value>) -> Vec<Value> {
    let streams: Vec<UnixStream> = requests
        .iter()
        .map(|_| UnixStream::connect(&daemon.socket).unwrap())
        .collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(requests.len()));
    let threads: Vec<_> = streams
        .into_iter()
        .zip(requests)
        .map(|(mut stream, request)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut frame = serde_json::to_vec(&request).unwrap();
                frame.push(b'\n');
                barrier.wait();
                stream.write_all(&frame).unwrap();
                let mut line = String::new();
                BufReader::new(stream).read_line(&mut line).unwrap();
                serde_json::from_str::<Value>(&line).unwrap()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn twenty_concurrent_asks_racing_for_the_last_three_actions_run_exactly_three() {
    let daemon = Daemon::builder().max_pending(40).start();
    grant(&daemon, &["@mila_news"], 7, "10.00", 5);
    for text in ["one", "two"] {
        let (id, status) = ask(&daemon, &ask_to("@mila_news", text, "0.01"));
        assert_eq!(status, "running");
        daemon.wait_state(&id, "executed");
    }
    let requests = (0..20)
        .map(|i| ask_to("@mila_news", &format!("racer {i}"), "0.01"))
        .collect();
    let answers = race(&daemon, requests);
    let covered: Vec<&Value> = answers
        .iter()
        .filter(|a| a["status"] == "running")
        .collect();
    let carded = answers.iter().filter(|a| a["status"] == "pending").count();
    assert_eq!(covered.len(), 3, "{answers:?}");
    assert_eq!(carded, 17, "{answers:?}");
    for answer in covered {
        daemon.wait_state(answer["id"].as_str().unwrap(), "executed");
    }
    assert_eq!(daemon.runs(), 5);
    let uses: Vec<i64> = daemon
        .journal_events()
        .iter()
        .filter(|e| e["ev"] == "mandate_use")
        .map(|e| e["actions_today"].as_i64().unwrap())
        .collect();
    assert_eq!(uses, [1, 2, 3, 4, 5], "each use counted once, in order");
}

#[test]
fn twenty_concurrent_asks_racing_for_the_last_cents_never_overspend() {
    let daemon = Daemon::builder().max_pending(40).start();
    grant(&daemon, &["@mila_news"], 7, "1.00", 100);
    // $0.10 left after this one; the racers cost $0.04 each, so two fit and the third would
    // need $0.02 more.
    let (id, _) = ask(&daemon, &ask_to("@mila_news", "big", "0.90"));
    daemon.wait_state(&id, "executed");
    let requests = (0..20)
        .map(|i| ask_to("@mila_news", &format!("racer {i}"), "0.04"))
        .collect();
    let answers = race(&daemon, requests);
    let covered = answers.iter().filter(|a| a["status"] == "running").count();
    assert_eq!(covered, 2, "{answers:?}");
    let last = daemon
        .journal_events()
        .into_iter()
        .rev()
        .find(|e| e["ev"] == "mandate_use")
        .unwrap();
    assert_eq!(last["usd_today"], "0.98");
}

pub(crate) fn relabel(data: &str, from: &str, to: &str) -> String {
    let parts: Vec<&str> = data.split('.').collect();
    assert_eq!(parts[2], from, "{data}");
    format!("{}.{}.{to}.{}.{}", parts[0], parts[1], parts[3], parts[4])
}

pub(crate) fn tampered(data: &str) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (head, tag) = data.rsplit_once('.').unwrap();
    let mut bytes = engine.decode(tag).unwrap();
    bytes[0] ^= 1;
    format!("{head}.{}", engine.encode(bytes))
}

#[test]
fn only_the_owners_signed_stop_stops_a_mandate_and_it_holds_from_the_next_ask() {
    let daemon = Daemon::start();
    let (mandate, grant_data) = granted_with_button(&daemon, &["@mila_news"], 7, "5.00", 50);
    let (first, _) = ask(&daemon, &ask_to("@mila_news", "first", "0.01"));
    daemon.wait_state(&first, "executed");
    let receipt = receipt_of(&daemon, &first);
    let stop = button(&receipt, 0);

    let group = ChatSpec::group(-100_123);
    let cases: Vec<(&str, UserSpec, ChatSpec, String, &str)> = vec![
        (
            "another user",
            stranger(),
            ChatSpec::private(777),
            stop.clone(),
            "not_owner",
        ),
        (
            // Another stranger: one stranger's presses within the hour are journaled as one
            // counted line, so each case here is its own presser.
            "another user in the owner's chat",
            UserSpec::new(778, "Eve's friend"),
            ChatSpec::private(OWNER),
            stop.clone(),
            "not_owner",
        ),
        (
            "the owner, from a group",
            owner(),
            group,
            stop.clone(),
            "not_private_chat",
        ),
        (
            "a tampered tag",
            owner(),
            ChatSpec::private(OWNER),
            tampered(&stop),
            "bad_tag",
        ),
        (
            "the mandate card's Grant relabelled as Stop",
            owner(),
            ChatSpec::private(OWNER),
            relabel(&grant_data, "g", "s"),
            "bad_tag",
        ),
    ];
    for (round, (name, from, chat, data, reason)) in cases.into_iter().enumerate() {
        press(&daemon, &from, chat, &receipt, &data);
        daemon.settle();
        let rejected = daemon
            .journal_events()
            .into_iter()
            .filter(|e| e["ev"] == "press_rejected")
            .nth(round);
        assert_eq!(
            rejected.as_ref().map(|e| e["reason"].clone()),
            Some(json!(reason)),
            "{name}"
        );
        let (id, status) = ask(&daemon, &ask_to("@mila_news", name, "0.01"));
        assert_eq!(status, "running", "{name}: the mandate still covers");
        daemon.wait_state(&id, "executed");
    }
    assert!(!events_of(&daemon, &mandate).contains(&"mandate_stop".to_owned()));

    press(&daemon, &owner(), ChatSpec::private(OWNER), &receipt, &stop);
    daemon.settle();
    assert_eq!(
        events_of(&daemon, &mandate).last().map(String::as_str),
        Some("mandate_stop")
    );
    let (id, status) = ask(&daemon, &ask_to("@mila_news", "after Stop", "0.01"));
    assert_eq!(status, "pending", "after Stop: a card");
    daemon.card_of(&id);
    // The Stop goes from the receipt; a second Stop (as a modified client could still send
    // it) finds no button drawn there.
    daemon.wait_for("the receipt's Stop taken away", |bot| {
        bot.message(OWNER, receipt.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
    press(&daemon, &owner(), ChatSpec::private(OWNER), &receipt, &stop);
    daemon.settle();
    let last = daemon.journal_events().into_iter().last().unwrap();
    assert_eq!(last["ev"], "press_rejected");
    // Not drawn there any more; or, when the press races the record of the edit the chat
    // already shows, a Stop for a mandate that is no longer open. Either way nothing stops twice.
    assert!(
        matches!(last["reason"].as_str(), Some("wrong_message" | "not_open")),
        "{last}"
    );
    assert_eq!(
        events_of(&daemon, &mandate)
            .iter()
            .filter(|ev| *ev == "mandate_stop")
            .count(),
        1
    );
}

#[test]
fn the_mandates_command_lists_each_open_mandate_with_a_stop_that_works() {
    let daemon = Daemon::start();
    let mandate = grant(&daemon, &["@mila_news"], 3, "2.00", 4);
    let (id, _) = ask(&daemon, &ask_to("@mila_news", "one", "0.50"));
    daemon.wait_state(&id, "executed");
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), "/mandates");
    let listed = |bot: &consentd_emulator::Emulator| {
        bot.messages(OWNER).into_iter().find(|m| {
            m.outgoing
                && m.text.as_deref().is_some_and(|t| {
                    t.starts_with("Standing permission: Post to X")
                        && t.contains(&mandate)
                        && t.contains("Today: 1 of 4 actions, $0.50 of $2.00")
                })
        })
    };
    daemon.wait_for("the /mandates reply", |bot| listed(bot).is_some());
    let chat: Vec<Option<String>> = daemon.owner_chat().into_iter().map(|m| m.text).collect();
    assert!(
        chat.iter()
            .any(|t| t.as_deref() == Some("1 standing permission is open:")),
        "{chat:#?}"
    );
    let item = listed(&daemon.bot).unwrap();
    assert_eq!(item.buttons().len(), 1);
    assert_eq!(item.buttons()[0].text, "Stop");
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &item,
        &button(&item, 0),
    );
    daemon.wait_for("the Stop's reply", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.text.as_deref() == Some("Stopped: “Post to X” actions need your Yes again."))
    });
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), "/mandates");
    daemon.wait_for("the empty list", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.text.as_deref() == Some("No standing permissions are open."))
    });
}

#[test]
fn a_declined_mandate_request_is_remembered_like_a_declined_action() {
    let daemon = Daemon::start();
    let request = mandate_request(&["@mila_news"], 2, "1.00", 3);
    let answer = daemon.request(&request);
    let id = answer["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &button(&card, 1),
    );
    daemon.wait_state(&id, "declined");
    assert_eq!(
        events_of(&daemon, &id),
        ["mandate_asked", "card_shown", "mandate_declined"]
    );
    let again = daemon.request(&request);
    assert_eq!(again["status"], "refused");
    assert_eq!(again["reason"], "declined_recently");
    // Other terms are another request: a new card.
    let other = daemon.request(&mandate_request(&["@mila_news"], 1, "1.00", 3));
    assert_eq!(other["status"], "pending");
    let (id, status) = ask(&daemon, &ask_to("@mila_news", "no mandate", "0.01"));
    assert_eq!(status, "pending", "{id}: a declined request opens nothing");
}

#[test]
fn terms_over_a_ceiling_are_refused_mandate_terms_naming_the_term() {
    let daemon = Daemon::start();
    let cases: [(&str, Vec<&str>, &str, &str); 4] = [
        (
            "days",
            vec![
                "--target",
                "@a",
                "--days",
                "8",
                "--usd-per-day",
                "1.00",
                "--actions-per-day",
                "1",
            ],
            "mandate_terms",
            "days: 8 is over the ceiling of 7",
        ),
        (
            "money",
            vec![
                "--target",
                "@a",
                "--days",
                "1",
                "--usd-per-day",
                "10.01",
                "--actions-per-day",
                "1",
            ],
            "mandate_terms",
            "usd_per_day: 10.01 is over the ceiling of 10.00",
        ),
        (
            "actions",
            vec![
                "--target",
                "@a",
                "--days",
                "1",
                "--usd-per-day",
                "1.00",
                "--actions-per-day",
                "101",
            ],
            "mandate_terms",
            "actions_per_day: 101 is over the ceiling of 100",
        ),
        (
            "a wildcard target",
            vec![
                "--target",
                "@*",
                "--days",
                "1",
                "--usd-per-day",
                "1.00",
                "--actions-per-day",
                "1",
            ],
            "mandate_terms",
            "wildcard",
        ),
    ];
    for (name, terms, reason, message) in cases {
        let mut args = vec!["mandate", "--kind", "publish_x"];
        args.extend(terms);
        let output = daemon.cli(&args);
        assert_eq!(output.status.code(), Some(3), "{name}: {}", stderr(&output));
        let said = stderr(&output);
        assert!(
            said.contains(reason) && said.contains(message),
            "{name}: {said}"
        );
    }
    let not_ok = daemon.request(&json!({"v":1,"op":"mandate","kind":"send_letter",
        "targets":["a@example.org"],"days":1,"usd_per_day":"1.00","actions_per_day":1}));
    assert_eq!(not_ok["reason"], "mandate_terms");
    assert!(not_ok["message"]
        .as_str()
        .unwrap()
        .contains("does not allow mandates"));
    let denied = daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["ev"] == "denied" && e["reason"] == "mandate_terms")
        .count();
    assert_eq!(denied, 5, "every refusal is journaled");
    let chat: Vec<Option<String>> = daemon.owner_chat().into_iter().map(|m| m.text).collect();
    assert!(chat.is_empty(), "no card for refused terms: {chat:?}");
}

#[test]
fn a_covered_ask_whose_daemon_dies_after_the_claim_is_never_run_again() {
    let mut daemon = Daemon::start();
    grant(&daemon, &["@mila_news"], 7, "5.00", 10);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let mut daemon = daemon.restart_with(vec![("CONSENTD_CRASH_AT".into(), "after_claim".into())]);
    // The daemon dies on its way from the claim to the command: the answer may not arrive.
    let mut frame = serde_json::to_vec(&ask_to("@mila_news", "doomed", "0.10")).unwrap();
    frame.push(b'\n');
    let _ = daemon.request_raw(&frame);
    assert!(
        !daemon.wait_exit().success(),
        "the crash point was not reached"
    );
    let daemon = daemon.restart();
    let used = daemon.wait_for_event("used");
    let id = used["id"].as_str().unwrap().to_owned();
    daemon.wait_state(&id, "outcome_unknown");
    assert_eq!(
        daemon.runs(),
        0,
        "a claim without an outcome is never re-run"
    );
    assert_eq!(
        events_of(&daemon, &id),
        ["asked", "mandate_use", "used", "outcome_unknown"]
    );
    // The owner hears of it at once, and the receipt says so.
    daemon.wait_for("the urgent notice", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains(&id) && t.contains("may or may not have run"))
        })
    });
    let receipt = receipt_of(&daemon, &id);
    assert!(receipt.text.unwrap().contains("Outcome: outcome unknown"));
}

/// The `mandate_use` journal line of each covered ask: its count and money that day.
fn uses(daemon: &Daemon) -> std::collections::BTreeMap<String, (i64, String)> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["ev"] == "mandate_use")
        .map(|e| {
            let id = e["id"].as_str().unwrap().to_owned();
            let usd = e["usd_today"].as_str().unwrap().to_owned();
            (id, (e["actions_today"].as_i64().unwrap(), usd))
        })
        .collect()
}

/// The line of `text` that starts with `prefix`.
fn line_of<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

#[test]
fn receipts_of_asks_covered_at_once_each_show_the_day_as_of_their_own_action() {
    for (lang, today, of) in [("en", "Today:", "of"), ("ru", "Сегодня:", "из")] {
        let daemon = Daemon::start();
        if lang == "ru" {
            crate::owner::say(&daemon, "/lang ru", "Язык: русский.");
        }
        grant(&daemon, &["@mila_news"], 7, "5.00", 10);
        // The runs wait until all three are claimed: no receipt is drawn before the day holds
        // every one of them, as when three asks arrive together.
        let hold = daemon.dir.path().join("hold");
        std::fs::write(&hold, "").unwrap();
        let costs = ["0.10", "0.20", "0.40"];
        let requests = costs
            .iter()
            .enumerate()
            .map(|(i, cost)| ask_to("@mila_news", &format!("covered {i}"), cost))
            .collect();
        let answers = race(&daemon, requests);
        for answer in &answers {
            assert_eq!(answer["status"], "running", "{lang}: {answer}");
        }
        std::fs::remove_file(&hold).unwrap();
        let uses = uses(&daemon);
        let mut counts = Vec::new();
        let mut by_count = std::collections::BTreeMap::new();
        for (answer, cost) in answers.iter().zip(costs) {
            let id = answer["id"].as_str().unwrap();
            daemon.wait_state(id, "executed");
            let (actions, usd) = uses[id].clone();
            let receipt = daemon.card_of(id).text.unwrap();
            let line = line_of(&receipt, today);
            assert!(
                line.starts_with(&format!("{today} {actions} {of} 10 ")),
                "{lang}: the receipt of {id} shows another count than its own {actions}: {line}"
            );
            // The money as the locale writes it: a point or a comma before the cents.
            assert!(
                line.contains(&usd) || line.contains(&usd.replace('.', ",")),
                "{lang}: the receipt of {id} shows other money than its own ${usd}: {line}"
            );
            counts.push(actions);
            by_count.insert(actions, (usd, cost));
        }
        counts.sort_unstable();
        assert_eq!(counts, [1, 2, 3], "{lang}: each count once");
        // Each one's money is the day's before it and its own cost.
        let mut total = rust_decimal::Decimal::ZERO;
        for (usd, cost) in by_count.values() {
            total += cost.parse::<rust_decimal::Decimal>().unwrap();
            assert_eq!(usd, &format!("{total:.2}"), "{lang}: {by_count:?}");
        }
    }
}

/// A mandate request for `kind` with the terms given (no `targets` or `usd_per_day` where
/// `None`), not waiting.
fn mandate_for(kind: &str, targets: Option<&[&str]>, usd: Option<&str>, actions: u32) -> Value {
    let mut request = json!({"v":1,"op":"mandate","kind":kind,"days":1,
        "actions_per_day":actions,"reason":"While I am away","wait":false});
    if let Some(targets) = targets {
        request["targets"] = json!(targets);
    }
    if let Some(usd) = usd {
        request["usd_per_day"] = json!(usd);
    }
    request
}

/// Grants the mandate request `id` from its card, which must show `shown` and not `absent`.
fn grant_card(daemon: &Daemon, id: &str, shown: &[&str], absent: &[&str]) {
    let card = daemon.card_of(id);
    let text = card.text.clone().unwrap();
    for line in shown {
        assert!(text.contains(line), "the card lacks {line:?}:\n{text}");
    }
    for line in absent {
        assert!(!text.contains(line), "the card shows {line:?}:\n{text}");
    }
    daemon.tap(&card, 0);
    daemon.wait_state(id, "granted");
}

fn refused_with(daemon: &Daemon, request: &Value, message: &str) {
    let answer = daemon.request(request);
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_eq!(answer["reason"], "mandate_terms", "{answer}");
    assert_eq!(answer["message"], message, "{answer}");
}

#[test]
fn a_paid_kind_with_no_target_takes_a_mandate_for_any_use_bounded_by_money_and_count() {
    let daemon = Daemon::builder().mandate_kinds().start();
    refused_with(
        &daemon,
        &mandate_for("generate_image", Some(&["@mila"]), Some("1.00"), 3),
        "targets: \"generate_image\" takes no target, so its mandate names none",
    );
    refused_with(
        &daemon,
        &mandate_for("generate_image", None, None, 3),
        "usd_per_day: missing, and \"generate_image\" costs money, so a positive amount is required",
    );
    refused_with(
        &daemon,
        &mandate_for("publish_x", Some(&[]), Some("1.00"), 3),
        "targets: at least one named target is required, as \"publish_x\" takes a target",
    );
    let answer = daemon.request(&mandate_for("generate_image", Some(&[]), Some("1.00"), 3));
    assert_eq!(answer["status"], "pending", "{answer}");
    let mandate = answer["id"].as_str().unwrap().to_owned();
    grant_card(
        &daemon,
        &mandate,
        &[
            "Standing permission: Generate an image (spend)",
            "Any use: every “Generate an image” action (this kind has no target)",
            "At most $1.00 and 3 actions a day",
        ],
        &["Target:"],
    );
    let image = |text: &str, cost: &str| json!({"v":1,"op":"ask","kind":"generate_image","text":text,"cost_usd":cost,"wait":false});
    for (text, cost, today) in [
        ("a cat", "0.40", "Today: 1 of 3 actions, $0.40 of $1.00"),
        ("a dog", "0.40", "Today: 2 of 3 actions, $0.80 of $1.00"),
    ] {
        let (id, status) = ask(&daemon, &image(text, cost));
        assert_eq!(status, "running", "{text} runs without a card");
        daemon.wait_state(&id, "executed");
        let receipt = receipt_of(&daemon, &id).text.unwrap();
        for shown in [format!("standing permission {mandate}"), today.to_owned()] {
            assert!(receipt.contains(&shown), "{receipt}");
        }
    }
    // Over the day's money: the usual card. A cheaper one still fits, and uses the last action.
    let (over, status) = ask(&daemon, &image("a horse", "0.40"));
    assert_eq!(status, "pending", "over the day's money");
    daemon.card_of(&over);
    let (last, status) = ask(&daemon, &image("a bird", "0.20"));
    assert_eq!(status, "running");
    daemon.wait_state(&last, "executed");
    let receipt = receipt_of(&daemon, &last).text.unwrap();
    assert!(
        receipt.contains("Today: 3 of 3 actions, $1.00 of $1.00"),
        "{receipt}"
    );
    let (id, status) = ask(&daemon, &image("a fish", "0.00"));
    assert_eq!(status, "pending", "{id}: over the day's count");
    assert_eq!(daemon.runs(), 3);
}

#[test]
fn a_kind_that_never_costs_takes_a_mandate_with_no_money_term() {
    let daemon = Daemon::builder().mandate_kinds().start();
    refused_with(
        &daemon,
        &mandate_for("send_note", Some(&["@mila"]), Some("1.00"), 2),
        "usd_per_day: 1.00 is given, but \"send_note\" never costs money; \
         leave usd_per_day out or give \"0.00\"",
    );
    let zero = daemon.request(&mandate_for("send_note", Some(&["@mila"]), Some("0.00"), 2));
    assert_eq!(zero["status"], "pending", "{zero}");
    // "0.00" and no amount are one request: the second joins the first's card.
    let absent = daemon.request(&mandate_for("send_note", Some(&["@mila"]), None, 2));
    assert_eq!(absent["id"], zero["id"], "{absent}");
    let mandate = zero["id"].as_str().unwrap().to_owned();
    grant_card(
        &daemon,
        &mandate,
        &["Target: @mila", "At most 2 actions a day"],
        &["$"],
    );
    for ev in ["mandate_asked", "mandate_open"] {
        let line = daemon.wait_for_event(ev);
        assert!(line.get("usd_per_day").is_none(), "{line}");
    }
    let note = |target: &str| json!({"v":1,"op":"ask","kind":"send_note","target":target,"text":"Back at six","wait":false});
    let (id, status) = ask(&daemon, &note("@mila"));
    assert_eq!(status, "running");
    daemon.wait_state(&id, "executed");
    let receipt = receipt_of(&daemon, &id).text.unwrap();
    assert!(receipt.contains("Today: 1 of 2 actions"), "{receipt}");
    assert!(!receipt.contains('$'), "no money line: {receipt}");
    let (id, status) = ask(&daemon, &note("@oleg"));
    assert_eq!(status, "pending", "{id}: another target gets a card");
}

#[test]
fn the_command_line_asks_for_a_mandate_with_no_target_and_no_money() {
    let daemon = Daemon::builder().mandate_kinds().start();
    let client = daemon.cli_spawn(&[
        "mandate",
        "--kind",
        "ping_home",
        "--days",
        "1",
        "--actions-per-day",
        "2",
    ]);
    let asked = daemon.wait_for_event("mandate_asked");
    assert_eq!(asked["targets"], 0, "{asked}");
    assert!(asked.get("usd_per_day").is_none(), "{asked}");
    let id = asked["id"].as_str().unwrap().to_owned();
    grant_card(
        &daemon,
        &id,
        &[
            "Any use: every “Ping home” action (this kind has no target)",
            "At most 2 actions a day",
        ],
        &["Target:", "$"],
    );
    let output = client.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), id);
    let ran = daemon.cli(&["ask", "--kind", "ping_home"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let covered = uses(&daemon).into_keys().next().unwrap();
    let receipt = receipt_of(&daemon, &covered).text.unwrap();
    assert!(receipt.contains("Today: 1 of 2 actions"), "{receipt}");
    assert!(!receipt.contains('$'), "{receipt}");
    // A kind with a target still names one, and a kind that costs still bounds the money.
    let cases: [(&[&str], &str); 2] = [
        (
            &["--kind", "publish_x", "--usd-per-day", "1.00"],
            "at least one named target is required",
        ),
        (&["--kind", "generate_image"], "usd_per_day: missing"),
    ];
    for (args, message) in cases {
        let mut all = vec!["mandate"];
        all.extend(args);
        all.extend(["--days", "1", "--actions-per-day", "1"]);
        let output = daemon.cli(&all);
        assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
    }
}

/// A mandate's term is time the owner gave: a wall clock stepped back must not stretch it, as it
/// must not stretch a card's window. Two days on (on the monotonic clock, the wall clock where it
/// was) a one-day mandate covers nothing: the ask gets the usual card.
#[test]
fn a_wall_clock_stepped_back_does_not_stretch_a_mandates_term() {
    let daemon = Daemon::start();
    grant(&daemon, &["@mila_news"], 1, "1.00", 2);
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall, monotonic + 2 * 24 * 3600);
    let (id, status) = ask(&daemon, &ask_to("@mila_news", "two days on", "0.10"));
    assert_eq!(
        status, "pending",
        "{id} was covered two days into a one-day term"
    );
    assert_eq!(daemon.runs(), 0);
}

/// `mandate_max_usd_per_day` bounds what standing permissions may spend on a kind in one of the
/// owner's days, not what each of several may: a second any-use mandate for a kind that one
/// already covers (its card says nothing of the first) must not double the day's money. Either
/// the second request is refused, or it is granted and the asks beyond the ceiling get a card.
#[test]
fn a_second_any_use_mandate_does_not_double_the_days_ceiling() {
    let daemon = Daemon::builder().mandate_kinds().start();
    let request = |reason: &str| {
        let mut request = mandate_for("generate_image", None, Some("10.00"), 10);
        request["reason"] = json!(reason);
        request
    };
    let first = daemon.request(&request("Illustrations"));
    let first = first["id"].as_str().unwrap().to_owned();
    grant_card(
        &daemon,
        &first,
        &["At most $10.00 and 10 actions a day"],
        &[],
    );
    let second = daemon.request(&request("More illustrations"));
    if second["status"] == "pending" {
        let second = second["id"].as_str().unwrap().to_owned();
        grant_card(
            &daemon,
            &second,
            &["At most $10.00 and 10 actions a day"],
            &[],
        );
    }
    let image = |text: &str| json!({"v":1,"op":"ask","kind":"generate_image","text":text,"cost_usd":"6.00","wait":false});
    let (id, status) = ask(&daemon, &image("a cat"));
    assert_eq!(status, "running", "{id}: inside the first mandate");
    daemon.wait_state(&id, "executed");
    let (id, status) = ask(&daemon, &image("a dog"));
    assert_eq!(
        status, "pending",
        "{id}: $12.00 of generate_image in one day ran without a card, over the $10.00 ceiling"
    );
}

/// An idempotency key names its action's record (docs/PROTOCOL.md, "The same action twice"): an
/// ask with a key that joined an open card gets that record back when it asks again with the
/// key, even after the record ended, so an agent restarted mid-ask does not ask twice. Asked
/// again once a mandate covers it, it must not run a second time.
#[test]
fn a_key_that_joined_an_open_card_names_that_record_when_asked_again() {
    let daemon = Daemon::start();
    let plain = ask_to("@mila_news", "Evening news", "0.10");
    let (first, status) = ask(&daemon, &plain);
    assert_eq!(status, "pending");
    let mut keyed = plain.clone();
    keyed["idempotency_key"] = json!("evening-news-2026-12-02");
    let (joined, _) = ask(&daemon, &keyed);
    assert_eq!(joined, first, "the same digest joins the open card");
    let card = daemon.card_of(&first);
    daemon.press_yes(&card);
    daemon.wait_state(&first, "executed");
    assert_eq!(daemon.runs(), 1);
    grant(&daemon, &["@mila_news"], 1, "1.00", 5);
    let (again, status) = ask(&daemon, &keyed);
    assert_eq!(
        (again.as_str(), status.as_str()),
        (first.as_str(), "executed"),
        "the key's record is the one it joined"
    );
    daemon.settle();
    assert_eq!(daemon.runs(), 1, "the action the key names ran twice");
}

/// Days are the owner's local days (docs/PROTOCOL.md, "Mandates"), also the 25-hour day when the
/// clocks go back:
/// in New York on 2027-11-07 the hour after 01:00 comes twice and the day ends at 05:00 UTC on
/// the 8th. A mandate's two actions a day are used up for the whole of that day (its repeated
/// hour and its last hour, 24 hours after its midnight, included) and come back at its end.
#[test]
fn a_mandates_day_is_the_owners_local_day_across_the_clocks_going_back() {
    use chrono::TimeZone as _;
    let daemon = Daemon::builder().timezone("America/New_York").start();
    let at = |y, mo, d, h, mi| chrono::Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap();
    // Both clocks move together: time passes, the wall clock is not stepped.
    let move_to = |when: chrono::DateTime<chrono::Utc>| {
        let (wall, monotonic) = daemon.clocks();
        let shift = crate::fixture::offset_to(when) - wall;
        daemon.set_clocks(wall + shift, monotonic + shift);
    };
    move_to(at(2027, 11, 7, 4, 20)); // 00:20 EDT on the 7th
    grant(&daemon, &["@mila_news"], 3, "10.00", 2);
    let cases = [
        (
            at(2027, 11, 7, 4, 30),
            "00:30 EDT, the day's first",
            "running",
        ),
        (
            at(2027, 11, 7, 5, 45),
            "01:45 EDT, the day's second",
            "running",
        ),
        (
            at(2027, 11, 7, 6, 30),
            "01:30 EST, the hour again, same day",
            "pending",
        ),
        (
            at(2027, 11, 8, 4, 30),
            "23:30 EST, 24h after midnight, same day",
            "pending",
        ),
        (
            at(2027, 11, 8, 5, 10),
            "00:10 EST on the 8th, a new day",
            "running",
        ),
    ];
    for (when, what, expected) in cases {
        move_to(when);
        let (id, status) = ask(&daemon, &ask_to("@mila_news", what, "0.10"));
        assert_eq!(status, expected, "{id} at {what}");
    }
}

/// The receipt of the last action a mandate may answer today is told with sound (docs/PROTOCOL.md,
/// "Mandates"), since the next ask will be a card. When the kind's shared day, not the mandate's
/// own, is what runs out — a second mandate for a kind the first already spent on — that
/// receipt is the day's last too: a routine, silent one tells the owner nothing of the cards
/// about to come, and shows "$6.00 of $10.00" as if four dollars were left.
#[test]
fn the_receipt_of_the_last_action_the_kinds_shared_day_allows_is_told() {
    let daemon = Daemon::builder().mandate_kinds().start();
    let one = daemon.request(&mandate_for("generate_image", None, Some("10.00"), 1));
    grant_card(&daemon, one["id"].as_str().unwrap(), &[], &[]);
    let ten = daemon.request(&mandate_for("generate_image", None, Some("10.00"), 10));
    assert_eq!(ten["status"], "pending", "{ten}");
    grant_card(&daemon, ten["id"].as_str().unwrap(), &[], &[]);
    let image = |text: &str| json!({"v":1,"op":"ask","kind":"generate_image","text":text,"cost_usd":"3.00","wait":false});
    let mut silent = Vec::new();
    for text in ["a cat", "a dog", "a fox"] {
        let (id, status) = ask(&daemon, &image(text));
        assert_eq!(status, "running", "{id}: {text} is within both days");
        daemon.wait_state(&id, "executed");
        silent.push((text, receipt_of(&daemon, &id).disable_notification));
    }
    let (id, status) = ask(&daemon, &image("an owl"));
    assert_eq!(
        status, "pending",
        "{id}: $12.00 is over the kind's $10.00 a day"
    );
    assert_eq!(
        silent,
        [("a cat", false), ("a dog", true), ("a fox", false)],
        "the first mandate's last, a routine one, then the kind's last of the day"
    );
}

/// A wall clock stepped must not move a mandate's day. Its term is kept on the monotonic clock
/// (above); its day's count is read by the records' wall-clock dates, so a step back into a day
/// the mandate lived through would start that day's count again, and a step forward past
/// midnight the next day's early. The owner granted two actions a day; each case uses them at
/// the hour given (both clocks moving, as time passes), sees the third get a card, steps the
/// wall clock alone, and asks twice more: both get cards. Then time passes until both clocks
/// read a day with no use, whose first ask runs.
#[test]
fn a_wall_clock_stepped_either_way_does_not_start_a_mandates_day_again() {
    let (today, tomorrow) = (today_at(10, 0), today_at(10, 0) + chrono::Duration::days(1));
    // The day the two actions are used, the wall clock's step, then the time that passes until
    // both clocks read a day with no use.
    let cases = [
        (
            "stepped back into a day the mandate saw",
            tomorrow,
            -23 * 3600,
            48 * 3600,
        ),
        (
            "stepped forward past midnight",
            today_at(23, 0),
            2 * 3600,
            3600 + 60,
        ),
    ];
    for (case, used_at, step, until_unused) in cases {
        let daemon = Daemon::start();
        daemon.pass_time_to(today);
        // Seven days, the longest term: the last ask comes about three days after the grant on
        // the monotonic clock, which a three-day term would end within seconds of (before or
        // after, as the test's own seconds fell).
        grant(&daemon, &["@mila_news"], 7, "10.00", 2);
        daemon.pass_time_to(used_at);
        for (text, expected) in [
            ("first", "running"),
            ("second", "running"),
            ("third", "pending"),
        ] {
            let (id, status) = ask(&daemon, &ask_to("@mila_news", text, "0.10"));
            assert_eq!(status, expected, "{case}: {id}: the {text} ask of the day");
        }
        daemon.advance_clock(step);
        for text in ["fourth", "fifth"] {
            let (id, status) = ask(&daemon, &ask_to("@mila_news", text, "0.10"));
            assert_eq!(
                status, "pending",
                "{case}: {id}: the {text} ask ran without a card on a mandate of 2 a day"
            );
        }
        let (wall, monotonic) = daemon.clocks();
        daemon.set_clocks(wall + until_unused, monotonic + until_unused);
        let (id, status) = ask(&daemon, &ask_to("@mila_news", "a new day's", "0.10"));
        assert_eq!(status, "running", "{case}: {id}: a new day's first ask");
    }
}

/// A wall clock stepped forward past midnight must not let a real day hold more uses than the
/// mandate allows. The day is read no later than the latest use plus the monotonic time since,
/// but the use it covers is dated by the wall clock, in the next day: that use is then counted
/// in neither. Each case: the owner grants two a day, one is used at 23:00, the wall clock alone
/// steps forward past midnight, and asks follow seconds later (on the monotonic clock, still the
/// same day): only one more may run.
#[test]
fn a_wall_clock_stepped_forward_does_not_let_one_day_hold_more_than_its_count() {
    let cases = [
        ("stepped forward 2 hours past midnight", 2 * 3600),
        ("stepped forward 30 minutes past midnight", 30 * 60 + 60),
    ];
    for (case, step) in cases {
        let daemon = Daemon::start();
        daemon.pass_time_to(today_at(10, 0));
        grant(&daemon, &["@mila_news"], 3, "10.00", 2);
        daemon.pass_time_to(today_at(23, 30));
        let (id, status) = ask(&daemon, &ask_to("@mila_news", "first", "0.10"));
        assert_eq!(status, "running", "{case}: {id}: the first ask of the day");
        daemon.advance_clock(step);
        let (id, status) = ask(&daemon, &ask_to("@mila_news", "second", "0.10"));
        assert_eq!(status, "running", "{case}: {id}: the second ask of the day");
        let (id, status) = ask(&daemon, &ask_to("@mila_news", "third", "0.10"));
        assert_eq!(
            status, "pending",
            "{case}: {id}: a third ask ran without a card within one day of a mandate of 2 a day \
             (the second was counted in the day before the step but dated in the day after)"
        );
    }
}
