//! An ask's own `ttl` through a real daemon: bounded, shortening its card, and honoured on both
//! clocks even by a card held for the morning. After each case the journal verifies.

use serde_json::{json, Value};

use crate::fixture::Daemon;
use crate::mandates::events_of;
use crate::withdraw::{daemon, id_of, journal_verifies, shell_ask};

#[test]
fn an_asks_ttl_is_bounded_and_shortens_its_card() {
    let daemon = daemon().start();
    for ttl in [json!(9), json!(901), json!(1.5), json!("60"), json!(-1)] {
        let mut ask = shell_ask(&format!("ttl {ttl}"));
        ask["ttl"] = ttl.clone();
        let answer = daemon.request(&ask);
        assert_eq!(
            (&answer["status"], &answer["reason"]),
            (&json!("refused"), &json!("bad_request")),
            "ttl {ttl}: {answer}"
        );
        let message = answer["message"].as_str().unwrap();
        assert!(
            message.contains("ttl") && message.contains("10"),
            "{message}"
        );
        journal_verifies(&daemon, &format!("ttl {ttl}"), Some(&id_of(&answer)));
    }
    for ttl in [10, 900] {
        let mut ask = shell_ask(&format!("ttl ok {ttl}"));
        ask["ttl"] = json!(ttl);
        let id = id_of(&daemon.request(&ask));
        daemon.card_of(&id);
        let shown = daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "card_shown" && e["id"] == id)
            .unwrap();
        let asked = daemon.wait_state(&id, "card_shown")["created_at"].clone();
        let parse = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
        let window = parse(&shown["expires_at"]) - parse(&asked);
        assert!(
            window <= chrono::Duration::seconds(ttl) && window > chrono::Duration::seconds(ttl - 5),
            "ttl {ttl}: the card is open for {window}"
        );
        journal_verifies(&daemon, &format!("ttl {ttl}"), Some(&id));
    }
}

#[test]
fn a_pending_ask_held_in_quiet_hours_expires_at_its_ttl_unshown() {
    let daemon = daemon()
        .gate("quiet_hours = \"00:00-23:59\"\nnight_card_limit = 0")
        .start();
    // Inside the quiet hours whatever the real time is (23:59 is outside them).
    daemon.set_clock(crate::fixture::noon_today());
    let mut ask = shell_ask("held, with a ttl");
    ask["ttl"] = json!(60);
    ask["wait"] = json!(true);
    let mut stream = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
    std::io::Write::write_all(&mut stream, format!("{ask}\n").as_bytes()).unwrap();
    daemon.wait_for_event("asked");
    daemon.advance_clock(61);
    let lines = crate::fixture::answer_lines(&mut stream);
    let id = id_of(&lines[0]);
    assert_eq!(lines.last().unwrap()["status"], "expired", "{lines:?}");
    assert_eq!(events_of(&daemon, &id), ["asked", "expired"]);
    assert_eq!(daemon.wait_for_event("expired")["detail"], "ttl");
    assert!(
        !daemon
            .owner_chat()
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains(&id))),
        "never shown"
    );
    journal_verifies(&daemon, "ttl in quiet hours", Some(&id));
}

/// A daemon whose cards wait through `quiet` (none at night), its wall clock at `at`, and an ask
/// with a `ttl` of its own, held; the ask's id.
fn held_ask(quiet: &str, at: chrono::DateTime<chrono::Utc>, ttl: u64) -> (Daemon, String) {
    let daemon = daemon()
        .gate(&format!("quiet_hours = \"{quiet}\"\nnight_card_limit = 0"))
        .start();
    daemon.set_clock(at);
    let mut ask = shell_ask("held, with a ttl of its own");
    ask["ttl"] = json!(ttl);
    let id = id_of(&daemon.request(&ask));
    daemon.wait_for_event("asked");
    (daemon, id)
}

/// An ask's own ttl is time the session gave it, and a wall clock stepped back while the ask is
/// held must not stretch it: an hour on (on the monotonic clock) a 60 s ask has expired unshown,
/// as a card's window would on either clock, and its card can no longer be shown and pressed.
#[test]
fn a_held_asks_ttl_is_not_stretched_by_a_wall_clock_stepped_back() {
    let (daemon, id) = held_ask("00:00-23:59", crate::fixture::noon_today(), 60);
    // An hour passes, and the wall clock is stepped back two hours meanwhile (at 11:00 it is
    // still inside the quiet hours, so the card stays held).
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall - 3_600, monotonic + 3_600);
    daemon.wait_state(&id, "expired");
}

/// The same, with the quiet hours ending while the ask still waits: by the wall clock 13 of the
/// ask's 15 minutes are left, but its ttl passed long ago on the monotonic clock, so its card is
/// never shown (the sender judges the ask's ttl on both clocks before it sends the card), and
/// nothing can be pressed or run.
#[test]
fn a_held_ask_past_its_ttl_on_the_monotonic_clock_is_never_shown() {
    let (daemon, id) = held_ask("00:00-11:30", crate::fixture::today_at(11, 29), 900);
    // An hour passes, but the wall clock moves two minutes (stepped back 58 minutes): the quiet
    // hours end, and by the wall clock 13 minutes of the ask's 15 are left.
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 120, monotonic + 3_600);
    let status = daemon.wait_state(&id, "expired");
    assert_eq!(status["final"], true, "{status}");
    daemon.settle();
    let shown = daemon
        .owner_chat()
        .into_iter()
        .any(|m| !m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains(&id)));
    assert!(!shown, "a card past its ask's ttl was shown");
    assert_eq!(daemon.runs(), 0);
}

/// A held ask's card shown after the wall clock was stepped back is answerable for what is left
/// of the ask's ttl by the lesser clock: ten minutes into a 15-minute ttl by the monotonic clock
/// (two by the wall clock), its card has five minutes, not thirteen, and a yes six minutes on
/// does not count. The sweep may expire the card before the press lands: either way nothing runs.
#[test]
fn a_card_shown_for_a_held_ask_gets_only_what_is_left_of_its_ttl_on_the_monotonic_clock() {
    let (daemon, id) = held_ask("00:00-11:30", crate::fixture::today_at(11, 29), 900);
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 120, monotonic + 600);
    let card = daemon.card_of(&id);
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 360, monotonic + 360);
    daemon.press_yes(&card);
    daemon.settle();
    let status = daemon.wait_state(&id, "expired");
    assert_eq!(status["final"], true, "{status}");
    assert_eq!(daemon.runs(), 0);
}
