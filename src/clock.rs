//! The daemon's notion of "now", injected so that every time rule can be tested without sleeping.
//!
//! Two clocks are read. The wall clock dates things for the owner and the journal, and can be
//! stepped (by NTP, by an administrator, by an attacker with the right capability). The
//! monotonic clock (`CLOCK_BOOTTIME`) never steps and counts time asleep, so a deadline measured
//! on it cannot be stretched by moving the wall clock back; it means something only within one
//! boot of the machine, so each reading names its boot.

use std::sync::OnceLock;
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
}

/// The real clocks.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn monotonic(&self) -> Monotonic {
        Monotonic {
            boot: boot_id().to_owned(),
            since_boot: since_boot(),
        }
    }
}

/// The kernel's boot id, read once. Where it cannot be read, an id made up for this process:
/// readings then compare only within this run of the daemon, which is still sound.
fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|id| id.trim().to_owned())
            .ok()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| {
                let mut nonce = [0u8; 16];
                let _ = getrandom::fill(&mut nonce);
                format!("process-{}", hex::encode(nonce))
            })
    })
}

/// `CLOCK_BOOTTIME`: monotonic, and it goes on while the machine sleeps, so a card's fifteen
/// minutes are fifteen minutes of the owner's time even across a suspend.
fn since_boot() -> Duration {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME) {
        Ok(spec) => Duration::new(
            u64::try_from(spec.tv_sec()).unwrap_or(0),
            u32::try_from(spec.tv_nsec()).unwrap_or(0),
        ),
        // Linux always has it; were it missing, a reading of zero never makes a deadline pass
        // by this clock, and the wall clock still decides.
        Err(_) => Duration::ZERO,
    }
}

/// A clock that stands still until moved; for tests. Both clocks move together unless the wall
/// clock alone is stepped.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<(DateTime<Utc>, Duration)>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new((at, Duration::from_secs(1_000))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (DateTime<Utc>, Duration)> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Time passes: both clocks move on.
    pub fn advance(&self, by: chrono::Duration) {
        let mut clocks = self.lock();
        clocks.0 += by;
        clocks.1 += by.to_std().unwrap_or_default();
    }

    /// The wall clock is stepped (forward or back); the monotonic clock is not.
    pub fn step_wall(&self, by: chrono::Duration) {
        self.lock().0 += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.lock().0
    }

    fn monotonic(&self) -> Monotonic {
        Monotonic {
            boot: "manual".to_owned(),
            since_boot: self.lock().1,
        }
    }
}

/// The environment variable naming an offset file for [`OffsetClock`].
#[cfg(feature = "test-hooks")]
pub const OFFSET_FILE_ENV: &str = "CONSENTD_TEST_CLOCK_FILE";

/// The system clocks shifted by offsets read from a file on every call, so a test can move a
/// running daemon's time (a card past its ttl, a press after it, the wall clock stepped back)
/// without waiting. The file holds the wall clock's offset in seconds and, optionally after a
/// space, the monotonic clock's (never below zero in effect); a missing or unreadable file means
/// no shift. Chosen by setting `CONSENTD_TEST_CLOCK_FILE`, and only in a build with the
/// `test-hooks` feature, which tests and benches turn on and a release never has.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone)]
pub struct OffsetClock {
    pub path: std::path::PathBuf,
}

#[cfg(feature = "test-hooks")]
impl OffsetClock {
    fn offsets(&self) -> (i64, i64) {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let mut numbers = text.split_whitespace().map(|n| n.parse::<i64>().ok());
        let wall = numbers.next().flatten().unwrap_or(0);
        let mono = numbers.next().flatten().unwrap_or(0);
        (wall, mono)
    }
}

#[cfg(feature = "test-hooks")]
impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::seconds(self.offsets().0)
    }

    fn monotonic(&self) -> Monotonic {
        let mono = self.offsets().1;
        let real = since_boot();
        let since_boot = if mono >= 0 {
            real + Duration::from_secs(mono.unsigned_abs())
        } else {
            real.saturating_sub(Duration::from_secs(mono.unsigned_abs()))
        };
        Monotonic {
            boot: boot_id().to_owned(),
            since_boot,
        }
    }
}

/// The daemon's clock: the system clock, or (in a `test-hooks` build) an [`OffsetClock`] when the
/// environment asks for one.
#[cfg(feature = "test-hooks")]
pub fn from_env() -> std::sync::Arc<dyn Clock> {
    match std::env::var_os(OFFSET_FILE_ENV) {
        Some(path) => {
            tracing::warn!(path = ?path, "time is shifted by a test clock file");
            std::sync::Arc::new(OffsetClock { path: path.into() })
        }
        None => std::sync::Arc::new(SystemClock),
    }
}

/// The daemon's clock: in a build without the `test-hooks` feature, always the system clock.
#[cfg(not(feature = "test-hooks"))]
pub fn from_env() -> std::sync::Arc<dyn Clock> {
    std::sync::Arc::new(SystemClock)
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
    fn the_system_clock_never_goes_back() {
        let first = SystemClock.monotonic();
        let second = SystemClock.monotonic();
        assert!(second.since(&first).is_some());
        assert!(!first.boot.is_empty());
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

    #[test]
    fn the_offset_file_moves_each_clock() {
        let dir = tempfile::tempdir().unwrap();
        let clock = OffsetClock {
            path: dir.path().join("clock"),
        };
        let (wall, mono) = (Utc::now(), SystemClock.monotonic());
        std::fs::write(&clock.path, "-7200 62").unwrap();
        let shifted_wall = clock.now() - wall;
        assert!((-7201..=-7199).contains(&shifted_wall.num_seconds()));
        let shifted_mono = clock.monotonic().since(&mono).unwrap();
        assert!(
            (62..=64).contains(&shifted_mono.as_secs()),
            "{shifted_mono:?}"
        );
        std::fs::write(&clock.path, "30").unwrap();
        assert!(clock.monotonic().since(&mono).unwrap().as_secs() < 2);
    }
}
