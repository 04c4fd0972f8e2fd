//! The sender's lanes (an urgent notice is not kept waiting behind a
//! backlog of cards, and cards keep their order), and strangers' presses (one notice to the owner
//! per stranger per hour, their presses journaled as counted lines).

use std::time::{Duration, Instant};

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use consentd_store::inspect::Inspect;

use crate::fixture::{good_ask, Daemon, OWNER};

fn stranger(id: i64, name: &str) -> UserSpec {
    UserSpec::new(id, name)
}

/// Asks `count` asks with texts of their own (so none joins another's card); their ids in order.
fn ask_many(daemon: &Daemon, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let answer = daemon.request(&good_ask(&format!("post number {i}")));
            answer["id"]
                .as_str()
                .unwrap_or_else(|| panic!("ask {i} was not taken: {answer}"))
                .to_owned()
        })
        .collect()
}

/// The cards in the owner's chat, as positions in `ids`, in the order they were sent.
fn cards_sent(messages: &[ChatMessage], ids: &[String]) -> Vec<usize> {
    messages
        .iter()
        .filter(|m| m.outgoing && !m.buttons().is_empty())
        .filter_map(|m| {
            let text = m.text.as_deref()?;
            ids.iter().position(|id| text.contains(id.as_str()))
        })
        .collect()
}

/// Whether a message is the notice that `name` pressed the owner's buttons.
fn is_notice_of(message: &ChatMessage, name: &str) -> bool {
    message.outgoing
        && message.buttons().is_empty()
        && message.text.as_deref().is_some_and(|t| t.contains(name))
}

#[test]
fn an_urgent_notice_goes_before_a_backlog_of_cards_which_keep_their_order() {
    let daemon = Daemon::builder().max_pending(100).start();
    let ids = ask_many(&daemon, 100);
    let first = daemon.card_of(&ids[0]);
    let yes = first.buttons()[0].callback_data.clone().unwrap();
    // A stranger presses the forwarded card: the owner's urgent notice is queued behind the
    // cards still to be sent (about one a second).
    let pressed = Instant::now();
    daemon.bot.push_press(
        &stranger(777, "Eve"),
        ChatSpec::private(777),
        first.message_id,
        &yes,
    );
    // Patient enough to time a first-in, first-out sender too (100 cards at one a second).
    daemon
        .bot
        .wait_until_blocking("the owner's notice", Duration::from_secs(240), |bot| {
            bot.messages(OWNER).iter().any(|m| is_notice_of(m, "Eve"))
        })
        .unwrap_or_else(|error| panic!("{error}\n{}", daemon.log()));
    let waited = pressed.elapsed();
    let messages = daemon.bot.messages(OWNER);
    let notice_at = messages
        .iter()
        .position(|m| is_notice_of(m, "Eve"))
        .unwrap();
    let before = cards_sent(&messages[..notice_at], &ids);
    eprintln!(
        "the urgent notice waited {waited:?} behind the cards; {} of 100 cards went before it",
        before.len()
    );
    assert!(
        before.len() < 50,
        "the notice went after {} of the 100 cards (it waited {waited:?})",
        before.len()
    );
    // The cards lane keeps its order: the first cards, in the order they were asked.
    daemon.wait_for("more cards after the notice", |bot| {
        cards_sent(&bot.messages(OWNER), &ids).len() >= before.len() + 3
    });
    let sent = cards_sent(&daemon.bot.messages(OWNER), &ids);
    let in_order: Vec<usize> = (0..sent.len()).collect();
    assert_eq!(
        sent, in_order,
        "cards are sent in the order they were asked"
    );
}

/// The urgent notices queued for the owner so far (each update handled has queued its own).
fn urgent_rows(daemon: &Daemon) -> i64 {
    let rows = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .outbox()
        .unwrap();
    let urgent = rows
        .iter()
        .filter(|row| row.chat_id == OWNER && row.sound == "urgent")
        .count();
    i64::try_from(urgent).unwrap()
}

/// The journal's `press_rejected` lines for presses by `user`.
fn rejected_by(daemon: &Daemon, user: i64) -> Vec<serde_json::Value> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["ev"] == "press_rejected" && e["by"] == user)
        .collect()
}

/// How many presses the lines count: a line without `count` is one press.
fn presses_counted(lines: &[serde_json::Value]) -> u64 {
    lines
        .iter()
        .map(|line| line.get("count").map_or(1, |count| count.as_u64().unwrap()))
        .sum()
}

/// A card the owner forwarded: its record id, its message and its Yes's callback data.
fn forwarded_card(daemon: &Daemon) -> (String, ChatMessage, String) {
    let id = daemon.request(&good_ask("a card someone forwarded"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = daemon.card_of(&id);
    let yes = card.buttons()[0].callback_data.clone().unwrap();
    (id, card, yes)
}

#[test]
fn thirty_presses_by_a_stranger_give_the_owner_one_notice_and_the_journal_a_count() {
    let daemon = Daemon::start();
    let (id, card, yes) = forwarded_card(&daemon);
    let (eve, mallory) = (stranger(777, "Eve"), stranger(888, "Mallory"));
    let press = |who: &UserSpec| {
        daemon
            .bot
            .push_press(who, ChatSpec::private(who.id), card.message_id, &yes);
    };
    for _ in 0..30 {
        press(&eve);
    }
    daemon.settle();
    assert_eq!(urgent_rows(&daemon), 1, "one notice for thirty presses");
    daemon.wait_for("the owner's notice of Eve", |bot| {
        bot.messages(OWNER).iter().any(|m| is_notice_of(m, "Eve"))
    });
    let lines = rejected_by(&daemon, 777);
    assert_eq!(
        lines.len(),
        1,
        "one line while the window is open: {lines:?}"
    );
    assert_eq!(lines[0]["reason"], "not_owner");
    assert_eq!(lines[0]["subject"], id.as_str());

    // Another stranger is another window: their own notice.
    press(&mallory);
    press(&mallory);
    daemon.settle();
    assert_eq!(urgent_rows(&daemon), 2, "the second stranger's own notice");
    daemon.wait_for("the owner's notice of Mallory", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| is_notice_of(m, "Mallory"))
    });

    // The hour passes: the sweep journals what each window counted.
    daemon.advance_clock(3601);
    wait_counted(&daemon, 777, 30);
    let lines = rejected_by(&daemon, 777);
    assert_eq!(lines.len(), 2, "two lines for thirty presses: {lines:?}");
    assert_eq!(presses_counted(&lines), 30, "the lines count every press");
    assert_eq!(lines[1]["count"], 29);
    assert_eq!(presses_counted(&rejected_by(&daemon, 888)), 2);
    let journal = daemon.journal_text();
    for name in ["Eve", "Mallory"] {
        assert!(
            !journal.contains(name),
            "the journal never names a stranger"
        );
    }

    // A press after the hour opens a new window: the owner hears of it again.
    press(&eve);
    daemon.settle();
    assert_eq!(urgent_rows(&daemon), 3, "a new hour, a new notice");
    assert_eq!(rejected_by(&daemon, 777).len(), 3);
}

/// Waits until the journal's lines for presses by `user` count `presses`; returns those lines.
fn wait_counted(daemon: &Daemon, user: i64, presses: u64) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while presses_counted(&rejected_by(daemon, user)) < presses {
        assert!(
            Instant::now() < deadline,
            "the count was never journaled: {:?}",
            rejected_by(daemon, user)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    rejected_by(daemon, user)
}

#[test]
fn a_restart_within_the_hour_neither_forgets_the_count_nor_notifies_again() {
    let daemon = Daemon::start();
    let (_, card, yes) = forwarded_card(&daemon);
    let eve = stranger(777, "Eve");
    let press = |daemon: &Daemon| {
        daemon
            .bot
            .push_press(&eve, ChatSpec::private(777), card.message_id, &yes);
    };
    for _ in 0..5 {
        press(&daemon);
    }
    daemon.settle();
    assert_eq!(urgent_rows(&daemon), 1);
    let mut daemon = daemon;
    assert!(daemon
        .stop_with(nix::sys::signal::Signal::SIGTERM)
        .success());
    let daemon = daemon.restart();
    press(&daemon);
    daemon.settle();
    assert_eq!(urgent_rows(&daemon), 1, "the window outlives a restart");
    assert_eq!(rejected_by(&daemon, 777).len(), 1);
    daemon.advance_clock(3601);
    let lines = wait_counted(&daemon, 777, 6);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[1]["count"], 5,
        "the presses before and after the restart"
    );
}
