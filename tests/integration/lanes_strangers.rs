//! Issue 17, items 4 and 5: the sender's lanes (an urgent notice is not kept waiting behind a
//! backlog of cards, and cards keep their order), and strangers' presses (one notice to the owner
//! per stranger per hour, their presses journaled as counted lines).

use std::time::{Duration, Instant};

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};

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
    eprintln!("the urgent notice waited {waited:?} behind the cards");
    let messages = daemon.bot.messages(OWNER);
    let notice_at = messages
        .iter()
        .position(|m| is_notice_of(m, "Eve"))
        .unwrap();
    let before = cards_sent(&messages[..notice_at], &ids);
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
