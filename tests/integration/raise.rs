//! Raise today end to end: offered only on the receipt of the action that used up a mandate's
//! day, answered only by the owner's own signed press in the owner's chat, once a day per
//! mandate, never above a ceiling; the next ask runs under it, and the next day is as granted.

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{noon_today, Daemon, DaemonBuilder, OWNER};
use crate::mandates::{
    ask, ask_to, button, grant, owner, press, receipt_of, relabel, stranger, tampered,
};
use crate::owner::events;

const TARGET: &str = "@mila_news";

/// The labels of a message's buttons.
fn labels(message: &ChatMessage) -> Vec<String> {
    message.buttons().iter().map(|b| b.text.clone()).collect()
}

/// A covered post, run; its receipt.
fn covered(daemon: &Daemon, text: &str) -> (String, ChatMessage) {
    let (id, status) = ask(daemon, &ask_to(TARGET, text, "0.01"));
    assert_eq!(status, "running", "{text}: covered");
    daemon.wait_state(&id, "executed");
    let receipt = receipt_of(daemon, &id);
    (id, receipt)
}

/// The day `d` days after today, at noon: both clocks move, as time passing does.
fn day(daemon: &Daemon, d: i64) {
    daemon.pass_time_to(noon_today() + chrono::Duration::days(d));
}

fn rejections(daemon: &Daemon) -> Vec<Value> {
    events(daemon, "press_rejected")
}

#[test]
fn raise_today_is_offered_on_the_receipt_that_used_the_day_up_and_lifts_it_once_for_that_day() {
    let daemon = Daemon::start();
    day(&daemon, 0);
    let mandate = grant(&daemon, &[TARGET], 7, "5.00", 3);
    // Day 0: the first two receipts carry Stop alone; the third, which used the day up, Raise.
    for n in 0..2 {
        let (_, receipt) = covered(&daemon, &format!("day 0, post {n}"));
        assert_eq!(labels(&receipt), ["Stop"], "post {n} left room");
    }
    let (_, stale) = covered(&daemon, "day 0, post 2");
    assert_eq!(labels(&stale), ["Stop", "Raise today"]);
    let text = stale.text.clone().unwrap();
    assert!(
        text.contains("Today: 3 of 3 actions") && text.contains("At most $5.00 and 5 actions"),
        "{text}"
    );
    // Day 1: yesterday's Raise is for yesterday, never today.
    day(&daemon, 1);
    let before = rejections(&daemon).len();
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &stale,
        &button(&stale, 1),
    );
    daemon.settle();
    assert_eq!(rejections(&daemon).len(), before + 1, "yesterday's Raise");
    assert_eq!(rejections(&daemon)[before]["reason"], "not_open");
    for n in 0..2 {
        covered(&daemon, &format!("day 1, post {n}"));
    }
    let (last, receipt) = covered(&daemon, "day 1, post 2");
    let raise = button(&receipt, 1);
    let (over, status) = ask(&daemon, &ask_to(TARGET, "day 1, before the raise", "0.01"));
    assert_eq!(status, "pending", "the day is used up: a card");
    daemon.card_of(&over);
    hostile_presses_raise_nothing(&daemon, &receipt, &raise, &mandate);
    // The owner's own press: raised for the rest of the day, journaled after the press.
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &receipt,
        &raise,
    );
    let line = daemon.wait_for_event("mandate_raised");
    assert_eq!(line["id"], mandate.as_str());
    assert_eq!(line["record"], last.as_str());
    assert_eq!(line["actions_per_day"], 5);
    assert_eq!(line["by"], OWNER);
    assert_eq!(
        line["usd_per_day"], "5.00",
        "the money was not used up: as granted"
    );
    // The next asks run under it, and their receipts show the raised limit.
    let (_, fourth) = covered(&daemon, "day 1, post 3");
    let text = fourth.text.clone().unwrap();
    assert!(
        text.contains("Today: 4 of 5 actions") && text.contains("Raised by you for today only"),
        "{text}"
    );
    let (_, fifth) = covered(&daemon, "day 1, post 4");
    assert_eq!(
        labels(&fifth),
        ["Stop"],
        "raised once today: no second Raise"
    );
    // A replay of the press, and a second raise the same day: nothing changes twice.
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &receipt,
        &raise,
    );
    daemon.settle();
    assert_eq!(
        events(&daemon, "mandate_raised").len(),
        1,
        "a replayed Raise"
    );
    assert_eq!(rejections(&daemon).last().unwrap()["reason"], "not_open");
    let (sixth, status) = ask(&daemon, &ask_to(TARGET, "day 1, past the raise", "0.01"));
    assert_eq!(status, "pending", "5 of 5 raised: a card");
    daemon.card_of(&sixth);
    // /mandates shows today's raised limit.
    let list = crate::owner::say(&daemon, "/mandates", "Standing permission");
    let text = list.text.unwrap();
    assert!(
        text.contains("Today: 5 of 5 actions") && text.contains("Raised by you"),
        "{text}"
    );
    // Day 2: as granted.
    day(&daemon, 2);
    for n in 0..3 {
        covered(&daemon, &format!("day 2, post {n}"));
    }
    let (next, status) = ask(&daemon, &ask_to(TARGET, "day 2, past the terms", "0.01"));
    assert_eq!(status, "pending", "the next day is as granted: {next}");
}

/// Presses of a receipt's Raise that must raise nothing, each its own assertion: the reason
/// each is journaled with, and no `mandate_raised`.
fn hostile_presses_raise_nothing(
    daemon: &Daemon,
    receipt: &ChatMessage,
    raise: &str,
    mandate: &str,
) {
    let stop = button(receipt, 0);
    let group = ChatSpec::group(-100_123);
    let cases: Vec<(&str, UserSpec, ChatSpec, String, &str)> = vec![
        (
            "a stranger",
            stranger(),
            ChatSpec::private(777),
            raise.to_owned(),
            "not_owner",
        ),
        (
            "another user in the owner's chat",
            UserSpec::new(778, "Eve's friend"),
            ChatSpec::private(OWNER),
            raise.to_owned(),
            "not_owner",
        ),
        (
            "the owner, from a group",
            owner(),
            group,
            raise.to_owned(),
            "not_private_chat",
        ),
        (
            "a tampered tag",
            owner(),
            ChatSpec::private(OWNER),
            tampered(raise),
            "bad_tag",
        ),
        (
            "the receipt's Stop relabelled as Raise",
            owner(),
            ChatSpec::private(OWNER),
            relabel(&stop, "s", "l"),
            "bad_tag",
        ),
        (
            "the Raise re-aimed at the mandate",
            owner(),
            ChatSpec::private(OWNER),
            resubject(raise, mandate),
            "bad_tag",
        ),
    ];
    for (name, from, chat, data, reason) in cases {
        let before = rejections(daemon).len();
        press(daemon, &from, chat, receipt, &data);
        daemon.settle();
        let rejected = rejections(daemon);
        assert_eq!(
            rejected.get(before).map(|e| e["reason"].clone()),
            Some(json!(reason)),
            "{name}"
        );
        assert!(events(daemon, "mandate_raised").is_empty(), "{name} raised");
    }
}

/// `data` with its subject replaced.
fn resubject(data: &str, subject: &str) -> String {
    let mut parts: Vec<&str> = data.split('.').collect();
    parts[3] = subject;
    parts.join(".")
}

#[test]
fn no_raise_is_offered_at_a_ceiling() {
    let daemon = DaemonBuilder::default()
        .limit("mandate_max_actions_per_day", "3")
        .start();
    day(&daemon, 0);
    grant(&daemon, &[TARGET], 7, "5.00", 3);
    for n in 0..3 {
        let (_, receipt) = covered(&daemon, &format!("post {n}"));
        assert_eq!(labels(&receipt), ["Stop"], "post {n}: 3 is the ceiling");
    }
    let (_, status) = ask(&daemon, &ask_to(TARGET, "past the ceiling", "0.01"));
    assert_eq!(status, "pending");
    assert!(events(&daemon, "mandate_raised").is_empty());
}
