//! The agents' side of `consentd doctor`: Claude Code's and Codex's hooks and MCP entries.
//!
//! An entry is consentd's when its command mentions consentd. Each one found must run an
//! existing consentd with arguments consentd takes, and fail closed (docs/HOOKS.md, "It never
//! fails open"): a hook is its command line alone (nothing joined to it decides the exit
//! status), on an event consentd answers, for every tool (a matcher that leaves tools out lets
//! their calls by), with a rules file that loads (else every call is blocked) and a timeout
//! above its `--max-wait` (a hook that times out decides nothing); Claude Code's hooks are not
//! all switched off; Codex asks for permission at all (with `approval_policy = "never"` or
//! `sandbox_mode = "danger-full-access"` its `PermissionRequest` hook never runs, so every
//! command would). None installed is a line too, and OK: they are optional.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::invocation::{expand_home, Invocation};
use super::Check;

/// How long `consentd hook` and `consentd mcp` wait for the owner unless told otherwise.
/// Claude Code's timeout of a hook that states none (docs/HOOKS.md).
const CLAUDE_CODE_HOOK_TIMEOUT_SECS: f64 = 600.0;

/// Where the agents' settings are looked for: the user's home and the current directory.
#[derive(Debug, Clone)]
pub(super) struct Places {
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
}

impl Places {
    pub(super) fn from_env() -> Places {
        Places {
            home: std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    fn home(&self, rest: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|home| home.join(rest))
    }
}

/// The two agents, and what their hooks must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    ClaudeCode,
    Codex,
}

impl Agent {
    /// `consentd hook` 's subcommand for it.
    fn hook(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
        }
    }

    /// The timeout the agent gives a hook that states none, where it is known.
    fn default_hook_timeout(self) -> Option<f64> {
        match self {
            Agent::ClaudeCode => Some(CLAUDE_CODE_HOOK_TIMEOUT_SECS),
            Agent::Codex => None,
        }
    }

    /// The events consentd's hook answers for it.
    fn events(self) -> &'static [&'static str] {
        match self {
            Agent::ClaudeCode => &["PreToolUse", "PermissionRequest"],
            Agent::Codex => &["PermissionRequest"],
        }
    }

    /// Whether a matcher leaves no tool the hook must see out: Codex asks its
    /// `PermissionRequest` hook only for `Bash`.
    fn matches_all(self, matcher: Option<&str>) -> bool {
        match matcher {
            None | Some("" | "*" | ".*") => true,
            Some("Bash") => self == Agent::Codex,
            Some(_) => false,
        }
    }
}

/// What the entries of one kind showed: each one's place and verdict.
#[derive(Debug, Default)]
struct Findings {
    found: Vec<String>,
    problems: Vec<String>,
}

impl Findings {
    fn into_check(self, name: &str, what: &str, fix: &str) -> Check {
        if !self.problems.is_empty() {
            Check::fail(name, self.problems.join("; "), fix)
        } else if self.found.is_empty() {
            Check::ok(name, format!("not installed ({what} is optional)"))
        } else {
            Check::ok(name, self.found.join("; "))
        }
    }
}

/// The four lines: each agent's hook and MCP entry.
pub(super) fn checks(places: &Places) -> Vec<Check> {
    vec![
        claude_hooks(places).into_check(
            "claude-code hook",
            "a consentd hook, docs/HOOKS.md,",
            "run consentd alone, as `/path/to/consentd hook claude-code --rules FILE`, on \
             PreToolUse with matcher \"*\" and a timeout above --max-wait (docs/HOOKS.md)",
        ),
        claude_mcp(places).into_check(
            "claude-code mcp",
            "`consentd mcp`, docs/AGENT-AUTHOR.md,",
            "an entry's command is the path of consentd and its args start with \"mcp\" \
             (docs/AGENT-AUTHOR.md)",
        ),
        codex_hooks(places).into_check(
            "codex hook",
            "a consentd hook, docs/HOOKS.md,",
            "run consentd alone, as `/path/to/consentd hook codex --rules FILE`, on \
             PermissionRequest for Bash, and let Codex ask (approval_policy \"on-request\" or \
             \"untrusted\", no danger-full-access)",
        ),
        codex_mcp(places).into_check(
            "codex mcp",
            "`consentd mcp`, docs/AGENT-AUTHOR.md,",
            "[mcp_servers.consentd] runs the path of consentd with args [\"mcp\", …] and \
             tool_timeout_sec above its --max-wait (600; docs/AGENT-AUTHOR.md)",
        ),
    ]
}

/// A settings file's content: `None` when there is none, a problem when it cannot be read.
fn read_json(path: &Path) -> Result<Option<Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| format!("{} is not JSON ({error})", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

fn read_toml(path: &Path) -> Result<Option<Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str::<toml::Value>(&text)
            .map_err(|error| format!("{} is not TOML ({error})", path.display()))
            .and_then(|value| serde_json::to_value(value).map_err(|e| e.to_string()))
            .map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

fn mentions_consentd(value: &Value) -> bool {
    value.to_string().contains("consentd")
}

/// Claude Code's settings files, the user's first: each may hold hooks.
fn claude_hooks(places: &Places) -> Findings {
    let mut findings = Findings::default();
    let files = [
        places.home(".claude/settings.json"),
        Some(places.cwd.join(".claude/settings.json")),
        Some(places.cwd.join(".claude/settings.local.json")),
    ];
    let mut disabled = Vec::new();
    for path in files.into_iter().flatten() {
        match read_json(&path) {
            Ok(Some(settings)) => {
                if settings["disableAllHooks"] == Value::Bool(true) {
                    disabled.push(path.display().to_string());
                }
                hooks_in(Agent::ClaudeCode, &path, &settings["hooks"], &mut findings);
            }
            Ok(None) => {}
            Err(problem) => findings.problems.push(problem),
        }
    }
    if !findings.found.is_empty() || !findings.problems.is_empty() {
        for path in disabled {
            findings.problems.push(format!(
                "{path} sets disableAllHooks: no hook runs, so consentd sees no call"
            ));
        }
    }
    findings
}

/// Codex's hooks files, and its config: hooks there too, and whether it asks at all.
fn codex_hooks(places: &Places) -> Findings {
    let mut findings = Findings::default();
    let files = [
        places.home(".codex/hooks.json"),
        Some(places.cwd.join(".codex/hooks.json")),
    ];
    for path in files.into_iter().flatten() {
        match read_json(&path) {
            Ok(Some(file)) => hooks_in(Agent::Codex, &path, &file["hooks"], &mut findings),
            Ok(None) => {}
            Err(problem) => findings.problems.push(problem),
        }
    }
    let Some(config_path) = places.home(".codex/config.toml") else {
        return findings;
    };
    match read_toml(&config_path) {
        Ok(Some(config)) => {
            hooks_in(Agent::Codex, &config_path, &config["hooks"], &mut findings);
            if !findings.found.is_empty() || !findings.problems.is_empty() {
                findings
                    .problems
                    .extend(codex_fails_open(&config_path, &config));
            }
        }
        Ok(None) => {}
        Err(problem) => findings.problems.push(problem),
    }
    findings
}

/// What in Codex's config lets a command run without its `PermissionRequest` hook: no
/// approval is asked with `approval_policy = "never"` (at the top or in a profile), and
/// `danger-full-access` runs everything unsandboxed without an escalation to approve.
fn codex_fails_open(path: &Path, config: &Value) -> Vec<String> {
    let mut tables = vec![(String::new(), config)];
    if let Some(profiles) = config["profiles"].as_object() {
        tables.extend(
            profiles
                .iter()
                .map(|(name, table)| (format!(" (profile {name})"), table)),
        );
    }
    let mut problems = Vec::new();
    for (profile, table) in tables {
        let shown = path.display();
        if table["approval_policy"] == "never" {
            problems.push(format!(
                "{shown}{profile} sets approval_policy = \"never\": Codex asks no permission, so \
                 its PermissionRequest hook never runs and every command runs without consentd"
            ));
        }
        if table["sandbox_mode"] == "danger-full-access" {
            problems.push(format!(
                "{shown}{profile} sets sandbox_mode = \"danger-full-access\": commands run \
                 unsandboxed with nothing to approve, so the hook is never asked"
            ));
        }
    }
    problems
}

/// The consentd entries of a `hooks` object (`{EVENT: [{matcher, hooks: [{type, command,
/// timeout}]}]}`), each judged.
fn hooks_in(agent: Agent, path: &Path, hooks: &Value, findings: &mut Findings) {
    let Some(events) = hooks.as_object() else {
        return;
    };
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group["matcher"].as_str();
            for hook in group["hooks"].as_array().into_iter().flatten() {
                if !mentions_consentd(hook) {
                    continue;
                }
                let place = format!("{} ({event})", path.display());
                match judge_hook(agent, event, matcher, hook) {
                    Ok(found) => findings.found.push(format!("{place}: {found}")),
                    Err(problem) => findings.problems.push(format!("{place}: {problem}")),
                }
            }
        }
    }
}

/// One hook entry: what it runs when it is fine, else the first reason it is not.
fn judge_hook(
    agent: Agent,
    event: &str,
    matcher: Option<&str>,
    hook: &Value,
) -> Result<String, String> {
    if !agent.events().contains(&event) {
        return Err(format!(
            "consentd's hook answers only {}, not {event}",
            agent.events().join(" and ")
        ));
    }
    if !agent.matches_all(matcher) {
        return Err(format!(
            "its matcher {:?} leaves other tools out: their calls never reach consentd (use \"*\")",
            matcher.unwrap_or_default()
        ));
    }
    if hook["type"] != "command" {
        return Err("its type is not \"command\"".to_owned());
    }
    let line = hook["command"].as_str().ok_or("it has no command line")?;
    let invocation = Invocation::from_line(line)?;
    let program = invocation.program()?;
    match invocation.args() {
        [hook_word, name, ..] if hook_word == "hook" && name == agent.hook() => {}
        _ => {
            return Err(format!(
                "it does not run `consentd hook {}` (the answers must be in this agent's format)",
                agent.hook()
            ))
        }
    }
    let max_wait = invocation.max_wait()?.as_secs_f64();
    let rules = match invocation.option("rules") {
        Some(path) => expand_home(path),
        None => consentd_client::hook::rules_path(None)?,
    };
    consentd_client::hook::rules::load(&rules)
        .map_err(|error| format!("{error}: every call is blocked until it is fixed"))?;
    // Without its own `timeout`, a hook gets the agent's default: Claude Code's is 600 s;
    // Codex's is not documented, so only a stated one can be checked.
    if !hook["timeout"].is_null() && !hook["timeout"].is_number() {
        return Err("its timeout is not a number of seconds".to_owned());
    }
    let timeout = hook["timeout"].as_f64().or(agent.default_hook_timeout());
    if let Some(timeout) = timeout {
        if timeout <= max_wait {
            return Err(format!(
                "its timeout ({timeout} s{}) is not above --max-wait ({max_wait} s): a hook that \
                 times out decides nothing and the call goes on without consentd",
                if hook["timeout"].is_null() {
                    ", the agent's default"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(format!(
        "{} hook {} with the rules in {}",
        program.display(),
        agent.hook(),
        rules.display()
    ))
}

/// Claude Code's MCP entries: the project's `.mcp.json`, and `~/.claude.json` (the user's, and
/// this project's within it).
fn claude_mcp(places: &Places) -> Findings {
    let mut findings = Findings::default();
    if let Some(path) = Some(places.cwd.join(".mcp.json")) {
        match read_json(&path) {
            Ok(Some(file)) => mcp_in(&path, &file["mcpServers"], None, &mut findings),
            Ok(None) => {}
            Err(problem) => findings.problems.push(problem),
        }
    }
    if let Some(path) = places.home(".claude.json") {
        match read_json(&path) {
            Ok(Some(file)) => {
                mcp_in(&path, &file["mcpServers"], None, &mut findings);
                let project = &file["projects"][places.cwd.display().to_string()]["mcpServers"];
                mcp_in(&path, project, None, &mut findings);
            }
            Ok(None) => {}
            Err(problem) => findings.problems.push(problem),
        }
    }
    findings
}

/// Codex's MCP entries, in `~/.codex/config.toml`'s `[mcp_servers]`; Codex gives a tool 60 s
/// unless `tool_timeout_sec` says otherwise.
fn codex_mcp(places: &Places) -> Findings {
    let mut findings = Findings::default();
    if let Some(path) = places.home(".codex/config.toml") {
        match read_toml(&path) {
            Ok(Some(config)) => mcp_in(&path, &config["mcp_servers"], Some(60), &mut findings),
            Ok(None) => {}
            Err(problem) => findings.problems.push(problem),
        }
    }
    findings
}

/// The consentd entries of an MCP servers object, each judged; `tool_timeout` is the client's
/// default time for a tool when the entry must say more (Codex), `None` when it is not read.
fn mcp_in(path: &Path, servers: &Value, tool_timeout: Option<u64>, findings: &mut Findings) {
    let Some(servers) = servers.as_object() else {
        return;
    };
    for (name, server) in servers {
        if name != "consentd" && !mentions_consentd(server) {
            continue;
        }
        let place = format!("{} ({name})", path.display());
        match judge_mcp(server, tool_timeout) {
            Ok(found) => findings.found.push(format!("{place}: {found}")),
            Err(problem) => findings.problems.push(format!("{place}: {problem}")),
        }
    }
}

fn judge_mcp(server: &Value, tool_timeout: Option<u64>) -> Result<String, String> {
    let command = server["command"].as_str().ok_or("it has no command")?;
    let args: Vec<String> = server["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|arg| {
            arg.as_str()
                .map(str::to_owned)
                .ok_or("its args are not all strings")
        })
        .collect::<Result<_, _>>()?;
    let invocation = Invocation::from_argv(command, &args);
    let program = invocation.program()?;
    if args.first().map(String::as_str) != Some("mcp") {
        return Err("its args do not start with \"mcp\": it does not run `consentd mcp`".into());
    }
    let max_wait = invocation.max_wait()?.as_secs_f64();
    if let Some(default) = tool_timeout {
        let timeout = server["tool_timeout_sec"]
            .as_f64()
            .unwrap_or(default as f64);
        if timeout <= max_wait {
            return Err(format!(
                "a tool may take {timeout} s (tool_timeout_sec), not above --max-wait \
                 ({max_wait} s): a call is cut off while the owner decides"
            ));
        }
    }
    Ok(format!("{} {}", program.display(), args.join(" ")))
}
