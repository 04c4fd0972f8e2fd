//! Someone other than the owner pressing the owner's buttons (a forwarded card, a forged press):
//! what is journaled and whether the owner is told, per window. The first press of a window is
//! journaled as its own `press_rejected` line and, when its reason is worth telling, the owner
//! hears of it; the window's later presses are only counted, and journaled as one line with their
//! `count` once the window has closed (at the stranger's next press after it, or at the sweep).
//! So a stranger who presses a card 30 times costs the owner one notice an hour and the journal
//! two lines, while the owner still learns that someone pressed.

use chrono::{DateTime, Duration, Utc};

/// How long a stranger's window lasts: one notice to the owner per stranger (and reason) in it.
pub fn window() -> Duration {
    Duration::hours(1)
}

/// A stranger's open window, for one reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// When its first press came.
    pub opened_at: DateTime<Utc>,
    /// Presses after the first, not journaled yet.
    pub held: u32,
}

impl Window {
    /// Whether the window is over at `now`.
    pub fn closed_at(&self, now: DateTime<Utc>) -> bool {
        now >= self.opened_at + window()
    }
}

/// What one press by a stranger does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// A closed window's held presses: journaled now as one line with this `count`.
    pub flush: Option<u32>,
    /// This press opens a window: journaled as its own `press_rejected` line, and the owner is
    /// told (if its reason is one the owner hears of).
    pub first: bool,
    /// The window as it is after this press.
    pub next: Window,
}

/// A stranger's press at `now`, their window for its reason being `window`.
pub fn on_press(window: Option<Window>, now: DateTime<Utc>) -> Step {
    match window {
        Some(open) if !open.closed_at(now) => Step {
            flush: None,
            first: false,
            next: Window {
                held: open.held.saturating_add(1),
                ..open
            },
        },
        closed => Step {
            flush: closed.and_then(|w| flush(w, now)),
            first: true,
            next: Window {
                opened_at: now,
                held: 0,
            },
        },
    }
}

/// The counted line a window owes once it has closed at `now`: its held presses, if any. `None`
/// while it is open or when it held none (it is then simply forgotten).
pub fn flush(window: Window, now: DateTime<Utc>) -> Option<u32> {
    (window.closed_at(now) && window.held > 0).then_some(window.held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap()
    }

    fn open(held: u32) -> Option<Window> {
        Some(Window {
            opened_at: t0(),
            held,
        })
    }

    #[test]
    fn a_press_is_first_counted_or_flushes_a_closed_window() {
        let minute = Duration::minutes(1);
        let hour = window();
        let cases = [
            ("no window: first", None, t0(), None, true, 0),
            (
                "in the window: counted",
                open(0),
                t0() + minute,
                None,
                false,
                1,
            ),
            (
                "counted again",
                open(4),
                t0() + hour - minute,
                None,
                false,
                5,
            ),
            (
                "at the hour: a new window",
                open(0),
                t0() + hour,
                None,
                true,
                0,
            ),
            (
                "after the hour, flushing",
                open(29),
                t0() + hour,
                Some(29),
                true,
                0,
            ),
            ("long after", open(3), t0() + hour * 5, Some(3), true, 0),
            (
                "a clock stepped back stays in",
                open(2),
                t0() - minute,
                None,
                false,
                3,
            ),
        ];
        for (name, window, now, flushed, first, held) in cases {
            let step = on_press(window, now);
            assert_eq!(step.flush, flushed, "{name}: flush");
            assert_eq!(step.first, first, "{name}: first");
            assert_eq!(step.next.held, held, "{name}: held");
            let opened = if first { now } else { t0() };
            assert_eq!(step.next.opened_at, opened, "{name}: opened");
        }
    }

    #[test]
    fn thirty_presses_in_an_hour_are_two_lines_counting_thirty() {
        let mut open = None;
        let mut lines: Vec<u32> = Vec::new();
        for second in 0..30 {
            let step = on_press(open, t0() + Duration::seconds(second));
            lines.extend(step.flush);
            if step.first {
                lines.push(1);
            }
            open = Some(step.next);
        }
        assert_eq!(lines, [1], "one line while the window is open");
        let closed = open.unwrap();
        assert_eq!(
            flush(closed, t0() + Duration::minutes(59)),
            None,
            "still open"
        );
        lines.extend(flush(closed, t0() + window()));
        assert_eq!(lines, [1, 29]);
        assert_eq!(lines.iter().sum::<u32>(), 30);
    }
}
