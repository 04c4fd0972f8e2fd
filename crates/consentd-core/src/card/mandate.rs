//! The mandate's side of the chat (docs/PROTOCOL.md, "Mandates"): the card asking for a standing
//! permission and its
//! edits, the receipt for each action a mandate answered, the `/mandates` list, and the notices
//! of a mandate stopped or ended. Pure functions of their inputs, like the rest of [`crate::card`].

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use super::{
    button, class_message, local_time, msg, usd, ButtonAction, CardBody, CardError, CardView,
    Outcome, Rendered,
};
use crate::locale::{Language, Locales};
use crate::lookalike::Warning;
use crate::raise::DayLimits;
use crate::styled::Styled;

/// The terms of a mandate as its card shows them.
#[derive(Debug, Clone)]
pub struct MandateView<'a> {
    /// The id of the record that asked for it, which is also the mandate's id.
    pub record_id: &'a str,
    /// The category's label in the owner's language.
    pub label: &'a str,
    /// "external" | "spend" (never "destructive": no mandate covers those).
    pub class: &'a str,
    /// Empty for a kind with no target: the card says it covers that kind for any use.
    pub targets: &'a [String],
    /// Each target's look-alike warnings, in the order of `targets` (empty: none drawn).
    pub target_warnings: &'a [Vec<Warning>],
    /// The end of its term, fixed when it was asked, so the card shows exactly what a Grant opens.
    pub ends_at: DateTime<Utc>,
    /// `None`: no money term (a kind that never costs), so no money line anywhere.
    pub usd_per_day: Option<Decimal>,
    pub actions_per_day: u32,
    pub reason: Option<&'a str>,
    /// The owner's zone.
    pub tz: Tz,
    /// The client's one line on where the request came from, set apart on its own line.
    pub origin: Option<&'a str>,
    /// For a request the owner opened from consentd's suggestion (never one a session made),
    /// the yeses it was suggested after: the card says so in a line of its own.
    pub suggested_after: Option<u32>,
    /// The owner's raise of the day its use is shown for (`crate::raise`): that use is shown
    /// against the raised limits, with a line that says they hold for today only.
    pub raised_today: Option<DayLimits>,
}

/// A mandate's use today, against its terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageView {
    pub actions: u32,
    pub usd: Decimal,
}

/// The terms, one line each: title, targets (or, for a kind with no target, that it covers any
/// use), until, the day's limits (money only where there is a money term), the reason, the
/// record. The targets and the reason, which the agent chose, are set apart as values.
fn terms_lines(
    view: &MandateView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Vec<Styled> {
    let until = local_time(locales, lang, view.ends_at, view.tz, now);
    let class = match class_message(view.class) {
        Some(id) => locales.t(lang, id, &[]),
        None => view.class.to_owned(),
    };
    let plain = |id: &str, args: &[(&str, crate::locale::FluentArg)]| {
        Styled::plain(locales.t(lang, id, args))
    };
    let mut lines = vec![plain(
        msg::MANDATE_TITLE,
        &[("label", view.label.into()), ("class", (&class).into())],
    )];
    if let Some(origin) = view.origin {
        lines.push(locales.styled(lang, msg::CARD_ORIGIN, &[], &[("origin", origin)]));
    }
    if let Some(approvals) = view.suggested_after {
        lines.push(plain(msg::SUGGEST_CARD, &[("approvals", approvals.into())]));
    }
    lines.extend(target_lines(
        view.targets,
        view.target_warnings,
        view.label,
        locales,
        lang,
    ));
    lines.push(plain(msg::MANDATE_UNTIL, &[("when", (&until).into())]));
    lines.push(limits_line(
        view.usd_per_day,
        view.actions_per_day,
        locales,
        lang,
    ));
    if let Some(reason) = view.reason {
        lines.push(locales.styled(lang, msg::MANDATE_REASON, &[], &[("reason", reason)]));
    }
    lines.push(plain(msg::CARD_RECORD, &[("id", view.record_id.into())]));
    lines
}

/// Each target with its look-alike warnings; for a kind with no target, that the mandate covers
/// any use of it.
fn target_lines(
    targets: &[String],
    warnings: &[Vec<Warning>],
    label: &str,
    locales: &Locales,
    lang: Language,
) -> Vec<Styled> {
    let mut lines = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        lines.push(locales.styled(lang, msg::CARD_TARGET, &[], &[("target", target)]));
        let warnings = warnings.get(index).map_or(&[][..], Vec::as_slice);
        lines.extend(super::warning_lines(warnings, locales, lang));
    }
    if targets.is_empty() {
        lines.push(Styled::plain(locales.t(
            lang,
            msg::MANDATE_ANY_USE,
            &[("label", label.into())],
        )));
    }
    lines
}

/// "At most $5.00 and 10 actions a day"; with no money term, "At most 10 actions a day".
fn limits_line(
    usd_per_day: Option<Decimal>,
    actions_per_day: u32,
    locales: &Locales,
    lang: Language,
) -> Styled {
    let text = match usd_per_day {
        Some(usd) => locales.t(
            lang,
            msg::MANDATE_LIMITS,
            &[
                ("usd", super::usd(lang, usd).as_str().into()),
                ("actions", actions_per_day.into()),
            ],
        ),
        None => locales.t(
            lang,
            msg::MANDATE_LIMITS_ACTIONS,
            &[("actions", actions_per_day.into())],
        ),
    };
    Styled::plain(text)
}

/// The card asking for a mandate, answerable until `expires_at`, with Grant and Decline.
pub(crate) fn render_mandate_card(
    view: &MandateView,
    expires_at: DateTime<Utc>,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Rendered {
    let mut lines = terms_lines(view, locales, lang, now);
    lines.push(Styled::plain(locales.t(lang, msg::MANDATE_EXPLAIN, &[])));
    let when = local_time(locales, lang, expires_at, view.tz, now);
    lines.push(Styled::plain(locales.t(
        lang,
        msg::CARD_DEADLINE,
        &[("when", (&when).into())],
    )));
    Rendered {
        parts: Vec::new(),
        card: Styled::join(&lines, "\n"),
        buttons: vec![
            button(locales, lang, ButtonAction::Grant),
            button(locales, lang, ButtonAction::Decline),
            super::say_why_button(locales, lang, true),
        ],
    }
}

/// The mandate card, or why it cannot be one message (too many or too long targets and reason),
/// checked before the request is stored.
pub fn try_render_mandate_card(
    view: &MandateView,
    expires_at: DateTime<Utc>,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Result<Rendered, CardError> {
    super::fits_beside_footer(&Styled::join(&terms_lines(view, locales, lang, now), "\n").text)?;
    Ok(render_mandate_card(view, expires_at, locales, lang, now))
}

/// The mandate card once answered: the same terms, and the outcome and who decided in place of
/// the deadline. No buttons.
pub fn render_mandate_outcome(
    view: &MandateView,
    outcome: &Outcome,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Styled {
    let mut lines = terms_lines(view, locales, lang, now);
    lines.push(super::outcome_line(outcome, locales, lang));
    lines.extend(super::reply_invite(outcome, locales, lang));
    Styled::join(&lines, "\n")
}

/// "Today: 4 of 10 actions, $2.40 of $5.00"; with no money term, "Today: 4 of 10 actions".
pub(crate) fn usage_line(
    view: &MandateView,
    usage: UsageView,
    locales: &Locales,
    lang: Language,
) -> String {
    let limits = view.raised_today.unwrap_or(DayLimits {
        actions_per_day: view.actions_per_day,
        usd_per_day: view.usd_per_day,
    });
    let line = match limits.usd_per_day {
        None => locales.t(
            lang,
            msg::MANDATE_USAGE_ACTIONS,
            &[
                ("actions", usage.actions.into()),
                ("max", limits.actions_per_day.into()),
            ],
        ),
        Some(usd_max) => locales.t(
            lang,
            msg::MANDATE_USAGE,
            &[
                ("actions", usage.actions.into()),
                ("max", limits.actions_per_day.into()),
                ("usd", usd(lang, usage.usd).as_str().into()),
                ("usd_max", usd(lang, usd_max).as_str().into()),
            ],
        ),
    };
    match view.raised_today {
        Some(_) => format!(
            "{line}\n{}",
            locales.t(lang, msg::MANDATE_RAISED_TODAY, &[])
        ),
        None => line,
    }
}

/// One open mandate in the `/mandates` reply: its terms, today's use, and Stop.
pub fn mandate_summary(
    view: &MandateView,
    usage: UsageView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> (Styled, Vec<super::Button>) {
    let mut lines = terms_lines(view, locales, lang, now);
    lines.push(Styled::plain(usage_line(view, usage, locales, lang)));
    (
        Styled::join(&lines, "\n"),
        vec![button(locales, lang, ButtonAction::Stop)],
    )
}

/// The first line of the `/mandates` reply.
pub fn mandates_count(locales: &Locales, lang: Language, count: usize) -> String {
    locales.t(lang, msg::MANDATES_COUNT, &[("count", count.into())])
}

/// The receipt for an action a mandate answered: what ran, as a card shows it; how it ended;
/// today's use against the mandate's terms and until when it lasts; and Stop. A text too long
/// for one message goes in numbered parts before it, as on a card.
///
/// `raise`: the limits a "Raise today" would lift the day to, when this action used the day up
/// and a raise stands (`crate::raise::offered`): the receipt says so, and carries the button
/// after Stop.
#[allow(clippy::too_many_arguments)]
pub fn render_receipt(
    action: &CardView,
    mandate: &MandateView,
    usage: UsageView,
    raise: Option<DayLimits>,
    outcome: &Outcome,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Rendered {
    let body = CardBody::new(action, locales, lang);
    let mut footer = super::outcome_footer(outcome, locales, lang);
    footer.push(Styled::plain(usage_line(mandate, usage, locales, lang)));
    if let Some(raised) = raise {
        footer.push(Styled::plain(locales.t(lang, msg::RECEIPT_RAISE, &[])));
        footer.push(limits_line(
            raised.usd_per_day,
            raised.actions_per_day,
            locales,
            lang,
        ));
    }
    let until = local_time(locales, lang, mandate.ends_at, mandate.tz, now);
    footer.push(Styled::plain(locales.t(
        lang,
        msg::MANDATE_UNTIL,
        &[("when", (&until).into())],
    )));
    let mut card = Styled::plain(locales.t(
        lang,
        msg::RECEIPT_TITLE,
        &[("id", mandate.record_id.into())],
    ));
    card.push_str("\n");
    card.push(&body.assemble(&footer));
    let mut buttons = vec![button(locales, lang, ButtonAction::Stop)];
    if raise.is_some() {
        buttons.push(button(locales, lang, ButtonAction::Raise));
    }
    Rendered {
        parts: body.part_messages(),
        card,
        buttons,
    }
}

/// What a suggestion offers (`crate::suggest`): the terms a mandate would have, and how many of
/// the owner's yeses they stand for.
#[derive(Debug, Clone)]
pub struct SuggestionView<'a> {
    /// The category's label in the owner's language.
    pub label: &'a str,
    /// Empty for a kind with no target.
    pub targets: &'a [String],
    /// Each target's look-alike warnings, in the order of `targets`, as its cards showed them.
    pub target_warnings: &'a [Vec<Warning>],
    pub days: u32,
    pub usd_per_day: Option<Decimal>,
    pub actions_per_day: u32,
    pub approvals: u32,
    /// The busiest local day's count of those yeses, and their money for a kind that costs:
    /// what the terms are based on, said on the suggestion.
    pub busiest_actions: u32,
    pub busiest_usd: Option<Decimal>,
}

/// The suggestion: the yeses it comes from, the terms that would have covered them, that
/// nothing changes until Grant on the card its one button opens, and that button.
pub fn render_suggestion(view: &SuggestionView, locales: &Locales, lang: Language) -> Rendered {
    let plain = |id: &str, args: &[(&str, crate::locale::FluentArg)]| {
        Styled::plain(locales.t(lang, id, args))
    };
    let mut lines = vec![
        plain(
            msg::SUGGEST_TITLE,
            &[
                ("label", view.label.into()),
                ("approvals", view.approvals.into()),
            ],
        ),
        plain(msg::SUGGEST_WOULD_COVER, &[]),
    ];
    lines.extend(target_lines(
        view.targets,
        view.target_warnings,
        view.label,
        locales,
        lang,
    ));
    lines.push(plain(msg::SUGGEST_DAYS, &[("days", view.days.into())]));
    lines.push(limits_line(
        view.usd_per_day,
        view.actions_per_day,
        locales,
        lang,
    ));
    lines.push(plain(
        msg::SUGGEST_BASED_ON,
        &[
            ("busiest", view.busiest_actions.into()),
            ("allows", view.actions_per_day.into()),
        ],
    ));
    if let (Some(busiest), Some(allows)) = (view.busiest_usd, view.usd_per_day) {
        lines.push(plain(
            msg::SUGGEST_BASED_ON_MONEY,
            &[
                ("usd_busiest", usd(lang, busiest).as_str().into()),
                ("usd_allows", usd(lang, allows).as_str().into()),
            ],
        ));
    }
    lines.push(plain(msg::SUGGEST_EXPLAIN, &[]));
    Rendered {
        parts: Vec::new(),
        card: Styled::join(&lines, "\n"),
        buttons: vec![button(locales, lang, ButtonAction::Suggest)],
    }
}

/// The reply to the owner's Raise today.
pub fn mandate_raised(locales: &Locales, lang: Language, label: &str) -> String {
    locales.t(lang, msg::RAISE_DONE, &[("label", label.into())])
}

/// The reply to the owner's Stop.
pub fn mandate_stopped(locales: &Locales, lang: Language, label: &str) -> String {
    locales.t(lang, msg::MANDATE_STOPPED, &[("label", label.into())])
}

/// The notice that a mandate's term is over.
pub fn mandate_ended(locales: &Locales, lang: Language, id: &str, label: &str) -> String {
    locales.t(
        lang,
        msg::MANDATE_ENDED,
        &[("id", id.into()), ("label", label.into())],
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::card::tests::{assert_clean, label, locales, now, show, snapshot};
    use crate::card::AttachmentView;
    use chrono::TimeZone;
    use std::collections::BTreeMap;

    const RECORD: &str = "r_0123456789abcdef0123";
    const MANDATE: &str = "r_fedcba9876543210fedc";

    fn targets() -> Vec<String> {
        vec!["@mila_news".to_owned(), "@mila_shop".to_owned()]
    }

    pub(in crate::card) fn view<'a>(targets: &'a [String], lang: Language) -> MandateView<'a> {
        MandateView {
            record_id: MANDATE,
            label: label(lang),
            class: "external",
            targets,
            target_warnings: &[],
            ends_at: Utc.with_ymd_and_hms(2026, 3, 10, 11, 20, 0).unwrap(),
            usd_per_day: Some(Decimal::new(500, 2)),
            actions_per_day: 10,
            reason: Some("Daily news posts while I am away"),
            tz: chrono_tz::Europe::Moscow,
            origin: None,
            suggested_after: None,
            raised_today: None,
        }
    }

    #[test]
    fn snapshot_mandate_card() {
        let locales = locales();
        let targets = targets();
        for lang in Language::ALL {
            let expires = now() + chrono::Duration::minutes(15);
            let rendered =
                render_mandate_card(&view(&targets, lang), expires, &locales, lang, now());
            assert_eq!(
                rendered
                    .buttons
                    .iter()
                    .map(|b| b.action)
                    .collect::<Vec<_>>(),
                [
                    ButtonAction::Grant,
                    ButtonAction::Decline,
                    ButtonAction::NoSayWhy
                ]
            );
            assert!(rendered.parts.is_empty());
            assert!(
                rendered.card.text.contains("@mila_news")
                    && rendered.card.text.contains("@mila_shop")
            );
            assert!(rendered
                .card
                .text
                .contains(&crate::card::usd_digits(lang, "5.00")));
            assert_clean(&rendered.card.text);
            snapshot(format!("mandate_card_{lang}"), show(&rendered));
        }
    }

    #[test]
    fn snapshot_suggestion() {
        let locales = locales();
        let targets = vec!["@mila_news".to_owned()];
        for lang in Language::ALL {
            for (usd, approvals) in [(Some(Decimal::new(50, 2)), 3), (None, 21)] {
                let offered = SuggestionView {
                    label: "Post to X",
                    targets: &targets,
                    target_warnings: &[],
                    days: 7,
                    usd_per_day: usd,
                    actions_per_day: 5,
                    approvals,
                    busiest_actions: 3,
                    busiest_usd: usd.map(|_| Decimal::new(12, 2)),
                };
                let rendered = render_suggestion(&offered, &locales, lang);
                let actions: Vec<_> = rendered.buttons.iter().map(|b| b.action).collect();
                assert_eq!(
                    actions,
                    [ButtonAction::Suggest],
                    "one button, which grants nothing"
                );
                assert!(rendered.card.text.contains("@mila_news"));
                assert_eq!(
                    rendered
                        .card
                        .text
                        .contains(&crate::card::usd_digits(lang, "0.50")),
                    usd.is_some(),
                    "a money line only with a money term"
                );
                assert_clean(&rendered.card.text);
                // The card its button opens says, in a line no session can write, whose it is.
                let card_targets = targets.clone();
                let card = MandateView {
                    reason: None,
                    suggested_after: Some(approvals),
                    ..view(&card_targets, lang)
                };
                let expires = now() + chrono::Duration::minutes(15);
                let card = render_mandate_card(&card, expires, &locales, lang, now());
                assert_clean(&card.card.text);
                let name = format!("suggestion_{approvals}_{lang}");
                snapshot(name, format!("{}\n---\n{}", show(&rendered), show(&card)));
            }
        }
    }

    #[test]
    fn snapshot_mandate_granted() {
        let locales = locales();
        let targets = targets();
        for lang in Language::ALL {
            let outcome = Outcome {
                state: "granted",
                decided_by: Some("Mila Petrova".to_owned()),
                result: None,
                reason: None,
                reply_by: None,
            };
            let text =
                render_mandate_outcome(&view(&targets, lang), &outcome, &locales, lang, now());
            assert!(text.text.contains("Mila Petrova"));
            assert_clean(&text.text);
            snapshot(format!("mandate_granted_{lang}"), text.marked());
        }
    }

    /// A post to `@mila_news` as a receipt shows what ran.
    fn posted<'a>(
        fields: &'a BTreeMap<String, String>,
        attachments: &'a [AttachmentView<'a>],
        cost_usd: Option<&'a str>,
        lang: Language,
    ) -> CardView<'a> {
        CardView {
            record_id: RECORD,
            kind: "publish_x",
            label: label(lang),
            class: "external",
            target: Some("@mila_news"),
            target_warnings: &[],
            fields,
            field_labels: &crate::card::NO_FIELD_LABELS,
            field_warnings: &[],
            cost_usd,
            attachments,
            text: Some("Morning news: the bridge reopens today."),
            text_sha256_hex: Some("aa"),
            expires_at: now(),
            tz: chrono_tz::Europe::Moscow,
            urgent: false,
            agent_runs: false,
            hook: None,
            origin: None,
        }
    }

    fn executed() -> Outcome<'static> {
        Outcome {
            state: "executed",
            decided_by: None,
            result: Some("https://x.com/mila_news/status/3"),
            reason: None,
            reply_by: None,
        }
    }

    #[test]
    fn snapshot_receipt() {
        let locales = locales();
        let targets = targets();
        let fields = BTreeMap::new();
        let attachments: [AttachmentView; 0] = [];
        for lang in Language::ALL {
            let action = posted(&fields, &attachments, Some("0.40"), lang);
            let outcome = executed();
            let usage = UsageView {
                actions: 4,
                usd: Decimal::new(240, 2),
            };
            let rendered = render_receipt(
                &action,
                &view(&targets, lang),
                usage,
                None,
                &outcome,
                &locales,
                lang,
                now(),
            );
            assert_eq!(
                rendered
                    .buttons
                    .iter()
                    .map(|b| b.action)
                    .collect::<Vec<_>>(),
                [ButtonAction::Stop]
            );
            let money = |amount| crate::card::usd_digits(lang, amount);
            assert!(rendered.card.text.contains(&money("2.40")));
            assert!(rendered.card.text.contains(&money("5.00")));
            assert!(rendered.card.text.contains(MANDATE));
            assert_clean(&rendered.card.text);
            snapshot(format!("receipt_{lang}"), show(&rendered));
            // The receipt of the day's last: what a raise lifts the day to, and its button.
            let last = UsageView {
                actions: 10,
                usd: Decimal::new(400, 2),
            };
            let raise = DayLimits {
                actions_per_day: 15,
                usd_per_day: Some(Decimal::new(500, 2)),
            };
            let offer = render_receipt(
                &action,
                &view(&targets, lang),
                last,
                Some(raise),
                &outcome,
                &locales,
                lang,
                now(),
            );
            let actions: Vec<_> = offer.buttons.iter().map(|b| b.action).collect();
            assert_eq!(actions, [ButtonAction::Stop, ButtonAction::Raise]);
            assert!(offer.card.text.contains("15"), "{}", offer.card.text);
            assert_clean(&offer.card.text);
            // And once raised, today's use is shown against the raised limits.
            let raised = MandateView {
                raised_today: Some(raise),
                ..view(&targets, lang)
            };
            let after = render_receipt(
                &action,
                &raised,
                last,
                None,
                &outcome,
                &locales,
                lang,
                now(),
            );
            assert!(after.card.text.contains("15"), "{}", after.card.text);
            assert_clean(&after.card.text);
            snapshot(
                format!("receipt_raise_{lang}"),
                format!("{}\n====\n{}", show(&offer), show(&after)),
            );
        }
    }

    #[test]
    fn snapshot_mandates_list() {
        let locales = locales();
        let targets = targets();
        for lang in Language::ALL {
            let usage = UsageView {
                actions: 1,
                usd: Decimal::ZERO,
            };
            let (text, buttons) =
                mandate_summary(&view(&targets, lang), usage, &locales, lang, now());
            assert_eq!(buttons.len(), 1);
            assert_eq!(buttons[0].action, ButtonAction::Stop);
            let mut shown = Vec::new();
            for count in [0, 1, 2, 5] {
                shown.push(mandates_count(&locales, lang, count));
            }
            shown.push(format!("{}\n----\n[{}]", text.marked(), buttons[0].label));
            shown.push(mandate_stopped(&locales, lang, label(lang)));
            shown.push(mandate_ended(&locales, lang, MANDATE, label(lang)));
            let all = shown.join("\n====\n");
            assert_clean(&all);
            snapshot(format!("mandates_list_{lang}"), all);
        }
    }

    fn image_label(lang: Language) -> &'static str {
        match lang {
            Language::En => "Generate an image",
            Language::Ru => "Сгенерировать картинку",
            Language::Pt => "Gerar uma imagem",
        }
    }

    #[test]
    fn snapshot_mandate_card_for_any_use() {
        let locales = locales();
        for lang in Language::ALL {
            let view = MandateView {
                label: image_label(lang),
                class: "spend",
                targets: &[],
                reason: Some("Illustrations for the blog"),
                ..view(&[], lang)
            };
            let expires = now() + chrono::Duration::minutes(15);
            let rendered = render_mandate_card(&view, expires, &locales, lang, now());
            let any_use = locales.t(
                lang,
                msg::MANDATE_ANY_USE,
                &[("label", image_label(lang).into())],
            );
            assert!(
                rendered.card.text.contains(&any_use),
                "{}",
                rendered.card.text
            );
            let target_line = locales.styled(lang, msg::CARD_TARGET, &[], &[("target", "")]);
            assert!(!rendered.card.text.contains(target_line.text.trim_end()));
            assert!(rendered
                .card
                .text
                .contains(&crate::card::usd_digits(lang, "5.00")));
            assert_clean(&rendered.card.text);
            snapshot(format!("mandate_card_any_use_{lang}"), show(&rendered));
        }
    }

    #[test]
    fn snapshot_receipt_with_no_money() {
        let locales = locales();
        let targets = targets();
        let fields = BTreeMap::new();
        let attachments: [AttachmentView; 0] = [];
        for lang in Language::ALL {
            let action = posted(&fields, &attachments, None, lang);
            let outcome = executed();
            let usage = UsageView {
                actions: 2,
                usd: Decimal::ZERO,
            };
            let free = MandateView {
                usd_per_day: None,
                ..view(&targets, lang)
            };
            let rendered =
                render_receipt(&action, &free, usage, None, &outcome, &locales, lang, now());
            let (listed, _) = mandate_summary(&free, usage, &locales, lang, now());
            for text in [&rendered.card.text, &listed.text] {
                assert!(!text.contains('$'), "no money line: {text}");
                assert_clean(text);
            }
            let shown = format!("{}\n====\n{}", show(&rendered), listed.marked());
            snapshot(format!("receipt_no_money_{lang}"), shown);
        }
    }

    #[test]
    fn a_mandate_card_too_long_for_one_message_is_refused() {
        let locales = locales();
        let long: Vec<String> = (0..20)
            .map(|i| format!("@{i}{}", "x".repeat(250)))
            .collect();
        let view = view(&long, Language::En);
        let error = try_render_mandate_card(&view, now(), &locales, Language::En, now())
            .expect_err("5,000 characters of targets do not fit");
        assert!(error.code_points > error.room);
        let short = targets();
        let short_view = MandateView {
            targets: &short,
            ..view
        };
        assert!(try_render_mandate_card(&short_view, now(), &locales, Language::En, now()).is_ok());
    }
}
