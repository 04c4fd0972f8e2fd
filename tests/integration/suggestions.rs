//! Suggested mandates end to end: the third yes to the same kind and target is followed by one
//! silent suggestion; its button opens an ordinary mandate card that only the owner's Grant
//! opens; kinds that never take a mandate are never suggested; a suggestion is not made again
//! within 7 days, and at most two a day in all (for different kinds or targets). And receipts that do not nag.

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{noon_today, Daemon, DaemonBuilder, OWNER};
use crate::mandates::{ask, ask_to, button, owner, press};
use crate::owner::events;

/// A destructive kind with a target, and a kind whose command always fails.
const EXTRA_KINDS: &str = r#"
[categories.delete_post]
label = { en = "Delete a post" }
class = "destructive"
enabled = true
target = "required"
command = ["/bin/sh", "{dir}/action.sh"]

[categories.fail_post]
label = { en = "Post somewhere broken" }
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
command = ["/bin/false"]
"#;

fn daemon() -> Daemon {
    DaemonBuilder::default()
        .suggestions(3)
        .config_tail(EXTRA_KINDS)
        .start()
}

/// The action letter of callback data (`1.<kid>.<a>.<subject>.<tag>`).
fn letter(data: &str) -> &str {
    data.split('.').nth(2).unwrap_or_default()
}

/// The bot's suggestions in the owner's chat (in English, the owner's language here), oldest
/// first.
pub(crate) fn suggestions(daemon: &Daemon) -> Vec<ChatMessage> {
    suggestions_in(daemon.owner_chat())
}

fn suggestions_in(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let suggests = |m: &ChatMessage| {
        m.outgoing
            && m.text
                .as_deref()
                .is_some_and(|t| t.starts_with("You said yes"))
    };
    messages.into_iter().filter(suggests).collect()
}

/// Asks `request`, says yes on its card, and waits until it ran; returns its id.
fn approved(daemon: &Daemon, request: &Value) -> String {
    let (id, status) = ask(daemon, request);
    assert_eq!(status, "pending", "{id}");
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    id
}

/// A post to `target` at $0.10, its text numbered `n` so that no two are the same action.
pub(crate) fn post(target: &str, n: usize) -> Value {
    ask_to(target, &format!("News item {n} for {target}"), "0.10")
}

/// Says yes `times` to posts to `target`, then lets the daemon settle.
fn approve_posts(daemon: &Daemon, target: &str, times: usize) {
    for n in 0..times {
        approved(daemon, &post(target, n));
    }
    daemon.settle();
}

/// Waits for the `count`-th `mandate_suggested` line and its message, and returns the line.
fn wait_suggested(daemon: &Daemon, count: usize) -> Value {
    daemon.wait_for(&format!("{count} suggestions"), |bot| {
        suggestions_in(bot.messages(OWNER)).len() >= count
    });
    events(daemon, "mandate_suggested")[count - 1].clone()
}

#[test]
fn the_third_yes_is_followed_by_one_silent_suggestion_and_the_second_is_not() {
    let daemon = daemon();
    approve_posts(&daemon, "@news", 2);
    let third = approved(&daemon, &post("@news", 3));
    let line = wait_suggested(&daemon, 1);
    let journal = daemon.journal_events();
    let at = |pred: &dyn Fn(&Value) -> bool| journal.iter().position(pred).unwrap();
    let third_ran = at(&|e| e["ev"] == "executed" && e["id"] == third.as_str());
    let suggested = at(&|e| e["ev"] == "mandate_suggested");
    assert!(
        suggested > third_ran,
        "the suggestion follows the third yes's outcome"
    );
    assert_eq!(events(&daemon, "mandate_suggested").len(), 1);
    // Counts and amounts only: three posts at $0.10 in one day, rounded up to the next step.
    assert_eq!(line["kind"], "publish_x");
    assert_eq!(line["approvals"], 3);
    assert_eq!(line["targets"], 1);
    assert_eq!(line["days"], 7);
    assert_eq!(line["actions_per_day"], 5);
    assert_eq!(line["usd_per_day"], "0.50");
    assert!(
        !line.to_string().contains("@news"),
        "no text in the journal: {line}"
    );
    let message = suggestions(&daemon).pop().unwrap();
    assert!(message.disable_notification, "a suggestion is silent");
    let text = message.text.unwrap();
    assert!(text.contains("@news") && text.contains('3'), "{text}");
}

#[test]
fn the_suggestions_button_opens_an_ordinary_mandate_card_that_only_the_owners_grant_opens() {
    let daemon = daemon();
    approve_posts(&daemon, "@news", 3);
    wait_suggested(&daemon, 1);
    let message = suggestions(&daemon).pop().unwrap();
    let data = button(&message, 0);
    // The tag's first character changed (its last carries padding bits, which would make the
    // data malformed rather than forged).
    let (head, tag) = data.rsplit_once('.').unwrap();
    let first = if tag.starts_with('A') { 'B' } else { 'A' };
    let forged_tag = format!("{head}.{first}{}", &tag[1..]);
    let other_subject = data.replace(data.split('.').nth(3).unwrap(), "m_00000000000000000000");
    let as_grant = data.replacen(".m.", ".g.", 1);
    let stranger = UserSpec::new(777, "Eve");
    let mila = owner();
    type Case<'a> = (&'a str, &'a UserSpec, ChatSpec, String, &'a str);
    let cases: Vec<Case> = vec![
        (
            "a stranger's press",
            &stranger,
            ChatSpec::private(777),
            data.clone(),
            "not_owner",
        ),
        (
            "the owner in a group",
            &mila,
            ChatSpec::group(-100),
            data.clone(),
            "not_private_chat",
        ),
        (
            "a changed tag",
            &mila,
            ChatSpec::private(OWNER),
            forged_tag,
            "bad_tag",
        ),
        (
            "another subject",
            &mila,
            ChatSpec::private(OWNER),
            other_subject,
            "unknown_subject",
        ),
        (
            "its tag under Grant",
            &mila,
            ChatSpec::private(OWNER),
            as_grant,
            "malformed",
        ),
    ];
    for (name, from, chat, data, reason) in cases {
        let before = events(&daemon, "press_rejected").len();
        press(&daemon, from, chat, &message, &data);
        daemon.settle();
        let rejected = events(&daemon, "press_rejected");
        assert_eq!(rejected.len(), before + 1, "{name}: journaled as rejected");
        assert_eq!(rejected[before]["reason"], reason, "{name}");
        assert!(
            events(&daemon, "mandate_asked").is_empty(),
            "{name}: no card was opened"
        );
    }
    // The owner's genuine press: an ordinary mandate card, and nothing open until Grant.
    daemon.tap(&message, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    assert_eq!(
        asked["suggestion"],
        events(&daemon, "mandate_suggested")[0]["id"]
    );
    assert_eq!(
        asked["digest"],
        events(&daemon, "mandate_suggested")[0]["digest"]
    );
    let id = asked["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let letters: Vec<String> = card
        .buttons()
        .iter()
        .map(|b| letter(b.callback_data.as_deref().unwrap()).to_owned())
        .collect();
    assert_eq!(
        letters,
        ["g", "d", "w"],
        "Grant, Decline and Decline, and say why…, as on any mandate card"
    );
    assert!(card.text.as_deref().unwrap().contains("@news"));
    assert_eq!(daemon.wait_state(&id, "card_shown")["status"], "card_shown");
    // Its button pressed again opens nothing more.
    press(&daemon, &owner(), ChatSpec::private(OWNER), &message, &data);
    daemon.settle();
    assert_eq!(
        events(&daemon, "mandate_asked").len(),
        1,
        "one card per suggestion"
    );
    assert!(
        events(&daemon, "mandate_open").is_empty(),
        "no mandate before Grant"
    );
    // A post to @news still needs a card until then.
    let (before_grant, status) = ask(&daemon, &post("@news", 9));
    assert_eq!(status, "pending", "{before_grant} waits for its card");
    daemon.press_no(&daemon.card_of(&before_grant));
    daemon.wait_state(&before_grant, "declined");
    // The owner's Grant opens exactly the suggested terms; the next post runs on it.
    daemon.press_yes(&card);
    daemon.wait_state(&id, "granted");
    let open = daemon.wait_for_event("mandate_open");
    assert_eq!(
        (open["actions_per_day"].clone(), open["usd_per_day"].clone()),
        (json!(5), json!("0.50"))
    );
    let (covered, status) = ask(&daemon, &post("@news", 10));
    assert_ne!(status, "pending", "{covered} runs under the mandate");
    daemon.wait_state(&covered, "executed");
}

#[test]
fn kinds_that_never_take_a_mandate_are_never_suggested() {
    let daemon = daemon();
    for n in 0..3 {
        approved(
            &daemon,
            &json!({"v":1,"op":"ask","kind":"delete_post","target":"@news","wait":false}),
        );
        approved(
            &daemon,
            &json!({"v":1,"op":"ask","kind":"send_letter",
                "fields":{"to":"a@example.org","subject":format!("Letter {n}")},"wait":false}),
        );
    }
    daemon.settle();
    assert!(
        events(&daemon, "mandate_suggested").is_empty(),
        "destructive and not mandate_ok"
    );
    // A kind that takes one is suggested the same day: the two above used no day's suggestion.
    approve_posts(&daemon, "@news", 3);
    let line = wait_suggested(&daemon, 1);
    assert_eq!(line["kind"], "publish_x");
    assert_eq!(events(&daemon, "mandate_suggested").len(), 1);
}

#[test]
fn suggestions_switched_off_are_never_made() {
    let daemon = DaemonBuilder::default().suggestions(0).start();
    approve_posts(&daemon, "@news", 4);
    assert!(events(&daemon, "mandate_suggested").is_empty());
    assert!(suggestions(&daemon).is_empty());
}

#[test]
fn a_declined_or_ignored_suggestion_waits_7_days_and_two_a_day_in_all() {
    let daemon = daemon();
    let day = |d: i64| daemon.set_clock(noon_today() + chrono::Duration::days(d));
    approve_posts(&daemon, "@a", 3);
    wait_suggested(&daemon, 1);
    // @b reaches 3 yeses the same day: a second suggestion, for another target.
    approve_posts(&daemon, "@b", 3);
    let second = wait_suggested(&daemon, 2);
    assert_eq!(second["approvals"], 3, "a second today, for @b");
    // @c too: two a day in all, so not a third.
    approve_posts(&daemon, "@c", 3);
    assert_eq!(events(&daemon, "mandate_suggested").len(), 2, "two a day");
    // The owner opens @a's and declines its card; @b's is ignored.
    daemon.tap(&suggestions(&daemon)[0], 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let id = asked["id"].as_str().unwrap();
    daemon.press_no(&daemon.card_of(id));
    daemon.wait_state(id, "declined");
    // The next day @c's next yes is suggested (the day's limit is over).
    day(1);
    approve_posts(&daemon, "@c", 1);
    let third = wait_suggested(&daemon, 3);
    assert_eq!(third["approvals"], 4);
    // Within the week none comes again, however many yeses.
    day(3);
    approve_posts(&daemon, "@a", 3);
    approve_posts(&daemon, "@b", 1);
    approve_posts(&daemon, "@c", 1);
    assert_eq!(
        events(&daemon, "mandate_suggested").len(),
        3,
        "not again within 7 days"
    );
    // After 7 days @a's yeses of the last week suggest it again.
    day(8);
    approve_posts(&daemon, "@a", 1);
    let fourth = wait_suggested(&daemon, 4);
    assert_eq!(fourth["approvals"], 4, "day 3's three and today's");
}

/// Grants `publish_x` on `target` for `actions` a day and returns the mandate's id.
fn grant_posts(daemon: &Daemon, target: &str, actions: u32) -> String {
    crate::mandates::grant(daemon, &[target], 2, "5.00", actions)
}

/// Waits until every message queued so far in the sender's last lane (receipts, notices,
/// replies) has been sent or held: the reply to a `/quiet` the owner sends now is queued after
/// them in that lane, which keeps its order.
pub(crate) fn drain_last_lane(daemon: &Daemon) {
    let replies = |messages: Vec<ChatMessage>| {
        messages
            .iter()
            .filter(|m| {
                m.outgoing
                    && m.text
                        .as_deref()
                        .is_some_and(|t| t.starts_with("Quiet hours"))
            })
            .count()
    };
    let before = replies(daemon.owner_chat());
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), "/quiet");
    daemon.wait_for("the reply to /quiet", |bot| {
        replies(bot.messages(OWNER)) > before
    });
}

/// The message naming covered ask `id`, once the last lane has drained; `None` when none was
/// sent.
pub(crate) fn receipt(daemon: &Daemon, id: &str) -> Option<ChatMessage> {
    drain_last_lane(daemon);
    daemon
        .owner_chat()
        .into_iter()
        .find(|m| m.text.as_deref().is_some_and(|t| t.contains(id)))
}

#[test]
fn receipts_are_silent_by_day_held_at_night_and_told_for_the_last_of_the_day_and_failures() {
    let daemon = DaemonBuilder::default()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 3")
        .config_tail(EXTRA_KINDS)
        .start();
    grant_posts(&daemon, "@news", 3);
    let covered = |n: usize| {
        let (id, _) = ask(&daemon, &post("@news", n));
        daemon.wait_state(&id, "executed");
        id
    };
    // By day: the first two are silent, the third (the last the mandate allows today) is told.
    let silent: Vec<bool> = (0..3)
        .map(|n| {
            let id = covered(n);
            let found = crate::mandates::receipt_of(&daemon, &id);
            found.disable_notification
        })
        .collect();
    assert_eq!(
        silent,
        [true, true, false],
        "routine, routine, the day's last"
    );
    // At night (02:00 the next day) a routine receipt is not sent at all.
    daemon.pass_time_to(noon_today() + chrono::Duration::hours(14));
    let night = covered(4);
    assert!(receipt(&daemon, &night).is_none(), "held for the summary");
    // A failure under a mandate is told by day, with sound.
    daemon.pass_time_to(noon_today() + chrono::Duration::days(1));
    let grant = daemon.request(
        &json!({"v":1,"op":"mandate","kind":"fail_post","targets":["@x"],
        "days":1,"actions_per_day":5,"reason":"Broken","wait":false}),
    );
    let mandate = grant["id"].as_str().unwrap();
    daemon.press_yes(&daemon.card_of(mandate));
    daemon.wait_state(mandate, "granted");
    let (failed, _) = ask(
        &daemon,
        &json!({"v":1,"op":"ask","kind":"fail_post","target":"@x",
        "text":"Will fail","wait":false}),
    );
    daemon.wait_state(&failed, "failed");
    let told = crate::mandates::receipt_of(&daemon, &failed);
    assert!(
        !told.disable_notification,
        "a failure is told with sound by day"
    );
}

/// A mandate the owner opened from a suggestion has its term on both clocks too, from the press
/// on the suggestion: with the wall clock where it was (stepped back) and eight days gone on the
/// monotonic clock, longer than any term, a post to its target needs a card again.
#[test]
fn a_suggested_mandates_term_is_not_stretched_by_a_wall_clock_stepped_back() {
    let daemon = daemon();
    approve_posts(&daemon, "@news", 3);
    wait_suggested(&daemon, 1);
    let message = suggestions(&daemon).pop().unwrap();
    daemon.tap(&message, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let id = asked["id"].as_str().unwrap().to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "granted");
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall, monotonic + 8 * 24 * 3600);
    let (late, status) = ask(&daemon, &post("@news", 11));
    assert_eq!(
        status, "pending",
        "{late} was covered eight days into the suggested mandate's term"
    );
}
