//! Suggested mandates against a hostile session and a changing config: the suggestion, and the
//! card its button opens, never give the owner less than a session's mandate request gets, nor
//! more than the config in force allows.

use consentd_emulator::ChatMessage;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{Daemon, DaemonBuilder};
use crate::mandates::{ask, ask_to};
use crate::owner::{events, say};
use crate::suggestions::{post, suggestions};

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
/// a target they approved; the suggestion that offers a standing permission for it warns the
/// same, so the owner decides on "Review terms" knowing what every other message said.
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

/// The owner lowers `mandate_max_days` to 2 and restarts: the suggestion made the day before,
/// for 7 days, opens no card (a session's own request for it is refused `mandate_terms`), and
/// no Grant can open a mandate above the new ceiling.
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

/// The owner switches "Post to X" off in /categories after the suggestion came: its button
/// opens no card, as a session's mandate request for the kind is refused now.
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

/// The card a suggestion opens says it was consentd's suggestion in a line of its own; a
/// session's request whose reason copies those words gets a "Reason:" line set apart, never
/// that line.
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

/// Routine receipts are held for the evening summary in quiet hours, not dropped: what ran
/// overnight under a mandate (its target, its text, its Stop) reaches the chat, silently, with
/// the summary.
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

/// "A suggestion the owner ignores or declines is not made again for that kind and target for
/// 7 days": the 7 days run from the owner's Decline, so one opened and declined on day 6 is not
/// offered again on day 7.
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

/// suggest.rs's rule `covered` holds when the button is pressed, not only when the suggestion
/// is made: granted a mandate for the target since, "Review terms" opens no second card.
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
