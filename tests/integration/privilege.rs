//! Least privilege by default: the bot token is not left in the daemon's environment, unsafe
//! owners, modes and symlinks of the state files make `serve` refuse naming the file, a
//! category with no `run_as` is warned about, and no process a command starts outlives its run.
//!
//! The owner cases chown files to uid 65534, which needs root: the suite runs as root here and
//! in CI (the container's user), and those cases fail rather than pass unchecked otherwise.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::json;

use crate::fixture::{Daemon, TOKEN};

/// Another user, for the owner cases.
const OTHER: u32 = 65534;

/// A category whose command starts a process that leaves its process group, writes that
/// process's pid to a file, and exits (holding first while a `hold-<variant>` file exists).
const ESCAPE: &str = r#"
[categories.escape]
label = { en = "Escape" }
class = "external"
enabled = true
text = "required"
command = ["/bin/sh", "{dir}/escape.sh"]
"#;

/// `escape.sh TEXT`: with the ask's text (`setsid` or `double`, then a tag) read from stdin.
/// `setsid` starts `setsid sh` in the background; `double` forks a subshell that starts it and
/// exits at once, so the escaped process is orphaned while the command still runs. The
/// escaped process writes its pid to `escaped-<tag>.pid` and becomes `sleep 1000`.
fn write_escape_script(dir: &Path) {
    let d = dir.display();
    let inner = format!(
        "echo $$ > {d}/escaped-$TAG.tmp && /bin/mv {d}/escaped-$TAG.tmp {d}/escaped-$TAG.pid \
         && exec /bin/sleep 1000"
    );
    std::fs::write(
        dir.join("escape.sh"),
        format!(
            "input=$(/bin/cat)\n\
             case \"$input\" in\n\
             *setsid*) VARIANT=setsid ;;\n\
             *) VARIANT=double ;;\n\
             esac\n\
             case \"$input\" in\n\
             *tag-a*) TAG=a ;;\n\
             *) TAG=b ;;\n\
             esac\n\
             export TAG\n\
             if [ $VARIANT = setsid ]; then\n\
             /usr/bin/setsid /bin/sh -c '{inner}' </dev/null >/dev/null 2>&1 &\n\
             else\n\
             ( /usr/bin/setsid /bin/sh -c '{inner}' </dev/null >/dev/null 2>&1 & )\n\
             fi\n\
             while [ ! -s {d}/escaped-$TAG.pid ]; do /bin/sleep 0.01; done\n\
             while [ -f {d}/hold-$TAG ]; do /bin/sleep 0.01; done\n\
             echo done\n"
        ),
    )
    .unwrap();
}

/// Asks for an `escape` run with `text`, approves it, and returns its record id.
fn approve_escape(daemon: &Daemon, text: &str) -> String {
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"escape","text":text,
        "wait":false}));
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    id
}

/// The pid an escaped process wrote, once it has.
fn escaped_pid(dir: &Path, tag: &str) -> i32 {
    let path = dir.join(format!("escaped-{tag}.pid"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is gone (not even a zombie) within a bounded wait; kills it if not, so a
/// failing test leaves nothing behind.
fn gone_soon(pid: i32) -> bool {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if !proc_dir.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    false
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn a_commands_escaped_grandchild_is_gone_when_its_run_ends() {
    for variant in ["setsid", "double"] {
        let daemon = Daemon::builder().config_tail(ESCAPE).start();
        write_escape_script(daemon.dir.path());
        let id = approve_escape(&daemon, &format!("{variant} tag-a"));
        daemon.wait_state(&id, "executed");
        let pid = escaped_pid(daemon.dir.path(), "a");
        assert!(
            gone_soon(pid),
            "{variant}: the escaped process {pid} outlived its run\n{}",
            daemon.log()
        );
    }
}

/// Run A is going (held) and its escaped process already adopted by the daemon when run B ends:
/// B's end must not kill A's process, which started after A did; A's own end kills both.
#[test]
fn a_runs_end_never_kills_a_concurrent_runs_process() {
    let daemon = Daemon::builder().config_tail(ESCAPE).start();
    let dir = daemon.dir.path();
    write_escape_script(dir);
    std::fs::write(dir.join("hold-a"), "").unwrap();
    let a = approve_escape(&daemon, "double tag-a");
    let pid_a = escaped_pid(dir, "a");
    let b = approve_escape(&daemon, "setsid tag-b");
    daemon.wait_state(&b, "executed");
    let pid_b = escaped_pid(dir, "b");
    assert!(
        alive(pid_a),
        "run B's end killed run A's process {pid_a}, A still going\n{}",
        daemon.log()
    );
    std::fs::remove_file(dir.join("hold-a")).unwrap();
    daemon.wait_state(&a, "executed");
    assert!(gone_soon(pid_a), "run A's process {pid_a} outlived run A");
    assert!(
        gone_soon(pid_b),
        "run B's process {pid_b} outlived both runs"
    );
}

/// The NUL-separated `KEY=VALUE` entries of `/proc/<pid>/environ`.
fn environ(pid: i32) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/environ")).unwrap()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_token_is_not_in_the_daemons_environment_nor_its_commands() {
    let daemon = Daemon::builder()
        .config_tail(
            r#"
[categories.show_env]
label = { en = "Show the environment" }
class = "external"
enabled = true
text = "required"
command = ["/bin/sh", "-c", "/bin/cat /proc/$$/environ > {dir}/child.env; /bin/cat /proc/$PPID/environ > {dir}/parent.env"]
"#,
        )
        .start();
    let env = environ(daemon.pid().as_raw());
    // The file is readable and holds the daemon's other variables: the absence below means it.
    assert!(contains(&env, b"CONSENTD_TEST_CLOCK_FILE="), "{env:?}");
    assert!(
        !contains(&env, TOKEN.as_bytes()),
        "the token is in the daemon's environ"
    );
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"show_env","text":"env",
        "wait":false}));
    let id = answer["id"].as_str().unwrap().to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    let child = std::fs::read(daemon.dir.path().join("child.env")).unwrap();
    assert!(
        !contains(&child, TOKEN.as_bytes()),
        "the token is in the command's environ"
    );
    assert!(!contains(&child, b"CONSENTD_BOT_TOKEN"), "{child:?}");
    // What the command can see of the daemon's environment holds no token either.
    let parent = std::fs::read(daemon.dir.path().join("parent.env")).unwrap();
    assert!(!parent.is_empty());
    assert!(!contains(&parent, TOKEN.as_bytes()));
}

#[test]
fn serve_warns_about_each_category_that_is_on_without_run_as() {
    let daemon = Daemon::start();
    let log = daemon.log();
    for on in ["publish_x", "send_letter"] {
        let line = format!(
            "category {on} is on and has no run_as: its command runs as the daemon's user and \
             can read the press key, the token file and the database, and write the journal"
        );
        assert!(log.contains(&line), "no warning for {on}: {log}");
        assert!(
            log.contains(&format!("consentd: warning: {line}")),
            "not on stderr: {on}"
        );
    }
    assert!(
        !log.contains("category wipe_drafts is on"),
        "wipe_drafts is off"
    );
}

/// How a case spoils the files of a daemon that ran once and stopped.
type Spoil = fn(&Path);

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown_other(path: &Path) {
    std::os::unix::fs::lchown(path, Some(OTHER), None).unwrap_or_else(|e| {
        panic!(
            "chown {} to {OTHER} (this case needs root): {e}",
            path.display()
        )
    });
}

/// Moves `path` aside and puts a symlink to it in its place.
fn symlink_in_place(path: &Path) {
    let real = path.with_extension("real");
    std::fs::rename(path, &real).unwrap();
    std::os::unix::fs::symlink(&real, path).unwrap();
}

/// Starts a daemon with its token in a file (0600), stops it, spoils one file with `spoil`,
/// and returns why the restart was refused; panics if it was not.
fn refused_after(spoil: Spoil, name: &str) -> String {
    let mut daemon = Daemon::start();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let dir = daemon.dir.path().to_owned();
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    chmod(&token, 0o600);
    let config = std::fs::read_to_string(&daemon.config).unwrap().replacen(
        "[telegram]\n",
        &format!("[telegram]\ntoken_file = \"{}\"\n", token.display()),
        1,
    );
    std::fs::write(&daemon.config, config).unwrap();
    let journal_before = std::fs::read(&daemon.journal).unwrap();
    spoil(&dir);
    match daemon.try_restart_with(Vec::new()) {
        Ok(mut daemon) => {
            daemon.stop_with(Signal::SIGKILL);
            panic!("{name}: serve started");
        }
        Err(failure) => {
            // Nothing was appended to a journal it refused.
            let journal = dir.join("state/decisions.jsonl");
            if let Ok(after) = std::fs::read(&journal) {
                assert_eq!(after, journal_before, "{name}: the journal changed");
            }
            failure.to_string()
        }
    }
}

fn assert_refused(cases: &[(&str, Spoil, &str, &str)]) {
    for (name, spoil, file, what) in cases {
        let message = refused_after(*spoil, name);
        assert!(message.contains("exited with"), "{name}: {message}");
        assert!(!message.contains("exit status: 0"), "{name}: {message}");
        assert!(
            message.contains(&format!("/{file} ")) || message.contains(&format!("/{file}:")),
            "{name}: the message does not name {file}: {message}"
        );
        assert!(message.contains(what), "{name}: not {what:?}: {message}");
    }
}

#[test]
fn each_unsafe_mode_or_symlink_of_the_state_files_makes_serve_refuse() {
    let cases: &[(&str, Spoil, &str, &str)] = &[
        (
            "token 0644",
            |d| chmod(&d.join("token"), 0o644),
            "token",
            "mode 0644",
        ),
        (
            "token 0640",
            |d| chmod(&d.join("token"), 0o640),
            "token",
            "mode 0640",
        ),
        (
            "token 0602",
            |d| chmod(&d.join("token"), 0o602),
            "token",
            "mode 0602",
        ),
        (
            "state dir 0777",
            |d| chmod(&d.join("state"), 0o777),
            "state",
            "may write",
        ),
        (
            "state dir 0770",
            |d| chmod(&d.join("state"), 0o770),
            "state",
            "may write",
        ),
        (
            "state dir a symlink",
            |d| symlink_in_place(&d.join("state")),
            "state",
            "symlink",
        ),
        (
            "journal 0666",
            |d| chmod(&d.join("state/decisions.jsonl"), 0o666),
            "decisions.jsonl",
            "mode 0666",
        ),
        (
            "journal 0660",
            |d| chmod(&d.join("state/decisions.jsonl"), 0o660),
            "decisions.jsonl",
            "mode 0660",
        ),
        (
            "journal a symlink",
            |d| symlink_in_place(&d.join("state/decisions.jsonl")),
            "decisions.jsonl",
            "symlink",
        ),
        (
            "press key 0640",
            |d| chmod(&d.join("state/press.key"), 0o640),
            "press.key",
            "mode 0640",
        ),
        (
            "press key a symlink",
            |d| symlink_in_place(&d.join("state/press.key")),
            "press.key",
            "symlink",
        ),
        (
            "database 0666",
            |d| chmod(&d.join("state/consentd.db"), 0o666),
            "consentd.db",
            "mode 0666",
        ),
        (
            "database a symlink",
            |d| symlink_in_place(&d.join("state/consentd.db")),
            "consentd.db",
            "symlink",
        ),
        (
            "attachments 0777",
            |d| chmod(&d.join("state/attachments"), 0o777),
            "attachments",
            "may write",
        ),
        (
            "attachments a symlink",
            |d| symlink_in_place(&d.join("state/attachments")),
            "attachments",
            "symlink",
        ),
    ];
    assert_refused(cases);
}

#[test]
fn each_state_file_owned_by_another_user_makes_serve_refuse() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "these cases chown files to uid {OTHER}, which needs root"
    );
    let cases: &[(&str, Spoil, &str, &str)] = &[
        (
            "token",
            |d| chown_other(&d.join("token")),
            "token",
            "owned by uid 65534",
        ),
        (
            "state dir",
            |d| chown_other(&d.join("state")),
            "state",
            "owned by uid 65534",
        ),
        (
            "journal",
            |d| chown_other(&d.join("state/decisions.jsonl")),
            "decisions.jsonl",
            "owned by uid 65534",
        ),
        (
            "press key",
            |d| chown_other(&d.join("state/press.key")),
            "press.key",
            "owned by uid 65534",
        ),
        (
            "database",
            |d| chown_other(&d.join("state/consentd.db")),
            "consentd.db",
            "owned by uid 65534",
        ),
        (
            "attachments",
            |d| chown_other(&d.join("state/attachments")),
            "attachments",
            "owned by uid 65534",
        ),
    ];
    assert_refused(cases);
}

/// `check-config` says the same as `serve` refuses with, under the same key.
#[test]
fn check_config_names_an_unsafe_journal() {
    let mut daemon = Daemon::start();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    chmod(&daemon.journal, 0o666);
    let output = daemon.cli(&["check-config", &daemon.config.display().to_string()]);
    let text = crate::fixture::stdout(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("paths.state_dir") && text.contains("decisions.jsonl has mode 0666"),
        "{text}"
    );
}

/// A state file's path holding something other than a regular file, with the owner and mode the
/// preflight accepts (owned by the daemon's uid, not writable by group or other): `serve` must
/// refuse at start naming the file, as it does for a symlink, not wait forever reading it (and
/// then ignore SIGTERM, as the start has no signal handler yet). Every case is run; the failures
/// are listed together.
#[test]
fn a_state_file_that_is_not_a_regular_file_makes_serve_refuse_naming_it() {
    use std::process::{Command, Stdio};
    type Plant = fn(&Path);
    fn fifo(path: &Path) {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap()
    }
    let cases: &[(&str, &str, Plant)] = &[
        ("the journal a directory", "decisions.jsonl", |path| {
            std::fs::create_dir(path).unwrap();
            chmod(path, 0o750);
        }),
        ("the journal a FIFO", "decisions.jsonl", fifo),
        ("the press key a FIFO", "press.key", fifo),
        ("the lock a FIFO", "lock", fifo),
    ];
    let mut failures = Vec::new();
    for (name, file, plant) in cases {
        let mut daemon = Daemon::start();
        assert!(daemon.stop_with(Signal::SIGTERM).success(), "{name}");
        let path = daemon.state_dir.join(file);
        std::fs::remove_file(&path).unwrap();
        plant(&path);
        let log = daemon.dir.path().join("restart.log");
        let mut child = Command::new(crate::fixture::BIN)
            .args(["serve", "--config"])
            .arg(&daemon.config)
            .env("CONSENTD_BOT_TOKEN", TOKEN)
            .env("CONSENTD_TEST_CLOCK_FILE", daemon.dir.path().join("clock"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let ignored_term = status.is_none() && {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                Signal::SIGTERM,
            );
            std::thread::sleep(Duration::from_secs(2));
            let still = child.try_wait().unwrap().is_none();
            let _ = child.kill();
            let _ = child.wait();
            still
        };
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = stderr
            .lines()
            .last()
            .unwrap_or("")
            .chars()
            .take(300)
            .collect();
        match status {
            None => failures.push(format!(
                "{name}: serve neither started nor refused within 10 s (then, on SIGTERM, {}): {tail}",
                if ignored_term { "still running 2 s later" } else { "it stopped" }
            )),
            Some(status) if status.success() => {
                failures.push(format!("{name}: serve exited 0: {tail}"))
            }
            Some(_) if !stderr.contains(file) => {
                failures.push(format!("{name}: the refusal does not name {file}: {tail}"))
            }
            Some(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
