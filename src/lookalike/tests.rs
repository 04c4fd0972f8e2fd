//! The look-alike table: each target with exactly the warnings it must draw.

use super::*;
use unicode_script::Script::{Common, Cyrillic, Greek, Latin};

/// Targets the owner approved, as the store would hand them over.
fn known() -> KnownTargets {
    KnownTargets::new([
        "@mila_news",
        "@photo_news",
        "@scope",
        "#ABE",
        "https://example.com",
    ])
}

fn mixed(scripts: &[Script], code_points: &[char]) -> Warning {
    Warning::MixedScripts {
        scripts: scripts.to_vec(),
        code_points: code_points.to_vec(),
    }
}

fn like(known: &str, position: usize, ours: char, theirs: char) -> Warning {
    Warning::LooksLike {
        known: known.to_owned(),
        difference: Difference {
            position,
            ours: Some(ours),
            theirs: Some(theirs),
        },
    }
}

#[track_caller]
fn check(target: &str, expected: &[Warning]) {
    assert_eq!(warnings(target, &known()), expected, "{target:?}");
}

#[test]
fn cyrillic_i_in_a_latin_handle() {
    check(
        "@m\u{456}la_news",
        &[
            mixed(&[Latin, Cyrillic], &['\u{456}']),
            like("@mila_news", 3, '\u{456}', 'i'),
        ],
    );
}

#[test]
fn cyrillic_ie_in_a_latin_handle() {
    check(
        "@mila_n\u{435}ws",
        &[
            mixed(&[Latin, Cyrillic], &['\u{435}']),
            like("@mila_news", 8, '\u{435}', 'e'),
        ],
    );
}

#[test]
fn greek_omicron_in_a_latin_handle() {
    check(
        "@ph\u{3BF}to_news",
        &[
            mixed(&[Latin, Greek], &['\u{3BF}']),
            like("@photo_news", 4, '\u{3BF}', 'o'),
        ],
    );
}

#[test]
fn greek_omicron_with_nothing_known_is_still_mixed() {
    assert_eq!(
        warnings("@mila_n\u{3BF}ws", &KnownTargets::default()),
        [mixed(&[Latin, Greek], &['\u{3BF}'])]
    );
}

#[test]
fn fullwidth_at_and_letters() {
    // Fullwidth letters are Latin, but not identifier characters: "unrestricted".
    check(
        "\u{FF20}\u{FF4D}\u{FF49}\u{FF4C}\u{FF41}",
        &[mixed(
            &[Latin],
            &['\u{FF20}', '\u{FF4D}', '\u{FF49}', '\u{FF4C}', '\u{FF41}'],
        )],
    );
}

#[test]
fn fullwidth_letters_after_an_ascii_at_look_like_the_known_handle() {
    check(
        "@\u{FF4D}\u{FF49}\u{FF4C}\u{FF41}_news",
        &[
            mixed(&[Latin], &['\u{FF4D}', '\u{FF49}', '\u{FF4C}', '\u{FF41}']),
            like("@mila_news", 2, '\u{FF4D}', 'm'),
        ],
    );
}

#[test]
fn mathematical_bold_letters() {
    // Mathematical letters have no script of their own (Common) and are not for identifiers.
    check(
        "@\u{1D426}\u{1D422}\u{1D425}\u{1D41A}_\u{1D427}\u{1D41E}\u{1D430}\u{1D42C}",
        &[
            mixed(
                &[Common],
                &[
                    '\u{1D426}',
                    '\u{1D422}',
                    '\u{1D425}',
                    '\u{1D41A}',
                    '\u{1D427}',
                    '\u{1D41E}',
                    '\u{1D430}',
                    '\u{1D42C}',
                ],
            ),
            like("@mila_news", 2, '\u{1D426}', 'm'),
        ],
    );
}

#[test]
fn mathematical_bold_letters_beside_latin_name_latin() {
    check(
        "@\u{1D426}ila_news",
        &[
            mixed(&[Latin], &['\u{1D426}']),
            like("@mila_news", 2, '\u{1D426}', 'm'),
        ],
    );
}

#[test]
fn all_ascii_rn_looks_like_m() {
    check("@rnila_news", &[like("@mila_news", 2, 'r', 'm')]);
}

#[test]
fn cyrillic_a_in_a_url_host() {
    check(
        "https://ex\u{430}mple.com",
        &[
            mixed(&[Latin, Cyrillic], &['\u{430}']),
            like("https://example.com", 11, '\u{430}', 'a'),
        ],
    );
}

#[test]
fn the_known_target_itself_is_unmarked() {
    check("@mila_news", &[]);
    check("https://example.com", &[]);
}

#[test]
fn a_single_script_target_is_not_mixed() {
    check(
        "@\u{43C}\u{438}\u{43B}\u{430}_\u{43D}\u{43E}\u{432}\u{43E}\u{441}\u{442}\u{438}",
        &[],
    );
    check(
        "#\u{3BA}\u{3B1}\u{3BB}\u{3B7}\u{3BC}\u{3AD}\u{3C1}\u{3B1}",
        &[],
    );
    check("#caf\u{E9}_cr\u{E8}me", &[]);
}

#[test]
fn a_pure_cyrillic_target_confusable_with_a_known_one_is_marked() {
    // ѕсоре: every letter Cyrillic, its skeleton "scope".
    check(
        "@\u{455}\u{441}\u{43E}\u{440}\u{435}",
        &[like("@scope", 2, '\u{455}', 's')],
    );
}

#[test]
fn a_pure_greek_target_confusable_with_a_known_one_is_marked() {
    check("#\u{391}\u{392}\u{395}", &[like("#ABE", 2, '\u{391}', 'A')]);
}

#[test]
fn japanese_han_hiragana_katakana_is_highly_restrictive() {
    // 東京タワーへようこそ
    check(
        "#\u{6771}\u{4EAC}\u{30BF}\u{30EF}\u{30FC}\u{3078}\u{3088}\u{3046}\u{3053}\u{305D}",
        &[],
    );
    // With Latin too: still "highly restrictive".
    check("#\u{6771}\u{4EAC}Tower", &[]);
}

#[test]
fn digits_and_underscores_make_no_mix() {
    check("@mila_2024_news", &[]);
    check("#2024", &[]);
    check("@_1_2_3_", &[]);
    check("@\u{43C}\u{438}\u{43B}\u{430}_2024", &[]);
}

#[test]
fn url_paths_and_phone_numbers_are_not_letters() {
    check("https://example.com/a/b?c=d&e=f#g", &[]);
    check("+1 555 0100", &[]);
    check("mila@example.com", &[]);
}

#[test]
fn a_cyrillic_domain_is_judged_without_its_scheme() {
    // пример.рф
    check(
        "https://\u{43F}\u{440}\u{438}\u{43C}\u{435}\u{440}.\u{440}\u{444}",
        &[],
    );
}

#[test]
fn the_look_alike_named_is_the_first_known_in_order() {
    let known = KnownTargets::new(["@rnila_news", "@mila_news"]);
    assert_eq!(
        looks_like("@m\u{456}la_news", &known),
        Some(like("@mila_news", 3, '\u{456}', 'i'))
    );
    // The same set in another order names the same one.
    let again = KnownTargets::new(["@mila_news", "@rnila_news", "@mila_news"]);
    assert_eq!(known, again);
    assert_eq!(again.len(), 2);
}

#[test]
fn a_difference_past_the_end_of_one_string() {
    assert_eq!(
        first_difference("#\u{1F642}", "#\u{1F642}\u{FE0F}"),
        Some(Difference {
            position: 3,
            ours: None,
            theirs: Some('\u{FE0F}'),
        })
    );
    assert_eq!(first_difference("@a", "@a"), None);
    // The variation selector is ignorable: the two have one skeleton.
    let known = KnownTargets::new(["#\u{1F642}\u{FE0F}"]);
    assert_eq!(
        looks_like("#\u{1F642}", &known),
        Some(Warning::LooksLike {
            known: "#\u{1F642}\u{FE0F}".to_owned(),
            difference: Difference {
                position: 3,
                ours: None,
                theirs: Some('\u{FE0F}'),
            },
        })
    );
}

#[test]
fn mandate_targets_that_look_alike_are_named() {
    let targets = |list: &[&str]| list.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        mandate_targets_refusal(&targets(&["@mila_news", "@m\u{456}la_news"])).as_deref(),
        Some(
            "targets[0] \"@mila_news\" and targets[1] \"@m\u{456}la_news\" look alike (one UTS #39 \
             skeleton) but differ at char 3: U+0069 LATIN SMALL LETTER I in the first, U+0456 \
             CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I in the second"
        )
    );
    assert_eq!(
        confusable_pair(&targets(&["@a", "@mila_news", "@b", "@rnila_news"])),
        Some((
            1,
            3,
            Difference {
                position: 2,
                ours: Some('m'),
                theirs: Some('r'),
            }
        ))
    );
    assert_eq!(
        mandate_targets_refusal(&targets(&["@mila_news", "@mila_shop"])),
        None
    );
    assert_eq!(mandate_targets_refusal(&targets(&[])), None);
}

#[test]
fn describe_names_the_code_point() {
    assert_eq!(describe('i'), "U+0069 LATIN SMALL LETTER I");
    assert_eq!(describe('\u{1D426}'), "U+1D426 MATHEMATICAL BOLD SMALL M");
}

#[test]
fn no_description_is_longer_than_the_one_the_card_keeps_room_for() {
    let room = describe(LONGEST_DESCRIBED).len();
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        let described = describe(c);
        // ASCII: one code point and one UTF-16 unit per byte.
        assert!(described.is_ascii(), "{described}");
        assert!(described.len() <= room, "{described}");
    }
}

#[test]
fn the_unicode_data_is_one_version() {
    // icu_properties_data 2.4, which the refusal gate uses, is Unicode 18.0.0 too.
    assert_eq!(unicode_security::UNICODE_VERSION, (18, 0, 0));
    assert_eq!(unicode_script::UNICODE_VERSION, (18, 0, 0));
    assert_eq!(unicode_normalization::UNICODE_VERSION, (18, 0, 0));
}

#[test]
fn a_mandate_never_covers_a_look_alike_of_its_target() {
    use crate::mandate::{coverage, Coverage, CoveredAction, Mandate, Term, Usage};
    use chrono::TimeZone;
    let now = chrono::Utc.with_ymd_and_hms(2026, 3, 3, 12, 0, 0).unwrap();
    let mandate = Mandate {
        kind: "publish_x".to_owned(),
        targets: vec!["@mila_news".to_owned()],
        opened_at: now - chrono::Duration::hours(1),
        ends_at: now + chrono::Duration::days(1),
        usd_per_day: Some(rust_decimal::Decimal::new(500, 2)),
        actions_per_day: 10,
        stopped: false,
    };
    let usage = Usage {
        actions: 0,
        usd: rust_decimal::Decimal::ZERO,
    };
    let known = KnownTargets::new(mandate.targets.clone());
    let covers = |target: &str| {
        coverage(
            &mandate,
            &usage,
            &CoveredAction {
                kind: "publish_x",
                target: Some(target),
                cost_usd: rust_decimal::Decimal::ZERO,
            },
            now,
        )
    };
    assert_eq!(covers("@mila_news"), Coverage::Covered);
    for look_alike in [
        "@m\u{456}la_news",
        "@mila_n\u{435}ws",
        "@mila_new\u{455}",
        "@\u{FF4D}\u{FF49}\u{FF4C}\u{FF41}_news",
        "@\u{1D426}ila_news",
        "@rnila_news",
        "@mi1a_news",
    ] {
        assert_eq!(
            covers(look_alike),
            Coverage::Outside(Term::Target),
            "{look_alike:?}"
        );
        // And its card says what it looks like.
        assert!(
            matches!(
                looks_like(look_alike, &known),
                Some(Warning::LooksLike { ref known, .. }) if known == "@mila_news"
            ),
            "{look_alike:?}"
        );
    }
}
