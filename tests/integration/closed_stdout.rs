//! Every subcommand with its stdout a pipe whose reader has already gone (`consentd list | head
//! -3` once `head` has its lines): the command ends as it would have, with its own exit code, no
//! panic (exit 101) and nothing about the pipe on stderr.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use crate::fixture::{noon_today, offset_to, stderr, Daemon, BIN, TOKEN};

/// Starts `command` with stdout a pipe closed before the command writes to it, so that every
/// write it makes there fails with EPIPE.
fn spawn_with_stdout_closed(command: &mut Command) -> Child {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child
}

fn with_stdout_closed(command: &mut Command) -> Output {
    spawn_with_stdout_closed(command)
        .wait_with_output()
        .unwrap()
}

/// `consentd ARGS` against `daemon`, as an agent or the owner would run it.
fn consentd_at(daemon: &Daemon, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env("CONSENTD_SOCKET", &daemon.socket)
        .env("CONSENTD_BOT_TOKEN", TOKEN)
        .env("CONSENTD_TEST_CLOCK_FILE", daemon.dir.path().join("clock"));
    command
}

fn assert_quiet(output: &Output, what: &str, code: i32) {
    let said = stderr(output);
    assert!(!said.contains("panicked"), "{what} panicked: {said}");
    assert!(
        !said.to_lowercase().contains("broken pipe"),
        "{what} spoke of the pipe: {said}"
    );
    assert_eq!(output.status.code(), Some(code), "{what}: {said}");
}

#[test]
fn the_socket_clients_end_quietly_with_their_own_codes() {
    let daemon = Daemon::start();
    // Enough records for many lines of `list`: refused asks are records too.
    for n in 0..30 {
        let answer = daemon.request(&json!({"v":1,"op":"ask","kind":format!("no_such_{n}")}));
        assert_eq!(answer["status"], "refused");
    }
    let refused = daemon.request(&json!({"v":1,"op":"ask","kind":"no_such_kind"}));
    let refused = refused["id"].as_str().unwrap().to_owned();
    let journal = daemon.settled_journal();
    let journal = journal.to_str().unwrap();
    let table: &[(&[&str], i32)] = &[
        (&["list"], 0),
        (&["list", "--json"], 0),
        (&["status", &refused], 3),
        (&["status", &refused, "--json"], 3),
        (&["ask", "--kind", "no_such_kind", "--json"], 3),
        (
            &[
                "ask",
                "--kind",
                "publish_x",
                "--target",
                "@mila_news",
                "--text",
                "Nobody reads this",
                "--field",
                "reply_to=https://example.org/1",
                "--cost-usd",
                "0.04",
                "--no-wait",
            ],
            8,
        ),
        (
            &[
                "mandate",
                "--kind",
                "publish_x",
                "--target",
                "@mila_news",
                "--days",
                "1",
                "--usd-per-day",
                "1.00",
                "--actions-per-day",
                "1",
                "--no-wait",
            ],
            8,
        ),
        (&["journal", "head", journal], 0),
        (&["journal", "verify", journal], 0),
        (&["check-config", daemon.config.to_str().unwrap()], 0),
        (&["--help"], 0),
        (&["list", "--help"], 0),
        (&["--version"], 0),
    ];
    for (args, code) in table {
        let output = with_stdout_closed(&mut consentd_at(&daemon, args));
        assert_quiet(&output, &args.join(" "), *code);
    }
}

#[test]
fn the_python_client_ends_quietly_too() {
    let daemon = Daemon::start();
    for n in 0..30 {
        daemon.request(&json!({"v":1,"op":"ask","kind":format!("no_such_{n}")}));
    }
    let client = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/clients/python/consentd_client.py"
    );
    for args in [&["list"][..], &["list", "--json"]] {
        let output = with_stdout_closed(
            Command::new("python3")
                .arg(client)
                .args(args)
                .env("CONSENTD_SOCKET", &daemon.socket),
        );
        let said = stderr(&output);
        assert!(!said.contains("Traceback"), "{args:?}: {said}");
        assert_quiet(&output, &format!("consentd_client.py {args:?}"), 0);
    }
}

#[test]
fn pair_ends_quietly() {
    let daemon = Daemon::builder().no_owner().start();
    let config = daemon.config.to_str().unwrap();
    let output = with_stdout_closed(&mut consentd_at(&daemon, &["pair", "--config", config]));
    assert_quiet(&output, "pair", 0);
}

#[test]
fn the_sandbox_keeps_running_without_a_reader_for_its_banner() {
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, offset_to(noon_today()).to_string()).unwrap();
    let state = dir.path().join("sandbox");
    let mut child = spawn_with_stdout_closed(
        Command::new(BIN)
            .args(["sandbox", "--port", "0", "--state-dir"])
            .arg(&state)
            .env("CONSENTD_TEST_CLOCK_FILE", &clock),
    );
    let socket = state.join("consent.sock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sandbox stopped without a reader for its banner"
        );
        assert!(Instant::now() < deadline, "the sandbox did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The banner comes once the daemon polls the emulator, a moment after the socket answers.
    std::thread::sleep(Duration::from_secs(1));
    assert!(child.try_wait().unwrap().is_none(), "the sandbox stopped");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_quiet(&output, "sandbox", 0);
}
