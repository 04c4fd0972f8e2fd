//! Fuzz target: an accepted ask's card names every look-alike warning of its target and of its
//! one-word field values.
//!
//! The input is a padding byte, then lines: the ask's target, its text, and the known targets.
//! The padding byte sizes the ask's two fields, so that its card comes near the end of its room;
//! when it is odd, the first field's value is the target line instead (a recipient, say). The
//! ask goes through the request parser and the refusal gate like any frame; what the gate
//! accepts is drawn as its card against the known targets, in every language. Each warning
//! `lookalike::warnings` and `lookalike::value_warnings` return must be on the card as its own
//! line, and on the card's edit; a card the intake's room check accepted (with only the
//! mixed-script warnings known then) must still fit one message with every warning; and the
//! warnings must say true things about the value: each non-ASCII code point named, a look-alike
//! that is a different known target, that looks alike both ways, and differs where it says.

#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chrono::{TimeZone, Utc};
use consentd_core::card::{self, AttachmentView, CardView, Outcome};
use consentd_core::config::{self, Config};
use consentd_core::digest::Sha256Hash;
use consentd_core::locale::{Language, Locales};
use consentd_core::lookalike::{self, KnownTargets, Warning};
use consentd_core::protocol::{self, Request};
use consentd_core::refusal::{self, visible};
use consentd_core::split;
use libfuzzer_sys::fuzz_target;

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        config::parse(include_str!("../gate.toml"), "fuzz/gate.toml")
            .expect("the fuzz config is valid")
    })
}

fn locales() -> &'static Locales {
    static LOCALES: OnceLock<Locales> = OnceLock::new();
    LOCALES.get_or_init(|| Locales::new().expect("the locale files load"))
}

/// The ask the input describes, as the gate accepts it, or `None`. `padding` characters go in
/// each of its two fields (none when 0: an empty field is refused), at most 1,020 each; when
/// `padding` is odd, the first field holds the target instead.
fn accepted(target: &str, text: &str, padding: usize) -> Option<consentd_core::action::Action> {
    let fields = if padding == 0 {
        serde_json::json!({})
    } else if padding % 2 == 1 {
        serde_json::json!({"reply_to": target, "lang": "z".repeat(padding)})
    } else {
        serde_json::json!({"reply_to": "y".repeat(padding), "lang": "z".repeat(padding)})
    };
    let frame = serde_json::json!({
        "v": 1, "op": "ask", "kind": "publish_x", "target": target, "text": text,
        "fields": fields, "cost_usd": "0.04",
    });
    let Ok(Request::Ask(ask)) = protocol::parse_request(frame.to_string().as_bytes()) else {
        return None;
    };
    let config = config();
    refusal::check_ask(&ask, &config.categories, true, &config.limits).ok()
}

/// Known targets are targets the gate once accepted.
fn known(lines: &[&str]) -> KnownTargets {
    KnownTargets::new(lines.iter().copied().filter(|line| {
        !line.is_empty()
            && line.chars().count() <= refusal::MAX_TARGET_CHARS
            && visible::check_value(line, visible::FieldRef::Target, false).is_ok()
    }))
}

/// What each warning claims about `target` holds.
fn check_claims(target: &str, known: &KnownTargets, warnings: &[Warning]) {
    for (index, warning) in warnings.iter().enumerate() {
        match warning {
            Warning::MixedScripts {
                scripts,
                code_points,
            } => {
                assert_eq!(index, 0, "mixed scripts comes first");
                assert!(!scripts.is_empty());
                let non_ascii: Vec<char> = target.chars().filter(|c| !c.is_ascii()).collect();
                assert!(code_points.iter().all(|c| non_ascii.contains(c)));
                assert!(non_ascii.iter().all(|c| code_points.contains(c)));
            }
            Warning::LooksLike {
                known: other,
                difference,
            } => {
                assert_eq!(index, warnings.len() - 1, "one look-alike, last");
                assert_ne!(other, target);
                assert!(known.iter().any(|k| k == other));
                let back = lookalike::looks_like(other, &KnownTargets::new([target]));
                assert!(
                    matches!(back, Some(Warning::LooksLike { ref known, .. }) if known == target),
                    "{target:?} looks like {other:?} but not the other way"
                );
                let at = difference.position - 1;
                assert_eq!(target.chars().nth(at), difference.ours);
                assert_eq!(other.chars().nth(at), difference.theirs);
                assert!(target.chars().take(at).eq(other.chars().take(at)));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&padding, rest)) = data.split_first() else {
        return;
    };
    let input = String::from_utf8_lossy(rest);
    let lines: Vec<&str> = input.split('\n').collect();
    let target = lines[0];
    let text = lines
        .get(1)
        .copied()
        .filter(|t| !t.is_empty())
        .unwrap_or("fuzz");
    // Up to 2,040 characters of fields, to bring the card near the end of its room.
    let Some(action) = accepted(target, text, usize::from(padding) * 4) else {
        return;
    };
    let known = known(lines.get(2..).unwrap_or_default());
    let target = action.target.as_deref().expect("publish_x has a target");
    let warnings = lookalike::warnings(target, &known);
    check_claims(target, &known, &warnings);
    let mixed: Vec<Warning> = lookalike::mixed_scripts(target).into_iter().collect();
    let field_warnings = lookalike::field_warnings(action.fields.values(), &known);
    for (value, warnings) in action.fields.values().zip(&field_warnings) {
        check_claims(value, &known, warnings);
        if !lookalike::is_identifier_like(value) {
            assert!(warnings.is_empty(), "free text {value:?} is not marked");
        }
    }
    let field_mixed = lookalike::field_warnings(action.fields.values(), &KnownTargets::default());

    let config = config();
    let category = &config.categories["publish_x"];
    let cost = action.cost_string();
    let facts = action.attachment_facts();
    let attachments: Vec<AttachmentView<'_>> = facts.iter().map(AttachmentView::from).collect();
    let text_hash = action
        .text
        .as_deref()
        .map(|t| Sha256Hash::of(t.as_bytes()).to_hex());
    let fields: &BTreeMap<String, String> = &action.fields;
    let now = Utc.with_ymd_and_hms(2026, 3, 3, 11, 20, 0).unwrap();
    for lang in Language::ALL {
        let view = CardView {
            record_id: "r_00000000000000000000",
            kind: &action.kind,
            label: category.label(lang),
            class: category.class.as_str(),
            target: Some(target),
            target_warnings: &mixed,
            fields,
            field_labels: &consentd_core::card::NO_FIELD_LABELS,
            field_warnings: &field_mixed,
            cost_usd: cost.as_deref(),
            attachments: &attachments,
            text: action.text.as_deref(),
            text_sha256_hex: text_hash.as_deref(),
            expires_at: now,
            tz: config.owner.timezone,
            urgent: false,
            origin: None,
            agent_runs: false,
            hook: None,
        };
        let at_intake = card::try_render_card(&view, locales(), lang, now).is_ok();
        let drawn = CardView {
            target_warnings: &warnings,
            field_warnings: &field_warnings,
            ..view
        };
        let card = card::render_card(&drawn, locales(), lang, now).card.text;
        let outcome = Outcome {
            state: "declined",
            decided_by: Some("Mila".to_owned()),
            result: None,
            reason: None,
            reply_by: None,
        };
        let edited = card::render_outcome(&drawn, locales(), lang, &outcome).text;
        let lines = warnings
            .iter()
            .map(|warning| card::warning_line(warning, locales(), lang))
            .chain(
                field_warnings
                    .iter()
                    .flatten()
                    .map(|warning| card::field_warning_line(warning, locales(), lang)),
            );
        for line in lines {
            let line = line.text;
            assert!(!line.contains('\n'), "one line: {line:?}");
            let own_line = format!("\n{line}\n");
            assert!(card.contains(&own_line), "{lang}: {line:?} not in {card:?}");
            assert!(
                edited.contains(&own_line),
                "{lang}: {line:?} not in {edited:?}"
            );
        }
        if at_intake {
            assert!(
                split::message_fits(&card),
                "{lang}: {:?}",
                split::measure(&card)
            );
            assert!(
                split::message_fits(&edited),
                "{lang}: {:?}",
                split::measure(&edited)
            );
        }
    }
});
