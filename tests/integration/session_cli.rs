//! The session's newer subcommands: `kinds`, `withdraw`, and Ctrl-C on a waiting `ask`.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::fixture::{consentd, stderr, stdout, Daemon};

fn ask_args<'a>(text: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        text,
        "--field",
        "reply_to=https://example.org/1",
        "--cost-usd",
        "0.04",
    ];
    args.extend_from_slice(extra);
    args
}

/// Reads the client's stderr until it names the record it waits on, and returns the id and a
/// thread collecting the rest of its stderr. Only then has the session its answer: the owner may
/// have the card before, since the answer waits for the `asked` line to be in the journal file
/// and the card does not.
fn named_by_client(child: &mut Child) -> (String, std::thread::JoinHandle<String>) {
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let (named, id) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        let mut seen = String::new();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 {
            if let Some(rest) = line.strip_prefix("waiting for the owner's answer on ") {
                let _ = named.send(rest.split_whitespace().next().unwrap().to_owned());
            }
            seen.push_str(&line);
            line.clear();
        }
        seen
    });
    match id.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(id) => (id, rest),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the client never named its record: {}",
                rest.join().unwrap()
            );
        }
    }
}

fn interrupt(child: &std::process::Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
}

#[test]
fn ctrl_c_on_a_waiting_ask_withdraws_it_and_exits_9() {
    let daemon = Daemon::start();
    let mut child = daemon.cli_spawn(&ask_args("Interrupted", &[]));
    let (id, stderr) = named_by_client(&mut child);
    let card = daemon.card_of(&id);
    interrupt(&child);
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(9), "{stderr}");
    assert!(stderr.contains(&format!("withdrew {id}")), "{stderr}");
    assert_eq!(daemon.wait_state(&id, "withdrawn")["final"], true);
    // The card lost its buttons; a press on the old ones changes nothing.
    daemon.wait_for("the card loses its buttons", |bot| {
        bot.messages(crate::fixture::OWNER)
            .iter()
            .any(|m| m.message_id == card.message_id && m.buttons().is_empty())
    });
    daemon.press_yes(&card);
    daemon.settle();
    assert_eq!(daemon.runs(), 0);
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert!(verify.status.success(), "{verify:?}");
}

#[test]
fn ctrl_c_with_keep_open_leaves_the_ask_to_the_owner_and_exits_8() {
    let daemon = Daemon::start();
    let mut child = daemon.cli_spawn(&ask_args("Kept open", &["--keep-open"]));
    let (id, stderr) = named_by_client(&mut child);
    daemon.card_of(&id);
    interrupt(&child);
    let mut printed = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(8), "{}", stderr.join().unwrap());
    assert_eq!(printed.trim(), id);
    assert_eq!(daemon.wait_state(&id, "card_shown")["final"], false);
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
}

#[test]
fn withdraw_exits_9_then_3_once_the_owner_answered_and_1_for_no_such_record() {
    let daemon = Daemon::start();
    let open = daemon.request(&crate::fixture::good_ask("To withdraw"));
    let open = open["id"].as_str().unwrap();
    daemon.card_of(open);
    let withdrawn = daemon.cli(&["withdraw", open]);
    assert_eq!(withdrawn.status.code(), Some(9), "{}", stderr(&withdrawn));
    let again = daemon.cli(&["withdraw", open, "--json"]);
    assert_eq!(
        again.status.code(),
        Some(9),
        "withdrawing twice is the same answer"
    );
    let line: Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(line["status"], "withdrawn");

    let answered = daemon.request(&crate::fixture::good_ask("Already declined"));
    let answered = answered["id"].as_str().unwrap();
    daemon.press_no(&daemon.card_of(answered));
    daemon.wait_state(answered, "declined");
    let late = daemon.cli(&["withdraw", answered]);
    assert_eq!(late.status.code(), Some(3), "{}", stderr(&late));
    assert!(
        stderr(&late).contains("not_withdrawable"),
        "{}",
        stderr(&late)
    );
    assert_eq!(
        daemon.wait_state(answered, "declined")["status"],
        "declined"
    );

    let none = daemon.cli(&["withdraw", "r_00000000000000000000"]);
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
}

#[test]
fn kinds_lists_every_category_with_what_it_takes() {
    let daemon = Daemon::start();
    let output = daemon.cli(&["kinds"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let kinds: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(kinds, ["publish_x", "send_letter", "wipe_drafts"], "{text}");
    let publish = text.lines().next().unwrap();
    for part in [
        "on",
        "run",
        "target required",
        "fields [reply_to]",
        "cost request",
        "Post to X",
    ] {
        assert!(publish.contains(part), "{part} in {publish}");
    }
    assert!(text.lines().nth(2).unwrap().contains(" off "), "{text}");
    let json = daemon.cli(&["kinds", "--json"]);
    let answer: Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert_eq!(answer["kinds"][0]["fields"], json!(["reply_to"]));
}
