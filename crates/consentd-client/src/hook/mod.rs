//! `consentd hook claude-code` and `consentd hook codex`: an agent's permission hook that
//! routes its outside actions through consentd (docs/HOOKS.md).
//!
//! One event on stdin, one answer in the agent's own format (`answer`), and it never fails
//! open: an unreadable event, a bad rules file, a daemon that does not answer, a wait cut
//! short and even a panic all block the call. The parts: `event` reads the event, `rules`
//! maps the call to a decision (pure, shared with the MCP server), `shell` reads a command
//! line for the rules, `ask` talks to the daemon through `client`.

mod answer;
mod ask;
mod call;
mod event;
mod network;
mod plain;
pub mod rules;
pub mod shell;
mod template;

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::client;

use answer::{Reply, Verdict};
use event::{Agent, Event};
use rules::{Call, Decision};

/// The most bytes an event may have; a larger one is blocked unread.
const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Where the rules are when neither `--rules` nor `$CONSENTD_HOOK_RULES` says.
const DEFAULT_RULES: &str = "consentd/hook-rules.toml";

const HOOK_AFTER: &str = "\
Reads the agent's hook event on stdin and answers in its format. It never fails open: a bad
event, a bad rules file, no daemon or a panic blocks the call (Claude Code: exit 2 and the
reason on stderr; Codex: a deny). See docs/HOOKS.md.";

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Answer Claude Code's PreToolUse and PermissionRequest hooks
    #[command(after_help = HOOK_AFTER)]
    ClaudeCode(HookArgs),
    /// Answer Codex's PermissionRequest hook
    #[command(after_help = HOOK_AFTER)]
    Codex(HookArgs),
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The rules file (default: $CONSENTD_HOOK_RULES, else
    /// $XDG_CONFIG_HOME/consentd/hook-rules.toml, else ~/.config/consentd/hook-rules.toml)
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// The daemon's socket (default: $CONSENTD_SOCKET, else /run/consentd/consent.sock)
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Stop waiting for the owner after this many seconds: below the agent's hook timeout
    /// (Claude Code's default is 600 s)
    #[arg(long, value_name = "SECONDS", default_value_t = 540,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_wait: u64,
    /// Send no origin line with the asks (by default each card shows where it comes from:
    /// the agent and its working directory, "Claude Code · ~/src/blog")
    #[arg(long)]
    no_origin: bool,
}

/// Runs the hook; whatever happens inside, the exit code never lets a failed call through.
pub fn main(command: HookCommand) -> ExitCode {
    let (agent, args) = match command {
        HookCommand::ClaudeCode(args) => (Agent::ClaudeCode, args),
        HookCommand::Codex(args) => (Agent::Codex, args),
    };
    emit(&guarded(|| run(agent, &args)))
}

/// Runs the hook, a panic turned into a block: left alone it would end the process with exit
/// 101, which both agents read as a non-blocking error and let the call through.
fn guarded(hook: impl FnOnce() -> Reply) -> Reply {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook))
        .unwrap_or_else(|_| Reply::block("internal error; the call is blocked"))
}

fn emit(reply: &Reply) -> ExitCode {
    if !reply.stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{}", reply.stdout)
            .and_then(|()| out.flush())
            .is_err()
        {
            let _ = writeln!(
                std::io::stderr(),
                "consentd hook: cannot write the answer; the call is blocked"
            );
            return ExitCode::from(answer::EXIT_BLOCK);
        }
    }
    if !reply.stderr.is_empty() {
        let _ = writeln!(std::io::stderr(), "{}", reply.stderr);
    }
    ExitCode::from(reply.code)
}

fn run(agent: Agent, args: &HookArgs) -> Reply {
    let event =
        read_stdin().and_then(|bytes| event::parse(agent, &bytes).map_err(|e| e.to_string()));
    match event {
        Ok(event) => answer::render(agent, Some(event.name), &decide(agent, args, &event)),
        Err(message) => answer::render(
            agent,
            None,
            &Verdict::Fail {
                message: format!("{message}; the call is blocked"),
            },
        ),
    }
}

fn read_stdin() -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_EVENT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the event on stdin: {e}"))?;
    if bytes.len() > MAX_EVENT_BYTES {
        return Err(event::EventError::TooLarge(MAX_EVENT_BYTES).to_string());
    }
    Ok(bytes)
}

/// The rules file: `--rules`, else `$CONSENTD_HOOK_RULES`, else the user's config directory.
pub fn rules_path(flag: Option<&PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = flag {
        return Ok(path.clone());
    }
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = env("CONSENTD_HOOK_RULES") {
        return Ok(PathBuf::from(path));
    }
    if let Some(config) = env("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(config).join(DEFAULT_RULES));
    }
    env("HOME")
        .map(|home| PathBuf::from(home).join(".config").join(DEFAULT_RULES))
        .ok_or_else(|| "no rules file: give --rules or set $CONSENTD_HOOK_RULES".to_owned())
}

fn decide(agent: Agent, args: &HookArgs, event: &Event) -> Verdict {
    let rules = match rules_path(args.rules.as_ref())
        .and_then(|path| rules::load(&path).map_err(|e| e.to_string()))
    {
        Ok(rules) => rules,
        Err(message) => {
            return Verdict::Fail {
                message: format!("{message}; every call is blocked until it is fixed"),
            }
        }
    };
    let call = Call {
        tool_name: &event.tool_name,
        tool_input: &event.tool_input,
        cwd: event.cwd.as_deref(),
        // Only Codex asks network approvals, through `PermissionRequest`; anywhere else a
        // `description` is the model's own words.
        network: (agent == Agent::Codex && event.name == event::EventName::PermissionRequest)
            .then(|| rules::network_access(&event.tool_input))
            .flatten(),
    };
    let (mode, ask) = match for_network(rules.decide(&call), &call) {
        Decision::Unmatched => return Verdict::NoDecision,
        Decision::Pass { rule } => {
            return Verdict::Allow {
                reason: format!("allowed by consentd's hook rule {rule}"),
                updated_input: None,
            }
        }
        Decision::Block { message } => {
            return Verdict::Deny {
                message: format!("blocked by consentd: {message}"),
            }
        }
        Decision::Route(ask) => (ask::Mode::Route, ask),
        Decision::Gate(ask) => (ask::Mode::Gate, ask),
    };
    let home = std::env::var("HOME").ok();
    let asking = ask::Asking {
        socket: client::socket_path(args.socket.clone()),
        max_wait: Duration::from_secs(args.max_wait),
        idempotency_key: idempotency_key(mode, event),
        origin: (!args.no_origin).then(|| event.origin(agent, home.as_deref())),
        hook: hook_call(mode, agent, event, call.network.is_some()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(ask::ask(mode, &ask, &asking, &event.tool_input)),
        Err(error) => Verdict::Fail {
            message: format!("cannot start the async runtime: {error}; the call is blocked"),
        },
    }
}

/// A rule's decision, with a network approval taken from a pass or a route: a rule names a
/// command, and a network approval grants a host, which a pass or a route for the command says
/// nothing of. A pass becomes no decision (the agent's own prompt asks the user); a route is
/// blocked, since the command is consentd's to run and the agent's own flow must not get it
/// back this way (the `description` is the model's to write). A gate stays a gate, its card
/// naming the host (`rules::shown_call`).
fn for_network(decision: Decision, call: &Call<'_>) -> Decision {
    if call.network.is_none() {
        return decision;
    }
    match decision {
        Decision::Pass { .. } => Decision::Unmatched,
        Decision::Route(_) => Decision::Block {
            message: "a network approval for a command consentd runs itself is not given"
                .to_owned(),
        },
        decision => decision,
    }
}

/// The call a gate is for, when the event names the directory it runs in: a saved exact rule
/// is looked for first, and the card offers Always here. A route is consentd's to run, and a
/// block or a pass never reaches the daemon, so only a gate carries it (a block rule is
/// decided before, so no saved rule answers a call a block rule matches).
///
/// Claude Code's only. Codex's event gives the session's directory, while its command runs in
/// a `workdir` the model picks per call and the event does not carry: a rule "here" could pass
/// the same command in any directory. A network approval never carries it either: what its Yes
/// grants is a host, which one exact rule for a command must not keep granting.
fn hook_call(mode: ask::Mode, agent: Agent, event: &Event, network: bool) -> Option<ask::HookCall> {
    let rules_apply = mode == ask::Mode::Gate && agent == Agent::ClaudeCode && !network;
    let cwd = event.cwd.clone().filter(|_| rules_apply)?;
    Some(ask::HookCall {
        agent: "claude-code",
        tool: event.tool_name.clone(),
        cwd,
    })
}

/// The ask's idempotency key: a route's only. A gate sends none: the daemon answers a key it
/// knows with its record in whatever state that is, so a replayed event (the same tool-use id,
/// or Codex's same command in the same turn) would be `approved` again and allowed with no new
/// Yes. Without a key each gated call gets a card of its own; a retried hook asks again.
fn idempotency_key(mode: ask::Mode, event: &Event) -> Option<String> {
    match mode {
        ask::Mode::Route => event.idempotency_key(),
        ask::Mode::Gate => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_blocks_the_call() {
        let reply = guarded(|| panic!("a bug in the hook"));
        assert_eq!(reply.code, answer::EXIT_BLOCK);
        assert_eq!(reply.stdout, "");
        assert!(reply.stderr.contains("blocked"), "{}", reply.stderr);
    }

    #[test]
    fn a_zero_wait_is_a_usage_error() {
        use clap::Parser as _;
        /// `consentd hook` as the command line mounts it.
        #[derive(Debug, clap::Parser)]
        struct Hook {
            #[command(subcommand)]
            command: HookCommand,
        }
        let parse = |wait: &str| Hook::try_parse_from(["hook", "codex", "--max-wait", wait]);
        // A usage error exits 2, which blocks in both agents.
        assert_eq!(parse("0").unwrap_err().exit_code(), 2);
        assert!(parse("1").is_ok());
    }

    #[test]
    fn only_a_route_carries_an_idempotency_key() {
        let claude = br#"{"hook_event_name": "PreToolUse", "session_id": "s",
            "tool_use_id": "toolu_1", "tool_name": "Bash", "tool_input": {"command": "make"}}"#;
        let codex = br#"{"hook_event_name": "PermissionRequest", "session_id": "s",
            "turn_id": "t1", "tool_name": "Bash", "tool_input": {"command": "make"}}"#;
        for (agent, bytes) in [(Agent::ClaudeCode, &claude[..]), (Agent::Codex, &codex[..])] {
            let event = event::parse(agent, bytes).unwrap();
            assert!(
                idempotency_key(ask::Mode::Route, &event).is_some(),
                "{agent:?} route"
            );
            assert_eq!(
                idempotency_key(ask::Mode::Gate, &event),
                None,
                "{agent:?} gate"
            );
        }
    }

    #[test]
    fn a_network_approval_is_never_passed_or_routed_by_a_rule_for_its_command() {
        let network = serde_json::json!({"command": "make deploy",
            "description": "network-access https://exfil.example.net:443"});
        let plain = serde_json::json!({"command": "make deploy", "description": "Deploy"});
        let call = |input| Call {
            tool_name: "Bash",
            tool_input: input,
            cwd: None,
            network: rules::network_access(input),
        };
        let pass = Decision::Pass {
            rule: "make".to_owned(),
        };
        let block = Decision::Block {
            message: "no".to_owned(),
        };
        let unclear = serde_json::json!({"command": "make deploy",
            "description": "network-accessible? no, this only builds"});
        let ask = rules::Ask {
            rule: "deploy".to_owned(),
            kind: "shell".to_owned(),
            target: None,
            text: Some("make deploy".to_owned()),
            fields: std::collections::BTreeMap::new(),
            cost_usd: None,
        };
        let routed = Decision::Block {
            message: "a network approval for a command consentd runs itself is not given"
                .to_owned(),
        };
        let cases = [
            (
                "a pass, a description only starting so",
                pass.clone(),
                &unclear,
                Decision::Unmatched,
            ),
            (
                "a route, network",
                Decision::Route(ask.clone()),
                &network,
                routed.clone(),
            ),
            (
                "a route, no network",
                Decision::Route(ask.clone()),
                &plain,
                Decision::Route(ask.clone()),
            ),
            (
                "a gate, network",
                Decision::Gate(ask.clone()),
                &network,
                Decision::Gate(ask.clone()),
            ),
            (
                "a pass, network",
                pass.clone(),
                &network,
                Decision::Unmatched,
            ),
            ("a pass, no network", pass.clone(), &plain, pass.clone()),
            ("a block, network", block.clone(), &network, block.clone()),
            (
                "no rule, network",
                Decision::Unmatched,
                &network,
                Decision::Unmatched,
            ),
        ];
        for (name, decision, input, expected) in cases {
            assert_eq!(for_network(decision, &call(input)), expected, "{name}");
        }
    }

    #[test]
    fn only_a_gate_with_a_working_directory_names_its_call() {
        let claude = br#"{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/home/u",
            "tool_use_id": "toolu_1", "tool_name": "Bash", "tool_input": {"command": "make"}}"#;
        let codex = br#"{"hook_event_name": "PermissionRequest", "session_id": "s",
            "turn_id": "t1", "cwd": "/home/u", "tool_name": "Bash",
            "tool_input": {"command": "make"}}"#;
        let nowhere = br#"{"hook_event_name": "PreToolUse", "session_id": "s",
            "tool_use_id": "toolu_1", "tool_name": "Bash", "tool_input": {"command": "make"}}"#;
        // (the agent, its event, the mode, a network approval, the call named)
        let cases = [
            (
                Agent::ClaudeCode,
                &claude[..],
                ask::Mode::Gate,
                false,
                Some("claude-code"),
            ),
            // Codex runs its command in a directory its event does not name.
            (Agent::Codex, &codex[..], ask::Mode::Gate, false, None),
            (Agent::Codex, &codex[..], ask::Mode::Gate, true, None),
            (Agent::ClaudeCode, &claude[..], ask::Mode::Gate, true, None),
            (
                Agent::ClaudeCode,
                &claude[..],
                ask::Mode::Route,
                false,
                None,
            ),
            (
                Agent::ClaudeCode,
                &nowhere[..],
                ask::Mode::Gate,
                false,
                None,
            ),
        ];
        for (agent, bytes, mode, network, expected) in cases {
            let event = event::parse(agent, bytes).unwrap();
            let call = hook_call(mode, agent, &event, network);
            assert_eq!(
                call.clone().map(|c| c.agent),
                expected,
                "{agent:?} {mode:?}"
            );
            if let Some(call) = call {
                assert_eq!((call.tool.as_str(), call.cwd.as_str()), ("Bash", "/home/u"));
            }
        }
    }

    #[test]
    fn the_rules_path_is_the_flag_first() {
        let flag = PathBuf::from("/etc/rules.toml");
        assert_eq!(rules_path(Some(&flag)), Ok(flag));
    }
}

#[cfg(test)]
#[path = "bash_fuzz_tests.rs"]
mod bash_fuzz_tests;
