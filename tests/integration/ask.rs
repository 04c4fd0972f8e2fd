//! Asking through the socket and the `ask`, `status` and `list` clients.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, good_ask, stderr, stdout, Daemon, BIN};

#[test]
fn a_good_ask_is_stored_pending_and_can_be_read_back() {
    let daemon = Daemon::start();
    let answer = daemon.request(&good_ask("Hello, world"));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap();
    assert!(id.starts_with("r_"), "{id}");

    let status = daemon.request(&json!({"v":1,"op":"status","id":id}));
    // Its card may already be in the owner's chat.
    assert!(
        matches!(status["status"].as_str(), Some("pending" | "card_shown")),
        "{status}"
    );
    assert_eq!(status["kind"], "publish_x");
    assert!(
        status.get("text").is_none(),
        "status shows no text: {status}"
    );

    let list = daemon.request(&json!({"v":1,"op":"list","cursor":null}));
    assert_eq!(list["records"][0]["id"], id);
    assert_eq!(list["next_cursor"], Value::Null);
}

#[test]
fn a_refusal_says_what_and_where() {
    let daemon = Daemon::start();
    let cases = [
        (
            json!({"v":1,"op":"ask","kind":"publish_x","target":"@m","text":"Hi\u{200B}!","cost_usd":"1.00"}),
            "invisible_character",
            "U+200B ZERO WIDTH SPACE in text at char 3",
        ),
        (
            json!({"v":1,"op":"ask","kind":"nope"}),
            "unknown_kind",
            // The configured kinds only, those that are off included.
            "no category \"nope\" is configured; the kinds are: publish_x, send_letter, wipe_drafts",
        ),
        (
            json!({"v":1,"op":"ask","kind":"wipe_drafts"}),
            "category_off",
            "wipe_drafts is off",
        ),
        (
            json!({"v":1,"op":"ask","kind":"publish_x","target":"@m","text":"x","cost_usd":"1.00","extra":"1"}),
            "field_not_shown",
            "unknown key \"extra\"",
        ),
        (
            json!({"v":1,"op":"ask","kind":"publish_x","target":"@m","text":"cafe\u{301}","cost_usd":"1.00"}),
            "not_nfc",
            "text",
        ),
    ];
    for (request, reason, needle) in cases {
        let answer = daemon.request(&request);
        assert_eq!(answer["status"], "refused", "{request}");
        assert_eq!(answer["reason"], reason, "{request}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(needle), "{request}: {message}");
        assert!(
            answer["id"].as_str().is_some_and(|id| id.starts_with("r_")),
            "{answer}"
        );
    }
}

#[test]
fn the_same_digest_joins_and_idempotency_keys_hold() {
    let daemon = Daemon::start();
    let first = daemon.request(&good_ask("same"));
    let second = daemon.request(&good_ask("same"));
    assert_eq!(
        first["id"], second["id"],
        "the same digest joins the open record"
    );

    let mut keyed = good_ask("keyed");
    keyed["idempotency_key"] = json!("k-1");
    let one = daemon.request(&keyed);
    let again = daemon.request(&keyed);
    assert_eq!(one["id"], again["id"]);
    keyed["text"] = json!("another text");
    let conflict = daemon.request(&keyed);
    assert_eq!(conflict["reason"], "identity_conflict", "{conflict}");
}

#[test]
fn max_pending_refuses_at_once() {
    let daemon = Daemon::builder().max_pending(2).start();
    for n in 0..2 {
        assert_eq!(
            daemon.request(&good_ask(&format!("t{n}")))["status"],
            "pending"
        );
    }
    let answer = daemon.request(&good_ask("t2"));
    assert_eq!(answer["reason"], "too_many_pending", "{answer}");
}

#[test]
fn without_an_owner_asks_are_refused_no_owner() {
    let daemon = Daemon::builder().no_owner().start();
    let answer = daemon.request(&good_ask("hello"));
    assert_eq!(answer["reason"], "no_owner", "{answer}");
}

#[test]
fn the_ask_client_follows_the_exit_codes() {
    let daemon = Daemon::start();
    let base = [
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila",
        "--field",
        "reply_to=https://e.org",
        "--cost-usd",
        "0.04",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        daemon.cli(&args)
    };

    let pending = run(with(&["--text", "Hello", "--no-wait"]));
    assert_eq!(pending.status.code(), Some(8), "{}", stderr(&pending));
    let id = stdout(&pending).trim().to_owned();
    assert!(id.starts_with("r_"), "{id}");

    let refused = run(with(&["--text", "Hi\u{200B}", "--no-wait"]));
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        stderr(&refused).contains("invisible_character"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("U+200B ZERO WIDTH SPACE in text at char 3"));

    let json = run(with(&["--text", "Hi\u{200B}", "--no-wait", "--json"]));
    assert_eq!(json.status.code(), Some(3));
    let last: Value = serde_json::from_str(stdout(&json).lines().last().unwrap()).unwrap();
    assert_eq!(last["reason"], "invisible_character");

    let usage = daemon.cli(&["ask", "--kind", "publish_x", "--field", "no-equals-sign"]);
    assert_eq!(usage.status.code(), Some(2), "{}", stderr(&usage));
    let usage = daemon.cli(&["ask"]);
    assert_eq!(usage.status.code(), Some(2));

    let nowhere = Command::new(BIN)
        .args([
            "ask",
            "--kind",
            "publish_x",
            "--socket",
            "/nonexistent/consent.sock",
        ])
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(
        stderr(&nowhere).contains("cannot connect"),
        "{}",
        stderr(&nowhere)
    );

    let status = daemon.cli(&["status", &id, "--json"]);
    assert_eq!(status.status.code(), Some(8), "the record is still open");
    let record: Value = serde_json::from_str(stdout(&status).trim()).unwrap();
    // Its card may already be in the owner's chat.
    assert!(
        matches!(record["status"].as_str(), Some("pending" | "card_shown")),
        "{record}"
    );

    let list = daemon.cli(&["list"]);
    assert_eq!(list.status.code(), Some(0));
    assert!(stdout(&list).contains(&id), "{}", stdout(&list));

    let missing = daemon.cli(&["status", "r_00000000000000000000"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("no record"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn the_ask_client_reads_text_and_attachments_from_files() {
    let daemon = Daemon::start();
    let text = daemon.dir.path().join("post.txt");
    std::fs::write(&text, "From a file\nwith two lines").unwrap();
    let image = daemon.dir.path().join("cover.png");
    std::fs::write(&image, [0x89, b'P', b'N', b'G']).unwrap();
    // `consentd ask` for publish_x with the text from `file`, and `more` arguments.
    let ask_from = |file: &std::path::Path, more: &[&str]| {
        let file = file.to_str().unwrap();
        let mut args = vec!["ask", "--kind", "publish_x", "--target", "@mila"];
        args.extend(["--cost-usd", "1", "--text-file", file]);
        args.extend_from_slice(more);
        daemon.cli(&args)
    };
    let image = image.to_str().unwrap();
    let output = ask_from(&text, &["--attach", image, "--no-wait", "--json"]);
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    let bad = daemon.dir.path().join("latin1.txt");
    std::fs::write(&bad, [b'a', 0xE9]).unwrap();
    let output = ask_from(&bad, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not UTF-8 (invalid byte at offset 1)"),
        "{}",
        stderr(&output)
    );
    // The file's bytes are the text, sent as they are: the newline an editor ends a file with
    // makes a blank last line, which the daemon refuses, saying what to remove.
    let edited = daemon.dir.path().join("edited.txt");
    std::fs::write(&edited, "From an editor\n").unwrap();
    let output = ask_from(&edited, &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("text ends with a blank line (line 2); remove what follows line 1"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_waiting_ask_shows_its_progress_on_stderr() {
    let daemon = Daemon::start();
    let mut child = Command::new(BIN)
        .args([
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@mila",
            "--text",
            "wait for me",
        ])
        .args(["--cost-usd", "0.10"])
        .env("CONSENTD_SOCKET", &daemon.socket)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("waiting for the owner's answer on r_"),
        "{line}"
    );
    assert!(line.contains("(pending)"), "{line}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "a waiting ask must keep waiting"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_daemons_journal_verifies_after_a_run() {
    let mut daemon = Daemon::start();
    daemon.request(&good_ask("one"));
    daemon.request(&json!({"v":1,"op":"ask","kind":"nope"}));
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let journal_path = daemon.journal.clone();
    let journal = journal_path.to_str().unwrap();
    let verify = consentd(&["journal", "verify", journal]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    let head = consentd(&["journal", "head", journal]);
    let anchor = stdout(&head).trim().to_owned();
    assert_eq!(
        stdout(&verify).trim(),
        format!("ok {anchor}\nseals were not checked: give the verification key with --key")
    );
    let text = std::fs::read_to_string(&daemon.journal).unwrap();
    let events: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["ev"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        // The card's line comes when the sender has shown it: not ordered with the others.
        .filter(|ev| ev != "card_shown")
        .collect();
    assert_eq!(events, ["started", "asked", "denied"]);
    assert!(
        !text.contains("\"one\""),
        "the journal holds no action text"
    );

    // A restart continues the same chain.
    let lines_before = text.lines().count();
    let mut restarted = daemon.restart();
    assert!(restarted.stop_with(Signal::SIGTERM).success());
    let verify = consentd(&["journal", "verify", journal]);
    let after = std::fs::read_to_string(&journal_path).unwrap();
    assert!(
        after.starts_with(&text),
        "the restart appended, never rewrote"
    );
    assert!(
        after.lines().count() > lines_before,
        "the restart journaled `started`"
    );
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
}

#[test]
fn an_ask_whose_card_cannot_be_one_message_is_refused_too_large() {
    let daemon = Daemon::start();
    let long = "x".repeat(1000);
    let fields = json!({"to": long, "cc": long, "bcc": long, "subject": long});
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"send_letter","fields": fields}));
    assert_eq!(answer["reason"], "too_large", "{answer}");
    assert!(answer["message"]
        .as_str()
        .unwrap()
        .contains("would not fit one Telegram message"));
    let short = json!({"to": "a@b.c", "subject": "hello"});
    let answer = daemon
        .request(&json!({"v":1,"op":"ask","kind":"send_letter","fields": short,"wait":false}));
    assert!(
        matches!(answer["status"].as_str(), Some("pending" | "card_shown")),
        "{answer}"
    );
}
