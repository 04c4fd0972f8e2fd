//! What the agent-facing front ends add to an ask, for docs/BENCHMARKS.md, measured side by side
//! in one run against one daemon, one request at a time:
//! - direct: one socket connection per ask (the baseline);
//! - `consentd mcp`: a `tools/call consent_ask` through one long-lived server, as an MCP client
//!   keeps it;
//! - `consentd ask`: a process per ask, the command line's cost;
//! - `consentd hook claude-code`: a process per tool call, reading the event and the rules file.
//!
//! Every ask carries an invisible character, so the daemon answers it at once — the same work in
//! every column: since the refusal budget, the first of each `refusal_window` is
//! recorded and journaled and its repeats only counted — and the figures are the front end's own
//! time plus one refusal. Run: `cargo bench --bench agent_overhead [-- ASKS]` (default 300 per column).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{percentile, Daemon, PUBLISH_X, TOKEN};

const BIN: &str = env!("CARGO_BIN_EXE_consentd");
const TEXT: &str = "hi\u{200B}";

fn ask() -> Value {
    json!({"kind": "publish_x", "target": "@a", "text": TEXT,
           "fields": {"reply_to": "https://example.org/1"}, "cost_usd": "0.04"})
}

fn direct(socket: &Path) -> Duration {
    let mut frame = ask();
    frame["v"] = json!(1);
    frame["op"] = json!("ask");
    frame["wait"] = json!(false);
    let frame = format!("{frame}\n");
    let started = Instant::now();
    let answer = support::request(socket, frame.as_bytes()).expect("an answer");
    assert_eq!(answer[0]["status"], "refused");
    started.elapsed()
}

/// A long-lived `consentd mcp`, spoken to over its stdin and stdout.
struct Mcp {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Mcp {
    fn start(socket: &Path) -> Mcp {
        let mut child = Command::new(BIN)
            .args(["mcp", "--socket"])
            .arg(socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            input,
            output,
            next_id: 0,
        };
        mcp.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "1"}}),
        );
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.send(
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
        );
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn ask(&mut self) -> Duration {
        let mut arguments = ask();
        arguments["wait"] = json!(false);
        let started = Instant::now();
        let answer = self.call(
            "tools/call",
            json!({"name": "consent_ask", "arguments": arguments}),
        );
        assert_eq!(
            answer["result"]["structuredContent"]["status"], "refused",
            "{answer}"
        );
        started.elapsed()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cli(socket: &Path) -> Duration {
    let started = Instant::now();
    let output = Command::new(BIN)
        .args([
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@a",
            "--text",
            TEXT,
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--no-wait",
            "--socket",
        ])
        .arg(socket)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "refused");
    started.elapsed()
}

/// The hook's rules: `post TEXT` in Bash is routed to `publish_x`.
const RULES: &str = r#"
[[rule]]
name = "post"
tool = "Bash"
program = "post"
args = '^(?P<text>.+)$'
action = "route"
kind = "publish_x"
target = "@a"
text = "{text}"
cost_usd = "0.04"
fields = { reply_to = "https://example.org/1" }
"#;

fn hook(socket: &Path, rules: &Path) -> Duration {
    let event = json!({
        "session_id": "bench", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": format!("post {TEXT}")}, "tool_use_id": "toolu_bench",
    });
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(["hook", "claude-code", "--no-origin", "--rules"])
        .arg(rules)
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    let answer: Value = serde_json::from_slice(&output.stdout).expect("the hook's answer");
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    elapsed
}

fn summary(
    name: &str,
    mut times: Vec<Duration>,
    baseline: Option<(Duration, Duration)>,
) -> (Duration, Duration) {
    times.sort();
    let (p50, p99) = (percentile(&times, 0.50), percentile(&times, 0.99));
    let ratio = baseline.map_or(String::new(), |(b50, b99)| {
        format!(
            "  ({:+.3} ms p50, {:+.3} ms p99 against direct)",
            (p50.as_secs_f64() - b50.as_secs_f64()) * 1e3,
            (p99.as_secs_f64() - b99.as_secs_f64()) * 1e3
        )
    });
    println!(
        "{name:<28} p50 {:>7.3} ms  p99 {:>7.3} ms{ratio}",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    (p50, p99)
}

fn main() {
    let asks: usize = support::argument().unwrap_or(300);
    let (bot, _bot_thread) = consentd_emulator::Emulator::start_in_thread(TOKEN).unwrap();
    let daemon = Daemon::start(&bot, "", PUBLISH_X);
    let socket = daemon.socket.clone();
    std::thread::sleep(Duration::from_millis(300));
    let mut mcp = Mcp::start(&socket);
    let rules = daemon.dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    // Interleaved, so that whatever the disk does meanwhile falls on every column alike.
    let (mut direct_times, mut mcp_times, mut cli_times, mut hook_times) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..asks {
        direct_times.push(direct(&socket));
        mcp_times.push(mcp.ask());
        cli_times.push(cli(&socket));
        hook_times.push(hook(&socket, &rules));
    }
    println!("{asks} asks per column, each refused at once (recorded and journaled)");
    let base = summary("direct socket", direct_times, None);
    summary("consentd mcp (tools/call)", mcp_times, Some(base));
    summary("consentd ask (a process)", cli_times, Some(base));
    summary("consentd hook claude-code", hook_times, Some(base));
}
