//! Telegram refusing the bot itself — 409 Conflict (another poller, a webhook set) and 401
//! Unauthorized (a revoked token) — never stops the daemon: it keeps its socket, asks are
//! recorded and wait (nothing runs without a press), the log says once what to do, and once
//! Telegram answers again the owner is told how long they were cut off and the cards follow.
//! The daemon runs with `CONSENTD_TEST_FAST_RETRY`, so its retries come within 200 ms.

use consentd_emulator::{Emulator, Outcome, Scripted};

use crate::consent::{ask_waiting, waiting};
use crate::fixture::{Daemon, OWNER};

const CONFLICT_LINE: &str =
    "another consentd or another program is polling this bot's token; stop it";
const REVOKED_LINE: &str = "the bot token was revoked or is wrong: make a new one with \
    @BotFather and put it in token_file";
const WEBHOOK_LINE: &str = "remove it with the Bot API's deleteWebhook";

/// Calls to `method` (lower case) answered with `code`.
fn refused(bot: &Emulator, method: &str, code: u16) -> usize {
    bot.calls_to(method)
        .iter()
        .filter(|call| matches!(call.outcome, Some(Outcome::Error { code: c, .. }) if c == code))
        .count()
}

fn fast_retrying() -> Daemon {
    Daemon::builder()
        .env("CONSENTD_TEST_FAST_RETRY", "1")
        .start()
}

/// The owner's notice that the bot is back, once it is in the chat.
fn back_notice(daemon: &Daemon) -> String {
    let find = |bot: &Emulator| {
        bot.messages(OWNER)
            .into_iter()
            .filter(|m| m.outgoing)
            .filter_map(|m| m.text)
            .find(|text| text.contains("cut off from you"))
    };
    daemon.wait_for("the notice that the bot is back", |bot| find(bot).is_some());
    find(&daemon.bot).unwrap()
}

#[test]
fn a_409_then_a_401_never_stop_the_daemon_and_the_owner_hears_how_long() {
    let mut daemon = fast_retrying();
    daemon.bot.outage("getUpdates", Scripted::conflict());
    daemon.bot.outage("sendMessage", Scripted::conflict());
    daemon.wait_for("polls refused with 409", |bot| {
        refused(bot, "getupdates", 409) >= 3
    });
    // An ask meanwhile is recorded and waits on its connection; its card cannot go.
    let (id, answer) = ask_waiting(&daemon, waiting("asked while cut off"));
    daemon.wait_for("the card's send refused with 409", |bot| {
        refused(bot, "sendmessage", 409) >= 2
    });
    daemon.advance_clock(5 * 60 + 10);
    daemon.bot.outage("getUpdates", Scripted::unauthorized());
    daemon.bot.outage("sendMessage", Scripted::unauthorized());
    daemon.wait_for("polls and sends refused with 401", |bot| {
        refused(bot, "getupdates", 401) >= 3 && refused(bot, "sendmessage", 401) >= 2
    });
    assert!(daemon.is_running(), "{}", daemon.log());
    let status = daemon.request(&serde_json::json!({"v":1,"op":"status","id":id}));
    assert!(
        matches!(status["status"].as_str(), Some("pending" | "card_shown")),
        "{status}"
    );
    let shown = daemon.owner_chat().iter().any(|m| !m.buttons().is_empty());
    assert!(
        !shown,
        "no card reached the chat while Telegram refused the bot"
    );
    assert!(
        !answer.is_finished(),
        "the waiting session's connection was dropped"
    );
    assert_eq!(daemon.runs(), 0, "nothing runs without a press");

    daemon.bot.end_outage("getUpdates");
    daemon.bot.end_outage("sendMessage");
    let notice = back_notice(&daemon);
    assert!(notice.contains("for 5 minutes"), "{notice}");
    assert!(
        notice.contains("Telegram refused the bot's token"),
        "{notice}"
    );
    let card = daemon.card_of(&id);
    assert_eq!(daemon.runs(), 0, "nothing runs without a press");
    daemon.press_yes(&card);
    let answer = answer.join().unwrap();
    assert_eq!(answer["status"], "executed", "{answer}");
    assert_eq!(daemon.runs(), 1);
    let cards = daemon
        .bot
        .calls_to("sendmessage")
        .iter()
        .filter(|call| call.is_ok() && call.params.get("reply_markup").is_some())
        .filter(|call| call.param_str("text").is_some_and(|t| t.contains(&id)))
        .count();
    assert_eq!(cards, 1, "the card was sent once");
    let log = daemon.log();
    assert_eq!(log.matches(CONFLICT_LINE).count(), 1, "{log}");
    assert_eq!(log.matches(REVOKED_LINE).count(), 1, "{log}");
    assert!(daemon.is_running());
}

#[test]
fn a_webhook_set_at_start_is_said_once_and_waited_out() {
    let mut daemon = fast_retrying();
    daemon.stop_with(nix::sys::signal::Signal::SIGTERM);
    daemon.bot.set_webhook("https://example.org/hook");
    let mut daemon = daemon.restart_with(vec![(
        "CONSENTD_TEST_FAST_RETRY".to_owned(),
        "1".to_owned(),
    )]);
    daemon.wait_for("polls refused while the webhook is set", |bot| {
        refused(bot, "getupdates", 409) >= 3
    });
    let log = daemon.log();
    assert_eq!(log.matches(WEBHOOK_LINE).count(), 1, "{log}");
    assert!(daemon.is_running(), "{log}");
    let (id, answer) = ask_waiting(&daemon, waiting("asked while a webhook is set"));
    daemon.bot.set_webhook("");
    let notice = back_notice(&daemon);
    assert!(
        notice.contains("a webhook was set for this bot"),
        "{notice}"
    );
    let card = daemon.card_of(&id);
    daemon.press_no(&card);
    assert_eq!(answer.join().unwrap()["status"], "declined");
    assert_eq!(daemon.runs(), 0);
    assert_eq!(daemon.log().matches(WEBHOOK_LINE).count(), 1);
}
