//! Waiting after failures: one doubling rule for every retry the daemon makes — a Telegram call
//! (an outbox row, `getUpdates`), Telegram refusing the bot itself (409, 401) and a failing
//! `accept` on the socket.

use std::time::Duration;

/// The environment variable that shortens [`Backoff::unreachable`] in a test build.
#[cfg(feature = "test-hooks")]
pub(crate) const FAST_RETRY_ENV: &str = "CONSENTD_TEST_FAST_RETRY";

/// A wait that doubles with each failure in a row, from `first` up to `ceiling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    first: Duration,
    ceiling: Duration,
}

impl Backoff {
    /// Telegram's calls: 1 s, 2 s, 4 s, … 30 s. Long enough not to hammer an API that is down,
    /// short enough that a card goes within half a minute of Telegram coming back.
    pub(crate) const TELEGRAM: Backoff = Backoff {
        first: Duration::from_secs(1),
        ceiling: Duration::from_secs(30),
    };
    /// Telegram refusing the bot itself (409: someone else polls it or a webhook is set; 401:
    /// its token was revoked): 1 s, 2 s, … 60 s. Only a person can end such an episode, so a
    /// minute between tries keeps the log and the API quiet, and the bot is back within a
    /// minute of the fix.
    pub(crate) const UNREACHABLE: Backoff = Backoff {
        first: Duration::from_secs(1),
        ceiling: Duration::from_secs(60),
    };
    /// `accept` failing (out of descriptors or memory): 10 ms, 20 ms, … 1 s, so the loop neither
    /// spins nor leaves the socket unserved for long once descriptors free.
    pub(crate) const ACCEPT: Backoff = Backoff {
        first: Duration::from_millis(10),
        ceiling: Duration::from_secs(1),
    };

    /// [`Backoff::UNREACHABLE`], or in a `test-hooks` build whose environment sets
    /// `CONSENTD_TEST_FAST_RETRY`, 50 ms up to 200 ms: a test of an outage ends it and must see
    /// the daemon recover without waiting out a real minute.
    pub(crate) fn unreachable() -> Backoff {
        #[cfg(feature = "test-hooks")]
        if std::env::var_os(FAST_RETRY_ENV).is_some() {
            return Backoff {
                first: Duration::from_millis(50),
                ceiling: Duration::from_millis(200),
            };
        }
        Backoff::UNREACHABLE
    }

    /// The wait after `failures` failures in a row beyond the first (0: `first`).
    pub(crate) fn after(self, failures: u32) -> Duration {
        self.first
            .saturating_mul(1u32 << failures.min(16))
            .min(self.ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backoff_doubles_up_to_its_ceiling() {
        let telegram: Vec<u64> = (0..8)
            .map(|f| Backoff::TELEGRAM.after(f).as_secs())
            .collect();
        assert_eq!(telegram, [1, 2, 4, 8, 16, 30, 30, 30]);
        let accept: Vec<u128> = (0..9)
            .map(|f| Backoff::ACCEPT.after(f).as_millis())
            .collect();
        assert_eq!(accept, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        let unreachable: Vec<u64> = (0..8)
            .map(|f| Backoff::UNREACHABLE.after(f).as_secs())
            .collect();
        assert_eq!(unreachable, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(Backoff::TELEGRAM.after(u32::MAX), Duration::from_secs(30));
    }
}
