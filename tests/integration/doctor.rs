//! `consentd doctor` against a real daemon and the fake Bot API: a good setup exits 0, each
//! broken setup of the table names its problem on its own line and exits 1, `--json` says the
//! same as the lines, and the setup `consentd sandbox` prints passes.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fixture::{noon_today, offset_to, stdout, Daemon, BIN, TOKEN};

/// Every line, in order: the daemon's side, then the agents'.
const NAMES: &[&str] = &[
    "config",
    "token",
    "webhook",
    "owner",
    "journal",
    "modes",
    "socket",
    "claude-code hook",
    "claude-code mcp",
    "codex hook",
    "codex mcp",
];

/// The example rules, which any hook in these tests reads.
const RULES: &str = include_str!("../../examples/hooks/rules.toml");

/// Runs `consentd doctor --config CONFIG ARGS` with `project` as both the home directory and
/// the current directory (so no real agent settings are read), the token of the fixture unless
/// `env` sets another.
fn doctor(config: &Path, project: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .arg("doctor")
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(project)
        .env("HOME", project)
        .env("CONSENTD_BOT_TOKEN", TOKEN)
        .env_remove("CONSENTD_SOCKET")
        .env_remove("CONSENTD_HOOK_RULES")
        .env_remove("XDG_CONFIG_HOME")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The line of the check `name`.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|line| {
            line.strip_prefix("OK   ")
                .or_else(|| line.strip_prefix("FAIL "))
                .is_some_and(|rest| rest.starts_with(&format!("{name}: ")))
        })
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A Claude Code settings file with one PreToolUse hook.
fn claude_settings(matcher: &str, command: &str) -> String {
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command, "timeout": 600}]}]}})
    .to_string()
}

#[test]
fn a_good_setup_is_ok_on_every_line_and_exits_0() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let out = doctor(&daemon.config, project.path(), &[], &[]);
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        crate::fixture::stderr(&out)
    );
    let names: Vec<&str> = text
        .lines()
        .map(|l| l[5..].split(": ").next().unwrap())
        .collect();
    assert_eq!(names, NAMES, "{text}");
    assert!(text.lines().all(|l| l.starts_with("OK   ")), "{text}");
    assert!(line(&text, "token").contains("@emulated_bot"), "{text}");
    assert!(line(&text, "owner").contains("Telegram id 42"), "{text}");
    assert!(line(&text, "socket").contains("answers `kinds`"), "{text}");
    for agent in &NAMES[7..] {
        assert!(line(&text, agent).contains("not installed"), "{text}");
    }
}

#[test]
fn json_is_one_object_whose_checks_are_the_lines() {
    let daemon = Daemon::builder().no_owner().start();
    let project = tempfile::tempdir().unwrap();
    let lines = stdout(&doctor(&daemon.config, project.path(), &[], &[]));
    let out = doctor(&daemon.config, project.path(), &["--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["ok"], false);
    let checks = report["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES);
    for check in checks {
        let name = check["name"].as_str().unwrap();
        let detail = check["detail"].as_str().unwrap();
        let expected = match (check["ok"].as_bool().unwrap(), check["fix"].as_str()) {
            (true, None) => format!("OK   {name}: {detail}"),
            (false, Some(fix)) => format!("FAIL {name}: {detail}. Fix: {fix}"),
            other => panic!("{name}: ok and fix disagree: {other:?}"),
        };
        assert_eq!(line(&lines, name), expected);
    }
    assert_eq!(
        checks.iter().filter(|c| c["ok"] == false).count(),
        1,
        "only the owner: {report}"
    );
}

/// A broken setup: what breaks it, the line that must say so, and words that line must hold.
struct Broken {
    case: &'static str,
    name: &'static str,
    says: &'static str,
}

#[test]
fn each_broken_setup_names_its_problem_and_exits_1() {
    let table = [
        Broken {
            case: "bad token",
            name: "token",
            says: "getMe",
        },
        Broken {
            case: "webhook set",
            name: "webhook",
            says: "deleteWebhook",
        },
        Broken {
            case: "unpaired owner",
            name: "owner",
            says: "nobody is paired",
        },
        Broken {
            case: "owner blocked the bot",
            name: "owner",
            says: "bot was blocked by the user",
        },
        Broken {
            case: "tampered journal",
            name: "journal",
            says: "does not verify",
        },
        Broken {
            case: "world-writable state dir",
            name: "modes",
            says: "state",
        },
        Broken {
            case: "hook command missing",
            name: "claude-code hook",
            says: "/nonexistent/consentd",
        },
        Broken {
            case: "hook || true",
            name: "claude-code hook",
            says: "runs 2 commands",
        },
        Broken {
            case: "hook matcher",
            name: "claude-code hook",
            says: "leaves other tools out",
        },
        Broken {
            case: "codex never asks",
            name: "codex hook",
            says: "approval_policy = \"never\"",
        },
        Broken {
            case: "mcp not consentd",
            name: "claude-code mcp",
            says: "not consentd",
        },
        Broken {
            case: "hook waits past the default timeout",
            name: "claude-code hook",
            says: "the agent's default",
        },
        Broken {
            case: "mcp waits past its tool timeout",
            name: "codex mcp",
            says: "tool_timeout_sec",
        },
    ];
    for broken in table {
        let (out, _daemon, _project) = run_broken(broken.case);
        let text = stdout(&out);
        let found = line(&text, broken.name);
        assert!(
            found.starts_with("FAIL ") && found.contains(broken.says) && found.contains(". Fix: "),
            "{}: {found}\n{text}",
            broken.case
        );
        assert_eq!(out.status.code(), Some(1), "{}: {text}", broken.case);
        let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        for secret in [TOKEN, "123456:not-the-bots-token"] {
            assert!(
                !said.contains(secret),
                "{}: the token is printed:\n{said}",
                broken.case
            );
        }
    }
}

/// Sets up the broken `case` and runs doctor on it.
fn run_broken(case: &str) -> (Output, Daemon, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let rules = p.join("rules.toml");
    write(&rules, RULES);
    let rules = rules.display().to_string();
    let daemon = match case {
        "unpaired owner" => Daemon::builder().no_owner().start(),
        _ => Daemon::start(),
    };
    let mut env = Vec::new();
    match case {
        // The fixture's daemon without `owner.telegram_id`, and nobody has paired.
        "unpaired owner" => {}
        "bad token" => env.push(("CONSENTD_BOT_TOKEN", "123456:not-the-bots-token")),
        "webhook set" => daemon.bot.set_webhook("https://example.org/hook"),
        // A 403 no longer drops the card: it waits, retried, and doctor says so.
        "owner blocked the bot" => {
            daemon.bot.outage(
                "sendMessage",
                consentd_emulator::Scripted::error(403, "Forbidden: bot was blocked by the user"),
            );
            daemon.request(&crate::fixture::good_ask("to a chat that blocked the bot"));
            // A second try comes only once the first one's failure is stored.
            daemon.wait_for("a send refused 403 twice", |bot| {
                let refused = |call: &&consentd_emulator::Call| {
                    matches!(call.outcome, Some(consentd_emulator::Outcome::Error { code: 403, .. }))
                };
                bot.calls_to("sendmessage").iter().filter(refused).count() >= 2
            });
        }
        "tampered journal" => {
            let text = daemon.journal_text();
            let at = text.find(|c: char| c.is_ascii_digit()).unwrap();
            let digit = if &text[at..=at] == "7" { "8" } else { "7" };
            let tampered = format!("{}{digit}{}", &text[..at], &text[at + 1..]);
            std::fs::write(&daemon.journal, tampered).unwrap();
        }
        "world-writable state dir" => {
            std::fs::set_permissions(&daemon.state_dir, std::fs::Permissions::from_mode(0o777))
                .unwrap()
        }
        "hook command missing" => write(
            &p.join(".claude/settings.json"),
            &claude_settings(
                "*",
                &format!("/nonexistent/consentd hook claude-code --rules {rules}"),
            ),
        ),
        "hook || true" => write(
            &p.join(".claude/settings.json"),
            &claude_settings(
                "*",
                &format!("{BIN} hook claude-code --rules {rules} || true"),
            ),
        ),
        "hook matcher" => write(
            &p.join(".claude/settings.local.json"),
            &claude_settings("Bash", &format!("{BIN} hook claude-code --rules {rules}")),
        ),
        "codex never asks" => {
            let hooks = json!({"hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": format!("{BIN} hook codex --rules {rules}"),
                 "timeout": 600}]}]}});
            write(&p.join(".codex/hooks.json"), &hooks.to_string());
            write(
                &p.join(".codex/config.toml"),
                "approval_policy = \"never\"\n",
            );
        }
        "mcp not consentd" => write(
            &p.join(".mcp.json"),
            &json!({"mcpServers": {"consentd": {"command": "/bin/sh", "args": ["mcp"]}}})
                .to_string(),
        ),
        // No `timeout`: Claude Code gives the hook 600 s, less than the 900 it would wait.
        "hook waits past the default timeout" => write(
            &p.join(".claude/settings.json"),
            &json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command",
                "command": format!("{BIN} hook claude-code --rules {rules} --max-wait 900")}]}]}})
            .to_string(),
        ),
        // A duration as consentd mcp reads it: 15 minutes, past the tool's 600 s.
        "mcp waits past its tool timeout" => write(
            &p.join(".codex/config.toml"),
            &format!(
                "[mcp_servers.consentd]\ncommand = \"{BIN}\"\nargs = [\"mcp\", \"--max-wait\", \"15m\"]\ntool_timeout_sec = 600\n"
            ),
        ),
        other => panic!("no case {other}"),
    }
    let out = doctor(&daemon.config, p, &[], &env);
    (out, daemon, project)
}

#[test]
fn a_key_that_is_not_one_is_a_usage_error() {
    let project = tempfile::tempdir().unwrap();
    let out = doctor(
        Path::new("/nonexistent.toml"),
        project.path(),
        &["--key", "xyz"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// The setup `consentd sandbox` prints: its config, and the agent lines put where it says.
#[test]
fn what_the_sandbox_prints_passes_doctor() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let clock = state.path().join("clock");
    std::fs::write(&clock, offset_to(noon_today()).to_string()).unwrap();
    let dir = state.path().join("sandbox");
    let mut child = Command::new(BIN)
        .args(["sandbox", "--port", "0", "--state-dir"])
        .arg(&dir)
        .env("CONSENTD_TEST_CLOCK_FILE", &clock)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut json_lines = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while json_lines.len() < 2 && Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(json) = line.strip_prefix("  {") {
            json_lines.push(format!("{{{json}"));
        }
    }
    assert_eq!(
        json_lines.len(),
        2,
        "the sandbox prints .mcp.json and settings.json lines"
    );
    write(&project.path().join(".mcp.json"), &json_lines[0]);
    write(
        &project.path().join(".claude/settings.json"),
        &json_lines[1],
    );
    let out = doctor(
        &dir.join("consentd.toml"),
        project.path(),
        &[],
        &[("CONSENTD_BOT_TOKEN", "")],
    );
    let _ = child.kill();
    let _ = child.wait();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        line(&text, "claude-code hook").contains("hook claude-code"),
        "{text}"
    );
    assert!(
        line(&text, "claude-code mcp").contains(" mcp --origin"),
        "{text}"
    );
    assert!(
        line(&text, "token").contains("@consentd_sandbox_bot"),
        "{text}"
    );
}
