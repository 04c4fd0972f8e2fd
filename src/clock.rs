//! The daemon's notion of "now", injected so that every time rule can be tested without sleeping.

use chrono::{DateTime, Utc};

/// A source of the current time. The daemon reads time only through this trait.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still until moved; for tests.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new(at))
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The environment variable naming an offset file for [`OffsetClock`].
pub const OFFSET_FILE_ENV: &str = "CONSENTD_TEST_CLOCK_FILE";

/// The system clock shifted by a number of seconds read from a file on every call, so a test can
/// move a running daemon's time forward (a card past its ttl, a press after it) without waiting.
/// Chosen by setting `CONSENTD_TEST_CLOCK_FILE`; a missing or unreadable file means no shift.
/// Whoever can set the daemon's environment controls the daemon anyway, so this gives nothing new.
#[derive(Debug, Clone)]
pub struct OffsetClock {
    pub path: std::path::PathBuf,
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        let seconds = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .unwrap_or(0);
        Utc::now() + chrono::Duration::seconds(seconds)
    }
}

/// The daemon's clock: the system clock, or an [`OffsetClock`] when the environment asks for one.
pub fn from_env() -> std::sync::Arc<dyn Clock> {
    match std::env::var_os(OFFSET_FILE_ENV) {
        Some(path) => {
            tracing::warn!(path = ?path, "time is shifted by a test clock file");
            std::sync::Arc::new(OffsetClock { path: path.into() })
        }
        None => std::sync::Arc::new(SystemClock),
    }
}
