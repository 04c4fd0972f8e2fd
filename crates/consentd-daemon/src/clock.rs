//! The real clocks, which ask the kernel, and (in a `test-hooks` build) a clock a test can shift.
//! The readings and the trait are `consentd_core::clock`.

use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Utc};

use consentd_core::clock::{Clock, Monotonic};

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
        self.both().0
    }

    fn monotonic(&self) -> Monotonic {
        self.both().1
    }

    /// One read of the offsets for both clocks: the test's file may be replaced between two.
    fn both(&self) -> (DateTime<Utc>, Monotonic) {
        let (wall, mono) = self.offsets();
        let real = since_boot();
        let since_boot = if mono >= 0 {
            real + Duration::from_secs(mono.unsigned_abs())
        } else {
            real.saturating_sub(Duration::from_secs(mono.unsigned_abs()))
        };
        let monotonic = Monotonic {
            boot: boot_id().to_owned(),
            since_boot,
        };
        (Utc::now() + chrono::Duration::seconds(wall), monotonic)
    }
}

/// The environment variable that turns off the sender's pacing, for [`unpaced`].
#[cfg(feature = "test-hooks")]
pub const UNPACED_ENV: &str = "CONSENTD_TEST_UNPACED";

/// Whether the sender sends without its pace of about one message a second: only in a
/// `test-hooks` build whose environment sets `CONSENTD_TEST_UNPACED`, so that a test replaying a
/// week of simulated time does not wait a real second for each of its messages.
#[cfg(feature = "test-hooks")]
pub(crate) fn unpaced() -> bool {
    std::env::var_os(UNPACED_ENV).is_some()
}

/// In a build without the `test-hooks` feature the sender is always paced.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) fn unpaced() -> bool {
    false
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

    #[test]
    fn the_system_clock_never_goes_back() {
        let first = SystemClock.monotonic();
        let second = SystemClock.monotonic();
        assert!(second.since(&first).is_some());
        assert!(!first.boot.is_empty());
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

    /// A test steps both clocks at once by replacing the file; a reading of both must never pair
    /// one step's wall clock with another's monotonic clock, as the expiry sweep once did.
    #[test]
    fn both_clocks_are_read_from_one_step() {
        let dir = tempfile::tempdir().unwrap();
        let clock = OffsetClock {
            path: dir.path().join("clock"),
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stepper = {
            let (dir, stop) = (dir.path().to_owned(), stop.clone());
            std::thread::spawn(move || {
                let steps = ["0 0", "-7200 3600"];
                let mut n = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let temp = dir.join("clock.next");
                    std::fs::write(&temp, steps[n % 2]).unwrap();
                    std::fs::rename(&temp, dir.join("clock")).unwrap();
                    n += 1;
                }
            })
        };
        let start = SystemClock.monotonic();
        for _ in 0..2_000 {
            let (wall, monotonic) = clock.both();
            let stepped_wall = (wall - Utc::now()).num_seconds() < -3_600;
            let stepped_monotonic = monotonic.since(&start).unwrap().as_secs() >= 3_600;
            assert_eq!(stepped_wall, stepped_monotonic, "a reading of two steps");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        stepper.join().unwrap();
    }
}
