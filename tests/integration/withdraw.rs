//! `withdraw` over the socket of a real daemon: only an open ask is withdrawn, its card edited
//! without buttons, a waiting session told, and a press on the old card changes nothing; never
//! another peer's; an ask held for the morning and withdrawn is never shown. After each case the
//! journal verifies. The helpers here are shared with `kinds`, `approval_only`, `ask_ttl` and
//! `origin`, which drive the same daemon.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use consentd_emulator::ChatMessage;
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, Daemon, DaemonBuilder, BIN, OWNER};
use crate::mandates::events_of;

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

pub(crate) fn daemon() -> DaemonBuilder {
    Daemon::builder().config_tail(SHELL)
}

/// `consentd journal verify` accepts the daemon's journal, and (when given) a line names `id`.
pub(crate) fn journal_verifies(daemon: &Daemon, case: &str, id: Option<&str>) {
    let journal = daemon.settled_journal().to_str().unwrap().to_owned();
    let verify = consentd(&["journal", "verify", &journal]);
    assert_eq!(verify.status.code(), Some(0), "{case}: {verify:?}");
    if let Some(id) = id {
        assert!(
            daemon.journal_events().iter().any(|e| e["id"] == id),
            "{case}: no journal line names {id}"
        );
    }
}

pub(crate) fn shell_ask(text: &str) -> Value {
    json!({"v":1,"op":"ask","kind":"shell","text":text,"fields":{"cwd":"~/src/blog"},"wait":false})
}

pub(crate) fn id_of(answer: &Value) -> String {
    answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned()
}

pub(crate) fn withdraw(daemon: &Daemon, id: &str) -> Value {
    daemon.request(&json!({"v":1,"op":"withdraw","id":id}))
}

/// The message `card` as the owner's chat shows it now.
pub(crate) fn now_showing(daemon: &Daemon, card: &ChatMessage) -> ChatMessage {
    daemon.bot.message(OWNER, card.message_id).unwrap()
}

/// Waits until `card` has lost its buttons and shows `words`.
pub(crate) fn wait_edited(daemon: &Daemon, card: &ChatMessage, words: &str) -> ChatMessage {
    daemon.wait_for(&format!("the card to say {words:?}"), |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains(words))
        })
    });
    now_showing(daemon, card)
}

/// Asks for a mandate of `kind` (no targets, no money) and grants it as the owner.
pub(crate) fn grant_kind(daemon: &Daemon, kind: &str, days: u32, actions: u32) {
    let answer = daemon.request(&json!({"v":1,"op":"mandate","kind":kind,"days":days,
        "actions_per_day":actions,"wait":false}));
    let id = id_of(&answer);
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "granted");
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
        3,
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
