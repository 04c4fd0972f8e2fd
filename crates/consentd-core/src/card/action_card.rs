//! An action's card built one way for everyone who builds one: the intake, which measures the
//! card before its record exists, and the drawer, which draws it from the stored record. What a
//! card derives from its action — the category's label and class in the owner's language, the
//! field labels, the look-alike lines, the text's SHA-256, the cost as shown — is derived here
//! once, so the card the intake measured is the card the owner gets.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use super::{AttachmentView, CardView, HookView};
use crate::config::Category;
use crate::digest::Sha256Hash;
use crate::locale::Language;
use crate::lookalike::{self, KnownTargets, Warning};

/// A record id's width ("r_" and 20 hex digits): a card measured before its record exists is
/// measured with an id of this width, so it is exactly as long as the card that will be drawn.
pub const UNNUMBERED_RECORD: &str = "r_00000000000000000000";

/// The card's origin line for an ask through the labelled socket `listener` (its `[[listen]]`
/// origin) carrying its own `origin` (the client's words): the socket's label first, which the
/// session cannot choose, then the client's, which it can. The main socket has no label.
pub fn shown_origin(listener: Option<&str>, origin: Option<&str>) -> Option<String> {
    match (listener, origin) {
        (Some(listener), Some(origin)) => Some(format!(
            "{listener} {} {origin}",
            lookalike::ORIGIN_SEPARATOR
        )),
        (Some(only), None) | (None, Some(only)) => Some(only.to_owned()),
        (None, None) => None,
    }
}

/// What an action's card shows, as its caller has it: the action's own parts, its category (none
/// when the config no longer has it: the card then names the kind), and whom it is drawn for.
#[derive(Debug, Clone)]
pub struct ActionShown<'a> {
    /// The record's id, or [`UNNUMBERED_RECORD`] before there is one.
    pub record_id: &'a str,
    pub kind: &'a str,
    pub category: Option<&'a Category>,
    pub target: Option<&'a str>,
    pub text: Option<&'a str>,
    pub fields: &'a BTreeMap<String, String>,
    pub attachments: Vec<AttachmentView<'a>>,
    pub cost_usd: Option<Decimal>,
    pub urgent: bool,
    pub origin: Option<&'a str>,
    /// Approval-only as it was asked: the card says the agent runs it and consentd nothing.
    pub agent_runs: bool,
    pub hook: Option<HookView<'a>>,
    pub lang: Language,
    pub tz: Tz,
}

/// What a card derives from [`ActionShown`], owned so that a [`CardView`] can borrow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionDerived {
    field_labels: BTreeMap<String, String>,
    target_warnings: Vec<Warning>,
    field_warnings: Vec<Vec<Warning>>,
    text_sha256_hex: Option<String>,
    cost_usd: Option<String>,
}

impl ActionShown<'_> {
    /// Derives what the card shows beside the action, its target and one-word field values
    /// compared with `known` (the intake, before a record exists, passes none: its mixed-script
    /// lines are exact, and room is kept for look-alike lines by the card's limits).
    pub fn derive(&self, known: &KnownTargets) -> ActionDerived {
        ActionDerived {
            field_labels: self
                .category
                .map(|category| category.field_labels_in(self.lang))
                .unwrap_or_default(),
            target_warnings: self
                .target
                .map(|target| lookalike::warnings(target, known))
                .unwrap_or_default(),
            field_warnings: lookalike::field_warnings(self.fields.values(), known),
            text_sha256_hex: self
                .text
                .map(|text| Sha256Hash::of(text.as_bytes()).to_hex()),
            cost_usd: self.cost_usd.map(crate::action::format_usd),
        }
    }
}

impl<'a> CardView<'a> {
    /// The card of `shown`, with what `derived` holds, answerable until `expires_at`.
    pub fn for_action(
        shown: &'a ActionShown<'a>,
        derived: &'a ActionDerived,
        expires_at: DateTime<Utc>,
    ) -> CardView<'a> {
        CardView {
            record_id: shown.record_id,
            kind: shown.kind,
            label: shown
                .category
                .map_or(shown.kind, |category| category.label(shown.lang)),
            class: shown
                .category
                .map_or("external", |category| category.class.as_str()),
            target: shown.target,
            target_warnings: &derived.target_warnings,
            fields: shown.fields,
            field_labels: &derived.field_labels,
            field_warnings: &derived.field_warnings,
            cost_usd: derived.cost_usd.as_deref(),
            attachments: &shown.attachments,
            text: shown.text,
            text_sha256_hex: derived.text_sha256_hex.as_deref(),
            expires_at,
            tz: shown.tz,
            urgent: shown.urgent,
            origin: shown.origin,
            agent_runs: shown.agent_runs,
            hook: shown.hook,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::{render_card, CardView};
    use crate::locale::Locales;

    const CONFIG: &str = r#"
[paths]
state_dir = "/var/lib/consentd"

[categories.publish_x]
label = { en = "Post to X", ru = "Пост в X" }
class = "spend"
command = ["/usr/lib/consentd/publish-x"]
fields = ["subject"]
"#;

    fn shown<'a>(
        record_id: &'a str,
        category: Option<&'a Category>,
        fields: &'a BTreeMap<String, String>,
        lang: Language,
    ) -> ActionShown<'a> {
        ActionShown {
            record_id,
            kind: "publish_x",
            category,
            target: Some("@news_main"),
            text: Some("Hello"),
            fields,
            attachments: Vec::new(),
            cost_usd: Some(Decimal::new(40, 2)),
            urgent: false,
            origin: None,
            agent_runs: false,
            hook: None,
            lang,
            tz: chrono_tz::UTC,
        }
    }

    /// The card the intake measures before a record exists is as long as the one drawn for the
    /// record: the placeholder id has a real id's width, and nothing else differs.
    #[test]
    fn a_card_measured_before_its_record_is_the_card_drawn_for_it() {
        let config = crate::config::parse(CONFIG, "test").unwrap();
        let category = config.categories.get("publish_x");
        let fields = BTreeMap::from([("subject".to_owned(), "news".to_owned())]);
        let locales = Locales::new().unwrap();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        for lang in [Language::En, Language::Ru, Language::Pt] {
            let before = shown(UNNUMBERED_RECORD, category, &fields, lang);
            let after = shown("r_0123456789abcdef0123", category, &fields, lang);
            let known = KnownTargets::default();
            let (d_before, d_after) = (before.derive(&known), after.derive(&known));
            let measured = render_card(
                &CardView::for_action(&before, &d_before, now),
                &locales,
                lang,
                now,
            );
            let drawn = render_card(
                &CardView::for_action(&after, &d_after, now),
                &locales,
                lang,
                now,
            );
            assert_eq!(
                measured
                    .card
                    .text
                    .replace(UNNUMBERED_RECORD, after.record_id),
                drawn.card.text,
                "{lang:?}: the same card but for its id"
            );
            assert_eq!(measured.card.text.len(), drawn.card.text.len(), "{lang:?}");
        }
    }

    /// What the card derives: the category's label and class in the owner's language, the cost
    /// with two decimals, the text's SHA-256; a kind the config no longer has is named as it is.
    #[test]
    fn a_card_takes_label_class_cost_and_hash_from_its_action() {
        let config = crate::config::parse(CONFIG, "test").unwrap();
        let fields = BTreeMap::new();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let with = shown(
            UNNUMBERED_RECORD,
            config.categories.get("publish_x"),
            &fields,
            Language::Ru,
        );
        let derived = with.derive(&KnownTargets::default());
        let view = CardView::for_action(&with, &derived, now);
        assert_eq!(view.label, "Пост в X");
        assert_eq!(view.class, "spend");
        assert_eq!(view.cost_usd, Some("0.40"));
        assert_eq!(
            view.text_sha256_hex,
            Some(Sha256Hash::of(b"Hello").to_hex().as_str())
        );
        let without = shown(UNNUMBERED_RECORD, None, &fields, Language::Ru);
        let derived = without.derive(&KnownTargets::default());
        let view = CardView::for_action(&without, &derived, now);
        assert_eq!((view.label, view.class), ("publish_x", "external"));
    }
}
