//! Forward-secure seals on a journal the daemon wrote: `seal-init` only while the daemon is
//! stopped, every line after it sealed, no earlier key left anywhere in the state directory once
//! an epoch passed, each tampering named by its first bad line by `journal verify --key` and by
//! the independent verifier in fixtures/journal (Python, standard library only), and a kill at
//! each step of an epoch change on a disk that keeps only what was synced.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use consentd_core::journal::{key_id, parse_key, Key, Line, SealKey};
use nix::sys::signal::Signal;
use sha2::{Digest as _, Sha256};

use crate::crashfs::{build_shim, materialize, shim_env};
use crate::fixture::{good_ask, stderr, stdout, Daemon};

const EPOCH: &str = "\n[journal]\nseal_epoch = \"1m\"\n";

fn python_verifier() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/journal/verify_journal.py")
}

/// `consentd journal verify FILE` with these arguments.
fn verify(daemon: &Daemon, file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["journal", "verify", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    daemon.cli(&args)
}

/// The Python verifier, with the same arguments. No `python3` is a failure, not a skip.
fn python(file: &Path, extra: &[&str]) -> Output {
    Command::new("python3")
        .arg(python_verifier())
        .arg(file)
        .args(extra)
        .output()
        .expect("these tests need python3 to run the independent verifier")
}

/// The line number a failing verification names (`line N: …` or `anchor N: …`).
fn named_line(output: &Output) -> u64 {
    let text = stdout(output);
    let first = text.lines().next().unwrap_or_default();
    let rest = first
        .strip_prefix("line ")
        .or_else(|| first.strip_prefix("anchor "))
        .unwrap_or_else(|| panic!("no line named: {text}"));
    rest[..rest.find(':').unwrap()].parse().unwrap()
}

/// A daemon with one-minute epochs, sealed by `seal-init` (run while it was stopped); returns it
/// running again, and the verification key.
fn sealed_daemon() -> (Daemon, Key) {
    let mut daemon = Daemon::builder().config_tail(EPOCH).start();
    let config = daemon.config.to_str().unwrap().to_owned();
    // Refused while the daemon holds the state directory.
    let busy = daemon.cli(&["journal", "seal-init", "--config", &config]);
    assert_eq!(busy.status.code(), Some(1), "{}", stdout(&busy));
    assert!(
        stderr(&busy).contains("stop `consentd serve` first"),
        "{}",
        stderr(&busy)
    );
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let init = daemon.cli(&["journal", "seal-init", "--config", &config]);
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let printed = stdout(&init);
    let k0 = printed
        .lines()
        .find_map(|l| l.strip_prefix("verification key: "))
        .and_then(parse_key)
        .unwrap_or_else(|| panic!("no key printed: {printed}"));
    assert!(printed.contains(&format!("key id: {}", key_id(&k0))));
    // Sent to the owner's chat as well, straight from the command: never through the database
    // (the scan below finds k0 in no file of the state directory).
    assert!(
        printed.contains("Also sent to the owner's chat"),
        "{printed}"
    );
    let sent = daemon.owner_chat().into_iter().any(|m| {
        m.text
            .as_deref()
            .is_some_and(|t| t.contains(&hex(&k0)) && t.contains(&key_id(&k0)))
    });
    assert!(sent, "the owner's chat has no message with the key");
    // A QR code of it, drawn with half blocks as `pair` draws its link.
    assert!(printed.contains('▀') || printed.contains('▄'), "{printed}");
    let again = daemon.cli(&["journal", "seal-init", "--config", &config]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("journal rotate"),
        "{}",
        stderr(&again)
    );
    (daemon.restart(), k0)
}

/// The key file's epoch and key.
fn key_on_disk(state_dir: &Path) -> SealKey {
    let text =
        std::fs::read_to_string(state_dir.join(consentd_store::journal::SEAL_KEY_FILE)).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap()
            .to_owned()
    };
    SealKey {
        epoch: field("epoch").parse().unwrap(),
        key: parse_key(&field("key")).unwrap(),
    }
}

/// Every regular file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Asks across `epochs` one-minute epochs, two asks an epoch.
fn asks_across(daemon: &Daemon, epochs: usize) {
    for i in 0..epochs * 2 {
        let answer = daemon.request(&good_ask(&format!("post {i}")));
        assert!(answer["id"].is_string(), "{answer}");
        daemon.advance_clock(31);
    }
}

#[test]
fn every_line_after_seal_init_is_sealed_and_no_earlier_key_stays_on_disk() {
    let (mut daemon, k0) = sealed_daemon();
    asks_across(&daemon, 4);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let events = daemon.journal_events();
    let announced = events
        .iter()
        .position(|e| e["ev"] == "seal_started")
        .expect("a seal_started line");
    assert_eq!(events[announced]["key_id"], key_id(&k0));
    let text = daemon.journal_text();
    for (i, line) in text.lines().enumerate() {
        assert_eq!(
            line.contains(",\"s\":\""),
            i >= announced,
            "line {}: {line}",
            i + 1
        );
    }
    let k = k0.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let checked = verify(&daemon, &daemon.journal, &["--key", &k]);
    assert_eq!(checked.status.code(), Some(0), "{}", stdout(&checked));
    let out = stdout(&checked);
    let unsealed = match announced {
        1 => "line 1: not sealed".to_string(),
        n => format!("lines 1-{n}: not sealed"),
    };
    assert!(out.contains(&unsealed), "{out}\n{text}");
    assert!(out.contains("sealed and intact"), "{out}");
    assert!(out.contains("the last one"), "{out}");
    let py = python(&daemon.journal, &["--key", &k]);
    assert_eq!(py.status.code(), Some(0), "{}", stdout(&py));
    assert_eq!(
        stdout(&py).lines().next(),
        out.lines().next(),
        "both print the same head"
    );

    // Several epochs passed: k0 and every key before the current one are nowhere in the state
    // directory, raw or in hex.
    let current = key_on_disk(&daemon.state_dir);
    let mut earlier = vec![k0];
    let mut key = SealKey::first(&k0, 1);
    while key.epoch < current.epoch {
        earlier.push(key.key);
        key = key.next();
    }
    assert_eq!(key, current, "the key on disk is k0's, evolved");
    assert!(
        earlier.len() >= 4,
        "only {} epochs passed",
        earlier.len() - 1
    );
    for path in files(&daemon.state_dir) {
        let bytes = std::fs::read(&path).unwrap();
        for (i, k) in earlier.iter().enumerate() {
            let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
            assert!(
                !contains(&bytes, k) && !contains(&bytes, hex.as_bytes()),
                "{} holds the key of epoch {i}",
                path.display()
            );
        }
    }
}

/// Line `n` rebuilt on `prev` from an old line's text, its seal made with `key` under the old
/// line's epoch (an attacker who holds only the current key).
fn resealed(n: u64, prev: &str, old: &str, alter: bool, key: &Key) -> Line {
    let h_at = old.rfind(",\"h\":\"").unwrap();
    let epoch: u64 = {
        let s = &old[old.rfind(",\"s\":\"").unwrap() + 6..];
        s[..s.find(':').unwrap()].parse().unwrap()
    };
    let prev_at = old.find(",\"prev\":\"").unwrap() + 9;
    let mut body = format!("{}{}{}", &old[..prev_at], prev, &old[prev_at + 64..h_at]);
    if alter {
        body.push_str(",\"forged\":true");
    }
    let h: String = Sha256::digest(format!("{body}}}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut line = Line {
        n,
        text: format!("{body},\"h\":\"{h}\"}}\n"),
        h,
    };
    SealKey { epoch, key: *key }.seal(&mut line);
    line
}

#[test]
fn each_tampering_is_named_by_both_verifiers() {
    let (mut daemon, k0) = sealed_daemon();
    asks_across(&daemon, 4);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let text = daemon.journal_text();
    let lines: Vec<String> = text.lines().map(|l| format!("{l}\n")).collect();
    let total = lines.len() as u64;
    let epoch = |line: &str| -> Option<u64> {
        let s = &line[line.rfind(",\"s\":\"")? + 6..];
        s[..s.find(':')?].parse().ok()
    };
    let first_sealed = lines.iter().position(|l| epoch(l).is_some()).unwrap() as u64 + 1;
    let last_epoch = epoch(lines.last().unwrap()).unwrap();
    let attacker = key_on_disk(&daemon.state_dir);
    assert_eq!(attacker.epoch, last_epoch);
    // A sealed line of the first epoch, not the announcement.
    let old = first_sealed + 1;
    let h_of = |l: &str| l[l.rfind(",\"h\":\"").unwrap() + 6..][..64].to_string();

    let mut cases: Vec<(String, String, u64)> = Vec::new();
    let mut changed = lines.clone();
    changed[old as usize - 1] = changed[old as usize - 1].replacen("\"ts\":\"", "\"ts\":\"1", 1);
    cases.push((
        "one byte changed in an old line".into(),
        changed.concat(),
        old,
    ));
    let mut removed = lines.clone();
    removed.remove(old as usize - 1);
    cases.push(("a line removed".into(), removed.concat(), old));
    let mut inserted = lines.clone();
    inserted.insert(old as usize, lines[old as usize - 1].clone());
    cases.push(("a line inserted".into(), inserted.concat(), old + 1));
    let mut moved = lines.clone();
    let l = moved.remove(old as usize - 1);
    moved.push(l);
    cases.push(("a line moved".into(), moved.concat(), old));
    // Seals stripped from a line on.
    let mut stripped = lines.clone();
    for l in stripped.iter_mut().skip(old as usize - 1) {
        let at = l.rfind(",\"s\":\"").unwrap();
        *l = format!("{}}}\n", &l[..at]);
    }
    cases.push(("seals stripped".into(), stripped.concat(), old));
    // The chain recomputed end to end by whoever holds the current key, from an altered line
    // of each epoch before theirs: caught at that line.
    for target in first_sealed..=total {
        let e = epoch(&lines[target as usize - 1]).unwrap();
        if e == last_epoch
            || (target > first_sealed && epoch(&lines[target as usize - 2]) == Some(e))
        {
            continue;
        }
        let mut forged: Vec<String> = lines[..target as usize - 1].to_vec();
        for n in target..=total {
            let prev = forged.last().map(|l| h_of(l)).unwrap();
            let line = resealed(n, &prev, &lines[n as usize - 1], n == target, &attacker.key);
            forged.push(line.text);
        }
        cases.push((
            format!("the chain recomputed from epoch {e}"),
            forged.concat(),
            target,
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let k: String = k0.iter().map(|b| format!("{b:02x}")).collect();
    let mut recomputed = 0;
    for (what, bytes, want) in &cases {
        let file = dir.path().join("tampered.jsonl");
        std::fs::write(&file, bytes).unwrap();
        let rust = verify(&daemon, &file, &["--key", &k]);
        assert_eq!(rust.status.code(), Some(1), "{what}: {}", stdout(&rust));
        assert_eq!(named_line(&rust), *want, "{what}: {}", stdout(&rust));
        let py = python(&file, &["--key", &k]);
        assert_eq!(py.status.code(), Some(1), "{what}: python: {}", stdout(&py));
        assert_eq!(named_line(&py), *want, "{what}: python: {}", stdout(&py));
        recomputed += usize::from(what.starts_with("the chain recomputed"));
    }
    assert!(recomputed >= 3, "{recomputed} earlier epochs tried");

    // A tail cut before the full anchor the owner kept.
    let anchor = format!("{total}:{}", h_of(lines.last().unwrap()));
    let file = dir.path().join("cut.jsonl");
    std::fs::write(&file, lines[..total as usize - 3].concat()).unwrap();
    let rust = verify(&daemon, &file, &["--key", &k, "--anchor", &anchor]);
    assert_eq!(rust.status.code(), Some(1));
    assert_eq!(named_line(&rust), total, "{}", stdout(&rust));
    let py = python(&file, &["--key", &k, "--anchor", &anchor]);
    assert_eq!((py.status.code(), named_line(&py)), (Some(1), total));
    // Without the anchor the cut shows only as a shorter journal: both say ok.
    assert_eq!(
        verify(&daemon, &file, &["--key", &k]).status.code(),
        Some(0)
    );
    assert_eq!(python(&file, &["--key", &k]).status.code(), Some(0));
}

/// Runs `consentd serve` on the daemon's config and returns its stderr once it exits (within a
/// minute: a daemon that starts serving fails the test).
fn serve_until_it_exits(daemon: &Daemon) -> String {
    let mut child = Command::new(crate::fixture::BIN)
        .args(["serve", "--config"])
        .arg(&daemon.config)
        .env("CONSENTD_BOT_TOKEN", crate::fixture::TOKEN)
        .env("CONSENTD_TEST_CLOCK_FILE", daemon.dir.path().join("clock"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("consentd served a broken journal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn serve_refuses_a_journal_broken_in_the_middle_naming_the_line() {
    let (mut daemon, _k0) = sealed_daemon();
    asks_across(&daemon, 1);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let text = daemon.journal_text();
    let mut lines: Vec<String> = text.lines().map(|l| format!("{l}\n")).collect();
    // A middle line edited with its h kept: the tail still checks out.
    lines[2] = lines[2].replacen("\"ts\":\"", "\"ts\":\"1", 1);
    std::fs::write(&daemon.journal, lines.concat()).unwrap();
    let message = serve_until_it_exits(&daemon);
    assert!(message.contains("line 3: h does not match"), "{message}");
    assert!(message.contains("copy it away as evidence"), "{message}");
}

/// Asks once, reading whatever comes back until the daemon dies (a reset is expected).
fn ask_into_a_crash(socket: &Path) {
    use std::io::{Read as _, Write as _};
    // The daemon's seal clock may reach the epoch change first and die there: that is the same
    // crash, so a refused connection is fine.
    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(socket) else {
        return;
    };
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let _ = stream.write_all(format!("{}\n", good_ask("across the epoch")).as_bytes());
    let mut sink = Vec::new();
    let _ = stream.read_to_end(&mut sink);
}

#[test]
fn a_kill_at_each_step_of_an_epoch_change_keeps_the_key_the_next_line_needs() {
    let shim = build_shim("crashfs-shim-seals.so");
    for point in [
        "seal_key_written",
        "seal_key_synced",
        "seal_key_renamed",
        "seal_key_dir_synced",
        "seal_key_old_erased",
    ] {
        let (mut daemon, k0) = sealed_daemon();
        let k: String = k0.iter().map(|b| format!("{b:02x}")).collect();
        assert!(daemon.stop_with(Signal::SIGTERM).success());
        let state = daemon.state_dir.clone();
        let image = daemon.dir.path().join(format!("image-{point}"));
        let mut env = shim_env(&shim, &state, &image);
        env.push(("CONSENTD_CRASH_AT".into(), point.into()));
        let mut daemon = daemon.restart_with(env);
        assert!(
            image.join("ready").exists(),
            "{point}: the shim did not load"
        );
        // The next epoch: the ask's write evolves the key and dies at `point`.
        daemon.advance_clock(61);
        ask_into_a_crash(&daemon.socket);
        daemon.wait_exit();
        assert!(
            daemon
                .log()
                .contains(&format!("crash point {point} reached")),
            "{point}: {}",
            daemon.log()
        );
        std::fs::remove_dir_all(&state).unwrap();
        materialize(&image, &state);
        // What was synced is enough: the daemon starts (checking the whole chain and the
        // current epoch's seals), seals the next line, and every seal verifies with k0.
        let daemon = daemon.restart();
        let answer = daemon.request(&good_ask("after the crash"));
        assert!(answer["id"].is_string(), "{point}: {answer}");
        let mut daemon = daemon;
        assert!(daemon.stop_with(Signal::SIGTERM).success());
        let checked = verify(&daemon, &daemon.journal, &["--key", &k]);
        assert_eq!(
            checked.status.code(),
            Some(0),
            "{point}: {}",
            stdout(&checked)
        );
        let py = python(&daemon.journal, &["--key", &k]);
        assert_eq!(py.status.code(), Some(0), "{point}: {}", stdout(&py));
        // The key on disk is never older than the last seal written.
        let text = daemon.journal_text();
        let last = text.lines().last().unwrap();
        let s = &last[last.rfind(",\"s\":\"").unwrap() + 6..];
        let sealed_in: u64 = s[..s.find(':').unwrap()].parse().unwrap();
        assert_eq!(key_on_disk(&daemon.state_dir).epoch, sealed_in, "{point}");
        assert_eq!(
            sealed_in, 2,
            "{point}: the line after the crash is in the new epoch"
        );
    }
}

#[test]
fn rotate_announces_a_new_key_and_both_keys_verify_their_ranges() {
    let (mut daemon, k0) = sealed_daemon();
    asks_across(&daemon, 1);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let config = daemon.config.to_str().unwrap().to_owned();
    let k1 = new_key(&daemon, "rotate", &config);
    let daemon = ask_across_a_restart(daemon);
    let events = daemon.journal_events();
    let rotation = events.iter().find(|e| e["ev"] == "seal_rotated").unwrap();
    assert_eq!(rotation["key_id"], key_id(&k1));
    assert!(!serde_json::to_string(&events).unwrap().contains(&hex(&k1)));
    let (a, b) = (hex(&k0), hex(&k1));
    let both = ["--key", a.as_str(), "--key", b.as_str()];
    let ok = verify(&daemon, &daemon.journal, &both);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert_eq!(python(&daemon.journal, &both).status.code(), Some(0));
    // Only the new key: the old family's first line is named.
    let started = events
        .iter()
        .position(|e| e["ev"] == "seal_started")
        .unwrap() as u64
        + 1;
    let only_new = verify(&daemon, &daemon.journal, &["--key", &b]);
    assert_eq!(
        (only_new.status.code(), named_line(&only_new)),
        (Some(1), started)
    );
    let py = python(&daemon.journal, &["--key", &b]);
    assert_eq!((py.status.code(), named_line(&py)), (Some(1), started));
    // A sealed journal whose key file is gone is refused at start, pointing to `seal-init`
    // (`rotate` needs an old key to replace).
    std::fs::remove_file(
        daemon
            .state_dir
            .join(consentd_store::journal::SEAL_KEY_FILE),
    )
    .unwrap();
    let message = serve_until_it_exits(&daemon);
    assert!(message.contains("journal seal-init"), "{message}");
    let no_old = daemon.cli(&["journal", "rotate", "--config", &config]);
    assert_eq!(no_old.status.code(), Some(1), "{}", stdout(&no_old));
    let k2 = new_key(&daemon, "seal-init", &config);
    // The new family continues after the journal's last epoch: it verifies with all three keys,
    // and the daemon starts again after writing it.
    let daemon = ask_across_a_restart(daemon);
    let c = hex(&k2);
    let all = [
        "--key",
        a.as_str(),
        "--key",
        b.as_str(),
        "--key",
        c.as_str(),
    ];
    let ok = verify(&daemon, &daemon.journal, &all);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert_eq!(python(&daemon.journal, &all).status.code(), Some(0));
    let daemon = daemon.restart();
    let answer = daemon.request(&good_ask("after a new key"));
    assert!(answer["id"].is_string(), "{answer}");
}

#[test]
fn a_kill_inside_seal_init_never_leaves_a_key_in_use_that_nobody_saw() {
    let mut daemon = Daemon::builder().config_tail(EPOCH).start();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let config = daemon.config.to_str().unwrap().to_owned();
    for point in ["seal_key_renamed", "seal_key_dir_synced"] {
        let killed = Command::new(crate::fixture::BIN)
            .args(["journal", "seal-init", "--config", &config])
            .env("CONSENTD_BOT_TOKEN", crate::fixture::TOKEN)
            .env("CONSENTD_TEST_CLOCK_FILE", daemon.dir.path().join("clock"))
            .env("CONSENTD_CRASH_AT", point)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!killed.status.success(), "{point}: {}", stderr(&killed));
        let key_file = daemon
            .state_dir
            .join(consentd_store::journal::SEAL_KEY_FILE);
        if key_file.exists() {
            // The key file the next start seals with is one whose verification key was shown.
            let printed = stdout(&killed)
                .lines()
                .find_map(|l| l.strip_prefix("verification key: "))
                .and_then(parse_key);
            assert!(
                printed.is_some(),
                "{point}: a key file is in use whose verification key nobody saw"
            );
            std::fs::remove_file(&key_file).unwrap();
        }
    }
}

/// `consentd journal <command>` (seal-init or rotate) with the daemon stopped: the key it printed.
fn new_key(daemon: &Daemon, command: &str, config: &str) -> Key {
    let made = daemon.cli(&["journal", command, "--config", config]);
    assert_eq!(made.status.code(), Some(0), "{}", stderr(&made));
    stdout(&made)
        .lines()
        .find_map(|l| l.strip_prefix("verification key: "))
        .and_then(parse_key)
        .unwrap()
}

/// Restarts the stopped daemon, asks across an epoch, and stops it again.
fn ask_across_a_restart(daemon: Daemon) -> Daemon {
    let mut daemon = daemon.restart();
    asks_across(&daemon, 1);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    daemon
}

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_quiet_daemon_still_erases_each_epochs_key_when_the_epoch_ends() {
    // Nothing is written for five epochs (a quiet night): the key of the last line's epoch must
    // not stay on disk for whoever takes the machine later, or they rewrite that epoch's lines.
    let (daemon, _) = sealed_daemon();
    let lines = || daemon.journal_text().lines().count();
    let before = lines();
    let written_in = key_on_disk(&daemon.state_dir).epoch;
    daemon.advance_clock(300);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut now_on_disk = key_on_disk(&daemon.state_dir).epoch;
    while now_on_disk < written_in + 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        now_on_disk = key_on_disk(&daemon.state_dir).epoch;
    }
    assert!(
        now_on_disk >= written_in + 5,
        "five epochs after the last line, the key on disk is still epoch {now_on_disk} (the last line's: {written_in})"
    );
    assert_eq!(lines(), before, "a quiet night writes nothing");
}
