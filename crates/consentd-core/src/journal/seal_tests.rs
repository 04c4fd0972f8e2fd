//! Seals against each tampering: every case names the first bad line.

use super::super::{build_line, verify_bytes, verify_bytes_sealed, Anchor, Line, GENESIS_PREV};
use super::*;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::json;

const K0: Key = [7u8; 32];
/// Seconds between lines: three lines an epoch of a minute.
const STEP: i64 = 20;
/// The first sealed line (the `seal_started` line); lines before it are unsealed.
const START: u64 = 4;
const LINES: u64 = 40;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 14, 9, 0, 0).unwrap()
}

fn ts(n: u64) -> DateTime<Utc> {
    t0() + Duration::seconds(STEP * n as i64)
}

fn epochs() -> Epochs {
    Epochs {
        first: 1,
        from_ms: ts(START).timestamp_millis(),
        length_ms: 60_000,
    }
}

/// The key of epoch `e` of `k0`'s family.
fn key_at(k0: &Key, e: u64) -> SealKey {
    let mut k = SealKey::first(k0, 1);
    while k.epoch < e {
        k = k.next();
    }
    k
}

/// Line `n` at `at`, sealed by `seal(n, at)` when that gives a key.
fn line(n: u64, prev: &str, at: DateTime<Utc>, note: &str, k0: &Key) -> Line {
    let members = if n == START {
        announcement(&key_id(k0), &epochs())
    } else {
        vec![("id", json!(format!("r_{n:04}"))), ("note", json!(note))]
    };
    let ev = if n == START { SEAL_STARTED } else { "asked" };
    let mut l = build_line(n, prev, at, ev, &members);
    if n >= START {
        key_at(k0, epochs().at(at.timestamp_millis())).seal(&mut l);
    }
    l
}

fn journal() -> Vec<Line> {
    rebuild(Vec::new(), 1, |n, _| (ts(n), String::new(), None))
}

/// Lines `from..=LINES` rebuilt on `lines[..from-1]`, each as `make(n, old)` says: its time, its
/// note, and the key it is sealed with (`None`: the owner's, by its time).
fn rebuild(
    lines: Vec<Line>,
    from: u64,
    make: impl Fn(u64, Option<&Line>) -> (DateTime<Utc>, String, Option<SealKey>),
) -> Vec<Line> {
    let mut out: Vec<Line> = lines[..(from - 1) as usize].to_vec();
    for n in from..=LINES {
        let prev = out.last().map_or(GENESIS_PREV.to_string(), |l| l.h.clone());
        let (at, note, key) = make(n, lines.get(n as usize - 1));
        let l = match key {
            None => line(n, &prev, at, &note, &K0),
            // The attacker's seal replaces the owner's.
            Some(k) => {
                let mut l = if n == START {
                    build_line(
                        n,
                        &prev,
                        at,
                        SEAL_STARTED,
                        &announcement(&key_id(&K0), &epochs()),
                    )
                } else {
                    build_line(
                        n,
                        &prev,
                        at,
                        "asked",
                        &[("id", json!(format!("r_{n:04}"))), ("note", json!(note))],
                    )
                };
                if n >= START {
                    k.seal(&mut l);
                }
                l
            }
        };
        out.push(l);
    }
    out
}

fn bytes(lines: &[Line]) -> Vec<u8> {
    lines.iter().flat_map(|l| l.text.bytes()).collect()
}

fn verify(b: &[u8]) -> Result<SealReport, Problem> {
    verify_bytes_sealed(b, None, SealKeys::verification(&[K0])).map(|v| v.seals)
}

/// The epoch of line `n`, as the owner sealed it.
fn epoch_of(n: u64) -> u64 {
    epochs().at(ts(n).timestamp_millis())
}

#[test]
fn an_intact_journal_reports_each_range() {
    let j = journal();
    let last = epoch_of(LINES);
    let first_of_last = (START..=LINES).find(|&n| epoch_of(n) == last).unwrap();
    let r = verify(&bytes(&j)).unwrap();
    assert_eq!(r.unsealed, Some((1, START - 1)));
    assert_eq!(r.sealed, Some((START, first_of_last - 1)));
    assert_eq!(r.last_epoch, Some((last, first_of_last, LINES)));
    assert!(r.checked);
    // Without a key the same ranges, unchecked, and a line that says so.
    let plain = verify_bytes(&bytes(&j), None).unwrap().seals;
    assert!(!plain.checked);
    assert!(plain
        .lines()
        .iter()
        .any(|l| l.contains("seals were not checked")));
    // The seal comes after h and leaves it alone.
    let text = &j[9].text;
    let h_at = text.rfind(",\"h\":\"").unwrap();
    assert!(text[h_at..].starts_with(&format!(",\"h\":\"{}\",\"s\":\"{}:", j[9].h, epoch_of(10))));
    let unsealed = text[..h_at].to_string() + "}";
    assert_eq!(
        hex::encode(sha2::Sha256::digest(unsealed.as_bytes())),
        j[9].h
    );
}

use sha2::Digest as _;

#[test]
fn each_tampering_names_the_first_bad_line() {
    let j = journal();
    let mut cases: Vec<(&str, Vec<u8>, Problem)> = Vec::new();
    // One byte changed in an old line.
    let mut b = bytes(&j);
    let at = bytes(&j[..9]).len() + j[9].text.find("r_0010").unwrap() + 5;
    b[at] = b'9';
    cases.push(("byte changed", b, Problem::HashMismatch { line: 10 }));
    // A line removed, inserted, moved.
    let mut removed = j.clone();
    removed.remove(9);
    cases.push((
        "removed",
        bytes(&removed),
        Problem::WrongNumber {
            line: 10,
            found: 11,
        },
    ));
    let mut inserted = j.clone();
    inserted.insert(10, line(11, &j[9].h, ts(10), "forged", &K0));
    cases.push((
        "inserted",
        bytes(&inserted),
        Problem::WrongNumber {
            line: 12,
            found: 11,
        },
    ));
    let mut moved = j.clone();
    let l = moved.remove(9);
    moved.insert(20, l);
    cases.push((
        "moved",
        bytes(&moved),
        Problem::WrongNumber {
            line: 10,
            found: 11,
        },
    ));
    // A seal moved onto another line.
    let mut swapped = j.clone();
    let s10 = &j[9].text[j[9].text.rfind(",\"s\":").unwrap()..];
    let at11 = swapped[10].text.rfind(",\"s\":").unwrap();
    swapped[10].text = swapped[10].text[..at11].to_string() + s10;
    cases.push(("seal moved", bytes(&swapped), Problem::BadSeal { line: 11 }));
    // Seals stripped: from one line on, and every one.
    let strip = |l: &Line| {
        let mut l = l.clone();
        if let Some(at) = l.text.rfind(",\"s\":") {
            l.text = l.text[..at].to_string() + "}\n";
        }
        l
    };
    let mut tail: Vec<Line> = j.clone();
    for l in tail.iter_mut().skip(14) {
        *l = strip(l);
    }
    cases.push((
        "tail stripped",
        bytes(&tail),
        Problem::Unsealed {
            line: 15,
            first: START,
        },
    ));
    let all: Vec<Line> = j.iter().map(strip).collect();
    cases.push((
        "all stripped",
        bytes(&all),
        Problem::Unsealed {
            line: START,
            first: START,
        },
    ));
    // Stripped and the seal_started line gone, the chain recomputed: nothing is sealed.
    let mut gone = Vec::new();
    for (i, l) in j.iter().enumerate().filter(|(i, _)| *i as u64 != START - 1) {
        let n = gone.len() as u64 + 1;
        let prev = gone
            .last()
            .map_or(GENESIS_PREV.to_string(), |l: &Line| l.h.clone());
        let _ = l;
        gone.push(build_line(
            n,
            &prev,
            ts(i as u64 + 1),
            "asked",
            &[("id", json!(format!("r_{n:04}")))],
        ));
    }
    cases.push((
        "all stripped and announced nowhere",
        bytes(&gone),
        Problem::NoSeals { lines: LINES - 1 },
    ));
    // A seal from a later epoch than the line's time.
    let mut early = j.clone();
    let mut l = build_line(
        12,
        &j[10].h,
        ts(12),
        "asked",
        &[("id", json!("r_0012")), ("note", json!(""))],
    );
    key_at(&K0, epoch_of(12) + 1).seal(&mut l);
    early[11] = l;
    let rest = rebuild(early, 13, |n, _| (ts(n), String::new(), None));
    cases.push((
        "seal from the wrong epoch",
        bytes(&rest),
        Problem::WrongEpoch {
            line: 12,
            found: epoch_of(12) + 1,
            expected: epoch_of(12),
        },
    ));
    // Another family's key.
    let mut other: Vec<Line> = Vec::new();
    for n in 1..=LINES {
        let prev = other
            .last()
            .map_or(GENESIS_PREV.to_string(), |l| l.h.clone());
        other.push(line(n, &prev, ts(n), "", &[9u8; 32]));
    }
    cases.push((
        "another family's key",
        bytes(&other),
        Problem::UnknownKey {
            line: START,
            key_id: key_id(&[9u8; 32]),
        },
    ));
    for (what, b, want) in cases {
        assert_eq!(verify(&b).unwrap_err(), want, "{what}");
    }
}

#[test]
fn a_chain_recomputed_with_the_current_key_is_caught_in_every_earlier_epoch() {
    let j = journal();
    let last = epoch_of(LINES);
    let attacker = key_at(&K0, last);
    // For each line of an earlier epoch (and the unsealed ones before seals began): alter it
    // and recompute the chain to the end, sealing with the attacker's key under each line's
    // own epoch number, or relabelling every line with the attacker's epoch.
    for target in 1..=LINES {
        let e = if target < START { 1 } else { epoch_of(target) };
        if target >= START && e == last {
            continue;
        }
        let keep_labels = rebuild(j.clone(), target, |n, _| {
            let note = if n == target { "altered" } else { "" };
            let label = SealKey {
                epoch: epoch_of(n),
                key: attacker.key,
            };
            (ts(n), note.to_string(), Some(label))
        });
        let first_bad = target.max(START);
        assert_eq!(
            verify(&bytes(&keep_labels)).unwrap_err(),
            Problem::BadSeal { line: first_bad },
            "line {target} altered, seals kept their epochs"
        );
        let relabelled = rebuild(j.clone(), target, |n, _| {
            let note = if n == target { "altered" } else { "" };
            (ts(n), note.to_string(), Some(attacker.clone()))
        });
        assert_eq!(
            verify(&bytes(&relabelled)).unwrap_err(),
            Problem::WrongEpoch {
                line: first_bad,
                found: last,
                expected: epoch_of(first_bad)
            },
            "line {target} altered, seals relabelled with the attacker's epoch"
        );
    }
    // Lines of the attacker's own epoch can be rewritten: the report says so.
    let first_of_last = (START..=LINES).find(|&n| epoch_of(n) == last).unwrap();
    let own = rebuild(j.clone(), first_of_last, |n, _| {
        (ts(n), "rewritten".into(), Some(attacker.clone()))
    });
    let r = verify(&bytes(&own)).unwrap();
    assert_eq!(r.last_epoch, Some((last, first_of_last, LINES)));
    assert!(r
        .lines()
        .iter()
        .any(|l| l.contains("could have written them")));
}

#[test]
fn a_cut_tail_is_caught_by_the_anchor_and_a_full_anchor_by_its_hash() {
    let j = journal();
    let a: Anchor = format!("{LINES}:{}", j[LINES as usize - 1].h)
        .parse()
        .unwrap();
    let cut = bytes(&j[..30]);
    assert!(verify(&cut).is_ok());
    assert_eq!(
        verify_bytes_sealed(&cut, Some(&a), SealKeys::verification(&[K0])).unwrap_err(),
        Problem::AnchorBeyondEnd {
            anchor: LINES,
            lines: 30
        }
    );
}

#[test]
fn only_the_seal_may_follow_h() {
    let j = journal();
    let cases = [
        (",\"s\":\"", ",\"x\":\""),
        (",\"s\":\"", ",\"s\":\"0"),
        ("\"}\n", "\",\"t\":1}\n"),
    ];
    for (from, to) in cases {
        let mut m = j.clone();
        let t = &m[9].text;
        let at = t.rfind(from).unwrap();
        m[9].text = format!("{}{}{}", &t[..at], to, &t[at + from.len()..]);
        match verify(&bytes(&m)) {
            Err(Problem::Malformed { line: 10, .. }) => {}
            other => panic!("{from} -> {to}: {other:?}"),
        }
    }
}

#[test]
fn the_machine_checks_its_current_epoch_only() {
    let j = journal();
    let last = epoch_of(LINES);
    let keys = SealKeys {
        k0s: Vec::new(),
        current: Some((key_id(&K0), key_at(&K0, last))),
        not_after_ms: None,
    };
    let r = verify_bytes_sealed(&bytes(&j), None, keys.clone())
        .unwrap()
        .seals;
    let in_last = (START..=LINES).filter(|&n| epoch_of(n) == last).count() as u64;
    assert_eq!(r.current_checked, in_last);
    let mut m = j.clone();
    let at = m[LINES as usize - 1].text.rfind(":").unwrap() + 1;
    let flipped = if &m[LINES as usize - 1].text[at..at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    m[LINES as usize - 1]
        .text
        .replace_range(at..at + 1, flipped);
    assert_eq!(
        verify_bytes_sealed(&bytes(&m), None, keys).unwrap_err(),
        Problem::BadSeal { line: LINES }
    );
    // A key on disk older than the journal's last seal: the key was rolled back.
    let old = SealKeys {
        k0s: Vec::new(),
        current: Some((key_id(&K0), key_at(&K0, last - 1))),
        not_after_ms: None,
    };
    assert!(matches!(
        verify_bytes_sealed(&bytes(&j), None, old).unwrap_err(),
        Problem::WrongEpoch { .. }
    ));
}

#[test]
fn keys_evolve_one_way_and_times_parse() {
    let k1 = SealKey::first(&K0, 1);
    assert_eq!(k1.key, evolve(&K0));
    assert_eq!(k1.next().key, evolve(&k1.key));
    assert_ne!(key_id(&K0), key_id(&k1.key));
    assert!(!format!("{k1:?}").contains(&hex::encode(k1.key)));
    for at in [
        t0(),
        ts(7) + Duration::milliseconds(123),
        Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap(),
    ] {
        let text = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        assert_eq!(
            ts_millis(text.as_bytes()),
            Some(at.timestamp_millis()),
            "{text}"
        );
    }
    for bad in [
        "2025-13-01T00:00:00.000Z",
        "2025-03-14 09:00:00.000Z",
        "2025-03-14T09:00:00.000+",
    ] {
        assert_eq!(ts_millis(bad.as_bytes()), None, "{bad}");
    }
    assert_eq!(parse_key(&hex::encode(K0)), Some(K0));
    assert_eq!(parse_key("abc"), None);
}

#[test]
fn an_announcement_with_an_epoch_length_past_i64_ms_is_named_not_a_panic() {
    // Appended by whoever holds the machine: a family whose epoch length in ms overflows.
    let lines = journal();
    let n = LINES + 1;
    let at = ts(n);
    let first = epochs().at(at.timestamp_millis()) + 1;
    let mut l = build_line(
        n,
        &lines.last().unwrap().h,
        at,
        SEAL_ROTATED,
        &[
            ("key_id", json!("0000000000000000")),
            ("epoch", json!(first)),
            ("epoch_secs", json!(i64::MAX)),
            ("from_ms", json!(0)),
        ],
    );
    SealKey {
        epoch: first,
        key: [0; 32],
    }
    .seal(&mut l);
    let mut all = lines;
    all.push(l);
    let b = bytes(&all);
    for result in [
        verify_bytes(&b, None).map(|v| v.seals),
        verify(&b),
        verify_bytes_sealed(&b, None, SealKeys::default()).map(|v| v.seals),
    ] {
        assert!(
            matches!(result, Err(Problem::Malformed { line, .. }) if line == n),
            "{result:?}"
        );
    }
}

#[test]
fn a_line_dated_centuries_ahead_is_named_without_evolving_the_key_there() {
    // Whoever holds the machine appends one line dated in 9999 with any seal: with one-minute
    // epochs its epoch is four billion epochs away, and evolving the key that far before the MAC
    // can be compared takes hours (in Python, days). The owner's verify must name it promptly.
    let lines = journal();
    let n = LINES + 1;
    let at = Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap();
    let mut l = build_line(
        n,
        &lines.last().unwrap().h,
        at,
        "asked",
        &[("id", json!("x"))],
    );
    SealKey {
        epoch: epochs().at(at.timestamp_millis()),
        key: [0; 32],
    }
    .seal(&mut l);
    let mut all = lines;
    all.push(l);
    let b = bytes(&all);
    let (tx, rx) = std::sync::mpsc::channel();
    // A thread, so a failure is a timeout, not a hung run (it dies with the test binary).
    std::thread::spawn(move || {
        // As `journal verify` runs it: with the verifier's clock (here a day after the journal).
        let keys = SealKeys::verification(&[K0]).dated_up_to(ts(LINES + 4320).timestamp_millis());
        let _ = tx.send(
            verify_bytes_sealed(&b, None, keys)
                .map(|_| ())
                .map_err(|p| p.line()),
        );
    });
    let named = rx.recv_timeout(std::time::Duration::from_secs(10));
    assert_eq!(
        named,
        Ok(Err(n)),
        "verify did not name line {n} within 10 s"
    );
}
