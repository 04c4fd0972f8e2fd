//! The look-alike table: each target with exactly the warnings it must draw.

use super::*;
use unicode_script::Script::{
    Bopomofo, Common, Cyrillic, Greek, Han, Hangul, Hiragana, Katakana, Latin,
};

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
}

#[test]
fn korean_han_and_hangul_is_unmarked() {
    // 韓國語_한국어
    check("#\u{97D3}\u{570B}\u{8A9E}_\u{D55C}\u{AD6D}\u{C5B4}", &[]);
}

#[test]
fn chinese_han_and_bopomofo_is_not_mixed_but_bopomofo_is_unusual() {
    // 中文ㄓㄨㄥ: Han with Bopomofo is "highly restrictive", and no Latin is in it; but UTS #39
    // gives Bopomofo letters the Identifier_Type Limited_Use, so they are unusual letters, as
    // they were before Latin beside Han was marked.
    let target = "#\u{4E2D}\u{6587}\u{3113}\u{3128}\u{3125}";
    assert!(!latin_beside_another_script(target));
    check(
        target,
        &[mixed(
            &[Han, Bopomofo],
            &['\u{4E2D}', '\u{6587}', '\u{3113}', '\u{3128}', '\u{3125}'],
        )],
    );
}

#[test]
fn japanese_with_latin_is_mixed() {
    // UTS #39 calls this "highly restrictive"; consentd marks Latin beside any other script.
    check(
        "#\u{6771}\u{4EAC}Tower",
        &[mixed(&[Han, Latin], &['\u{6771}', '\u{4EAC}'])],
    );
}

#[test]
fn a_han_stroke_for_an_l_is_mixed() {
    // U+4E28 CJK UNIFIED IDEOGRAPH-4E28, a vertical stroke: no confusable of l, but Han.
    check("@mi\u{4E28}a_news", &[mixed(&[Latin, Han], &['\u{4E28}'])]);
}

#[test]
fn the_prolonged_sound_mark_for_an_underscore_is_mixed() {
    // U+30FC has no script of its own (Common); its Script_Extensions are Hiragana and Katakana.
    check(
        "@mila\u{30FC}news",
        &[mixed(&[Latin, Hiragana, Katakana], &['\u{30FC}'])],
    );
}

#[test]
fn latin_with_a_hangul_letter_is_mixed() {
    check("@mila\u{D55C}", &[mixed(&[Latin, Hangul], &['\u{D55C}'])]);
}

#[test]
fn latin_with_a_bopomofo_letter_is_mixed() {
    check("@\u{3105}mila", &[mixed(&[Bopomofo, Latin], &['\u{3105}'])]);
}

#[test]
fn a_japanese_domain_under_a_latin_top_level_domain_is_mixed() {
    // 例え.jp: as a Cyrillic domain under .com is.
    check(
        "https://\u{4F8B}\u{3048}.jp",
        &[mixed(&[Han, Hiragana, Latin], &['\u{4F8B}', '\u{3048}'])],
    );
}

#[test]
fn a_dotless_i_with_a_dot_above_looks_like_i() {
    // ı̇ draws as i; its plain skeleton keeps the dot, its skeleton without marks is "@mila_news".
    check(
        "@m\u{131}\u{307}la_news",
        &[
            mixed(&[Latin], &['\u{131}', '\u{307}']),
            like("@mila_news", 3, '\u{131}', 'i'),
        ],
    );
}

#[test]
fn an_i_with_a_second_dot_above_looks_like_i() {
    // i is Soft_Dotted: U+0307 takes the place of its own dot.
    check(
        "@mi\u{307}la_news",
        &[
            mixed(&[Latin], &['\u{307}']),
            like("@mila_news", 4, '\u{307}', 'l'),
        ],
    );
}

#[test]
fn a_j_with_a_dot_above_is_unusual() {
    assert_eq!(
        warnings("@j\u{307}ohn", &KnownTargets::default()),
        [mixed(&[Latin], &['\u{307}'])]
    );
}

#[test]
fn a_macron_below_an_underscore_looks_like_the_underscore() {
    check(
        "@mila_\u{331}news",
        &[
            mixed(&[Latin], &['\u{331}']),
            like("@mila_news", 7, '\u{331}', 'n'),
        ],
    );
}

#[test]
fn a_mark_on_a_dot_an_at_or_a_digit_is_unusual() {
    let alone = |target: &str| warnings(target, &KnownTargets::default());
    assert_eq!(
        alone("mila@example.\u{323}com"),
        [mixed(&[Latin], &['\u{323}'])]
    );
    assert_eq!(alone("@\u{301}mila"), [mixed(&[Latin], &['\u{301}'])]);
    assert_eq!(alone("#2024\u{304}"), [mixed(&[Common], &['\u{304}'])]);
}

#[test]
fn the_same_mark_twice_is_unusual() {
    // NFC keeps one acute in the é and the other after it: in NFD, the acute twice.
    assert_eq!(
        warnings("@caf\u{E9}\u{301}", &KnownTargets::default()),
        [mixed(&[Latin], &['\u{E9}', '\u{301}'])]
    );
}

#[test]
fn precomposed_accents_are_not_hidden_marks() {
    check("@mar\u{ED}a", &[]);
    check("@na\u{EF}ve", &[]);
    check("#Vi\u{1EC7}t_Nam", &[]);
    check("#caf\u{E9}_cr\u{E8}me", &[]);
}

#[test]
fn marks_of_other_scripts_on_their_letters_are_not_hidden() {
    // कां: a vowel sign (Mc), then a nasal sign (Mn) on the same consonant.
    check("#\u{915}\u{93E}\u{902}", &[]);
    // مَرْحَبًا: Arabic with its vowel marks.
    check(
        "#\u{645}\u{64E}\u{631}\u{652}\u{62D}\u{64E}\u{628}\u{64B}\u{627}",
        &[],
    );
    // กั้น: Thai, a vowel sign and a tone mark (both Mn) on one consonant.
    check("#\u{E01}\u{E31}\u{E49}\u{E19}", &[]);
}

#[test]
fn an_emoji_variation_selector_is_neither_a_hidden_mark_nor_a_letter() {
    // U+FE0F is a nonspacing mark, but default-ignorable: the gate judges it, and it is no
    // letter of any script (not an identifier character, it made the target "unrestricted").
    check("#\u{1F642}\u{FE0F}", &[]);
    check("#mila\u{2764}\u{FE0F}", &[]);
}

#[test]
fn a_target_with_its_accents_removed_looks_like_the_known_one() {
    let known = KnownTargets::new(["@jose"]);
    assert_eq!(
        looks_like("@jos\u{E9}", &known),
        Some(like("@jose", 5, '\u{E9}', 'e'))
    );
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
        Some(Pair {
            first: 1,
            second: 3,
            alike: Alike::Skeleton,
            difference: Difference {
                position: 2,
                ours: Some('m'),
                theirs: Some('r'),
            }
        })
    );
    assert_eq!(
        mandate_targets_refusal(&targets(&["@mila_news", "@mila_shop"])),
        None
    );
    assert_eq!(mandate_targets_refusal(&targets(&[])), None);
}

#[test]
fn mandate_targets_that_look_alike_without_their_marks_are_named() {
    let targets = |list: &[&str]| list.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    // The message quotes the targets as Rust does, combining marks written out.
    assert_eq!(
        mandate_targets_refusal(&targets(&["@mila_news", "@m\u{131}\u{307}la_news"])).as_deref(),
        Some(
            "targets[0] \"@mila_news\" and targets[1] \"@m\u{131}\\u{307}la_news\" look alike (one \
             UTS #39 skeleton without their nonspacing marks) but differ at char 3: U+0069 LATIN \
             SMALL LETTER I in the first, U+0131 LATIN SMALL LETTER DOTLESS I in the second"
        )
    );
    assert_eq!(
        confusable_pair(&targets(&["@mila_\u{331}news", "@x", "@mila_news"])).map(|p| p.alike),
        Some(Alike::WithoutMarks)
    );
    assert_eq!(
        confusable_pair(&targets(&["@jose", "@jos\u{E9}"])).map(|p| (p.first, p.second)),
        Some((0, 1))
    );
}

#[test]
fn a_one_word_field_value_is_checked_like_a_target() {
    let mail = KnownTargets::new(["mila@example.com"]);
    assert_eq!(
        value_warnings("mila@ex\u{430}mple.com", &mail),
        [
            mixed(&[Latin, Cyrillic], &['\u{430}']),
            like("mila@example.com", 8, '\u{430}', 'a'),
        ]
    );
    assert_eq!(
        value_warnings("https://x.com/@rnila_news", &KnownTargets::default()),
        []
    );
    assert_eq!(
        value_warnings("@rnila_news", &known()),
        [like("@mila_news", 2, 'r', 'm')]
    );
    assert_eq!(
        value_warnings("Inv\u{43E}ice", &KnownTargets::default()),
        [mixed(&[Latin, Cyrillic], &['\u{43E}'])]
    );
}

#[test]
fn free_text_in_a_field_is_not_checked() {
    let known = KnownTargets::new(["mila@example.com"]);
    assert_eq!(value_warnings("to mila@ex\u{430}mple.com", &known), []);
    assert_eq!(
        value_warnings("\u{421}\u{447}\u{451}\u{442} for Mila", &known),
        []
    );
    assert_eq!(value_warnings("", &known), []);
}

#[test]
fn which_values_are_one_word() {
    assert!(is_identifier_like("mila@example.com"));
    assert!(is_identifier_like("https://example.org/a?b=c#d"));
    assert!(is_identifier_like("+15550100"));
    assert!(!is_identifier_like(""));
    assert!(!is_identifier_like("Re: launch"));
    assert!(
        !is_identifier_like("a\u{A0}b"),
        "a no-break space is a space"
    );
    assert!(!is_identifier_like("a\nb"));
}

#[test]
fn a_field_value_is_compared_with_known_targets_up_to_twice_its_length_and_16() {
    // "@mila_news" is 10 characters: known targets of up to 36 are compared with it.
    assert_eq!(comparable_chars("@mila_news"), Some(36));
    assert_eq!(comparable_chars(&"x".repeat(120)), Some(MAX_TARGET_CHARS));
    // 528 characters are twice the longest target and 16: the longest value still compared.
    assert_eq!(comparable_chars(&"x".repeat(528)), Some(MAX_TARGET_CHARS));
    assert_eq!(comparable_chars(&"x".repeat(529)), None);
    assert!(comparable(10, 36) && !comparable(10, 37));
    assert!(comparable(36, 10) && !comparable(37, 10));
    // The same letters with dots below (nonspacing marks) making them longer.
    let with_marks = |marks: usize| format!("@mila_news{}", "\u{323}".repeat(marks));
    let within = with_marks(26);
    let beyond = with_marks(27);
    assert_eq!(within.chars().count(), 36);
    let like_within = KnownTargets::new([within.as_str()]);
    assert!(matches!(
        value_warnings("@mila_news", &like_within).as_slice(),
        [Warning::LooksLike { known, .. }] if *known == within
    ));
    assert_eq!(
        value_warnings("@mila_news", &KnownTargets::new([beyond.as_str()])),
        []
    );
    // A target is compared with every known target, whatever its length.
    assert!(looks_like("@mila_news", &KnownTargets::new([beyond.as_str()])).is_some());
    // Nor is a value more than twice as long as a known target, and 16, compared with it.
    let long_value = format!("@mila_news{}", "\u{323}".repeat(27));
    assert!(looks_like(&long_value, &known()).is_some());
    // (The dot below 27 times on one letter is unusual: only that warning is drawn.)
    assert_eq!(
        value_warnings(&long_value, &known()),
        [mixed(&[Latin], &['\u{323}'])]
    );
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

/// Punctuation and symbols stand outside the scripts, so a non-ASCII one that draws as the ASCII
/// one it imitates is judged on its own; one that draws as itself (an emoji, a currency sign) is
/// not.
#[test]
fn a_non_ascii_look_alike_of_ascii_punctuation_is_marked() {
    let marked = [
        ("a fullwidth low line", "@mila\u{FF3F}news", '\u{FF3F}'),
        ("a one dot leader", "@mila\u{2024}news", '\u{2024}'),
        ("a hyphen", "@mila\u{2010}news", '\u{2010}'),
        (
            "the estimated symbol for an e",
            "@mila_n\u{212E}ws",
            '\u{212E}',
        ),
        (
            "a division slash",
            "https://bank.example\u{2215}login",
            '\u{2215}',
        ),
        (
            "a fullwidth commercial at",
            "mila\u{FF20}example.com",
            '\u{FF20}',
        ),
    ];
    for (label, target, c) in marked {
        assert_eq!(
            mixed_scripts(target),
            Some(mixed(&[Script::Latin], &[c])),
            "{label}"
        );
    }
    for (label, target) in [
        ("an emoji", "#news\u{1F4F0}"),
        ("a euro sign", "#price\u{20AC}"),
        ("ASCII punctuation", "@mila_news.example/path-1"),
    ] {
        assert_eq!(mixed_scripts(target), None, "{label}");
    }
}
