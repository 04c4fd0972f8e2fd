//! When an answer is still in time: a card's window, judged on both clocks (a pure decision).
//!
//! A card may be answered from the moment it was shown until its ttl has passed. The wall clock
//! alone cannot say so: stepped back two hours, it would keep a fifteen-minute card open for two
//! hours more. So the window is also measured on the monotonic clock, from the reading taken
//! when the card was shown, whenever the two readings come from the same boot. The policy:
//!
//! - an answer is late when the wall clock says the ttl has passed, **or** the monotonic clock
//!   says the ttl's length has passed since the card was shown (the earlier of the two wins);
//! - an answer the wall clock dates before the card was shown is refused too: the card cannot
//!   have been seen then, so the wall clock has been stepped back and cannot be trusted for the
//!   rest of the window;
//! - across a reboot the monotonic reading means nothing, and the wall clock decides alone.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clock::Monotonic;

/// When a card was shown and until when it may be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub shown_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The monotonic clock when the card was shown; absent for records shown before it was kept.
    pub shown_monotonic: Option<Monotonic>,
}

/// Both clocks, read once for one decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Now {
    pub wall: DateTime<Utc>,
    pub monotonic: Monotonic,
}

impl Now {
    pub fn read(clock: &dyn crate::clock::Clock) -> Now {
        let (wall, monotonic) = clock.both();
        Now { wall, monotonic }
    }
}

/// Why an answer is not in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    /// The wall clock dates the answer before the card was shown.
    BeforeShown,
    /// The wall clock is at or past the window's end.
    PastWall,
    /// The ttl's length has passed on the monotonic clock.
    PastMonotonic,
}

impl Window {
    /// The ttl's length; zero for a malformed window, which then admits nothing.
    fn ttl(&self) -> Duration {
        (self.expires_at - self.shown_at)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// Whether an answer at `now` is in time. The window is half-open: at its end it is over.
    pub fn judge(&self, now: &Now) -> Result<(), Late> {
        if now.wall < self.shown_at {
            return Err(Late::BeforeShown);
        }
        if now.wall >= self.expires_at {
            return Err(Late::PastWall);
        }
        if past_on_monotonic(self.shown_monotonic.as_ref(), self.ttl(), now) {
            return Err(Late::PastMonotonic);
        }
        Ok(())
    }

    /// Whether the window is over at `now`, on either clock: the sweep's question (is the card
    /// to expire?), not a press's. A wall clock stepped back before `shown_at` refuses every
    /// answer ([`Window::judge`]) but does not keep the card open: its monotonic time still runs
    /// out, and then it expires.
    pub fn over(&self, now: &Now) -> bool {
        Span {
            started_at: self.shown_at,
            ends_at: self.expires_at,
            started_monotonic: self.shown_monotonic.clone(),
        }
        .over(now)
    }
}

/// A length of time that started at a reading of both clocks and ends at `ends_at` by the wall
/// clock: an ask's own ttl while it waits unshown, a mandate's term (fixed when it was asked).
/// Like a card's window, it is over when either clock says its length has passed, so a wall
/// clock stepped back stretches none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub started_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// The monotonic clock when it started; absent where it was not kept (the wall clock then
    /// decides alone, as it does across a reboot).
    pub started_monotonic: Option<Monotonic>,
}

impl Span {
    fn length(&self) -> Duration {
        (self.ends_at - self.started_at)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// Whether it is over at `now`: its end reached on the wall clock, or its length passed on
    /// the monotonic one.
    pub fn over(&self, now: &Now) -> bool {
        now.wall >= self.ends_at
            || past_on_monotonic(self.started_monotonic.as_ref(), self.length(), now)
    }

    /// What is left of it at `now`: the lesser of what each clock says (zero once over). A card
    /// shown for an ask with its own ttl is answerable for no longer than this.
    pub fn left(&self, now: &Now) -> chrono::Duration {
        if self.over(now) {
            return chrono::Duration::zero();
        }
        let by_wall = self.ends_at - now.wall;
        let by_monotonic = self
            .started_monotonic
            .as_ref()
            .and_then(|start| now.monotonic.since(start))
            .and_then(|elapsed| self.length().checked_sub(elapsed))
            .and_then(|left| chrono::Duration::from_std(left).ok());
        by_monotonic.map_or(by_wall, |by_monotonic| by_wall.min(by_monotonic))
    }
}

/// Whether `length` has passed on the monotonic clock since `start` (a reading of the same
/// boot; across a reboot, or with no reading, the monotonic clock says nothing and this is
/// false, leaving the wall clock to decide). A reading earlier than `start` on the same boot
/// cannot happen; were it to, the clock is not to be trusted, and the time is taken as past.
pub fn past_on_monotonic(start: Option<&Monotonic>, length: Duration, now: &Now) -> bool {
    let Some(start) = start else {
        return false;
    };
    match now.monotonic.since(start) {
        Some(elapsed) => elapsed >= length,
        None => start.boot == now.monotonic.boot,
    }
}

/// Until when a No decided at `decided_at` takes its reason; `None` when the wait is off.
pub fn reason_deadline(decided_at: DateTime<Utc>, wait: Duration) -> Option<DateTime<Utc>> {
    let wait = chrono::Duration::from_std(wait).ok()?;
    (wait > chrono::Duration::zero()).then(|| decided_at + wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeDelta, TimeZone};

    fn shown() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 4, 12, 0, 0).unwrap()
    }

    fn mono(boot: &str, secs: u64) -> Monotonic {
        Monotonic {
            boot: boot.to_owned(),
            since_boot: Duration::from_secs(secs),
        }
    }

    /// A 60-second card shown at noon, at 1,000 s of boot "a".
    fn window() -> Window {
        Window {
            shown_at: shown(),
            expires_at: shown() + TimeDelta::seconds(60),
            shown_monotonic: Some(mono("a", 1_000)),
        }
    }

    fn at(wall_secs: i64, boot: &str, mono_secs: u64) -> Now {
        Now {
            wall: shown() + TimeDelta::seconds(wall_secs),
            monotonic: mono(boot, mono_secs),
        }
    }

    #[test]
    fn the_table_of_answers_in_and_out_of_time() {
        use Late::*;
        let cases: [(&str, Now, Result<(), Late>); 11] = [
            ("at once", at(0, "a", 1_000), Ok(())),
            ("59 s in", at(59, "a", 1_059), Ok(())),
            ("at the end by both", at(60, "a", 1_060), Err(PastWall)),
            ("62 s in", at(62, "a", 1_062), Err(PastWall)),
            (
                "wall stepped back 2 h, 62 s in",
                at(62 - 7_200, "a", 1_062),
                Err(BeforeShown),
            ),
            (
                "wall stepped back 30 s, 62 s in",
                at(32, "a", 1_062),
                Err(PastMonotonic),
            ),
            (
                "wall behind by 1 s, 5 s in",
                at(-1, "a", 1_005),
                Err(BeforeShown),
            ),
            (
                "wall stepped forward past the end, 5 s in",
                at(3_600, "a", 1_005),
                Err(PastWall),
            ),
            (
                "after a reboot the wall clock decides",
                at(30, "b", 10),
                Ok(()),
            ),
            (
                "after a reboot, late by the wall clock",
                at(61, "b", 10),
                Err(PastWall),
            ),
            (
                "a monotonic reading before the card's, same boot",
                at(10, "a", 900),
                Err(PastMonotonic),
            ),
        ];
        for (label, now, expected) in cases {
            assert_eq!(window().judge(&now), expected, "{label}");
        }
    }

    /// The sweep expires a card over on either clock, whatever the wall clock says of its
    /// `shown_at`; each case beside what a press at the same instant is told.
    #[test]
    fn the_table_of_windows_over_and_not() {
        let cases: [(&str, Now, bool); 9] = [
            ("at once", at(0, "a", 1_000), false),
            ("59 s in", at(59, "a", 1_059), false),
            ("at the end by both", at(60, "a", 1_060), true),
            (
                "wall stepped back 2 h, 62 s in",
                at(62 - 7_200, "a", 1_062),
                true,
            ),
            (
                "wall stepped back 2 h, 5 s in",
                at(5 - 7_200, "a", 1_005),
                false,
            ),
            (
                "wall stepped forward past the end, 5 s in",
                at(3_600, "a", 1_005),
                true,
            ),
            (
                "after a reboot, in time by the wall clock",
                at(30, "b", 10),
                false,
            ),
            (
                "after a reboot, wall clock stepped back",
                at(-7_200, "b", 99_999),
                false,
            ),
            (
                "a monotonic reading before the card's, same boot",
                at(10, "a", 900),
                true,
            ),
        ];
        for (label, now, over) in cases {
            assert_eq!(window().over(&now), over, "{label}");
            // Over means no answer counts either; not over with a refused answer is only ever
            // a wall clock behind `shown_at`.
            match window().judge(&now) {
                Ok(()) => assert!(!over, "{label}: open to a press, yet over"),
                Err(Late::BeforeShown) => {}
                Err(late) => assert!(over, "{label}: {late:?} to a press, yet not over"),
            }
        }
    }

    /// An ask's own ttl of 60 s, or a mandate's term: over and what is left, on both clocks.
    #[test]
    fn the_table_of_terms_over_and_left() {
        let term = Span {
            started_at: shown(),
            ends_at: shown() + TimeDelta::seconds(60),
            started_monotonic: Some(mono("a", 1_000)),
        };
        let cases: [(&str, Now, Option<i64>); 8] = [
            ("at once", at(0, "a", 1_000), Some(60)),
            ("20 s in on both", at(20, "a", 1_020), Some(40)),
            (
                "wall stepped back 2 h, 20 s in",
                at(20 - 7_200, "a", 1_020),
                Some(40),
            ),
            (
                "wall stepped back 2 h, 61 s in",
                at(61 - 7_200, "a", 1_061),
                None,
            ),
            (
                "wall 50 s in, monotonic 10 s in",
                at(50, "a", 1_010),
                Some(10),
            ),
            ("at the end by the wall clock", at(60, "a", 1_010), None),
            (
                "after a reboot the wall clock decides",
                at(30, "b", 5),
                Some(30),
            ),
            (
                "a monotonic reading before its start",
                at(10, "a", 900),
                None,
            ),
        ];
        for (label, now, left) in cases {
            assert_eq!(term.over(&now), left.is_none(), "{label}");
            assert_eq!(
                term.left(&now),
                TimeDelta::seconds(left.unwrap_or(0)),
                "{label}"
            );
        }
    }

    #[test]
    fn a_window_without_a_monotonic_reading_uses_the_wall_clock() {
        let legacy = Window {
            shown_monotonic: None,
            ..window()
        };
        assert_eq!(legacy.judge(&at(59, "a", 99_999)), Ok(()));
        assert_eq!(legacy.judge(&at(60, "a", 1_000)), Err(Late::PastWall));
        assert_eq!(legacy.judge(&at(-5, "a", 1_000)), Err(Late::BeforeShown));
    }

    #[test]
    fn a_malformed_window_admits_nothing() {
        let backwards = Window {
            expires_at: shown() - TimeDelta::seconds(1),
            ..window()
        };
        assert!(backwards.judge(&at(0, "a", 1_000)).is_err());
    }
}
