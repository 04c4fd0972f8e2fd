//! The owner's side of the chat besides cards (SPEC §10, §11): replies to the commands that change
//! settings, the `/categories` list with its switches, `/anchor`, usage lines, and the evening
//! summary. Pure functions of their inputs, like the rest of [`crate::card`].

use chrono::{NaiveDate, NaiveTime};
use rust_decimal::Decimal;

use super::{button, class_message, msg, Button, ButtonAction};
use crate::commands::Usage;
use crate::locale::{Language, Locales};

/// The one-line usage of a command given a bad argument.
pub fn usage(locales: &Locales, lang: Language, usage: Usage) -> String {
    match usage {
        Usage::Quiet => locales.t(lang, msg::USAGE_QUIET, &[]),
        Usage::NightCards { max } => locales.t(lang, msg::USAGE_NIGHTCARDS, &[("max", max.into())]),
        Usage::Summary => locales.t(lang, msg::USAGE_SUMMARY, &[]),
        Usage::Lang => locales.t(lang, msg::USAGE_LANG, &[]),
        Usage::NoArgument => locales.t(lang, msg::USAGE_NO_ARGUMENT, &[]),
    }
}

fn hhmm(time: NaiveTime) -> String {
    time.format("%H:%M").to_string()
}

/// The reply to `/quiet`.
pub fn quiet_set(
    locales: &Locales,
    lang: Language,
    quiet: Option<(NaiveTime, NaiveTime)>,
) -> String {
    match quiet {
        Some((from, to)) => locales.t(
            lang,
            msg::QUIET_SET,
            &[
                ("from", hhmm(from).as_str().into()),
                ("to", hhmm(to).as_str().into()),
            ],
        ),
        None => locales.t(lang, msg::QUIET_OFF, &[]),
    }
}

/// The reply to `/nightcards`.
pub fn nightcards_set(locales: &Locales, lang: Language, count: u32) -> String {
    locales.t(lang, msg::NIGHTCARDS_SET, &[("count", count.into())])
}

/// The reply to `/summary`.
pub fn summary_set(locales: &Locales, lang: Language, at: NaiveTime) -> String {
    locales.t(lang, msg::SUMMARY_SET, &[("hm", hhmm(at).as_str().into())])
}

/// The reply to `/lang`, in the language just chosen.
pub fn lang_set(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::LANG_SET, &[])
}

/// The reply to `/anchor`: the last line's number and its whole hash, `N:<64 hex>`.
pub fn anchor(locales: &Locales, lang: Language, head: Option<(u64, &str)>) -> String {
    match head {
        Some((n, hash)) => {
            let anchor = format!("{n}:{hash}");
            locales.t(lang, msg::ANCHOR, &[("anchor", anchor.as_str().into())])
        }
        None => locales.t(lang, msg::ANCHOR_EMPTY, &[]),
    }
}

/// One kind of action in the `/categories` reply: its label, class and switch, with the button
/// that flips it.
pub fn category_item(
    locales: &Locales,
    lang: Language,
    label: &str,
    class: &str,
    on: bool,
) -> (String, Button) {
    let class = match class_message(class) {
        Some(id) => locales.t(lang, id, &[]),
        None => class.to_owned(),
    };
    let text = locales.t(
        lang,
        msg::CATEGORY_ITEM,
        &[
            ("label", label.into()),
            ("class", class.as_str().into()),
            ("on", if on { "yes" } else { "no" }.into()),
        ],
    );
    let flip = if on {
        ButtonAction::CategoryOff
    } else {
        ButtonAction::CategoryOn
    };
    (text, button(locales, lang, flip))
}

/// The first line of the `/categories` reply.
pub fn categories_title(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::CATEGORIES_TITLE, &[])
}

/// The reply to an On or Off press.
pub fn category_switched(locales: &Locales, lang: Language, label: &str, on: bool) -> String {
    locales.t(
        lang,
        msg::CATEGORY_SWITCHED,
        &[
            ("label", label.into()),
            ("on", if on { "yes" } else { "no" }.into()),
        ],
    )
}

/// What one day held, for the evening summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub asked: u32,
    pub granted: u32,
    pub declined: u32,
    pub expired: u32,
    pub executed: u32,
    pub failed: u32,
    pub refused: u32,
}

/// A mandate's use on the summary's day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateDay<'a> {
    pub id: &'a str,
    pub label: &'a str,
    pub actions: u32,
    /// `None` for a mandate with no money term: its line shows no money.
    pub usd: Option<Decimal>,
}

/// The evening summary: the day's counts, each mandate's use, and the journal's anchor `N:H12`.
pub fn summary(
    locales: &Locales,
    lang: Language,
    date: NaiveDate,
    counts: &DayCounts,
    mandates: &[MandateDay<'_>],
    anchor: &str,
) -> String {
    let date = date.format("%Y-%m-%d").to_string();
    let mut lines = vec![
        locales.t(lang, msg::SUMMARY_TITLE, &[("date", date.as_str().into())]),
        locales.t(
            lang,
            msg::SUMMARY_COUNTS,
            &[
                ("asked", counts.asked.into()),
                ("granted", counts.granted.into()),
                ("declined", counts.declined.into()),
                ("expired", counts.expired.into()),
            ],
        ),
        locales.t(
            lang,
            msg::SUMMARY_RUNS,
            &[
                ("executed", counts.executed.into()),
                ("failed", counts.failed.into()),
                ("refused", counts.refused.into()),
            ],
        ),
    ];
    for mandate in mandates {
        let usd = mandate.usd.map(|amount| super::usd(lang, amount));
        let mut args = vec![
            ("id", mandate.id.into()),
            ("label", mandate.label.into()),
            ("actions", mandate.actions.into()),
        ];
        // A mandate with no money term has no money to count.
        let id = match &usd {
            Some(usd) => {
                args.push(("usd", usd.as_str().into()));
                msg::SUMMARY_MANDATE
            }
            None => msg::SUMMARY_MANDATE_ACTIONS,
        };
        lines.push(locales.t(lang, id, &args));
    }
    lines.push(locales.t(lang, msg::SUMMARY_ANCHOR, &[("anchor", anchor.into())]));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::tests::{assert_clean, label, locales, snapshot};

    #[test]
    fn snapshot_settings_replies_and_usage() {
        let locales = locales();
        let night = Some((
            NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
            NaiveTime::from_hms_opt(8, 0, 0).unwrap(),
        ));
        for lang in Language::ALL {
            let (on, on_button) = category_item(&locales, lang, label(lang), "external", true);
            let (off, off_button) = category_item(&locales, lang, "Wipe", "destructive", false);
            assert_eq!(on_button.action, ButtonAction::CategoryOff);
            assert_eq!(off_button.action, ButtonAction::CategoryOn);
            let shown = [
                usage(&locales, lang, Usage::Quiet),
                usage(&locales, lang, Usage::NightCards { max: 2 }),
                usage(&locales, lang, Usage::Summary),
                usage(&locales, lang, Usage::Lang),
                usage(&locales, lang, Usage::NoArgument),
                quiet_set(&locales, lang, night),
                quiet_set(&locales, lang, None),
                nightcards_set(&locales, lang, 0),
                nightcards_set(&locales, lang, 1),
                nightcards_set(&locales, lang, 2),
                nightcards_set(&locales, lang, 5),
                summary_set(&locales, lang, NaiveTime::from_hms_opt(21, 0, 0).unwrap()),
                lang_set(&locales, lang),
                anchor(&locales, lang, Some((42, &"ab".repeat(32)))),
                anchor(&locales, lang, None),
                categories_title(&locales, lang),
                format!("{on}\n----\n[{}]", on_button.label),
                format!("{off}\n----\n[{}]", off_button.label),
                category_switched(&locales, lang, label(lang), false),
            ]
            .join("\n====\n");
            assert_clean(&shown);
            snapshot(format!("owner_replies_{lang}"), shown);
        }
    }

    #[test]
    fn snapshot_evening_summary() {
        let locales = locales();
        let counts = DayCounts {
            asked: 5,
            granted: 3,
            declined: 1,
            expired: 1,
            executed: 3,
            failed: 0,
            refused: 21,
        };
        for lang in Language::ALL {
            let mandates = [
                MandateDay {
                    id: "r_fedcba9876543210fedc",
                    label: label(lang),
                    actions: 1,
                    usd: Some(Decimal::new(40, 2)),
                },
                MandateDay {
                    id: "r_0123456789abcdef0123",
                    label: label(lang),
                    actions: 22,
                    usd: Some(Decimal::new(1000, 2)),
                },
            ];
            let date = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
            let text = summary(
                &locales,
                lang,
                date,
                &counts,
                &mandates,
                "1234:0123456789ab",
            );
            assert!(text.contains("1234:0123456789ab"));
            assert!(text.contains("2026-11-29"));
            assert_clean(&text);
            snapshot(format!("summary_{lang}"), text);
        }
    }

    #[test]
    fn snapshot_evening_summary_of_a_mandate_with_no_money_term() {
        let locales = locales();
        for lang in Language::ALL {
            let mandates = [MandateDay {
                id: "r_fedcba9876543210fedc",
                label: label(lang),
                actions: 3,
                usd: None,
            }];
            let date = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
            let text = summary(
                &locales,
                lang,
                date,
                &DayCounts::default(),
                &mandates,
                "1234:0123456789ab",
            );
            assert!(!text.contains('$'), "{text}");
            assert_clean(&text);
            snapshot(format!("summary_no_money_{lang}"), text);
        }
    }
}
