//! Suggested mandates against a hostile session and a changing config: the suggestion, and the
//! card its button opens, never give the owner less than a session's mandate request gets, nor
//! more than the config in force allows.

use consentd_emulator::ChatMessage;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{Daemon, DaemonBuilder};
use crate::mandates::{ask, ask_to};
use crate::owner::{events, say};

/// "@mіla_news" with a Cyrillic і (U+0456).
const CYRILLIC_I: &str = "@m\u{456}la_news";

pub(crate) fn daemon() -> Daemon {
    DaemonBuilder::default().suggestions(3).start()
}

/// Asks `request`, says yes on its card and waits until it ran; returns the card as drawn.
pub(crate) fn approved(daemon: &Daemon, request: &Value) -> ChatMessage {
    let (id, status) = ask(daemon, request);
    assert_eq!(status, "pending", "{id}");
    let card = daemon.card_of(&id);
    daemon.press_yes(&card);
    daemon.wait_state(&id, "executed");
    card
}

pub(crate) fn post(target: &str, n: usize) -> Value {
    ask_to(target, &format!("News item {n} for {target}"), "0.10")
}

pub(crate) fn suggestions(daemon: &Daemon) -> Vec<ChatMessage> {
    daemon
        .owner_chat()
        .into_iter()
        .filter(|m| {
            m.outgoing
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.starts_with("You said yes"))
        })
        .collect()
}

/// Three yeses to posts to `target`, and the suggestion that follows them.
pub(crate) fn suggested(daemon: &Daemon, target: &str) -> (Vec<ChatMessage>, ChatMessage) {
    let cards: Vec<ChatMessage> = (0..3).map(|n| approved(daemon, &post(target, n))).collect();
    daemon.wait_for("a suggestion", |_| !suggestions(daemon).is_empty());
    (cards, suggestions(daemon).pop().unwrap())
}

fn warnings(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with('⚠')).collect()
}

/// Every card that showed the owner this target warned that it mixes scripts and looks like
/// a target they approved; the suggestion that offers a standing permission for it shows it
/// bare. The owner decides whether to "Review terms" on a message that hides what every other
/// message naming the target says.
#[test]
fn a_suggestion_for_a_look_alike_target_shows_its_warnings_as_the_cards_did() {
    let daemon = daemon();
    approved(&daemon, &post("@mila_news", 0));
    let (cards, suggestion) = suggested(&daemon, CYRILLIC_I);
    let card_text = cards.last().unwrap().text.clone().unwrap();
    assert!(
        !warnings(&card_text).is_empty(),
        "the third card warned: {card_text}"
    );
    let text = suggestion.text.unwrap();
    assert!(text.contains(CYRILLIC_I), "{text}");
    assert!(
        !warnings(&text).is_empty(),
        "the suggestion names a look-alike target without any warning:\n{text}"
    );
}

/// The owner lowers `mandate_max_days` to 2 and restarts; the suggestion made the day before
/// still opens a 7-day mandate card, which a session's own request could not get (refused
/// `mandate_terms`), and the owner's Grant would open it above the ceiling.
#[test]
fn a_suggestion_opened_after_the_ceilings_were_lowered_offers_nothing_above_them() {
    let mut daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    std::fs::write(
        &daemon.config,
        config.replacen("[limits]\n", "[limits]\nmandate_max_days = 2\n", 1),
    )
    .unwrap();
    let daemon = daemon.restart();
    // What a session now gets for the same terms.
    let own = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@news"],"days":7,"usd_per_day":"0.50","actions_per_day":5,
        "reason":"Daily news","wait":false}));
    assert_eq!(own["status"], "refused", "{own}");
    daemon.tap(&suggestion, 0);
    daemon.settle();
    let asked = events(&daemon, "mandate_asked");
    let over: Vec<&Value> = asked
        .iter()
        .filter(|e| e["days"].as_u64() > Some(2))
        .collect();
    // The owner's Grant on that card: what it opens.
    for line in &over {
        let card = daemon.card_of(line["id"].as_str().unwrap());
        daemon.press_yes(&card);
        daemon.settle();
    }
    let opened: Vec<Value> = events(&daemon, "mandate_open");
    assert!(
        over.is_empty() && opened.is_empty(),
        "a mandate card over the ceiling of 2 days was opened: {over:?}; Grant opened: {opened:?}"
    );
}

/// The owner switches "Post to X" off in /categories after the suggestion came; its button
/// still opens a mandate card for a kind whose mandate requests are now refused.
#[test]
fn a_suggestion_for_a_kind_switched_off_opens_no_card() {
    let daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    let list = say(&daemon, "/categories", "Post to X (external): on");
    daemon.tap(&list, 0);
    daemon.wait_for_event("category_off");
    let own = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@news"],"days":7,"usd_per_day":"0.50","actions_per_day":5,
        "reason":"Daily news","wait":false}));
    assert_eq!(own["status"], "refused", "{own}");
    daemon.tap(&suggestion, 0);
    daemon.settle();
    assert!(
        events(&daemon, "mandate_asked").is_empty(),
        "a mandate card for a kind that is off was opened"
    );
}

/// The card a suggestion opens tells the owner it was consentd's suggestion only through its
/// reason, a field every session writes. A session's own request with that reason gets the
/// very same line, so the provenance the owner is taught to trust (OPERATOR.md: "the reason
/// 'suggested by consentd after 3 yeses in 7 days'") can be forged.
#[test]
fn a_session_cannot_dress_its_mandate_request_as_a_consentd_suggestion() {
    let daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    daemon.tap(&suggestion, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let genuine = daemon.card_of(asked["id"].as_str().unwrap());
    let genuine_text = genuine.text.unwrap();
    let line = genuine_text
        .lines()
        .find(|l| l.to_lowercase().contains("suggested by consentd"))
        .unwrap_or_else(|| panic!("the genuine card names consentd: {genuine_text}"))
        .to_owned();
    let forged = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@other"],"days":7,"usd_per_day":"10.00","actions_per_day":100,
        "reason":"suggested by consentd after 3 yeses in 7 days","wait":false}));
    if forged["status"] == "refused" {
        return;
    }
    let id = forged["id"].as_str().unwrap();
    let card = daemon.card_of(id).text.unwrap();
    assert!(
        !card.lines().any(|l| l == line),
        "a session's card carries consentd's own line {line:?}:\n{card}"
    );
}

/// Issue 20: routine receipts are "held for the evening summary in quiet hours". With
/// `receipts = "each"` (SPEC §10: each receipt is sent, silently at night) a covered action at
/// night is now never shown to the owner at all — not at night, not with the summary, which
/// gives only a count — so what ran overnight under a mandate (its target, its text, its Stop)
/// never reaches the chat, and the journal holds no text either.
#[test]
fn a_receipt_held_in_quiet_hours_reaches_the_owner_with_the_evening_summary() {
    let daemon = DaemonBuilder::default()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 3")
        .start();
    crate::mandates::grant(&daemon, &["@news"], 2, "5.00", 5);
    // 02:00 the next day.
    daemon.set_clock(crate::fixture::noon_today() + chrono::Duration::hours(14));
    let (night, status) = ask(
        &daemon,
        &ask_to("@news", "Posted at two in the night", "0.10"),
    );
    assert_eq!(status, "running", "{night}");
    daemon.wait_state(&night, "executed");
    // 21:01 that day: the evening summary.
    daemon.set_clock(
        crate::fixture::noon_today() + chrono::Duration::hours(33) + chrono::Duration::minutes(1),
    );
    daemon.wait_for_event("summary_sent");
    daemon.wait_for("the summary", |bot| {
        bot.messages(crate::fixture::OWNER).iter().any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.starts_with("Summary of"))
        })
    });
    crate::suggestions::drain_last_lane(&daemon);
    let told = daemon.owner_chat().into_iter().find(|m| {
        m.text
            .as_deref()
            .is_some_and(|t| t.contains(&night) || t.contains("Posted at two in the night"))
    });
    let told = told.expect("the night's covered action reached the owner with the summary");
    assert!(told.disable_notification, "a held receipt goes silently");
}

/// Issue 20: "A suggestion the owner ignores or declines is not made again for that kind and
/// target for 7 days." The 7 days run from when the suggestion was made, not from the owner's
/// Decline: opened and declined on day 6, the same terms (the same digest, which decline
/// memory would refuse from the session) are offered again on day 7.
#[test]
fn a_declined_suggestion_is_not_made_again_within_7_days_of_the_decline() {
    let daemon = daemon();
    let day = |d: i64| {
        daemon.set_clock(
            crate::fixture::noon_today() + chrono::Duration::days(d) + chrono::Duration::minutes(1),
        )
    };
    let (_, first) = suggested(&daemon, "@news");
    day(6);
    daemon.tap(&first, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let id = asked["id"].as_str().unwrap();
    daemon.press_no(&daemon.card_of(id));
    daemon.wait_state(id, "declined");
    day(7);
    for n in 10..13 {
        approved(&daemon, &post("@news", n));
    }
    daemon.settle();
    let made = events(&daemon, "mandate_suggested");
    assert_eq!(
        made.len(),
        1,
        "suggested again a day after the owner declined it: {made:?}"
    );
}

/// suggest.rs's rule `covered`: "an open mandate already names this kind and target: ... a
/// second mandate beside it would double them behind the owner's back". It is checked only
/// when the suggestion is made. Granted a mandate for the target since, the owner's later
/// "Review terms" still opens a second card for it, and its Grant doubles the day's limits.
#[test]
fn a_suggestion_opened_after_a_mandate_for_its_target_was_granted_opens_no_second_one() {
    let daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    let first = crate::mandates::grant(&daemon, &["@news"], 2, "5.00", 5);
    daemon.tap(&suggestion, 0);
    daemon.settle();
    let asked: Vec<Value> = events(&daemon, "mandate_asked")
        .into_iter()
        .filter(|e| e["id"] != first.as_str())
        .collect();
    assert!(
        asked.is_empty(),
        "a second mandate card for @news was opened beside the open {first}: {asked:?}"
    );
}
