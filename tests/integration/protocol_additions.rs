//! The protocol additions of docs/PROTOCOL.md over the socket of a real daemon: `kinds` lists
//! exactly the config's categories with their rules; `withdraw` from each state (only an open
//! ask is withdrawn, its card edited without buttons, a waiting session told, and a press on the
//! old card changes nothing), never another peer's; an approval-only category (`mode =
//! "approve"`) ends `approved` on a Yes or under a mandate and never runs anything; an ask's own
//! `ttl`, bounded and honoured even by a card held for the morning; and `origin`, shown on its
//! own line, checked like every shown value and part of the digest. After each case the journal
//! verifies.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use consentd_emulator::ChatMessage;
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, Daemon, DaemonBuilder, BIN, OWNER};
use crate::mandates::{events_of, receipt_of};

/// An approval-only category: the agent runs its command line itself once approved.
const SHELL: &str = r#"
[categories.shell]
label = { en = "Run a shell command", ru = "Выполнить команду", pt = "Executar um comando" }
class = "external"
mode = "approve"
enabled = true
mandate_ok = true
text = "required"
fields = ["cwd"]
"#;

fn daemon() -> DaemonBuilder {
    Daemon::builder().config_tail(SHELL)
}

/// `consentd journal verify` accepts the daemon's journal, and (when given) a line names `id`.
fn journal_verifies(daemon: &Daemon, case: &str, id: Option<&str>) {
    let journal = daemon.journal.to_str().unwrap().to_owned();
    let verify = consentd(&["journal", "verify", &journal]);
    assert_eq!(verify.status.code(), Some(0), "{case}: {verify:?}");
    if let Some(id) = id {
        assert!(
            daemon.journal_events().iter().any(|e| e["id"] == id),
            "{case}: no journal line names {id}"
        );
    }
}

fn shell_ask(text: &str) -> Value {
    json!({"v":1,"op":"ask","kind":"shell","text":text,"fields":{"cwd":"~/src/blog"},"wait":false})
}

fn id_of(answer: &Value) -> String {
    answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned()
}

fn withdraw(daemon: &Daemon, id: &str) -> Value {
    daemon.request(&json!({"v":1,"op":"withdraw","id":id}))
}

/// The message `card` as the owner's chat shows it now.
fn now_showing(daemon: &Daemon, card: &ChatMessage) -> ChatMessage {
    daemon.bot.message(OWNER, card.message_id).unwrap()
}

/// Waits until `card` has lost its buttons and shows `words`.
fn wait_edited(daemon: &Daemon, card: &ChatMessage, words: &str) -> ChatMessage {
    daemon.wait_for(&format!("the card to say {words:?}"), |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains(words))
        })
    });
    now_showing(daemon, card)
}

/// Asks for a mandate of `kind` (no targets, no money) and grants it as the owner.
fn grant_kind(daemon: &Daemon, kind: &str, days: u32, actions: u32) {
    let answer = daemon.request(&json!({"v":1,"op":"mandate","kind":kind,"days":days,
        "actions_per_day":actions,"wait":false}));
    let id = id_of(&answer);
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "granted");
}

#[test]
fn kinds_lists_exactly_the_configured_categories_with_their_rules() {
    let daemon = daemon().start();
    let answer = daemon.request(&json!({"v":1,"op":"kinds"}));
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["card_ttl_seconds"], 900);
    let kinds: Vec<&str> = answer["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["publish_x", "send_letter", "shell", "wipe_drafts"]);
    let kind = |name: &str| {
        answer["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kind"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        kind("publish_x"),
        json!({"kind":"publish_x","label":"Post to X",
            "labels":{"en":"Post to X","ru":"Пост в X","pt":"Post no X"},"class":"external",
            "mode":"run","enabled":true,"mandate_ok":true,"target":"required","text":"required",
            "fields":["reply_to"],"attachments":2,"cost":"request"})
    );
    assert_eq!(
        kind("shell"),
        json!({"kind":"shell","label":"Run a shell command",
            "labels":{"en":"Run a shell command","ru":"Выполнить команду","pt":"Executar um comando"},
            "class":"external","mode":"approve","enabled":true,"mandate_ok":true,"target":"none",
            "text":"required","fields":["cwd"],"attachments":0,"cost":"none"})
    );
    let wipe = kind("wipe_drafts");
    assert_eq!(
        (&wipe["class"], &wipe["enabled"], &wipe["mandate_ok"]),
        (&json!("destructive"), &json!(false), &json!(false))
    );
    // Only the envelope: anything more is refused, and nothing is recorded.
    let refused = daemon.request(&json!({"v":1,"op":"kinds","kind":"shell"}));
    assert_eq!(
        (&refused["status"], &refused["reason"]),
        (&json!("refused"), &json!("bad_request"))
    );
    assert!(refused.get("id").is_none(), "{refused}");
    journal_verifies(&daemon, "kinds", None);
}

#[test]
fn withdraw_takes_back_only_an_open_ask_and_its_card_loses_its_buttons() {
    let daemon = daemon().start();
    // card_shown → withdrawn, while a session waits on it with the command line.
    let mut waiting = daemon.cli_spawn(&[
        "ask",
        "--kind",
        "shell",
        "--text",
        "rm -rf build",
        "--field",
        "cwd=~/src/blog",
    ]);
    daemon.wait_for("the shell card", |bot| {
        bot.messages(OWNER).iter().any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("rm -rf build"))
        })
    });
    let id = daemon
        .journal_events()
        .into_iter()
        .rev()
        .find(|e| e["ev"] == "asked")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = daemon.card_of(&id);
    let answer = withdraw(&daemon, &id);
    assert_eq!(answer, json!({"v":1,"id":id,"status":"withdrawn"}));
    let status = waiting.wait().unwrap();
    assert_eq!(status.code(), Some(9), "a withdrawn ask exits 9");
    let edited = wait_edited(&daemon, &card, "withdrawn by the agent");
    assert!(edited.text.unwrap().contains("rm -rf build"));
    let line = daemon.wait_for_event("withdrawn");
    assert_eq!(line["id"], id);
    assert_eq!(line["kind"], "shell");
    assert_eq!(line["digest"].as_str().unwrap().len(), 64);
    // Again: the same answer; the record does not change.
    assert_eq!(withdraw(&daemon, &id), answer);
    // The old Yes, pressed anyway, changes nothing and runs nothing.
    daemon.press_yes(&card);
    daemon.settle();
    // Its buttons are gone, so it is no longer a message the daemon drew: "Not accepted.".
    daemon.wait_for("the press's answer", |bot| {
        bot.callback_answers()
            .iter()
            .any(|answer| answer.text.as_deref() == Some("Not accepted."))
    });
    let status = daemon.wait_state(&id, "withdrawn");
    assert_eq!(status["final"], true);
    assert_eq!(
        events_of(&daemon, &id),
        ["asked", "card_shown", "withdrawn"],
        "the press added nothing but its rejection"
    );
    assert!(daemon
        .journal_events()
        .iter()
        .any(|e| e["ev"] == "press_rejected" && e["subject"] == id));
    let status = daemon.cli(&["status", &id]);
    assert_eq!(status.status.code(), Some(9));
    journal_verifies(&daemon, "card_shown", Some(&id));

    // Each state past the owner's answer is not withdrawable, and stays as it was.
    let executed = id_of(&daemon.request(&good_ask("to run")));
    daemon.press_yes(&daemon.card_of(&executed));
    daemon.wait_state(&executed, "executed");
    let declined = id_of(&daemon.request(&good_ask("to decline")));
    daemon.press_no(&daemon.card_of(&declined));
    daemon.wait_state(&declined, "declined");
    let approved = id_of(&daemon.request(&shell_ask("make test")));
    daemon.press_yes(&daemon.card_of(&approved));
    daemon.wait_state(&approved, "approved");
    let refused = id_of(&daemon.request(&json!({"v":1,"op":"ask","kind":"nope","wait":false})));
    for (id, state) in [
        (&executed, "executed"),
        (&declined, "declined"),
        (&approved, "approved"),
        (&refused, "refused"),
    ] {
        let before = daemon.request(&json!({"v":1,"op":"status","id":id}));
        let answer = withdraw(&daemon, id);
        assert_eq!(answer["status"], "refused", "{state}: {answer}");
        assert_eq!(answer["reason"], "not_withdrawable", "{state}: {answer}");
        assert_eq!(answer["id"], json!(id), "{state}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{id} is {state}: ")),
            "{state}: {answer}"
        );
        let after = daemon.request(&json!({"v":1,"op":"status","id":id}));
        assert_eq!(before, after, "{state}: the record is unchanged");
        journal_verifies(&daemon, state, Some(id));
    }
    // An id that names nothing of this peer's is refused as status refuses it, without an id.
    let unknown = withdraw(&daemon, "r_00000000000000000000");
    assert_eq!(unknown["reason"], "bad_request", "{unknown}");
    assert!(unknown.get("id").is_none());
    assert_eq!(daemon.runs(), 1, "only the executed ask ran");
}

#[test]
fn withdraw_of_another_peers_ask_is_refused_and_changes_nothing() {
    // Any peer may connect; the second one is `nobody`.
    let daemon = daemon().allowed_uids(vec![]).start();
    for path in [daemon.socket.parent().unwrap(), daemon.socket.as_path()] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let theirs = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args([
            "ask",
            "--kind",
            "shell",
            "--text",
            "ls",
            "--no-wait",
            "--json",
        ])
        .env("CONSENTD_SOCKET", &daemon.socket)
        .output()
        .unwrap();
    let line: Value = serde_json::from_str(
        String::from_utf8_lossy(&theirs.stdout)
            .lines()
            .last()
            .unwrap_or("{}"),
    )
    .unwrap_or_else(|_| panic!("{theirs:?}"));
    let id = id_of(&line);
    let card = daemon.card_of(&id);
    let answer = withdraw(&daemon, &id);
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_eq!(answer["reason"], "bad_request", "{answer}");
    assert_eq!(
        answer["message"],
        format!("no record \"{id}\" for this peer")
    );
    assert!(answer.get("id").is_none());
    assert_eq!(
        now_showing(&daemon, &card).buttons().len(),
        2,
        "its card keeps its buttons"
    );
    assert!(!events_of(&daemon, &id).contains(&"withdrawn".to_owned()));
    journal_verifies(&daemon, "another peer's", Some(&id));
}

#[test]
fn a_withdrawn_ask_held_for_the_morning_is_never_shown() {
    // Quiet hours all day and no cards at night: every card is held.
    let daemon = daemon()
        .gate("quiet_hours = \"00:00-23:59\"\nnight_card_limit = 0")
        .start();
    let id = id_of(&daemon.request(&shell_ask("held")));
    daemon.wait_for_event("asked");
    assert_eq!(withdraw(&daemon, &id)["status"], "withdrawn");
    assert_eq!(events_of(&daemon, &id), ["asked", "withdrawn"]);
    // Quiet hours end: the card is still never sent.
    daemon.set_clock(crate::fixture::today_at(23, 59) + chrono::Duration::seconds(5));
    let other = id_of(&daemon.request(&good_ask("after the night")));
    daemon.card_of(&other);
    assert!(
        !daemon
            .owner_chat()
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains(&id))),
        "the withdrawn ask's card was never sent"
    );
    journal_verifies(&daemon, "pending", Some(&id));
}

#[test]
fn an_approve_category_ends_approved_and_runs_nothing() {
    let daemon = daemon().start();
    // Yes: approved, and nothing runs; the card said the agent runs it itself.
    let yes = id_of(&daemon.request(&shell_ask("cargo publish")));
    let card = daemon.card_of(&yes);
    let text = card.text.clone().unwrap();
    assert!(
        text.contains("The agent will run this itself if you approve. consentd runs nothing."),
        "{text}"
    );
    daemon.press_yes(&card);
    let status = daemon.wait_state(&yes, "approved");
    assert_eq!(status["final"], true);
    wait_edited(&daemon, &card, "approved: the agent runs it itself");
    assert_eq!(
        events_of(&daemon, &yes),
        ["asked", "card_shown", "approved"]
    );
    let line = daemon.wait_for_event("approved");
    assert_eq!(
        (&line["id"], &line["kind"], &line["by"]),
        (&json!(yes), &json!("shell"), &json!(OWNER))
    );
    assert_eq!(daemon.cli(&["status", &yes]).status.code(), Some(0));
    journal_verifies(&daemon, "approve yes", Some(&yes));
    // No: declined, as for any card.
    let no = id_of(&daemon.request(&shell_ask("cargo yank")));
    daemon.press_no(&daemon.card_of(&no));
    daemon.wait_state(&no, "declined");
    journal_verifies(&daemon, "approve no", Some(&no));
    // A mandate covers a mandate_ok approve kind: approved at once, with a receipt; no card.
    grant_kind(&daemon, "shell", 1, 5);
    let covered = daemon.request(&shell_ask("make docs"));
    let covered_id = id_of(&covered);
    daemon.wait_state(&covered_id, "approved");
    let receipt = receipt_of(&daemon, &covered_id);
    assert!(
        receipt
            .text
            .unwrap()
            .contains("approved: the agent runs it itself"),
        "the receipt shows the outcome"
    );
    assert_eq!(
        events_of(&daemon, &covered_id),
        ["asked", "mandate_use", "approved"],
        "approved by the mandate: never granted, claimed (`used`) or run"
    );
    assert_eq!(daemon.runs(), 0, "consentd ran nothing");
    journal_verifies(&daemon, "approve under a mandate", Some(&covered_id));
}

#[test]
fn an_asks_ttl_is_bounded_and_shortens_its_card() {
    let daemon = daemon().start();
    for ttl in [json!(9), json!(901), json!(1.5), json!("60"), json!(-1)] {
        let mut ask = shell_ask(&format!("ttl {ttl}"));
        ask["ttl"] = ttl.clone();
        let answer = daemon.request(&ask);
        assert_eq!(
            (&answer["status"], &answer["reason"]),
            (&json!("refused"), &json!("bad_request")),
            "ttl {ttl}: {answer}"
        );
        let message = answer["message"].as_str().unwrap();
        assert!(
            message.contains("ttl") && message.contains("10"),
            "{message}"
        );
        journal_verifies(&daemon, &format!("ttl {ttl}"), Some(&id_of(&answer)));
    }
    for ttl in [10, 900] {
        let mut ask = shell_ask(&format!("ttl ok {ttl}"));
        ask["ttl"] = json!(ttl);
        let id = id_of(&daemon.request(&ask));
        daemon.card_of(&id);
        let shown = daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "card_shown" && e["id"] == id)
            .unwrap();
        let asked = daemon.wait_state(&id, "card_shown")["created_at"].clone();
        let parse = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
        let window = parse(&shown["expires_at"]) - parse(&asked);
        assert!(
            window <= chrono::Duration::seconds(ttl) && window > chrono::Duration::seconds(ttl - 5),
            "ttl {ttl}: the card is open for {window}"
        );
        journal_verifies(&daemon, &format!("ttl {ttl}"), Some(&id));
    }
}

#[test]
fn a_pending_ask_held_in_quiet_hours_expires_at_its_ttl_unshown() {
    let daemon = daemon()
        .gate("quiet_hours = \"00:00-23:59\"\nnight_card_limit = 0")
        .start();
    // Inside the quiet hours whatever the real time is (23:59 is outside them).
    daemon.set_clock(crate::fixture::noon_today());
    let mut ask = shell_ask("held, with a ttl");
    ask["ttl"] = json!(60);
    ask["wait"] = json!(true);
    let mut stream = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
    std::io::Write::write_all(&mut stream, format!("{ask}\n").as_bytes()).unwrap();
    daemon.wait_for_event("asked");
    daemon.advance_clock(61);
    let lines = crate::fixture::answer_lines(&mut stream);
    let id = id_of(&lines[0]);
    assert_eq!(lines.last().unwrap()["status"], "expired", "{lines:?}");
    assert_eq!(events_of(&daemon, &id), ["asked", "expired"]);
    assert_eq!(daemon.wait_for_event("expired")["detail"], "ttl");
    assert!(
        !daemon
            .owner_chat()
            .iter()
            .any(|m| m.text.as_deref().is_some_and(|t| t.contains(&id))),
        "never shown"
    );
    journal_verifies(&daemon, "ttl in quiet hours", Some(&id));
}

/// A daemon whose cards wait through `quiet` (none at night), its wall clock at `at`, and an ask
/// with a `ttl` of its own, held; the ask's id.
fn held_ask(quiet: &str, at: chrono::DateTime<chrono::Utc>, ttl: u64) -> (Daemon, String) {
    let daemon = daemon()
        .gate(&format!("quiet_hours = \"{quiet}\"\nnight_card_limit = 0"))
        .start();
    daemon.set_clock(at);
    let mut ask = shell_ask("held, with a ttl of its own");
    ask["ttl"] = json!(ttl);
    let id = id_of(&daemon.request(&ask));
    daemon.wait_for_event("asked");
    (daemon, id)
}

/// An ask's own ttl is time the session gave it, and a wall clock stepped back while the ask is
/// held must not stretch it: an hour on (on the monotonic clock) a 60 s ask has expired unshown,
/// as a card's window would on either clock, and its card can no longer be shown and pressed.
#[test]
fn a_held_asks_ttl_is_not_stretched_by_a_wall_clock_stepped_back() {
    let (daemon, id) = held_ask("00:00-23:59", crate::fixture::noon_today(), 60);
    // An hour passes, and the wall clock is stepped back two hours meanwhile (at 11:00 it is
    // still inside the quiet hours, so the card stays held).
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall - 3_600, monotonic + 3_600);
    daemon.wait_state(&id, "expired");
}

/// The same, with the quiet hours ending while the ask still waits: by the wall clock 13 of the
/// ask's 15 minutes are left, but its ttl passed long ago on the monotonic clock, so its card is
/// never shown (the sender judges the ask's ttl on both clocks before it sends the card), and
/// nothing can be pressed or run.
#[test]
fn a_held_ask_past_its_ttl_on_the_monotonic_clock_is_never_shown() {
    let (daemon, id) = held_ask("00:00-11:30", crate::fixture::today_at(11, 29), 900);
    // An hour passes, but the wall clock moves two minutes (stepped back 58 minutes): the quiet
    // hours end, and by the wall clock 13 minutes of the ask's 15 are left.
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 120, monotonic + 3_600);
    let status = daemon.wait_state(&id, "expired");
    assert_eq!(status["final"], true, "{status}");
    daemon.settle();
    let shown = daemon
        .owner_chat()
        .into_iter()
        .any(|m| !m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains(&id)));
    assert!(!shown, "a card past its ask's ttl was shown");
    assert_eq!(daemon.runs(), 0);
}

/// A held ask's card shown after the wall clock was stepped back is answerable for what is left
/// of the ask's ttl by the lesser clock: ten minutes into a 15-minute ttl by the monotonic clock
/// (two by the wall clock), its card has five minutes, not thirteen, and a yes six minutes on
/// does not count. The sweep may expire the card before the press lands: either way nothing runs.
#[test]
fn a_card_shown_for_a_held_ask_gets_only_what_is_left_of_its_ttl_on_the_monotonic_clock() {
    let (daemon, id) = held_ask("00:00-11:30", crate::fixture::today_at(11, 29), 900);
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 120, monotonic + 600);
    let card = daemon.card_of(&id);
    let (wall, monotonic) = daemon.clocks();
    daemon.set_clocks(wall + 360, monotonic + 360);
    daemon.press_yes(&card);
    daemon.settle();
    let status = daemon.wait_state(&id, "expired");
    assert_eq!(status["final"], true, "{status}");
    assert_eq!(daemon.runs(), 0);
}

#[test]
fn origin_is_shown_apart_checked_naming_origin_and_part_of_the_digest() {
    let daemon = daemon().start();
    let plain = id_of(&daemon.request(&shell_ask("git push")));
    let mut ask = shell_ask("git push");
    ask["origin"] = json!("Claude Code · ~/src/blog");
    let with_origin = id_of(&daemon.request(&ask));
    assert_ne!(
        plain, with_origin,
        "another digest: not joined to the first card"
    );
    let card = daemon.card_of(&with_origin);
    let text = card.text.clone().unwrap();
    assert!(text.contains("From: Claude Code · ~/src/blog"), "{text}");
    // Set apart like the target: the value is its own entity.
    let entities = card.entities.clone().unwrap_or_default();
    let start = text.encode_utf16().count()
        - text[text.find("Claude Code").unwrap()..]
            .encode_utf16()
            .count();
    assert!(
        entities
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["offset"] == start
                && e["length"] == "Claude Code · ~/src/blog".encode_utf16().count()),
        "{entities}"
    );
    let digest = |id: &str| {
        daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "asked" && e["id"] == id)
            .unwrap()["digest"]
            .clone()
    };
    assert_ne!(digest(&plain), digest(&with_origin));
    journal_verifies(&daemon, "origin", Some(&with_origin));
    // A mandate request's origin is on its card too.
    let mandate = id_of(
        &daemon.request(&json!({"v":1,"op":"mandate","kind":"shell","days":1,
        "actions_per_day":3,"origin":"Codex · ~/src/site","wait":false})),
    );
    let card = daemon.card_of(&mandate).text.unwrap();
    assert!(card.contains("From: Codex · ~/src/site"), "{card}");
    journal_verifies(&daemon, "mandate origin", Some(&mandate));
    for (origin, reason, words) in [
        (
            "Claude\u{200B}Code",
            "invisible_character",
            "U+200B ZERO WIDTH SPACE in field origin at char 7",
        ),
        ("two\nlines", "invisible_character", "in field origin"),
        ("", "bad_request", "origin is empty"),
    ] {
        let mut ask = shell_ask("git push");
        ask["origin"] = json!(origin);
        let answer = daemon.request(&ask);
        assert_eq!(answer["reason"], reason, "{origin:?}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(words),
            "{origin:?}: {answer}"
        );
        journal_verifies(&daemon, origin, Some(&id_of(&answer)));
    }
}

#[test]
fn a_claim_of_an_approve_category_never_starts_its_command() {
    // `shell` runs the fixture's script at first, and the daemon stops between the Yes and
    // the claim; it comes back with `shell` approval-only. The claim of the yes it finds
    // granted must not start anything.
    let run_category = r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
enabled = true
text = "required"
command = ["/bin/sh", "{dir}/action.sh"]
"#;
    let mut daemon = Daemon::builder()
        .config_tail(run_category)
        .env("CONSENTD_CRASH_AT", "before_claim")
        .start();
    let id = id_of(
        &daemon.request(&json!({"v":1,"op":"ask","kind":"shell","text":"make",
        "wait":false})),
    );
    daemon.press_yes(&daemon.card_of(&id));
    let status = daemon.wait_exit();
    assert!(!status.success(), "stopped at the claim");
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let dir = daemon.dir.path().display().to_string();
    let approve = config.replace(
        &format!("text = \"required\"\ncommand = [\"/bin/sh\", \"{dir}/action.sh\"]\n"),
        "text = \"required\"\nmode = \"approve\"\n",
    );
    assert_ne!(approve, config, "the config changed");
    std::fs::write(&daemon.config, approve).unwrap();
    let daemon = daemon.restart();
    let record = daemon.wait_state(&id, "failed");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("approval-only"),
        "{record}"
    );
    assert_eq!(daemon.runs(), 0, "nothing ran");
    assert_eq!(daemon.wait_for_event("failed")["detail"], "not_started");
    journal_verifies(&daemon, "claim of an approve category", Some(&id));
}

#[test]
fn a_yes_does_what_the_card_said_even_when_the_mode_changed_since() {
    // Asked while `shell` was approval-only: its card says the agent runs it. The daemon comes
    // back with `shell` running a command; the owner's Yes on that card must still run nothing.
    let mut daemon = daemon().start();
    let id = id_of(&daemon.request(&shell_ask("make deploy")));
    let card = daemon.card_of(&id);
    daemon.stop_with(nix::sys::signal::Signal::SIGTERM);
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let dir = daemon.dir.path().display().to_string();
    let runs = config.replace(
        "mode = \"approve\"\n",
        &format!("command = [\"/bin/sh\", \"{dir}/action.sh\"]\n"),
    );
    assert_ne!(runs, config, "the config changed");
    std::fs::write(&daemon.config, runs).unwrap();
    let daemon = daemon.restart();
    daemon.press_yes(&card);
    assert_eq!(daemon.wait_state(&id, "approved")["final"], true);
    daemon.settle();
    assert_eq!(daemon.runs(), 0, "nothing ran");
    journal_verifies(&daemon, "a yes after the mode changed", Some(&id));
}

/// A kind the config no longer has is off, whatever the owner's stored switch says: a yes given
/// before it was removed ends refused at the claim (`category_off`), never claimed with no
/// command to run, which the next start would call an unknown outcome.
#[test]
fn a_yes_claimed_after_its_kind_left_the_config_is_refused() {
    let off_by_config = r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
enabled = false
text = "required"
command = ["/bin/sh", "{dir}/action.sh"]
"#;
    let mut daemon = Daemon::builder()
        .config_tail(off_by_config)
        .env("CONSENTD_CRASH_AT", "before_claim")
        .start();
    // The owner's On is stored, and outlives the category.
    let line = crate::owner::say(
        &daemon,
        "/categories",
        "Run a shell command (external): off",
    );
    daemon.tap(&line, 0);
    daemon.wait_for_event("category_on");
    let id = id_of(
        &daemon.request(&json!({"v":1,"op":"ask","kind":"shell","text":"make",
        "wait":false})),
    );
    daemon.press_yes(&daemon.card_of(&id));
    assert!(!daemon.wait_exit().success(), "stopped at the claim");
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let start = config.find("[categories.shell]").unwrap();
    let end = config[start + 1..]
        .find("\n[")
        .map_or(config.len(), |at| start + 1 + at + 1);
    let without = format!("{}{}", &config[..start], &config[end..]);
    assert!(!without.contains("categories.shell"), "{without}");
    std::fs::write(&daemon.config, without).unwrap();
    let daemon = daemon.restart();
    let record = daemon.wait_state(&id, "refused");
    assert_eq!(record["reason"], "category_off", "{record}");
    assert_eq!(daemon.runs(), 0, "nothing ran");
    journal_verifies(&daemon, "a claim after the kind left the config", Some(&id));
}
