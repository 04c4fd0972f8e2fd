//! Fuzz target: journal verification, on arbitrary bytes and on valid journals with mutations.
//!
//! The first byte picks the mode. Even: the rest is a journal file as found on disk (optionally
//! preceded by an anchor line), and the in-memory verifier, the file verifier, `head` and the
//! torn-tail repair must agree with each other and never panic. Odd: the rest describes a valid
//! journal built with `journal::build_line` and one change to it (a flipped byte, a cut, a
//! deleted, swapped or repeated line, an edit, a rewritten chain), and verification must report
//! exactly the problem that change makes, at exactly its line.

#![no_main]

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

use chrono::DateTime;
use consentd_core::journal::{self, Anchor, Head, Line, Problem};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// One scratch file per fuzzing process, written and removed by every input.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!(
            "consentd-fuzz-journal-{}.jsonl",
            std::process::id()
        ))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        on_disk(mode & 2 != 0, rest);
    } else {
        let _ = mutated(&mut Unstructured::new(rest));
    }
});

/// Arbitrary bytes: with `anchored`, the first line is the anchor's text and the rest the file.
fn on_disk(anchored: bool, bytes: &[u8]) {
    let (anchor, bytes) = match (anchored, bytes.iter().position(|&b| b == b'\n')) {
        (true, Some(i)) => {
            let Ok(text) = std::str::from_utf8(&bytes[..i]) else {
                return;
            };
            let Ok(anchor) = Anchor::from_str(text) else {
                return;
            };
            // An anchor prints and parses back to itself.
            assert_eq!(Anchor::from_str(&format!("{anchor:#}")), Ok(anchor.clone()));
            (Some(anchor), &bytes[i + 1..])
        }
        (true, None) => return,
        (false, _) => (None, bytes),
    };
    let plain = journal::verify_bytes(bytes, None);
    let verdict = journal::verify_bytes(bytes, anchor.as_ref());
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    match &plain {
        Ok(v) => {
            assert_eq!(v.head.n, newlines);
            assert!(bytes.is_empty() || bytes.ends_with(b"\n"));
            assert_eq!(v.unanchored_after, v.head.n);
            let _ = v.summary();
            // The head as an anchor vouches for the very file it came from.
            let own = v.head.anchor();
            let with_own = journal::verify_bytes(bytes, Some(&own)).expect("its own anchor");
            assert_eq!(
                (with_own.anchored, with_own.unanchored_after),
                (Some(v.head.n), 0)
            );
        }
        Err(p) => {
            assert!(
                p.line() >= 1 && p.line() <= newlines + 1,
                "{p:?} with {newlines} lines"
            );
            assert!(!p.to_string().is_empty());
            // An anchor only adds checks.
            assert!(
                verdict.is_err(),
                "anchored verify passed what plain verify refused"
            );
        }
    }
    if let (Ok(v), Some(a)) = (&verdict, &anchor) {
        assert_eq!(v.anchored, Some(a.n));
        assert_eq!(v.unanchored_after, v.head.n - a.n);
        assert_eq!(Ok(&v.head), plain.as_ref().map(|p| &p.head));
    }

    let path = scratch();
    std::fs::write(path, bytes).expect("write the scratch journal");
    let from_file = consentd_store::journal::verify_file(path, anchor.as_ref()).expect("read the scratch journal");
    assert_eq!(
        from_file, verdict,
        "the file and in-memory verifiers disagree"
    );
    let head = consentd_store::journal::head(path).expect("read the scratch journal");
    match (&plain, &head) {
        (Ok(v), _) => assert_eq!(head, Ok(v.head.clone())),
        // `head` reports a problem only after verifying the whole file.
        (Err(p), Err(q)) => assert_eq!(p, q),
        (Err(_), Ok(_)) => {}
    }
    let cut = consentd_store::journal::repair_torn_tail(path).expect("repair the scratch journal");
    let kept = bytes.len() - cut as usize;
    assert!(kept == 0 || bytes[kept - 1] == b'\n');
    assert!(!bytes[kept..].contains(&b'\n'));
    assert_eq!(
        std::fs::read(path).expect("read back").as_slice(),
        &bytes[..kept]
    );
    if let Err(Problem::Torn { line }) = plain {
        // A torn tail is the only fault: cutting it leaves a journal that verifies.
        let v = journal::verify_bytes(&bytes[..kept], None).expect("verifies once cut");
        assert_eq!(v.head.n, line - 1);
    }
    // Left behind only by a failed input, which is then worth looking at.
    let _ = std::fs::remove_file(path);
}

/// Builds a chain from `ev`s and members drawn from `u`, starting after `head`.
fn build(u: &mut Unstructured, count: usize, head: &Head, salt: &str) -> Result<Vec<Line>> {
    let mut lines = Vec::with_capacity(count);
    let (mut n, mut prev) = (head.n, head.h.clone());
    for _ in 0..count {
        n += 1;
        let secs = u.int_in_range(0..=4_102_444_800i64)?;
        let ts = DateTime::from_timestamp(secs, u.int_in_range(0..=999_999_999)?)
            .expect("in chrono's range");
        // An event's name is lowercase letters and `_` (what verify takes for one).
        let name: String = u
            .arbitrary::<&str>()?
            .chars()
            .filter(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        let ev = format!("e{name}{salt}");
        let mut members: Vec<(String, Value)> = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let mut key = u.arbitrary::<String>()?;
            // The line's own keys are not members (a programming error build_line asserts).
            if matches!(key.as_str(), "n" | "prev" | "ts" | "ev" | "h" | "s") {
                key.push('_');
            }
            // A key appears once in a line.
            if members.iter().any(|(seen, _)| *seen == key) {
                continue;
            }
            let value = match u.int_in_range(0..=3)? {
                0 => Value::from(u.arbitrary::<String>()?),
                1 => Value::from(u.arbitrary::<i64>()?),
                2 => Value::from(u.arbitrary::<bool>()?),
                _ => Value::Null,
            };
            members.push((key, value));
        }
        let members: Vec<(&str, Value)> = members
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let line = journal::build_line(n, &prev, ts, &ev, &members);
        prev = line.h.clone();
        lines.push(line);
    }
    Ok(lines)
}

fn join(lines: &[Line]) -> Vec<u8> {
    lines.iter().flat_map(|l| l.text.bytes()).collect()
}

fn anchor_at(line: &Line, digits: usize) -> Anchor {
    Anchor::from_str(&format!("{}:{}", line.n, &line.h[..digits])).expect("a valid anchor")
}

/// A valid journal and one change to it, with the exact verdict the change must get.
fn mutated(u: &mut Unstructured) -> Result<()> {
    let count = u.int_in_range(1..=6)?;
    let mut lines = build(u, count, &Head::genesis(), "")?;
    let bytes = join(&lines);
    let last = lines.last().expect("at least one line");
    let head = Head {
        n: last.n,
        h: last.h.clone(),
    };
    let v = journal::verify_bytes(&bytes, None).expect("a built journal verifies");
    assert_eq!(v.head, head);
    let at = u.choose_index(count)?;
    let anchor = anchor_at(&lines[at], u.int_in_range(12..=64)?);
    let v = journal::verify_bytes(&bytes, Some(&anchor)).expect("and verifies at its anchors");
    assert_eq!(v.unanchored_after, (count - 1 - at) as u64);

    let line_no = |i: usize| i as u64 + 1;
    match u.int_in_range(0..=6)? {
        0 => {
            // Any change of one byte shows.
            let pos = u.choose_index(bytes.len())?;
            let mut changed = bytes.clone();
            changed[pos] ^= u.int_in_range(1..=255)?;
            assert!(
                journal::verify_bytes(&changed, None).is_err(),
                "byte {pos} changed unseen"
            );
        }
        1 => {
            // A cut inside a line is a torn tail; a cut at a line's end is invisible without
            // an anchor past it.
            let pos = u.choose_index(bytes.len())?;
            let complete = bytes[..pos].iter().filter(|&&b| b == b'\n').count() as u64;
            let verdict = journal::verify_bytes(&bytes[..pos], None);
            if pos == 0 || bytes[pos - 1] == b'\n' {
                assert_eq!(verdict.map(|v| v.head.n), Ok(complete));
            } else {
                assert_eq!(verdict, Err(Problem::Torn { line: complete + 1 }));
            }
            let beyond = anchor_at(lines.last().expect("a line"), 12);
            assert_eq!(
                journal::verify_bytes(&bytes[..pos], Some(&beyond)),
                Err(Problem::AnchorBeyondEnd {
                    anchor: head.n,
                    lines: complete
                })
            );
        }
        2 => {
            // A deleted line breaks the numbering, unless it was the last.
            lines.remove(at);
            let verdict = journal::verify_bytes(&join(&lines), None);
            if at == count - 1 {
                assert_eq!(verdict.map(|v| v.head.n), Ok(head.n - 1));
            } else {
                assert_eq!(
                    verdict,
                    Err(Problem::WrongNumber {
                        line: line_no(at),
                        found: line_no(at + 1)
                    })
                );
            }
        }
        3 => {
            let other = u.choose_index(count)?;
            if other == at {
                return Ok(());
            }
            let (i, j) = (at.min(other), at.max(other));
            lines.swap(i, j);
            assert_eq!(
                journal::verify_bytes(&join(&lines), None),
                Err(Problem::WrongNumber {
                    line: line_no(i),
                    found: line_no(j)
                })
            );
        }
        4 => {
            lines.insert(at + 1, lines[at].clone());
            assert_eq!(
                journal::verify_bytes(&join(&lines), None),
                Err(Problem::WrongNumber {
                    line: line_no(at + 1),
                    found: line_no(at)
                })
            );
        }
        5 => {
            // An edit that keeps the shape but not the hash.
            let text = &mut lines[at].text;
            let ev_at = text.find("\"ev\":\"").expect("every line has ev") + 6;
            text.insert(ev_at, 'x');
            assert_eq!(
                journal::verify_bytes(&join(&lines), None),
                Err(Problem::HashMismatch { line: line_no(at) })
            );
        }
        _ => {
            // A forger who rewrites the chain from a line on passes every check but an anchor
            // taken before the rewrite, at or after the first rewritten line.
            let from = if at == 0 {
                Head::genesis()
            } else {
                Head {
                    n: lines[at - 1].n,
                    h: lines[at - 1].h.clone(),
                }
            };
            let forged = build(u, count - at, &from, "_forged")?;
            let original = lines.clone();
            lines.truncate(at);
            lines.extend(forged);
            let bytes = join(&lines);
            assert!(journal::verify_bytes(&bytes, None).is_ok());
            let last_kept = u.int_in_range(at..=count - 1)?;
            if lines[last_kept].h[..12] == original[last_kept].h[..12] {
                // The "forger" wrote the very same line back (the inputs can spell that), or
                // found a 48-bit collision: either way there is nothing for an anchor to see.
                return Ok(());
            }
            let witness = anchor_at(&original[last_kept], 12);
            assert_eq!(
                journal::verify_bytes(&bytes, Some(&witness)),
                Err(Problem::AnchorMismatch {
                    anchor: line_no(last_kept)
                })
            );
            if at > 0 {
                let before = anchor_at(&original[at - 1], 64);
                assert!(journal::verify_bytes(&bytes, Some(&before)).is_ok());
            }
        }
    }
    Ok(())
}
