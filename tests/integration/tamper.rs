//! What someone holding the bot's token can change on a card (its keyboard, its entities, its
//! text), and what the owner's press on it then does: a Yes counts only on the card as drawn,
//! while a press that takes something back still counts. Also the edges around the binding: a
//! silence from before silences were named, and a yes pressed while the sender is busy.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{good_ask, Daemon, OWNER, TOKEN};

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn private() -> ChatSpec {
    ChatSpec::private(OWNER)
}

/// One Bot API call as whoever holds the token makes it (straight to the emulator's HTTP API).
fn bot_api(daemon: &Daemon, method: &str, body: &Value) -> Value {
    let url = daemon.bot.api_url();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let host = host.split('/').next().unwrap().to_owned();
    let mut stream = TcpStream::connect(&host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /bot{TOKEN}/{method} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (_, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()))
}

fn ask_card(daemon: &Daemon, ask: &Value) -> (String, ChatMessage) {
    let answer = daemon.request(ask);
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned();
    let card = daemon.card_of(&id);
    (id, card)
}

/// Waits for the daemon's verdict on the press made after journal line `before`: the reason of
/// its `press_rejected` line, or "granted".
fn verdict_after(daemon: &Daemon, before: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for event in daemon.journal_events().into_iter().skip(before) {
            match event["ev"].as_str() {
                Some("press_rejected") => return event["reason"].as_str().unwrap().to_owned(),
                Some("granted") => return "granted".to_owned(),
                _ => {}
            }
        }
        assert!(Instant::now() < deadline, "no verdict\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The token holder leaves the card's text alone and edits only its keyboard: the Yes data now
/// sits under a button labelled as the No. The owner, meaning no, taps "No".
#[test]
fn a_relabelled_keyboard_does_not_turn_a_no_into_a_yes() {
    let daemon = Daemon::start();
    let (id, card) = ask_card(&daemon, &good_ask("relabelled keyboard"));
    let buttons = card.buttons();
    let (yes, no) = (&buttons[0], &buttons[1]);
    assert_eq!((yes.text.as_str(), no.text.as_str()), ("Yes", "No"));
    let edited = bot_api(
        &daemon,
        "editMessageReplyMarkup",
        &json!({
            "chat_id": OWNER,
            "message_id": card.message_id,
            "reply_markup": {"inline_keyboard": [[
                {"text": "No", "callback_data": yes.callback_data},
                {"text": "Yes", "callback_data": no.callback_data},
            ]]},
        }),
    );
    assert_eq!(edited["ok"], true, "{edited}");
    let now = daemon.bot.message(OWNER, card.message_id).unwrap();
    assert_eq!(now.text, card.text, "the text is untouched");
    let tapped = now.buttons().into_iter().find(|b| b.text == "No").unwrap();
    let before = daemon.journal_events().len();
    daemon
        .bot
        .press_button(
            &owner(),
            private(),
            card.message_id,
            tapped.callback_data.as_deref().unwrap(),
        )
        .unwrap();
    let verdict = verdict_after(&daemon, before);
    assert_ne!(
        verdict, "granted",
        "the owner tapped \"No\" on a card whose keyboard was edited, and it counted as a Yes"
    );
    assert_eq!(daemon.runs(), 0);
    let _ = id;
}

/// The token holder sends the card's text again, unchanged, without its entities: the agent's
/// text is no longer a quotation, so its own "Target:" and "Cost:" lines read as the card's.
#[test]
fn a_card_stripped_of_its_quotation_does_not_count() {
    let daemon = Daemon::start();
    let mimic = "Hello\n\nPost to X (external)\nTarget: @mila_news\nCost: $0.00";
    let mut ask = good_ask(mimic);
    ask["target"] = json!("@mallory");
    let (_id, card) = ask_card(&daemon, &ask);
    assert!(card.entities.is_some());
    let markup = json!({"inline_keyboard": [card
        .buttons()
        .iter()
        .map(|b| json!({"text": b.text, "callback_data": b.callback_data}))
        .collect::<Vec<_>>()]});
    let edited = bot_api(
        &daemon,
        "editMessageText",
        &json!({
            "chat_id": OWNER,
            "message_id": card.message_id,
            "text": card.text,
            "reply_markup": markup,
        }),
    );
    assert_eq!(edited["ok"], true, "{edited}");
    let now = daemon.bot.message(OWNER, card.message_id).unwrap();
    assert_eq!(now.text, card.text, "same text");
    assert!(now.entities.is_none(), "no quotation any more");
    let before = daemon.journal_events().len();
    daemon.tap(&card, 0);
    let verdict = verdict_after(&daemon, before);
    assert_ne!(
        verdict, "granted",
        "a Yes on a card whose entities were edited away counted"
    );
    assert_eq!(daemon.runs(), 0);
}

/// A silence started before the upgrade has no `silenced_by` (migration 0005 adds the column
/// empty): the Resume of its kind lifts it. (Its notice must have been drawn since: buttons
/// drawn before the upgrade do not count, see docs/CONTRACT-NOTES.md.)
#[test]
fn a_silence_from_before_the_upgrade_can_still_be_resumed() {
    let daemon = Daemon::builder().decline_streak(1).start();
    let (id, card) = ask_card(&daemon, &good_ask("the no that silences"));
    daemon.tap(&card, 1);
    daemon.wait_state(&id, "declined");
    daemon.wait_for("the silence notice", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.buttons().iter().any(|b| b.text == "Resume"))
    });
    let notice = daemon
        .owner_chat()
        .into_iter()
        .find(|m| m.buttons().iter().any(|b| b.text == "Resume"))
        .unwrap();
    let mut daemon = daemon;
    daemon.stop_with(nix::sys::signal::Signal::SIGTERM);
    // What a silence started before the upgrade holds: no silenced_by.
    consentd_store::inspect::tamper::forget_who_silenced(&daemon.state_dir).unwrap();
    let daemon = daemon.restart();
    assert_eq!(
        daemon.request(&good_ask("silenced"))["reason"],
        "kind_silenced"
    );
    daemon.tap(&notice, 0);
    daemon.settle();
    std::thread::sleep(Duration::from_millis(500));
    let after = daemon.request(&good_ask("after the resume"));
    assert_eq!(
        after["status"],
        "pending",
        "the owner's Resume on the notice of a silence from before the upgrade lifts nothing, \
         and no other button can: {after}\n{:?}",
        daemon
            .journal_events()
            .iter()
            .filter(|e| e["ev"] == "press_rejected")
            .collect::<Vec<_>>()
    );
}

/// Whoever holds the token alters the owner's `/categories` reply (any change will do). The
/// owner's Off — a press that only takes something back — still counts: refusing it would let
/// the same edit on every new reply keep the owner from switching anything off (or, on
/// receipts, from stopping a mandate). The MAC still binds what it does.
#[test]
fn an_off_on_an_altered_message_still_switches_off() {
    let daemon = Daemon::start();
    let before = daemon.bot.messages(OWNER).len();
    daemon.bot.push_text(&owner(), private(), "/categories");
    let find = |bot: &consentd_emulator::Emulator| {
        bot.messages(OWNER).into_iter().skip(before).find(|m| {
            m.outgoing
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains("Post to X (external): on"))
        })
    };
    daemon.wait_for("the switch for publish_x", |bot| find(bot).is_some());
    let item = find(&daemon.bot).unwrap();
    assert_eq!(item.buttons()[0].text, "Off");
    let off = item.buttons()[0].callback_data.clone().unwrap();
    assert!(daemon
        .bot
        .tamper_text(OWNER, item.message_id, "Post to X (external): on.",));
    let journal_before = daemon.journal_events().len();
    daemon
        .bot
        .press_button(&owner(), private(), item.message_id, &off)
        .unwrap();
    daemon.settle();
    let deadline = Instant::now() + Duration::from_secs(10);
    let outcome = loop {
        let found = daemon
            .journal_events()
            .into_iter()
            .skip(journal_before)
            .find(|e| e["ev"] == "category_off" || e["ev"] == "press_rejected");
        if let Some(event) = found {
            break event;
        }
        assert!(Instant::now() < deadline, "no verdict");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        outcome["ev"], "category_off",
        "the owner's Off on an altered message did not count: {outcome}"
    );
}

/// With the sender stalled in a send (teloxide sleeps 10 s on a 5xx), a Yes pressed with a
/// second of the card left is judged on the clocks as they are when it is judged, and its claim
/// in the same run does not judge the window again: the owner's timely yes runs.
#[test]
fn a_yes_in_time_while_the_sender_is_slow_runs() {
    let daemon = Daemon::builder().card_ttl("60s").start();
    let (id, card) = ask_card(&daemon, &good_ask("pressed with a second left"));
    // 59 s later on both clocks: one second of the card is left.
    let (wall, mono) = daemon.clocks();
    daemon.set_clocks(wall + 59, mono + 59);
    // A reply to the owner whose send stalls: the sender holds the Drawing lock meanwhile.
    daemon.bot.script(
        "sendMessage",
        consentd_emulator::Scripted::server_error(502),
    );
    let sends = daemon.bot.calls_to("sendMessage").len();
    daemon.bot.push_text(&owner(), private(), "/help");
    daemon.wait_for("the stalled send", |bot| {
        bot.calls_to("sendMessage").len() > sends
    });
    daemon.tap(&card, 0);
    let before = 0;
    let verdict = verdict_after(&daemon, before);
    let deadline = Instant::now() + Duration::from_secs(30);
    let end = loop {
        let status = daemon.request(&json!({"v":1,"op":"status","id":id}));
        let state = status["status"].as_str().unwrap().to_owned();
        if state != "card_shown" && state != "granted" && state != "running" {
            break status;
        }
        assert!(Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        (verdict.as_str(), end["status"].as_str().unwrap()),
        ("granted", "executed"),
        "a Yes judged in time ended {end}"
    );
}
