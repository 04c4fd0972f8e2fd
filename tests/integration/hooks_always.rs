//! Exact rules ("Always here") end to end: `consentd hook claude-code|codex` against a
//! real daemon whose owner presses in the emulator. Always here on a gate card saves one rule;
//! the same exact call then passes with no card (`rule_used`), and anything else — a byte more or
//! less, another directory, another agent, another uid, a destructive gate, a block rule — draws a
//! card or is blocked; /rules lists the rule and Remove takes it away; a forged or stranger's
//! Always saves nothing; with the daemon stopped nothing passes; the evening summary counts the
//! calls rules passed.

use std::process::Output;

use consentd_emulator::{ChatMessage, ChatSpec, UserSpec};
use serde_json::{json, Value};

use crate::fixture::{Daemon, OWNER};
use crate::hooks::{
    answer, codex_decision, event as fixture_event, finish, permission_decision, pre_tool_use,
    rules_file, run_hook, spawn_hook,
};
use crate::hooks_gate::SHELL_CATEGORY;

/// A destructive approval-only category: its card never offers Always here.
const WIPE_CATEGORY: &str = r#"
[categories.wipe]
label = { en = "Delete files" }
class = "destructive"
mode = "approve"
enabled = true
text = "required"
"#;

/// `cargo` and `make` go to the shell kind; a line with another program beside them is gated
/// whole.
const RULES: &str = r#"
[[rule]]
name = "build"
tool = "Bash"
program = ["cargo", "make"]
action = "gate"
kind = "shell"
"#;

/// The same, with `cargo` blocked first: a block rule answers before any saved rule.
const RULES_BLOCKING_CARGO: &str = r#"
[[rule]]
name = "no cargo"
tool = "Bash"
program = "cargo"
action = "block"
message = "cargo is blocked here"

[[rule]]
name = "build"
tool = "Bash"
program = ["cargo", "make"]
action = "gate"
kind = "shell"
"#;

/// The same, with `cargo` gated to the destructive kind.
const RULES_CARGO_DESTRUCTIVE: &str = r#"
[[rule]]
name = "cargo deletes"
tool = "Bash"
program = "cargo"
action = "gate"
kind = "wipe"
"#;

const BLOG: &str = "/home/mila/src/blog";

fn daemon() -> Daemon {
    Daemon::builder()
        .config_tail(&format!("{SHELL_CATEGORY}{WIPE_CATEGORY}"))
        .start()
}

fn stranger() -> UserSpec {
    UserSpec::new(777, "Eve")
}

/// The fixture's event for `agent`, running `command` in `cwd`.
fn event(agent: &str, command: &str, cwd: &str) -> Value {
    let fixture = match agent {
        "codex" => "codex/permission_request_bash",
        _ => "claude-code/pre_tool_use_bash",
    };
    let mut event = fixture_event(fixture, Some(command));
    event["cwd"] = json!(cwd);
    event
}

/// Whether the hook's answer allows the call (in `agent`'s format).
fn allowed(agent: &str, output: &Output) -> bool {
    match agent {
        "codex" => codex_decision(output)["behavior"] == "allow",
        _ => pre_tool_use(output).0 == "allow",
    }
}

/// The first message after the first `before` with buttons whose text has `needle`.
fn new_card(daemon: &Daemon, before: usize, needle: &str) -> ChatMessage {
    let find = |messages: Vec<ChatMessage>| {
        messages.into_iter().skip(before).find(|m| {
            m.outgoing
                && !m.buttons().is_empty()
                && m.text.as_deref().is_some_and(|t| t.contains(needle))
        })
    };
    daemon.wait_for(&format!("a new card of {needle:?}"), |bot| {
        find(bot.messages(OWNER)).is_some()
    });
    find(daemon.bot.messages(OWNER)).unwrap()
}

fn chat_len(daemon: &Daemon) -> usize {
    daemon.bot.messages(OWNER).len()
}

/// The card's button labels, row by row: Always here (where offered) on the first row after
/// Yes and No, "No, and say why…" on a row of its own.
fn labels(card: &ChatMessage) -> Vec<Vec<String>> {
    card.button_rows()
        .into_iter()
        .map(|row| row.into_iter().map(|b| b.text).collect())
        .collect()
}

const WHY: [&str; 1] = ["No, and say why…"];

fn events(daemon: &Daemon, ev: &str) -> Vec<Value> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|line| line["ev"] == ev)
        .collect()
}

/// Runs the hook on `event`, presses Always here on its card, and returns the hook's answer.
fn saved_by_always(daemon: &Daemon, rules: &std::path::Path, agent: &str, event: &Value) -> Output {
    let before = chat_len(daemon);
    let hook = spawn_hook(
        agent,
        rules,
        &daemon.socket,
        &[],
        event.to_string().as_bytes(),
    );
    let command = event["tool_input"]["command"].as_str().unwrap();
    let card = new_card(daemon, before, command);
    assert_eq!(
        labels(&card),
        [&["Yes", "No", "Always here"][..], &WHY],
        "{:?}",
        card.text
    );
    daemon.tap(&card, 2);
    let output = finish(hook);
    daemon.wait_for("the card's edit to say the call was saved", |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty()
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.contains("approved") && t.contains("Saved as a rule"))
        })
    });
    output
}

/// Runs the hook on `event` and asserts it draws a card, answered with a Yes (a No would
/// silence the kind after three): the call is then allowed by the owner's press, not a rule.
fn draws_a_card(
    daemon: &Daemon,
    rules: &std::path::Path,
    agent: &str,
    event: &Value,
) -> ChatMessage {
    let before = chat_len(daemon);
    let used = events(daemon, "rule_used").len();
    let hook = spawn_hook(
        agent,
        rules,
        &daemon.socket,
        &[],
        event.to_string().as_bytes(),
    );
    let command = event["tool_input"]["command"].as_str().unwrap();
    let card = new_card(daemon, before, command.trim_end());
    daemon.tap(&card, 0);
    let output = finish(hook);
    assert!(
        allowed(agent, &output),
        "{agent}: the owner's Yes allows it"
    );
    if agent == "claude-code" {
        let (_, reason) = pre_tool_use(&output);
        assert!(reason.contains("approved by the owner"), "{reason}");
    }
    assert_eq!(
        events(daemon, "rule_used").len(),
        used,
        "no rule answered it"
    );
    card
}

/// Asks the daemon over the socket whether a saved rule answers `command` in `cwd`.
fn rule_answer(daemon: &Daemon, agent: &str, cwd: &str, command: &str) -> Value {
    daemon.request(
        &json!({"v": 1, "op": "rule", "kind": "shell", "agent": agent,
        "tool": "Bash", "cwd": cwd, "text": command}),
    )
}

#[test]
fn always_saves_one_rule_and_the_same_call_then_passes_with_no_card() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    for (n, agent) in ["claude-code"].into_iter().enumerate() {
        let command = format!("cargo test --package {agent}");
        let event = event(agent, &command, BLOG);
        let output = saved_by_always(&daemon, &rules, agent, &event);
        assert!(
            allowed(agent, &output),
            "{agent}: the Always allows this call"
        );
        daemon.wait_for(&format!("{agent}: rule_saved"), |_| {
            events(&daemon, "rule_saved").len() == n + 1
        });
        let saved = events(&daemon, "rule_saved").pop().unwrap();
        assert_eq!(saved["kind"], "shell");
        assert_eq!(saved["agent"], agent);
        let journal = serde_json::to_string(&daemon.journal_events()).unwrap();
        assert!(
            !journal.contains(&command),
            "the command stays out of the journal"
        );
        assert!(!journal.contains(BLOG), "so does the directory");

        let cards = chat_len(&daemon);
        let again = run_hook(agent, &rules, &daemon.socket, &event);
        assert!(allowed(agent, &again), "{agent}: the same call passes");
        if agent == "claude-code" {
            let (_, reason) = pre_tool_use(&again);
            assert!(reason.contains("saved rule u_"), "{reason}");
            assert_eq!(
                answer(&again)["hookSpecificOutput"]["updatedInput"],
                event["tool_input"],
                "exactly the input"
            );
        }
        assert_eq!(
            chat_len(&daemon),
            cards,
            "{agent}: no card for a saved call"
        );
        let used = daemon.wait_for_event("rule_used");
        assert_eq!(used["kind"], "shell");
        assert_eq!(
            events(&daemon, "rule_used").pop().unwrap()["rule"],
            saved["rule"]
        );
    }
    assert_eq!(
        events(&daemon, "rule_saved").len(),
        1,
        "one rule per Always"
    );
    assert_eq!(events(&daemon, "rule_used").len(), 1);
    // Claude Code's PermissionRequest answers in its own format.
    let event = event("claude-code", "cargo test --package claude-code", BLOG);
    let mut request = event.clone();
    request["hook_event_name"] = json!("PermissionRequest");
    let output = run_hook("claude-code", &rules, &daemon.socket, &request);
    assert_eq!(
        permission_decision(&output),
        json!({"behavior": "allow", "updatedInput": event["tool_input"]})
    );
}

#[test]
fn anything_but_the_exact_call_draws_a_card() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let saved = saved_by_always(
        &daemon,
        &rules,
        "claude-code",
        &event("claude-code", "cargo test", BLOG),
    );
    assert!(allowed("claude-code", &saved));
    // (what differs, the agent, the command, the directory)
    let cases = [
        ("a trailing space", "claude-code", "cargo test ", BLOG),
        (
            "a longer line",
            "claude-code",
            "cargo test && rm -rf build",
            BLOG,
        ),
        (
            "another directory",
            "claude-code",
            "cargo test",
            "/home/mila/src/shop",
        ),
        ("another agent", "codex", "cargo test", BLOG),
    ];
    for (what, agent, command, cwd) in cases {
        let card = draws_a_card(&daemon, &rules, agent, &event(agent, command, cwd));
        let text = card.text.clone().unwrap_or_default();
        assert!(
            text.contains(cwd),
            "{what}: the card shows the directory: {text}"
        );
    }
    assert_eq!(
        events(&daemon, "rule_used").len(),
        0,
        "no rule answered any of them"
    );
    assert_eq!(events(&daemon, "rule_saved").len(), 1);
}

#[test]
fn a_destructive_gate_never_offers_always_and_a_block_rule_comes_before_a_saved_rule() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let command = "cargo test";
    let saved = saved_by_always(
        &daemon,
        &rules,
        "claude-code",
        &event("claude-code", command, BLOG),
    );
    assert!(allowed("claude-code", &saved));

    // A gate of a destructive kind for the same call, written after the rule was saved.
    let destructive = rules_file(daemon.dir.path(), RULES_CARGO_DESTRUCTIVE);
    let before = chat_len(&daemon);
    let hook = spawn_hook(
        "claude-code",
        &destructive,
        &daemon.socket,
        &[],
        event("claude-code", command, BLOG).to_string().as_bytes(),
    );
    let card = new_card(&daemon, before, command);
    assert_eq!(
        labels(&card),
        [&["Yes", "No"][..], &WHY],
        "a destructive card offers no Always"
    );
    assert!(card.text.as_deref().unwrap().contains("Delete files"));
    daemon.tap(&card, 1);
    assert!(!allowed("claude-code", &finish(hook)));

    // A block rule for the same call, written after the rule was saved.
    let blocking = rules_file(daemon.dir.path(), RULES_BLOCKING_CARGO);
    let output = run_hook(
        "claude-code",
        &blocking,
        &daemon.socket,
        &event("claude-code", command, BLOG),
    );
    let (decision, reason) = pre_tool_use(&output);
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("cargo is blocked here"), "{reason}");
    assert_eq!(events(&daemon, "rule_used").len(), 0);
    // The rule is still there for the gate it was saved for.
    let rules = rules_file(daemon.dir.path(), RULES);
    assert!(allowed(
        "claude-code",
        &run_hook(
            "claude-code",
            &rules,
            &daemon.socket,
            &event("claude-code", command, BLOG)
        )
    ));
}

#[test]
fn rules_lists_the_rule_and_remove_takes_it_away() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let command = "make check";
    let event = event("claude-code", command, BLOG);
    assert!(allowed(
        "claude-code",
        &saved_by_always(&daemon, &rules, "claude-code", &event)
    ));
    assert!(allowed(
        "claude-code",
        &run_hook("claude-code", &rules, &daemon.socket, &event)
    ));

    let before = chat_len(&daemon);
    daemon.bot.push_text(
        &UserSpec::new(OWNER, "Mila"),
        ChatSpec::private(OWNER),
        "/rules",
    );
    let listed = new_card(&daemon, before, command);
    let text = listed.text.clone().unwrap();
    for part in ["claude-code", "Bash", BLOG, "used once"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert_eq!(labels(&listed), [["Remove"]]);
    daemon.tap(&listed, 0);
    let removed = daemon.wait_for_event("rule_removed");
    assert!(removed["rule"].as_str().unwrap().starts_with("u_"));
    daemon.wait_for("the rule's message to say it was removed", |bot| {
        bot.message(OWNER, listed.message_id).is_some_and(|m| {
            m.buttons().is_empty() && m.text.as_deref().is_some_and(|t| t.contains("Removed"))
        })
    });
    assert_eq!(
        rule_answer(&daemon, "claude-code", BLOG, command)["status"],
        "none"
    );
    draws_a_card(&daemon, &rules, "claude-code", &event);

    let before = chat_len(&daemon);
    daemon.bot.push_text(
        &UserSpec::new(OWNER, "Mila"),
        ChatSpec::private(OWNER),
        "/rules",
    );
    new_card_or_line(&daemon, before, "No saved rules");
}

/// Waits for a message after the first `before` whose text has `needle`.
fn new_card_or_line(daemon: &Daemon, before: usize, needle: &str) {
    daemon.wait_for(&format!("a message saying {needle:?}"), |bot| {
        bot.messages(OWNER)
            .into_iter()
            .skip(before)
            .any(|m| m.outgoing && m.text.as_deref().is_some_and(|t| t.contains(needle)))
    });
}

/// An open gate card asked over the socket with `hook`, as the hook asks: its id and message.
fn open_gate(daemon: &Daemon, kind: &str, command: &str, hook: bool) -> (String, ChatMessage) {
    let mut ask = json!({"v": 1, "op": "ask", "kind": kind, "text": command, "wait": false});
    if hook {
        ask["hook"] = json!({"agent": "claude-code", "tool": "Bash", "cwd": BLOG});
    }
    let before = chat_len(daemon);
    let answer = daemon.request(&ask);
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    (id, new_card(daemon, before, command))
}

/// Callback data for an Always on record `id`, signed with the daemon's own key: what no card
/// that does not offer it carries, for the table's last cases.
fn signed_always(daemon: &Daemon, id: &str) -> String {
    let bytes: [u8; 32] = std::fs::read(daemon.state_dir.join("press.key"))
        .unwrap()
        .try_into()
        .unwrap();
    let key = consentd_core::press::PressKey::from_bytes(bytes);
    let asked = events(daemon, "asked")
        .into_iter()
        .find(|line| line["id"] == id)
        .unwrap();
    key.sign(
        consentd_core::press::PressAction::Always,
        id,
        asked["digest"].as_str().unwrap(),
        OWNER,
    )
}

/// One way to press Always here that must save nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    ForgedTag,
    TruncatedTag,
    OtherUser,
    OtherChat,
    /// The card's own Always, pressed again after the card was answered Yes.
    Replayed,
    /// A genuine signature on a destructive card, which never offers it.
    Destructive,
    /// A genuine signature on a card whose ask did not come from a hook.
    NoHook,
    /// The card's own Always, after the card's ttl.
    Expired,
}

/// Makes a gate card for `attempt`, presses as it says, and returns the `press_rejected`
/// reason and the record's id.
fn attempt(daemon: &Daemon, n: usize, attempt: Attempt) -> (String, String) {
    let (kind, hook) = match attempt {
        Attempt::Destructive => ("wipe", true),
        Attempt::NoHook => ("shell", false),
        _ => ("shell", true),
    };
    let command = format!("make case-{n}");
    let (id, card) = open_gate(daemon, kind, &command, hook);
    let drawn = card.buttons().get(2).and_then(|b| b.callback_data.clone());
    let data = match attempt {
        Attempt::ForgedTag => {
            let drawn = drawn.unwrap();
            let (head, _) = drawn.rsplit_once('.').unwrap();
            format!("{head}.AAAAAAAAAAAAAAAAAAAAAA")
        }
        Attempt::TruncatedTag => {
            let drawn = drawn.unwrap();
            drawn[..drawn.len() - 2].to_owned()
        }
        Attempt::Destructive | Attempt::NoHook => {
            assert_eq!(
                labels(&card),
                [&["Yes", "No"][..], &WHY],
                "{attempt:?}: no Always drawn"
            );
            signed_always(daemon, &id)
        }
        _ => drawn.unwrap(),
    };
    let (from, chat) = match attempt {
        Attempt::OtherUser => (stranger(), ChatSpec::private(OWNER)),
        Attempt::OtherChat => (UserSpec::new(OWNER, "Mila"), ChatSpec::group(-100)),
        _ => (UserSpec::new(OWNER, "Mila"), ChatSpec::private(OWNER)),
    };
    match attempt {
        Attempt::Replayed => {
            daemon.tap(&card, 0);
            daemon.wait_state(&id, "approved");
        }
        Attempt::Expired => {
            daemon.advance_clock(120);
            daemon.wait_state(&id, "expired");
        }
        _ => {}
    }
    let rejected = events(daemon, "press_rejected").len();
    daemon.bot.push_press(&from, chat, card.message_id, &data);
    daemon.wait_for(&format!("{attempt:?}: rejected"), |_| {
        events(daemon, "press_rejected").len() > rejected
    });
    let line = events(daemon, "press_rejected").pop().unwrap();
    let answer = rule_answer(daemon, "claude-code", BLOG, &command);
    assert_eq!(answer["status"], "none", "{attempt:?}: {answer}");
    (line["reason"].as_str().unwrap().to_owned(), id)
}

#[test]
fn a_forged_or_strangers_always_saves_nothing() {
    let daemon = Daemon::builder()
        .config_tail(&format!("{SHELL_CATEGORY}{WIPE_CATEGORY}"))
        .card_ttl("1m")
        .start();
    // (the attempt, the reasons its rejection may carry: a message whose buttons are gone is
    // not drawn any more, which the press may find first)
    let cases: [(Attempt, &[&str]); 8] = [
        (Attempt::ForgedTag, &["bad_tag"]),
        (Attempt::TruncatedTag, &["malformed"]),
        (Attempt::OtherUser, &["not_owner"]),
        (Attempt::OtherChat, &["not_private_chat"]),
        (Attempt::Replayed, &["not_open", "wrong_message"]),
        (Attempt::Destructive, &["wrong_message"]),
        (Attempt::NoHook, &["wrong_message"]),
        (Attempt::Expired, &["expired", "not_open", "wrong_message"]),
    ];
    for (n, (case, reasons)) in cases.into_iter().enumerate() {
        let (reason, id) = attempt(&daemon, n, case);
        assert!(reasons.contains(&reason.as_str()), "{case:?}: {reason}");
        let status = daemon.request(&json!({"v": 1, "op": "status", "id": id}))["status"].clone();
        let expected = match case {
            Attempt::Replayed => "approved",
            Attempt::Expired => "expired",
            _ => "card_shown",
        };
        assert_eq!(status, expected, "{case:?}: the press answered nothing");
    }
    assert!(
        events(&daemon, "rule_saved").is_empty(),
        "no press saved a rule"
    );
}

#[test]
fn with_the_daemon_stopped_a_saved_call_is_blocked() {
    let mut daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let event = event("claude-code", "cargo build", BLOG);
    assert!(allowed(
        "claude-code",
        &saved_by_always(&daemon, &rules, "claude-code", &event)
    ));
    daemon.stop_with(nix::sys::signal::Signal::SIGTERM);
    let output = run_hook("claude-code", &rules, &daemon.socket, &event);
    assert_eq!(output.status.code(), Some(2), "Claude Code: exit 2 blocks");
    let codex = run_hook(
        "codex",
        &rules,
        &daemon.socket,
        &self::event("codex", "cargo build", BLOG),
    );
    assert_eq!(codex_decision(&codex)["behavior"], "deny");
}

#[test]
fn the_rule_op_refuses_what_it_cannot_read() {
    let daemon = daemon();
    let cases = [
        (
            json!({"v":1,"op":"rule","kind":"shell","agent":"claude-code","tool":"Bash","cwd":BLOG}),
            "bad_request",
        ),
        (
            json!({"v":1,"op":"rule","kind":"shell","agent":"claude","tool":"Bash","cwd":BLOG,"text":"x"}),
            "bad_request",
        ),
        (
            json!({"v":1,"op":"rule","kind":"shell","agent":"codex","tool":"Bash","cwd":"blog","text":"x"}),
            "bad_request",
        ),
        (
            json!({"v":1,"op":"rule","kind":"nope","agent":"codex","tool":"Bash","cwd":BLOG,"text":"x"}),
            "unknown_kind",
        ),
        (
            json!({"v":1,"op":"rule","kind":"shell","agent":"codex","tool":"Bash","cwd":BLOG,"text":"x","extra":1}),
            "bad_request",
        ),
    ];
    for (request, reason) in cases {
        let answer = daemon.request(&request);
        assert_eq!(answer["status"], "refused", "{request}: {answer}");
        assert_eq!(answer["reason"], reason, "{request}: {answer}");
    }
    // A kind a rule may not answer (destructive) answers none, and so does an unsaved call.
    for kind in ["wipe", "shell"] {
        let answer = daemon.request(&json!({"v":1,"op":"rule","kind":kind,"agent":"codex",
            "tool":"Bash","cwd":BLOG,"text":"x"}));
        assert_eq!(answer, json!({"v":1,"status":"none"}), "{kind}");
    }
    // The hook key is for an approval-only kind only.
    let answer = daemon.request(
        &json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news",
        "text":"hi","cost_usd":"0.04","wait":false,
        "hook":{"agent":"codex","tool":"Bash","cwd":BLOG}}),
    );
    assert_eq!(answer["reason"], "field_not_shown", "{answer}");
}

#[test]
fn the_evening_summary_counts_the_calls_saved_rules_passed() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let event = event("claude-code", "make summary", BLOG);
    let saved = saved_by_always(&daemon, &rules, "claude-code", &event);
    assert!(allowed("claude-code", &saved));
    for _ in 0..2 {
        let output = run_hook("claude-code", &rules, &daemon.socket, &event);
        assert!(allowed("claude-code", &output));
    }
    daemon.pass_time_to(crate::fixture::today_at(21, 1));
    daemon.wait_for_event("summary_sent");
    daemon.wait_for("the summary in the chat", |bot| {
        bot.messages(OWNER).into_iter().any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.starts_with("Summary of"))
        })
    });
    let text = daemon
        .owner_chat()
        .into_iter()
        .find_map(|m| m.text.filter(|t| t.starts_with("Summary of")))
        .unwrap();
    assert!(
        text.contains("Passed by saved rules: 2."),
        "the summary counts the calls rules passed:\n{text}"
    );
}

/// Another uid's same call draws a card: a rule answers only the uid whose call it saved. The
/// tests run as root (as CI does), which may switch to another uid.
#[test]
fn another_uids_same_call_draws_a_card() {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    const OTHER_UID: u32 = 65534;
    assert_eq!(
        crate::fixture::current_uid(),
        0,
        "this test switches uid, so it runs as root"
    );
    let daemon = Daemon::builder()
        .config_tail(&format!("{SHELL_CATEGORY}{WIPE_CATEGORY}"))
        .allowed_uids(vec![crate::fixture::current_uid(), OTHER_UID])
        .start();
    crate::budgets::open_socket_to_others(&daemon);
    let rules = rules_file(daemon.dir.path(), RULES);
    let event = event("claude-code", "make other-uid", BLOG);
    assert!(allowed(
        "claude-code",
        &saved_by_always(&daemon, &rules, "claude-code", &event)
    ));
    let before = chat_len(&daemon);
    let mut hook = std::process::Command::new(crate::fixture::BIN)
        .args(["hook", "claude-code", "--rules"])
        .arg(&rules)
        .arg("--socket")
        .arg(&daemon.socket)
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let card = new_card(&daemon, before, "make other-uid");
    assert_eq!(labels(&card), [&["Yes", "No", "Always here"][..], &WHY]);
    daemon.tap(&card, 1);
    let output = finish(hook);
    assert_eq!(pre_tool_use(&output).0, "deny");
    assert!(
        events(&daemon, "rule_used").is_empty(),
        "root's rule passed nothing of another uid"
    );
    // Root's own call still passes by it.
    assert!(allowed(
        "claude-code",
        &run_hook("claude-code", &rules, &daemon.socket, &event)
    ));
}

/// Codex names the session's directory, not the one its command runs in (a `workdir` the model
/// picks per call), and a network approval grants a host: neither gets Always here, nor is a
/// saved rule looked for, so each draws a card of its own.
#[test]
fn a_codex_gate_and_a_network_approval_offer_no_always_and_use_no_rule() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), RULES);
    let saved = saved_by_always(
        &daemon,
        &rules,
        "claude-code",
        &event("claude-code", "cargo test --workspace", BLOG),
    );
    assert!(allowed("claude-code", &saved));
    let mut network = event("codex", "cargo test --workspace", BLOG);
    network["tool_input"]["description"] = json!("network-access https://crates.example:443");
    for (what, event) in [
        (
            "a Codex gate",
            event("codex", "cargo test --workspace", BLOG),
        ),
        ("a Codex network approval", network),
    ] {
        let before = chat_len(&daemon);
        let hook = spawn_hook(
            "codex",
            &rules,
            &daemon.socket,
            &[],
            event.to_string().as_bytes(),
        );
        let card = new_card(&daemon, before, "cargo test --workspace");
        assert_eq!(
            labels(&card),
            [&["Yes", "No"][..], &WHY],
            "{what}: no Always here"
        );
        daemon.tap(&card, 0);
        assert!(
            allowed("codex", &finish(hook)),
            "{what}: the owner's Yes allows it"
        );
    }
    assert!(
        events(&daemon, "rule_used").is_empty(),
        "the Claude Code rule answered no Codex call"
    );
}
