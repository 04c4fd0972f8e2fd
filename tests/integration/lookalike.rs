//! Look-alike targets end to end (docs/CONTRACT-NOTES.md, "Look-alike targets"; UTS #39): the
//! warning lines on the card as the
//! owner's chat shows it, a mandate that does not cover a look-alike of its target, a target
//! approved earlier becoming known, a mandate naming two look-alikes refused before any card, and
//! a mandate card held for the morning that its new warnings no longer let fit.

use chrono::Duration;
use consentd_emulator::{ChatMessage, ChatSpec};
use serde_json::{json, Value};

use crate::fixture::{today_at, Daemon, OWNER};
use crate::mandates::{ask, ask_to, button, grant, mandate_request, owner, press, receipt_of};

/// "@mіla_news" with a Cyrillic і (U+0456).
const CYRILLIC_I: &str = "@m\u{456}la_news";

const MIXED_CYRILLIC_I: &str = "⚠ Mixed or unusual letters in this target. Scripts: Latin, \
     Cyrillic. Not ASCII: U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I";

const LIKE_MILA_NEWS_AT_3: &str = "⚠ Looks like @mila_news, a target you approved, but \
     differs: character 3 is U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I here, U+0069 \
     LATIN SMALL LETTER I there";

const LIKE_MILA_NEWS_RN: &str = "⚠ Looks like @mila_news, a target you approved, but differs: \
     character 2 is U+0072 LATIN SMALL LETTER R here, U+006D LATIN SMALL LETTER M there";

fn text(message: &ChatMessage) -> &str {
    message.text.as_deref().unwrap_or_default()
}

/// The card's lines right under its `Target:` line.
pub(crate) fn lines_under_target(card: &str) -> Vec<&str> {
    card.lines()
        .skip_while(|line| !line.starts_with("Target: "))
        .skip(1)
        .take_while(|line| line.starts_with('⚠'))
        .collect()
}

/// Presses No on the card of record `id` and returns the card as its edit left it.
pub(crate) fn decline_and_read_the_edit(
    daemon: &Daemon,
    id: &str,
    card: &ChatMessage,
) -> ChatMessage {
    press(
        daemon,
        &owner(),
        ChatSpec::private(OWNER),
        card,
        &button(card, 1),
    );
    daemon.wait_state(id, "declined");
    daemon.wait_for("the card's edit", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.message_id == card.message_id && !m.history.is_empty())
    });
    daemon
        .owner_chat()
        .into_iter()
        .find(|m| m.message_id == card.message_id)
        .unwrap()
}

/// Asks for `target`, waits for its card and presses Yes; returns once it ran.
fn approve_and_run(daemon: &Daemon, target: &str, text: &str) {
    let (id, status) = ask(daemon, &ask_to(target, text, "0.04"));
    assert_eq!(status, "pending", "{id}");
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
}

#[test]
fn a_mixed_script_target_gets_its_warning_line() {
    let daemon = Daemon::start();
    let (id, status) = ask(&daemon, &ask_to(CYRILLIC_I, "hello", "0.04"));
    assert_eq!(status, "pending");
    let card = daemon.card_of(&id);
    // Nothing is known yet: mixed scripts only.
    assert_eq!(lines_under_target(text(&card)), [MIXED_CYRILLIC_I]);
    assert!(text(&card).contains(&format!("Target: {CYRILLIC_I}\n{MIXED_CYRILLIC_I}\n")));
}

#[test]
fn a_mandate_never_covers_a_look_alike_of_its_target_which_gets_a_marked_card() {
    let daemon = Daemon::start();
    grant(&daemon, &["@mila_news"], 7, "5.00", 10);
    let (look_alike, status) = ask(&daemon, &ask_to(CYRILLIC_I, "look-alike", "0.04"));
    assert_eq!(status, "pending", "not covered: it waits for a card");
    let card = daemon.card_of(&look_alike);
    assert_eq!(
        lines_under_target(text(&card)),
        [MIXED_CYRILLIC_I, LIKE_MILA_NEWS_AT_3]
    );
    // The mandate itself still covers its own target, exactly.
    let (covered, status) = ask(&daemon, &ask_to("@mila_news", "the real one", "0.04"));
    assert_eq!(status, "running", "{covered}");
    daemon.wait_state(&covered, "executed");
    let runs = daemon.runs_by_record();
    assert!(!runs.contains_key(&look_alike), "{runs:?}");
    let status = daemon.request(&json!({"v":1,"op":"status","id":look_alike}));
    assert_eq!(status["status"], "card_shown", "{status}");
}

#[test]
fn a_target_approved_and_run_is_known_to_later_cards_and_their_edits() {
    let daemon = Daemon::start();
    approve_and_run(&daemon, "@mila_news", "first");
    let (id, _) = ask(&daemon, &ask_to("@rnila_news", "second", "0.04"));
    let card = daemon.card_of(&id);
    assert_eq!(lines_under_target(text(&card)), [LIKE_MILA_NEWS_RN]);
    // Declined: the edit shows the outcome and keeps the warning the card had.
    let edited = decline_and_read_the_edit(&daemon, &id, &card);
    assert!(
        text(&edited).contains("Outcome: declined"),
        "{}",
        text(&edited)
    );
    assert_eq!(lines_under_target(text(&edited)), [LIKE_MILA_NEWS_RN]);
}

#[test]
fn a_mandate_naming_two_look_alike_targets_is_refused_before_any_card() {
    let daemon = Daemon::start();
    let answer = daemon.request(&mandate_request(&["@mila_news", CYRILLIC_I], 7, "5.00", 10));
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_eq!(answer["reason"], "mandate_terms", "{answer}");
    assert_eq!(
        answer["message"],
        format!(
            "targets[0] \"@mila_news\" and targets[1] \"{CYRILLIC_I}\" look alike (one UTS #39 \
             skeleton) but differ at char 3: U+0069 LATIN SMALL LETTER I in the first, U+0456 \
             CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I in the second"
        )
    );
    daemon.settle();
    let chat: Vec<Option<String>> = daemon.owner_chat().into_iter().map(|m| m.text).collect();
    assert!(chat.is_empty(), "no card: {chat:?}");
}

#[test]
fn the_known_target_itself_is_never_marked() {
    let daemon = Daemon::start();
    let (first, _) = ask(&daemon, &ask_to("@mila_news", "first", "0.04"));
    let card = daemon.card_of(&first);
    assert!(!text(&card).contains('⚠'), "{}", text(&card));
    daemon.press_yes(&card);
    daemon.wait_state(&first, "executed");
    let (second, _) = ask(&daemon, &ask_to("@mila_news", "second", "0.04"));
    let card = daemon.card_of(&second);
    assert!(!text(&card).contains('⚠'), "{}", text(&card));
}

#[test]
fn a_mandate_card_marks_its_targets_and_a_receipt_keeps_the_warning() {
    let daemon = Daemon::start();
    approve_and_run(&daemon, "@mila_news", "first");
    let answer = daemon.request(&mandate_request(
        &["@rnila_news", "@ph\u{3BF}to_news"],
        7,
        "5.00",
        10,
    ));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap();
    let card = daemon.card_of(id);
    let lines: Vec<&str> = text(&card).lines().collect();
    let at = |prefix: &str| lines.iter().position(|l| *l == prefix).unwrap();
    let rn = at("Target: @rnila_news");
    assert_eq!(lines[rn + 1], LIKE_MILA_NEWS_RN);
    let omicron = at("Target: @ph\u{3BF}to_news");
    assert_eq!(
        lines[omicron + 1],
        "⚠ Mixed or unusual letters in this target. Scripts: Latin, Greek. Not ASCII: U+03BF \
         GREEK SMALL LETTER OMICRON"
    );
    // Granted, it covers the look-alike exactly as named, and the receipt marks it the same.
    press(
        &daemon,
        &owner(),
        ChatSpec::private(OWNER),
        &card,
        &button(&card, 0),
    );
    daemon.wait_state(id, "granted");
    let (covered, status) = ask(&daemon, &ask_to("@rnila_news", "covered", "0.04"));
    assert_eq!(status, "running");
    let receipt = receipt_of(&daemon, &covered);
    assert_eq!(lines_under_target(text(&receipt)), [LIKE_MILA_NEWS_RN]);
}

/// A mandate request for ten targets of 200 characters and a reason of `reason` characters.
fn full_mandate(targets: &[String], reason: usize) -> Value {
    json!({"v":1,"op":"mandate","kind":"publish_x","targets":targets,"days":7,
        "usd_per_day":"5.00","actions_per_day":10,"reason":"r".repeat(reason),"wait":false})
}

#[test]
fn a_mandate_card_its_night_warnings_no_longer_let_fit_is_not_sent() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 1")
        .start();
    daemon.set_clock(today_at(23, 30));
    let padding = "x".repeat(189);
    let known = format!("@mila_news{padding}");
    // Ten long targets, the first a look-alike of `known` (rn for m); none approved yet.
    let mut targets = vec![format!("@rnila_news{padding}")];
    targets.extend(
        ["b", "c", "e", "f", "g", "h", "j", "k", "p"].map(|c| format!("@{c}_{}", "y".repeat(197))),
    );
    // The night's one card goes to an ask for `known`.
    let (real, _) = ask(&daemon, &ask_to(&known, "real", "0.04"));
    let real_card = daemon.card_of(&real);
    // The intake measures the mandate card: with the longest reason it does not fit, and says by
    // how much; a reason that leaves 40 units to spare fits, with no warning known yet.
    let answer = daemon.request(&full_mandate(&targets, 1024));
    assert_eq!(answer["reason"], "too_large", "{answer}");
    let message = answer["message"].as_str().unwrap();
    let number = |after: &str| -> usize {
        let rest = &message[message.find(after).unwrap() + after.len()..];
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    let (needs, room) = (number("points and "), number("at most "));
    let answer = daemon.request(&full_mandate(&targets, 1024 - (needs - room) - 40));
    assert_eq!(answer["status"], "pending", "{answer}");
    let mandate = answer["id"].as_str().unwrap().to_owned();
    // Held for the morning. In the night the owner approves `known`.
    daemon.press_yes(&real_card);
    daemon.wait_state(&real, "executed");
    // Morning: drawn now, its first target gets a look-alike line that does not fit. It is not
    // sent, and the request ends.
    daemon.set_clock(today_at(8, 30) + Duration::days(1));
    let status = daemon.wait_state(&mandate, "expired");
    let said = status["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(
            "the card could not be delivered to the owner: it would not fit one message with \
             the look-alike warnings it has now: the card needs "
        ),
        "{status}"
    );
    let chat: Vec<String> = daemon
        .owner_chat()
        .into_iter()
        .filter_map(|m| m.text)
        .collect();
    assert!(
        !chat.iter().any(|text| text.contains(&mandate)),
        "no card: {chat:?}"
    );
}

/// A first-time target whose only non-ASCII character is a symbol or punctuation mark that
/// `confusables.txt` maps to an ASCII one (a fullwidth low line, a division slash, a one dot
/// leader, a hyphen, the estimated sign that reads as an `e`) draws as the ASCII target it
/// imitates, yet gets no warning line: the mixed-script check counts letters, marks and numbers
/// only, so these are never judged, while a fullwidth or mathematical *letter* in the same place
/// is marked. CONTRACT-NOTES ("Other open cards are not compared") relies on a fullwidth
/// character drawing the mixed line by itself to cover two racing asks neither approved.
#[test]
fn a_target_with_a_non_ascii_look_alike_of_ascii_punctuation_is_marked() {
    let daemon = Daemon::start();
    let cases = [
        ("a fullwidth low line for the _", "@mila\u{FF3F}news"),
        ("a one dot leader for the .", "@mila\u{2024}news"),
        ("a hyphen U+2010 for the -", "@mila\u{2010}news"),
        ("the estimated sign for the e", "@mila_n\u{212E}ws"),
        (
            "a division slash hiding the real host",
            "https://bank.example\u{2215}login.evil.example",
        ),
    ];
    // The control: a fullwidth letter in the same place is marked.
    let (id, status) = ask(&daemon, &ask_to("@mila_\u{FF4E}ews", "control", "0.04"));
    assert_eq!(status, "pending", "control: {id}");
    let card = daemon.card_of(&id);
    assert_eq!(
        lines_under_target(text(&card)).len(),
        1,
        "control: a fullwidth letter draws the mixed line\n{}",
        text(&card)
    );
    for (label, target) in cases {
        let (id, status) = ask(&daemon, &ask_to(target, label, "0.04"));
        assert_eq!(status, "pending", "{label}: {id}");
        let card = daemon.card_of(&id);
        assert!(
            !lines_under_target(text(&card)).is_empty(),
            "{label}: {target:?} draws as an ASCII target with no warning line\n{}",
            text(&card)
        );
    }
}
