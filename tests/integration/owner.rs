//! The owner's side of the chat (docs/OPERATOR.md, "In the chat"): the notification gate at night,
//! the evening
//! summary once a day with the journal's anchor, and the owner's commands — from the owner and
//! from anyone else.

use chrono::{DateTime, Duration, Utc};
use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, stdout, today_at, Daemon, OWNER};

fn owner() -> UserSpec {
    UserSpec::new(OWNER, "Mila")
}

fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

/// Today (the test's UTC date) at `h:m`.
/// Sends `text` as the owner and waits for a message from the bot whose text has `expected`.
pub(crate) fn say(daemon: &Daemon, text: &str, expected: &str) -> ChatMessage {
    let before = daemon.bot.messages(OWNER).len();
    daemon
        .bot
        .push_text(&owner(), ChatSpec::private(OWNER), text);
    crate::chat::bot_says(daemon, before, expected)
}

pub(crate) fn events(daemon: &Daemon, ev: &str) -> Vec<Value> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["ev"] == ev)
        .collect()
}

/// The card_shown line of record `id`.
fn shown(daemon: &Daemon, id: &str) -> Option<Value> {
    events(daemon, "card_shown")
        .into_iter()
        .find(|e| e["id"] == id)
}

#[test]
fn at_night_one_card_comes_silently_and_the_next_waits_for_the_morning() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 1")
        .start();
    // By day: a mandate, whose card is loud.
    let mandate = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@mila_shop"],"days":2,"usd_per_day":"1.00","actions_per_day":5,"wait":false}));
    let mandate = mandate["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&mandate);
    assert!(!card.disable_notification, "a card by day has sound");
    let grant = card.buttons()[0].callback_data.clone().unwrap();
    daemon
        .bot
        .push_press(&owner(), ChatSpec::private(OWNER), card.message_id, &grant);
    daemon.wait_state(&mandate, "granted");

    daemon.set_clock(today_at(23, 30));
    let first = daemon.request(&good_ask("first at night"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_card = daemon.card_of(&first);
    assert!(
        first_card.disable_notification,
        "the night's first card is silent"
    );
    let second = daemon.request(&good_ask("second at night"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A reply queued after the second card arrives: the sender has passed the card and held it.
    say(&daemon, "/help", "Commands:");
    assert!(shown(&daemon, &second).is_none(), "the second card waits");
    assert_eq!(
        daemon.request(&json!({"v":1,"op":"status","id":second}))["status"],
        "pending"
    );

    // Night: a routine receipt is held for the evening summary, an urgent notice has sound.
    let covered = daemon.request(&json!({"v":1,"op":"ask","kind":"publish_x",
        "target":"@mila_shop","text":"night news","cost_usd":"0.10","wait":false}));
    assert_eq!(covered["status"], "running");
    let covered = covered["id"].as_str().unwrap().to_owned();
    daemon.wait_state(&covered, "executed");
    assert!(
        crate::suggestions::receipt(&daemon, &covered).is_none(),
        "a routine receipt at night is not sent"
    );
    let yes = first_card.buttons()[0].callback_data.clone().unwrap();
    daemon.bot.push_press(
        &stranger(),
        ChatSpec::private(OWNER),
        first_card.message_id,
        &yes,
    );
    daemon.wait_for("the urgent notice", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("was not accepted"))
        })
    });
    let notice = daemon
        .bot
        .messages(OWNER)
        .into_iter()
        .find(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("was not accepted"))
        })
        .unwrap();
    assert!(
        !notice.disable_notification,
        "an urgent notice has sound at night"
    );

    // Morning: the held card is shown, with sound and a fresh ttl.
    let morning = today_at(8, 0) + Duration::days(1);
    daemon.set_clock(morning);
    let card = daemon.card_of(&second);
    assert!(
        !card.disable_notification,
        "after quiet hours the card has sound"
    );
    let line = daemon.wait_for_line("card_shown", &second);
    let expires: DateTime<Utc> = line["expires_at"].as_str().unwrap().parse().unwrap();
    assert!(
        expires >= morning + Duration::minutes(15),
        "the ttl starts when the card is shown: {expires}"
    );
    // The first card's ttl ran out in the night, as it should.
    daemon.wait_state(&first, "expired");
}

#[test]
fn the_evening_summary_goes_once_at_its_time_across_restarts_with_an_anchor_that_verifies() {
    let mut daemon = Daemon::start();
    daemon.set_clock(today_at(20, 59));
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let mut daemon = daemon.restart();
    let refused = daemon.request(&json!({"v":1,"op":"ask","kind":"nope","wait":false}));
    assert_eq!(refused["status"], "refused");
    let (id, _) = {
        let answer = daemon.request(&good_ask("before the summary"));
        (answer["id"].as_str().unwrap().to_owned(), answer)
    };
    daemon.card_of(&id);
    say(&daemon, "/help", "Commands:");

    // Down at 21:00; up at 21:01: the summary goes at start.
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    daemon.set_clock(today_at(21, 1));
    let mut daemon = daemon.restart();
    let sent = daemon.wait_for_event("summary_sent");
    let ts: DateTime<Utc> = sent["ts"].as_str().unwrap().parse().unwrap();
    assert!(ts >= today_at(21, 0), "not before its time: {ts}");
    let anchor = sent["anchor"].as_str().unwrap().to_owned();
    // The anchor is the line just before `summary_sent`.
    let n = sent["n"].as_u64().unwrap();
    let before = daemon
        .journal_events()
        .into_iter()
        .find(|e| e["n"].as_u64() == Some(n - 1))
        .unwrap();
    assert_eq!(
        anchor,
        format!("{}:{}", n - 1, &before["h"].as_str().unwrap()[..12])
    );
    let summary = say(&daemon, "/help", "Commands:");
    drop(summary);
    let text = daemon
        .owner_chat()
        .into_iter()
        .find_map(|m| m.text.filter(|t| t.starts_with("Summary of")))
        .expect("the summary reached the owner");
    for shown in [
        format!("Journal anchor: {anchor}"),
        "Asked: 1.".to_owned(),
        "Refused before a card: 1.".to_owned(),
    ] {
        assert!(
            text.contains(&shown),
            "the summary lacks {shown:?}:\n{text}"
        );
    }
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
        "--anchor",
        &anchor,
    ]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));

    // Another restart the same evening: no second summary.
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    daemon.set_clock(today_at(21, 2));
    let daemon = daemon.restart();
    say(&daemon, "/help", "Commands:");
    assert_eq!(
        events(&daemon, "summary_sent").len(),
        1,
        "exactly once a day"
    );
    let summaries = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.starts_with("Summary of"))
        })
        .count();
    assert_eq!(summaries, 1);
}

#[test]
fn each_command_with_good_and_bad_arguments_from_the_owner() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 2")
        .start();
    let cases: &[(&str, &str)] = &[
        ("/help", "/pending — the asks waiting for your answer"),
        ("/pending", "No asks are waiting."),
        ("/pending now", "This command takes nothing after it."),
        ("/mandates", "No standing permissions are open."),
        ("/quiet 22:00-07:00", "Quiet hours: 22:00–07:00."),
        ("/quiet", "Quiet hours: 22:00–07:00. To change them"),
        ("/quiet 22:00", "Usage: /quiet 23:00-08:00 or /quiet off"),
        ("/quiet off", "Quiet hours are off."),
        ("/nightcards 1", "At most 1 card comes during quiet hours"),
        (
            "/nightcards",
            "At most 1 card comes during quiet hours. To change it",
        ),
        ("/nightcards 3", "Usage: /nightcards N, with N from 0 to 2"),
        (
            "/nightcards many",
            "Usage: /nightcards N, with N from 0 to 2",
        ),
        ("/summary 20:30", "The evening summary comes at 20:30."),
        ("/summary 8pm", "Usage: /summary HH:MM"),
        ("/lang de", "Usage: /lang en, /lang ru or /lang pt"),
        ("/anchor", "Journal anchor: "),
        ("/categories", "Kinds of action:"),
        (
            "hello",
            "I only understand commands and buttons. Send /help for the list.",
        ),
    ];
    for (text, expected) in cases {
        say(&daemon, text, expected);
    }
    let settings: Vec<(String, String)> = events(&daemon, "settings")
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap().to_owned(),
                e["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        settings,
        [
            ("quiet_hours".to_owned(), "22:00-07:00".to_owned()),
            ("quiet_hours".to_owned(), "off".to_owned()),
            ("night_card_limit".to_owned(), "1".to_owned()),
            ("summary_at".to_owned(), "20:30".to_owned()),
        ],
        "every change is journaled, and only the changes"
    );

    // /anchor gives the last line's whole hash.
    let reply = say(&daemon, "/anchor", "Journal anchor: ");
    let anchor = reply.text.unwrap();
    let (full, short) = anchor
        .trim_start_matches("Journal anchor: ")
        .split_once(" (short: ")
        .unwrap();
    let (n, h) = full.split_once(':').unwrap();
    assert_eq!(
        short,
        format!("{n}:{})", &h[..12]),
        "the short form follows"
    );
    let line = daemon
        .journal_events()
        .into_iter()
        .find(|e| e["n"].as_u64() == n.parse().ok())
        .unwrap();
    assert_eq!(line["h"], h, "the anchor names a real line");
    assert_eq!(h.len(), 64);

    // /lang changes the language of everything after it.
    say(&daemon, "/lang ru", "Язык: русский.");
    say(&daemon, "/help", "Команды:");
    assert_eq!(events(&daemon, "settings").last().unwrap()["value"], "ru");

    // The command menu is set in each language.
    let menus: Vec<Option<String>> = daemon
        .bot
        .calls_to("setMyCommands")
        .iter()
        .map(|call| call.param_str("language_code").map(str::to_owned))
        .collect();
    for code in ["en", "ru", "pt"] {
        assert!(
            menus.contains(&Some(code.to_owned())),
            "no menu for {code}: {menus:?}"
        );
    }
    assert!(menus.contains(&None), "no default menu: {menus:?}");
}

#[test]
fn categories_switch_only_by_the_owners_signed_press() {
    let daemon = Daemon::start();
    say(&daemon, "/categories", "Kinds of action:");
    let item = say(&daemon, "/categories", "Post to X (external): on");
    assert_eq!(item.buttons()[0].text, "Off");
    let off = item.buttons()[0].callback_data.clone().unwrap();
    // Someone else's press changes nothing.
    daemon
        .bot
        .push_press(&stranger(), ChatSpec::private(OWNER), item.message_id, &off);
    daemon.settle();
    assert!(events(&daemon, "category_off").is_empty());
    assert_eq!(
        events(&daemon, "press_rejected").last().unwrap()["reason"],
        "not_owner"
    );
    switch(&daemon, &item, &off, "“Post to X” is now off.");
    assert_eq!(events(&daemon, "category_off")[0]["kind"], "publish_x");
    let refused = daemon.request(&good_ask("while off"));
    assert_eq!(refused["reason"], "category_off");
    let item = say(&daemon, "/categories", "Post to X (external): off");
    assert_eq!(item.buttons()[0].text, "On");
    let on = item.buttons()[0].callback_data.clone().unwrap();
    switch(&daemon, &item, &on, "“Post to X” is now on.");
    daemon.wait_for_event("category_on");
    let answer = daemon.ask_once_on(&good_ask("on again"));
    assert_eq!(answer["status"], "pending", "{answer}");
}

/// The owner presses `data` on a `/categories` line and reads `reply`.
fn switch(daemon: &Daemon, item: &ChatMessage, data: &str, reply: &str) {
    daemon
        .bot
        .push_press(&owner(), ChatSpec::private(OWNER), item.message_id, data);
    daemon.wait_for("the switch's reply", |bot| {
        bot.messages(OWNER)
            .iter()
            .any(|m| m.text.as_deref() == Some(reply))
    });
}

#[test]
fn nobody_but_the_owner_changes_a_setting() {
    let daemon = Daemon::start();
    for text in [
        "/quiet off",
        "/nightcards 0",
        "/summary 01:00",
        "/lang ru",
        "/anchor",
    ] {
        daemon
            .bot
            .push_text(&stranger(), ChatSpec::private(777), text);
    }
    daemon
        .bot
        .push_text(&stranger(), ChatSpec::group(-1_005), "/quiet off");
    daemon.settle();
    assert!(events(&daemon, "settings").is_empty());
    let to_stranger: Vec<String> = daemon
        .bot
        .messages(777)
        .into_iter()
        .filter(|m| m.outgoing)
        .filter_map(|m| m.text)
        .collect();
    assert_eq!(
        to_stranger,
        ["Sorry, this bot answers only its owner."],
        "one polite line, nothing else"
    );
    assert!(
        daemon.owner_chat().is_empty(),
        "the owner's chat is untouched"
    );
}

#[test]
fn with_receipts_in_the_summary_a_covered_success_sends_no_receipt() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"off\"\nreceipts = \"summary\"")
        .start();
    let mandate = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@mila_shop"],"days":1,"usd_per_day":"1.00","actions_per_day":5,"wait":false}));
    let mandate = mandate["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&mandate);
    let grant = card.buttons()[0].callback_data.clone().unwrap();
    daemon
        .bot
        .push_press(&owner(), ChatSpec::private(OWNER), card.message_id, &grant);
    daemon.wait_state(&mandate, "granted");
    let covered = daemon.request(&json!({"v":1,"op":"ask","kind":"publish_x",
        "target":"@mila_shop","text":"quietly","cost_usd":"0.10","wait":false}));
    let covered = covered["id"].as_str().unwrap().to_owned();
    daemon.wait_state(&covered, "executed");
    // Rows go out in order: once this reply is in, the receipt would have been too.
    say(&daemon, "/help", "Commands:");
    assert!(
        !daemon
            .owner_chat()
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains(&covered))),
        "no receipt one by one"
    );
}

#[test]
fn a_card_held_for_the_morning_comes_at_once_when_the_owner_turns_quiet_hours_off() {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 0")
        .start();
    daemon.set_clock(today_at(23, 30));
    let id = daemon.request(&good_ask("held"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    say(&daemon, "/help", "Commands:");
    assert!(shown(&daemon, &id).is_none(), "a night limit of 0 holds it");
    say(
        &daemon,
        "/pending",
        &format!("{id} · Post to X · not shown yet"),
    );
    say(&daemon, "/quiet off", "Quiet hours are off.");
    let card = daemon.card_of(&id);
    assert!(!card.disable_notification, "no quiet hours: with sound");
}

/// The `tidy` kind, on or off in the config; its command is `tidy.sh` in the daemon's dir, which
/// a test may take away or put back.
fn tidy_kind(enabled: bool) -> String {
    format!(
        "\n[categories.tidy]\nlabel = {{ en = \"Tidy up\" }}\nclass = \"external\"\n\
         enabled = {enabled}\ncommand = [\"{{dir}}/tidy.sh\"]\n"
    )
}

/// Writes the `tidy` kind's command into `dir`.
fn put_tidy_command(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("tidy.sh");
    std::fs::write(&path, "#!/bin/sh\necho tidied\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A daemon with the `tidy` kind, `enabled` in its config, its command in place or not.
fn start_with_tidy(enabled: bool, command: bool) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    if command {
        put_tidy_command(dir.path());
    }
    Daemon::builder()
        .config_tail(&tidy_kind(enabled))
        .try_start_in(dir)
        .unwrap_or_else(|failure| panic!("{failure}"))
}

/// The `tidy` line of a new `/categories` list, which says the kind is `state`.
fn tidy_line(daemon: &Daemon, state: &str) -> ChatMessage {
    say(
        daemon,
        "/categories",
        &format!("Tidy up (external): {state}"),
    )
}

#[test]
fn serve_refuses_to_start_over_a_kind_the_owner_turned_on_that_cannot_run() {
    // Off in the config; the owner turns it on; then its command goes away.
    let mut daemon = start_with_tidy(false, true);
    daemon.tap(&tidy_line(&daemon, "off"), 0);
    daemon.wait_for_event("category_on");
    let command = daemon.dir.path().join("tidy.sh");
    std::fs::remove_file(&command).unwrap();
    daemon.stop_with(Signal::SIGTERM);
    let failure = daemon
        .try_restart_with(Vec::new())
        .expect_err("serve started with a kind that is on and cannot run");
    let refusal = format!(
        "  categories.tidy.command: {} does not exist",
        command.display()
    );
    assert!(
        failure.message.lines().any(|line| line == refusal),
        "{failure}"
    );
}

#[test]
fn serve_starts_over_a_kind_the_owner_turned_off_that_cannot_run() {
    // On in the config; the owner turns it off; then its command goes away.
    let mut daemon = start_with_tidy(true, true);
    daemon.tap(&tidy_line(&daemon, "on"), 0);
    daemon.wait_for_event("category_off");
    std::fs::remove_file(daemon.dir.path().join("tidy.sh")).unwrap();
    daemon.stop_with(Signal::SIGTERM);
    let daemon = daemon.restart();
    let log = daemon.log();
    assert!(
        log.lines().any(|line| line.contains("WARN")
            && line.contains("categories.tidy.command: ")
            && line.contains("the category is off")),
        "the note is in the log: {log}"
    );
}

#[test]
fn the_owners_on_for_a_kind_that_cannot_run_is_refused_and_says_what_to_fix() {
    let daemon = start_with_tidy(false, false);
    let line = tidy_line(&daemon, "off");
    let answers = daemon.bot.callback_answers().len();
    daemon.tap(&line, 0);
    let toast = "“Tidy up” cannot be turned on: fix categories.tidy.command first \
                 (consentd check-config says what is wrong).";
    daemon.wait_for("the toast", |bot| {
        bot.callback_answers()
            .iter()
            .skip(answers)
            .any(|a| a.text.as_deref() == Some(toast))
    });
    daemon.settle();
    let rejected = events(&daemon, "press_rejected");
    assert_eq!(
        (
            rejected.len(),
            &rejected[0]["reason"],
            &rejected[0]["subject"]
        ),
        (1, &json!("not_open"), &json!("tidy"))
    );
    assert!(events(&daemon, "category_on").is_empty());
    // Once the command is in place, the same button turns it on.
    put_tidy_command(daemon.dir.path());
    daemon.tap(&line, 0);
    assert_eq!(daemon.wait_for_event("category_on")["kind"], "tidy");
}

/// Off holds from the moment the owner can read that it does: their reply leaves when the switch
/// commits, before its journal line is in the file (each journal turn held back here a second),
/// and an ask or a mandate request that comes after the reply must already find the kind off.
#[test]
fn a_kind_is_off_for_an_ask_as_soon_as_the_owner_is_told_so() {
    let daemon = Daemon::builder()
        .env("CONSENTD_TEST_JOURNAL_DELAY_MS", "1000")
        .start();
    let item = say(&daemon, "/categories", "Post to X (external): on");
    let off = item.buttons()[0].callback_data.clone().unwrap();
    switch(&daemon, &item, &off, "“Post to X” is now off.");
    // What `kinds` reads, the daemon's copy of the switches, says off as well.
    let kinds = daemon.request(&json!({"v":1,"op":"kinds"}));
    let publish_x = kinds["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "publish_x")
        .unwrap_or_else(|| panic!("{kinds}"));
    assert_eq!(publish_x["enabled"], false, "{kinds}");
    let refused = daemon.request(&good_ask("right after the reply"));
    assert_eq!(refused["reason"], "category_off", "{refused}");
    let mandate = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@mila_news"],"days":7,"usd_per_day":"0.50","actions_per_day":5,
        "wait":false}));
    assert_eq!(mandate["reason"], "category_off", "{mandate}");
    assert_eq!(events(&daemon, "category_off").len(), 1);
    assert!(events(&daemon, "mandate_asked").is_empty());
}
