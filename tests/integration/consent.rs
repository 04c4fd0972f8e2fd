//! The consent loop end to end: the real daemon and socket, a Bot API emulator as Telegram.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;
use consentd_core::press::{PressAction, PressKey};
use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use consentd_store::inspect::Inspect;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, stdout, Daemon, OWNER};

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

/// Sends a waiting ask; returns its id and a thread that yields the final answer.
pub(crate) fn ask_waiting(daemon: &Daemon, request: Value) -> (String, JoinHandle<Value>) {
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    let mut frame = serde_json::to_vec(&request).unwrap();
    frame.push(b'\n');
    stream.write_all(&frame).unwrap();
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let first: Value = serde_json::from_str(&first).unwrap();
    assert!(
        matches!(first["status"].as_str(), Some("pending" | "card_shown")),
        "the ask was not stored: {first}"
    );
    let id = first["id"].as_str().unwrap().to_owned();
    let rest = std::thread::spawn(move || {
        let mut last = String::new();
        for line in reader.lines() {
            last = line.unwrap();
        }
        serde_json::from_str(&last).unwrap_or(Value::Null)
    });
    (id, rest)
}

pub(crate) fn waiting(text: &str) -> Value {
    let mut ask = good_ask(text);
    ask["wait"] = json!(true);
    ask
}

/// The callback data of the card's button labelled like `label` (Yes is first, No second).
fn data(card: &ChatMessage, index: usize) -> String {
    card.buttons()[index].callback_data.clone().unwrap()
}

fn press(daemon: &Daemon, from: &UserSpec, chat: ChatSpec, card: &ChatMessage, data: &str) {
    daemon.bot.push_press(from, chat, card.message_id, data);
}

fn status(daemon: &Daemon, id: &str) -> String {
    daemon.request(&json!({"v":1,"op":"status","id":id}))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The digest the journal's `asked` line gives record `id`.
fn digest_of(daemon: &Daemon, id: &str) -> String {
    daemon
        .journal_events()
        .into_iter()
        .find(|e| e["ev"] == "asked" && e["id"] == id)
        .and_then(|e| e["digest"].as_str().map(str::to_owned))
        .unwrap()
}

fn with_tag(data: &str, edit: impl FnOnce(&mut Vec<u8>)) -> String {
    let (head, tag) = data.rsplit_once('.').unwrap();
    let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(tag)
        .unwrap();
    edit(&mut bytes);
    format!(
        "{head}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

fn relabel(data: &str, from: &str, to: &str) -> String {
    let parts: Vec<&str> = data.split('.').collect();
    assert_eq!(parts[2], from, "{data}");
    format!("{}.{}.{to}.{}.{}", parts[0], parts[1], parts[3], parts[4])
}

#[test]
fn the_whole_loop_runs_the_action_once_after_the_owners_yes() {
    let mut daemon = Daemon::start();
    let (id, answer) = ask_waiting(&daemon, waiting("Hello, world"));
    let card = daemon.card_of(&id);
    let text = card.text.clone().unwrap();
    for shown in [
        "Post to X",
        "@mila_news",
        "Hello, world",
        "reply_to: https://example.org/1",
        "0.04",
        &id,
    ] {
        assert!(text.contains(shown), "the card lacks {shown:?}:\n{text}");
    }
    let labels: Vec<String> = card.buttons().iter().map(|b| b.text.clone()).collect();
    assert_eq!(labels, ["Yes", "No", "No, and say why…"]);
    assert_eq!(daemon.runs(), 0, "nothing runs before the press");

    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &data(&card, 0),
    );
    let answer = answer.join().unwrap();
    assert_eq!(answer["status"], "executed", "{answer}");
    assert!(answer["result"]
        .as_str()
        .unwrap()
        .starts_with("https://example.org/posted/"));
    assert_eq!(daemon.runs(), 1);

    let stdin: Value = serde_json::from_str(
        std::fs::read_to_string(daemon.dir.path().join("stdin.log"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(stdin["id"], id.as_str());
    assert_eq!(stdin["text"], "Hello, world");
    assert_eq!(stdin["fields"]["reply_to"], "https://example.org/1");

    daemon.wait_for("the card to show the outcome", |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty()
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains("Outcome: done. Decided by Mila."))
        })
    });
    assert!(
        !daemon.bot.callback_answers().is_empty(),
        "the press was answered"
    );
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let events: Vec<String> = daemon
        .journal_events()
        .iter()
        .filter(|e| e["id"] == id.as_str())
        .map(|e| e["ev"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        events,
        ["asked", "card_shown", "granted", "used", "executed"]
    );
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
}

#[test]
fn nothing_but_the_owners_signed_press_answers_a_card() {
    let daemon = Daemon::start();
    let (a, _a_answer) = ask_waiting(&daemon, waiting("record A"));
    let (b, _b_answer) = ask_waiting(&daemon, waiting("record B"));
    let card_a = daemon.card_of(&a);
    let card_b = daemon.card_of(&b);
    let yes_a = data(&card_a, 0);
    let no_a = data(&card_a, 1);
    let yes_b = data(&card_b, 0);
    let digest_a = digest_of(&daemon, &a);
    let stale = PressKey::generate()
        .unwrap()
        .sign(PressAction::Yes, &a, &digest_a, OWNER);

    type Case<'a> = (&'a str, Box<dyn Fn(&Daemon) + 'a>);
    let private = ChatSpec::private(OWNER);
    let cases: Vec<Case> = vec![
        (
            "a timer",
            Box::new(|d: &Daemon| {
                d.advance_clock(14 * 60);
                // Two sweeps of the daemon's one-second timer, within the 15 minute ttl.
                std::thread::sleep(Duration::from_millis(2200));
                d.advance_clock(-14 * 60);
            }),
        ),
        (
            "the text \"yes\"",
            Box::new(|d: &Daemon| {
                d.bot.push_text(&owner(), private, "yes");
            }),
        ),
        (
            "another user's press with valid data",
            Box::new(|d: &Daemon| {
                press(d, &stranger(), ChatSpec::private(777), &card_a, &yes_a);
            }),
        ),
        (
            "the owner's press from a group chat",
            Box::new(|d: &Daemon| {
                press(d, &owner(), ChatSpec::group(-100_123), &card_a, &yes_a);
            }),
        ),
        (
            "a tag with one bit flipped",
            Box::new(|d: &Daemon| {
                press(
                    d,
                    &owner(),
                    private,
                    &card_a,
                    &with_tag(&yes_a, |t| t[7] ^= 0x10),
                );
            }),
        ),
        (
            "a 15-byte tag",
            Box::new(|d: &Daemon| {
                press(
                    d,
                    &owner(),
                    private,
                    &card_a,
                    &with_tag(&yes_a, |t| {
                        t.pop();
                    }),
                );
            }),
        ),
        (
            "a 17-byte tag",
            Box::new(|d: &Daemon| {
                press(
                    d,
                    &owner(),
                    private,
                    &card_a,
                    &with_tag(&yes_a, |t| t.push(0)),
                );
            }),
        ),
        (
            "a tag for another record",
            Box::new(|d: &Daemon| {
                press(d, &owner(), private, &card_a, &yes_b.replace(&b, &a));
            }),
        ),
        (
            "a yes tag relabelled no",
            Box::new(|d: &Daemon| {
                press(d, &owner(), private, &card_a, &relabel(&yes_a, "y", "n"));
            }),
        ),
        (
            "a no tag relabelled yes",
            Box::new(|d: &Daemon| {
                press(d, &owner(), private, &card_a, &relabel(&no_a, "n", "y"));
            }),
        ),
        (
            "a stale key id",
            Box::new(|d: &Daemon| {
                press(d, &owner(), private, &card_a, &stale);
            }),
        ),
        (
            "an edited message",
            Box::new(|d: &Daemon| {
                let sent = d.bot.push_text(&owner(), private, "maybe");
                let _ = sent;
                let mine = d
                    .bot
                    .messages(OWNER)
                    .into_iter()
                    .rfind(|m| !m.outgoing)
                    .unwrap();
                let update = d
                    .bot
                    .edited_message_update(&owner(), private, mine.message_id, "yes");
                d.bot.push_update(update);
            }),
        ),
        (
            "a forwarded card",
            Box::new(|d: &Daemon| {
                let bot = UserSpec::new(d.bot.bot_id(), "consentd");
                let update = d.bot.forwarded_message_update(
                    &owner(),
                    private,
                    card_a.text.as_deref().unwrap(),
                    &bot,
                );
                d.bot.push_update(update);
            }),
        ),
    ];
    for (name, case) in cases {
        case(&daemon);
        daemon.settle();
        assert_eq!(
            status(&daemon, &a),
            "card_shown",
            "{name} answered the card"
        );
        assert_eq!(daemon.runs(), 0, "{name} ran the action");
    }
    let rejected = daemon
        .journal_events()
        .iter()
        .filter(|e| e["ev"] == "press_rejected")
        .count();
    assert_eq!(rejected, 9, "each forged press is journaled");
    assert!(
        daemon
            .owner_chat()
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains("Eve"))),
        "the owner hears of a stranger's press"
    );
    // Every refusal answers "Not accepted." but the owner's own press of a button signed under
    // another key, which is told it is from before an upgrade or a key change (and does nothing).
    let answers = daemon.bot.callback_answers();
    let said = |text: &str| {
        answers
            .iter()
            .filter(|a| a.text.as_deref().is_some_and(|t| t.starts_with(text)))
            .count()
    };
    assert!(said("Not accepted.") >= 8, "{answers:?}");
    assert_eq!(
        said("This button was drawn before consentd was upgraded"),
        1,
        "{answers:?}"
    );

    // A replay after the yes, and 100 concurrent presses of one button.
    let card_b = daemon.card_of(&b);
    press(&daemon, &owner(), private, &card_b, &yes_b);
    daemon.wait_state(&b, "executed");
    press(&daemon, &owner(), private, &card_b, &yes_b);
    daemon.settle();
    assert_eq!(daemon.runs(), 1, "a replay after the yes ran it again");

    let (c, _c_answer) = ask_waiting(&daemon, waiting("record C"));
    let card_c = daemon.card_of(&c);
    let yes_c = data(&card_c, 0);
    for _ in 0..100 {
        press(&daemon, &owner(), private, &card_c, &yes_c);
    }
    daemon.wait_state(&c, "executed");
    daemon.settle();
    assert_eq!(
        daemon.runs(),
        2,
        "100 presses of one button ran it more than once"
    );
    let grants = daemon
        .journal_events()
        .iter()
        .filter(|e| e["ev"] == "granted" && e["id"] == c.as_str())
        .count();
    assert_eq!(grants, 1);

    // A press after the ttl.
    daemon.advance_clock(16 * 60);
    press(&daemon, &owner(), private, &card_a, &yes_a);
    daemon.settle();
    daemon.wait_state(&a, "expired");
    assert_eq!(daemon.runs(), 2, "a press after the ttl ran the action");
}

#[test]
fn a_no_is_remembered_three_silence_the_kind_and_resume_lifts_it() {
    let daemon = Daemon::start();
    let private = ChatSpec::private(OWNER);
    let decline = |text: &str| {
        let (id, answer) = ask_waiting(&daemon, waiting(text));
        let card = daemon.card_of(&id);
        press(&daemon, &owner(), private, &card, &data(&card, 1));
        assert_eq!(answer.join().unwrap()["status"], "declined");
    };
    decline("first");
    let again = daemon.request(&good_ask("first"));
    assert_eq!(again["reason"], "declined_recently", "{again}");
    decline("second");
    decline("third");
    let silenced = daemon.request(&good_ask("fourth"));
    assert_eq!(silenced["reason"], "kind_silenced", "{silenced}");
    daemon.wait_for("the silence notice", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.outgoing && m.buttons().iter().any(|b| b.text == "Resume"))
    });
    let notice = daemon
        .owner_chat()
        .into_iter()
        .find(|m| m.buttons().iter().any(|b| b.text == "Resume"))
        .unwrap();
    press(&daemon, &owner(), private, &notice, &data(&notice, 0));
    daemon.settle();
    let after = daemon.request(&good_ask("fourth"));
    assert!(
        matches!(after["status"].as_str(), Some("pending" | "card_shown")),
        "{after}"
    );
    let events = daemon.journal_events();
    assert!(events.iter().any(|e| e["ev"] == "silenced"));
    assert!(events.iter().any(|e| e["ev"] == "resumed"));
}

#[test]
fn an_unanswered_card_expires_and_loses_its_buttons() {
    let daemon = Daemon::start();
    let (id, answer) = ask_waiting(&daemon, waiting("nobody answers"));
    let card = daemon.card_of(&id);
    daemon.advance_clock(15 * 60 + 1);
    assert_eq!(answer.join().unwrap()["status"], "expired");
    daemon.wait_for("the card to say it expired", |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains("expired"))
        })
    });
    assert_eq!(daemon.runs(), 0);
}

#[test]
fn the_same_digest_joins_the_open_card() {
    let daemon = Daemon::start();
    let (first, _one) = ask_waiting(&daemon, waiting("same text"));
    daemon.card_of(&first);
    let (second, _two) = ask_waiting(&daemon, waiting("same text"));
    assert_eq!(first, second);
    daemon.settle();
    let cards = daemon
        .owner_chat()
        .iter()
        .filter(|m| {
            !m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains(&first))
        })
        .count();
    assert_eq!(cards, 1, "no second card");
}

#[test]
fn a_long_text_comes_in_parts_that_join_back_exactly() {
    let daemon = Daemon::builder().start();
    // Combining marks with no precomposed form, so the text stays NFC.
    let unit = "Привет, мир! 👨‍👩‍👧 漢字かな交じり文 q\u{303}x\u{316}… 🏳️‍🌈\n";
    let mut text = String::new();
    while text.chars().count() < 19_000 {
        text.push_str(unit);
    }
    let text: String = text.chars().take(19_000).collect();
    // Cut inside a grapheme cluster would leave a combining mark first: make the end clean.
    let text = text
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_owned();
    let (id, _answer) = ask_waiting(&daemon, waiting(&text));
    let card = daemon.card_of(&id);
    let parts: Vec<ChatMessage> = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| {
            m.message_id < card.message_id && m.text.as_deref().is_some_and(|t| t.starts_with('['))
        })
        .collect();
    assert!(parts.len() >= 5, "{} parts", parts.len());
    let n = parts.len();
    let mut joined = String::new();
    for (i, part) in parts.iter().enumerate() {
        let message = part.text.as_deref().unwrap();
        assert!(message.chars().count() <= 4096, "part {i}: code points");
        assert!(
            message.encode_utf16().count() <= 4096,
            "part {i}: UTF-16 units"
        );
        let (header, body) = message.split_once('\n').unwrap();
        assert_eq!(header, format!("[{}/{n}]", i + 1));
        joined.push_str(body);
    }
    assert_eq!(joined, text, "the parts join back to the text exactly");
}

#[test]
fn pairing_makes_the_owner_and_strangers_get_one_line() {
    let daemon = Daemon::builder().no_owner().start();
    let refused = daemon.request(&good_ask("before pairing"));
    assert_eq!(refused["reason"], "no_owner");
    let pair = daemon.cli(&["pair", "--config", daemon.config.to_str().unwrap()]);
    assert_eq!(
        pair.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pair.stderr)
    );
    let printed = stdout(&pair);
    let code = printed
        .lines()
        .find_map(|l| l.strip_prefix("code: "))
        .unwrap()
        .to_owned();
    let link = format!(
        "link: https://t.me/{}?start={code}",
        daemon.bot.bot_username()
    );
    assert!(printed.contains(&link), "{printed}");
    assert!(
        printed.contains('█') || printed.contains('▀'),
        "a QR code is drawn"
    );

    let me = UserSpec::new(555, "Owner").language("ru");
    daemon
        .bot
        .push_text(&me, ChatSpec::private(555), "/start WRONGCODE1");
    daemon
        .bot
        .push_text(&me, ChatSpec::private(555), &format!("/start {code}"));
    daemon.wait_for("two replies to the new owner", |bot| {
        bot.messages(555).iter().filter(|m| m.outgoing).count() >= 2
    });
    let replies: Vec<String> = daemon
        .bot
        .messages(555)
        .iter()
        .filter(|m| m.outgoing)
        .filter_map(|m| m.text.clone())
        .collect();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_ne!(
        replies[0], replies[1],
        "a wrong code and then the pairing: {replies:?}"
    );
    let owner_set = daemon
        .journal_events()
        .into_iter()
        .find(|e| e["ev"] == "owner_set")
        .unwrap();
    assert_eq!(owner_set["owner"], 555);

    // The code worked once; the owner's cards go to their chat now.
    daemon.bot.push_text(
        &stranger(),
        ChatSpec::private(777),
        &format!("/start {code}"),
    );
    daemon
        .bot
        .push_text(&stranger(), ChatSpec::private(777), "hello?");
    daemon.settle();
    // Both updates are handled, so whatever the stranger will be sent is queued by now.
    let to_stranger = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .outbox()
        .unwrap()
        .iter()
        .filter(|row| row.chat_id == 777)
        .count();
    assert_eq!(
        to_stranger, 1,
        "a stranger gets one polite line, rate-limited"
    );
    let answer = daemon.request(&good_ask("after pairing"));
    let id = answer["id"].as_str().unwrap().to_owned();
    daemon.wait_for("a card in the new owner's chat", |bot| {
        bot.messages(555)
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains(&id)))
    });
}

#[test]
fn five_wrong_codes_lock_pairing() {
    let daemon = Daemon::builder().no_owner().start();
    let pair = daemon.cli(&["pair", "--config", daemon.config.to_str().unwrap()]);
    let code = stdout(&pair)
        .lines()
        .find_map(|l| l.strip_prefix("code: "))
        .unwrap()
        .to_owned();
    let me = UserSpec::new(555, "Owner");
    for n in 0..5 {
        daemon
            .bot
            .push_text(&me, ChatSpec::private(555), &format!("/start WRONG{n}"));
    }
    daemon
        .bot
        .push_text(&me, ChatSpec::private(555), &format!("/start {code}"));
    daemon.settle();
    assert!(
        !daemon
            .journal_events()
            .iter()
            .any(|e| e["ev"] == "owner_set"),
        "the right code after five wrong ones paired while locked"
    );
    let again = daemon.cli(&["pair", "--config", daemon.config.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("locked"));
}

#[test]
fn a_rate_limited_send_is_retried_after_retry_after() {
    let daemon = Daemon::start();
    daemon.bot.script(
        "sendMessage",
        consentd_emulator::Scripted::too_many_requests(1),
    );
    let (id, _answer) = ask_waiting(&daemon, waiting("rate limited"));
    daemon.card_of(&id);
    let sends = daemon.bot.calls_to("sendmessage");
    assert!(sends.len() >= 2, "{sends:?}");
    let gap = sends[1].elapsed.saturating_sub(sends[0].elapsed);
    assert!(
        gap >= Duration::from_millis(950),
        "retry_after was not honoured: {gap:?}"
    );
}

#[test]
fn the_owner_can_ask_what_is_pending_and_for_help() {
    let daemon = Daemon::start();
    let (id, _answer) = ask_waiting(&daemon, waiting("waiting for you"));
    daemon.card_of(&id);
    let before = daemon.owner_chat().len();
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), "/pending");
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), "/help");
    daemon.wait_for("two replies", |bot| {
        bot.messages(OWNER).iter().filter(|m| m.outgoing).count() >= before + 2
    });
    let chat = daemon.owner_chat();
    let pending = chat[before].text.clone().unwrap();
    assert!(
        pending.contains(&id) && pending.contains("Post to X"),
        "{pending}"
    );
    let help = chat[before + 1].text.clone().unwrap();
    assert!(
        help.contains("/pending") && help.contains("/help"),
        "{help}"
    );
}

#[test]
fn telegram_saying_not_modified_or_too_old_does_not_stop_the_loop() {
    let daemon = Daemon::start();
    daemon.bot.script(
        "editMessageText",
        consentd_emulator::Scripted::not_modified(),
    );
    daemon.bot.script(
        "answerCallbackQuery",
        consentd_emulator::Scripted::query_too_old(),
    );
    let (id, answer) = ask_waiting(&daemon, waiting("scripted answers"));
    let card = daemon.card_of(&id);
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &data(&card, 0),
    );
    assert_eq!(answer.join().unwrap()["status"], "executed");
    daemon.settle();
    // The first edit was "not modified" (done, not retried); the outcome's edit still lands.
    daemon.wait_for("the outcome on the card", |bot| {
        bot.message(OWNER, card.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
    let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
    let in_state = |state: &str| {
        db.outbox()
            .unwrap()
            .iter()
            .filter(|row| row.state == state)
            .count()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while in_state("queued") > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the outbox never emptied"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let dropped = in_state("dropped");
    assert_eq!(dropped, 0, "nothing was given up on");
}

#[test]
fn a_stop_during_a_run_still_records_its_outcome() {
    let mut daemon = Daemon::start();
    let hold = daemon.dir.path().join("hold");
    let running = daemon.dir.path().join("running");
    std::fs::write(&hold, "").unwrap();
    let (id, _answer) = ask_waiting(&daemon, waiting("held while stopping"));
    let card = daemon.card_of(&id);
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &data(&card, 0),
    );
    daemon.wait_for("the command to start", |_| running.exists());
    nix::sys::signal::kill(daemon.pid(), Signal::SIGTERM).unwrap();
    // The daemon waits for the run in flight; release it.
    std::thread::sleep(Duration::from_millis(200));
    std::fs::remove_file(&hold).unwrap();
    let exit = daemon.wait_exit();
    assert!(exit.success(), "{exit}: {}", daemon.log());
    let ended: Vec<String> = daemon
        .journal_events()
        .iter()
        .filter(|e| e["id"] == id.as_str())
        .map(|e| e["ev"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ended.last().map(String::as_str),
        Some("executed"),
        "{ended:?}"
    );
    let daemon = daemon.restart();
    assert_eq!(status(&daemon, &id), "executed");
}

#[test]
fn a_card_telegram_refuses_ends_its_record_instead_of_holding_a_slot() {
    let daemon = Daemon::builder().max_pending(1).start();
    daemon.bot.script(
        "sendMessage",
        consentd_emulator::Scripted::error(400, "Bad Request: chat not found"),
    );
    let (id, answer) = ask_waiting(&daemon, waiting("never delivered"));
    assert_eq!(answer.join().unwrap()["status"], "expired");
    let record = daemon.request(&json!({"v":1,"op":"status","id":id}));
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("could not be delivered"),
        "{record}"
    );
    // The slot is free again: the next ask gets its card.
    let (next, _next_answer) = ask_waiting(&daemon, waiting("delivered"));
    daemon.card_of(&next);
}
