//! Journal verification throughput, side by side with `sha256sum` on the same
//! file: verification should be bound by hashing, not by parsing.
//!
//! `cargo bench --bench journal_verify [-- PATH]` writes a 1,000,000-line
//! journal of realistic lines to PATH (default: a temporary directory), then
//! times `sha256sum PATH` and `verify_file` alternately, best of 3 each.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use consentd::journal;
use serde_json::{json, Value};

const LINES: u64 = 1_000_000;
const RUNS: usize = 3;

/// The event of line `n`: the mix consentd writes, with the members its store gives each event.
fn event(n: u64) -> (&'static str, Vec<(&'static str, Value)>) {
    let id = format!("r_{:020x}", n.div_ceil(4).wrapping_mul(0x9e37_79b9));
    let kinds = ["publish_x", "send_mail", "generate_image", "post_telegram"];
    let kind = kinds[(n as usize / 4) % kinds.len()];
    // A stand-in for the digest of an action, whose text itself is never journaled.
    let digest = format!("{:016x}", n.div_ceil(4).wrapping_mul(0x9e37_79b9_7f4a_7c15)).repeat(4);
    match n % 4 {
        1 => (
            "asked",
            vec![
                ("id", json!(id)),
                ("kind", json!(kind)),
                ("digest", json!(digest)),
                ("uid", json!(1000)),
                ("cost_usd", json!("0.04")),
            ],
        ),
        2 if n.is_multiple_of(3) => (
            "denied",
            vec![
                ("id", json!(id)),
                ("kind", json!(kind)),
                ("reason", json!("invisible_character")),
            ],
        ),
        2 => (
            "granted",
            vec![
                ("id", json!(id)),
                ("kind", json!(kind)),
                ("digest", json!(digest)),
                ("by", json!(123_456_789)),
            ],
        ),
        3 => ("used", vec![("id", json!(id)), ("digest", json!(digest))]),
        _ => ("executed", vec![("id", json!(id)), ("exit", json!(0))]),
    }
}

fn generate(path: &Path) -> u64 {
    let t0 = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create journal"));
    let mut prev = journal::GENESIS_PREV.to_string();
    let mut bytes = 0u64;
    for n in 1..=LINES {
        let (ev, members) = event(n);
        let ts = t0 + chrono::Duration::milliseconds(n as i64 * 250);
        let line = journal::build_line(n, &prev, ts, ev, &members);
        out.write_all(line.text.as_bytes()).expect("write journal");
        bytes += line.text.len() as u64;
        prev = line.h;
    }
    out.into_inner()
        .expect("flush journal")
        .sync_all()
        .expect("sync journal");
    bytes
}

fn time_sha256sum(path: &Path) -> Duration {
    let start = Instant::now();
    let status = Command::new("sha256sum")
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("run sha256sum");
    let took = start.elapsed();
    assert!(status.success(), "sha256sum failed");
    took
}

fn time_verify(path: &Path) -> Duration {
    let start = Instant::now();
    let verified = journal::verify_file(path, None)
        .expect("read journal")
        .expect("journal verifies");
    let took = start.elapsed();
    assert_eq!(verified.head.n, LINES);
    took
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; the only other argument is a path.
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = arg.map_or_else(|| tmp.path().join("journal.jsonl"), PathBuf::from);

    let start = Instant::now();
    let bytes = generate(&path);
    println!(
        "generated {} lines, {} bytes ({:.0} bytes/line) at {} in {:.1} s",
        LINES,
        bytes,
        bytes as f64 / LINES as f64,
        path.display(),
        start.elapsed().as_secs_f64()
    );

    // Alternate the two so both see the same page cache and machine load.
    let (mut sha, mut ver) = (Duration::MAX, Duration::MAX);
    for _ in 0..RUNS {
        sha = sha.min(time_sha256sum(&path));
        ver = ver.min(time_verify(&path));
    }
    let (sha_mbs, ver_mbs) = (mb_per_s(bytes, sha), mb_per_s(bytes, ver));
    println!("bytes:        {bytes}");
    println!(
        "sha256sum:    {:>8.3} s  {:>8.1} MB/s  (best of {RUNS})",
        sha.as_secs_f64(),
        sha_mbs
    );
    println!(
        "verify_file:  {:>8.3} s  {:>8.1} MB/s  (best of {RUNS})",
        ver.as_secs_f64(),
        ver_mbs
    );
    println!(
        "ratio verify_file/sha256sum: {:.2} (target >= 0.33)",
        ver_mbs / sha_mbs
    );
}
