//! The hooks' gate: an approval-only category (`mode = "approve"`), where the agent runs the
//! command itself once the owner approves it. An approval allows exactly the input the card
//! was made from (Claude Code's `updatedInput`); a No denies; a wait past `--max-wait`
//! withdraws the ask and denies; the origin line puts the agent and its directory on the card.
//!
//! These use approve categories, `withdraw` and `origin`.

use serde_json::json;

use crate::fixture::Daemon;
use crate::hooks::{
    answer, answered, codex_decision, event as fixture_event, finish, permission_decision,
    pre_tool_use, record_id, rules_file, spawn_hook, unanswered, Press,
};
use std::time::{Duration, Instant};

/// An approval-only category for shell commands, as docs/HOOKS.md sets it up.
pub(crate) const SHELL_CATEGORY: &str = r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
mode = "approve"
enabled = true
text = "required"
fields = ["cwd"]
"#;

const GATE_RULES: &str = r#"
[[rule]]
name = "build"
tool = "Bash"
program = ["make", "npm"]
action = "gate"
kind = "shell"
fields = { cwd = "{cwd}" }
"#;

fn daemon() -> Daemon {
    Daemon::builder().config_tail(SHELL_CATEGORY).start()
}

#[test]
fn a_gated_command_the_owner_approves_is_allowed_exactly_as_shown() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    let gated = |agent: &str, fixture: &str, command: &str| {
        let event = fixture_event(fixture, Some(command));
        let output = answered(&daemon, &rules, agent, &event, command, Press::Yes);
        (event, output)
    };

    let (event, output) = gated(
        "claude-code",
        "claude-code/pre_tool_use_bash",
        "make yes-pre",
    );
    let (decision, reason) = pre_tool_use(&output);
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("approved by the owner"), "{reason}");
    assert_eq!(
        answer(&output)["hookSpecificOutput"]["updatedInput"],
        event["tool_input"]
    );
    // Nothing runs in consentd for an approval-only category.
    assert_eq!(daemon.runs(), 0);

    let fixture = "claude-code/permission_request_bash";
    let (event, output) = gated("claude-code", fixture, "make yes-request");
    assert_eq!(
        permission_decision(&output),
        json!({"behavior": "allow", "updatedInput": event["tool_input"]})
    );

    let (_, output) = gated("codex", "codex/permission_request_bash", "make yes-codex");
    assert_eq!(codex_decision(&output), json!({"behavior": "allow"}));
}

#[test]
fn a_gated_command_the_owner_declines_is_denied() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    for (agent, fixture) in [
        ("claude-code", "claude-code/pre_tool_use_bash"),
        ("claude-code", "claude-code/permission_request_bash"),
        ("codex", "codex/permission_request_bash"),
    ] {
        let command = format!("npm run no-{}", fixture.replace('/', "-"));
        let event = fixture_event(fixture, Some(&command));
        let output = answered(&daemon, &rules, agent, &event, &command, Press::No);
        let message = if fixture.ends_with("pre_tool_use_bash") {
            let (decision, reason) = pre_tool_use(&output);
            assert_eq!(decision, "deny");
            reason
        } else {
            let decision = permission_decision(&output);
            assert_eq!(decision["behavior"], "deny", "{decision}");
            decision["message"].as_str().unwrap().to_owned()
        };
        assert!(message.contains("declined by the owner"), "{message}");
    }
}

/// "No, and say why…" and the owner's reply: each agent's deny carries the reason, where the
/// model reads it (Claude Code's deny reason, a PermissionRequest's and Codex's deny message).
#[test]
fn a_gated_command_declined_with_a_reason_is_denied_with_that_reason() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    for (agent, fixture) in [
        ("claude-code", "claude-code/pre_tool_use_bash"),
        ("claude-code", "claude-code/permission_request_bash"),
        ("codex", "codex/permission_request_bash"),
    ] {
        let command = format!("npm run why-{}", fixture.replace('/', "-"));
        let reason = format!("Run the tests first ({agent}, {fixture})");
        let event = fixture_event(fixture, Some(&command));
        let hook = spawn_hook(
            agent,
            &rules,
            &daemon.socket,
            &[],
            event.to_string().as_bytes(),
        );
        crate::say_why::decline_with_reason(&daemon, &command, &reason);
        let output = finish(hook);
        let message = match (agent, fixture.ends_with("pre_tool_use_bash")) {
            (_, true) => {
                let (decision, reason) = pre_tool_use(&output);
                assert_eq!(decision, "deny");
                reason
            }
            ("codex", _) => {
                let decision = codex_decision(&output);
                assert_eq!(decision["behavior"], "deny", "{decision}");
                decision["message"].as_str().unwrap().to_owned()
            }
            _ => {
                let decision = permission_decision(&output);
                assert_eq!(decision["behavior"], "deny", "{decision}");
                decision["message"].as_str().unwrap().to_owned()
            }
        };
        assert!(message.contains("declined by the owner"), "{message}");
        assert!(message.contains(&reason), "{fixture}: {message}");
    }
}

#[test]
fn a_gate_past_max_wait_is_withdrawn_and_denied() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    let event = fixture_event("claude-code/pre_tool_use_bash", Some("make gate-timeout"));
    let output = unanswered(&daemon, &rules, &event);
    let (decision, reason) = pre_tool_use(&output);
    assert_eq!(decision, "deny");
    assert!(reason.contains("the ask was withdrawn"), "{reason}");
    let withdrawn = daemon.wait_for_event("withdrawn");
    assert_eq!(withdrawn["kind"], "shell");
    daemon.wait_state(&record_id(&reason), "withdrawn");
}

#[test]
fn the_origin_line_names_the_agent_and_its_directory_by_default() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    let event = fixture_event("claude-code/pre_tool_use_bash", Some("make gate-origin"));
    let hook = spawn_hook(
        "claude-code",
        &rules,
        &daemon.socket,
        &[],
        event.to_string().as_bytes(),
    );
    let card = daemon.card_of("make gate-origin");
    let text = card.text.clone().unwrap_or_default();
    assert!(text.contains("Claude Code · /home/mila/src/blog"), "{text}");
    daemon.press_yes(&card);
    assert_eq!(pre_tool_use(&finish(hook)).0, "allow");
}

/// One Yes allows one run: the same event again (Claude Code's same tool-use id, Codex's same
/// command in the same turn) asks anew, and with nobody answering it is withdrawn and denied.
#[test]
fn a_replayed_event_is_not_allowed_again_without_a_new_yes() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    for (agent, fixture) in [
        ("claude-code", "claude-code/pre_tool_use_bash"),
        ("codex", "codex/permission_request_bash"),
    ] {
        let command = format!("make replay-{agent}");
        let event = fixture_event(fixture, Some(&command));
        let first = answered(&daemon, &rules, agent, &event, &command, Press::Yes);
        let allowed = match agent {
            "codex" => codex_decision(&first)["behavior"] == "allow",
            _ => pre_tool_use(&first).0 == "allow",
        };
        assert!(allowed, "{agent}: the first run is allowed");

        let started = Instant::now();
        let again = finish(spawn_hook(
            agent,
            &rules,
            &daemon.socket,
            &["--max-wait", "3"],
            event.to_string().as_bytes(),
        ));
        // A replay answered from the old record would come back at once.
        assert!(
            started.elapsed() >= Duration::from_secs(3),
            "{agent}: answered in {:?}",
            started.elapsed()
        );
        let message = match agent {
            "codex" => {
                let decision = codex_decision(&again);
                assert_eq!(decision["behavior"], "deny", "{agent}: {decision}");
                decision["message"].as_str().unwrap().to_owned()
            }
            _ => {
                let (decision, reason) = pre_tool_use(&again);
                assert_eq!(decision, "deny", "{agent}: {reason}");
                reason
            }
        };
        assert!(
            message.contains("the ask was withdrawn"),
            "{agent}: {message}"
        );
    }
}

/// Whether `pid` holds a socket (the hook's connection to the daemon).
fn holds_a_socket(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            })
        })
        .unwrap_or(false)
}

/// Whether a hook's output lets the call run.
fn allows(agent: &str, output: &std::process::Output) -> bool {
    match agent {
        "codex" => codex_decision(output)["behavior"] == "allow",
        _ => pre_tool_use(output).0 == "allow",
    }
}

/// One Yes allows one run, also when two hooks wait on the same command at once (two parallel
/// tool calls of one message; Claude Code's events differ only in their tool-use ids, Codex's
/// are the same event): a gate that shares one card between them would let the agent run the
/// command twice on the owner's single Yes. Either each call gets a card of its own, or the
/// shared approval lets exactly one of them run.
#[test]
fn two_hooks_waiting_on_the_same_command_are_not_both_allowed_by_one_yes() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    for (agent, fixture) in [
        ("claude-code", "claude-code/pre_tool_use_bash"),
        ("codex", "codex/permission_request_bash"),
    ] {
        let command = format!("make twice-{agent}");
        let first = fixture_event(fixture, Some(&command));
        let mut second = first.clone();
        if agent == "claude-code" {
            second["tool_use_id"] = json!("toolu_01SECONDPARALLELCALL");
        }
        let wait = ["--max-wait", "5"];
        let spawn = |event: &serde_json::Value| {
            spawn_hook(
                agent,
                &rules,
                &daemon.socket,
                &wait,
                event.to_string().as_bytes(),
            )
        };
        let one = spawn(&first);
        let card = daemon.card_of(&command);
        let two = spawn(&second);
        // The second hook's ask reaches the daemon while the first card is open.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !holds_a_socket(two.id()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(500));
        daemon.press_yes(&card);
        let outputs = [finish(one), finish(two)];
        let allowed = outputs.iter().filter(|o| allows(agent, o)).count();
        assert_eq!(
            allowed, 1,
            "{agent}: one Yes on one card must let `{command}` run once, not {allowed} times"
        );
    }
}

/// The text of the gate card a call of `command` draws through `agent`'s hook (its event read
/// from `fixture`) with `description` beside it, and the hook's output once the owner pressed No.
fn card_with_description(
    daemon: &Daemon,
    rules: &std::path::Path,
    (agent, fixture): (&str, &str),
    command: &str,
    description: &str,
) -> (String, std::process::Output) {
    let mut event = fixture_event(fixture, Some(command));
    event["tool_input"]["description"] = json!(description);
    crate::hooks::answered_card(daemon, rules, agent, &event, command, Press::No)
}

/// Claude Code asks no network approvals: a `description` of `network-access <target>` on its
/// Bash call is the model's own words (its Bash takes a description from the model), even in the
/// form Codex writes, and a host is free to read as a sentence. The card of a Claude Code call
/// shows the command alone.
#[test]
fn a_claude_code_card_shows_no_network_line_from_the_models_description() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    let (text, _) = card_with_description(
        &daemon,
        &rules,
        ("claude-code", "claude-code/pre_tool_use_bash"),
        "make push-release",
        "network-access https://dry-run.nothing-is-pushed:443",
    );
    assert!(
        !text.contains("nothing-is-pushed"),
        "a Claude Code card shows the model's description as a network line: {text}"
    );
}

/// Codex asks its `PermissionRequest` hook for network approvals too, as the tool `Bash`, with
/// `tool_input.command` the command that wants the network and `tool_input.description`
/// `network-access {protocol}://{host}:{port}` (its `format_network_target`, in
/// `core/src/tools/network_approval.rs`; openai/codex pull request #17563). An allow grants that
/// host, so the gate's card must name it: a card that shows only the command has the owner
/// approve network access to a host they never saw.
#[test]
fn a_codex_network_approval_card_names_the_host_of_a_target_with_scheme_and_port() {
    let daemon = daemon();
    let rules = rules_file(daemon.dir.path(), GATE_RULES);
    let cases = [
        (
            "https",
            "make network-tls",
            "network-access https://exfil.example.net:443",
            "exfil.example.net",
        ),
        (
            "http",
            "make network-plain",
            "network-access http://leak.example.org:80",
            "leak.example.org",
        ),
    ];
    for (name, command, description, host) in cases {
        let codex = ("codex", "codex/permission_request_bash");
        let (text, output) = card_with_description(&daemon, &rules, codex, command, description);
        let decision = codex_decision(&output);
        assert_eq!(decision["behavior"], "deny", "{name}: {decision}");
        assert!(
            text.contains(host),
            "{name}: the card approves network access to {host} without naming it: {text}"
        );
    }
}
