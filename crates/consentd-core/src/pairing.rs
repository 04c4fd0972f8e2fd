//! One-time pairing codes: making a code for `consentd pair`, the hash that is stored in its
//! place, and the pure decision on a `/start CODE` sent to the bot (with the next pairing state).
//!
//! A code lives `CODE_TTL`, works once, and `MAX_FAILURES` failed attempts in a row lock pairing
//! for `LOCK_FOR`. The caller stores the returned state durably together with the update that
//! caused it, and binds the owner on `Paired`.

use chrono::{DateTime, TimeDelta, Utc};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How long a code can be used after `consentd pair` made it.
pub const CODE_TTL: TimeDelta = TimeDelta::minutes(10);
/// Failed attempts in a row that lock pairing.
pub(crate) const MAX_FAILURES: u32 = 5;
/// How long pairing stays locked after `MAX_FAILURES`.
pub(crate) const LOCK_FOR: TimeDelta = TimeDelta::hours(1);
/// Characters in a code.
pub(crate) const CODE_LEN: usize = 10;

/// Crockford's base32 alphabet: digits and uppercase letters without I, L, O and U, which are
/// easily misread (or, for U, make words). 32 symbols, so each character carries exactly 5 bits
/// and 10 characters carry 50 bits.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A new pairing code: 10 characters from Crockford's base32 alphabet, 50 random bits.
///
/// Only its hash ([`code_hash`]) is stored; the code itself is shown once to whoever ran
/// `consentd pair`.
pub fn new_code() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; CODE_LEN];
    getrandom::fill(&mut bytes)?;
    // 32 divides 256, so the low 5 bits of a uniform byte are uniform: no modulo bias.
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[usize::from(b & 0x1f)] as char)
        .collect())
}

/// SHA-256 (lowercase hex) of the normalized code: surrounding whitespace trimmed, ASCII letters
/// uppercased. ASCII-only uppercasing keeps non-ASCII input from folding onto the alphabet (Unicode
/// uppercases 'ı' to 'I' and 'ſ' to 'S').
///
/// The hash is unsalted: a stolen state file would let 50 bits be searched, which takes longer
/// than the code's ten minutes of life; it keeps the code out of the file, not out of reach
/// forever.
pub fn code_hash(code: &str) -> String {
    let normalized = code.trim().to_ascii_uppercase();
    hex::encode(Sha256::digest(normalized.as_bytes()))
}

/// The pairing state the daemon keeps durably.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingState {
    /// Hash of the current code; `None` when no code was made.
    pub code_hash: Option<String>,
    /// End of the current code's life.
    pub expires_at: Option<DateTime<Utc>>,
    /// The current code was already used to pair.
    pub used: bool,
    /// Failed attempts in a row since the last success or lock.
    pub failures: u32,
    /// Pairing refuses every attempt until then.
    pub locked_until: Option<DateTime<Utc>>,
}

impl PairingState {
    #[cfg(test)]
    /// The state after `consentd pair` made a code: the new code's hash and expiry, not used.
    /// Failures and a running lock are kept, so making codes cannot be used to reset the count
    /// or lift the lock early.
    pub(crate) fn with_new_code(&self, code: &str, now: DateTime<Utc>) -> PairingState {
        PairingState {
            code_hash: Some(code_hash(code)),
            expires_at: Some(now + CODE_TTL),
            used: false,
            failures: self.failures,
            locked_until: self.locked_until,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairVerdict {
    /// The code matched: the sender becomes the owner.
    Paired,
    /// Wrong code; `failures` is the count reached by this attempt (`MAX_FAILURES` when this
    /// attempt locked pairing).
    WrongCode { failures: u32 },
    /// Pairing is locked until then; the attempt was not looked at.
    Locked { until: DateTime<Utc> },
    /// The code's life is over.
    Expired,
    /// The code was already used.
    Used,
    /// No code was made.
    NoCode,
}

/// Decides a `/start CODE` attempt made at `now` and returns the verdict with the next state.
///
/// Order: a running lock refuses everything and changes nothing; then no code, a used code and an
/// expired code are refused, each counted as a failure (otherwise they would be free guesses at
/// whether a code exists); then the code is compared in constant time. A success resets the
/// failures and marks the code used; a failure counts, and the `MAX_FAILURES`th in a row locks
/// pairing for `LOCK_FOR` and starts the count again.
pub fn decide(
    state: &PairingState,
    given: &str,
    now: DateTime<Utc>,
) -> (PairVerdict, PairingState) {
    if let Some(until) = state.locked_until {
        if now < until {
            return (PairVerdict::Locked { until }, state.clone());
        }
    }
    let mut next = state.clone();
    // A lock that has run out is gone.
    next.locked_until = None;

    let refusal = match (&state.code_hash, state.expires_at) {
        (None, _) => Some(PairVerdict::NoCode),
        _ if state.used => Some(PairVerdict::Used),
        // A code without an expiry is treated as expired: fail closed.
        (Some(_), None) => Some(PairVerdict::Expired),
        (Some(_), Some(end)) if now >= end => Some(PairVerdict::Expired),
        _ => None,
    };

    let verdict = match refusal {
        Some(v) => v,
        None => {
            let stored = state.code_hash.as_deref().unwrap_or_default();
            let given = code_hash(given);
            // Both are 64 hex characters; comparing the hashes in constant time leaks nothing
            // about the code.
            if bool::from(stored.as_bytes().ct_eq(given.as_bytes())) {
                next.used = true;
                next.failures = 0;
                return (PairVerdict::Paired, next);
            }
            PairVerdict::WrongCode { failures: 0 }
        }
    };

    let failures = state.failures.saturating_add(1);
    if failures >= MAX_FAILURES {
        next.locked_until = Some(now + LOCK_FOR);
        next.failures = 0;
    } else {
        next.failures = failures;
    }
    let verdict = match verdict {
        PairVerdict::WrongCode { .. } => PairVerdict::WrongCode { failures },
        v => v,
    };
    (verdict, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "7K3M9QXR2D";

    /// Label, state before, code sent, time, verdict, state after.
    type Case<'a> = (
        &'a str,
        PairingState,
        &'a str,
        DateTime<Utc>,
        PairVerdict,
        PairingState,
    );

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn fresh() -> PairingState {
        PairingState::default().with_new_code(CODE, t0())
    }

    #[test]
    fn constants() {
        assert_eq!(CODE_TTL, TimeDelta::minutes(10));
        assert_eq!(MAX_FAILURES, 5);
        assert_eq!(LOCK_FOR, TimeDelta::hours(1));
    }

    #[test]
    fn new_code_shape() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let code = new_code().unwrap();
            assert_eq!(code.len(), CODE_LEN);
            assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
            assert!(!code.contains(['I', 'L', 'O', 'U']), "{code}");
            seen.insert(code);
        }
        assert_eq!(seen.len(), 200);
    }

    #[test]
    fn alphabet_is_crockford() {
        let set: std::collections::HashSet<u8> = ALPHABET.iter().copied().collect();
        assert_eq!(set.len(), 32);
        // 10 characters of 5 bits each.
        assert!(CODE_LEN as f64 * (ALPHABET.len() as f64).log2() >= 50.0);
    }

    #[test]
    fn code_hash_normalizes() {
        let want = hex::encode(Sha256::digest(CODE.as_bytes()));
        assert_eq!(code_hash(CODE), want);
        assert_eq!(code_hash("7k3m9qxr2d"), want);
        assert_eq!(code_hash("  7k3M9qXr2D \n"), want);
        assert_eq!(code_hash("\t7K3M9QXR2D"), want);
        assert_ne!(code_hash("7K3M9QXR2"), want);
        assert_ne!(code_hash("7K3M 9QXR2D"), want);
        assert_eq!(code_hash(CODE).len(), 64);
    }

    #[test]
    fn with_new_code_keeps_failures_and_lock() {
        let locked = PairingState {
            failures: 2,
            locked_until: Some(t0() + LOCK_FOR),
            used: true,
            ..PairingState::default()
        };
        let s = locked.with_new_code(CODE, t0());
        assert_eq!(s.code_hash, Some(code_hash(CODE)));
        assert_eq!(s.expires_at, Some(t0() + CODE_TTL));
        assert!(!s.used);
        assert_eq!(s.failures, 2);
        assert_eq!(s.locked_until, Some(t0() + LOCK_FOR));
    }

    #[test]
    fn every_branch() {
        let lock_end = t0() + LOCK_FOR;
        let locked = PairingState {
            locked_until: Some(lock_end),
            ..fresh()
        };
        let with = |f: &dyn Fn(&mut PairingState)| {
            let mut s = fresh();
            f(&mut s);
            s
        };
        let after = |s: &PairingState, f: &dyn Fn(&mut PairingState)| {
            let mut s = s.clone();
            f(&mut s);
            s
        };
        let at = |secs: i64| t0() + TimeDelta::seconds(secs);

        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("right code", fresh(), CODE, at(1),
                PairVerdict::Paired, after(&fresh(), &|s| s.used = true)),
            ("right code, lowercase and spaces", fresh(), "  7k3m9qxr2d\n", at(1),
                PairVerdict::Paired, after(&fresh(), &|s| s.used = true)),
            ("right code after failures resets them", with(&|s| s.failures = 4), CODE, at(1),
                PairVerdict::Paired, after(&fresh(), &|s| s.used = true)),
            ("right code one second before expiry", fresh(), CODE, t0() + CODE_TTL - TimeDelta::seconds(1),
                PairVerdict::Paired, after(&fresh(), &|s| s.used = true)),
            ("wrong code", fresh(), "AAAAAAAAAA", at(1),
                PairVerdict::WrongCode { failures: 1 }, with(&|s| s.failures = 1)),
            ("empty code", fresh(), "", at(1),
                PairVerdict::WrongCode { failures: 1 }, with(&|s| s.failures = 1)),
            ("a prefix of the code", fresh(), "7K3M9", at(1),
                PairVerdict::WrongCode { failures: 1 }, with(&|s| s.failures = 1)),
            ("4th wrong code", with(&|s| s.failures = 3), "AAAAAAAAAA", at(1),
                PairVerdict::WrongCode { failures: 4 }, with(&|s| s.failures = 4)),
            ("5th wrong code locks", with(&|s| s.failures = 4), "AAAAAAAAAA", at(1),
                PairVerdict::WrongCode { failures: 5 },
                with(&|s| { s.failures = 0; s.locked_until = Some(at(1) + LOCK_FOR) })),
            ("locked: the right code is refused", locked.clone(), CODE, at(1),
                PairVerdict::Locked { until: lock_end }, locked.clone()),
            ("locked: a wrong code changes nothing", locked.clone(), "AAAAAAAAAA", at(2),
                PairVerdict::Locked { until: lock_end }, locked.clone()),
            ("locked one second before the end", locked.clone(), CODE, lock_end - TimeDelta::seconds(1),
                PairVerdict::Locked { until: lock_end }, locked.clone()),
            ("no code", PairingState::default(), CODE, at(1),
                PairVerdict::NoCode, PairingState { failures: 1, ..PairingState::default() }),
            ("no code, 5th failure locks", PairingState { failures: 4, ..PairingState::default() }, CODE, at(1),
                PairVerdict::NoCode,
                PairingState { locked_until: Some(at(1) + LOCK_FOR), ..PairingState::default() }),
            ("used code", with(&|s| s.used = true), CODE, at(1),
                PairVerdict::Used, with(&|s| { s.used = true; s.failures = 1 })),
            ("expired exactly at expires_at", fresh(), CODE, t0() + CODE_TTL,
                PairVerdict::Expired, with(&|s| s.failures = 1)),
            ("expired a second after", fresh(), CODE, t0() + CODE_TTL + TimeDelta::seconds(1),
                PairVerdict::Expired, with(&|s| s.failures = 1)),
            ("code without expiry counts as expired", with(&|s| s.expires_at = None), CODE, at(1),
                PairVerdict::Expired, with(&|s| { s.expires_at = None; s.failures = 1 })),
            ("expired, 5th failure locks", with(&|s| s.failures = 4), CODE, t0() + CODE_TTL,
                PairVerdict::Expired,
                with(&|s| { s.failures = 0; s.locked_until = Some(t0() + CODE_TTL + LOCK_FOR) })),
        ];

        for (label, state, given, now, want, want_next) in &cases {
            let (verdict, next) = decide(state, given, *now);
            assert_eq!(&verdict, want, "case: {label}");
            assert_eq!(&next, want_next, "case: {label} (next state)");
        }
    }

    #[test]
    fn fifth_wrong_code_locks_and_lock_ends_after_exactly_an_hour() {
        // A code made later in the hour, so it is still alive when the lock ends.
        let mut s = PairingState::default().with_new_code(CODE, t0());
        let now = t0() + TimeDelta::seconds(5);
        for i in 1..MAX_FAILURES {
            let (v, next) = decide(&s, "WRONGWRONG", now);
            assert_eq!(v, PairVerdict::WrongCode { failures: i });
            assert_eq!(next.locked_until, None);
            s = next;
        }
        let (v, locked) = decide(&s, "WRONGWRONG", now);
        assert_eq!(
            v,
            PairVerdict::WrongCode {
                failures: MAX_FAILURES
            }
        );
        let until = now + LOCK_FOR;
        assert_eq!(locked.locked_until, Some(until));
        assert_eq!(locked.failures, 0);

        // Even the right code is refused while locked, up to the last instant.
        let just_before = until - TimeDelta::nanoseconds(1);
        assert_eq!(
            decide(&locked, CODE, just_before),
            (PairVerdict::Locked { until }, locked.clone())
        );

        // At exactly an hour the lock is over; with a fresh code (the old one has expired) the
        // right code pairs.
        let renewed = locked.with_new_code("NEWCODE123", until - TimeDelta::minutes(1));
        let (v, next) = decide(&renewed, "newcode123", until);
        assert_eq!(v, PairVerdict::Paired);
        assert_eq!(next.locked_until, None);
        assert_eq!(next.failures, 0);
        assert!(next.used);

        // And after the lock the count starts from zero.
        let (v, next) = decide(&renewed, "WRONGWRONG", until);
        assert_eq!(v, PairVerdict::WrongCode { failures: 1 });
        assert_eq!(next.locked_until, None);
    }

    #[test]
    fn a_code_works_once() {
        let (v, s) = decide(&fresh(), CODE, t0());
        assert_eq!(v, PairVerdict::Paired);
        let (v, s) = decide(&s, CODE, t0() + TimeDelta::seconds(1));
        assert_eq!(v, PairVerdict::Used);
        assert_eq!(s.failures, 1);
        let (v, _) = decide(&s, " 7k3m9qxr2d ", t0() + TimeDelta::seconds(2));
        assert_eq!(v, PairVerdict::Used);
    }

    #[test]
    fn a_new_code_pairs_and_the_old_one_does_not() {
        let old = "AAAAABBBBB";
        let s = PairingState::default().with_new_code(old, t0());
        let s = s.with_new_code(CODE, t0() + TimeDelta::minutes(1));
        let (v, _) = decide(&s, old, t0() + TimeDelta::minutes(2));
        assert_eq!(v, PairVerdict::WrongCode { failures: 1 });
        let (v, _) = decide(&s, CODE, t0() + TimeDelta::minutes(2));
        assert_eq!(v, PairVerdict::Paired);
    }

    #[test]
    fn a_made_code_pairs() {
        let code = new_code().unwrap();
        let s = PairingState::default().with_new_code(&code, t0());
        assert_eq!(
            decide(&s, &code.to_lowercase(), t0()).0,
            PairVerdict::Paired
        );
    }
}
