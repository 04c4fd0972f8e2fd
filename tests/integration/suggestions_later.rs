//! Suggested mandates and held receipts against what changes after them: a mandate granted, a
//! Stop, a config restarted with other limits, a receipt held while its mandate was stopped.

use chrono::{DateTime, Duration, Utc};
use consentd_store::inspect::{Inspect, SuggestedTerms};
use consentd_store::state::RecordState;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{noon_today, Daemon, DaemonBuilder};
use crate::mandates::{ask, ask_to, grant};
use crate::owner::{events, say};
use crate::suggestions::post;
use crate::suggestions_hostile::{approved, daemon, suggested};

/// A minute past `base`, `d` days on.
fn days_on(base: DateTime<Utc>, d: i64) -> DateTime<Utc> {
    base + Duration::days(d) + Duration::minutes(1)
}

/// Open mandates (granted, not stopped, not ended) that name `target`.
fn open_mandates_naming(daemon: &Daemon, target: &str) -> Vec<String> {
    Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .open_mandates()
        .unwrap()
        .into_iter()
        .filter(|mandate| mandate.targets.iter().any(|t| t == target))
        .map(|mandate| mandate.id)
        .collect()
}

/// suggest.rs: "a second mandate beside [an open one] would double [its limits] behind the
/// owner's back" — checked at the Grant too: pressed, then a session's own mandate for @news
/// granted, then the suggested card's Grant opens no second mandate for @news.
#[test]
fn a_suggested_card_granted_after_a_mandate_for_its_target_opens_no_second_one() {
    let daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    daemon.tap(&suggestion, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let suggested_id = asked["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&suggested_id);
    let own = grant(&daemon, &["@news"], 2, "5.00", 5);
    daemon.press_yes(&card);
    daemon.settle();
    let open = open_mandates_naming(&daemon, "@news");
    assert!(
        open.len() <= 1,
        "two open mandates for @news, the session's {own} and the suggested one: {open:?}"
    );
}

/// The rule a session's mandate request meets (`ask_mandate`): "The same open request is
/// joined, not asked again: no second card." A session asks exactly the terms consentd is
/// suggesting (same digest); the owner's press on the suggestion then draws no second card.
#[test]
fn a_suggestion_for_terms_already_asked_joins_the_open_request_and_draws_no_second_card() {
    let daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    let terms = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .suggested_terms()
        .unwrap();
    let SuggestedTerms {
        days,
        usd_per_day,
        actions_per_day: actions,
        digest,
    } = terms[0].clone();
    let usd = usd_per_day.unwrap();
    let mut request = json!({"v":1,"op":"mandate","kind":"publish_x","targets":["@news"],
        "days":days,"actions_per_day":actions,"wait":false});
    if !usd.is_empty() {
        request["usd_per_day"] = Value::String(usd);
    }
    let own = daemon.request(&request);
    assert_eq!(own["status"], "pending", "{own}");
    let same: Vec<Value> = events(&daemon, "mandate_asked")
        .into_iter()
        .filter(|e| e["digest"] == digest.as_str())
        .collect();
    assert_eq!(
        same.len(),
        1,
        "the session asked the suggested terms: {same:?}"
    );
    daemon.tap(&suggestion, 0);
    daemon.settle();
    let same: Vec<Value> = events(&daemon, "mandate_asked")
        .into_iter()
        .filter(|e| e["digest"] == digest.as_str())
        .collect();
    assert_eq!(
        same.len(),
        1,
        "a second card for the same open request (digest {digest}): {same:?}"
    );
}

/// `[limits] max_pending`: a session's mandate request is refused `too_many_pending` once that
/// many asks wait for the owner, and the suggestion's button, which makes a mandate request as
/// if the session had asked, meets the same limit.
#[test]
fn a_suggestion_opens_no_card_beyond_max_pending() {
    let daemon = DaemonBuilder::default()
        .suggestions(3)
        .max_pending(1)
        .start();
    let (_, suggestion) = suggested(&daemon, "@news");
    let (waiting, status) = ask(&daemon, &post("@other", 9));
    assert_eq!(status, "pending", "{waiting}");
    let own = daemon.request(&crate::mandates::mandate_request(&["@news"], 7, "0.50", 5));
    assert_eq!(own["status"], "refused", "{own}");
    daemon.tap(&suggestion, 0);
    daemon.settle();
    let open = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .records()
        .unwrap()
        .iter()
        .filter(|r| matches!(r.state, RecordState::Pending | RecordState::CardShown))
        .count();
    assert!(
        open <= 1,
        "{open} asks wait for the owner; max_pending is 1"
    );
}

/// The operator turns suggestions off (`suggest_mandate_after = 0`) and restarts: a suggestion
/// made before opens no card.
#[test]
fn a_suggestion_made_before_suggestions_were_turned_off_opens_no_card() {
    let mut daemon = daemon();
    let (_, suggestion) = suggested(&daemon, "@news");
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    assert!(config.contains("suggest_mandate_after = 3"), "{config}");
    std::fs::write(
        &daemon.config,
        config.replace("suggest_mandate_after = 3", "suggest_mandate_after = 0"),
    )
    .unwrap();
    let daemon = daemon.restart();
    daemon.tap(&suggestion, 0);
    daemon.settle();
    let asked = events(&daemon, "mandate_asked");
    assert!(
        asked.is_empty(),
        "suggestions are off, and one still opened a card: {asked:?}"
    );
}

/// The 7-day rule runs from the owner's last answer to a suggestion, and a Stop is the plainest
/// answer to a suggested mandate: granted on day 0 and stopped on day 6, the same standing
/// permission is not offered again on day 7.
#[test]
fn a_suggested_mandate_the_owner_stopped_is_not_suggested_again_the_next_day() {
    let daemon = daemon();
    let (_, first) = suggested(&daemon, "@news");
    daemon.tap(&first, 0);
    let asked = daemon.wait_for_event("mandate_asked");
    let id = asked["id"].as_str().unwrap().to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "granted");
    // Days counted from the Grant, the last moment the 7-day rule knows of.
    let opened = daemon.wait_for_event("mandate_open");
    let base: DateTime<Utc> = opened["ts"].as_str().unwrap().parse().unwrap();
    daemon.set_clock(days_on(base, 6));
    let listed = say(&daemon, "/mandates", &id);
    daemon.tap(&listed, 0);
    daemon.wait_for_event("mandate_stop");
    daemon.set_clock(days_on(base, 7));
    for n in 10..13 {
        approved(&daemon, &post("@news", n));
    }
    // The suggestion follows the third run's outcome: given time to come, or its refusal to be
    // logged.
    let third = events(&daemon, "executed").pop().unwrap();
    let decided = format!("no suggestion id={}", third["id"].as_str().unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while events(&daemon, "mandate_suggested").len() < 2
        && !daemon.log().contains(&decided)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let made = events(&daemon, "mandate_suggested");
    assert_eq!(
        made.len(),
        1,
        "suggested again a day after the owner stopped the suggested mandate: {made:?}"
    );
}

/// A receipt held through quiet hours is sent with the evening summary, hours later. The owner
/// stopped its mandate in the morning: the held receipt, not drawn yet, loses its Stop too.
#[test]
fn a_held_receipt_of_a_mandate_stopped_since_comes_without_a_stop() {
    let daemon = DaemonBuilder::default()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 3")
        .start();
    let mandate = grant(&daemon, &["@news"], 2, "5.00", 5);
    // 02:00 the next day.
    daemon.set_clock(noon_today() + Duration::hours(14));
    let (night, status) = ask(
        &daemon,
        &ask_to("@news", "Posted at two in the night", "0.10"),
    );
    assert_eq!(status, "running", "{night}");
    daemon.wait_state(&night, "executed");
    daemon.settle();
    // 10:00: the owner stops the mandate.
    daemon.set_clock(noon_today() + Duration::hours(22));
    let listed = say(&daemon, "/mandates", &mandate);
    daemon.tap(&listed, 0);
    daemon.wait_for_event("mandate_stop");
    // 21:01: the summary releases the held receipt.
    daemon.set_clock(noon_today() + Duration::hours(33) + Duration::minutes(1));
    daemon.wait_for_event("summary_sent");
    crate::suggestions::drain_last_lane(&daemon);
    let told = daemon
        .owner_chat()
        .into_iter()
        .find(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("Posted at two in the night"))
        })
        .expect("the held receipt reached the owner with the summary");
    let stops: Vec<String> = told
        .buttons()
        .iter()
        .filter(|b| b.text == "Stop")
        .map(|b| b.callback_data.clone().unwrap_or_default())
        .collect();
    assert!(
        stops.is_empty(),
        "a receipt shown at 21:00 offers Stop on mandate {mandate}, stopped at 10:00: {stops:?}"
    );
}

/// With `receipts = "summary"` receipts are not sent one by one, only counted in the
/// evening summary (docs/CONFIG.md, `[gate]`). A receipt held overnight under `receipts = "each"`
/// is kept in the outbox
/// across a restart; the owner switches to `receipts = "summary"` and restarts, and the summary
/// only counts it. (The summary is moved to 20:00 too, so that it comes before the hold runs
/// out and the summary, not the sender, decides the row.)
#[test]
fn a_receipt_held_before_receipts_became_summary_only_is_not_sent_one_by_one() {
    let mut daemon = DaemonBuilder::default()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 3\nreceipts = \"each\"")
        .start();
    grant(&daemon, &["@news"], 2, "5.00", 5);
    // 02:00 the next day.
    daemon.set_clock(noon_today() + Duration::hours(14));
    let (night, status) = ask(
        &daemon,
        &ask_to("@news", "Posted at two in the night", "0.10"),
    );
    assert_eq!(status, "running", "{night}");
    daemon.wait_state(&night, "executed");
    wait_held_receipt(&daemon);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    assert!(config.contains("receipts = \"each\""));
    std::fs::write(
        &daemon.config,
        config.replace(
            "receipts = \"each\"",
            "receipts = \"summary\"\nsummary_at = \"20:00\"",
        ),
    )
    .unwrap();
    let daemon = daemon.restart();
    // 20:01: the evening summary, before the receipt's hold (21:00) is over.
    daemon.set_clock(noon_today() + Duration::hours(32) + Duration::minutes(1));
    daemon.wait_for_event("summary_sent");
    crate::suggestions::drain_last_lane(&daemon);
    let sent: Vec<String> = daemon
        .owner_chat()
        .into_iter()
        .filter_map(|m| m.text)
        .filter(|t| t.contains(&night) || t.contains("Posted at two in the night"))
        .collect();
    assert!(
        sent.is_empty(),
        "a receipt sent one by one under receipts = \"summary\": {sent:?}"
    );
}

/// Waits until a receipt is held in the outbox.
fn wait_held_receipt(daemon: &Daemon) {
    let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let held = db
            .outbox()
            .unwrap()
            .iter()
            .filter(|row| {
                row.state == "queued" && row.sound == "receipt" && row.hold_until.is_some()
            })
            .count();
        if held > 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no receipt was held");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `.ci/no-test-hooks` says "The dist build is checked the same way by .ci/dist-check": the
/// shipped build's check looks for every hook it lists.
#[test]
fn the_dist_check_looks_for_every_test_hook() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let no_hooks = std::fs::read_to_string(root.join(".ci/no-test-hooks")).unwrap();
    let dist = std::fs::read_to_string(root.join(".ci/dist-check")).unwrap();
    let line = no_hooks
        .lines()
        .find(|l| l.starts_with("hooks=("))
        .expect("no-test-hooks lists its hooks");
    let hooks: Vec<&str> = line
        .trim_start_matches("hooks=(")
        .trim_end_matches(')')
        .split_whitespace()
        .collect();
    assert!(hooks.contains(&"CONSENTD_TEST_UNPACED"), "{hooks:?}");
    let missing: Vec<&&str> = hooks.iter().filter(|h| !dist.contains(**h)).collect();
    assert!(
        missing.is_empty(),
        ".ci/dist-check does not look for {missing:?} in the shipped binary"
    );
}
