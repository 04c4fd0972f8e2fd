//! Telegram misbehaving: 429s with `retry_after`, 5xx, timeouts, dropped connections, cut-off
//! and unreadable answers, duplicate and out-of-order updates. Whatever the Bot API does, nothing
//! panics, no bad update grants anything, every card is shown or its record expires, and a 429's
//! `retry_after` is waited out. A dense but short mix; the 10,000-call soak is
//! `cargo bench --bench telegram_faults` (docs/BENCHMARKS.md, "Telegram faults").

use std::time::Duration;

use consentd_emulator::{
    poisoned, retry_gaps, ChatMessage, ChatSpec, Emulator, Outcome, Scripted, UserSpec,
};
use serde_json::json;

use crate::fixture::{good_ask, Daemon, OWNER};

/// Longer than the fixture's patience: a timed-out call alone takes teloxide's 17 s.
const FAULT_PATIENCE: Duration = Duration::from_secs(60);

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn ask(daemon: &Daemon, text: &str) -> String {
    let answer = daemon.request(&good_ask(text));
    answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("not stored: {answer}"))
        .to_owned()
}

/// The card of `id`, waiting as long as faults may delay it.
fn card(daemon: &Daemon, id: &str) -> ChatMessage {
    let find = |bot: &Emulator| {
        bot.messages(OWNER).into_iter().find(|m| {
            m.outgoing
                && !m.buttons().is_empty()
                && m.text.as_deref().is_some_and(|t| t.contains(id))
        })
    };
    daemon
        .bot
        .wait_until_blocking(&format!("the card of {id}"), FAULT_PATIENCE, |bot| {
            find(bot).is_some()
        })
        .unwrap_or_else(|error| panic!("{error}\n{}", daemon.log()));
    find(&daemon.bot).unwrap()
}

fn button(card: &ChatMessage, index: usize) -> String {
    card.buttons()[index].callback_data.clone().unwrap()
}

fn wait_state(daemon: &Daemon, id: &str, state: &str) {
    let deadline = std::time::Instant::now() + FAULT_PATIENCE;
    loop {
        let answer = daemon.request(&json!({"v":1,"op":"status","id":id}));
        if answer["status"] == state {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{id} never became {state}: {answer}\njournal: {:#?}\n{}",
            daemon.journal_events(),
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The journal's decision lines (`granted`, `declined`, `expired`) for record `id`.
fn decisions(daemon: &Daemon, id: &str) -> Vec<String> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id)
        .filter_map(|e| e["ev"].as_str().map(str::to_owned))
        .filter(|ev| matches!(ev.as_str(), "granted" | "declined" | "expired"))
        .collect()
}

fn assert_honoured(gaps: &[(u32, Duration)], expected: usize) {
    assert_eq!(gaps.len(), expected, "429s answered: {gaps:?}");
    for (after, gap) in gaps {
        assert!(
            *gap >= Duration::from_secs(u64::from(*after)),
            "retry_after {after} s, retried after {gap:?}"
        );
    }
}

fn assert_no_panic(daemon: &Daemon) {
    let log = daemon.log();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn duplicate_out_of_order_and_poison_updates_change_nothing_twice_and_grant_nothing() {
    let daemon = Daemon::start();
    let (a, b, c) = (
        ask(&daemon, "first"),
        ask(&daemon, "second"),
        ask(&daemon, "third"),
    );
    let (card_a, card_b, card_c) = (card(&daemon, &a), card(&daemon, &b), card(&daemon, &c));

    // Hold the poller with a 429 so that everything pushed next comes in one batch.
    daemon
        .bot
        .script("getUpdates", Scripted::too_many_requests(2));
    daemon
        .bot
        .push_text(&UserSpec::new(777, "Eve"), ChatSpec::group(-100), "hello");
    daemon.wait_for("the poller to be rate limited", |bot| {
        bot.calls_to("getupdates")
            .iter()
            .any(|c| matches!(c.outcome, Some(Outcome::Error { code: 429, .. })))
    });
    let chat = ChatSpec::private(OWNER);
    // A's Yes twice under one update_id, then C's No before B's No, whose id is lower.
    let mut yes_a =
        daemon
            .bot
            .callback_update(&owner(), chat, card_a.message_id, &button(&card_a, 0));
    let first = daemon.bot.push_update(yes_a.clone());
    yes_a["update_id"] = json!(first);
    daemon.bot.push_update(yes_a);
    let mut no_c =
        daemon
            .bot
            .callback_update(&owner(), chat, card_c.message_id, &button(&card_c, 1));
    no_c["update_id"] = json!(first + 2);
    daemon.bot.push_update(no_c);
    let mut no_b =
        daemon
            .bot
            .callback_update(&owner(), chat, card_b.message_id, &button(&card_b, 1));
    no_b["update_id"] = json!(first + 1);
    daemon.bot.push_update(no_b);
    wait_state(&daemon, &a, "executed");
    wait_state(&daemon, &b, "declined");
    wait_state(&daemon, &c, "declined");
    assert_eq!(daemon.runs(), 1);
    assert_eq!(decisions(&daemon, &a), ["granted"]);
    assert_eq!(decisions(&daemon, &b), ["declined"]);
    assert_eq!(decisions(&daemon, &c), ["declined"]);
    assert_honoured(&retry_gaps(&daemon.bot.calls(), &["getupdates"]), 1);

    // A poison update carrying D's valid Yes: skipped alone, so the No after it still counts,
    // and the Yes inside it grants nothing. Before the fix every getUpdates failed on it forever.
    let d = ask(&daemon, "fourth");
    let card_d = card(&daemon, &d);
    let yes_d = daemon
        .bot
        .callback_update(&owner(), chat, card_d.message_id, &button(&card_d, 0));
    let poison = daemon.bot.push_update(poisoned(yes_d));
    daemon
        .bot
        .push_press(&owner(), chat, card_d.message_id, &button(&card_d, 1));
    wait_state(&daemon, &d, "declined");
    assert_eq!(decisions(&daemon, &d), ["declined"]);
    assert_eq!(daemon.runs(), 1);
    daemon.settle();
    let log = daemon.log();
    assert!(
        log.contains("skipping an update teloxide cannot read")
            && log.contains(&poison.to_string()),
        "{log}"
    );
    assert_no_panic(&daemon);
}

#[test]
fn cards_and_edits_ride_out_a_dense_fault_mix() {
    let daemon = Daemon::start();
    let bot = &daemon.bot;
    // Each row of the sender meets 429s, a dropped connection, a cut-off answer and a 5xx; the
    // poller meets a timeout, a cut-off answer and a dropped connection; press answers meet a
    // drop and a timeout. teloxide waits 10 s on a 5xx and 17 s for a timeout: one of each.
    for fault in [
        Scripted::too_many_requests(3),
        Scripted::Drop,
        Scripted::MalformedJson,
        Scripted::too_many_requests(1),
    ] {
        bot.script("sendMessage", fault);
    }
    for fault in [Scripted::server_error(502), Scripted::too_many_requests(2)] {
        bot.script("editMessageText", fault);
    }
    for fault in [
        Scripted::Delay(Duration::from_secs(18)),
        Scripted::MalformedJson,
        Scripted::Drop,
    ] {
        bot.script("getUpdates", fault);
    }
    for fault in [Scripted::Drop, Scripted::Delay(Duration::from_secs(18))] {
        bot.script("answerCallbackQuery", fault);
    }
    let ids: Vec<String> = ["yes", "no", "forged", "stranger"]
        .iter()
        .map(|text| ask(&daemon, text))
        .collect();
    let cards: Vec<ChatMessage> = ids.iter().map(|id| card(&daemon, id)).collect();
    let chat = ChatSpec::private(OWNER);
    bot.push_press(&owner(), chat, cards[0].message_id, &button(&cards[0], 0));
    bot.push_press(&owner(), chat, cards[1].message_id, &button(&cards[1], 1));
    // A Yes with its tag's last character changed, and a stranger's valid-looking Yes.
    let mut forged = button(&cards[2], 0);
    let tag = forged.rfind('.').unwrap() + 1;
    let other = if forged[tag..].starts_with('A') {
        "B"
    } else {
        "A"
    };
    forged.replace_range(tag..=tag, other);
    bot.push_press(&owner(), chat, cards[2].message_id, &forged);
    bot.push_press(
        &UserSpec::new(777, "Eve"),
        ChatSpec::private(777),
        cards[3].message_id,
        &button(&cards[3], 0),
    );
    wait_state(&daemon, &ids[0], "executed");
    wait_state(&daemon, &ids[1], "declined");
    daemon.settle();
    // Nobody answered the last two: they expire, and nothing ran for them.
    daemon.advance_clock(16 * 60);
    wait_state(&daemon, &ids[2], "expired");
    wait_state(&daemon, &ids[3], "expired");
    for (id, decision) in ids
        .iter()
        .zip(["granted", "declined", "expired", "expired"])
    {
        assert_eq!(decisions(&daemon, id), [decision], "{id}");
    }
    assert_eq!(daemon.runs(), 1);
    let rejected = daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["ev"] == "press_rejected")
        .count();
    assert_eq!(rejected, 2);
    // The expiry edits go through the faults left for edits too.
    let sender = [
        "sendmessage",
        "editmessagetext",
        "sendphoto",
        "senddocument",
    ];
    daemon.wait_for("every 429 to be retried", |bot| {
        bot.pending_scripts() == 0 && retry_gaps(&bot.calls(), &sender).len() == 3
    });
    assert_honoured(&retry_gaps(&bot.calls(), &sender), 3);
    assert_no_panic(&daemon);
}

/// Three dropped connections and a cut-off answer in a row: the poller backs off (2, 4, 8 s),
/// probes, and then hears the owner again.
#[test]
fn a_burst_of_resets_on_get_updates_leaves_the_bot_listening() {
    let daemon = Daemon::start();
    let faults = [
        Scripted::Drop,
        Scripted::Drop,
        Scripted::Drop,
        Scripted::MalformedJson,
    ];
    yes_after_get_updates_meets(&daemon, faults);
    assert_no_panic(&daemon);
}

/// A 429 answering the probe that follows a cut-off answer binds the next getUpdates like any
/// other: before the fix the poller waited only its 2 s backoff.
#[test]
fn a_429_answering_the_probe_is_waited_out() {
    let daemon = Daemon::start();
    let faults = [Scripted::MalformedJson, Scripted::too_many_requests(5)];
    yes_after_get_updates_meets(&daemon, faults);
    assert_honoured(&retry_gaps(&daemon.bot.calls(), &["getupdates"]), 1);
    assert_no_panic(&daemon);
}

/// Asks, lets the next getUpdates calls meet `faults` in order, then has the owner press Yes and
/// waits until the ask ran: the poller came through the faults listening.
fn yes_after_get_updates_meets(daemon: &Daemon, faults: impl IntoIterator<Item = Scripted>) {
    let bot = &daemon.bot;
    let id = ask(daemon, "after the faults");
    let card_a = card(daemon, &id);
    for fault in faults {
        bot.script("getUpdates", fault);
    }
    // Wake the poll in flight, so the next calls are the ones that meet the faults.
    bot.push_text(&UserSpec::new(777, "Eve"), ChatSpec::group(-100), "hello");
    bot.wait_until_blocking("the faults met", FAULT_PATIENCE, |bot| {
        bot.pending_scripts() == 0
    })
    .unwrap_or_else(|error| panic!("{error}\n{}", daemon.log()));
    bot.push_press(
        &owner(),
        ChatSpec::private(OWNER),
        card_a.message_id,
        &button(&card_a, 0),
    );
    wait_state(daemon, &id, "executed");
}
