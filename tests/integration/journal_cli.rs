//! `consentd journal verify` and `journal head` on journals written by the library.

use chrono::{TimeZone, Utc};
use consentd_core::journal::{build_line, GENESIS_PREV};
use serde_json::json;

use crate::fixture::{consentd, stdout};

fn write_journal(path: &std::path::Path, lines: u64) -> Vec<String> {
    let mut prev = GENESIS_PREV.to_owned();
    let mut texts = Vec::new();
    let ts = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
    for n in 1..=lines {
        let line = build_line(
            n,
            &prev,
            ts,
            "asked",
            &[("id", json!(format!("r_{n:020}")))],
        );
        prev = line.h.clone();
        texts.push(line.text);
    }
    std::fs::write(path, texts.concat()).unwrap();
    texts
}

#[test]
fn verify_and_head_report_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    write_journal(&path, 20);
    let file = path.to_str().unwrap();
    let head = consentd(&["journal", "head", file]);
    assert_eq!(head.status.code(), Some(0));
    let anchor = stdout(&head).trim().to_owned();
    assert!(anchor.starts_with("20:") && anchor.len() == 15, "{anchor}");

    let whole = consentd(&["journal", "verify", file]);
    assert_eq!(whole.status.code(), Some(0));
    assert_eq!(
        stdout(&whole).trim(),
        format!("ok {anchor}\nseals were not checked: give the verification key with --key")
    );

    let anchored = consentd(&["journal", "verify", file, "--anchor", &anchor]);
    assert_eq!(anchored.status.code(), Some(0));

    let early = format!(
        "10:{}",
        &stdout(&consentd(&["journal", "head", file])).trim()[3..]
    );
    let mismatch = consentd(&["journal", "verify", file, "--anchor", &early]);
    assert_eq!(mismatch.status.code(), Some(1), "{}", stdout(&mismatch));
}

#[test]
fn verify_names_the_first_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let mut lines = write_journal(&path, 10);
    lines[6] = lines[6].replacen("r_", "r-", 1);
    std::fs::write(&path, lines.concat()).unwrap();
    let output = consentd(&["journal", "verify", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).starts_with("line 7:"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_cut_tail_is_caught_by_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let lines = write_journal(&path, 10);
    let file = path.to_str().unwrap();
    let anchor = stdout(&consentd(&["journal", "head", file]))
        .trim()
        .to_owned();
    std::fs::write(&path, lines[..7].concat()).unwrap();
    assert_eq!(
        consentd(&["journal", "verify", file]).status.code(),
        Some(0)
    );
    let output = consentd(&["journal", "verify", file, "--anchor", &anchor]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("cut tail"), "{}", stdout(&output));
}

#[test]
fn a_bad_anchor_is_a_usage_error_and_a_missing_file_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    write_journal(&path, 3);
    let output = consentd(&[
        "journal",
        "verify",
        path.to_str().unwrap(),
        "--anchor",
        "3:abc",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let missing = consentd(&["journal", "verify", "/nonexistent/j.jsonl"]);
    assert_eq!(missing.status.code(), Some(1));
}

/// A line is `{"n":N,"prev":…,"ts":"<RFC 3339 UTC>","ev":"<event>",…,"h":…}` in compact JSON
/// (docs/CONTRACT-NOTES.md, "Journal"): a line whose hash was made to match but that is not one is
/// not a whole journal.
/// Each case is line 2 of three, the chain around it intact; verify names line 2.
#[test]
fn verify_names_a_line_that_is_not_a_journal_line_even_when_its_hash_matches() {
    use sha2::{Digest as _, Sha256};
    let cases = [
        ("not JSON", r#""2026-11-29T12:00:00.000Z","ev":"asked"}}{{"#),
        ("ts not RFC 3339", r#""yesterday","ev":"asked""#),
        ("no ev", r#""2026-11-29T12:00:00.000Z""#),
        (
            "ev twice",
            r#""2026-11-29T12:00:00.000Z","ev":"asked","ev":"used""#,
        ),
        (
            "not compact",
            r#""2026-11-29T12:00:00.000Z", "ev": "asked""#,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, after_ts) in cases {
        let path = dir.path().join("j.jsonl");
        let lines = write_journal(&path, 1);
        let prev1 = &lines[0][lines[0].len() - 67..lines[0].len() - 3];
        let hashed = format!("{{\"n\":2,\"prev\":\"{prev1}\",\"ts\":{after_ts}");
        let h2 = hex::encode(Sha256::digest(format!("{hashed}}}").as_bytes()));
        let line2 = format!("{hashed},\"h\":\"{h2}\"}}\n");
        let line3 = build_line(
            3,
            &h2,
            Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap(),
            "asked",
            &[("id", json!("r_00000000000000000003"))],
        );
        std::fs::write(&path, format!("{}{line2}{}", lines[0], line3.text)).unwrap();
        let output = consentd(&["journal", "verify", path.to_str().unwrap()]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{what}: verify said the journal is whole: {}",
            stdout(&output)
        );
        assert!(
            stdout(&output).starts_with("line 2:"),
            "{what}: {}",
            stdout(&output)
        );
    }
}

/// `journal verify`, and `journal head` (whose anchor an operator keeps to verify against later),
/// on a path the daemon would refuse to open as its journal (it follows no symlink to it, and
/// reads only a regular file) must say so: not answer for whatever a symlink points at, nor wait
/// forever on a FIFO. Each case is the journal's path replaced, the chain behind a symlink intact.
#[test]
fn verify_and_head_name_a_journal_that_is_a_symlink_or_not_a_regular_file() {
    type Plant = fn(&std::path::Path);
    let cases: &[(&str, Plant, &str)] = &[
        (
            "a symlink to a whole journal",
            |path| {
                let real = path.with_extension("real");
                write_journal(&real, 5);
                std::os::unix::fs::symlink(&real, path).unwrap();
            },
            "symlink",
        ),
        (
            "a FIFO",
            |path| {
                nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o640)).unwrap()
            },
            "regular file",
        ),
    ];
    for subcommand in ["verify", "head"] {
        for (name, plant, said) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("decisions.jsonl");
            plant(&path);
            let mut command = std::process::Command::new(crate::fixture::BIN);
            command.args(["journal", subcommand]).arg(&path);
            let name = format!("journal {subcommand} on {name}");
            let output = crate::fixture::output_within_ten_seconds(command, &name);
            let text = format!("{}{}", stdout(&output), crate::fixture::stderr(&output));
            assert_eq!(output.status.code(), Some(1), "{name}: {text}");
            assert!(text.contains(said), "{name}: does not say {said:?}: {text}");
        }
    }
}
