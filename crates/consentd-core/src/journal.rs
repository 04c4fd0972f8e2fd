//! The consent journal's line format: an append-only, hash-chained JSON Lines
//! text, and its verification over bytes.
//!
//! This module owns everything that depends on a line's exact bytes: building
//! a line, checking that lines continue a chain, and verifying a journal held
//! in memory or streamed from any reader, optionally against an anchor
//! (`N:HEX`) recorded elsewhere. The file itself (appending durably, finding
//! the head from the tail, cutting a torn tail) is the daemon's
//! (`consentd::journal`). It does not decide which events are written; callers
//! pass each event's members, and must never pass the text of an action (the
//! journal holds ids, kinds, digests and reasons).
//!
//! Line format (one line, compact JSON, UTF-8, ending in `\n`):
//!
//! ```text
//! {"n":N,"prev":"<64 hex>","ts":"<RFC 3339 UTC, ms, Z>","ev":"<event>",<members…>,"h":"<64 hex>"}
//! ```
//!
//! `n` counts from 1; `prev` is the previous line's `h` (64 zeros on line 1);
//! `h` is the lowercase hex SHA-256 of the line with its `,"h":"…"` member
//! removed, i.e. of everything before the last `,"h":"` followed by `}`.
//!
//! A sealed line carries one more member after `h`, `"s":"<epoch>:<64 hex>"`, which `h` does not
//! cover and nothing else may follow; the seal and its keys are [`seal`]'s (`journal/seal.rs`,
//! docs/adr/0004-journal-seals.md).
//!
//! Verification never parses JSON: every line is checked at fixed offsets
//! (`{"n":` digits `,"prev":"` hex `","ts":"` … `,"h":"` hex `"}`) and hashed
//! in place, so it runs at close to the speed of SHA-256 itself. Whatever lies
//! between the fixed parts is covered by `h`; only someone who recomputes the
//! chain can change it, and that is what anchors are for.

use std::fmt;
use std::io::{self, Read};
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use sha2::{Digest, Sha256};

mod members;
mod seal;
pub use seal::{
    announcement, evolve, key_id, parse_key, ts_millis, Epochs, Key, SealKey, SealKeys, SealReport,
    SEAL_ROTATED, SEAL_STARTED,
};

/// `prev` of line 1.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Hex digits in `prev` and `h`.
const HEX_LEN: usize = 64;
/// Hex digits in a printed anchor, and the fewest accepted on input.
const ANCHOR_HEX_MIN: usize = 12;

const LINE_START: &[u8] = b"{\"n\":";
const PREV_KEY: &[u8] = b",\"prev\":\"";
/// Closes `prev` and opens `ts`, which always follows it.
const TS_KEY: &[u8] = b"\",\"ts\":\"";
const H_KEY: &[u8] = b",\"h\":\"";
const LINE_END: &[u8] = b"\"}";
/// `,"h":"` + 64 hex + `"}`: the unhashed end of an unsealed line (before `\n`).
/// Since hex never contains `,"h":"`, the last `,"h":"` of a well-shaped line
/// always starts exactly this many bytes before its end, or before its seal.
const H_MEMBER_LEN: usize = H_KEY.len() + HEX_LEN + LINE_END.len();
/// Largest number of decimal digits of a u64.
const MAX_N_DIGITS: usize = 20;

/// Read size for verification: large enough that syscalls are noise, small
/// enough that the buffer stays in L2 while its lines are hashed.
const READ_CHUNK: usize = 256 * 1024;

/// A fully built line: its number, its hash (hex) and its exact bytes
/// including the trailing `'\n'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub n: u64,
    pub h: String,
    pub text: String,
}

/// Build line `n` after `prev` (hex). `members` are the event's own members
/// in order, values any JSON.
///
/// `n` must be at least 1, member names must not repeat the line's own keys
/// (`n`, `prev`, `ts`, `ev`, `h`, the seal's `s`) nor each other, `ev` must be lowercase
/// letters and `_`, and `prev` must be 64 lowercase hex; these
/// are programming errors, checked in debug builds. A line built on a wrong `prev` or `n` is refused
/// by [`check_continues`], which the daemon runs before appending.
pub fn build_line(
    n: u64,
    prev: &str,
    ts: DateTime<Utc>,
    ev: &str,
    members: &[(&str, serde_json::Value)],
) -> Line {
    debug_assert!(n >= 1, "lines are numbered from 1");
    debug_assert!(
        prev.len() == HEX_LEN && is_lower_hex(prev.as_bytes()),
        "prev must be 64 lowercase hex digits"
    );
    debug_assert!(
        members
            .iter()
            .all(|(k, _)| !matches!(*k, "n" | "prev" | "ts" | "ev" | "h" | "s")),
        "event members must not reuse the line's own keys"
    );
    debug_assert!(
        members
            .iter()
            .enumerate()
            .all(|(i, (k, _))| members[..i].iter().all(|(seen, _)| seen != k)),
        "an event's members hold each key once"
    );
    debug_assert!(
        !ev.is_empty() && ev.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "an event's name is lowercase letters and _"
    );
    use std::fmt::Write as _;
    let mut text = String::with_capacity(256);
    // Writing to a String cannot fail, so the fmt::Results are ignored.
    let _ = write!(text, "{{\"n\":{n},\"prev\":\"{prev}\",\"ts\":\"");
    text.push_str(&ts.to_rfc3339_opts(SecondsFormat::Millis, true));
    text.push_str("\",\"ev\":");
    push_json_str(&mut text, ev);
    for (key, value) in members {
        text.push(',');
        push_json_str(&mut text, key);
        text.push(':');
        // Value's Display is compact JSON.
        let _ = write!(text, "{value}");
    }
    // The hash covers the line as it would read without its `h` member.
    text.push('}');
    let h = hex::encode(Sha256::digest(text.as_bytes()));
    text.pop();
    text.push_str(",\"h\":\"");
    text.push_str(&h);
    text.push_str("\"}\n");
    Line { n, h, text }
}

fn push_json_str(out: &mut String, s: &str) {
    // Serializing a str to JSON has no failure case.
    out.push_str(&serde_json::to_string(s).expect("a str always serializes to JSON"));
}

/// A line number and a prefix of that line's `h`, recorded outside the
/// journal so that a later rewrite of the chain up to that line shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub n: u64,
    /// Lowercase, 12..=64 hex digits.
    pub hash_prefix: String,
}

/// Why a string is not an anchor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid anchor {input:?}: {why} (anchor must be N:HEX with 12 to 64 hex digits)")]
pub struct AnchorError {
    pub input: String,
    pub why: String,
}

impl FromStr for Anchor {
    type Err = AnchorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |why: String| AnchorError {
            input: s.to_string(),
            why,
        };
        // Tolerate the newline of an anchor read back from a file.
        let t = s.trim();
        let (num, hex) = t
            .split_once(':')
            .ok_or_else(|| fail("there is no ':'".to_string()))?;
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail(format!("line number {num:?} is not a decimal number")));
        }
        let n: u64 = num
            .parse()
            .map_err(|_| fail(format!("line number {num} is too large")))?;
        if let Some(bad) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(fail(format!("{bad:?} is not a hex digit")));
        }
        if !(ANCHOR_HEX_MIN..=HEX_LEN).contains(&hex.len()) {
            return Err(fail(format!("the hash has {} hex digits", hex.len())));
        }
        let hash_prefix = hex.to_ascii_lowercase();
        // Line 0 is the empty journal, whose only hash is the genesis value;
        // this keeps `0:000000000000` (what an empty journal prints) usable.
        if n == 0 && !GENESIS_PREV.starts_with(&hash_prefix) {
            return Err(fail(
                "anchor 0 is the empty journal and its hash is all zeros".to_string(),
            ));
        }
        Ok(Anchor { n, hash_prefix })
    }
}

impl fmt::Display for Anchor {
    /// `N:h12`; the alternate form (`{:#}`) prints every hex digit held.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = if f.alternate() {
            &self.hash_prefix[..]
        } else {
            &self.hash_prefix[..self.hash_prefix.len().min(ANCHOR_HEX_MIN)]
        };
        write!(f, "{}:{}", self.n, hex)
    }
}

/// The last line's number and hash; `n = 0` and `h = GENESIS_PREV` for an
/// empty journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub n: u64,
    pub h: String,
}

impl Head {
    /// The head of an empty journal.
    pub fn genesis() -> Head {
        Head {
            n: 0,
            h: GENESIS_PREV.to_string(),
        }
    }

    /// This head as an anchor with 12 hex digits.
    pub fn anchor(&self) -> Anchor {
        Anchor {
            n: self.n,
            hash_prefix: self.h[..ANCHOR_HEX_MIN].to_string(),
        }
    }
}

/// The first bad line's number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The last line has no `'\n'`.
    Torn { line: u64 },
    /// Not of the line shape (bad prefix, missing h member, not UTF-8, …).
    Malformed { line: u64, why: String },
    /// `n` is not the line's position: lines deleted, duplicated, swapped or inserted.
    WrongNumber { line: u64, found: u64 },
    /// `prev` is not the previous line's `h`.
    BrokenLink { line: u64 },
    /// `h` is not the SHA-256 of the line.
    HashMismatch { line: u64 },
    /// The file has fewer lines than the anchor's number (a cut tail).
    AnchorBeyondEnd { anchor: u64, lines: u64 },
    /// The anchored line's `h` does not start with the anchor's hex.
    AnchorMismatch { anchor: u64 },
    /// The seal is not the MAC of the line under its epoch's key.
    BadSeal { line: u64 },
    /// Sealed in an epoch its place or its time does not allow.
    WrongEpoch {
        line: u64,
        found: u64,
        expected: u64,
    },
    /// Not sealed, though seals began at line `first` (or it starts them).
    Unsealed { line: u64, first: u64 },
    /// Sealed, but no `seal_started`/`seal_rotated` line precedes it.
    Unannounced { line: u64 },
    /// Starts a family of keys none of the given keys belongs to.
    UnknownKey { line: u64, key_id: String },
    /// A key was given but no line is sealed.
    NoSeals { lines: u64 },
    /// Dated after the verifier's clock (and a day's leeway): its key would be evolved that far
    /// before its seal could be compared.
    Future { line: u64 },
}

impl Problem {
    /// The line the problem is about (for anchor problems, the anchor's line).
    pub fn line(&self) -> u64 {
        match self {
            Problem::Torn { line }
            | Problem::Malformed { line, .. }
            | Problem::WrongNumber { line, .. }
            | Problem::BrokenLink { line }
            | Problem::HashMismatch { line } => *line,
            Problem::AnchorBeyondEnd { anchor, .. } | Problem::AnchorMismatch { anchor } => *anchor,
            Problem::BadSeal { line }
            | Problem::WrongEpoch { line, .. }
            | Problem::Unsealed { line, .. }
            | Problem::Unannounced { line }
            | Problem::UnknownKey { line, .. }
            | Problem::Future { line } => *line,
            Problem::NoSeals { lines } => *lines,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Torn { line } => write!(
                f,
                "line {line}: torn tail: the last line has no newline (a crash mid-write, not tampering)"
            ),
            Problem::Malformed { line, why } => write!(f, "line {line}: malformed: {why}"),
            Problem::WrongNumber { line, found } => write!(
                f,
                "line {line}: n is {found}, expected {line} (lines deleted, duplicated or inserted)"
            ),
            Problem::BrokenLink { line: 1 } => write!(
                f,
                "line 1: prev is not 64 zeros (the start of the journal was removed or altered)"
            ),
            Problem::BrokenLink { line } => write!(
                f,
                "line {line}: prev does not match line {}'s h (a line was removed, altered or reordered)",
                line - 1
            ),
            Problem::HashMismatch { line } => write!(
                f,
                "line {line}: h does not match the line's contents (the line was altered)"
            ),
            Problem::AnchorBeyondEnd { anchor, lines } => write!(
                f,
                "anchor {anchor}: the file has only {lines} line{} (cut tail)",
                if *lines == 1 { "" } else { "s" }
            ),
            Problem::AnchorMismatch { anchor } => write!(
                f,
                "anchor {anchor}: line {anchor}'s h does not match the anchor"
            ),
            Problem::BadSeal { line } => write!(
                f,
                "line {line}: the seal does not match (the line was altered, moved or sealed with another key)"
            ),
            Problem::WrongEpoch { line, found, expected } => write!(
                f,
                "line {line}: sealed in epoch {found}, expected epoch {expected} (a seal from the wrong epoch)"
            ),
            Problem::Unsealed { line, first } if line == first => write!(
                f,
                "line {line}: it starts seals but is not sealed (seals stripped)"
            ),
            Problem::Unsealed { line, first } => write!(
                f,
                "line {line}: not sealed, though seals began at line {first} (seals stripped or a line inserted)"
            ),
            Problem::Unannounced { line } => write!(
                f,
                "line {line}: sealed, but no seal_started or seal_rotated line comes before it"
            ),
            Problem::UnknownKey { line, key_id } => write!(
                f,
                "line {line}: seals from here on use key {key_id}, which no --key given matches"
            ),
            Problem::NoSeals { lines } => write!(
                f,
                "line {lines}: no line of the file is sealed, though a key was given (seals stripped, or the key is another journal's)"
            ),
            Problem::Future { line } => write!(
                f,
                "line {line}: dated more than a day after this machine's clock (a clock that ran ahead, or a line written to make verification evolve keys for hours)"
            ),
        }
    }
}

impl std::error::Error for Problem {}

/// A journal that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub head: Head,
    /// The anchor's line number, when an anchor was given.
    pub anchored: Option<u64>,
    /// Lines after the anchor, which no anchor vouches for yet. Without an
    /// anchor that is every line (only the chain itself vouches for them).
    pub unanchored_after: u64,
    /// What is known about seals, by range.
    pub seals: SealReport,
}

impl Verified {
    /// One line for the CLI: `ok N:h12`, `ok N:h12 (anchored at A)` or
    /// `ok N:h12 (anchored at A; K lines after it are not anchored)`.
    pub fn summary(&self) -> String {
        let head = self.head.anchor();
        match (self.anchored, self.unanchored_after) {
            (None, _) => format!("ok {head}"),
            (Some(a), 0) => format!("ok {head} (anchored at {a})"),
            (Some(a), 1) => format!("ok {head} (anchored at {a}; 1 line after it is not anchored)"),
            (Some(a), k) => {
                format!("ok {head} (anchored at {a}; {k} lines after it are not anchored)")
            }
        }
    }
}

fn is_lower_hex(s: &[u8]) -> bool {
    // No early exit: a plain fold over all bytes vectorizes, and a valid
    // line has to look at every byte anyway.
    s.iter().fold(true, |ok, &b| {
        ok & ((b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6))
    })
}

/// The fixed parts of one line (without its `'\n'`), borrowed from it.
struct Shape<'a> {
    n: u64,
    prev: &'a [u8],
    /// Everything before the `h` member: hashed, followed by `}`.
    hashed: &'a [u8],
    h: &'a [u8],
    /// From the first byte of `ts` on.
    after_ts: &'a [u8],
    /// From `ts`'s value (its opening quote) up to the `h` member.
    members: &'a [u8],
    /// The seal after `h`, when the line is sealed.
    seal: Option<seal::Found<'a>>,
}

/// Check a line's shape at fixed offsets, without parsing its JSON.
fn shape(line: &[u8]) -> Result<Shape<'_>, &'static str> {
    if !line.starts_with(LINE_START) {
        return Err("does not start with {\"n\":");
    }
    let digits = &line[LINE_START.len()..];
    let n_len = digits
        .iter()
        .take(MAX_N_DIGITS + 1)
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len().min(MAX_N_DIGITS + 1));
    if n_len == 0 {
        return Err("n is not a decimal number");
    }
    if n_len > 1 && digits[0] == b'0' {
        return Err("n has a leading zero");
    }
    if n_len > MAX_N_DIGITS {
        return Err("n is too large");
    }
    let mut n: u64 = 0;
    for &d in &digits[..n_len] {
        n = n
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or("n is too large")?;
    }
    let mut at = LINE_START.len() + n_len;
    if !line[at..].starts_with(PREV_KEY) {
        return Err("n is not followed by ,\"prev\":\"");
    }
    at += PREV_KEY.len();
    let prev = line
        .get(at..at + HEX_LEN)
        .filter(|p| is_lower_hex(p))
        .ok_or("prev is not 64 lowercase hex digits")?;
    at += HEX_LEN;
    if !line[at..].starts_with(TS_KEY) {
        return Err("prev is not followed by ts");
    }
    at += TS_KEY.len();
    let (end, seal) = split_seal(&line[at..])?;
    // `end` is just past `h`'s closing quote.
    let end = at + end;
    if end < at + H_MEMBER_LEN - 1 {
        return Err("too short to end with the h member");
    }
    let tail_at = end - (H_MEMBER_LEN - 1);
    let tail = &line[tail_at..end];
    if !tail.starts_with(H_KEY) || !tail.ends_with(b"\"") {
        return Err("does not end with ,\"h\":\"<64 hex>\"}");
    }
    let h = &tail[H_KEY.len()..H_KEY.len() + HEX_LEN];
    if !is_lower_hex(h) {
        return Err("h is not 64 lowercase hex digits");
    }
    Ok(Shape {
        n,
        prev,
        hashed: &line[..tail_at],
        h,
        after_ts: &line[at..],
        members: &line[at - 1..tail_at],
        seal,
    })
}

/// Splits a sealed line's seal off its end. Returns where `h`'s closing quote ends and the
/// seal. Only `,"s":"<epoch>:<64 hex>"` may follow `h`: anything else after it fails the `h`
/// member's shape.
fn split_seal(rest: &[u8]) -> Result<(usize, Option<seal::Found<'_>>), &'static str> {
    if !rest.ends_with(LINE_END) {
        return Err("does not end with ,\"h\":\"<64 hex>\"}");
    }
    // An unsealed line has `"` where a sealed one has the `:` before its MAC.
    let colon = rest.len().checked_sub(LINE_END.len() + HEX_LEN + 1);
    let Some(colon) = colon.filter(|&c| rest[c] == b':') else {
        return Ok((rest.len() - 1, None));
    };
    let mac = &rest[colon + 1..colon + 1 + HEX_LEN];
    if !is_lower_hex(mac) {
        return Err("the seal's MAC is not 64 lowercase hex digits");
    }
    let digits = rest[..colon]
        .iter()
        .rev()
        .take(MAX_N_DIGITS + 1)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let epoch_at = colon - digits;
    let epoch_text = &rest[epoch_at..colon];
    if digits == 0 || digits > MAX_N_DIGITS || (digits > 1 && epoch_text[0] == b'0') {
        return Err("the seal's epoch is not a decimal number");
    }
    let epoch = std::str::from_utf8(epoch_text)
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or("the seal's epoch is too large")?;
    let s_at = epoch_at
        .checked_sub(seal::S_KEY.len())
        .filter(|&i| &rest[i..epoch_at] == seal::S_KEY)
        .ok_or("a member other than the seal follows h")?;
    // `h`'s closing quote is the byte before `,"s":"`; the caller checks it and `h`.
    Ok((s_at, Some(seal::Found { epoch, mac })))
}

/// Whether `h` (64 lowercase hex) is the SHA-256 of `hashed` + `}`. One
/// hasher over both slices and a byte-wise hex compare: no allocation.
fn hash_matches(hashed: &[u8], h: &[u8]) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    hasher.update(hashed);
    hasher.update(b"}");
    let digest = hasher.finalize();
    let mut hex = [0u8; HEX_LEN];
    for (pair, d) in hex.chunks_exact_mut(2).zip(digest.iter()) {
        pair[0] = HEX[usize::from(d >> 4)];
        pair[1] = HEX[usize::from(d & 15)];
    }
    hex[..] == *h
}

/// A line's own checks (shape, hash, UTF-8), without its place in the chain.
fn check_own(line: &[u8]) -> Result<Shape<'_>, OwnFault> {
    let s = shape(line).map_err(OwnFault::Malformed)?;
    check_contents(line, &s)?;
    Ok(s)
}

/// The checks after the shape: the hash, then UTF-8, then the members (`journal::members`).
fn check_contents(line: &[u8], s: &Shape<'_>) -> Result<(), OwnFault> {
    if !hash_matches(s.hashed, s.h) {
        return Err(OwnFault::Hash);
    }
    // Only reached once the hash matches, so a bad byte shows as the
    // alteration it is; UTF-8 is then checked because the hash alone
    // cannot tell a writer that broke the format.
    if std::str::from_utf8(line).is_err() {
        return Err(OwnFault::Malformed("not UTF-8"));
    }
    members::check(line, s.members).map_err(OwnFault::Malformed)
}

/// The head a single line names (its `n` and `h`) when its own checks pass
/// (shape, hash, UTF-8); its link to the line before is not checked. This is
/// how the daemon reads a journal's head from its last line alone.
pub fn head_of_line(line: &[u8]) -> Option<Head> {
    let s = check_own(line).ok()?;
    Some(Head {
        n: s.n,
        h: String::from_utf8_lossy(s.h).into_owned(),
    })
}

enum OwnFault {
    Malformed(&'static str),
    Hash,
}

/// Walks lines in order, holding only the previous line's `h`.
struct Verifier<'a> {
    anchor: Option<&'a Anchor>,
    seals: seal::SealCheck,
    /// The number the next line must carry.
    next: u64,
    /// The `h` the next line's `prev` must equal.
    prev: [u8; HEX_LEN],
}

impl<'a> Verifier<'a> {
    fn new(anchor: Option<&'a Anchor>, keys: SealKeys) -> Self {
        Verifier {
            anchor,
            seals: seal::SealCheck::new(keys),
            next: 1,
            prev: [b'0'; HEX_LEN],
        }
    }

    /// Check one complete line, given without its `'\n'`.
    fn line(&mut self, line: &[u8]) -> Result<(), Problem> {
        let n = self.next;
        // Order matters for what is reported: a shape fault hides
        // everything else; a wrong number explains a broken link; a broken
        // link explains nothing about the line's own hash, so it comes next.
        let s = shape(line).map_err(|why| Problem::Malformed {
            line: n,
            why: why.to_string(),
        })?;
        if s.n != n {
            return Err(Problem::WrongNumber {
                line: n,
                found: s.n,
            });
        }
        if s.prev != self.prev {
            return Err(Problem::BrokenLink { line: n });
        }
        match check_contents(line, &s) {
            Ok(()) => {}
            Err(OwnFault::Hash) => return Err(Problem::HashMismatch { line: n }),
            Err(OwnFault::Malformed(why)) => {
                return Err(Problem::Malformed {
                    line: n,
                    why: why.to_string(),
                })
            }
        }
        self.seals.line(n, line, s.after_ts, s.h, s.seal)?;
        if let Some(a) = self.anchor {
            if a.n == n && !s.h.starts_with(a.hash_prefix.as_bytes()) {
                return Err(Problem::AnchorMismatch { anchor: n });
            }
        }
        self.prev.copy_from_slice(s.h);
        self.next += 1;
        Ok(())
    }

    /// After the last complete line; `torn` when bytes follow it without a `'\n'`.
    fn finish(self, torn: bool) -> Result<Verified, Problem> {
        let lines = self.next - 1;
        if let Some(a) = self.anchor {
            // An anchored line was once complete and fsynced, so a missing
            // one is a cut, even when a torn fragment stands in its place.
            if a.n > lines {
                return Err(Problem::AnchorBeyondEnd { anchor: a.n, lines });
            }
        }
        if torn {
            return Err(Problem::Torn { line: self.next });
        }
        let head = Head {
            n: lines,
            h: String::from_utf8_lossy(&self.prev).into_owned(),
        };
        Ok(Verified {
            head,
            anchored: self.anchor.map(|a| a.n),
            unanchored_after: lines - self.anchor.map_or(0, |a| a.n),
            seals: self.seals.finish(lines)?,
        })
    }
}

/// Verify a whole journal held in memory; seals are checked for shape and order only.
pub fn verify_bytes(bytes: &[u8], anchor: Option<&Anchor>) -> Result<Verified, Problem> {
    verify_bytes_sealed(bytes, anchor, SealKeys::default())
}

/// [`verify_bytes`], checking seals with `keys`.
pub fn verify_bytes_sealed(
    bytes: &[u8],
    anchor: Option<&Anchor>,
    keys: SealKeys,
) -> Result<Verified, Problem> {
    let mut v = Verifier::new(anchor, keys);
    let mut rest = bytes;
    while let Some(i) = memchr::memchr(b'\n', rest) {
        v.line(&rest[..i])?;
        rest = &rest[i + 1..];
    }
    v.finish(!rest.is_empty())
}

/// Verify a journal streamed from `r` (a file, in the daemon), reading it in
/// large chunks. The outer error is I/O only; what is wrong with the journal is
/// the inner `Problem`.
pub fn verify_read(r: impl Read, anchor: Option<&Anchor>) -> io::Result<Result<Verified, Problem>> {
    verify_chunked(r, anchor, SealKeys::default(), READ_CHUNK)
}

/// [`verify_read`], checking seals with `keys`.
pub fn verify_read_sealed(
    r: impl Read,
    anchor: Option<&Anchor>,
    keys: SealKeys,
) -> io::Result<Result<Verified, Problem>> {
    verify_chunked(r, anchor, keys, READ_CHUNK)
}

fn verify_chunked(
    mut r: impl Read,
    anchor: Option<&Anchor>,
    keys: SealKeys,
    chunk: usize,
) -> io::Result<Result<Verified, Problem>> {
    let mut v = Verifier::new(anchor, keys);
    let mut buf = vec![0u8; chunk.max(1)];
    // buf[start..end] is read but not yet verified, and holds no '\n'.
    let (mut start, mut end) = (0, 0);
    loop {
        if buf.len() - end < buf.len() / 2 && start > 0 {
            // Move the partial line to the front so reads stay large.
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if end == buf.len() {
            // A line longer than the buffer.
            buf.resize(buf.len() * 2, 0);
        }
        let got = match r.read(&mut buf[end..]) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Only the new bytes can hold a newline.
        let mut scan = end;
        end += got;
        while let Some(i) = memchr::memchr(b'\n', &buf[scan..end]) {
            let nl = scan + i;
            if let Err(p) = v.line(&buf[start..nl]) {
                return Ok(Err(p));
            }
            start = nl + 1;
            scan = start;
        }
    }
    Ok(v.finish(start != end))
}

/// Whether `lines` continue the chain from `head`: each line's `n`, `prev`,
/// `h` and text are checked, as verification would check them once written.
/// The error says which line is refused and why, in one English line.
pub fn check_continues(head: &Head, lines: &[Line]) -> Result<(), String> {
    let mut expect = Verifier::new(None, SealKeys::default());
    expect.next = head.n + 1;
    expect.prev.copy_from_slice(head.h.as_bytes());
    lines.iter().try_for_each(|line| {
        continues(&mut expect, line).map_err(|why| format!("line {}: {why}", line.n))
    })
}

fn continues(expect: &mut Verifier<'_>, line: &Line) -> Result<(), String> {
    let n = expect.next;
    let body = line
        .text
        .as_bytes()
        .strip_suffix(b"\n")
        .ok_or_else(|| "text does not end in a newline".to_string())?;
    if memchr::memchr(b'\n', body).is_some() {
        return Err("text holds more than one line".to_string());
    }
    expect.line(body).map_err(|p| match p {
        Problem::WrongNumber { found, .. } => {
            format!("n is {found}, the journal's next line is {n}")
        }
        Problem::BrokenLink { .. } => {
            format!("prev is not the h of line {} (the journal's head)", n - 1)
        }
        Problem::HashMismatch { .. } => "h does not match the text".to_string(),
        other => other.to_string(),
    })?;
    // The line verified as line `n`, so its `h` is now the verifier's `prev`:
    // what is left is whether the fields the caller holds agree with the text.
    if line.n != n || expect.prev[..] != *line.h.as_bytes() {
        return Err("n or h differs from the text".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use serde_json::{json, Value};

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 14, 9, 26, 53).unwrap() + Duration::milliseconds(589)
    }

    /// The event of line `i` (1-based) of a realistic journal.
    fn event(i: u64) -> (&'static str, Vec<(&'static str, Value)>) {
        let id = format!("c-{:06}", i.div_ceil(2));
        let kinds = ["exec", "net", "file.write", "clipboard"];
        match i % 5 {
            0 => (
                "asked",
                vec![
                    ("id", json!(id)),
                    ("kind", json!(kinds[(i as usize / 5) % kinds.len()])),
                    (
                        "digest",
                        json!(hex::encode(Sha256::digest(i.to_le_bytes()))),
                    ),
                ],
            ),
            1 => (
                "denied",
                vec![
                    ("id", json!(id)),
                    ("reason", json!("user declined: \"not now\" — later")),
                ],
            ),
            2 => ("used", vec![("id", json!(id)), ("grant", json!(i / 3))]),
            3 => (
                "executed",
                vec![
                    ("id", json!(id)),
                    ("status", json!(i % 7)),
                    ("ms", json!(12.5)),
                ],
            ),
            _ => (
                "granted",
                vec![
                    ("id", json!(id)),
                    ("scope", json!({"once": true, "paths": ["/tmp/x"]})),
                    ("until", Value::Null),
                ],
            ),
        }
    }

    fn line_after(n: u64, prev: &str, salt: &str) -> Line {
        let (ev, mut members) = event(n);
        if !salt.is_empty() {
            members.push(("note", json!(salt)));
        }
        build_line(
            n,
            prev,
            t0() + Duration::milliseconds(n as i64 * 1037),
            ev,
            &members,
        )
    }

    fn journal(count: u64) -> Vec<Line> {
        rebuild(Vec::new(), 1, count, "")
    }

    /// Keep `lines[..from-1]` and build lines `from..=to` after them.
    fn rebuild(mut lines: Vec<Line>, from: u64, to: u64, salt: &str) -> Vec<Line> {
        lines.truncate(from as usize - 1);
        for n in from..=to {
            let prev = lines
                .last()
                .map_or(GENESIS_PREV.to_string(), |l| l.h.clone());
            lines.push(line_after(n, &prev, salt));
        }
        lines
    }

    fn bytes(lines: &[Line]) -> Vec<u8> {
        lines.iter().flat_map(|l| l.text.bytes()).collect()
    }

    fn anchor(lines: &[Line], n: u64) -> Anchor {
        Head {
            n,
            h: lines[n as usize - 1].h.clone(),
        }
        .anchor()
    }

    #[test]
    fn build_line_follows_the_rule() {
        let members = [
            ("id", json!("c-000001")),
            ("kind", json!("exec")),
            ("digest", json!("ab".repeat(32))),
            ("scope", json!({"paths": ["/a", "/b"], "once": true})),
            ("reason", json!("line\nbreak \"quoted\" é")),
        ];
        let line = build_line(7, &"5".repeat(64), t0(), "asked", &members);
        let text = &line.text;
        assert!(text.ends_with("\"}\n"));
        assert_eq!(text.matches('\n').count(), 1, "one line only");
        // h by an independent route: strip from the last `,"h":"`.
        let body = text.trim_end_matches('\n');
        let cut = body.rfind(",\"h\":\"").unwrap();
        let want = hex::encode(Sha256::digest(format!("{}}}", &body[..cut])));
        assert_eq!(line.h, want);
        assert_eq!(&body[cut..], format!(",\"h\":\"{want}\"}}"));
        assert_eq!(line.n, 7);
        // Exact compact text, written out by hand.
        let expect = format!(
            "{{\"n\":7,\"prev\":\"{}\",\"ts\":\"2025-03-14T09:26:53.589Z\",\"ev\":\"asked\",\
             \"id\":\"c-000001\",\"kind\":\"exec\",\"digest\":\"{}\",\
             \"scope\":{{\"once\":true,\"paths\":[\"/a\",\"/b\"]}},\
             \"reason\":\"line\\nbreak \\\"quoted\\\" é\",\"h\":\"{want}\"}}\n",
            "5".repeat(64),
            "ab".repeat(32)
        );
        assert_eq!(*text, expect);
        // Parses as JSON with the right members, in the right order.
        let v: Value = serde_json::from_str(body).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 10);
        assert_eq!(obj["n"], json!(7));
        assert_eq!(obj["ev"], json!("asked"));
        assert_eq!(obj["reason"], members[4].1);
        assert_eq!(obj["scope"], members[3].1);
        let keys = [
            "n", "prev", "ts", "ev", "id", "kind", "digest", "scope", "reason", "h",
        ];
        let at: Vec<usize> = keys
            .iter()
            .map(|k| body.find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "keys out of order: {at:?}"
        );
        assert_eq!(at[0], 1, "n is first");
        // And it verifies as line 7 after its prev.
        assert!(check_own(body.as_bytes()).is_ok());
    }

    #[test]
    fn empty_journal_is_ok() {
        let v = verify_bytes(b"", None).unwrap();
        assert_eq!(v.head, Head::genesis());
        assert_eq!(v.summary(), "ok 0:000000000000");
        let zero: Anchor = "0:000000000000".parse().unwrap();
        let v = verify_bytes(b"", Some(&zero)).unwrap();
        assert_eq!(v.summary(), "ok 0:000000000000 (anchored at 0)");
    }

    #[test]
    fn whole_journal_verifies_and_summarises() {
        let lines = journal(200);
        let b = bytes(&lines);
        let h12 = &lines[199].h[..12];
        let v = verify_bytes(&b, None).unwrap();
        assert_eq!(
            v.head,
            Head {
                n: 200,
                h: lines[199].h.clone()
            }
        );
        assert_eq!(v.anchored, None);
        assert_eq!(v.unanchored_after, 200);
        assert_eq!(v.summary(), format!("ok 200:{h12}"));
        let v = verify_bytes(&b, Some(&anchor(&lines, 200))).unwrap();
        assert_eq!(v.summary(), format!("ok 200:{h12} (anchored at 200)"));
        let v = verify_bytes(&b, Some(&anchor(&lines, 199))).unwrap();
        assert_eq!(
            v.summary(),
            format!("ok 200:{h12} (anchored at 199; 1 line after it is not anchored)")
        );
        let full = Anchor {
            n: 120,
            hash_prefix: lines[119].h.clone(),
        };
        let v = verify_bytes(&b, Some(&full)).unwrap();
        assert_eq!((v.anchored, v.unanchored_after), (Some(120), 80));
        assert_eq!(
            v.summary(),
            format!("ok 200:{h12} (anchored at 120; 80 lines after it are not anchored)")
        );
    }

    fn flip_is_caught(b: &[u8], at: usize, bit: u8) -> Problem {
        let mut m = b.to_vec();
        m[at] ^= 1 << bit;
        match verify_bytes(&m, None) {
            Ok(v) => panic!(
                "flip of bit {bit} at byte {at} not detected: {}",
                v.summary()
            ),
            Err(p) => p,
        }
    }

    #[test]
    fn every_bit_flip_in_first_and_last_three_lines_is_caught() {
        let lines = journal(200);
        let b = bytes(&lines);
        let first3: usize = lines[..3].iter().map(|l| l.text.len()).sum();
        let last3: usize = lines[197..].iter().map(|l| l.text.len()).sum();
        let ranges = [0..first3, b.len() - last3..b.len()];
        let mut flips = 0;
        for at in ranges.into_iter().flatten() {
            for bit in 0..8 {
                let p = flip_is_caught(&b, at, bit);
                if at == b.len() - 1 {
                    assert_eq!(p, Problem::Torn { line: 200 });
                } else {
                    assert!(
                        !matches!(p, Problem::Torn { .. }),
                        "flip at {at} read as torn: {p}"
                    );
                }
                flips += 1;
            }
        }
        assert_eq!(flips, (first3 + last3) * 8);
    }

    #[test]
    fn random_bit_flips_are_caught() {
        let lines = journal(200);
        let b = bytes(&lines);
        // xorshift64, fixed seed: the same 2,000 flips every run.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x % b.len() as u64) as usize;
            let bit = ((x >> 40) % 8) as u8;
            flip_is_caught(&b, at, bit);
        }
    }

    fn without(lines: &[Line], drop: usize) -> Vec<u8> {
        let mut l = lines.to_vec();
        l.remove(drop - 1);
        bytes(&l)
    }

    #[test]
    fn deleted_duplicated_swapped_inserted_lines_are_caught() {
        let lines = journal(200);
        // Deleted line 57: line 58 stands at 57.
        assert_eq!(
            verify_bytes(&without(&lines, 57), None),
            Err(Problem::WrongNumber {
                line: 57,
                found: 58
            })
        );
        // Deleted line 1.
        assert_eq!(
            verify_bytes(&without(&lines, 1), None),
            Err(Problem::WrongNumber { line: 1, found: 2 })
        );
        // Duplicated line 57: the copy stands at 58.
        let mut dup = lines.clone();
        dup.insert(57, lines[56].clone());
        assert_eq!(
            verify_bytes(&bytes(&dup), None),
            Err(Problem::WrongNumber {
                line: 58,
                found: 57
            })
        );
        // Swapped lines 57 and 58.
        let mut sw = lines.clone();
        sw.swap(56, 57);
        assert_eq!(
            verify_bytes(&bytes(&sw), None),
            Err(Problem::WrongNumber {
                line: 57,
                found: 58
            })
        );
        // Inserted a well-formed line 58 after 57: the old 58 stands at 59.
        let mut ins = lines.clone();
        ins.insert(57, line_after(58, &lines[56].h, "forged"));
        assert_eq!(
            verify_bytes(&bytes(&ins), None),
            Err(Problem::WrongNumber {
                line: 59,
                found: 58
            })
        );
        // Deleted line 57 and renumbered 58 as 57: its prev gives it away.
        let mut ren = lines.clone();
        ren.remove(56);
        ren[56].text = ren[56].text.replacen("{\"n\":58,", "{\"n\":57,", 1);
        assert_eq!(
            verify_bytes(&bytes(&ren), None),
            Err(Problem::BrokenLink { line: 57 })
        );
        // Altered the contents of line 57.
        let mut alt = lines.clone();
        alt[56].text = alt[56].text.replacen("\"c-0000", "\"c-9999", 1);
        assert_eq!(
            verify_bytes(&bytes(&alt), None),
            Err(Problem::HashMismatch { line: 57 })
        );
        // A line 1 that does not start from genesis.
        let mut g = lines.clone();
        g[0] = line_after(1, &"1".repeat(64), "");
        assert_eq!(
            verify_bytes(&bytes(&g), None),
            Err(Problem::BrokenLink { line: 1 })
        );
    }

    #[test]
    fn recomputed_chain_is_caught_only_before_the_anchor() {
        let lines = journal(200);
        let a120 = anchor(&lines, 120);
        let after = rebuild(lines.clone(), 150, 200, "rewritten");
        assert_ne!(after[149].h, lines[149].h);
        // Without an anchor a recomputed chain is whole.
        assert!(verify_bytes(&bytes(&after), None).is_ok());
        let v = verify_bytes(&bytes(&after), Some(&a120)).unwrap();
        assert_eq!(v.anchored, Some(120));
        assert_eq!(v.unanchored_after, 80);
        let before = rebuild(lines.clone(), 50, 200, "rewritten");
        assert_eq!(
            verify_bytes(&bytes(&before), Some(&a120)),
            Err(Problem::AnchorMismatch { anchor: 120 })
        );
        // A full 64-digit anchor and an uppercase one behave the same.
        let full: Anchor = format!("120:{}", lines[119].h.to_uppercase())
            .parse()
            .unwrap();
        assert!(verify_bytes(&bytes(&after), Some(&full)).is_ok());
        assert_eq!(
            verify_bytes(&bytes(&before), Some(&full)),
            Err(Problem::AnchorMismatch { anchor: 120 })
        );
    }

    #[test]
    fn cut_tail_is_caught_by_the_anchor() {
        let lines = journal(200);
        let a200 = anchor(&lines, 200);
        let cut = bytes(&lines[..150]);
        assert!(verify_bytes(&cut, None).is_ok());
        assert_eq!(
            verify_bytes(&cut, Some(&a200)),
            Err(Problem::AnchorBeyondEnd {
                anchor: 200,
                lines: 150
            })
        );
        assert_eq!(
            verify_bytes(b"", Some(&a200)),
            Err(Problem::AnchorBeyondEnd {
                anchor: 200,
                lines: 0
            })
        );
        // A torn fragment where the anchored line stood is still a cut:
        // that line had been complete and fsynced.
        let mut torn = cut.clone();
        torn.extend_from_slice(&lines[150].text.as_bytes()[..40]);
        let a151 = anchor(&lines, 151);
        assert_eq!(
            verify_bytes(&torn, Some(&a151)),
            Err(Problem::AnchorBeyondEnd {
                anchor: 151,
                lines: 150
            })
        );
        assert_eq!(
            verify_bytes(&torn, Some(&anchor(&lines, 150))),
            Err(Problem::Torn { line: 151 })
        );
    }

    #[test]
    fn anchors_parse_and_print() {
        let h = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        for len in [12, 13, 64] {
            let a: Anchor = format!("42:{}", &h[..len]).parse().unwrap();
            assert_eq!(a.n, 42);
            assert_eq!(a.hash_prefix, &h[..len]);
            assert_eq!(a.to_string(), "42:0123456789ab");
            assert_eq!(format!("{a:#}"), format!("42:{}", &h[..len]));
        }
        let upper: Anchor = "42:0123456789ABCDEF".parse().unwrap();
        assert_eq!(upper.hash_prefix, "0123456789abcdef");
        let trimmed: Anchor = " 7:0123456789ab\n".parse().unwrap();
        assert_eq!(trimmed.n, 7);
        let refused = [
            format!("42:{}", &h[..11]),
            format!("42:{h}0"),
            "42:0123456789ag".to_string(),
            "42-0123456789ab".to_string(),
            ":0123456789ab".to_string(),
            "-1:0123456789ab".to_string(),
            "x:0123456789ab".to_string(),
            "99999999999999999999:0123456789ab".to_string(),
            "0:0123456789ab".to_string(),
            "42:".to_string(),
        ];
        for s in refused {
            let e = s.parse::<Anchor>().unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("anchor must be N:HEX with 12 to 64 hex digits"),
                "{s}: {msg}"
            );
        }
        let e = format!("42:{}", &h[..11]).parse::<Anchor>().unwrap_err();
        assert_eq!(e.why, "the hash has 11 hex digits");
        let e = "42:0123456789ag".parse::<Anchor>().unwrap_err();
        assert_eq!(e.why, "'g' is not a hex digit");
        let head = Head {
            n: 9,
            h: h.to_string(),
        };
        assert_eq!(head.anchor().to_string(), "9:0123456789ab");
        assert_eq!(Head::genesis().anchor().to_string(), "0:000000000000");
    }

    #[test]
    fn problems_read_as_one_english_line() {
        let cases = [
            (
                Problem::BrokenLink { line: 57 },
                "line 57: prev does not match line 56's h (a line was removed, altered or reordered)",
            ),
            (
                Problem::HashMismatch { line: 57 },
                "line 57: h does not match the line's contents (the line was altered)",
            ),
            (
                Problem::WrongNumber { line: 57, found: 58 },
                "line 57: n is 58, expected 57 (lines deleted, duplicated or inserted)",
            ),
            (
                Problem::Torn { line: 200 },
                "line 200: torn tail: the last line has no newline (a crash mid-write, not tampering)",
            ),
            (
                Problem::AnchorBeyondEnd { anchor: 150, lines: 120 },
                "anchor 150: the file has only 120 lines (cut tail)",
            ),
            (
                Problem::AnchorMismatch { anchor: 150 },
                "anchor 150: line 150's h does not match the anchor",
            ),
            (
                Problem::Malformed { line: 3, why: "not UTF-8".into() },
                "line 3: malformed: not UTF-8",
            ),
        ];
        for (p, text) in cases {
            assert_eq!(p.to_string(), text);
            assert!(!p.to_string().contains('\n'));
        }
    }

    #[test]
    fn malformed_lines_say_why() {
        let lines = journal(3);
        let good = lines[1].text.trim_end_matches('\n').to_string();
        let prefix = bytes(&lines[..1]);
        let cases: Vec<(String, &str)> = vec![
            (good.replacen("{\"n\":", "{ \"n\":", 1), "does not start"),
            (good.replacen("\"n\":2", "\"n\":02", 1), "leading zero"),
            (good.replacen("\"n\":2", "\"n\":x", 1), "not a decimal"),
            (
                good.replacen("\"n\":2", "\"n\":99999999999999999999", 1),
                "too large",
            ),
            (good.replacen("\"prev\"", "\"Prev\"", 1), "prev"),
            (good.replacen("\",\"ts\"", "\",\"tz\"", 1), "ts"),
            (good[..good.len() - 2].to_string(), "end with"),
            (
                good[..good.rfind(",\"h\"").unwrap()].to_string() + "}",
                "end with",
            ),
            (
                good.to_uppercase().replacen("{\"N\":", "{\"n\":", 1),
                "prev",
            ),
            ("".to_string(), "does not start"),
        ];
        for (text, why) in cases {
            let mut b = prefix.clone();
            b.extend_from_slice(text.as_bytes());
            b.push(b'\n');
            match verify_bytes(&b, None) {
                Err(Problem::Malformed { line: 2, why: w }) => {
                    assert!(w.contains(why), "{text}: {w}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        // Bytes that are not UTF-8 under a hash that matches them.
        let mut raw = lines[1].text.clone().into_bytes();
        let at = raw.windows(6).position(|w| w == b"\"id\":\"").unwrap() + 6;
        raw[at..at + 2].copy_from_slice(b"\xff\xfe");
        let body = &raw[..raw.len() - 1];
        let cut = body.len() - H_MEMBER_LEN;
        let mut hasher = Sha256::new();
        hasher.update(&body[..cut]);
        hasher.update(b"}");
        let h = hex::encode(hasher.finalize());
        raw[cut + H_KEY.len()..cut + H_KEY.len() + HEX_LEN].copy_from_slice(h.as_bytes());
        let mut b = prefix.clone();
        b.extend_from_slice(&raw);
        assert_eq!(
            verify_bytes(&b, None),
            Err(Problem::Malformed {
                line: 2,
                why: "not UTF-8".into()
            })
        );
    }

    #[test]
    fn stream_and_bytes_agree_for_any_chunking() {
        let mut lines = journal(30);
        // One line far longer than the read buffer.
        let prev = lines[29].h.clone();
        lines.push(build_line(
            31,
            &prev,
            t0(),
            "asked",
            &[("digest", json!("d".repeat(READ_CHUNK * 2 + 17)))],
        ));
        lines = {
            let mut l = lines;
            let prev = l[30].h.clone();
            l.push(line_after(32, &prev, ""));
            l
        };
        let b = bytes(&lines);
        let mut x: u64 = 7;
        let mut variants = vec![b.clone(), b[..b.len() - 5].to_vec(), Vec::new()];
        for _ in 0..20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut m = b.clone();
            let at = (x % 9000) as usize;
            m[at] ^= 1 << (x >> 61);
            variants.push(m);
        }
        for v in &variants {
            let want = verify_bytes(v, Some(&anchor(&lines, 20)));
            for chunk in [1, 2, 7, 64, 333, 4096, READ_CHUNK] {
                let got = verify_chunked(
                    &v[..],
                    Some(&anchor(&lines, 20)),
                    SealKeys::default(),
                    chunk,
                )
                .unwrap();
                assert_eq!(got, want, "chunk {chunk}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_member_text_builds_a_verifiable_parseable_line(
            ev in "[a-z_]{1,12}",
            values in proptest::collection::vec(proptest::prelude::any::<String>(), 0..5),
            n in 1u64..u64::MAX,
        ) {
            let keys = ["id", "kind", "digest", "reason", "x"];
            let members: Vec<(&str, Value)> =
                keys.iter().zip(&values).map(|(k, v)| (*k, json!(v))).collect();
            let line = build_line(n, GENESIS_PREV, t0(), &ev, &members);
            let body = line.text.strip_suffix('\n').unwrap();
            proptest::prop_assert!(!body.contains('\n'));
            let s = check_own(body.as_bytes()).ok().unwrap();
            proptest::prop_assert_eq!(s.n, n);
            let v: Value = serde_json::from_str(body).unwrap();
            proptest::prop_assert_eq!(&v["ev"], &json!(ev));
            for (k, val) in &members {
                proptest::prop_assert_eq!(&v[*k], val);
            }
            if n == 1 {
                proptest::prop_assert!(verify_bytes(line.text.as_bytes(), None).is_ok());
            }
        }
    }
}
