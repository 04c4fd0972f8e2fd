//! The notification gate (docs/CONFIG.md, `[gate]`): whether a message goes now with sound, now
//! silently, waits
//! until quiet hours end, or is only counted in the evening summary. Pure: the caller passes the
//! settings, tonight's card count and the time; nothing here reads a clock or a store.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::config::{Gate, Receipts};

/// What kind of message is being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeClass {
    /// A rejected press, outcome_unknown after a restart, a broken journal: at once, with sound.
    Urgent,
    /// An action or mandate card; `urgent_ask` when the session marked the ask urgent.
    Card { urgent_ask: bool },
    /// A receipt of an action a mandate answered.
    Receipt,
    /// Outcomes, expiries, notices, replies, the evening summary.
    Summary,
}

/// What to do with a message now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Loud,
    Silent,
    /// Not yet: a card over tonight's limit waits, pending, until quiet hours end.
    HoldUntil(DateTime<Utc>),
    /// Not sent at all; counted in the evening summary.
    SummaryOnly,
}

/// What one day held, for the evening summary: plain counts the store fills and the summary
/// card shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub asked: u32,
    pub granted: u32,
    pub declined: u32,
    pub expired: u32,
    pub executed: u32,
    pub failed: u32,
    pub refused: u32,
    /// Calls a saved exact rule passed (`rule_used`), with no card.
    pub by_rules: u32,
}

/// Decides one message. `cards_tonight` is how many cards were shown since tonight's quiet hours
/// began (unused outside them).
///
/// Inside quiet hours a card goes silently while fewer than `night_card_limit` were shown
/// tonight, else it waits for the end of quiet hours; an urgent ask counts like any card (so a
/// session cannot wake the owner all night by marking every ask urgent) but, when shown, has
/// sound. Everything but urgent messages is silent at night.
///
/// A routine receipt (an action a mandate answered, which succeeded and left the mandate room
/// for more today) never makes a sound: it goes silently by day, and in quiet hours it is held
/// until the next evening summary (`summary_at`), which releases it to go, silently, just
/// before the summary itself: a mandate doing what it was granted for does not nag, and the
/// owner still sees each action it took. The receipt of the last action a mandate allows today,
/// and of a failure, is a `Summary` message: with sound by day, silent at night. With
/// `receipts = "summary"` routine receipts are only counted.
pub fn decide(
    class: NoticeClass,
    settings: &Gate,
    cards_tonight: u32,
    now: DateTime<Utc>,
    tz: Tz,
) -> Delivery {
    if class == NoticeClass::Receipt && settings.receipts == Receipts::Summary {
        return Delivery::SummaryOnly;
    }
    let window = quiet_window(settings.quiet_hours, now, tz);
    if class == NoticeClass::Receipt {
        return match window {
            None => Delivery::Silent,
            Some(_) => Delivery::HoldUntil(next_summary(settings.summary_at, now, tz)),
        };
    }
    let Some((_, end)) = window else {
        return Delivery::Loud;
    };
    match class {
        NoticeClass::Urgent => Delivery::Loud,
        NoticeClass::Card { urgent_ask } => {
            if cards_tonight >= settings.night_card_limit {
                Delivery::HoldUntil(end)
            } else if urgent_ask {
                Delivery::Loud
            } else {
                Delivery::Silent
            }
        }
        NoticeClass::Summary => Delivery::Silent,
        NoticeClass::Receipt => Delivery::Silent,
    }
}

/// The first evening summary after `now`: today's `summary_at` in the owner's zone if it is
/// still ahead, else tomorrow's.
pub fn next_summary(summary_at: NaiveTime, now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
    let today = now.with_timezone(&tz).date_naive();
    [
        Some(today),
        today.succ_opt(),
        today.succ_opt().and_then(|d| d.succ_opt()),
    ]
    .into_iter()
    .flatten()
    .filter_map(|date| local_instant(date, summary_at, tz))
    .find(|at| *at > now)
    .unwrap_or(now + Duration::days(1))
}

/// The config's gate with what the owner set in the chat (`/quiet`, `/nightcards`, `/summary`):
/// a night limit above the config's is never taken, and a value that does not parse is ignored.
pub fn with_owner_settings(config: &Gate, settings: &BTreeMap<String, String>) -> Gate {
    let mut gate = config.clone();
    if let Some(Ok(quiet)) = settings
        .get("quiet_hours")
        .map(|value| crate::config::parse_quiet_hours(value))
    {
        gate.quiet_hours = quiet;
    }
    if let Some(limit) = settings
        .get("night_card_limit")
        .and_then(|value| value.parse::<u32>().ok())
    {
        gate.night_card_limit = limit.min(config.night_card_limit);
    }
    if let Some(at) = settings
        .get("summary_at")
        .and_then(|value| crate::config::parse_hhmm(value))
    {
        gate.summary_at = at;
    }
    gate
}

/// The quiet hours `now` falls in, as `[start, end)` in UTC, or `None` outside them (or with none).
///
/// The window is given in the owner's local time and may cross midnight ("23:00-08:00" starts on
/// one date and ends on the next). On a DST day a local time that does not exist (skipped by
/// the clocks going forward) is read as the moment the clocks jumped to, and one that happens twice
/// as its first occurrence, so every window has one start and one end.
pub fn quiet_window(
    quiet: Option<(NaiveTime, NaiveTime)>,
    now: DateTime<Utc>,
    tz: Tz,
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let (start, end) = quiet?;
    let today = now.with_timezone(&tz).date_naive();
    // A window that crosses midnight may have started yesterday; one that does not, today.
    for start_date in [today.pred_opt()?, today] {
        let end_date = if end <= start {
            start_date.succ_opt()?
        } else {
            start_date
        };
        let from = local_instant(start_date, start, tz)?;
        let until = local_instant(end_date, end, tz)?;
        if from <= now && now < until {
            return Some((from, until));
        }
    }
    None
}

/// The instant of a local date and time in `tz`; a skipped time is the end of its gap.
pub fn local_instant(date: NaiveDate, time: NaiveTime, tz: Tz) -> Option<DateTime<Utc>> {
    let naive = date.and_time(time);
    if let Some(at) = tz.from_local_datetime(&naive).earliest() {
        return Some(at.with_timezone(&Utc));
    }
    // In a gap (at most a few hours long): the first minute after it that exists.
    (1..=180).find_map(|minutes| {
        tz.from_local_datetime(&(naive + Duration::minutes(minutes)))
            .earliest()
            .map(|at| at.with_timezone(&Utc))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hm(h: u32, m: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, m, 0).unwrap()
    }

    fn settings(quiet: Option<(NaiveTime, NaiveTime)>, limit: u32) -> Gate {
        Gate {
            quiet_hours: quiet,
            night_card_limit: limit,
            ..Gate::default()
        }
    }

    fn at(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        tz.with_ymd_and_hms(y, mo, d, h, mi, 0)
            .earliest()
            .unwrap()
            .with_timezone(&Utc)
    }

    const NIGHT: Option<(NaiveTime, NaiveTime)> = Some((
        NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
        NaiveTime::from_hms_opt(8, 0, 0).unwrap(),
    ));

    #[test]
    fn the_gate_table() {
        let tz = chrono_tz::Europe::Moscow;
        let night = settings(NIGHT, 1);
        let no_quiet = settings(None, 1);
        let late_summary = Gate {
            summary_at: hm(23, 30),
            ..settings(NIGHT, 1)
        };
        let morning = at(tz, 2026, 11, 30, 8, 0);
        let card = NoticeClass::Card { urgent_ask: false };
        let urgent_card = NoticeClass::Card { urgent_ask: true };
        type Case<'a> = (&'a str, NoticeClass, &'a Gate, u32, DateTime<Utc>, Delivery);
        let cases: Vec<Case> = vec![
            (
                "a card by day",
                card,
                &night,
                0,
                at(tz, 2026, 11, 29, 12, 0),
                Delivery::Loud,
            ),
            (
                "a card at 22:59",
                card,
                &night,
                5,
                at(tz, 2026, 11, 29, 22, 59),
                Delivery::Loud,
            ),
            (
                "the first card at 23:00",
                card,
                &night,
                0,
                at(tz, 2026, 11, 29, 23, 0),
                Delivery::Silent,
            ),
            (
                "the first card at 23:30",
                card,
                &night,
                0,
                at(tz, 2026, 11, 29, 23, 30),
                Delivery::Silent,
            ),
            (
                "the second card at 23:31",
                card,
                &night,
                1,
                at(tz, 2026, 11, 29, 23, 31),
                Delivery::HoldUntil(morning),
            ),
            (
                "the second card at 07:59",
                card,
                &night,
                1,
                at(tz, 2026, 11, 30, 7, 59),
                Delivery::HoldUntil(morning),
            ),
            ("a card at 08:00", card, &night, 1, morning, Delivery::Loud),
            (
                "an urgent ask under the limit",
                urgent_card,
                &night,
                0,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::Loud,
            ),
            (
                "an urgent ask over the limit",
                urgent_card,
                &night,
                1,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::HoldUntil(morning),
            ),
            (
                "an urgent notice at night",
                NoticeClass::Urgent,
                &night,
                9,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::Loud,
            ),
            (
                "a routine receipt at night is held until the evening summary",
                NoticeClass::Receipt,
                &night,
                0,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::HoldUntil(at(tz, 2026, 11, 30, 21, 0)),
            ),
            (
                "a routine receipt by day is silent",
                NoticeClass::Receipt,
                &night,
                0,
                at(tz, 2026, 11, 30, 9, 0),
                Delivery::Silent,
            ),
            (
                "a routine receipt with no quiet hours is silent",
                NoticeClass::Receipt,
                &no_quiet,
                0,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::Silent,
            ),
            (
                "a receipt at the first minute of quiet hours waits for the next day's summary",
                NoticeClass::Receipt,
                &night,
                0,
                at(tz, 2026, 11, 29, 23, 0),
                Delivery::HoldUntil(at(tz, 2026, 11, 30, 21, 0)),
            ),
            (
                "a receipt at the last minute of quiet hours is held",
                NoticeClass::Receipt,
                &night,
                0,
                at(tz, 2026, 11, 30, 7, 59),
                Delivery::HoldUntil(at(tz, 2026, 11, 30, 21, 0)),
            ),
            (
                "a receipt when the summary itself falls in quiet hours waits for it",
                NoticeClass::Receipt,
                &late_summary,
                0,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::HoldUntil(at(tz, 2026, 11, 30, 23, 30)),
            ),
            (
                "a receipt at their end goes silently",
                NoticeClass::Receipt,
                &night,
                0,
                at(tz, 2026, 11, 30, 8, 0),
                Delivery::Silent,
            ),
            (
                "a notice at night",
                NoticeClass::Summary,
                &night,
                0,
                at(tz, 2026, 11, 30, 3, 0),
                Delivery::Silent,
            ),
            (
                "a notice by day",
                NoticeClass::Summary,
                &night,
                0,
                at(tz, 2026, 11, 30, 9, 0),
                Delivery::Loud,
            ),
        ];
        for (name, class, settings, count, now, expected) in cases {
            assert_eq!(decide(class, settings, count, now, tz), expected, "{name}");
        }
        let off = settings(None, 0);
        assert_eq!(
            decide(card, &off, 99, at(tz, 2026, 11, 30, 3, 0), tz),
            Delivery::Loud,
            "quiet hours off"
        );
        let summary_receipts = Gate {
            receipts: Receipts::Summary,
            ..settings(NIGHT, 1)
        };
        assert_eq!(
            decide(
                NoticeClass::Receipt,
                &summary_receipts,
                0,
                at(tz, 2026, 11, 30, 12, 0),
                tz
            ),
            Delivery::SummaryOnly
        );
        let zero = settings(NIGHT, 0);
        assert_eq!(
            decide(card, &zero, 0, at(tz, 2026, 11, 29, 23, 30), tz),
            Delivery::HoldUntil(morning),
            "a night limit of 0 holds every card"
        );
    }

    #[test]
    fn windows_within_one_day_and_across_midnight() {
        let tz = chrono_tz::UTC;
        let day = Some((hm(13, 0), hm(14, 0)));
        let cases = [
            (
                "before a daytime window",
                day,
                at(tz, 2026, 1, 5, 12, 59),
                None,
            ),
            (
                "inside a daytime window",
                day,
                at(tz, 2026, 1, 5, 13, 0),
                Some((at(tz, 2026, 1, 5, 13, 0), at(tz, 2026, 1, 5, 14, 0))),
            ),
            ("at its end", day, at(tz, 2026, 1, 5, 14, 0), None),
            (
                "before midnight",
                NIGHT,
                at(tz, 2026, 1, 5, 23, 59),
                Some((at(tz, 2026, 1, 5, 23, 0), at(tz, 2026, 1, 6, 8, 0))),
            ),
            (
                "after midnight",
                NIGHT,
                at(tz, 2026, 1, 6, 0, 1),
                Some((at(tz, 2026, 1, 5, 23, 0), at(tz, 2026, 1, 6, 8, 0))),
            ),
            ("the day", NIGHT, at(tz, 2026, 1, 6, 12, 0), None),
            ("off", None, at(tz, 2026, 1, 6, 3, 0), None),
        ];
        for (name, quiet, now, expected) in cases {
            assert_eq!(quiet_window(quiet, now, tz), expected, "{name}");
        }
    }

    #[test]
    fn owner_settings_lower_the_night_limit_and_move_the_hours() {
        let config = settings(NIGHT, 2);
        let owner = BTreeMap::from([
            ("quiet_hours".to_owned(), "22:00-07:00".to_owned()),
            ("night_card_limit".to_owned(), "1".to_owned()),
            ("summary_at".to_owned(), "20:30".to_owned()),
        ]);
        let gate = with_owner_settings(&config, &owner);
        assert_eq!(gate.quiet_hours, Some((hm(22, 0), hm(7, 0))));
        assert_eq!(gate.night_card_limit, 1);
        assert_eq!(gate.summary_at, hm(20, 30));
        let raised = BTreeMap::from([("night_card_limit".to_owned(), "9".to_owned())]);
        assert_eq!(with_owner_settings(&config, &raised).night_card_limit, 2);
        let off = BTreeMap::from([("quiet_hours".to_owned(), "off".to_owned())]);
        assert_eq!(with_owner_settings(&config, &off).quiet_hours, None);
    }

    #[test]
    fn dst_days() {
        // Berlin: clocks go 02:00 → 03:00 on 29 March 2026 and 03:00 → 02:00 on 25 October.
        let tz = chrono_tz::Europe::Berlin;
        let early = Some((hm(1, 0), hm(6, 0)));
        let spring = quiet_window(early, at(tz, 2026, 3, 29, 4, 0), tz).unwrap();
        assert_eq!(spring.1 - spring.0, Duration::hours(4), "a short night");
        let autumn = quiet_window(early, at(tz, 2026, 10, 25, 4, 0), tz).unwrap();
        assert_eq!(autumn.1 - autumn.0, Duration::hours(6), "a long night");
        // A window starting in the skipped hour starts when the clocks jumped.
        let gap = Some((hm(2, 30), hm(6, 0)));
        let (start, _) = quiet_window(gap, at(tz, 2026, 3, 29, 4, 0), tz).unwrap();
        assert_eq!(start, at(tz, 2026, 3, 29, 3, 0));
        assert_eq!(quiet_window(gap, at(tz, 2026, 3, 29, 1, 0), tz), None);
    }
}
