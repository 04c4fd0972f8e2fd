//! A No and "No, and say why…": with the defaults a plain No reaches a waiting session at once;
//! "No, and say why…" declines too and holds the session's final line for the owner's reply to
//! the card, which becomes its `message` (over the socket, `consentd ask`, MCP and the hooks, in
//! their own modules), or for `decline_reason_wait` without one; and no stale, forged or
//! stranger's press of the new button changes anything.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::chat::bot_says;
use crate::consent::{ask_waiting, waiting};
use crate::fixture::{action_letter, stderr, stdout, Daemon, OWNER};
use crate::owner::events;

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

fn private() -> ChatSpec {
    ChatSpec::private(OWNER)
}

/// Whether the waiting session's final line came within `within`.
fn final_within(answer: &JoinHandle<Value>, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while !answer.is_finished() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// `from` writes `text` in reply to `message`; returns how many messages the chat held before.
fn reply(daemon: &Daemon, from: &UserSpec, text: &str, message: &ChatMessage) -> usize {
    let before = daemon.bot.messages(OWNER).len();
    daemon
        .bot
        .push_reply(from, private(), text, message.message_id);
    before
}

fn status(daemon: &Daemon, id: &str) -> Value {
    daemon.request(&json!({"v":1,"op":"status","id":id}))
}

/// Waits until the card of `card` lost its buttons (its edit after a press) and returns it.
fn edited(daemon: &Daemon, card: &ChatMessage) -> ChatMessage {
    daemon.wait_for("the card's edit", |bot| {
        bot.message(OWNER, card.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
    daemon.bot.message(OWNER, card.message_id).unwrap()
}

/// Presses "No, and say why…" on record `id`'s card; returns the card as edited.
pub(crate) fn decline_saying_why(daemon: &Daemon, id: &str) -> ChatMessage {
    let card = daemon.card_of(id);
    daemon.press_no_say_why(&card);
    daemon.wait_state(id, "declined");
    edited(daemon, &card)
}

/// Presses "No, and say why…" on the card showing `needle`, and replies to it with `reason`
/// once its edit asks for one.
pub(crate) fn decline_with_reason(daemon: &Daemon, needle: &str, reason: &str) {
    let card = daemon.card_of(needle);
    daemon.press_no_say_why(&card);
    let card = edited(daemon, &card);
    let before = reply(daemon, &owner(), reason, &card);
    bot_says(daemon, before, "Sent to the agent with your No.");
}

/// The labels and action letters of a card's rows of buttons.
fn rows(card: &ChatMessage) -> Vec<Vec<(String, String)>> {
    card.button_rows()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|b| {
                    let data = b.callback_data.unwrap_or_default();
                    assert!(data.len() <= 64, "callback data over 64 bytes: {data}");
                    (b.text, action_letter(&data).unwrap_or_default().to_owned())
                })
                .collect()
        })
        .collect()
}

fn row(buttons: &[(&str, &str)]) -> Vec<(String, String)> {
    buttons
        .iter()
        .map(|(label, letter)| ((*label).to_owned(), (*letter).to_owned()))
        .collect()
}

/// The time of the journal's `declined` line for record `id`.
fn declined_at(daemon: &Daemon, id: &str) -> chrono::DateTime<chrono::Utc> {
    let line = daemon.wait_for_event("declined");
    assert_eq!(line["id"], id, "{line}");
    chrono::DateTime::parse_from_rfc3339(line["ts"].as_str().unwrap())
        .unwrap()
        .to_utc()
}

#[test]
fn with_the_defaults_a_plain_no_reaches_a_waiting_session_at_once() {
    let daemon = Daemon::start();
    let (id, answer) = ask_waiting(&daemon, waiting("Post the old logo"));
    let card = daemon.card_of(&id);
    assert_eq!(
        rows(&card),
        [
            row(&[("Yes", "y"), ("No", "n")]),
            row(&[("No, and say why…", "w")])
        ],
        "Yes and No on the first row, No and say why on its own"
    );
    let clocks = daemon.clocks();
    daemon.press_no(&card);
    // No clock is moved: the default wait (60 s) would hold the line for a minute of real time.
    assert!(
        final_within(&answer, Duration::from_secs(10)),
        "the No's final line did not come at once"
    );
    // As the daemon's clock reads it (the fixture's test clock runs at an offset).
    let arrived = chrono::Utc::now() + chrono::Duration::seconds(clocks.0);
    assert_eq!(daemon.clocks(), clocks, "the test clock was not moved");
    let decided = declined_at(&daemon, &id);
    assert!(
        arrived - decided < chrono::Duration::seconds(1),
        "the final line came {} ms after the No",
        (arrived - decided).num_milliseconds()
    );
    let last = answer.join().unwrap();
    assert_eq!(last["status"], "declined", "{last}");
    assert!(last.get("message").is_none(), "{last}");

    // The card does not invite a reply, and a reply is told the No went without a reason.
    let card = edited(&daemon, &card);
    let text = card.text.as_deref().unwrap();
    assert!(!text.contains("Reply to this message"), "{text}");
    let before = reply(&daemon, &owner(), "because", &card);
    bot_says(&daemon, before, "This No reached the agent at once");
    assert!(status(&daemon, &id).get("message").is_none());
    assert!(events(&daemon, "decline_reason").is_empty());
    assert_eq!(daemon.runs(), 0);
}

#[test]
fn no_and_say_why_holds_the_final_line_for_the_owners_reply_which_is_its_message() {
    let daemon = Daemon::start();
    let (id, answer) = ask_waiting(&daemon, waiting("Post the old logo"));
    let card = decline_saying_why(&daemon, &id);
    let text = card.text.clone().unwrap();
    assert!(
        text.contains("Reply to this message by"),
        "the declined card asks for a reply:\n{text}"
    );
    // Declined at once, as a No: the record, the decline memory; the final line waits.
    assert_eq!(status(&daemon, &id)["status"], "declined");
    assert_eq!(
        daemon.request(&waiting("Post the old logo"))["reason"],
        "declined_recently"
    );
    assert!(!final_within(&answer, Duration::from_millis(500)));

    // A hidden character is sent back, and nothing is kept.
    let before = reply(&daemon, &owner(), "Use\u{200B} the new one", &card);
    bot_says(&daemon, before, "U+200B ZERO WIDTH SPACE at character 4");
    assert!(!final_within(&answer, Duration::from_millis(300)));

    let reason = "Use the new logo instead, and post after 18:00";
    let before = reply(&daemon, &owner(), reason, &card);
    bot_says(&daemon, before, "Sent to the agent with your No.");
    assert!(final_within(&answer, Duration::from_secs(10)));
    let last = answer.join().unwrap();
    assert_eq!(last["status"], "declined", "{last}");
    assert_eq!(last["message"], reason, "{last}");
    let record = status(&daemon, &id);
    assert_eq!(record["message"], reason, "{record}");
    assert_eq!(record["final"], true, "{record}");

    // Journaled by its hash alone; never in the journal or the log in clear.
    let kept = events(&daemon, "decline_reason");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["id"], id.as_str());
    let hash = consentd_core::digest::Sha256Hash::of(reason.as_bytes()).to_hex();
    assert_eq!(kept[0]["sha256"], hash);
    assert_eq!(kept[0]["by"], OWNER);
    let journal = daemon.journal_text();
    assert!(!journal.contains("new logo"));
    assert!(!daemon.log().contains("new logo"));

    // One reason per No.
    let before = reply(&daemon, &owner(), "And another thing", &card);
    bot_says(&daemon, before, "The agent already has your reason");
    assert_eq!(status(&daemon, &id)["message"], reason);
    assert_eq!(events(&daemon, "decline_reason").len(), 1);
}

#[test]
fn no_and_say_why_without_a_reply_ends_at_the_wait_without_a_message() {
    let daemon = Daemon::builder().decline_reason_wait("30s").start();
    let (id, answer) = ask_waiting(&daemon, waiting("Post it"));
    let card = decline_saying_why(&daemon, &id);

    // A reply to a message that is no card is a stray message.
    let before = daemon.bot.messages(OWNER).len();
    daemon
        .bot
        .push_text(&owner(), private(), "a note to myself");
    let note = daemon
        .bot
        .messages(OWNER)
        .into_iter()
        .skip(before)
        .find(|m| !m.outgoing)
        .unwrap();
    bot_says(&daemon, before, "Send /help for the list.");
    let before = reply(&daemon, &owner(), "not for the card", &note);
    bot_says(&daemon, before, "Send /help for the list.");

    // Someone else's reply to the card changes nothing.
    reply(&daemon, &stranger(), "from a stranger", &card);
    daemon.settle();
    assert!(status(&daemon, &id).get("message").is_none());
    assert!(!final_within(&answer, Duration::from_millis(300)));

    // Just before the wait ends the line still waits; at its end it goes without a message.
    daemon.advance_clock(28);
    daemon.settle();
    assert!(!final_within(&answer, Duration::from_millis(300)));
    daemon.advance_clock(3);
    assert!(final_within(&answer, Duration::from_secs(10)));
    let last = answer.join().unwrap();
    assert_eq!(last["status"], "declined", "{last}");
    assert!(last.get("message").is_none(), "{last}");
    let before = reply(&daemon, &owner(), "too late now", &card);
    bot_says(&daemon, before, "Too late for this card");
    assert!(status(&daemon, &id).get("message").is_none());
    assert!(events(&daemon, "decline_reason").is_empty());
}

#[test]
fn with_the_wait_off_no_card_offers_no_and_say_why() {
    let daemon = Daemon::builder().decline_reason_wait("0s").start();
    let (id, answer) = ask_waiting(&daemon, waiting("Post it now"));
    let card = daemon.card_of(&id);
    assert_eq!(rows(&card), [row(&[("Yes", "y"), ("No", "n")])]);
    daemon.press_no(&card);
    assert!(final_within(&answer, Duration::from_secs(10)));
    assert_eq!(answer.join().unwrap()["status"], "declined");
    let card = edited(&daemon, &card);
    assert!(!card.text.as_deref().unwrap().contains("Reply to this"));
    assert!(events(&daemon, "decline_reason").is_empty());
}

#[test]
fn a_mandate_card_offers_decline_and_say_why_and_its_reason_reaches_the_session() {
    let daemon = Daemon::start();
    let mut request = crate::mandates::mandate_request(&["@mila_news"], 1, "1.00", 3);
    request["wait"] = json!(true);
    let (id, answer) = ask_waiting(&daemon, request);
    let card = daemon.card_of(&id);
    assert_eq!(
        rows(&card),
        [
            row(&[("Grant", "g"), ("Decline", "d")]),
            row(&[("Decline, and say why…", "w")])
        ]
    );
    let card = decline_saying_why(&daemon, &id);
    assert!(!final_within(&answer, Duration::from_millis(300)));
    let before = reply(&daemon, &owner(), "One post a day is enough", &card);
    bot_says(&daemon, before, "Sent to the agent with your No.");
    assert!(final_within(&answer, Duration::from_secs(10)));
    let last = answer.join().unwrap();
    assert_eq!(last["status"], "declined", "{last}");
    assert_eq!(last["message"], "One post a day is enough", "{last}");
}

#[test]
fn consentd_ask_prints_the_reason_as_the_final_lines_message() {
    let daemon = Daemon::start();
    let child = daemon.cli_spawn(&[
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        "From the command line",
        "--field",
        "reply_to=https://example.org/1",
        "--cost-usd",
        "0.04",
        "--json",
    ]);
    decline_with_reason(&daemon, "From the command line", "Not from the CLI, please");
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let out = stdout(&output);
    let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "declined", "{last}");
    assert_eq!(last["message"], "Not from the CLI, please", "{last}");
}

/// Replaces the 16-byte tag of callback data by `edit`'s bytes.
fn with_tag(data: &str, edit: impl FnOnce(&mut Vec<u8>)) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (head, tag) = data.rsplit_once('.').unwrap();
    let mut bytes = engine.decode(tag).unwrap();
    edit(&mut bytes);
    format!("{head}.{}", engine.encode(bytes))
}

/// The "No, and say why…" data of a card.
fn say_why_data(card: &ChatMessage) -> String {
    let index = crate::fixture::say_why_index(card);
    card.buttons()[index].callback_data.clone().unwrap()
}

/// Runs `push` (a press of the new button that must not count) and checks it left nothing
/// behind: record `id` still `state`, no `declined` line, and — for a press from the owner's
/// account — one `press_rejected` line with one of the reasons `rejected` (empty for a
/// stranger's press, whose lines are counted per window: `lanes_strangers.rs`).
fn changes_nothing(
    daemon: &Daemon,
    (id, state): (&str, &str),
    case: &str,
    rejected: &[&str],
    push: impl FnOnce(),
) {
    let rejections = events(daemon, "press_rejected").len();
    let declines = events(daemon, "declined").len();
    push();
    daemon.settle();
    let record = status(daemon, id);
    assert_eq!(
        record["status"], state,
        "{case}: the record changed: {record}"
    );
    assert!(record.get("message").is_none(), "{case}: {record}");
    let declined = events(daemon, "declined").len();
    assert_eq!(declined, declines, "{case}: a declined line");
    if !rejected.is_empty() {
        let lines = events(daemon, "press_rejected");
        assert_eq!(lines.len(), rejections + 1, "{case}: journaled once");
        let reason = lines[rejections]["reason"].as_str().unwrap_or_default();
        assert!(
            rejected.contains(&reason),
            "{case}: {reason}, not one of {rejected:?}"
        );
    }
}

#[test]
fn stale_forged_and_strangers_presses_of_no_and_say_why_change_nothing() {
    let daemon = Daemon::start();
    let (a, answer_a) = ask_waiting(&daemon, waiting("record A"));
    let (b, _answer_b) = ask_waiting(&daemon, waiting("record B"));
    let card_a = daemon.card_of(&a);
    let card_b = daemon.card_of(&b);
    let why_a = say_why_data(&card_a);
    let why_b = say_why_data(&card_b);
    let no_a = card_a.buttons()[1].callback_data.clone().unwrap();
    let press = |from: UserSpec, chat: ChatSpec, data: String| {
        let (daemon, message) = (&daemon, card_a.message_id);
        move || {
            daemon.bot.push_press(&from, chat, message, &data);
        }
    };
    let open = (a.as_str(), "card_shown");
    let bad_tag = with_tag(&why_a, |t| t[3] ^= 0x01);
    let case = press(owner(), private(), bad_tag);
    changes_nothing(&daemon, open, "a bad tag", &["bad_tag"], case);
    let short_tag = with_tag(&why_a, |t| {
        t.pop();
    });
    let case = press(owner(), private(), short_tag);
    changes_nothing(&daemon, open, "a short tag", &["malformed"], case);
    let others = why_b.replace(&b, &a);
    let case = press(owner(), private(), others);
    changes_nothing(&daemon, open, "another record's tag", &["bad_tag"], case);
    let parts: Vec<&str> = no_a.split('.').collect();
    let relabelled = format!("{}.{}.w.{}.{}", parts[0], parts[1], parts[3], parts[4]);
    let case = press(owner(), private(), relabelled);
    changes_nothing(&daemon, open, "a No relabelled", &["bad_tag"], case);
    let case = press(stranger(), ChatSpec::private(777), why_a.clone());
    changes_nothing(&daemon, open, "another user", &[], case);
    let case = press(stranger(), private(), why_a.clone());
    changes_nothing(&daemon, open, "another user in the owner's chat", &[], case);
    let case = press(owner(), ChatSpec::group(-100_123), why_a.clone());
    changes_nothing(&daemon, open, "another chat", &["not_private_chat"], case);
    assert!(
        !final_within(&answer_a, Duration::from_millis(200)),
        "the session was answered"
    );
    assert_eq!(daemon.runs(), 0);

    // Stale: after the owner's Yes, and after the card expired.
    daemon.press_yes(&card_a);
    daemon.wait_state(&a, "executed");
    let done = (a.as_str(), "executed");
    // Stale either way: the record is no longer open, and once the edit that takes the card's
    // buttons away is done, the message is no longer a card either (checked first).
    let stale = &["not_open", "wrong_message"];
    let case = press(owner(), private(), why_a.clone());
    changes_nothing(&daemon, done, "after the Yes", stale, case);
    assert_eq!(answer_a.join().unwrap()["status"], "executed");
    daemon.advance_clock(16 * 60);
    daemon.wait_state(&b, "expired");
    let expired = (b.as_str(), "expired");
    let case = || {
        daemon
            .bot
            .push_press(&owner(), private(), card_b.message_id, &why_b);
    };
    changes_nothing(&daemon, expired, "after it expired", stale, case);
    assert_eq!(daemon.runs(), 1);
}
