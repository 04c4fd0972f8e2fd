//! The daemon's notion of "now", injected so that every time rule can be tested without sleeping.
//!
//! This crate has the readings and the trait; the real clocks, which ask the kernel, are the
//! daemon's (`consentd::clock::SystemClock`).
//!
//! Two clocks are read. The wall clock dates things for the owner and the journal, and can be
//! stepped (by NTP, by an administrator, by an attacker with the right capability). The
//! monotonic clock (`CLOCK_BOOTTIME`) never steps and counts time asleep, so a deadline measured
//! on it cannot be stretched by moving the wall clock back; it means something only within one
//! boot of the machine, so each reading names its boot.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// A reading of the monotonic clock: the boot it belongs to and the time since that boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Monotonic {
    /// The kernel's boot id; two readings compare only when it is the same.
    pub boot: String,
    pub since_boot: Duration,
}

impl Monotonic {
    /// The time from `earlier` to `self`, when both come from the same boot and `earlier` is not
    /// later (`None` otherwise: the two cannot be compared).
    pub fn since(&self, earlier: &Monotonic) -> Option<Duration> {
        (self.boot == earlier.boot)
            .then(|| self.since_boot.checked_sub(earlier.since_boot))
            .flatten()
    }
}

/// A source of the current time. The daemon reads time only through this trait.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
    fn monotonic(&self) -> Monotonic;

    /// Both clocks at one instant. A clock whose readings come from one source (a test's
    /// offsets) overrides this, so that a step landing between two separate reads cannot pair
    /// the old wall clock with the new monotonic one.
    fn both(&self) -> (DateTime<Utc>, Monotonic) {
        (self.now(), self.monotonic())
    }
}

#[cfg(test)]
/// A clock that stands still until moved; for tests. Both clocks move together unless the wall
/// clock alone is stepped.
#[derive(Debug)]
pub(crate) struct ManualClock(std::sync::Mutex<(DateTime<Utc>, Duration)>);

#[cfg(test)]
impl ManualClock {
    pub(crate) fn new(at: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new((at, Duration::from_secs(1_000))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (DateTime<Utc>, Duration)> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Time passes: both clocks move on.
    pub(crate) fn advance(&self, by: chrono::Duration) {
        let mut clocks = self.lock();
        clocks.0 += by;
        clocks.1 += by.to_std().unwrap_or_default();
    }

    /// The wall clock is stepped (forward or back); the monotonic clock is not.
    pub(crate) fn step_wall(&self, by: chrono::Duration) {
        self.lock().0 += by;
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.lock().0
    }

    fn monotonic(&self) -> Monotonic {
        self.both().1
    }

    fn both(&self) -> (DateTime<Utc>, Monotonic) {
        let (wall, since_boot) = *self.lock();
        let monotonic = Monotonic {
            boot: "manual".to_owned(),
            since_boot,
        };
        (wall, monotonic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn readings_compare_only_within_one_boot() {
        let at = |boot: &str, secs| Monotonic {
            boot: boot.to_owned(),
            since_boot: Duration::from_secs(secs),
        };
        assert_eq!(
            at("a", 70).since(&at("a", 10)),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            at("a", 10).since(&at("a", 70)),
            None,
            "earlier than the start"
        );
        assert_eq!(at("b", 70).since(&at("a", 10)), None, "another boot");
    }

    #[test]
    fn a_manual_wall_step_leaves_the_monotonic_clock_alone() {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap());
        let start = clock.monotonic();
        clock.step_wall(chrono::Duration::hours(-2));
        assert_eq!(clock.monotonic(), start);
        clock.advance(chrono::Duration::seconds(62));
        assert_eq!(
            clock.monotonic().since(&start),
            Some(Duration::from_secs(62))
        );
        assert_eq!(
            clock.now(),
            Utc.with_ymd_and_hms(2026, 1, 1, 10, 1, 2).unwrap()
        );
    }
}
