//! The owner's chat (a No and its reason are in say_why.rs): a reply that never answers a
//! card, the settings as they are, one line for a stray message, stale buttons told apart and taken away,
//! and the category's labels for the fields on a card.

use std::time::{Duration, Instant};

use consentd_emulator::{ChatMessage, ChatSpec, Scripted, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{good_ask, Daemon, OWNER};
use crate::mandates::{ask, ask_to, button, grant, receipt_of};
use crate::owner::{events, say};

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

fn private() -> ChatSpec {
    ChatSpec::private(OWNER)
}

/// Waits for a message from the bot after the first `before` messages whose text has `expected`.
pub(crate) fn bot_says(daemon: &Daemon, before: usize, expected: &str) -> ChatMessage {
    let find = |messages: Vec<ChatMessage>| {
        messages
            .into_iter()
            .skip(before)
            .find(|m| m.outgoing && m.text.as_deref().is_some_and(|t| t.contains(expected)))
    };
    daemon.wait_for(&format!("a message saying {expected:?}"), |bot| {
        find(bot.messages(OWNER)).is_some()
    });
    find(daemon.bot.messages(OWNER)).unwrap()
}

/// The owner writes `text` in reply to `message`; returns how many messages the chat held before.
fn reply(daemon: &Daemon, from: &UserSpec, text: &str, message: &ChatMessage) -> usize {
    let before = daemon.bot.messages(OWNER).len();
    daemon
        .bot
        .push_reply(from, private(), text, message.message_id);
    before
}

/// Presses No on record `id`'s card and waits for the card's edit to say it was declined.
fn decline(daemon: &Daemon, id: &str) -> ChatMessage {
    let card = daemon.card_of(id);
    daemon.press_no(&card);
    daemon.wait_state(id, "declined");
    daemon.wait_for("the declined card's edit", |bot| {
        bot.message(OWNER, card.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
    daemon.bot.message(OWNER, card.message_id).unwrap()
}

/// A good ask, not waited on; its record's id.
fn ask_id(daemon: &Daemon, text: &str) -> String {
    daemon.request(&good_ask(text))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn status(daemon: &Daemon, id: &str) -> Value {
    daemon.request(&json!({"v":1,"op":"status","id":id}))
}

#[test]
fn a_reply_to_an_open_card_never_answers_it() {
    let daemon = Daemon::builder().decline_reason_wait("60s").start();
    let id = ask_id(&daemon, "still open");
    let card = daemon.card_of(&id);
    let before = reply(&daemon, &owner(), "yes", &card);
    bot_says(&daemon, before, "A message never answers a card");
    assert_eq!(status(&daemon, &id)["status"], "card_shown");
    assert_eq!(daemon.runs(), 0);
}

/// Telegram has a card (the owner sees it) a moment before the daemon hears its message id back.
/// What the owner does with the card in that moment is judged as it would be a moment later:
/// the reply is told it answers nothing, the press answers the card. Each case its own daemon,
/// whose card's `sendMessage` is answered a second late.
#[test]
fn what_the_owner_does_with_a_card_whose_send_is_still_answered_counts_as_after() {
    type Act = fn(&Daemon, &str, &ChatMessage);
    let cases: [(&str, Act); 2] = [
        ("a reply to it", |daemon, id, card| {
            let before = reply(daemon, &owner(), "yes", card);
            bot_says(daemon, before, "A message never answers a card");
            assert_eq!(status(daemon, id)["status"], "card_shown");
        }),
        ("a Yes on it", |daemon, id, card| {
            daemon.press_yes(card);
            daemon.wait_state(id, "executed");
        }),
    ];
    for (case, act) in cases {
        let daemon = Daemon::builder().start();
        daemon
            .bot
            .script("sendMessage", Scripted::AnswerLate(Duration::from_secs(1)));
        let id = ask_id(&daemon, case);
        let card = daemon.card_of(&id);
        act(&daemon, &id, &card);
        let runs = if case == "a Yes on it" { 1 } else { 0 };
        assert_eq!(daemon.runs(), runs, "{case}");
        assert!(
            events(&daemon, "press_rejected").is_empty(),
            "{case}: {:?}",
            events(&daemon, "press_rejected")
        );
    }
}

/// A line redrawn with a new button (the `/categories` switch) is in the chat before Telegram's
/// answer to the edit reaches the daemon. The owner's press on the new button in that moment
/// counts, as it would a moment later: the daemon waits for the edit to be recorded.
#[test]
fn a_press_on_a_redrawn_button_whose_edit_is_still_answered_counts() {
    let daemon = Daemon::start();
    let line = say(&daemon, "/categories", "Post to X (external): on");
    daemon.bot.script(
        "editMessageText",
        Scripted::AnswerLate(Duration::from_secs(1)),
    );
    let off = line.buttons()[0].callback_data.clone().unwrap();
    daemon
        .bot
        .push_press(&owner(), private(), line.message_id, &off);
    daemon.wait_for("the line redrawn with On", |bot| {
        bot.message(OWNER, line.message_id)
            .is_some_and(|m| m.buttons().first().is_some_and(|b| b.text == "On"))
    });
    let redrawn = daemon.bot.message(OWNER, line.message_id).unwrap();
    let on = redrawn.buttons()[0].callback_data.clone().unwrap();
    daemon
        .bot
        .push_press(&owner(), private(), line.message_id, &on);
    daemon.wait_for("the switch back on", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.text.as_deref() == Some("“Post to X” is now on."))
    });
    assert!(
        events(&daemon, "press_rejected").is_empty(),
        "{:?}",
        events(&daemon, "press_rejected")
    );
    assert_eq!(events(&daemon, "category_on").len(), 1);
}

#[test]
fn quiet_and_nightcards_alone_show_the_setting_and_a_stray_message_gets_one_line() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 2")
        .start();
    let cases = [
        ("/quiet", "Quiet hours: 23:00–08:00. To change them"),
        (
            "/nightcards",
            "At most 2 cards come during quiet hours. To change it: /nightcards N, with N from 0 to 2",
        ),
        ("/quiet off", "Quiet hours are off."),
        ("/quiet", "Quiet hours are off. To set them"),
        ("/nightcards 0", "No card comes during quiet hours"),
        ("/nightcards", "No card comes during quiet hours. To change it"),
    ];
    for (text, expected) in cases {
        say(&daemon, text, expected);
    }
    for stray in ["/stop", "hello there"] {
        let line = say(&daemon, stray, "Send /help for the list.");
        assert!(
            !line.text.unwrap().contains("/pending"),
            "one line, not the help"
        );
    }
    // Showing a setting changes nothing.
    let keys: Vec<Value> = events(&daemon, "settings")
        .into_iter()
        .map(|e| e["key"].clone())
        .collect();
    assert_eq!(keys, [json!("quiet_hours"), json!("night_card_limit")]);
}

/// The answers to presses after the first `before`.
fn toasts_after(daemon: &Daemon, before: usize) -> Vec<Option<String>> {
    daemon
        .bot
        .callback_answers()
        .into_iter()
        .skip(before)
        .map(|a| a.text)
        .collect()
}

fn wait_toast(daemon: &Daemon, before: usize, expected: &str) {
    daemon.wait_for(&format!("the toast {expected:?}"), |bot| {
        bot.callback_answers()
            .iter()
            .skip(before)
            .any(|a| a.text.as_deref() == Some(expected))
    });
}

#[test]
fn a_stopped_mandates_stop_says_so_and_its_buttons_go() {
    let daemon = Daemon::start();
    let mandate = grant(&daemon, &["@mila_news"], 3, "2.00", 4);
    let (id, _) = ask(&daemon, &ask_to("@mila_news", "covered", "0.50"));
    daemon.wait_state(&id, "executed");
    let receipt = receipt_of(&daemon, &id);
    let listed = say(&daemon, "/mandates", &mandate);
    let stop = button(&listed, 0);
    assert_eq!(button(&receipt, 0), stop, "one Stop, drawn twice");

    // The edits that take the Stops away are slow: a press on one still shown is stale.
    daemon.bot.script(
        "editMessageReplyMarkup",
        Scripted::Delay(Duration::from_secs(3)),
    );
    daemon.tap(&listed, 0);
    daemon.wait_for_event("mandate_stop");
    let answers = daemon.bot.callback_answers().len();
    daemon.tap(&receipt, 0);
    wait_toast(
        &daemon,
        answers,
        "This standing permission was already stopped.",
    );
    let rejected = daemon.wait_for_event("press_rejected");
    assert_eq!(rejected["reason"], "not_open");
    assert_eq!(events(&daemon, "mandate_stop").len(), 1);

    for message in [&listed, &receipt] {
        daemon.wait_for("the Stop taken away", |bot| {
            bot.message(OWNER, message.message_id)
                .is_some_and(|m| m.buttons().is_empty())
        });
        let now = daemon.bot.message(OWNER, message.message_id).unwrap();
        assert_eq!(now.text, message.text, "only the button goes");
    }
    // A forged press with the old data finds no button drawn there.
    let answers = daemon.bot.callback_answers().len();
    daemon
        .bot
        .push_press(&owner(), private(), receipt.message_id, &stop);
    daemon.settle();
    assert_eq!(
        toasts_after(&daemon, answers),
        [Some("Not accepted.".to_owned())]
    );
}

#[test]
fn a_mandate_whose_term_ends_loses_its_stop() {
    let daemon = Daemon::start();
    let mandate = grant(&daemon, &["@mila_news"], 1, "2.00", 4);
    let listed = say(&daemon, "/mandates", &mandate);
    daemon.advance_clock(2 * 24 * 3600);
    daemon.wait_for_event("mandate_end");
    daemon.wait_for("the Stop taken away", |bot| {
        bot.message(OWNER, listed.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
}

/// The owner's messages with a Resume button.
fn resume_notices(daemon: &Daemon) -> Vec<ChatMessage> {
    daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.buttons().iter().any(|b| b.text == "Resume"))
        .collect()
}

#[test]
fn a_used_resume_says_so_and_goes_and_a_yes_takes_it_away_too() {
    let daemon = Daemon::builder().decline_streak(1).start();
    let first = ask_id(&daemon, "first");
    decline(&daemon, &first);
    daemon.wait_for("the silence notice", |_| resume_notices(&daemon).len() == 1);
    let notice = resume_notices(&daemon).remove(0);
    let resume = button(&notice, 0);
    daemon.bot.script(
        "editMessageReplyMarkup",
        Scripted::Delay(Duration::from_secs(3)),
    );
    daemon.tap(&notice, 0);
    daemon.wait_for_event("resumed");
    let answers = daemon.bot.callback_answers().len();
    daemon
        .bot
        .push_press(&owner(), private(), notice.message_id, &resume);
    wait_toast(&daemon, answers, "These cards were already resumed.");
    daemon.wait_for("the Resume taken away", |_| {
        resume_notices(&daemon).is_empty()
    });

    // A silence lifted by a yes to a card of the kind: its Resume goes too.
    let open = ask_id(&daemon, "asked before the silence");
    let open_card = daemon.card_of(&open);
    let second = ask_id(&daemon, "second");
    decline(&daemon, &second);
    daemon.wait_for("the second notice", |_| resume_notices(&daemon).len() == 1);
    daemon.press_yes(&open_card);
    daemon.wait_state(&open, "executed");
    daemon.wait_for("the Resume taken away", |_| {
        resume_notices(&daemon).is_empty()
    });
}

#[test]
fn an_answered_card_and_a_switch_already_set_say_so_to_the_owner_only() {
    let daemon = Daemon::start();
    let id = ask_id(&daemon, "answer me once");
    let card = daemon.card_of(&id);
    // The card's edit is slow: its Yes is still there after the No.
    daemon
        .bot
        .script("editMessageText", Scripted::Delay(Duration::from_secs(3)));
    daemon.press_no(&card);
    daemon.wait_state(&id, "declined");
    let answers = daemon.bot.callback_answers().len();
    daemon.press_yes(&card);
    wait_toast(&daemon, answers, "This card was already answered.");
    // Someone else pressing it hears nothing more.
    let answers = daemon.bot.callback_answers().len();
    let yes = button(&card, 0);
    daemon
        .bot
        .push_press(&stranger(), private(), card.message_id, &yes);
    wait_toast(&daemon, answers, "Not accepted.");
    assert_eq!(daemon.runs(), 0);
    assert_eq!(status(&daemon, &id)["status"], "declined");

    // Two /categories lists: Off on one redraws it; Off on the other is already done.
    let first = say(&daemon, "/categories", "Post to X (external): on");
    let second = say(&daemon, "/categories", "Post to X (external): on");
    daemon.tap(&first, 0);
    daemon.wait_for("the first list redrawn", |bot| {
        bot.message(OWNER, first.message_id).is_some_and(|m| {
            m.text.as_deref() == Some("Post to X (external): off")
                && m.buttons().first().is_some_and(|b| b.text == "On")
        })
    });
    let answers = daemon.bot.callback_answers().len();
    daemon.tap(&second, 0);
    wait_toast(&daemon, answers, "“Post to X” is already off.");
    assert_eq!(events(&daemon, "category_off").len(), 1);
    // The redrawn line's On works.
    let redrawn = daemon.bot.message(OWNER, first.message_id).unwrap();
    daemon.tap(&redrawn, 0);
    daemon.wait_for_event("category_on");
    let answer = daemon.ask_once_on(&good_ask("on again"));
    assert_eq!(answer["status"], "pending", "{answer}");
}

#[test]
fn a_card_names_its_fields_by_the_categorys_labels() {
    let daemon = Daemon::start();
    let fields = json!({"to": "ana@example.org", "subject": "Lunch"});
    let answer = daemon
        .request(&json!({"v":1,"op":"ask","kind":"send_letter","fields":fields,"wait":false}));
    let id = answer["id"].as_str().unwrap().to_owned();
    let text = daemon.card_of(&id).text.unwrap();
    assert!(text.contains("Subject: Lunch"), "{text}");
    assert!(text.contains("to: ana@example.org"), "{text}");
    assert!(!text.contains("subject:"), "{text}");
}

/// A stranger's press (on a message the daemon never drew, as on a forwarded card, or with
/// forged callback data on the owner's card) must not hold the owner's presses back. The wait
/// for a send in flight (`message_facts`) is for the owner, whose press may be on a card
/// Telegram has and the daemon has not recorded yet; a stranger's press is rejected whatever is
/// recorded. Each case: card A is open, card B's send is answered nine seconds late (the Drawing
/// lock held meanwhile), a stranger presses twice, then the owner's Yes on A must start its run
/// at once, not after the stranger's presses have each waited their three seconds.
#[test]
fn a_strangers_presses_do_not_hold_back_the_owners_press_while_a_card_is_sent() {
    type Aim = fn(&ChatMessage) -> (ChatSpec, i64, String);
    let cases: [(&str, Aim); 2] = [
        ("a press on a message the daemon never drew", |card| {
            let yes = card.buttons()[0].callback_data.clone().unwrap();
            (ChatSpec::private(777), 999_999, yes)
        }),
        ("forged data on the owner's card", |card| {
            (private(), card.message_id, "y:forged".to_owned())
        }),
    ];
    for (case, aim) in cases {
        let daemon = Daemon::start();
        let a = ask_id(&daemon, "the owner's card");
        let card_a = daemon.card_of(&a);
        daemon
            .bot
            .script("sendMessage", Scripted::AnswerLate(Duration::from_secs(9)));
        let b = ask_id(&daemon, "the card in flight");
        daemon.card_of(&b);
        let (chat, message_id, data) = aim(&card_a);
        for _ in 0..2 {
            daemon.bot.push_press(&stranger(), chat, message_id, &data);
        }
        let pressed = Instant::now();
        daemon.press_yes(&card_a);
        daemon.wait_state(&a, "executed");
        let took = pressed.elapsed();
        // Behind the two presses' waits it would take six seconds or more; a loaded machine's
        // run of the command takes well under five.
        assert!(
            took < Duration::from_secs(5),
            "{case}: the owner's Yes ran only after {took:?}, behind the stranger's presses"
        );
    }
}
