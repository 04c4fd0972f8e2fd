//! `consentd mcp` driven by the official MCP Python SDK's stdio client (tests/mcp/drive.py)
//! against a real daemon, with the owner pressing in the Bot API emulator.
//!
//! The SDK is installed from PyPI into target/mcp-venv on first use (tests/mcp/requirements.txt
//! pins it); if that cannot be done the tests fail, they never skip.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::fixture::{consentd, Daemon, BIN};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The venv's python, made once per test run.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = Path::new(ROOT).join("target/mcp-venv");
        let python = venv.join("bin/python");
        let requirements = Path::new(ROOT).join("tests/mcp/requirements.txt");
        let stamp = venv.join("requirements.txt");
        let wanted = std::fs::read(&requirements).unwrap();
        if std::fs::read(&stamp).ok().as_deref() != Some(&wanted[..]) {
            run(Command::new("python3")
                .arg("-m")
                .arg("venv")
                .arg("--clear")
                .arg(&venv));
            run(Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(&requirements));
            std::fs::write(&stamp, &wanted).unwrap();
        }
        python
    })
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed (the MCP SDK is needed from PyPI): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The Python driver, running one script against `consentd mcp`.
struct Driver {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Driver {
    fn start(daemon: &Daemon, mcp_flags: &[&str], steps: Value) -> Driver {
        let mut server = vec![
            json!(BIN),
            json!("mcp"),
            json!("--socket"),
            json!(daemon.socket),
        ];
        server.extend(mcp_flags.iter().map(|flag| json!(flag)));
        let script = json!({ "server": server, "steps": steps });
        let mut child = Command::new(python())
            .arg(Path::new(ROOT).join("tests/mcp/drive.py"))
            .arg(script.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        Driver { child, lines }
    }

    /// The next step's line.
    fn next(&mut self) -> Value {
        match self.lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}")),
            Err(_) => {
                let _ = self.child.kill();
                panic!(
                    "the driver gave no step line; its stderr:\n{}",
                    stderr_of(&mut self.child)
                );
            }
        }
    }

    fn finish(mut self) {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "driver: {}", stderr_of(&mut self.child));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(stderr) = child.stderr.as_mut() {
        let _ = std::io::Read::read_to_string(stderr, &mut text);
    }
    text
}

/// The newest record of this uid, once there is one.
fn newest_record(daemon: &Daemon) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let page = daemon.request(&json!({"v": 1, "op": "list"}));
        if let Some(id) = page["records"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no record appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_journal_verifies(daemon: &Daemon) {
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert!(verify.status.success(), "{verify:?}");
}

fn ask_arguments(text: &str) -> Value {
    json!({"kind": "publish_x", "target": "@mila_news", "text": text,
           "fields": {"reply_to": "https://example.org/1"}, "cost_usd": "0.04"})
}

/// Every example call in docs/AGENT-AUTHOR.md's `jsonl` blocks, by tool.
fn documented_calls() -> Value {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/AGENT-AUTHOR.md")).unwrap();
    let mut calls = serde_json::Map::new();
    let mut inside = false;
    for line in doc.lines() {
        match line.trim() {
            "```jsonl" => inside = true,
            "```" => inside = false,
            line if inside && !line.is_empty() => {
                let call: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("AGENT-AUTHOR.md: {line}: {e}"));
                let tool = call["tool"]
                    .as_str()
                    .expect("a documented call names its tool");
                let list = calls.entry(tool).or_insert_with(|| json!([]));
                list.as_array_mut().unwrap().push(call["arguments"].clone());
            }
            _ => {}
        }
    }
    Value::Object(calls)
}

#[test]
fn the_sdk_connects_lists_the_tools_and_the_documented_calls_fit_their_schemas() {
    let daemon = Daemon::start();
    let calls = documented_calls();
    let documented: usize = calls
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    assert!(
        documented >= 6,
        "docs/AGENT-AUTHOR.md documents {documented} calls"
    );
    let mut driver = Driver::start(&daemon, &[], json!([{ "list_tools": calls }]));
    let listed = driver.next();
    driver.finish();
    assert_eq!(listed["protocol"], "2025-11-25", "{listed}");
    assert_eq!(
        listed["tools"],
        json!([
            "consent_ask",
            "consent_mandate",
            "consent_status",
            "consent_list",
            "consent_kinds",
            "consent_withdraw",
            "approval_prompt"
        ])
    );
    assert_eq!(
        listed["invalid"],
        json!([]),
        "documented calls that do not validate"
    );
}

#[test]
fn an_ask_the_owner_approves_is_executed_and_says_not_to_run_it_again() {
    let daemon = Daemon::start();
    let steps = json!([{ "call": "consent_ask", "arguments": ask_arguments("From MCP"), "progress": true }]);
    let mut driver = Driver::start(&daemon, &["--origin", "Tests · ~/blog"], steps);
    let id = newest_record(&daemon);
    let card = daemon.card_of(&id);
    assert!(card.text.as_deref().unwrap().contains("From MCP"));
    daemon.press_yes(&card);
    let result = driver.next();
    driver.finish();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structured"]["status"], "executed", "{result}");
    assert_eq!(result["structured"]["id"], json!(id));
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("Do not run it again"),
        "{result}"
    );
    assert!(
        !result["progress"].as_array().unwrap().is_empty(),
        "progress was reported"
    );
    assert_eq!(daemon.runs(), 1);
    assert_journal_verifies(&daemon);
}

#[test]
fn a_declined_ask_says_not_to_retry() {
    let daemon = Daemon::start();
    let steps = json!([{ "call": "consent_ask", "arguments": ask_arguments("Declined via MCP") }]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let id = newest_record(&daemon);
    daemon.press_no(&daemon.card_of(&id));
    let result = driver.next();
    driver.finish();
    assert_eq!(result["structured"]["status"], "declined", "{result}");
    assert!(
        result["text"].as_str().unwrap().contains("Do not retry"),
        "{result}"
    );
    assert_eq!(daemon.runs(), 0);
    assert_journal_verifies(&daemon);
}

/// "No, and say why…" and the owner's reply: `consent_ask` answers with the reason as the
/// answer's `message` and in the text the model reads, and `approval_prompt`'s deny carries it.
#[test]
fn a_reason_given_with_a_no_reaches_the_model() {
    let daemon = Daemon::builder()
        .config_tail(crate::hooks_gate::SHELL_CATEGORY)
        .start();
    let steps =
        json!([{ "call": "consent_ask", "arguments": ask_arguments("Declined with a reason") }]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let id = newest_record(&daemon);
    let reason = "Post it tomorrow morning instead";
    crate::say_why::decline_with_reason(&daemon, &id, reason);
    let result = driver.next();
    driver.finish();
    assert_eq!(result["structured"]["status"], "declined", "{result}");
    assert_eq!(result["structured"]["message"], reason, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains(reason), "{text}");
    assert!(text.contains("follow what they said"), "{text}");

    let mut server = PromptServer::start(&daemon, "60s");
    let command = "make the-prompt-with-a-reason";
    server.prompt(1, command, "toolu_W");
    let reason = "Use make check, not this";
    crate::say_why::decline_with_reason(&daemon, command, reason);
    let decision = server.next_decision();
    assert_eq!(decision["behavior"], "deny", "{decision}");
    let message = decision["message"].as_str().unwrap();
    assert!(message.contains(reason), "{message}");
    assert_eq!(daemon.runs(), 0);
    assert_journal_verifies(&daemon);
}

#[test]
fn a_refused_ask_is_a_tool_error_that_says_what_to_fix() {
    let daemon = Daemon::start();
    let steps =
        json!([{ "call": "consent_ask", "arguments": ask_arguments("hidden\u{200B}text") }]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let result = driver.next();
    driver.finish();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structured"]["status"], "refused", "{result}");
    assert_eq!(
        result["structured"]["reason"], "invisible_character",
        "{result}"
    );
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("U+200B") && text.contains("Fix exactly that"),
        "{text}"
    );
    assert!(
        daemon.owner_chat().iter().all(|m| m.buttons().is_empty()),
        "no card"
    );
}

#[test]
fn a_wait_past_max_wait_answers_pending_and_the_record_goes_on() {
    let daemon = Daemon::start();
    let steps = json!([{ "call": "consent_ask", "arguments": ask_arguments("Slow owner") }]);
    let mut driver = Driver::start(&daemon, &["--max-wait", "2s"], steps);
    let result = driver.next();
    driver.finish();
    assert_eq!(result["isError"], false, "{result}");
    let id = result["structured"]["id"]
        .as_str()
        .expect("the id to follow up on")
        .to_owned();
    assert_eq!(result["structured"]["status"], "card_shown", "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("call consent_status with id {id}")),
        "{text}"
    );
    // Still open in the daemon, and still answerable.
    assert_eq!(daemon.wait_state(&id, "card_shown")["status"], "card_shown");
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    assert_journal_verifies(&daemon);
}

#[test]
fn a_cancelled_call_leaves_the_record_open() {
    let daemon = Daemon::start();
    let steps = json!([
        { "call": "consent_ask", "arguments": ask_arguments("Cancelled wait"),
          "cancel_after_progress": true },
        { "call": "consent_list", "arguments": {} },
    ]);
    let mut driver = Driver::start(&daemon, &["--progress-every", "1s"], steps);
    assert_eq!(driver.next()["step"], "cancelled");
    let listed = driver.next();
    driver.finish();
    let records = listed["structured"]["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{listed}");
    let id = records[0]["id"].as_str().unwrap();
    assert_eq!(daemon.wait_state(id, "card_shown")["final"], false);
    assert_eq!(daemon.runs(), 0);
}

#[test]
fn withdraw_kinds_and_status_through_the_tools() {
    let daemon = Daemon::start();
    let mut arguments = ask_arguments("Taken back");
    arguments["wait"] = json!(false);
    let steps = json!([
        { "call": "consent_kinds", "arguments": {} },
        { "call": "consent_ask", "arguments": arguments },
    ]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let kinds = driver.next();
    let asked = driver.next();
    driver.finish();
    let names: Vec<&str> = kinds["structured"]["kinds"]
        .as_array()
        .unwrap_or_else(|| panic!("{kinds}"))
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["publish_x", "send_letter", "wipe_drafts"],
        "{kinds}"
    );
    let id = asked["structured"]["id"].as_str().unwrap().to_owned();
    daemon.card_of(&id);
    let steps = json!([
        { "call": "consent_withdraw", "arguments": { "id": id } },
        { "call": "consent_status", "arguments": { "id": id } },
    ]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let withdrawn = driver.next();
    let status = driver.next();
    driver.finish();
    assert_eq!(
        withdrawn["structured"]["status"], "withdrawn",
        "{withdrawn}"
    );
    assert_eq!(status["structured"]["status"], "withdrawn", "{status}");
    assert_eq!(status["structured"]["final"], true, "{status}");
    assert_journal_verifies(&daemon);
}

/// `consentd mcp --approval-kind shell` spoken to as raw JSON-RPC on stdio, initialized.
struct PromptServer {
    server: Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl PromptServer {
    fn start(daemon: &Daemon, max_wait: &str) -> PromptServer {
        let mut server = Command::new(BIN)
            .args(["mcp", "--socket"])
            .arg(&daemon.socket)
            .args(["--approval-kind", "shell", "--max-wait", max_wait])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = server.stdin.take().unwrap();
        let stdout = server.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel::<Value>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = sender.send(serde_json::from_str(&line).unwrap());
            }
        });
        let mut started = PromptServer {
            server,
            stdin,
            lines,
        };
        started.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        );
        assert_eq!(started.next()["id"], 0);
        started.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        started
    }

    fn send(&mut self, message: Value) {
        use std::io::Write as _;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Asks `approval_prompt` about the Bash `command` as request `id`, for tool use `tool_use_id`.
    fn prompt(&mut self, id: u64, command: &str, tool_use_id: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "approval_prompt",
            "arguments": {"tool_name": "Bash", "input": {"command": command},
                          "tool_use_id": tool_use_id}}}),
        );
    }

    fn next(&self) -> Value {
        self.lines.recv_timeout(Duration::from_secs(30)).unwrap()
    }

    /// The next answer's permission decision (`behavior` allow or deny).
    fn next_decision(&self) -> Value {
        let answer = self.next();
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        serde_json::from_str(text).unwrap()
    }
}

impl Drop for PromptServer {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Claude Code's `--permission-prompt-tool` answered by the owner: one Yes lets one call run.
/// Two parallel tool calls with the same command (tool-use ids `toolu_A` and `toolu_B`) that
/// wait at once must not both be allowed by the single Yes on a card they share; either each
/// gets a card of its own, or only one of them is allowed.
#[test]
fn two_approval_prompts_for_the_same_command_are_not_both_allowed_by_one_yes() {
    let daemon = Daemon::builder()
        .config_tail(crate::hooks_gate::SHELL_CATEGORY)
        .start();
    let mut server = PromptServer::start(&daemon, "5s");
    let command = "make twice-through-the-prompt";
    server.prompt(1, command, "toolu_A");
    let card = daemon.card_of(command);
    server.prompt(2, command, "toolu_B");
    // The second call's ask reaches the daemon while the first card is open.
    std::thread::sleep(Duration::from_millis(700));
    daemon.press_yes(&card);
    let allowed = (0..2)
        .filter(|_| server.next_decision()["behavior"] == "allow")
        .count();
    assert_eq!(
        allowed, 1,
        "one Yes on one card must let `{command}` run once, not {allowed} times"
    );
}

/// Claude Code's `--permission-prompt-tool`: one Yes lets one call run (docs/HOOKS.md, "A gate's
/// ask carries no idempotency key"). A prompt that comes again with the same tool-use id and the
/// same input — a retried or replayed prompt, a resumed session, or the model calling
/// `approval_prompt` itself with an id it has seen — must not be allowed again on the Yes the
/// first one got: it needs a card and a Yes of its own (or a deny).
#[test]
fn a_replayed_approval_prompt_is_not_allowed_again_without_a_new_yes() {
    let daemon = Daemon::builder()
        .config_tail(crate::hooks_gate::SHELL_CATEGORY)
        .start();
    let mut server = PromptServer::start(&daemon, "3s");
    let command = "rm -rf build-once";
    let cards = |daemon: &Daemon| {
        daemon
            .owner_chat()
            .iter()
            .filter(|m| m.text.as_deref().is_some_and(|t| t.contains(command)))
            .count()
    };
    server.prompt(1, command, "toolu_once");
    daemon.press_yes(&daemon.card_of(command));
    let first = server.next_decision();
    assert_eq!(
        first["behavior"], "allow",
        "the first prompt, approved: {first}"
    );
    let cards_before = cards(&daemon);
    // The same prompt again; nobody presses anything.
    server.prompt(2, command, "toolu_once");
    let again = server.next_decision();
    let cards_after = cards(&daemon);
    assert_ne!(
        again["behavior"], "allow",
        "the replayed prompt for `{command}` was allowed on the first prompt's Yes, with no card \
         of its own (cards before {cards_before}, after {cards_after}): {again}"
    );
}

/// While Telegram refuses the bot, `consent_ask`'s progress tells the model the owner cannot be
/// reached and not to retry.
#[test]
fn progress_says_why_an_ask_waits_in_words_the_model_can_act_on() {
    let daemon = Daemon::builder()
        .env("CONSENTD_TEST_FAST_RETRY", "1")
        .start();
    daemon
        .bot
        .outage("getUpdates", consentd_emulator::Scripted::conflict());
    daemon
        .bot
        .outage("sendMessage", consentd_emulator::Scripted::conflict());
    daemon.wait_for("a poll refused", |bot| {
        bot.calls_to("getupdates").iter().any(|call| {
            matches!(
                call.outcome,
                Some(consentd_emulator::Outcome::Error { code: 409, .. })
            )
        })
    });
    let steps = json!([{ "call": "consent_ask", "arguments": ask_arguments("Cut off, via MCP"), "progress": true }]);
    let mut driver = Driver::start(&daemon, &[], steps);
    let id = newest_record(&daemon);
    daemon.bot.end_outage("getUpdates");
    daemon.bot.end_outage("sendMessage");
    let card = daemon.card_of(&id);
    daemon.press_no(&card);
    let result = driver.next();
    driver.finish();
    assert_eq!(result["structured"]["status"], "declined", "{result}");
    let messages: Vec<&str> = result["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    let cut = messages
        .iter()
        .find(|m| m.contains("the owner cannot be reached since "))
        .unwrap_or_else(|| panic!("{messages:?}"));
    assert!(
        cut.contains("do not retry; try later or ask the owner another way"),
        "{cut}"
    );
    assert!(cut.contains("conflict: "), "{cut}");
}
