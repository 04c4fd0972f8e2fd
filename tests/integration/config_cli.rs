//! `consentd check-config`, and `serve` refusing a bad config the same way: the file's own rules,
//! and what this machine must have for it (the token, each command and user).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::fixture::{consentd, stderr, stdout, BIN, TOKEN};

#[test]
fn the_example_config_passes() {
    // It is written for another machine (its token file, its commands): the file's rules only.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml");
    let output = consentd(&["check-config", "--file-only", example]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).starts_with("ok: "), "{}", stdout(&output));
    assert_eq!(
        stdout(&output).lines().count(),
        2,
        "ok and checked: {}",
        stdout(&output)
    );
}

const BAD: &str = r#"
[owner]
tiemzone = "UTC"

[paths]
state_dir = "relative/state"

[limits]
card_ttl = "20m"
decline_reason_wait = "20m"

[categories.wipe]
label = { en = "Wipe" }
field_labels.subject = { en = "Subject" }
class = "destructive"
mandate_ok = true
command = ["wipe"]
"#;

#[test]
fn a_bad_config_names_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, BAD).unwrap();
    let output = consentd(&["check-config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let printed = stdout(&output);
    for key in [
        "owner.tiemzone:",
        "paths.state_dir:",
        "limits.card_ttl:",
        "limits.decline_reason_wait:",
        "categories.wipe.mandate_ok:",
        "categories.wipe.command:",
        "categories.wipe.field_labels.subject:",
    ] {
        assert!(
            printed
                .lines()
                .any(|line| line.trim_start().starts_with(key)),
            "{key} in {printed}"
        );
    }
    assert!(printed.contains("15m"), "the ceiling is named: {printed}");
    assert!(
        printed.contains("20m is over the ceiling of 10m"),
        "decline_reason_wait's ceiling is named: {printed}"
    );

    let serve = consentd(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(serve.status.code(), Some(1));
    let said = stderr(&serve);
    assert!(said.contains("limits.card_ttl"), "{said}");
    assert!(said.contains("categories.wipe.mandate_ok"), "{said}");
}

#[test]
fn a_missing_config_is_an_error() {
    let output = consentd(&["check-config", "/nonexistent/consentd.toml"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("/nonexistent/consentd.toml"),
        "{}",
        stderr(&output)
    );
}

/// A config with one category that is on, its token in a file, and the parts a row breaks.
struct Broken {
    /// The `[telegram]` line naming the token (empty: none).
    token_line: String,
    enabled: bool,
    command: String,
    /// More lines for the category.
    extra: String,
    /// More lines at the end (another section).
    tail: String,
}

impl Broken {
    fn in_dir(dir: &Path) -> Broken {
        std::fs::write(dir.join("bot-token"), format!("{TOKEN}\n")).unwrap();
        // The daemon's alone, as serve requires of a token file.
        std::fs::set_permissions(
            dir.join("bot-token"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        Broken {
            token_line: format!("token_file = \"{}/bot-token\"", dir.display()),
            enabled: true,
            command: "/bin/true".to_owned(),
            extra: String::new(),
            tail: String::new(),
        }
    }

    fn text(&self, dir: &Path) -> String {
        format!(
            "[telegram]\n{token}\napi_url = \"http://127.0.0.1:9\"\n\n\
             [paths]\nstate_dir = \"{dir}/state\"\nsocket = \"{dir}/run/consent.sock\"\n\n\
             [categories.post]\nlabel = {{ en = \"Post\" }}\nclass = \"external\"\n\
             enabled = {enabled}\n{command}{extra}\n{tail}\n",
            token = self.token_line,
            dir = dir.display(),
            enabled = self.enabled,
            // An empty command leaves the key out (a built-in action's category).
            command = if self.command.is_empty() {
                String::new()
            } else {
                format!("command = [\"{}\"]\n", self.command)
            },
            extra = self.extra,
            tail = self.tail,
        )
    }
}

/// The keys of the problem lines `check-config` printed (notes and its `checked:` line aside).
fn problem_keys(printed: &str) -> Vec<String> {
    printed
        .lines()
        .filter(|line| !line.starts_with("note: ") && !line.starts_with("checked: "))
        .filter_map(|line| line.split_once(": ").map(|(key, _)| key.to_owned()))
        .collect()
}

/// The keys `serve` named when it refused to start (`  KEY: MESSAGE` lines).
fn refused_keys(said: &str) -> Vec<String> {
    said.lines()
        .filter(|line| line.starts_with("  "))
        .filter_map(|line| {
            line.trim_start()
                .split_once(": ")
                .map(|(key, _)| key.to_owned())
        })
        .collect()
}

/// Runs `consentd ARGS` with no token in its environment.
fn without_env_token(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("CONSENTD_BOT_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Each broken config: `check-config` names exactly its keys (and exits 1), and `serve` refuses
/// to start naming the same keys, before it creates anything.
fn check_row(name: &str, edit: impl Fn(&mut Broken, &Path), expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut broken = Broken::in_dir(dir.path());
    edit(&mut broken, dir.path());
    let path = dir.path().join("consentd.toml");
    std::fs::write(&path, broken.text(dir.path())).unwrap();
    let path = path.to_str().unwrap();

    let check = without_env_token(&["check-config", path]);
    let printed = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{name}: {printed}");
    assert_eq!(
        problem_keys(&printed),
        expected,
        "{name}: check-config said\n{printed}"
    );
    assert!(
        printed.contains("checked: "),
        "{name}: whom it checked as: {printed}"
    );

    let serve = without_env_token(&["serve", "--config", path]);
    let said = stderr(&serve);
    assert_eq!(serve.status.code(), Some(1), "{name}: {said}");
    assert_eq!(refused_keys(&said), expected, "{name}: serve said\n{said}");
    assert!(
        !dir.path().join("state").exists(),
        "{name}: serve created its state dir"
    );
}

#[test]
fn a_token_serve_cannot_read_is_named_by_check_config_and_serve() {
    let key = ["telegram.token_file"];
    check_row(
        "a token_file that does not exist",
        |b, dir| {
            b.token_line = format!("token_file = \"{}/missing-token\"", dir.display());
        },
        &key,
    );
    check_row(
        "a token_file that is a directory",
        |b, dir| {
            b.token_line = format!("token_file = \"{}\"", dir.display());
        },
        &key,
    );
    check_row(
        "an empty token_file",
        |_, dir| {
            std::fs::write(dir.join("bot-token"), "\n").unwrap();
        },
        &key,
    );
    check_row(
        "no token_file and no $CONSENTD_BOT_TOKEN",
        |b, _| b.token_line.clear(),
        &key,
    );
    if !nix::unistd::geteuid().is_root() {
        check_row(
            "a token_file this user may not read",
            |_, dir| {
                let token = dir.join("bot-token");
                std::fs::set_permissions(token, std::fs::Permissions::from_mode(0o000)).unwrap();
            },
            &key,
        );
    }
}

#[test]
fn a_category_that_is_on_and_cannot_run_is_named_by_check_config_and_serve() {
    let command = ["categories.post.command"];
    check_row(
        "a command that does not exist",
        |b, dir| {
            b.command = format!("{}/no-such-command", dir.display());
        },
        &command,
    );
    check_row(
        "a command that is not executable",
        |b, dir| {
            let plain = dir.join("plain-file");
            std::fs::write(&plain, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
            b.command = plain.display().to_string();
        },
        &command,
    );
    check_row(
        "a command that is a directory",
        |b, dir| {
            b.command = dir.display().to_string();
        },
        &command,
    );
    check_row(
        "a run_as user that does not exist",
        |b, _| {
            b.extra = "run_as = \"no-such-user\"".to_owned();
        },
        &["categories.post.run_as"],
    );
    check_row(
        "an env_file that does not exist",
        |b, dir| {
            b.extra = format!("env_file = \"{}/missing.env\"", dir.display());
        },
        &["categories.post.env_file"],
    );
    if !nix::unistd::geteuid().is_root() {
        check_row(
            "run_as without root",
            |b, _| {
                b.extra = "run_as = \"nobody\"".to_owned();
            },
            &["categories.post.run_as"],
        );
    }
}

/// A built-in action's category: each wrong combination of `command`, `action` and their keys,
/// and each secret file the daemon could not use, is named by its key, by `check-config` and
/// `serve` alike.
#[test]
fn each_wrong_builtin_action_is_named_by_its_key() {
    let http = "action = \"http\"\nurl = \"http://127.0.0.1:9/hook\"\n";
    let headers = |dir: &Path, mode: u32, text: &str| {
        let path = dir.join("hook.headers");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        format!("headers_file = \"{}\"\n", path.display())
    };
    type Edit = Box<dyn Fn(&mut Broken, &Path)>;
    let rows: Vec<(&str, Edit, &[&str])> = vec![
        (
            "a command and an action",
            Box::new(|b, _| {
                b.extra =
                    "action = \"telegram_post\"\ntarget = \"required\"\ntext = \"required\"".into()
            }),
            &["categories.post.command"],
        ),
        (
            "neither a command nor an action",
            Box::new(|b, _| b.command = String::new()),
            &["categories.post.command"],
        ),
        (
            "run_as with an action",
            Box::new(move |b, _| {
                b.command = String::new();
                b.extra = format!("{http}run_as = \"nobody\"");
            }),
            &["categories.post.run_as"],
        ),
        (
            "an http action without url",
            Box::new(|b, _| {
                b.command = String::new();
                b.extra = "action = \"http\"".into();
            }),
            &["categories.post.url"],
        ),
        (
            "a url on a command",
            Box::new(|b, _| b.extra = "url = \"http://127.0.0.1:9/\"".into()),
            &["categories.post.url"],
        ),
        (
            "a telegram_post without a required target",
            Box::new(|b, _| {
                b.command = String::new();
                b.extra = "action = \"telegram_post\"\ntext = \"required\"".into();
            }),
            &["categories.post.target"],
        ),
        (
            "a headers_file that does not exist",
            Box::new(move |b, dir| {
                b.command = String::new();
                b.extra = format!("{http}headers_file = \"{}/none\"", dir.display());
            }),
            &["categories.post.headers_file"],
        ),
        (
            "a headers_file others may read",
            Box::new(move |b, dir| {
                b.command = String::new();
                b.extra = format!("{http}{}", headers(dir, 0o644, "Authorization: Bearer x\n"));
            }),
            &["categories.post.headers_file"],
        ),
        (
            "a headers_file with a bad line",
            Box::new(move |b, dir| {
                b.command = String::new();
                b.extra = format!("{http}{}", headers(dir, 0o600, "Authorization Bearer x\n"));
            }),
            &["categories.post.headers_file"],
        ),
        (
            "an email's credentials_file others may read",
            Box::new(|b, dir| {
                let path = dir.join("smtp");
                std::fs::write(&path, "bot:secret\n").unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
                b.command = String::new();
                b.extra = format!(
                    "action = \"email\"\ntarget = \"required\"\n\
                     smtp_url = \"smtp://127.0.0.1:9?tls=none\"\nfrom = \"bot@example.org\"\n\
                     credentials_file = \"{}\"",
                    path.display()
                );
            }),
            &["categories.post.credentials_file"],
        ),
    ];
    for (name, edit, expected) in rows {
        check_row(name, edit, expected);
    }
}

#[test]
fn every_problem_is_named_in_one_run() {
    check_row(
        "the file's and the machine's problems together",
        |b, dir| {
            b.token_line = format!("token_file = \"{}/missing-token\"", dir.display());
            b.command = format!("{}/no-such-command", dir.display());
            b.extra = "run_as = \"no-such-user\"".to_owned();
            b.tail = "[limits]\ncard_ttl = \"20m\"".to_owned();
        },
        &[
            "limits.card_ttl",
            "telegram.token_file",
            "categories.post.command",
            "categories.post.run_as",
        ],
    );
}

#[test]
fn a_category_that_is_off_gets_notes_and_serve_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut broken = Broken::in_dir(dir.path());
    broken.enabled = false;
    broken.command = format!("{}/no-such-command", dir.path().display());
    let path = dir.path().join("consentd.toml");
    std::fs::write(&path, broken.text(dir.path())).unwrap();
    let check = without_env_token(&["check-config", path.to_str().unwrap()]);
    let printed = stdout(&check);
    assert_eq!(check.status.code(), Some(0), "{printed}");
    assert!(printed.starts_with("ok: 1 category (0 on)"), "{printed}");
    assert!(
        printed
            .lines()
            .any(|line| line.starts_with("note: categories.post.command: ")
                && line.contains("the category is off")),
        "{printed}"
    );

    let mut serve = Command::new(BIN)
        .args(["serve", "--config", path.to_str().unwrap()])
        .env_remove("CONSENTD_BOT_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let socket = dir.path().join("run/consent.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(serve.try_wait().unwrap().is_none(), "serve stopped");
        assert!(Instant::now() < deadline, "serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(serve.id() as i32), Signal::SIGTERM).unwrap();
    let output = serve.wait_with_output().unwrap();
    let said = stderr(&output);
    assert!(
        said.contains("WARN") && said.contains("categories.post.command: "),
        "the note is in the log: {said}"
    );
}

#[test]
fn check_config_says_whom_it_checked_as() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml");
    let output = Command::new(BIN)
        .args(["check-config", example])
        .env("CONSENTD_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    let printed = stdout(&output);
    let uid = nix::unistd::geteuid();
    assert!(
        printed
            .lines()
            .any(|line| line.starts_with("checked: ") && line.contains(&format!("uid {uid}"))),
        "{printed}"
    );
    let file_only = consentd(&["check-config", "--file-only", example]);
    assert!(
        stdout(&file_only).contains("checked: the file alone"),
        "{}",
        stdout(&file_only)
    );
}

/// A FIFO (mode 0600, the daemon's own, as the preflight wants it) where the config names a file
/// read at start — the token file, a category's env file — must be named as a problem at once, as
/// a directory is: `check-config` and `serve` must not wait forever for a writer that never comes.
#[test]
fn a_file_the_config_names_that_is_a_fifo_is_named_not_waited_on() {
    // Which file is the FIFO, the command run, and the key the problem must be named by.
    let cases = [
        ("token_file", "check-config", "telegram.token_file"),
        ("token_file", "serve", "telegram.token_file"),
        ("env_file", "check-config", "categories.post.env_file"),
    ];
    for (file, run, key) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut broken = Broken::in_dir(dir.path());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        match file {
            "token_file" => broken.token_line = format!("token_file = \"{}\"", fifo.display()),
            _ => broken.extra = format!("env_file = \"{}\"", fifo.display()),
        }
        let path = dir.path().join("consentd.toml");
        std::fs::write(&path, broken.text(dir.path())).unwrap();
        let mut command = Command::new(BIN);
        match run {
            "serve" => command.args(["serve", "--config"]),
            _ => command.arg("check-config"),
        };
        command.arg(&path).env_remove("CONSENTD_BOT_TOKEN");
        let name = format!("{run} with its {file} a FIFO");
        let output = crate::fixture::output_within_ten_seconds(command, &name);
        let said = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{name}: {said}");
        assert!(said.contains(key), "{name}: does not name {key}: {said}");
    }
}
