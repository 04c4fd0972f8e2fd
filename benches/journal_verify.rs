//! Journal verification throughput, side by side with `sha256sum` on the same
//! file: verification should be bound by hashing, not by parsing.
//!
//! `cargo bench --bench journal_verify [-- PATH]` writes a 1,000,000-line
//! journal of realistic lines to PATH (default: a temporary directory), then
//! times `sha256sum PATH` and `verify_file` alternately, best of 3 each.
//! Then the same for a sealed journal (15-minute epochs): `sha256sum`,
//! verification with the verification key (`journal verify --key`), and the
//! check `serve` makes at start (the chain and the current epoch's seals);
//! and what sealing adds per decision against the raw fsync rate.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use consentd_core::journal;
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

/// The sealed journal's verification key, and its epochs (15 minutes, from the first line).
const K0: journal::Key = [0x5e; 32];
const EPOCH_MS: i64 = 15 * 60 * 1000;

fn t0() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap()
}

fn epochs() -> journal::Epochs {
    journal::Epochs {
        first: 1,
        from_ms: (t0() + chrono::Duration::milliseconds(250)).timestamp_millis(),
        length_ms: EPOCH_MS,
    }
}

/// Writes the journal; `sealed`: line 1 is `seal_started` and every line is sealed.
fn generate(path: &Path, sealed: bool) -> u64 {
    let t0 = t0();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create journal"));
    let mut prev = journal::GENESIS_PREV.to_string();
    let mut bytes = 0u64;
    let mut key = journal::SealKey::first(&K0, 1);
    for n in 1..=LINES {
        let (ev, members) = if sealed && n == 1 {
            (
                journal::SEAL_STARTED,
                journal::announcement(&journal::key_id(&K0), &epochs()),
            )
        } else {
            event(n)
        };
        let ts = t0 + chrono::Duration::milliseconds(n as i64 * 250);
        let mut line = journal::build_line(n, &prev, ts, ev, &members);
        if sealed {
            while key.epoch < epochs().at(ts.timestamp_millis()) {
                key = key.next();
            }
            key.seal(&mut line);
        }
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

fn time_verify(path: &Path, keys: journal::SealKeys) -> Duration {
    let start = Instant::now();
    let verified = consentd_store::journal::verify_file_sealed(path, None, keys)
        .expect("read journal")
        .expect("journal verifies");
    let took = start.elapsed();
    assert_eq!(verified.head.n, LINES);
    took
}

/// The key the machine would hold at the sealed journal's end.
fn last_key() -> journal::SealKey {
    let end = (t0() + chrono::Duration::milliseconds(LINES as i64 * 250)).timestamp_millis();
    let mut key = journal::SealKey::first(&K0, 1);
    while key.epoch < epochs().at(end) {
        key = key.next();
    }
    key
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; the only other argument is a path.
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = arg.map_or_else(|| tmp.path().join("journal.jsonl"), PathBuf::from);
    plain(&path);
    sealed(&path);
    sealing_cost(tmp.path());
}

fn plain(path: &Path) {
    let start = Instant::now();
    let bytes = generate(path, false);
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
        sha = sha.min(time_sha256sum(path));
        ver = ver.min(time_verify(path, journal::SealKeys::default()));
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

fn sealed(path: &Path) {
    let bytes = generate(path, true);
    let key = last_key();
    println!(
        "sealed: {LINES} lines, {bytes} bytes ({:.0} bytes/line), {} epochs of 15 min",
        bytes as f64 / LINES as f64,
        key.epoch
    );
    let (mut sha, mut with_key, mut at_start) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..RUNS {
        sha = sha.min(time_sha256sum(path));
        with_key = with_key.min(time_verify(path, journal::SealKeys::verification(&[K0])));
        let machine = journal::SealKeys {
            k0s: Vec::new(),
            current: Some((journal::key_id(&K0), key.clone())),
            not_after_ms: None,
        };
        at_start = at_start.min(time_verify(path, machine));
    }
    let sha_mbs = mb_per_s(bytes, sha);
    for (name, d) in [("verify --key", with_key), ("start check", at_start)] {
        println!(
            "{name:<13} {:>8.3} s  {:>8.1} MB/s  ratio to sha256sum {:.2} (sha256sum {:.3} s)",
            d.as_secs_f64(),
            mb_per_s(bytes, d),
            mb_per_s(bytes, d) / sha_mbs,
            sha.as_secs_f64()
        );
    }
}

/// What sealing adds to a decision: the MAC on each line (CPU), and once an epoch the key's
/// change (write, fsync, rename, directory fsync, erase, fsync); against 512-byte appends with an
/// `fdatasync` each on the same disk, the floor of every journaled decision.
fn sealing_cost(dir: &Path) {
    const MACS: u32 = 200_000;
    let (ev, members) = event(1);
    let line = journal::build_line(1, journal::GENESIS_PREV, t0(), ev, &members);
    let key = journal::SealKey::first(&K0, 1);
    let start = Instant::now();
    for _ in 0..MACS {
        let mut l = line.clone();
        key.seal(&mut l);
        std::hint::black_box(&l);
    }
    let seal = start.elapsed() / MACS;
    const CHANGES: i64 = 200;
    let mut file = consentd_store::journal::KeyFile::create(dir, &K0, 1, 0, 60).expect("key file");
    let start = Instant::now();
    for i in 1..=CHANGES {
        file.key_at(i * 60_000).expect("evolve");
    }
    let change = start.elapsed() / CHANGES as u32;
    const SYNCS: u32 = 500;
    let mut raw = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("raw"))
        .expect("raw file");
    let start = Instant::now();
    for _ in 0..SYNCS {
        raw.write_all(&[b'x'; 512]).expect("append");
        raw.sync_data().expect("fdatasync");
    }
    let fsync = start.elapsed() / SYNCS;
    println!(
        "seal per line: {:.2} us (build and seal a line, clone included); raw fsync: {:.3} ms ({:.0}/s); \
         sealing a line = {:.4} of an fsync",
        seal.as_secs_f64() * 1e6,
        fsync.as_secs_f64() * 1e3,
        1.0 / fsync.as_secs_f64(),
        seal.as_secs_f64() / fsync.as_secs_f64()
    );
    println!(
        "epoch change: {:.3} ms = {:.1} raw fsyncs, once per epoch (15 min: 96 a day)",
        change.as_secs_f64() * 1e3,
        change.as_secs_f64() / fsync.as_secs_f64()
    );
}
