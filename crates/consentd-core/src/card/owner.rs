//! The owner's side of the chat besides cards (docs/OPERATOR.md, "In the chat"): replies to the
//! commands that change
//! settings, the `/categories` list with its switches, `/anchor`, usage lines, and the evening
//! summary. Pure functions of their inputs, like the rest of [`crate::card`].

use chrono::{NaiveDate, NaiveTime};
use rust_decimal::Decimal;

use super::{button, class_message, msg, Button, ButtonAction};
use crate::commands::UsageLine;
use crate::locale::{Language, Locales};

/// What one day held, as the summary shows it (plain counts, kept beside the gate).
pub(crate) use crate::gate::DayCounts;

/// The one-line usage of a command given a bad argument.
pub fn usage(locales: &Locales, lang: Language, usage: UsageLine) -> String {
    match usage {
        UsageLine::Quiet => locales.t(lang, msg::USAGE_QUIET, &[]),
        UsageLine::NightCards { max } => {
            locales.t(lang, msg::USAGE_NIGHTCARDS, &[("max", max.into())])
        }
        UsageLine::Summary => locales.t(lang, msg::USAGE_SUMMARY, &[]),
        UsageLine::Lang => locales.t(lang, msg::USAGE_LANG, &[]),
        UsageLine::NoArgument => locales.t(lang, msg::USAGE_NO_ARGUMENT, &[]),
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
    quiet_line(locales, lang, quiet, (msg::QUIET_SET, msg::QUIET_OFF))
}

/// The reply to `/quiet` with nothing after it: the quiet hours now, and how to change them.
pub fn quiet_current(
    locales: &Locales,
    lang: Language,
    quiet: Option<(NaiveTime, NaiveTime)>,
) -> String {
    let ids = (msg::QUIET_CURRENT, msg::QUIET_CURRENT_OFF);
    quiet_line(locales, lang, quiet, ids)
}

/// The quiet hours in the message `ids.0`, or `ids.1` when there are none.
fn quiet_line(
    locales: &Locales,
    lang: Language,
    quiet: Option<(NaiveTime, NaiveTime)>,
    (hours, off): (&str, &str),
) -> String {
    match quiet {
        Some((from, to)) => locales.t(
            lang,
            hours,
            &[
                ("from", hhmm(from).as_str().into()),
                ("to", hhmm(to).as_str().into()),
            ],
        ),
        None => locales.t(lang, off, &[]),
    }
}

/// The reply to `/nightcards` with nothing after it: tonight's limit now, and the most it may be
/// set to.
pub fn nightcards_current(locales: &Locales, lang: Language, count: u32, max: u32) -> String {
    locales.t(
        lang,
        msg::NIGHTCARDS_CURRENT,
        &[("count", count.into()), ("max", max.into())],
    )
}

/// The one line for a message that is no command (or a command this bot does not know): where
/// the commands are, not all of them.
pub fn help_pointer(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::HELP_POINTER, &[])
}

/// Why a button the owner pressed no longer does anything: the thing it was drawn for has moved
/// on. Told in the press's answer (a toast) instead of a bare "not accepted".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// A Yes, No, Grant or Decline on a card already answered.
    CardAnswered,
    /// The same on a card whose time ran out.
    CardExpired,
    /// The same on a card the agent withdrew before it was answered.
    CardWithdrawn,
    /// A Stop on a mandate already stopped.
    MandateStopped,
    /// A Stop on a mandate whose term has ended.
    MandateEnded,
    /// A Resume whose silence is over (lifted, or past its day).
    Resumed,
    /// A Resume whose silence was followed by a newer one, which has its own notice.
    SilencedAgain,
    /// An On or Off for a kind already in that state.
    CategoryAlready { on: bool },
    /// An On for a kind whose runs could not start: the key `categories.KIND.{leaf}` names
    /// what to fix (`command`, `run_as`, `env_file`).
    CategoryCannotRun { leaf: &'static str },
    /// A suggestion's button pressed again, or after its 7 days.
    Suggestion,
    /// A receipt's Raise today pressed again, on another day, or with nothing left to raise.
    Raise,
    /// A Remove on a rule already removed.
    RuleRemoved,
    /// Any button drawn before an upgrade that changed how buttons are signed, or before the
    /// HMAC key was rotated: this build cannot read it, so it answers nothing.
    FromBeforeUpgrade,
}

/// The press's answer for a stale button (at most `CALLBACK_TEXT_LIMIT` characters);
/// `kind` and `label` name the kind, for a category switch.
pub fn stale_toast(
    locales: &Locales,
    lang: Language,
    stale: Stale,
    (kind, label): (&str, &str),
    origin: Option<&str>,
) -> String {
    let text = match stale {
        Stale::CardAnswered => locales.t(lang, msg::STALE_CARD_ANSWERED, &[]),
        Stale::CardExpired => locales.t(lang, msg::STALE_CARD_EXPIRED, &[]),
        Stale::CardWithdrawn => locales.t(lang, msg::STALE_CARD_WITHDRAWN, &[]),
        Stale::MandateStopped => locales.t(lang, msg::STALE_MANDATE_STOPPED, &[]),
        Stale::MandateEnded => locales.t(lang, msg::STALE_MANDATE_ENDED, &[]),
        Stale::Suggestion => locales.t(lang, msg::STALE_SUGGESTION, &[]),
        Stale::Raise => locales.t(lang, msg::STALE_RAISE, &[]),
        Stale::RuleRemoved => locales.t(lang, msg::STALE_RULE_REMOVED, &[]),
        Stale::FromBeforeUpgrade => locales.t(lang, msg::STALE_FROM_BEFORE_UPGRADE, &[]),
        Stale::Resumed => locales.t(lang, msg::STALE_RESUMED, &[]),
        Stale::SilencedAgain => locales.t(lang, msg::STALE_SILENCED_AGAIN, &[]),
        Stale::CategoryAlready { on } => locales.t(
            lang,
            msg::STALE_CATEGORY,
            &[
                ("label", label.into()),
                ("on", if on { "yes" } else { "no" }.into()),
            ],
        ),
        Stale::CategoryCannotRun { leaf } => {
            let key = format!("categories.{kind}.{leaf}");
            locales.t(
                lang,
                msg::CATEGORY_CANNOT_RUN,
                &[("label", label.into()), ("key", (&key).into())],
            )
        }
    };
    // The card of an ask through a labelled socket: which machine's card it was.
    let text = match origin {
        Some(origin) => locales.t(
            lang,
            msg::STALE_ORIGIN,
            &[("toast", text.as_str().into()), ("origin", origin.into())],
        ),
        None => text,
    };
    super::clamp(&text, super::CALLBACK_TEXT_LIMIT).into_owned()
}

/// What the owner is told of a reply to one of the bot's cards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasonReply {
    /// The reason reached the session with the No.
    Sent,
    /// The reply came after `decline_reason_wait`: the session has its No without a reason.
    Late,
    /// A reason was already given for this No.
    Already,
    /// A reply to a card declined with a plain No, which answered the session at once: only
    /// "No, and say why…" waits for a reason.
    NotAsked,
    /// The reply holds a scalar that does not show (`U+XXXX NAME`), at a 1-based position.
    Hidden { char: String, position: usize },
    /// The reply is not NFC from a 1-based position.
    NotNfc { position: usize },
    /// A reply to a card still open: a text never answers one.
    NotAnAnswer,
}

/// The line for a [`ReasonReply`].
pub fn reason_reply(locales: &Locales, lang: Language, reply: &ReasonReply) -> String {
    match reply {
        ReasonReply::Sent => locales.t(lang, msg::DECLINE_REASON_SENT, &[]),
        ReasonReply::Late => locales.t(lang, msg::DECLINE_REASON_LATE, &[]),
        ReasonReply::Already => locales.t(lang, msg::DECLINE_REASON_ALREADY, &[]),
        ReasonReply::NotAsked => locales.t(lang, msg::DECLINE_REASON_NOT_ASKED, &[]),
        ReasonReply::Hidden { char, position } => locales.t(
            lang,
            msg::DECLINE_REASON_HIDDEN,
            &[
                ("char", char.as_str().into()),
                ("position", (*position).into()),
            ],
        ),
        ReasonReply::NotNfc { position } => locales.t(
            lang,
            msg::DECLINE_REASON_NOT_NFC,
            &[("position", (*position).into())],
        ),
        ReasonReply::NotAnAnswer => locales.t(lang, msg::TEXT_NOT_AN_ANSWER, &[]),
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

/// The reply to `/anchor`: the last line's number and its whole hash, `N:<64 hex>`, and the
/// short form `N:<12 hex>` for the eye.
pub fn anchor(locales: &Locales, lang: Language, head: Option<(u64, &str)>) -> String {
    match head {
        Some((n, hash)) => {
            let anchor = format!("{n}:{hash}");
            let short = short_anchor(&anchor);
            let args = [
                ("anchor", anchor.as_str().into()),
                ("short", short.as_str().into()),
            ];
            locales.t(lang, msg::ANCHOR, &args)
        }
        None => locales.t(lang, msg::ANCHOR_EMPTY, &[]),
    }
}

/// The message that gives the owner a new journal verification key (`consentd journal
/// seal-init` or `rotate`), so a copy lives off the machine.
pub fn seal_key(locales: &Locales, lang: Language, key_hex: &str, key_id: &str) -> String {
    locales.t(
        lang,
        msg::SEAL_KEY,
        &[("key", key_hex.into()), ("id", key_id.into())],
    )
}

/// `N:` and the first 12 hex digits of an anchor `N:<hex>`. The whole hash is what a verifier
/// should be given (a 12-digit prefix can be matched by about 2^48 tries); the short one is for
/// comparing by eye.
fn short_anchor(anchor: &str) -> String {
    match anchor.split_once(':') {
        Some((n, hex)) => format!("{n}:{}", &hex[..hex.len().min(12)]),
        None => anchor.to_owned(),
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

/// A mandate's use on the summary's day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateDay<'a> {
    pub id: &'a str,
    pub label: &'a str,
    pub actions: u32,
    /// `None` for a mandate with no money term: its line shows no money.
    pub usd: Option<Decimal>,
}

/// The evening summary: the day's counts, each mandate's use, and the journal's anchor: `anchor`
/// is `N:<64 hex>`, shown whole and in its 12-digit short form.
pub fn summary(
    locales: &Locales,
    lang: Language,
    date: NaiveDate,
    counts: &DayCounts,
    origins: &[(String, u32)],
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
    // Only for an owner whose agents' hooks have saved rules: a line of zeros would be noise.
    if counts.by_rules > 0 {
        lines.push(locales.t(
            lang,
            msg::SUMMARY_RULES,
            &[("count", counts.by_rules.into())],
        ));
    }
    // Only for an owner with labelled sockets that asked: each origin and its asks.
    if !origins.is_empty() {
        let listed = origins
            .iter()
            .map(|(origin, asks)| format!("{origin} {asks}"))
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(locales.t(
            lang,
            msg::SUMMARY_ORIGINS,
            &[("origins", listed.as_str().into())],
        ));
    }
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
    let short = short_anchor(anchor);
    let args = [("anchor", anchor.into()), ("short", short.as_str().into())];
    lines.push(locales.t(lang, msg::SUMMARY_ANCHOR, &args));
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
                usage(&locales, lang, UsageLine::Quiet),
                usage(&locales, lang, UsageLine::NightCards { max: 2 }),
                usage(&locales, lang, UsageLine::Summary),
                usage(&locales, lang, UsageLine::Lang),
                usage(&locales, lang, UsageLine::NoArgument),
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
                seal_key(&locales, lang, &"5e".repeat(32), "9e859a2beec0eb20"),
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

    /// What the owner is told in the chat besides cards: a setting as it is now, the pointer to
    /// /help, each stale button's toast, and what became of a reply to a card.
    #[test]
    fn snapshot_chat_replies() {
        let locales = locales();
        let night = Some((
            NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
            NaiveTime::from_hms_opt(8, 0, 0).unwrap(),
        ));
        let stale = [
            Stale::CardAnswered,
            Stale::CardExpired,
            Stale::MandateStopped,
            Stale::MandateEnded,
            Stale::Suggestion,
            Stale::Resumed,
            Stale::SilencedAgain,
            Stale::CategoryAlready { on: true },
            Stale::CategoryAlready { on: false },
            Stale::CategoryCannotRun { leaf: "command" },
        ];
        let replies = [
            ReasonReply::Sent,
            ReasonReply::Late,
            ReasonReply::Already,
            ReasonReply::NotAsked,
            ReasonReply::Hidden {
                char: "U+200B ZERO WIDTH SPACE".to_owned(),
                position: 7,
            },
            ReasonReply::NotNfc { position: 3 },
            ReasonReply::NotAnAnswer,
        ];
        for lang in Language::ALL {
            let mut shown = vec![
                quiet_current(&locales, lang, night),
                quiet_current(&locales, lang, None),
                nightcards_current(&locales, lang, 0, 2),
                nightcards_current(&locales, lang, 1, 2),
                nightcards_current(&locales, lang, 2, 5),
                nightcards_current(&locales, lang, 5, 5),
                help_pointer(&locales, lang),
            ];
            for stale in stale {
                let toast = stale_toast(&locales, lang, stale, ("publish_x", label(lang)), None);
                assert!(toast.chars().count() <= super::super::CALLBACK_TEXT_LIMIT);
                shown.push(toast);
            }
            for reply in &replies {
                shown.push(reason_reply(&locales, lang, reply));
            }
            let shown = shown.join("\n====\n");
            assert_clean(&shown);
            snapshot(format!("chat_replies_{lang}"), shown);
        }
    }

    #[test]
    fn the_summary_counts_calls_passed_by_rules_only_when_there_were_some() {
        let locales = locales();
        let date = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        for lang in Language::ALL {
            let none = summary(
                &locales,
                lang,
                date,
                &DayCounts::default(),
                &[],
                &[],
                "1:ab",
            );
            let counts = DayCounts {
                by_rules: 7,
                ..DayCounts::default()
            };
            let some = summary(&locales, lang, date, &counts, &[], &[], "1:ab");
            assert_eq!(some.lines().count(), none.lines().count() + 1, "{lang:?}");
            assert!(some.contains(": 7."), "{lang:?}: {some}");
        }
    }

    #[test]
    fn the_summary_and_a_stale_toast_name_the_labelled_sockets_and_only_them() {
        let locales = locales();
        let date = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        let origins = [("devbox".to_owned(), 3), ("ci runner".to_owned(), 1)];
        for lang in Language::ALL {
            let none = summary(
                &locales,
                lang,
                date,
                &DayCounts::default(),
                &[],
                &[],
                "1:ab",
            );
            let some = summary(
                &locales,
                lang,
                date,
                &DayCounts::default(),
                &origins,
                &[],
                "1:ab",
            );
            assert_eq!(some.lines().count(), none.lines().count() + 1, "{lang:?}");
            assert!(some.contains("devbox 3, ci runner 1."), "{lang:?}: {some}");
            let stale = Stale::CardExpired;
            let plain = stale_toast(&locales, lang, stale, ("k", "K"), None);
            let from = stale_toast(&locales, lang, stale, ("k", "K"), Some("devbox"));
            assert!(!plain.contains("devbox"), "{lang:?}: {plain}");
            assert!(from.starts_with(&plain), "{lang:?}: {from}");
            assert!(from.ends_with("devbox)"), "{lang:?}: {from}");
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
            by_rules: 0,
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
                &[],
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
                &[],
                &mandates,
                "1234:0123456789ab",
            );
            assert!(!text.contains('$'), "{text}");
            assert_clean(&text);
            snapshot(format!("summary_no_money_{lang}"), text);
        }
    }

    #[test]
    fn a_withdrawn_cards_button_says_the_agent_withdrew_it() {
        let locales = locales();
        for (lang, words) in [
            (Language::En, "The agent withdrew this ask"),
            (Language::Ru, "Агент отозвал этот запрос"),
            (Language::Pt, "O agente retirou este pedido"),
        ] {
            let toast = stale_toast(
                &locales,
                lang,
                Stale::CardWithdrawn,
                ("shell", "Shell"),
                None,
            );
            assert!(toast.starts_with(words), "{lang:?}: {toast}");
            assert!(toast.chars().count() <= super::super::CALLBACK_TEXT_LIMIT);
        }
    }
}
