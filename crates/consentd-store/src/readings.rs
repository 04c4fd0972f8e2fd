//! How the store keeps a reading of the monotonic clock: two columns, the kernel's boot id and
//! the milliseconds since that boot (`shown_boot`/`shown_since_boot_ms` for a card's opening,
//! `asked_boot`/`asked_since_boot_ms` for an ask).

use std::time::Duration;

use consentd_core::clock::Monotonic;

/// A monotonic reading as its two columns hold it (the boot, milliseconds since it); `None`
/// unless both are there.
pub(crate) fn stored_monotonic(boot: Option<String>, ms: Option<i64>) -> Option<Monotonic> {
    Some(Monotonic {
        boot: boot?,
        since_boot: Duration::from_millis(u64::try_from(ms?).unwrap_or(0)),
    })
}

/// The milliseconds column of a monotonic reading: rounded down, so a deadline measured from
/// it can only come early, never late.
pub(crate) fn monotonic_ms(monotonic: &Monotonic) -> i64 {
    i64::try_from(monotonic.since_boot.as_millis()).unwrap_or(i64::MAX)
}
