//! A yes is for the card the owner saw: bound to the message its button was drawn on, showing
//! the text it was drawn with, within the card's window on the wall clock and the monotonic one,
//! claimed within that window, and a Resume lifts only the silence it was drawn for. Tables of
//! presses that must change nothing, each case its own assertion, against the real daemon and
//! its Bot API emulator.

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, stdout, Daemon, OWNER};

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn private() -> ChatSpec {
    ChatSpec::private(OWNER)
}

/// Asks without waiting; the record's id and its card.
fn ask_card(daemon: &Daemon, text: &str) -> (String, ChatMessage) {
    let answer = daemon.request(&good_ask(text));
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned();
    let card = daemon.card_of(&id);
    (id, card)
}

fn data(card: &ChatMessage, index: usize) -> String {
    card.buttons()[index].callback_data.clone().unwrap()
}

fn status(daemon: &Daemon, id: &str) -> String {
    daemon.request(&json!({"v":1,"op":"status","id":id}))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The reasons of the `press_rejected` lines after the first `skip` lines of the journal.
fn rejections_after(daemon: &Daemon, skip: usize) -> Vec<String> {
    daemon.journal_events()[skip..]
        .iter()
        .filter(|e| e["ev"] == "press_rejected")
        .map(|e| e["reason"].as_str().unwrap().to_owned())
        .collect()
}

/// The callback update for `data` under message `message_id`, with the message as Telegram
/// shows a message it no longer gives the bot.
fn press_on_unreadable(daemon: &Daemon, message_id: i64, data: &str) {
    let mut update = daemon
        .bot
        .callback_update(&owner(), private(), message_id, data);
    let chat = update["callback_query"]["message"]["chat"].clone();
    update["callback_query"]["message"] =
        json!({"chat": chat, "message_id": message_id, "date": 0});
    daemon.bot.push_update(update);
}

fn journal_verifies(daemon: &Daemon) {
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
}

#[test]
fn a_press_counts_only_on_the_card_as_drawn() {
    let daemon = Daemon::start();
    let (a, card_a) = ask_card(&daemon, "record A");
    let (b, card_b) = ask_card(&daemon, "record B");
    let (yes_a, no_a) = (data(&card_a, 0), data(&card_a, 1));

    type Press<'a> = Box<dyn Fn(&Daemon) + 'a>;
    let cases: Vec<(&str, Press, &str)> = vec![
        (
            "A's yes under B's card",
            Box::new(|d: &Daemon| {
                d.bot
                    .push_press(&owner(), private(), card_b.message_id, &yes_a);
            }),
            "wrong_message",
        ),
        (
            "A's yes under a message the bot never sent",
            Box::new(|d: &Daemon| {
                d.bot
                    .push_press(&owner(), private(), card_b.message_id + 1_000, &yes_a);
            }),
            "wrong_message",
        ),
        (
            "A's yes under a message that shows no text",
            Box::new(|d: &Daemon| press_on_unreadable(d, card_a.message_id, &yes_a)),
            "card_altered",
        ),
        (
            "A's yes under A's card, its text edited by whoever holds the token",
            Box::new(|d: &Daemon| {
                let mut text = card_a.text.clone().unwrap();
                text = text.replace("@mila_news", "@mallory");
                assert!(d.bot.tamper_text(OWNER, card_a.message_id, &text));
                d.bot
                    .press_button(&owner(), private(), card_a.message_id, &yes_a)
                    .unwrap();
            }),
            "card_altered",
        ),
    ];
    for (name, press, reason) in cases {
        let before = daemon.journal_events().len();
        press(&daemon);
        daemon.settle();
        assert_eq!(status(&daemon, &a), "card_shown", "{name} answered A");
        assert_eq!(status(&daemon, &b), "card_shown", "{name} answered B");
        assert_eq!(daemon.runs(), 0, "{name} ran something");
        assert_eq!(rejections_after(&daemon, before), [reason], "{name}");
    }
    // A changed card is the owner's business at once: someone may hold the bot's token.
    daemon.wait_for("the urgent notice of the altered card", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.outgoing
                && !m.disable_notification
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains("changed since it was sent"))
        })
    });
    // A No on the altered card still counts (it makes nothing run), and the owner is told.
    daemon
        .bot
        .press_button(&owner(), private(), card_a.message_id, &no_a)
        .unwrap();
    daemon.wait_state(&a, "declined");
    daemon.wait_for("the notice that a No counted on an altered card", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.outgoing
                && !m.disable_notification
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains("changed after consentd sent it"))
        })
    });
    // B's own card, untouched, still counts; a No on an unreadable card is still a No.
    daemon.tap(&card_b, 0);
    daemon.wait_state(&b, "executed");
    let (c, card_c) = ask_card(&daemon, "record C");
    press_on_unreadable(&daemon, card_c.message_id, &data(&card_c, 1));
    daemon.wait_state(&c, "declined");
    assert_eq!(daemon.runs(), 1, "only B ran");
    journal_verifies(&daemon);
}

#[test]
fn text_that_mimics_the_card_stays_inside_its_quotation() {
    let daemon = Daemon::start();
    let mimic = "Hello\n\nPost to X (external)\nTarget: @mila_news\nCost: $0.00\n\
                 Record: r_0123456789abcdef0123\nAnswer by 23:59";
    let mut ask = good_ask(mimic);
    ask["target"] = json!("@real_target");
    ask["fields"]["reply_to"] = json!("https://x.org/1 Cost: $0.00");
    let id = daemon.request(&ask)["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let text = card.text.clone().unwrap();
    let entities = card
        .entities
        .clone()
        .expect("the card carries its entities");
    let spans = utf16_spans(&text, &entities);
    // The text is one quotation, exactly the text asked.
    let quotes: Vec<&String> = spans
        .iter()
        .filter(|(kind, _)| kind == "blockquote")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(quotes, [mimic], "{text}");
    // Outside the quotation, the card's own lines: one target, one cost, one record.
    let outside = outside_quotes(&text, &entities);
    for (prefix, count) in [
        ("Target:", 1),
        ("Cost:", 1),
        ("Record:", 1),
        ("Answer by", 1),
    ] {
        let found = outside.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(found, count, "{prefix} in the card's own lines:\n{outside}");
    }
    // The agent's values are set apart as code: the target and the field's value.
    let values: Vec<&String> = spans
        .iter()
        .filter(|(kind, _)| kind == "code")
        .map(|(_, s)| s)
        .collect();
    assert!(values.contains(&&"@real_target".to_owned()), "{values:?}");
    assert!(
        values.contains(&&"https://x.org/1 Cost: $0.00".to_owned()),
        "{values:?}"
    );
}

#[test]
fn a_long_text_is_quoted_in_each_part() {
    let daemon = Daemon::start();
    let line = "Target: @mila_news — Cost: $0.00 — ";
    let text = line
        .repeat(9_000 / line.chars().count())
        .trim_end()
        .to_owned();
    let id = daemon.request(&good_ask(&text))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.card_of(&id);
    let parts: Vec<ChatMessage> = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.text.as_deref().is_some_and(|t| t.starts_with('[')))
        .collect();
    assert!(parts.len() >= 3, "{}", parts.len());
    let mut joined = String::new();
    for part in &parts {
        let body = part.text.clone().unwrap();
        let spans = utf16_spans(&body, part.entities.as_ref().expect("entities"));
        let (header, piece) = body.split_once('\n').unwrap();
        assert!(header.starts_with('['), "{header}");
        assert_eq!(spans.len(), 1, "{header}: one quotation");
        assert_eq!(spans[0].0, "blockquote");
        assert_eq!(spans[0].1, piece.trim(), "{header}: the piece is quoted");
        joined.push_str(piece);
    }
    assert_eq!(joined, text);
}

#[test]
fn a_result_with_hidden_characters_is_shown_written_out() {
    let daemon = Daemon::start();
    std::fs::write(
        daemon.dir.path().join("action.sh"),
        "/bin/cat > /dev/null\nprintf 'done \\342\\200\\256gpj.exe\\n'\n",
    )
    .unwrap();
    let (id, card) = ask_card(&daemon, "show me the result");
    daemon.tap(&card, 0);
    let answer = daemon.wait_state(&id, "executed");
    assert_eq!(
        answer["result"], "done \u{202E}gpj.exe",
        "the session gets it as it is"
    );
    daemon.wait_for("the card's outcome", |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("Result: done U+202Egpj.exe"))
        })
    });
    let edited = daemon.bot.message(OWNER, card.message_id).unwrap();
    assert!(!edited.text.unwrap().contains('\u{202E}'));
}

#[test]
fn a_yes_claimed_after_its_ttl_ends_expired_and_the_owner_is_told() {
    let daemon = Daemon::builder()
        .env("CONSENTD_CRASH_AT", "before_claim")
        .start();
    let (id, card) = ask_card(&daemon, "yes, then a crash");
    daemon.tap(&card, 0);
    let mut daemon = daemon;
    assert!(
        !daemon.wait_exit().success(),
        "the crash point was not reached"
    );
    // Back three days later: the yes was for a card that has long expired.
    daemon.advance_clock(3 * 24 * 3600);
    let daemon = daemon.restart();
    daemon.wait_state(&id, "expired");
    assert_eq!(daemon.runs(), 0, "a yes past its card's window ran");
    daemon.wait_for("the notice that nothing ran", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.outgoing
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains(&id) && t.contains("Nothing ran"))
        })
    });
    let events: Vec<Value> = daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id.as_str())
        .collect();
    let names: Vec<&str> = events.iter().map(|e| e["ev"].as_str().unwrap()).collect();
    assert_eq!(names, ["asked", "card_shown", "granted", "expired"]);
    assert_eq!(events[3]["detail"], "claim");
    journal_verifies(&daemon);
}

#[test]
fn a_stepped_clock_does_not_stretch_a_card() {
    // Cards of one minute. The monotonic offset only grows from case to case, as time does.
    let daemon = Daemon::builder().card_ttl("60s").start();
    let mut monotonic = 0;
    // (case, wall clock shift at the press, seconds passed at the press, what the press is)
    let cases: [(&str, i64, i64, Option<&str>); 4] = [
        (
            "62 s in, the wall clock stepped back 2 h",
            -7_200,
            62,
            Some("before_shown"),
        ),
        ("62 s in, the wall clock 10 s in", 10, 62, Some("expired")),
        (
            "5 s in, the wall clock stepped back 30 s",
            -30,
            5,
            Some("before_shown"),
        ),
        ("30 s in, both clocks in step", 0, 30, None),
    ];
    for (name, wall, passed, rejected) in cases {
        daemon.set_clocks(0, monotonic);
        let (id, card) = ask_card(&daemon, name);
        monotonic += passed;
        daemon.set_clocks(wall, monotonic);
        let before = daemon.journal_events().len();
        daemon.tap(&card, 0);
        daemon.settle();
        match rejected {
            // Past its minute on the monotonic clock the card is also the sweep's to expire,
            // whatever the wall clock says, and the sweep may get there first (within its
            // second): the press then finds it closed.
            Some(reason) if passed >= 60 => {
                let after = daemon.journal_events()[before..].to_vec();
                let of_card = |ev: &str| {
                    after
                        .iter()
                        .position(|e| e["ev"] == ev && (ev == "press_rejected" || e["id"] == id))
                };
                let reasons = rejections_after(&daemon, before);
                let swept_first = matches!(
                    (of_card("expired"), of_card("press_rejected")),
                    (Some(expired), Some(pressed)) if expired < pressed
                );
                let expected = if swept_first { "not_open" } else { reason };
                assert_eq!(reasons, [expected], "{name}");
                assert_ne!(status(&daemon, &id), "executed", "{name} ran");
            }
            Some(reason) => {
                assert_eq!(rejections_after(&daemon, before), [reason], "{name}");
                assert_ne!(status(&daemon, &id), "executed", "{name} ran");
            }
            None => {
                daemon.wait_state(&id, "executed");
            }
        }
        // Whatever the wall clock says, a card past its minute on the monotonic clock expires.
        if rejected.is_some() {
            monotonic += 60;
            daemon.set_clocks(0, monotonic);
            daemon.wait_state(&id, "expired");
        }
    }
    assert_eq!(daemon.runs(), 1);
    journal_verifies(&daemon);
}

/// A wall clock stepped back before a card's `shown_at` refuses every press on it, and must not
/// keep it open either: past its minute on the monotonic clock the card expires and its session
/// hears `expired` (docs/CONFIG.md, `card_ttl`: a card nobody answered within ttl is expired),
/// whatever the wall clock
/// says, not hours later when the wall clock has caught up with `shown_at`.
#[test]
fn a_card_past_its_ttl_expires_while_the_wall_clock_is_stepped_back() {
    let daemon = Daemon::builder().card_ttl("60s").start();
    daemon.set_clocks(0, 0);
    let (id, card) = ask_card(&daemon, "stepped back, then past its minute");
    daemon.set_clocks(-7_200, 62);
    daemon.wait_state(&id, "expired");
    // Edited to say so, without its buttons: nothing is left to press.
    daemon.wait_for("the expired card's buttons to go", |bot| {
        bot.message(OWNER, card.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
    assert_eq!(daemon.runs(), 0);
    journal_verifies(&daemon);
}

#[test]
fn an_old_resume_does_not_lift_a_later_silence() {
    let daemon = Daemon::builder().decline_streak(1).start();
    let decline = |text: &str| {
        let (id, card) = ask_card(&daemon, text);
        daemon.tap(&card, 1);
        daemon.wait_state(&id, "declined");
    };
    let resume_notices = |daemon: &Daemon| -> Vec<ChatMessage> {
        daemon
            .owner_chat()
            .into_iter()
            .filter(|m| m.buttons().iter().any(|b| b.text == "Resume"))
            .collect()
    };
    decline("first no");
    daemon.wait_for("the first silence notice", |_| {
        resume_notices(&daemon).len() == 1
    });
    let first = resume_notices(&daemon).remove(0);
    let first_resume = first.buttons()[0].callback_data.clone().unwrap();
    daemon.tap(&first, 0);
    daemon.settle();
    assert_eq!(daemon.request(&good_ask("asks again"))["status"], "pending");
    // Used, the Resume is taken off its notice.
    daemon.wait_for("the used Resume taken away", |_| {
        resume_notices(&daemon).is_empty()
    });

    decline("second no");
    daemon.wait_for("the second silence notice", |_| {
        resume_notices(&daemon).len() == 1
    });
    let second = resume_notices(&daemon).remove(0);
    let before = daemon.journal_events().len();
    // The first notice's Resume, pressed again (as a modified client could send it) on its own
    // message, which no longer carries it.
    daemon.bot.push_press(
        &owner(),
        ChatSpec::private(OWNER),
        first.message_id,
        &first_resume,
    );
    daemon.settle();
    assert_eq!(rejections_after(&daemon, before), ["wrong_message"]);
    let still = daemon.request(&good_ask("still silenced"));
    assert_eq!(still["reason"], "kind_silenced", "{still}");
    // The second notice's own Resume lifts it.
    daemon.tap(&second, 0);
    daemon.settle();
    let after = daemon.request(&good_ask("after the right resume"));
    assert_eq!(after["status"], "pending", "{after}");
    journal_verifies(&daemon);
}

/// Each entity's type and the text it covers.
fn utf16_spans(text: &str, entities: &Value) -> Vec<(String, String)> {
    let units: Vec<u16> = text.encode_utf16().collect();
    entities
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let offset = e["offset"].as_u64().unwrap() as usize;
            let length = e["length"].as_u64().unwrap() as usize;
            (
                e["type"].as_str().unwrap().to_owned(),
                String::from_utf16(&units[offset..offset + length]).unwrap(),
            )
        })
        .collect()
}

/// The text with every quotation taken out.
fn outside_quotes(text: &str, entities: &Value) -> String {
    let mut units: Vec<u16> = text.encode_utf16().collect();
    let mut quotes: Vec<(usize, usize)> = entities
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "blockquote")
        .map(|e| {
            let offset = e["offset"].as_u64().unwrap() as usize;
            (offset, offset + e["length"].as_u64().unwrap() as usize)
        })
        .collect();
    quotes.sort_unstable_by(|a, b| b.cmp(a));
    for (start, end) in quotes {
        units.drain(start..end);
    }
    String::from_utf16(&units).unwrap()
}
