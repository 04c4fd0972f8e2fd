//! The suggestion rules, one case per rule, and the terms never above a ceiling.

use chrono::TimeZone;
use rust_decimal::Decimal;

use super::*;
use crate::config::{self, Config};
use crate::press::{parse_callback, PressAction, PressKey, PressRejection, KEY_LEN};

const CONFIG: &str = r#"
[paths]
state_dir = "/var/lib/consentd"

[limits]
mandate_max_days = 5
mandate_max_usd_per_day = "2.00"
mandate_max_actions_per_day = 12

[categories.post]
label = { en = "Post" }
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
command = ["/bin/true"]

[categories.image]
label = { en = "Generate an image" }
class = "spend"
enabled = true
mandate_ok = true
cost = "request"
command = ["/bin/true"]

[categories.letter]
label = { en = "Send a letter" }
class = "external"
enabled = true
target = "required"
command = ["/bin/true"]

[categories.wipe]
label = { en = "Delete a post" }
class = "destructive"
enabled = true
target = "required"
command = ["/bin/true"]
"#;

/// The test config; its destructive kind is made `mandate_ok` after the check (which refuses
/// that), to show the suggestion's own rule holds even then.
fn config() -> Config {
    let mut config = config::parse(CONFIG, "test").unwrap();
    config.categories.get_mut("wipe").unwrap().mandate_ok = true;
    config
}

fn at(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, day, hour, 0, 0).unwrap()
}

fn yes(day: u32, hour: u32, cost: Option<&str>) -> Approval {
    Approval {
        asked_at: at(day, hour),
        cost_usd: cost.map(|c| c.parse().unwrap()),
    }
}

fn history(approvals: Vec<Approval>) -> History {
    History {
        approvals,
        ..History::default()
    }
}

fn decide_for(kind: &str, target: Option<&str>, history: &History) -> Result<Offer, NotSuggested> {
    let config = config();
    let asked = Asked {
        category: &config.categories[kind],
        target,
        enabled: true,
    };
    decide(asked, &config.limits, history, at(10, 12), chrono_tz::UTC)
}

fn three_posts() -> Vec<Approval> {
    vec![yes(8, 9, None), yes(9, 9, None), yes(10, 11, None)]
}

#[test]
fn the_rules_in_order_each_with_its_reason() {
    let mut off = config();
    off.limits.suggest_mandate_after = 0;
    let asked = Asked {
        category: &off.categories["post"],
        target: Some("@news"),
        enabled: true,
    };
    let got = decide(
        asked,
        &off.limits,
        &history(three_posts()),
        at(10, 12),
        chrono_tz::UTC,
    );
    assert_eq!(
        got.unwrap_err(),
        NotSuggested::Off,
        "zero turns suggestions off"
    );

    type Case = (
        &'static str,
        &'static str,
        Option<&'static str>,
        History,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            "a destructive kind, even mandate_ok",
            "wipe",
            Some("@news"),
            history(three_posts()),
            "no_mandates",
        ),
        (
            "a kind that is not mandate_ok",
            "letter",
            Some("a@b.c"),
            history(three_posts()),
            "no_mandates",
        ),
        (
            "the second yes",
            "post",
            Some("@news"),
            history(three_posts()[1..].to_vec()),
            "too_few",
        ),
        (
            "a yes older than 7 days does not count",
            "post",
            Some("@news"),
            history(vec![yes(3, 11, None), yes(9, 9, None), yes(10, 11, None)]),
            "too_few",
        ),
        (
            "an open mandate already names it",
            "post",
            Some("@news"),
            History {
                covered_by_open_mandate: true,
                ..history(three_posts())
            },
            "covered",
        ),
        (
            "suggested for it 6 days ago",
            "post",
            Some("@news"),
            History {
                last_suggested: Some(at(4, 13)),
                ..history(three_posts())
            },
            "repeated",
        ),
        (
            "two other things were suggested this morning",
            "post",
            Some("@news"),
            History {
                recent_suggested_any: vec![at(10, 8), at(10, 0)],
                ..history(three_posts())
            },
            "two_a_day",
        ),
        (
            "a target no mandate may name",
            "post",
            Some("@news*"),
            history(three_posts()),
            "terms",
        ),
    ];
    for (name, kind, target, history, want) in cases {
        let got = decide_for(kind, target, &history);
        assert_eq!(got.map_err(|why| why.as_str()).err(), Some(want), "{name}");
    }
}

#[test]
fn the_third_yes_suggests_and_the_old_suggestion_lapses_after_7_days() {
    let offer = decide_for("post", Some("@news"), &history(three_posts())).unwrap();
    assert_eq!(offer.approvals, 3);
    assert_eq!(offer.request.targets, vec!["@news".to_owned()]);
    assert_eq!(offer.request.usd_per_day, None, "a kind that never costs");
    assert_eq!(offer.request.days, 5, "the config's ceiling, below 7");
    let lapsed = History {
        last_suggested: Some(at(3, 11)),
        recent_suggested_any: vec![at(9, 23), at(9, 22)],
        ..history(three_posts())
    };
    assert!(decide_for("post", Some("@news"), &lapsed).is_ok());
}

#[test]
fn terms_round_the_busiest_day_up_to_the_next_step() {
    // Day 9: 3 images, $0.12; day 10: 1 image at $0.45. Count and money each take their day.
    let images = vec![
        yes(9, 9, Some("0.04")),
        yes(9, 10, Some("0.04")),
        yes(9, 11, Some("0.04")),
        yes(10, 9, Some("0.45")),
    ];
    let offer = decide_for("image", None, &history(images)).unwrap();
    assert_eq!(
        (offer.busiest_actions, offer.busiest_usd),
        (3, "0.45".parse().unwrap())
    );
    // 3 × 1.5 = 4.5, rounded up to 5; $0.45 × 1.5 = $0.675, rounded up to $1.00.
    assert_eq!(offer.request.actions_per_day, 5);
    assert_eq!(offer.request.usd_per_day, Some("1.00".parse().unwrap()));
    assert!(
        offer.request.targets.is_empty(),
        "a kind without a target names none"
    );
}

/// The busiest day times 1.5, rounded up to the next step, under this config's ceilings (12 a
/// day, $2.00) and under the built-in ones (100, $10.00). Each case its own assertion.
#[test]
fn headroom_is_the_busiest_day_times_one_and_a_half_rounded_up_to_a_step() {
    let lowered = config().limits;
    let spec = crate::config::Limits::default();
    type Case = (&'static str, u32, &'static str, u32, &'static str);
    let cases: [(&crate::config::Limits, Case); 14] = [
        (
            &spec,
            ("no day at all still gets a step", 0, "0", 5, "0.50"),
        ),
        (&spec, ("1 a day: 1.5, up to 5", 1, "0.01", 5, "0.50")),
        (&spec, ("3 a day: 4.5, up to 5", 3, "0.12", 5, "0.50")),
        (&spec, ("4 a day: 6, up to 10", 4, "0.16", 10, "0.50")),
        (&spec, ("5 a day: 7.5, up to 10", 5, "0.20", 10, "0.50")),
        (&spec, ("10 a day: 15 is a step", 10, "0.34", 15, "1.00")),
        (&spec, ("11 a day: 16.5, up to 20", 11, "1.00", 20, "1.50")),
        (&spec, ("$0.67: $1.005, up to $1.50", 1, "0.67", 5, "1.50")),
        (&spec, ("66 a day: 99, up to 100", 66, "6.00", 100, "9.00")),
        (
            &spec,
            ("67 a day: over the ceiling", 67, "6.67", 100, "10.00"),
        ),
        (
            &lowered,
            ("8 a day: 12, the ceiling", 8, "1.00", 12, "1.50"),
        ),
        (&lowered, ("9 a day: 15 over 12", 9, "1.34", 12, "2.00")),
        (&lowered, ("4 a day: 10, under 12", 4, "0.10", 10, "0.50")),
        (&lowered, ("$1.40: $2.10 over $2.00", 2, "1.40", 5, "2.00")),
    ];
    for (limits, (name, busiest, usd, want_actions, want_usd)) in cases {
        let got = headroom(busiest, usd.parse().unwrap(), limits);
        let want = (want_actions, want_usd.parse::<Decimal>().unwrap());
        assert_eq!(got, want, "{name}");
    }
}

/// "Two a day": a second suggestion the same day for another target, never a third, and never
/// a second for the same target (which was suggested today, so within the week).
#[test]
fn two_suggestions_a_day_for_different_targets_not_for_the_same() {
    let one_this_morning = History {
        recent_suggested_any: vec![at(10, 9)],
        ..history(three_posts())
    };
    assert!(
        decide_for("post", Some("@news"), &one_this_morning).is_ok(),
        "a second today, for another target"
    );
    let same_this_morning = History {
        last_suggested: Some(at(10, 9)),
        ..one_this_morning.clone()
    };
    assert_eq!(
        decide_for("post", Some("@news"), &same_this_morning)
            .map_err(|w| w.as_str())
            .err(),
        Some("repeated"),
        "not a second for the same kind and target"
    );
    let two_this_morning = History {
        recent_suggested_any: vec![at(10, 10), at(10, 9)],
        ..history(three_posts())
    };
    assert_eq!(
        decide_for("post", Some("@news"), &two_this_morning)
            .map_err(|w| w.as_str())
            .err(),
        Some("two_a_day"),
        "not a third today"
    );
    let two_yesterday = History {
        recent_suggested_any: vec![at(9, 20), at(9, 9)],
        ..history(three_posts())
    };
    assert!(
        decide_for("post", Some("@news"), &two_yesterday).is_ok(),
        "yesterday's two do not count today"
    );
}

#[test]
fn terms_never_exceed_a_ceiling() {
    // 20 yeses in one day at $0.30: above both of this config's ceilings (12 a day, $2.00).
    let busy: Vec<Approval> = (0..20).map(|i| yes(10, i / 2, Some("0.30"))).collect();
    let offer = decide_for("image", None, &history(busy)).unwrap();
    assert_eq!(offer.request.actions_per_day, 12);
    assert_eq!(offer.request.usd_per_day, Some("2.00".parse().unwrap()));
    assert_eq!(offer.request.days, 5);
    // And the built-in ceilings hold for a config that lowers none.
    let mut spec = config();
    spec.limits = crate::config::Limits::default();
    let many: Vec<Approval> = (0..200).map(|i| yes(10, i / 20, Some("1.00"))).collect();
    let asked = Asked {
        category: &spec.categories["image"],
        target: None,
        enabled: true,
    };
    let offer = decide(
        asked,
        &spec.limits,
        &history(many),
        at(10, 12),
        chrono_tz::UTC,
    )
    .unwrap();
    assert_eq!(offer.request.actions_per_day, 100);
    assert_eq!(offer.request.usd_per_day, Some("10.00".parse().unwrap()));
    assert_eq!(offer.request.days, 7);
}

#[test]
fn days_are_the_owners_local_days() {
    // 23:30 and 00:30 in Moscow are two days there, though one UTC day: two yeses a day at
    // most, so the count offered is 5, and the third yes still suggests.
    let tz = chrono_tz::Europe::Moscow;
    let local = |d: u32, h: u32, m: u32| {
        tz.with_ymd_and_hms(2026, 12, d, h, m, 0)
            .unwrap()
            .with_timezone(&Utc)
    };
    let approvals = vec![
        Approval {
            asked_at: local(9, 22, 0),
            cost_usd: None,
        },
        Approval {
            asked_at: local(9, 23, 30),
            cost_usd: None,
        },
        Approval {
            asked_at: local(10, 0, 30),
            cost_usd: None,
        },
    ];
    let config = config();
    let asked = Asked {
        category: &config.categories["post"],
        target: Some("@news"),
        enabled: true,
    };
    let offer = decide(
        asked,
        &config.limits,
        &history(approvals),
        local(10, 1, 0),
        tz,
    )
    .unwrap();
    assert_eq!(offer.busiest_actions, 2);
}

#[test]
fn an_offer_is_checked_again_against_the_config_and_switch_in_force_when_it_is_opened() {
    let config = config();
    let offer = decide_for("post", Some("@news"), &history(three_posts())).unwrap();
    let asked = Asked {
        category: &config.categories["post"],
        target: Some("@news"),
        enabled: true,
    };
    assert_eq!(still_offered(&offer.request, asked, &config.limits), Ok(()));
    let mut lowered = config.limits.clone();
    lowered.mandate_max_days = 2;
    let got = still_offered(&offer.request, asked, &lowered).map_err(|w| w.as_str());
    assert_eq!(got, Err("terms"), "ceilings lowered since it was made");
    lowered = config.limits.clone();
    lowered.mandate_max_actions_per_day = 4;
    let got = still_offered(&offer.request, asked, &lowered).map_err(|w| w.as_str());
    assert_eq!(got, Err("terms"), "a count over the new ceiling");
    let off = Asked {
        enabled: false,
        ..asked
    };
    let got = still_offered(&offer.request, off, &config.limits).map_err(|w| w.as_str());
    assert_eq!(got, Err("kind_off"), "switched off since");
}

/// A suggestion's button names a suggestion (`m_` + 20 hex): data with `m` and a kind name or
/// a record id is malformed, never read as a subject to look up.
#[test]
fn a_suggest_press_names_a_suggestion_id_or_is_malformed() {
    let key = PressKey::from_bytes([7u8; KEY_LEN]);
    let digest = "ab".repeat(32);
    for subject in ["publish_x", "r_0123456789abcdef0123"] {
        let data = key.sign(PressAction::CategoryOn, subject, &digest, 42);
        let as_suggest = data.replacen(".o.", ".m.", 1);
        assert_eq!(
            parse_callback(&as_suggest).map(|c| c.subject),
            Err(PressRejection::Malformed),
            "{subject} after m"
        );
    }
}
