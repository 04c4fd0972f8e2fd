//! Look-alike warnings on the card, its edit, the receipt and the mandate card: where the lines
//! go, that they are counted in the card's room, and how they read in each language.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use rust_decimal::Decimal;

use super::mandate::{render_mandate_card, render_receipt, MandateView, UsageView};
use super::tests::{assert_clean, label, locales, now, show, snapshot};
use super::*;
use crate::lookalike::{self, KnownTargets};

const RECORD: &str = "r_0123456789abcdef0123";
const SHA_TEXT: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn known() -> KnownTargets {
    KnownTargets::new(["@mila_news", "@mila_shop"])
}

fn expires() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 3, 11, 35, 0).unwrap()
}

fn view<'a>(
    target: &'a str,
    warnings: &'a [Warning],
    fields: &'a BTreeMap<String, String>,
    text: &'a str,
    lang: Language,
) -> CardView<'a> {
    CardView {
        record_id: RECORD,
        kind: "publish_x",
        label: label(lang),
        class: "external",
        target: Some(target),
        target_warnings: warnings,
        fields,
        field_labels: &NO_FIELD_LABELS,
        field_warnings: &[],
        cost_usd: None,
        attachments: &[],
        text: Some(text),
        text_sha256_hex: Some(SHA_TEXT),
        expires_at: expires(),
        tz: chrono_tz::Europe::Moscow,
        urgent: false,
        agent_runs: false,
        hook: None,
        origin: None,
    }
}

#[test]
fn snapshot_card_with_a_mixed_script_target() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "https://ex\u{430}mple.com";
    let warnings = lookalike::warnings(target, &known());
    assert_eq!(warnings.len(), 1, "mixed scripts only: {warnings:?}");
    for lang in Language::ALL {
        let v = view(target, &warnings, &fields, "Hello.", lang);
        let rendered = render_card(&v, &locales, lang, now());
        let line = warning_line(&warnings[0], &locales, lang).text;
        assert!(
            rendered.card.text.contains(&line),
            "{lang}: {}",
            rendered.card.text
        );
        assert!(line.contains("U+0430 CYRILLIC SMALL LETTER A"), "{line}");
        assert!(line.contains("Latin, Cyrillic"), "{line}");
        assert_clean(&rendered.card.text);
        snapshot(format!("card_lookalike_mixed_{lang}"), show(&rendered));
    }
}

#[test]
fn snapshot_card_with_a_target_like_a_known_one() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "@rnila_news";
    let warnings = lookalike::warnings(target, &known());
    assert_eq!(warnings.len(), 1, "look-alike only: {warnings:?}");
    for lang in Language::ALL {
        let v = view(target, &warnings, &fields, "Hello.", lang);
        let rendered = render_card(&v, &locales, lang, now());
        let line = warning_line(&warnings[0], &locales, lang).text;
        assert!(
            rendered.card.text.contains(&line),
            "{lang}: {}",
            rendered.card.text
        );
        assert!(line.contains("@mila_news"), "{line}");
        assert!(line.contains("U+0072 LATIN SMALL LETTER R"), "{line}");
        assert!(line.contains("U+006D LATIN SMALL LETTER M"), "{line}");
        assert_clean(&rendered.card.text);
        snapshot(format!("card_lookalike_like_{lang}"), show(&rendered));
    }
}

#[test]
fn snapshot_card_with_both_warnings_and_its_outcome() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "@m\u{456}la_news";
    let warnings = lookalike::warnings(target, &known());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    for lang in Language::ALL {
        let v = view(target, &warnings, &fields, "Hello.", lang);
        let styled = render_card(&v, &locales, lang, now()).card;
        let card = styled.text.clone();
        let outcome = Outcome {
            state: "declined",
            decided_by: Some("Mila".to_owned()),
            result: None,
            reason: None,
            reply_by: None,
        };
        let edited_styled = render_outcome(&v, &locales, lang, &outcome);
        let edited = edited_styled.text.clone();
        for warning in &warnings {
            let line = warning_line(warning, &locales, lang).text;
            assert!(card.contains(&line), "{lang} card: {card}");
            assert!(edited.contains(&line), "{lang} edit keeps it: {edited}");
        }
        assert_clean(&card);
        snapshot(
            format!("card_lookalike_both_{lang}"),
            format!("{}\n====\n{}", styled.marked(), edited_styled.marked()),
        );
    }
}

#[test]
fn the_warning_lines_sit_right_under_the_target_above_the_text() {
    let locales = locales();
    let fields = BTreeMap::from([("reply_to".to_owned(), "https://x.com/a/1".to_owned())]);
    let target = "@m\u{456}la_news";
    let warnings = lookalike::warnings(target, &known());
    let text = "Target: @mila_news\nfake line";
    let card = render_card(
        &view(target, &warnings, &fields, text, Language::En),
        &locales,
        Language::En,
        now(),
    )
    .card
    .text;
    let lines: Vec<&str> = card.lines().collect();
    assert_eq!(lines[1], format!("Target: {target}"));
    assert!(lines[2].starts_with("⚠ Mixed or unusual letters"), "{card}");
    assert!(lines[3].starts_with("⚠ Looks like @mila_news"), "{card}");
    assert_eq!(lines[4], "reply_to: https://x.com/a/1");
    assert!(card.ends_with(text));
}

#[test]
fn the_exact_english_lines() {
    let locales = locales();
    let en = |target: &str, known: &KnownTargets| -> Vec<String> {
        lookalike::warnings(target, known)
            .iter()
            .map(|w| warning_line(w, &locales, Language::En).text)
            .collect()
    };
    assert_eq!(
        en("@m\u{456}la_news", &known()),
        [
            "⚠ Mixed or unusual letters in this target. Scripts: Latin, Cyrillic. Not ASCII: \
             U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
            "⚠ Looks like @mila_news, a target you approved, but differs: character 3 is U+0456 \
             CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I here, U+0069 LATIN SMALL LETTER I \
             there",
        ]
    );
    let emoji = KnownTargets::new(["#\u{1F642}\u{FE0F}"]);
    assert_eq!(
        en("#\u{1F642}", &emoji),
        [
            "⚠ Looks like #\u{1F642}\u{FE0F}, a target you approved, but differs: character 3 is \
          the end here, U+FE0F VARIATION SELECTOR-16 there"
        ]
    );
    assert_eq!(en("@mila_news", &known()), Vec::<String>::new());
}

/// The English lines under `target`, against [`known`].
fn english(target: &str) -> Vec<String> {
    let locales = locales();
    lookalike::warnings(target, &known())
        .iter()
        .map(|w| warning_line(w, &locales, Language::En).text)
        .collect()
}

#[test]
fn a_dotless_i_with_a_dot_above_draws_both_lines() {
    assert_eq!(
        english("@m\u{131}\u{307}la_news"),
        [
            "⚠ Mixed or unusual letters in this target. Scripts: Latin. Not ASCII: U+0131 LATIN \
             SMALL LETTER DOTLESS I, U+0307 COMBINING DOT ABOVE",
            "⚠ Looks like @mila_news, a target you approved, but differs: character 3 is U+0131 \
             LATIN SMALL LETTER DOTLESS I here, U+0069 LATIN SMALL LETTER I there",
        ]
    );
}

#[test]
fn an_i_with_a_second_dot_draws_both_lines() {
    assert_eq!(
        english("@mi\u{307}la_news"),
        [
            "⚠ Mixed or unusual letters in this target. Scripts: Latin. Not ASCII: U+0307 \
             COMBINING DOT ABOVE",
            "⚠ Looks like @mila_news, a target you approved, but differs: character 4 is U+0307 \
             COMBINING DOT ABOVE here, U+006C LATIN SMALL LETTER L there",
        ]
    );
}

#[test]
fn a_macron_below_an_underscore_draws_both_lines() {
    assert_eq!(
        english("@mila_\u{331}news"),
        [
            "⚠ Mixed or unusual letters in this target. Scripts: Latin. Not ASCII: U+0331 \
             COMBINING MACRON BELOW",
            "⚠ Looks like @mila_news, a target you approved, but differs: character 7 is U+0331 \
             COMBINING MACRON BELOW here, U+006E LATIN SMALL LETTER N there",
        ]
    );
}

#[test]
fn a_han_stroke_in_a_latin_handle_draws_the_mixed_line() {
    assert_eq!(
        english("@mi\u{4E28}a_news"),
        ["⚠ Mixed or unusual letters in this target. Scripts: Latin, Han. Not ASCII: U+4E28 CJK \
          UNIFIED IDEOGRAPH-4E28"]
    );
}

#[test]
fn a_prolonged_sound_mark_in_a_latin_handle_draws_the_mixed_line() {
    assert_eq!(
        english("@mila\u{30FC}news"),
        [
            "⚠ Mixed or unusual letters in this target. Scripts: Latin, Hiragana, Katakana. Not \
          ASCII: U+30FC KATAKANA-HIRAGANA PROLONGED SOUND MARK"
        ]
    );
}

#[test]
fn snapshot_card_with_a_dotted_dotless_i() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "@m\u{131}\u{307}la_news";
    let warnings = lookalike::warnings(target, &known());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    for lang in Language::ALL {
        let v = view(target, &warnings, &fields, "Hello.", lang);
        let rendered = render_card(&v, &locales, lang, now());
        assert_clean(&rendered.card.text);
        snapshot(format!("card_lookalike_marks_{lang}"), show(&rendered));
    }
}

#[test]
fn a_warning_counts_in_the_room_for_the_text() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "@rnila_news";
    let warnings = lookalike::warnings(target, &known());
    for lang in Language::ALL {
        let probe = view(target, &[], &fields, "", lang);
        let base = split::measure(&CardBody::new(&probe, &locales, lang).without_footer().text).0;
        let fits = "x".repeat(MESSAGE_LIMIT - FOOTER_ROOM - base);
        let unmarked = render_card(
            &view(target, &[], &fields, &fits, lang),
            &locales,
            lang,
            now(),
        );
        assert!(
            unmarked.parts.is_empty(),
            "{lang}: fits inside without the line"
        );
        let marked = view(target, &warnings, &fields, &fits, lang);
        let rendered = render_card(&marked, &locales, lang, now());
        assert_eq!(
            rendered.parts.len(),
            1,
            "{lang}: the line moves the text out"
        );
        assert!(split::message_fits(&rendered.card.text));
        let line = warning_line(&warnings[0], &locales, lang).text;
        assert!(rendered.card.text.contains(&line));
        // Its edit makes the same choice and keeps the line.
        let outcome = Outcome {
            state: "expired",
            decided_by: None,
            result: None,
            reason: None,
            reply_by: None,
        };
        let edited = render_outcome(&marked, &locales, lang, &outcome).text;
        assert!(edited.contains(&line) && !edited.contains(&fits), "{lang}");
    }
}

/// A view whose one field (free text) fills the card's fixed room up to `room_left` code points.
fn filled<'a>(
    target: &'a str,
    warnings: &'a [Warning],
    fields: &'a mut BTreeMap<String, String>,
    room_left: usize,
    locales: &Locales,
) -> CardView<'a> {
    fields.clear();
    let probe_fields = BTreeMap::from([("f".to_owned(), String::new())]);
    let probe = CardView {
        text: None,
        text_sha256_hex: None,
        ..view(target, warnings, &probe_fields, "", Language::En)
    };
    let base = split::measure(
        &CardBody::new(&probe, locales, Language::En)
            .without_footer()
            .text,
    )
    .0;
    let fill = MESSAGE_LIMIT - FOOTER_ROOM - base - room_left;
    // Free text (a space in it), so the field needs no room for warnings of its own.
    fields.insert("f".to_owned(), format!("y {}", "y".repeat(fill - 2)));
    CardView {
        text: None,
        text_sha256_hex: None,
        ..view(target, warnings, fields, "", Language::En)
    }
}

#[test]
fn the_intake_check_keeps_room_for_the_widest_look_alike_line() {
    let locales = locales();
    let widest = warning_line(&lookalike::widest_looks_like(), &locales, Language::En).text;
    let (cp, units) = split::measure(&widest);
    // The widest line: 256 astral characters and two of the longest code point names.
    assert!(units > cp && units >= 512 + 2 * 96, "{cp} {units}");
    let mut fields = BTreeMap::new();
    // Room for the line, in UTF-16 units, and its line feed.
    let v = filled("@mila_news", &[], &mut fields, units + 1, &locales);
    assert!(try_render_card(&v, &locales, Language::En, now()).is_ok());
    let v = filled("@mila_news", &[], &mut fields, units, &locales);
    assert!(try_render_card(&v, &locales, Language::En, now()).is_err());
    // Without a target there is no line to keep room for.
    let v = CardView {
        target: None,
        ..filled("@mila_news", &[], &mut fields, 0, &locales)
    };
    assert!(try_render_card(&v, &locales, Language::En, now()).is_ok());
}

#[test]
fn a_card_the_intake_accepted_fits_with_any_look_alike_line() {
    let locales = locales();
    // The longest known target a look-alike can name: 256 characters, each two UTF-16 units,
    // differing from the target only at its end (a bold capital I where it has a bold small L).
    let known_target: String = "\u{1D426}".repeat(255) + "\u{1D408}";
    let target: String = "\u{1D426}".repeat(255) + "\u{1D425}";
    let warnings = lookalike::warnings(&target, &KnownTargets::new([known_target.as_str()]));
    assert!(
        warnings
            .iter()
            .any(|w| matches!(w, Warning::LooksLike { .. })),
        "{warnings:?}"
    );
    let mixed: Vec<Warning> = lookalike::mixed_scripts(&target).into_iter().collect();
    let mut fields = BTreeMap::new();
    // The fullest card the intake accepts, found from the full end down.
    let room_left = (0..MESSAGE_LIMIT)
        .find(|&room_left| {
            let at_intake = filled(&target, &mixed, &mut fields, room_left, &locales);
            try_render_card(&at_intake, &locales, Language::En, now()).is_ok()
        })
        .expect("some card fits");
    let at_intake = filled(&target, &mixed, &mut fields, room_left, &locales);
    let drawn = CardView {
        target_warnings: &warnings,
        ..at_intake
    };
    let fixed = CardBody::new(&drawn, &locales, Language::En)
        .without_footer()
        .text;
    assert!(fits_beside_footer(&fixed).is_ok(), "{room_left}");
    let card = render_card(&drawn, &locales, Language::En, now()).card.text;
    assert!(split::message_fits(&card));
    // And it was the boundary: one character more is refused.
    let over = filled(&target, &mixed, &mut fields, room_left - 1, &locales);
    assert!(try_render_card(&over, &locales, Language::En, now()).is_err());
}

/// A letter's card (no target): `to` and `subject`, each value's warnings against `known`.
fn letter<'a>(
    fields: &'a BTreeMap<String, String>,
    field_warnings: &'a [Vec<Warning>],
    lang: Language,
) -> CardView<'a> {
    CardView {
        kind: "send_letter",
        label: "Send a letter",
        target: None,
        target_warnings: &[],
        field_warnings,
        text: None,
        text_sha256_hex: None,
        ..view("", &[], fields, "", lang)
    }
}

/// "mila@exаmple.com" (Cyrillic а) and its known original.
const LETTER_TO: &str = "mila@ex\u{430}mple.com";

fn letter_fields(to: &str, subject: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("subject".to_owned(), subject.to_owned()),
        ("to".to_owned(), to.to_owned()),
    ])
}

#[test]
fn snapshot_card_with_a_recipient_like_a_known_one() {
    let locales = locales();
    let known = KnownTargets::new(["mila@example.com"]);
    let fields = letter_fields(LETTER_TO, "Invoice");
    let warnings = lookalike::field_warnings(fields.values(), &known);
    assert_eq!(warnings[0], [], "the subject: one Latin word");
    assert_eq!(warnings[1].len(), 2, "{warnings:?}");
    for lang in Language::ALL {
        let v = letter(&fields, &warnings, lang);
        let rendered = render_card(&v, &locales, lang, now());
        let card = &rendered.card.text;
        let lines: Vec<&str> = card.lines().collect();
        let to = lines.iter().position(|l| *l == format!("to: {LETTER_TO}"));
        let to = to.unwrap_or_else(|| panic!("{lang}: {card}"));
        // Right under the field, mixed scripts first, as under a target.
        assert_eq!(
            lines[to + 1],
            field_warning_line(&warnings[1][0], &locales, lang).text
        );
        assert_eq!(
            lines[to + 2],
            field_warning_line(&warnings[1][1], &locales, lang).text
        );
        // The edit keeps them.
        let outcome = Outcome {
            state: "declined",
            decided_by: Some("Mila".to_owned()),
            result: None,
            reason: None,
            reply_by: None,
        };
        let edited = render_outcome(&v, &locales, lang, &outcome).text;
        assert!(edited.contains(lines[to + 1]) && edited.contains(lines[to + 2]));
        assert_clean(card);
        snapshot(format!("card_lookalike_field_{lang}"), show(&rendered));
    }
}

#[test]
fn the_exact_english_lines_under_a_field() {
    let locales = locales();
    let known = KnownTargets::new(["mila@example.com"]);
    let lines: Vec<String> = lookalike::value_warnings(LETTER_TO, &known)
        .iter()
        .map(|w| field_warning_line(w, &locales, Language::En).text)
        .collect();
    assert_eq!(
        lines,
        [
            "⚠ Mixed or unusual letters in this value. Scripts: Latin, Cyrillic. Not ASCII: \
             U+0430 CYRILLIC SMALL LETTER A",
            "⚠ Looks like mila@example.com, a target you approved, but differs: character 8 is \
             U+0430 CYRILLIC SMALL LETTER A here, U+0061 LATIN SMALL LETTER A there",
        ]
    );
    // The known target is a value (a code span), as under a target.
    let like = &lookalike::value_warnings(LETTER_TO, &known)[1];
    let styled = field_warning_line(like, &locales, Language::En);
    assert!(
        styled.marked().contains("⟨mila@example.com⟩"),
        "{}",
        styled.marked()
    );
}

#[test]
fn free_text_in_a_field_draws_no_warning() {
    let locales = locales();
    let known = KnownTargets::new(["mila@example.com"]);
    let fields = letter_fields(&format!("Mila <{LETTER_TO}>"), "Invoice for March");
    let warnings = lookalike::field_warnings(fields.values(), &known);
    assert_eq!(warnings, [Vec::new(), Vec::new()]);
    let card = render_card(
        &letter(&fields, &warnings, Language::En),
        &locales,
        Language::En,
        now(),
    );
    assert!(!card.card.text.contains('⚠'), "{}", card.card.text);
}

#[test]
fn the_intake_check_keeps_room_for_a_look_alike_line_under_each_one_word_field() {
    let locales = locales();
    let lang = Language::En;
    let to = "mila@example.org";
    let widest = lookalike::widest_value_looks_like(to).expect("short enough to compare");
    let line = field_warning_line(&widest, &locales, lang).text;
    let units = split::measure(&line).1;
    // A known target of up to 2 × 16 + 16 characters, each two UTF-16 units.
    assert!(units >= 2 * 48 + 2 * 96, "{units}");
    // A letter whose subject (free text) fills its room but for `room_left` code points.
    let fits_with = |to: &str, room_left: usize| {
        let probe = letter_fields(to, "a b");
        let base = split::measure(
            &CardBody::new(&letter(&probe, &[], lang), &locales, lang)
                .without_footer()
                .text,
        )
        .0;
        let fill = MESSAGE_LIMIT - FOOTER_ROOM - base - room_left + 3;
        let fields = letter_fields(to, &format!("a {}", "b".repeat(fill - 2)));
        try_render_card(&letter(&fields, &[], lang), &locales, lang, now()).is_ok()
    };
    // Room for the line and its line feed.
    assert!(fits_with(to, units + 1));
    assert!(!fits_with(to, units));
    // A recipient with a space in it is free text: no room is kept for it.
    assert!(fits_with("Mila at example.org", 0));
}

#[test]
fn a_card_the_intake_accepted_fits_with_any_look_alike_line_under_a_field() {
    let locales = locales();
    let lang = Language::En;
    // A one-word value of 51 mathematical bold letters, and the longest known target it is
    // compared with (2 × 51 + 16 = 118 characters, each two UTF-16 units): the same letters but
    // the last, then astral nonspacing marks, which its skeleton without marks drops.
    let value: String = "\u{1D426}".repeat(50) + "\u{1D425}";
    let known_target: String = "\u{1D426}".repeat(50) + "\u{1D408}" + &"\u{1D167}".repeat(67);
    assert_eq!(
        lookalike::comparable_chars(&value),
        Some(known_target.chars().count())
    );
    let known = KnownTargets::new([known_target.as_str()]);
    let drawn_warnings = lookalike::value_warnings(&value, &known);
    assert!(
        matches!(drawn_warnings.last(), Some(Warning::LooksLike { known, .. }) if *known == known_target),
        "{drawn_warnings:?}"
    );
    let at_intake_warnings = lookalike::value_warnings(&value, &KnownTargets::default());
    let fields_with = |room_left: usize| -> BTreeMap<String, String> {
        let probe = letter_fields(&value, "a b");
        let probe_warnings = [Vec::new(), at_intake_warnings.clone()];
        let base = CardBody::new(&letter(&probe, &probe_warnings, lang), &locales, lang)
            .without_footer()
            .text;
        let fill = MESSAGE_LIMIT - FOOTER_ROOM - split::measure(&base).0 - room_left + 3;
        letter_fields(&value, &format!("a {}", "b".repeat(fill - 2)))
    };
    let intake = [Vec::new(), at_intake_warnings.clone()];
    let accepted = |room_left: usize| {
        let fields = fields_with(room_left);
        try_render_card(&letter(&fields, &intake, lang), &locales, lang, now()).is_ok()
    };
    // The fullest card the intake accepts, found from the full end down.
    let room_left = (0..MESSAGE_LIMIT)
        .find(|&r| accepted(r))
        .expect("some card fits");
    assert!(!accepted(room_left - 1), "the boundary");
    let fields = fields_with(room_left);
    let drawn = [Vec::new(), drawn_warnings];
    let view = letter(&fields, &drawn, lang);
    let fixed = CardBody::new(&view, &locales, lang).without_footer().text;
    assert!(fits_beside_footer(&fixed).is_ok(), "{room_left}");
    assert!(split::message_fits(
        &render_card(&view, &locales, lang, now()).card.text
    ));
}

fn mandate_view<'a>(
    targets: &'a [String],
    warnings: &'a [Vec<Warning>],
    lang: Language,
) -> MandateView<'a> {
    MandateView {
        target_warnings: warnings,
        ..super::mandate::tests::view(targets, lang)
    }
}

#[test]
fn snapshot_mandate_card_with_marked_targets() {
    let locales = locales();
    let targets: Vec<String> = ["@mila_news", "@rnila_shop", "@ph\u{3BF}to_news"]
        .map(str::to_owned)
        .to_vec();
    let warnings = lookalike::warnings_each(&targets, &known());
    assert_eq!(warnings.iter().map(Vec::len).collect::<Vec<_>>(), [0, 1, 1]);
    for lang in Language::ALL {
        let v = mandate_view(&targets, &warnings, lang);
        let rendered = render_mandate_card(&v, now(), &locales, lang, now());
        let lines: Vec<&str> = rendered.card.text.lines().collect();
        // Each warning right under its own target.
        let like = warning_line(&warnings[1][0], &locales, lang).text;
        let mixed = warning_line(&warnings[2][0], &locales, lang).text;
        assert!(
            lines[2].ends_with("@rnila_shop"),
            "{lang}: {}",
            rendered.card.text
        );
        assert_eq!(lines[3], like);
        assert!(lines[4].ends_with("@ph\u{3BF}to_news"));
        assert_eq!(lines[5], mixed);
        assert!(like.contains("@mila_shop"));
        // The room check counts them.
        let bare = mandate_view(&targets, &[], lang);
        let with = super::mandate::try_render_mandate_card(&v, now(), &locales, lang, now());
        assert_eq!(with.map(|r| r.card), Ok(rendered.card.clone()));
        assert!(
            split::measure(&rendered.card.text).0
                > split::measure(
                    &render_mandate_card(&bare, now(), &locales, lang, now())
                        .card
                        .text
                )
                .0
        );
        assert_clean(&rendered.card.text);
        snapshot(format!("mandate_card_lookalike_{lang}"), show(&rendered));
    }
}

#[test]
fn the_receipt_shows_the_action_target_with_its_warnings() {
    let locales = locales();
    let fields = BTreeMap::new();
    let target = "@mila_n\u{435}ws";
    let warnings = lookalike::warnings(target, &KnownTargets::default());
    let targets = vec![target.to_owned()];
    let action = view(target, &warnings, &fields, "Morning news.", Language::En);
    let outcome = Outcome {
        state: "executed",
        decided_by: None,
        result: Some("https://x.com/1"),
        reason: None,
        reply_by: None,
    };
    let usage = UsageView {
        actions: 1,
        usd: Decimal::ZERO,
    };
    let receipt = render_receipt(
        &action,
        &mandate_view(&targets, &[], Language::En),
        usage,
        None,
        &outcome,
        &locales,
        Language::En,
        now(),
    );
    let line = warning_line(&warnings[0], &locales, Language::En).text;
    assert!(receipt.card.text.contains(&line), "{}", receipt.card.text);
}
