//! When a card opens: as the sender sends it, after its parts and attachments, or under the
//! night's count. Its ttl runs from its `card_shown` line.

use std::time::{Duration, Instant};

use base64::Engine;
use chrono::{DateTime, Utc};
use consentd_emulator::{ChatSpec, Scripted, UserSpec};
use consentd_store::inspect::Inspect;
use serde_json::{json, Value};

use crate::attachments::PNG;
use crate::consent::ask_waiting;
use crate::fixture::{good_ask, today_at, Daemon, OWNER};

fn with_cover(mut ask: Value) -> Value {
    ask["attachments"] = json!([{"name":"cover.png","media_type":"image/png",
        "data_b64":base64::engine::general_purpose::STANDARD.encode(PNG)}]);
    ask
}

fn urgent(text: &str) -> Value {
    let mut ask = good_ask(text);
    ask["urgent"] = json!(true);
    ask
}

fn time(event: &Value, key: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(event[key].as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
}

/// The record's `asked` and `card_shown` lines.
fn lines_of(daemon: &Daemon, id: &str) -> (Value, Value) {
    (
        daemon.wait_for_line("asked", id),
        daemon.wait_for_line("card_shown", id),
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Opens {
    /// By the sender, as it sends the card, with nothing before it: at the ask's instant or later.
    AtOnce,
    /// By the sender, as it sends the card, after what goes first: later than the ask.
    WhenSent,
    /// By the sender after the paced parts: at least a second after the ask.
    AfterItsParts,
}

#[test]
fn a_card_opens_as_the_sender_sends_it_after_what_goes_before_it() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 5")
        .start();
    let long_text: String = "Parts, paced like every message. ".repeat(600);
    let with_cover = with_cover(good_ask("With a cover"));
    let cases: Vec<(&str, Value, Option<DateTime<Utc>>, Opens)> = vec![
        (
            "a short text by day",
            good_ask("Short"),
            None,
            Opens::AtOnce,
        ),
        (
            "a text in parts",
            good_ask(&long_text),
            None,
            Opens::AfterItsParts,
        ),
        ("an attachment", with_cover, None, Opens::WhenSent),
        (
            "a short text in quiet hours",
            good_ask("At night"),
            Some(today_at(23, 30)),
            Opens::WhenSent,
        ),
    ];
    for (name, mut request, clock, opens) in cases {
        if let Some(at) = clock {
            daemon.set_clock(at);
        }
        request["wait"] = json!(true);
        let (id, _answer) = ask_waiting(&daemon, request);
        daemon.card_of(&id);
        let (asked, shown) = lines_of(&daemon, &id);
        let (asked_at, shown_at) = (time(&asked, "ts"), time(&shown, "ts"));
        assert_eq!(
            time(&shown, "expires_at"),
            shown_at + chrono::Duration::minutes(15),
            "{name}: the ttl runs from the opening"
        );
        match opens {
            Opens::AtOnce => assert!(shown_at >= asked_at, "{name}: {asked} {shown}"),
            Opens::WhenSent => assert!(shown_at > asked_at, "{name}: {asked} {shown}"),
            Opens::AfterItsParts => assert!(
                shown_at >= asked_at + chrono::Duration::seconds(1),
                "{name}: {asked} {shown}"
            ),
        }
    }
}

#[test]
fn a_new_ask_is_pending_in_the_first_answer_and_its_card_answerable_at_once() {
    let daemon = Daemon::start();
    let answer = daemon.request(&good_ask("Answer me"));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let yes = card.buttons()[0].callback_data.clone().unwrap();
    daemon.bot.push_press(
        &UserSpec::new(OWNER, "Mila"),
        ChatSpec::private(OWNER),
        card.message_id,
        &yes,
    );
    daemon.wait_state(&id, "executed");
}

/// Waits until the outbox has nothing left to send.
fn outbox_drained(daemon: &Daemon) {
    let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
    daemon.wait_for("the outbox to drain", |_| {
        db.outbox()
            .unwrap()
            .iter()
            .filter(|row| row.is_queued_unheld())
            .count()
            == 0
    });
}

#[test]
fn an_urgent_ask_at_night_opens_nothing_past_the_nights_limit() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 1")
        .start();
    daemon.set_clock(today_at(23, 30));
    let first = daemon.request(&good_ask("The night's one card"));
    daemon.card_of(first["id"].as_str().unwrap());
    outbox_drained(&daemon);
    // An urgent card is loud at night while the count allows; tonight's one card is shown, so
    // this one waits for the morning, urgent or not, unopened.
    let answer = daemon.request(&urgent("Urgent at night"));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap();
    let shown = |daemon: &Daemon| {
        daemon
            .journal_events()
            .iter()
            .any(|e| e["id"] == id && e["ev"] == "card_shown")
    };
    assert!(!shown(&daemon), "opened past the night's limit");
    let status = daemon.request(&json!({"v":1,"op":"status","id":id,"wait":false}));
    assert_eq!(status["status"], "pending", "{status}");
    daemon.settle();
    assert!(!shown(&daemon), "shown past the night's limit");
}

/// An urgent ask's card at night, within the night's limit, goes with sound (a card the sender
/// finds open already goes as a retry: silently).
#[test]
fn an_urgent_ask_within_the_nights_limit_is_sent_with_sound() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 2")
        .start();
    daemon.set_clock(today_at(23, 30));
    outbox_drained(&daemon);
    let id = daemon.request(&urgent("Urgent at night"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!daemon.card_of(&id).disable_notification, "sent silently");
}

/// A row dropped while the sender still works on it (an ask whose own ttl passed while its
/// attachment uploads) leaves the outbox empty and the sender busy. The next card does not lose
/// its ttl to that upload: it is opened only when the sender gets to it.
#[test]
fn a_card_is_not_opened_while_the_sender_is_busy() {
    let daemon = Daemon::start();
    outbox_drained(&daemon);
    daemon
        .bot
        .script("sendDocument", Scripted::Delay(Duration::from_secs(4)));
    let mut first = with_cover(good_ask("With a cover, and a short ttl"));
    first["ttl"] = json!(10);
    let first = daemon.request(&first);
    let first = first["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    daemon.wait_for("the attachment's upload to start", |bot| {
        !bot.calls_to("sendDocument").is_empty()
    });
    // Its own ttl passes while it uploads: it ends expired, its card row dropped.
    daemon.advance_clock(30);
    daemon.wait_state(&first, "expired");
    outbox_drained(&daemon);
    let uploading = |daemon: &Daemon| {
        daemon
            .bot
            .calls_to("sendDocument")
            .iter()
            .all(|call| call.outcome.is_none())
    };
    assert!(uploading(&daemon), "the upload ended before the next ask");
    let asked = Instant::now();
    let second = daemon.request(&good_ask("Short, no attachment"));
    let second = second["id"].as_str().unwrap().to_owned();
    daemon.card_of(&second);
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_secs(1),
        "the sender was busy: {waited:?}"
    );
    let (asked_line, shown_line) = lines_of(&daemon, &second);
    let opened_after = (time(&shown_line, "ts") - time(&asked_line, "ts"))
        .to_std()
        .unwrap_or_default();
    assert!(
        opened_after + Duration::from_secs(1) >= waited,
        "opened {opened_after:?} after its ask, shown {waited:?} after it"
    );
}

/// The sender, woken by each ask's card and by the owner's commands' replies, may read the
/// outbox while another card's row is being committed. Either way each card reaches the owner
/// once, and none is lost. Unpaced, with asks from several clients and owner's commands whose
/// replies keep the sender waking, the asks' commits and the sender's reads interleave.
#[test]
fn every_card_reaches_the_owner_once_however_the_sender_wakes() {
    const CLIENTS: usize = 3;
    const ASKS: usize = 6;
    let daemon = Daemon::builder().unpaced().max_pending(40).start();
    outbox_drained(&daemon);
    let ids: Vec<String> = std::thread::scope(|scope| {
        let askers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let daemon = &daemon;
                scope.spawn(move || {
                    (0..ASKS)
                        .map(|n| {
                            let answer = daemon.request(&good_ask(&format!("Ask {client}.{n}")));
                            answer["id"]
                                .as_str()
                                .unwrap_or_else(|| panic!("{answer}"))
                                .to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for _ in 0..ASKS {
            daemon.bot.push_text(
                &UserSpec::new(OWNER, "Mila"),
                ChatSpec::private(OWNER),
                "/help",
            );
        }
        askers
            .into_iter()
            .flat_map(|asker| asker.join().unwrap())
            .collect()
    });
    for id in &ids {
        daemon.card_of(id);
    }
    outbox_drained(&daemon);
    let messages = daemon.bot.messages(OWNER);
    for id in &ids {
        // Nothing was answered: every card still has its buttons.
        let sent = messages
            .iter()
            .filter(|m| {
                m.outgoing
                    && !m.buttons().is_empty()
                    && m.text.as_deref().is_some_and(|t| t.contains(id.as_str()))
            })
            .count();
        assert_eq!(sent, 1, "the card of {id} was sent {sent} times");
    }
}
