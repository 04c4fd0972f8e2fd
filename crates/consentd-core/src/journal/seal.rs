//! Forward-secure seals on journal lines (docs/adr/0004-journal-seals.md).
//!
//! A sealed line ends `…,"h":"<64 hex>","s":"<epoch>:<64 hex>"}`: the seal is a member after
//! `h`, so `h` (the hash of everything before `,"h":"`) and the chain are what they were. The
//! seal is HMAC-SHA256 under the key of its epoch over `n` and the epoch (8 bytes each, big
//! endian) and the 32 bytes `h` names, so a seal cannot be moved to another line or epoch.
//!
//! Keys evolve one way: the key of a family's first epoch is `HMAC(k0, "next")`, each next
//! epoch's is `HMAC(previous, "next")`. `k0`, the verification key, never stays on the machine;
//! the machine holds only the current epoch's key, so whoever takes it can forge lines of that
//! epoch and later ones, never of an earlier one. A family starts with a `seal_started` (or, for
//! a new `k0`, `seal_rotated`) line naming the key's id, its first epoch, when that epoch began
//! and how long epochs last; that line is itself sealed in its first epoch. Epoch `e` covers
//! `[from + (e - first) × length, from + (e - first + 1) × length)` and a line's `ts` must fall in
//! the epoch it is sealed in, so an old line cannot be moved into the attacker's epoch unchanged.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{Line, Problem};

/// A 256-bit key: a verification key `k0` or an epoch's sealing key.
pub type Key = [u8; 32];

/// `,"s":"`: opens the seal member.
pub(super) const S_KEY: &[u8] = b",\"s\":\"";
/// The events that start a family of keys.
pub const SEAL_STARTED: &str = "seal_started";
pub const SEAL_ROTATED: &str = "seal_rotated";
/// What a key is evolved with.
const NEXT: &[u8] = b"next";
/// How far past the verifier's clock a line may be dated (a daemon's clock a little ahead).
const LEEWAY_MS: i64 = 86_400_000;
/// What a key's public id is computed with (distinct from [`NEXT`] and from a seal's 48 bytes).
const ID: &[u8] = b"consentd seal key id";

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &Key) -> HmacSha256 {
    // HMAC takes a key of any length; 32 bytes cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes any key length")
}

/// The next epoch's key: `HMAC-SHA256(key, "next")`.
pub fn evolve(key: &Key) -> Key {
    let mut m = hmac(key);
    m.update(NEXT);
    m.finalize().into_bytes().into()
}

/// A verification key's public id (16 hex digits): names the key in the journal and to the owner
/// without revealing it.
pub fn key_id(k0: &Key) -> String {
    let mut m = hmac(k0);
    m.update(ID);
    hex::encode(&m.finalize().into_bytes()[..8])
}

/// A key written as 64 hex digits (either case, surrounding space ignored).
pub fn parse_key(text: &str) -> Option<Key> {
    let t = text.trim();
    if t.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    hex::decode_to_slice(t, &mut key).ok()?;
    Some(key)
}

/// How a family's epochs fall in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epochs {
    /// The family's first epoch number.
    pub first: u64,
    /// When the first epoch began, ms since 1970.
    pub from_ms: i64,
    /// Length of an epoch, ms (at least one minute).
    pub length_ms: i64,
}

impl Epochs {
    /// The epoch a time falls in; times before the first epoch fall in it.
    pub fn at(&self, ms: i64) -> u64 {
        let since = ms.saturating_sub(self.from_ms).max(0);
        self.first
            .saturating_add((since / self.length_ms.max(1)) as u64)
    }

    /// When epoch `e` begins, ms since 1970.
    pub fn starts(&self, e: u64) -> i64 {
        let k = e.saturating_sub(self.first) as i64;
        self.from_ms
            .saturating_add(k.saturating_mul(self.length_ms))
    }
}

/// The sealing key of one epoch.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey {
    pub epoch: u64,
    pub key: Key,
}

impl fmt::Debug for SealKey {
    /// Never prints the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealKey {{ epoch: {}, key: <secret> }}", self.epoch)
    }
}

impl SealKey {
    /// The key of a family's first epoch, from its verification key.
    pub fn first(k0: &Key, epoch: u64) -> SealKey {
        SealKey {
            epoch,
            key: evolve(k0),
        }
    }

    /// The next epoch's key.
    pub fn next(&self) -> SealKey {
        SealKey {
            epoch: self.epoch + 1,
            key: evolve(&self.key),
        }
    }

    /// The seal of line `n` whose hash is `h_hex` (64 lowercase hex).
    pub fn mac(&self, n: u64, h_hex: &[u8]) -> [u8; 32] {
        mac_with(&hmac(&self.key), n, self.epoch, h_hex)
    }

    /// Seals a built line: appends its `"s"` member after `h`. The chain is unchanged.
    pub fn seal(&self, line: &mut Line) {
        let mac = hex::encode(self.mac(line.n, line.h.as_bytes()));
        debug_assert!(line.text.ends_with("\"}\n"), "a built line");
        line.text.truncate(line.text.len() - 2);
        line.text
            .push_str(&format!(",\"s\":\"{}:{mac}\"}}\n", self.epoch));
    }
}

fn mac_with(keyed: &HmacSha256, n: u64, epoch: u64, h_hex: &[u8]) -> [u8; 32] {
    let h = unhex32(h_hex);
    let mut m = keyed.clone();
    m.update(&n.to_be_bytes());
    m.update(&epoch.to_be_bytes());
    m.update(&h);
    m.finalize().into_bytes().into()
}

/// The members of a family's first line (`seal_started` / `seal_rotated`).
pub fn announcement(key_id: &str, epochs: &Epochs) -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("key_id", key_id.into()),
        ("epoch", epochs.first.into()),
        ("epoch_secs", (epochs.length_ms / 1000).into()),
        ("from_ms", epochs.from_ms.into()),
    ]
}

/// A `ts` in the journal's form (`YYYY-MM-DDTHH:MM:SS.mmmZ`) as ms since 1970.
pub fn ts_millis(ts: &[u8]) -> Option<i64> {
    if ts.len() != 24 || ts[23] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        ts[r].iter().try_fold(0i64, |v, &b| {
            b.is_ascii_digit().then(|| v * 10 + i64::from(b - b'0'))
        })
    };
    let seps = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ];
    if seps.iter().any(|&(i, c)| ts[i] != c) {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

/// A line's seal as found in its bytes: the epoch and the 64 hex digits of the MAC.
#[derive(Debug, Clone, Copy)]
pub(super) struct Found<'a> {
    pub epoch: u64,
    pub mac: &'a [u8],
}

/// What a verifier was told about keys: verification keys (`--key`), or the one key the machine
/// holds (the daemon at start).
#[derive(Clone, Default)]
pub struct SealKeys {
    /// Verification keys by id.
    pub k0s: Vec<(String, Key)>,
    /// The current epoch's key and its family's id.
    pub current: Option<(String, SealKey)>,
    /// With verification keys: lines dated after this (ms since 1970) are refused before their
    /// key is evolved, so one line dated centuries ahead cannot make verification take hours.
    pub not_after_ms: Option<i64>,
}

impl fmt::Debug for SealKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.k0s.iter().map(|(id, _)| id.as_str()).collect();
        write!(
            f,
            "SealKeys {{ k0s: {ids:?}, current: {:?} }}",
            self.current.as_ref().map(|(id, k)| (id, k.epoch))
        )
    }
}

impl SealKeys {
    /// Verification keys given by the owner.
    pub fn verification(k0s: &[Key]) -> SealKeys {
        SealKeys {
            k0s: k0s.iter().map(|k| (key_id(k), *k)).collect(),
            current: None,
            not_after_ms: None,
        }
    }

    /// Refuses lines dated more than a day after `now_ms`, the verifier's clock.
    pub fn dated_up_to(mut self, now_ms: i64) -> SealKeys {
        self.not_after_ms = Some(now_ms.saturating_add(LEEWAY_MS));
        self
    }

    /// Whether anything can be checked.
    fn any(&self) -> bool {
        !self.k0s.is_empty() || self.current.is_some()
    }
}

/// What a verification learned about seals, by range of lines (inclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SealReport {
    /// Whether seals were checked with a verification key.
    pub checked: bool,
    /// Lines before seals began: nothing but the chain vouches for them.
    pub unsealed: Option<(u64, u64)>,
    /// Sealed lines of epochs before the last: checked when `checked`.
    pub sealed: Option<(u64, u64)>,
    /// The last epoch's lines: its key may still be on the machine.
    pub last_epoch: Option<(u64, u64, u64)>,
    /// With the machine's own key: lines of the current epoch whose seals it checked.
    pub current_checked: u64,
}

impl SealReport {
    /// One line per range, for the CLI; without a verification key only the line that says the
    /// seals were not checked (`verify` prints as it did before seals, plus that line).
    pub fn lines(&self) -> Vec<String> {
        if !self.checked {
            return vec![
                "seals were not checked: give the verification key with --key".to_string(),
            ];
        }
        let mut out = Vec::new();
        let range = |(a, b): (u64, u64)| {
            if a == b {
                format!("line {a}")
            } else {
                format!("lines {a}-{b}")
            }
        };
        if let Some(r) = self.unsealed {
            out.push(format!(
                "{}: not sealed (written before seals began; only the chain and anchors vouch for them)",
                range(r)
            ));
        }
        if let Some(r) = self.sealed {
            out.push(if self.checked {
                format!(
                    "{}: sealed and intact (earlier epochs: each key was erased when its epoch ended, so only someone on the machine before then could have written them)",
                    range(r)
                )
            } else {
                format!("{}: sealed, seals not checked (no --key)", range(r))
            });
        }
        if let Some((e, a, b)) = self.last_epoch {
            out.push(format!(
                "{}: sealed in epoch {e}, the last one: its key may still be on the machine, so whoever holds the machine could have written them",
                range((a, b))
            ));
        }
        out
    }
}

/// A family of keys the checker follows.
struct Family {
    id: String,
    epochs: Epochs,
    /// The key of `key.epoch`, when the checker holds this family's keys.
    key: Option<(SealKey, HmacSha256)>,
}

/// Follows seals along the chain; run by the verifier on each line after its hash matched.
pub(super) struct SealCheck {
    keys: SealKeys,
    family: Option<Family>,
    /// The first sealed line, once seals began.
    first_sealed: Option<u64>,
    /// The last seal's epoch and the first line sealed in it.
    last: Option<(u64, u64)>,
    current_checked: u64,
}

impl SealCheck {
    pub(super) fn new(keys: SealKeys) -> SealCheck {
        SealCheck {
            keys,
            family: None,
            first_sealed: None,
            last: None,
            current_checked: 0,
        }
    }

    /// Checks line `n`'s seal (or its absence). `ts` and `ev` are the bytes after `"ts":"`;
    /// `body` is the whole line, UTF-8 already checked.
    pub(super) fn line(
        &mut self,
        n: u64,
        body: &[u8],
        after_ts: &[u8],
        h: &[u8],
        seal: Option<Found<'_>>,
    ) -> Result<(), Problem> {
        let announces = is_announcement(after_ts);
        let Some(seal) = seal else {
            return match (self.first_sealed, announces) {
                (Some(first), _) => Err(Problem::Unsealed { line: n, first }),
                (None, true) => Err(Problem::Unsealed { line: n, first: n }),
                (None, false) => Ok(()),
            };
        };
        if announces {
            self.start_family(n, body, seal.epoch)?;
        }
        if let Some((last, _)) = self.last {
            if seal.epoch < last {
                return Err(Problem::WrongEpoch {
                    line: n,
                    found: seal.epoch,
                    expected: last,
                });
            }
        }
        if self.keys.any() {
            self.check_mac(n, after_ts, h, seal)?;
        }
        self.first_sealed.get_or_insert(n);
        match self.last {
            Some((e, _)) if e == seal.epoch => {}
            _ => self.last = Some((seal.epoch, n)),
        }
        Ok(())
    }

    /// A `seal_started`/`seal_rotated` line: the keys from here on are its family's.
    fn start_family(&mut self, n: u64, body: &[u8], epoch: u64) -> Result<(), Problem> {
        let malformed = |why: &str| Problem::Malformed {
            line: n,
            why: why.to_string(),
        };
        let v: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| malformed("not JSON"))?;
        let id = v["key_id"].as_str().ok_or_else(|| malformed("no key_id"))?;
        let first = v["epoch"].as_u64().ok_or_else(|| malformed("no epoch"))?;
        // In ms it must fit an i64: the line is unchecked until its key is known, so whoever
        // holds the machine can write any number here.
        let length_ms = v["epoch_secs"]
            .as_i64()
            .filter(|s| *s >= 60)
            .and_then(|s| s.checked_mul(1000))
            .ok_or_else(|| malformed("no epoch_secs of at least 60"))?;
        let from_ms = v["from_ms"]
            .as_i64()
            .ok_or_else(|| malformed("no from_ms"))?;
        if epoch != first {
            return Err(Problem::WrongEpoch {
                line: n,
                found: epoch,
                expected: first,
            });
        }
        if let Some((last, _)) = self.last {
            if first <= last {
                return Err(Problem::WrongEpoch {
                    line: n,
                    found: first,
                    expected: last + 1,
                });
            }
        }
        let epochs = Epochs {
            first,
            from_ms,
            length_ms,
        };
        let key = if let Some((_, k0)) = self.keys.k0s.iter().find(|(k, _)| k == id) {
            let k = SealKey::first(k0, first);
            let m = hmac(&k.key);
            Some((k, m))
        } else if !self.keys.k0s.is_empty() {
            return Err(Problem::UnknownKey {
                line: n,
                key_id: id.to_string(),
            });
        } else {
            None
        };
        self.family = Some(Family {
            id: id.to_string(),
            epochs,
            key,
        });
        Ok(())
    }

    fn check_mac(
        &mut self,
        n: u64,
        after_ts: &[u8],
        h: &[u8],
        seal: Found<'_>,
    ) -> Result<(), Problem> {
        let Some(family) = self.family.as_mut() else {
            return Err(Problem::Unannounced { line: n });
        };
        let ts = after_ts
            .get(..24)
            .and_then(ts_millis)
            .ok_or(Problem::Malformed {
                line: n,
                why: "ts is not YYYY-MM-DDTHH:MM:SS.mmmZ".to_string(),
            })?;
        let expected = family.epochs.at(ts);
        if seal.epoch != expected {
            return Err(Problem::WrongEpoch {
                line: n,
                found: seal.epoch,
                expected,
            });
        }
        if !self.keys.k0s.is_empty() {
            if self.keys.not_after_ms.is_some_and(|limit| ts > limit) {
                return Err(Problem::Future { line: n });
            }
            let Some((key, keyed)) = family.key.as_mut() else {
                return Ok(());
            };
            while key.epoch < seal.epoch {
                *key = key.next();
                *keyed = hmac(&key.key);
            }
            return mac_matches(keyed, n, seal, h);
        }
        // The machine's own key: only its epoch of its family can be checked.
        if let Some((id, key)) = &self.keys.current {
            if *id == family.id {
                if seal.epoch > key.epoch {
                    return Err(Problem::WrongEpoch {
                        line: n,
                        found: seal.epoch,
                        expected: key.epoch,
                    });
                }
                if seal.epoch == key.epoch {
                    mac_matches(&hmac(&key.key), n, seal, h)?;
                    self.current_checked += 1;
                }
            }
        }
        Ok(())
    }

    /// After the last line (`lines` of them).
    pub(super) fn finish(self, lines: u64) -> Result<SealReport, Problem> {
        if !self.keys.k0s.is_empty() && self.first_sealed.is_none() {
            return Err(Problem::NoSeals { lines });
        }
        let unsealed = match self.first_sealed {
            None if lines > 0 => Some((1, lines)),
            Some(f) if f > 1 => Some((1, f - 1)),
            _ => None,
        };
        let (sealed, last_epoch) = match (self.first_sealed, self.last) {
            (Some(f), Some((e, from))) => {
                ((from > f).then_some((f, from - 1)), Some((e, from, lines)))
            }
            _ => (None, None),
        };
        Ok(SealReport {
            checked: !self.keys.k0s.is_empty(),
            unsealed,
            sealed,
            last_epoch,
            current_checked: self.current_checked,
        })
    }
}

fn mac_matches(keyed: &HmacSha256, n: u64, seal: Found<'_>, h: &[u8]) -> Result<(), Problem> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let want = mac_with(keyed, n, seal.epoch, h);
    // Compared as hex, as the line holds it, without allocating: verification is a loop over
    // millions of lines. Not constant time: the verifier holds both the key and the file.
    let mut hex = [0u8; 64];
    for (pair, d) in hex.chunks_exact_mut(2).zip(want.iter()) {
        pair[0] = HEX[usize::from(d >> 4)];
        pair[1] = HEX[usize::from(d & 15)];
    }
    if hex[..] == *seal.mac {
        Ok(())
    } else {
        Err(Problem::BadSeal { line: n })
    }
}

/// 64 lowercase hex digits (shape-checked by the caller) as 32 bytes; anything else gives some
/// bytes that simply fail to match.
fn unhex32(hex: &[u8]) -> [u8; 32] {
    let nibble = |c: u8| (c & 0x0f) + 9 * (c >> 6);
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = (nibble(pair[0]) << 4) | (nibble(pair[1]) & 0x0f);
    }
    out
}

/// Whether the bytes after `"ts":"` (24 of ts, then `","ev":"`) name a family's first line.
fn is_announcement(after_ts: &[u8]) -> bool {
    let Some(rest) = after_ts.get(24..) else {
        return false;
    };
    let Some(ev) = rest.strip_prefix(b"\",\"ev\":\"") else {
        return false;
    };
    [SEAL_STARTED, SEAL_ROTATED]
        .iter()
        .any(|name| ev.starts_with(name.as_bytes()) && ev.get(name.len()) == Some(&b'"'))
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
