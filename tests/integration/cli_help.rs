//! The command line as a newcomer meets it: every subcommand's `--help` describes each of its
//! arguments, `ask`, `mandate` and `status` list their exit codes, and a client with no daemon
//! to talk to says once what failed and what to check.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use clap::CommandFactory as _;
use consentd::cli::Cli;

use crate::fixture::{consentd, stderr, stdout, BIN};

/// Every subcommand's words (`["journal", "verify"]`) with its clap definition.
fn subcommands(
    command: &clap::Command,
    path: &[String],
    out: &mut Vec<(Vec<String>, clap::Command)>,
) {
    for sub in command.get_subcommands() {
        let mut words = path.to_vec();
        words.push(sub.get_name().to_owned());
        out.push((words.clone(), sub.clone()));
        subcommands(sub, &words, out);
    }
}

#[test]
fn every_flag_of_every_subcommand_is_described_in_its_help() {
    let mut all = Vec::new();
    subcommands(&Cli::command(), &[], &mut all);
    for (words, command) in &all {
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--help");
        let help = consentd(&args);
        assert_eq!(help.status.code(), Some(0), "{args:?}: {}", stderr(&help));
        let text = stdout(&help);
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" {
                continue;
            }
            let described = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(!described.is_empty(), "{args:?}: {id} has no description");
            assert!(
                text.contains(&described),
                "{args:?}: {id}: {described:?} in\n{text}"
            );
        }
    }
}

/// The codes of the final states a run can end in, the same for `ask` and `status`.
const RUN_ENDS: [(u8, &str); 5] = [
    (3, "refused"),
    (4, "declined"),
    (5, "expired"),
    (6, "failed"),
    (7, "outcome unknown"),
];

#[test]
fn ask_mandate_and_status_list_their_exit_codes_in_their_help() {
    let usage = (2, "usage error");
    let ask = [(0, "executed"), (1, "could not talk to consentd"), usage]
        .into_iter()
        .chain(RUN_ENDS)
        .chain([(8, "pending"), (9, "withdrawn")]);
    let status = [(0, "executed, approved"), (1, "no such record"), usage]
        .into_iter()
        .chain(RUN_ENDS)
        .chain([(8, "still open"), (9, "withdrawn")]);
    let mandate = [(0, "granted"), (1, "could not talk to consentd"), usage]
        .into_iter()
        .chain(RUN_ENDS[..3].iter().copied())
        .chain([(8, "pending")]);
    let table: [(&str, Vec<(u8, &str)>); 3] = [
        ("ask", ask.collect()),
        ("mandate", mandate.collect()),
        ("status", status.collect()),
    ];
    for (subcommand, codes) in table {
        let text = stdout(&consentd(&[subcommand, "--help"]));
        assert!(text.contains("Exit codes"), "{subcommand}: {text}");
        for (code, meaning) in codes {
            assert!(
                text.lines()
                    .any(|line| line.starts_with(&format!("  {code}  ")) && line.contains(meaning)),
                "{subcommand} --help: exit {code} ({meaning}) in\n{text}"
            );
        }
    }
}

/// `consentd list`, with the socket from `--socket` or from the environment.
fn list_at(socket: &Path, by_env: bool) -> Output {
    let mut command = Command::new(BIN);
    command
        .arg("list")
        .env_remove("CONSENTD_SOCKET")
        .stdin(Stdio::null());
    if by_env {
        command.env("CONSENTD_SOCKET", socket);
    } else {
        command.arg("--socket").arg(socket);
    }
    command.output().unwrap()
}

fn python_list_at(socket: &Path) -> Output {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python/consentd_client.py");
    Command::new("python3")
        .arg(client)
        .arg("list")
        .env("CONSENTD_SOCKET", socket)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// One line on stderr, exit 1, saying `what` and what to check, and no OS error number.
fn assert_no_daemon(output: &Output, client: &str, what: &str) {
    let said = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{client}: {said}");
    assert_eq!(
        said.trim_end().lines().count(),
        1,
        "{client}: one line: {said}"
    );
    assert_eq!(
        said.matches("cannot connect").count(),
        1,
        "{client}: {said}"
    );
    for needle in [what, "consentd serve", "$CONSENTD_SOCKET", "paths.socket"] {
        assert!(said.contains(needle), "{client}: {needle:?} in {said}");
    }
    assert!(
        !said.contains("os error"),
        "{client}: the OS error again: {said}"
    );
    assert!(
        !said.contains("Errno"),
        "{client}: the OS error again: {said}"
    );
}

#[test]
fn no_socket_there_says_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("consent.sock");
    let what = format!("there is no socket at {}", socket.display());
    let by_flag = list_at(&socket, false);
    assert_no_daemon(&by_flag, "consentd --socket", &what);
    assert!(
        stderr(&by_flag).contains("(from --socket)"),
        "{}",
        stderr(&by_flag)
    );
    let by_env = list_at(&socket, true);
    assert_no_daemon(&by_env, "consentd", &what);
    assert!(
        stderr(&by_env).contains("(from $CONSENTD_SOCKET)"),
        "{}",
        stderr(&by_env)
    );
    assert_no_daemon(&python_list_at(&socket), "consentd_client.py", &what);
}

#[test]
fn a_socket_nobody_listens_on_says_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("consent.sock");
    // The file stays after its listener is gone, as after a daemon that was killed.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let what = format!("nothing is listening on {}", socket.display());
    assert_no_daemon(&list_at(&socket, false), "consentd", &what);
    assert_no_daemon(&python_list_at(&socket), "consentd_client.py", &what);
}
