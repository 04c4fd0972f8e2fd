//! Raise today: offered only when the day is used up, once a day, never above a ceiling; each
//! case its own assertion.

use rust_decimal::Decimal;

use super::*;
use crate::config::Limits;

fn usd(text: &str) -> Decimal {
    text.parse().unwrap()
}

fn limits(actions: u32, usd_per_day: Option<&str>) -> DayLimits {
    DayLimits {
        actions_per_day: actions,
        usd_per_day: usd_per_day.map(usd),
    }
}

fn used(actions: u32, money: &str) -> Usage {
    Usage {
        actions,
        usd: usd(money),
    }
}

/// The last post of a 5-a-day mandate with no money term, on its own day, not raised yet.
fn fifth_post() -> RaiseFacts {
    RaiseFacts {
        open: true,
        same_day: true,
        raised: None,
        granted: limits(5, None),
        usage: used(5, "0"),
        cost: Decimal::ZERO,
    }
}

/// Ceilings of 12 actions and $2.00 a day.
fn lowered() -> Limits {
    Limits {
        mandate_max_actions_per_day: 12,
        mandate_max_usd_per_day: usd("2.00"),
        ..Limits::default()
    }
}

#[test]
fn a_raise_stands_only_on_the_receipt_that_used_the_day_up_once_a_day_under_the_ceilings() {
    let spec = Limits::default();
    let low = lowered();
    type Case = (&'static str, RaiseFacts, Result<DayLimits, NotRaised>);
    let cases: Vec<(&Limits, Case)> = vec![
        (
            &spec,
            (
                "the fifth of 5 lifts the day to 10",
                fifth_post(),
                Ok(limits(10, None)),
            ),
        ),
        (
            &spec,
            (
                "the fourth of 5 left room",
                RaiseFacts {
                    usage: used(4, "0"),
                    ..fifth_post()
                },
                Err(NotRaised::NotUsedUp),
            ),
        ),
        (
            &spec,
            (
                "money: $0.48 of $0.50, and another $0.04 would not fit",
                RaiseFacts {
                    granted: limits(20, Some("0.50")),
                    usage: used(12, "0.48"),
                    cost: usd("0.04"),
                    ..fifth_post()
                },
                Ok(limits(20, Some("1.00"))),
            ),
        ),
        (
            &spec,
            (
                "money: $0.44 of $0.50 leaves room for another $0.04",
                RaiseFacts {
                    granted: limits(20, Some("0.50")),
                    usage: used(11, "0.44"),
                    cost: usd("0.04"),
                    ..fifth_post()
                },
                Err(NotRaised::NotUsedUp),
            ),
        ),
        (
            &spec,
            (
                "both used up: both rise, each a step",
                RaiseFacts {
                    granted: limits(5, Some("0.20")),
                    usage: used(5, "0.20"),
                    cost: usd("0.04"),
                    ..fifth_post()
                },
                Ok(limits(10, Some("0.50"))),
            ),
        ),
        (
            &spec,
            (
                "a second raise the same day",
                RaiseFacts {
                    raised: Some(limits(10, None)),
                    usage: used(10, "0"),
                    ..fifth_post()
                },
                Err(NotRaised::AlreadyRaised),
            ),
        ),
        (
            &spec,
            (
                "pressed the next day",
                RaiseFacts {
                    same_day: false,
                    ..fifth_post()
                },
                Err(NotRaised::OtherDay),
            ),
        ),
        (
            &spec,
            (
                "stopped first: closed before the day is judged",
                RaiseFacts {
                    open: false,
                    same_day: false,
                    ..fifth_post()
                },
                Err(NotRaised::Closed),
            ),
        ),
        (
            &low,
            (
                "10 of 10 under a ceiling of 12: to 12, not 15",
                RaiseFacts {
                    granted: limits(10, None),
                    usage: used(10, "0"),
                    ..fifth_post()
                },
                Ok(limits(12, None)),
            ),
        ),
        (
            &low,
            (
                "12 of 12 at a ceiling of 12",
                RaiseFacts {
                    granted: limits(12, None),
                    usage: used(12, "0"),
                    ..fifth_post()
                },
                Err(NotRaised::AtCeiling),
            ),
        ),
        (
            &low,
            (
                "$2.00 of $2.00 at the money ceiling",
                RaiseFacts {
                    granted: limits(12, Some("2.00")),
                    usage: used(4, "2.00"),
                    cost: usd("0.50"),
                    ..fifth_post()
                },
                Err(NotRaised::AtCeiling),
            ),
        ),
        (
            &low,
            (
                "both used up, the count at its ceiling: nothing a raise could help",
                RaiseFacts {
                    granted: limits(12, Some("1.00")),
                    usage: used(12, "1.00"),
                    cost: usd("0.10"),
                    ..fifth_post()
                },
                Err(NotRaised::AtCeiling),
            ),
        ),
        (
            &spec,
            (
                "100 of 100 at the built-in ceiling",
                RaiseFacts {
                    granted: limits(100, None),
                    usage: used(100, "0"),
                    ..fifth_post()
                },
                Err(NotRaised::AtCeiling),
            ),
        ),
    ];
    for (limits, (name, facts, want)) in cases {
        assert_eq!(offered(&facts, limits), want, "{name}");
    }
}

#[test]
fn steps_round_up_and_the_next_step_is_above() {
    let next: [(u32, u32); 5] = [(0, 5), (4, 5), (5, 10), (12, 15), (u32::MAX, u32::MAX)];
    for (n, want) in next {
        assert_eq!(next_actions_step(n), want, "next step above {n}");
    }
    let at: [(u32, u32); 4] = [(0, 5), (5, 5), (6, 10), (15, 15)];
    for (n, want) in at {
        assert_eq!(actions_step_at_or_above(n), want, "step at or above {n}");
    }
    let money: [(&str, &str, &str); 4] = [
        ("0", "0.50", "0.50"),
        ("0.50", "1.00", "0.50"),
        ("0.51", "1.00", "1.00"),
        ("1.01", "1.50", "1.50"),
    ];
    for (amount, next, at) in money {
        assert_eq!(
            next_usd_step(usd(amount)),
            usd(next),
            "next above ${amount}"
        );
        assert_eq!(
            usd_step_at_or_above(usd(amount)),
            usd(at),
            "at or above ${amount}"
        );
    }
}

/// A Raise names the record whose receipt carried it: data with `l` and a kind name or a
/// suggestion id is malformed, never read as a subject to look up; a record's is read.
#[test]
fn a_raise_press_names_a_record_or_is_malformed() {
    use crate::press::{parse_callback, PressAction, PressKey, PressRejection, KEY_LEN};
    let key = PressKey::from_bytes([7u8; KEY_LEN]);
    let digest = "ab".repeat(32);
    for subject in ["publish_x", "m_0123456789abcdef0123"] {
        let data = key.sign(PressAction::CategoryOn, subject, &digest, 42);
        let as_raise = data.replacen(".o.", ".l.", 1);
        assert_eq!(
            parse_callback(&as_raise).map(|c| c.subject),
            Err(PressRejection::Malformed),
            "{subject} after l"
        );
    }
    let record = "r_0123456789abcdef0123";
    let data = key.sign(PressAction::Raise, record, &digest, 42);
    let parsed = parse_callback(&data).unwrap();
    assert_eq!(
        (parsed.action, parsed.subject.as_str()),
        (PressAction::Raise, record)
    );
}
