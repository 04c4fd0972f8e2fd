//! The clients an agent author is given (clients/python, clients/sh) and the hook example
//! (examples/hooks), run as subprocesses against a real daemon: refused, granted by the
//! owner's press and executed, and read back with status and list.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use nix::sys::signal::Signal;

use crate::fixture::{good_ask, stderr, stdout, Daemon, BIN};

const PYTHON_CLIENT: &str = "clients/python/consentd_client.py";
const SHELL_CLIENT: &str = "clients/sh/consentd-ask.sh";
const HOOK: &str = "examples/hooks/pre_tool_use.py";
/// How long a client may take to finish once its answer is due.
const PATIENCE: Duration = Duration::from_secs(30);

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A client command against `daemon`'s socket, with stdin from `input`.
fn spawn(daemon: &Daemon, program: &str, args: &[&str], input: &[u8]) -> Child {
    spawn_with(daemon, program, args, &[], input)
}

fn spawn_with(
    daemon: &Daemon,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    input: &[u8],
) -> Child {
    let mut child = Command::new(program)
        .args(args)
        .env("CONSENTD_SOCKET", &daemon.socket)
        .env("CONSENTD_BIN", BIN)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    child
}

/// Waits for a client, killing it if it outlives `PATIENCE`.
fn finish(mut child: Child, what: &str) -> Output {
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("{what} did not finish: {}", stderr(&output));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn run(daemon: &Daemon, program: &str, args: &[&str], input: &[u8]) -> Output {
    finish(spawn(daemon, program, args, input), program)
}

fn python(daemon: &Daemon, args: &[&str]) -> Output {
    let client = repo_file(PYTHON_CLIENT);
    let mut all = vec![client.to_str().unwrap()];
    all.extend_from_slice(args);
    run(daemon, "python3", &all, b"")
}

/// The final answer a client printed with `--json`: its last stdout line.
fn last_json(output: &Output) -> Value {
    let out = stdout(output);
    let line = out.lines().last().unwrap_or_else(|| {
        panic!("no output; stderr: {}", stderr(output));
    });
    serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"))
}

/// Waits for the card whose text holds `needle` and presses its Yes as the owner.
fn press_yes_on_card_with(daemon: &Daemon, needle: &str) {
    daemon.press_yes(&daemon.card_of(needle));
}

/// What the category's command read on stdin, one object per run.
fn runs_stdin(daemon: &Daemon) -> Vec<Value> {
    std::fs::read_to_string(daemon.dir.path().join("stdin.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_python_client_is_refused_granted_and_reads_its_records_back() {
    let daemon = Daemon::start();

    let refused = python(&daemon, &["ask", "--kind", "no_such_kind", "--json"]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    let answer = last_json(&refused);
    assert_eq!(answer["status"], "refused");
    assert_eq!(answer["reason"], "unknown_kind");

    let client = repo_file(PYTHON_CLIENT);
    let asking = spawn(
        &daemon,
        "python3",
        &[
            client.to_str().unwrap(),
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@mila_news",
            "--text",
            "From the Python client",
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--json",
        ],
        b"",
    );
    press_yes_on_card_with(&daemon, "From the Python client");
    let granted = finish(asking, "the Python client's ask");
    assert_eq!(granted.status.code(), Some(0), "{}", stderr(&granted));
    let answer = last_json(&granted);
    assert_eq!(answer["status"], "executed", "{answer}");
    assert!(answer["result"]
        .as_str()
        .unwrap()
        .starts_with("https://example.org/posted/"));
    let id = answer["id"].as_str().unwrap().to_owned();
    assert_eq!(daemon.runs(), 1);
    assert_eq!(runs_stdin(&daemon)[0]["text"], "From the Python client");

    let status = python(&daemon, &["status", &id, "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let record = last_json(&status);
    assert_eq!(record["id"], id.as_str());
    assert_eq!(record["status"], "executed");

    let missing = python(&daemon, &["status", "r_00000000000000000000"]);
    assert_eq!(missing.status.code(), Some(1));

    let list = python(&daemon, &["list", "--json"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let page = last_json(&list);
    let ids: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.first(), Some(&id.as_str()), "newest first: {page}");
    assert_eq!(ids.len(), 2, "the refused ask is a record too: {page}");

    let plain = python(&daemon, &["list"]);
    assert!(stdout(&plain).contains(&id), "{}", stdout(&plain));

    let nowhere = python(&daemon, &["list", "--socket", "/nonexistent/consent.sock"]);
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(stderr(&nowhere).contains("cannot connect"));

    let usage = python(&daemon, &["ask", "--target", "@x"]);
    assert_eq!(usage.status.code(), Some(2), "no --kind is a usage error");
}

#[test]
fn the_python_client_asks_for_mandates_with_no_target_or_no_money() {
    let daemon = Daemon::builder().mandate_kinds().start();
    // (kind, the arguments for its terms, what the journal's `mandate_asked` counts)
    let cases: [(&str, &[&str], u64, Option<&str>); 3] = [
        ("ping_home", &[], 0, None),
        (
            "generate_image",
            &["--usd-per-day", "2.00"],
            0,
            Some("2.00"),
        ),
        (
            "send_note",
            &["--target", "@mila", "--usd-per-day", "0.00"],
            1,
            None,
        ),
    ];
    for (kind, terms, targets, usd) in cases {
        let mut args = vec![
            "mandate",
            "--kind",
            kind,
            "--days",
            "1",
            "--actions-per-day",
            "2",
        ];
        args.extend(terms);
        args.extend(["--no-wait", "--json"]);
        let asked = python(&daemon, &args);
        assert_eq!(asked.status.code(), Some(8), "{kind}: {}", stderr(&asked));
        let id = last_json(&asked)["id"].as_str().unwrap().to_owned();
        let line = daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "mandate_asked" && e["id"] == id.as_str())
            .unwrap();
        assert_eq!(line["targets"], targets, "{kind}: {line}");
        assert_eq!(line["usd_per_day"].as_str(), usd, "{kind}: {line}");
    }
    let refused = python(
        &daemon,
        &[
            "mandate",
            "--kind",
            "send_note",
            "--days",
            "1",
            "--actions-per-day",
            "2",
        ],
    );
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("at least one named target is required"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn the_shell_client_asks_with_its_stdin_as_the_exact_text() {
    let daemon = Daemon::start();
    let client = repo_file(SHELL_CLIENT);
    let client = client.to_str().unwrap();

    // wipe_drafts is off: refused before any card, with the reason on stderr.
    let refused = run(&daemon, "sh", &[client, "--kind", "wipe_drafts"], b"");
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("category_off"),
        "{}",
        stderr(&refused)
    );

    let ask_args = [
        client,
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--field",
        "reply_to=https://example.org/1",
        "--cost-usd",
        "0.04",
    ];
    // The text comes from stdin byte for byte: a trailing newline stays, and makes a blank last
    // line the owner could not see, so the daemon refuses it and says what to remove.
    let with_newline = run(
        &daemon,
        "sh",
        &ask_args,
        b"From the shell client\nsecond line\n",
    );
    assert_eq!(
        with_newline.status.code(),
        Some(3),
        "{}",
        stderr(&with_newline)
    );
    assert!(
        stderr(&with_newline)
            .contains("text ends with a blank line (line 3); remove what follows line 2"),
        "{}",
        stderr(&with_newline)
    );

    let text = "From the shell client\nsecond line";
    let asking = spawn(&daemon, "sh", &ask_args, text.as_bytes());
    press_yes_on_card_with(&daemon, "From the shell client");
    let granted = finish(asking, "the shell client's ask");
    assert_eq!(granted.status.code(), Some(0), "{}", stderr(&granted));
    assert!(
        stdout(&granted).starts_with("https://example.org/posted/"),
        "the result on stdout: {}",
        stdout(&granted)
    );
    assert_eq!(daemon.runs(), 1);
    // The fixture's command logs its stdin with sh's echo, which turns the JSON escape `\n`
    // back into a newline: the exact text shows up verbatim.
    let logged = std::fs::read_to_string(daemon.dir.path().join("stdin.log")).unwrap();
    assert!(
        logged.contains(&format!("\"text\":\"{text}\"")),
        "the command got another text: {logged}"
    );

    let list = daemon.request(&json!({"v":1,"op":"list"}));
    let statuses: Vec<&str> = list["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["executed", "refused", "refused"], "{list}");

    // No daemon there: retried, then exit 1.
    let nowhere = Command::new("sh")
        .args([client, "--kind", "publish_x", "--socket", "/nonexistent/s"])
        .env("CONSENTD_BIN", BIN)
        .env("CONSENTD_ASK_RETRIES", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(
        stderr(&nowhere).contains("retry 1 of 1"),
        "{}",
        stderr(&nowhere)
    );
}

#[test]
fn the_hook_routes_outside_actions_through_consentd_and_blocks_direct_ones() {
    let daemon = Daemon::start();
    let hook = repo_file(HOOK);
    let hook = hook.to_str().unwrap();
    let routes = daemon.dir.path().join("routes.json");
    std::fs::write(
        &routes,
        json!({"wipe": {"kind": "wipe_drafts"}, "letter": {"kind": "send_letter",
            "fields": {"to": "to", "subject": "subject"}}})
        .to_string(),
    )
    .unwrap();
    let routes = routes.to_str().unwrap();
    let start = |tool: Value| {
        spawn_with(
            &daemon,
            "python3",
            &[hook],
            &[("CONSENTD_HOOK_ROUTES", routes)],
            tool.to_string().as_bytes(),
        )
    };
    let call = |tool: Value| finish(start(tool), "the hook");

    let direct = call(json!({"tool_name": "Bash",
        "tool_input": {"command": "cd /tmp && curl -X POST https://api.example.org/post -d x"}}));
    assert_eq!(direct.status.code(), Some(2));
    assert!(
        stderr(&direct).contains("consentd ask"),
        "{}",
        stderr(&direct)
    );
    let push =
        call(json!({"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}));
    assert_eq!(push.status.code(), Some(2));

    for harmless in ["ls -la", "consentd list", "grep curl notes.txt"] {
        let allowed = call(json!({"tool_name": "Bash", "tool_input": {"command": harmless}}));
        assert_eq!(
            allowed.status.code(),
            Some(0),
            "{harmless}: {}",
            stderr(&allowed)
        );
    }

    // A routed tool is asked through consentd and blocked whatever the answer.
    let off = call(json!({"tool_name": "wipe", "tool_input": {}}));
    assert_eq!(off.status.code(), Some(2));
    assert!(stderr(&off).contains("category_off"), "{}", stderr(&off));

    let letter = start(json!({"tool_name": "letter",
        "tool_input": {"to": "ana@example.org", "subject": "Hello"}}));
    press_yes_on_card_with(&daemon, "ana@example.org");
    let letter = finish(letter, "the hook's routed ask");
    assert_eq!(letter.status.code(), Some(2), "{}", stderr(&letter));
    assert!(
        stderr(&letter).contains("Done through consentd"),
        "{}",
        stderr(&letter)
    );
}

/// Asks for `publish_x` without waiting; the record's id.
fn ask_no_wait(daemon: &Daemon, text: &str) -> String {
    let answer = daemon.request(&good_ask(text));
    answer["id"].as_str().unwrap().to_owned()
}

/// A record in each state `status` can find but `running`, made on `daemon` (which is restarted once, for the
/// outcome nobody knows): the state, the record's id, and the exit code `ask` gives that state.
fn records_in_every_state(mut daemon: Daemon) -> (Daemon, Vec<(&'static str, String, i32)>) {
    let hold = daemon.dir.path().join("hold");
    let running = daemon.dir.path().join("running");
    // A run the daemon is killed during: its record is found `running` at the restart.
    std::fs::write(&hold, "").unwrap();
    let _ = std::fs::remove_file(&running);
    let unknown = ask_no_wait(&daemon, "the daemon dies during this run");
    daemon.press_yes(&daemon.card_of(&unknown));
    daemon.wait_for("the command to start", |_| running.exists());
    daemon.stop_with(Signal::SIGKILL);
    std::fs::remove_file(&hold).unwrap();
    let daemon = daemon.restart();
    daemon.wait_state(&unknown, "outcome_unknown");

    let executed = ask_no_wait(&daemon, "this one runs");
    daemon.press_yes(&daemon.card_of(&executed));
    daemon.wait_state(&executed, "executed");

    let declined = ask_no_wait(&daemon, "this one is declined");
    daemon.press_no(&daemon.card_of(&declined));
    daemon.wait_state(&declined, "declined");

    let refused = daemon.request(&json!({"v":1,"op":"ask","kind":"no_such_kind"}));
    let refused = refused["id"].as_str().unwrap().to_owned();

    let script = daemon.dir.path().join("action.sh");
    let works = std::fs::read(&script).unwrap();
    std::fs::write(&script, "/bin/cat >/dev/null\necho broken >&2\nexit 3\n").unwrap();
    let failed = ask_no_wait(&daemon, "this one fails");
    daemon.press_yes(&daemon.card_of(&failed));
    daemon.wait_state(&failed, "failed");
    std::fs::write(&script, works).unwrap();

    // Before any other card is open: moving the clock on expires every open card.
    let expired = ask_no_wait(&daemon, "this card is left to expire");
    daemon.card_of(&expired);
    daemon.advance_clock(16 * 60);
    daemon.wait_state(&expired, "expired");

    let granted = daemon.request(&json!({"v":1,"op":"mandate","kind":"publish_x",
        "targets":["@elsewhere"],"days":1,"usd_per_day":"1.00","actions_per_day":1,"wait":false}));
    let granted = granted["id"].as_str().unwrap().to_owned();
    daemon.press_yes(&daemon.card_of(&granted));
    daemon.wait_state(&granted, "granted");

    let card_shown = ask_no_wait(&daemon, "this card waits");
    daemon.card_of(&card_shown);
    daemon.wait_state(&card_shown, "card_shown");

    let records = vec![
        ("card_shown", card_shown, 8),
        ("executed", executed, 0),
        ("granted (a mandate)", granted, 0),
        ("refused", refused, 3),
        ("declined", declined, 4),
        ("expired", expired, 5),
        ("failed", failed, 6),
        ("outcome_unknown", unknown, 7),
    ];
    (daemon, records)
}

/// Checks `status` on a record whose command is running, then lets the command end.
fn assert_status_exits_while_running(daemon: &Daemon) {
    let hold = daemon.dir.path().join("hold");
    let running = daemon.dir.path().join("running");
    std::fs::write(&hold, "").unwrap();
    let _ = std::fs::remove_file(&running);
    let id = ask_no_wait(daemon, "this one is running");
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_for("the command to start", |_| running.exists());
    daemon.wait_state(&id, "running");
    // At once: the category's timeout (30 s) would kill the command and end the record.
    assert_status_exits(daemon, "running", &id, 8);
    std::fs::remove_file(&hold).unwrap();
    daemon.wait_state(&id, "executed");
}

/// A record still `pending`: its card is held back by quiet hours with no cards allowed at night
/// (the fixture's clock is at noon).
fn a_pending_record() -> (Daemon, String) {
    let daemon = Daemon::builder()
        .gate("quiet_hours = \"11:00-13:00\"\nnight_card_limit = 0")
        .start();
    let id = ask_no_wait(&daemon, "this card waits for the morning");
    daemon.settle();
    daemon.wait_state(&id, "pending");
    (daemon, id)
}

/// `consentd status` and the Python client's `status` on a record: the code for its state.
fn assert_status_exits(daemon: &Daemon, state: &str, id: &str, code: i32) {
    let mut runs: Vec<(&str, Vec<&str>)> = vec![
        ("consentd status", vec!["status", id]),
        ("consentd status --json", vec!["status", id, "--json"]),
    ];
    if code != 8 {
        // A final record answers at once with --wait too.
        runs.push(("consentd status --wait", vec!["status", id, "--wait"]));
    }
    for (what, args) in &runs {
        let output = daemon.cli(args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{what} on {state}: {}",
            stderr(&output)
        );
    }
    let mut runs: Vec<(&str, Vec<&str>)> = vec![
        ("consentd_client.py status", vec!["status", id]),
        (
            "consentd_client.py status --json",
            vec!["status", id, "--json"],
        ),
    ];
    if code != 8 {
        runs.push((
            "consentd_client.py status --wait",
            vec!["status", id, "--wait"],
        ));
    }
    for (what, args) in &runs {
        let output = python(daemon, args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{what} on {state}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn status_exits_as_ask_would_for_every_state_in_both_clients() {
    let daemon = Daemon::start();
    assert_status_exits_while_running(&daemon);
    let (daemon, records) = records_in_every_state(daemon);
    for (state, id, code) in &records {
        assert_status_exits(&daemon, state, id, *code);
    }
    let (daemon, pending) = a_pending_record();
    assert_status_exits(&daemon, "pending", &pending, 8);
}

#[test]
fn status_wait_on_a_card_the_owner_declines_exits_4() {
    let daemon = Daemon::start();
    let id = ask_no_wait(&daemon, "wait for my answer");
    daemon.card_of(&id);
    let client = repo_file(PYTHON_CLIENT);
    let rust = daemon.cli_spawn(&["status", &id, "--wait"]);
    let python = spawn(
        &daemon,
        "python3",
        &[client.to_str().unwrap(), "status", &id, "--wait"],
        b"",
    );
    // Both are waiting on the record before the owner answers.
    std::thread::sleep(Duration::from_millis(300));
    daemon.press_no(&daemon.card_of(&id));
    let rust = finish(rust, "consentd status --wait");
    assert_eq!(rust.status.code(), Some(4), "{}", stderr(&rust));
    assert!(stdout(&rust).contains("declined"), "{}", stdout(&rust));
    let python = finish(python, "consentd_client.py status --wait");
    assert_eq!(python.status.code(), Some(4), "{}", stderr(&python));
}
