//! Unicode's own emoji (`emoji-test.txt` of Emoji 17.0, `fixtures/unicode/`) through the
//! visible-text rules and the cutting of long texts: an emoji is something the owner sees, so
//! none may be refused, and none may be cut in half between two parts. The joiners, selectors
//! and tag characters the rules refuse elsewhere are allowed inside exactly these sequences; this
//! keeps the two sides of that line in step with Unicode's list.

use unicode_segmentation::UnicodeSegmentation;

use super::visible::{check_value, FieldRef};
use crate::split;

const EMOJI: &str = include_str!("../../../../fixtures/unicode/emoji-17.0-strings.txt");

fn emoji() -> Vec<&'static str> {
    EMOJI.lines().filter(|line| !line.is_empty()).collect()
}

fn code_points(s: &str) -> String {
    s.chars()
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_list_is_whole() {
    let all = emoji();
    assert_eq!(all.len(), 5266, "lines of emoji-17.0-strings.txt");
    // Among them: a keycap, a ZWJ family with skin tones, a tag-sequence flag, a regional flag.
    for expected in [
        "#\u{FE0F}\u{20E3}",
        "\u{1F9D1}\u{1F3FB}\u{200D}\u{1F91D}\u{200D}\u{1F9D1}\u{1F3FF}",
        "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
        "\u{1F1F5}\u{1F1F9}",
    ] {
        assert!(all.contains(&expected), "{} missing", code_points(expected));
    }
}

/// Where a value stands: its name, its field, whether it may hold lines, and the value made of
/// one emoji.
type Place = (&'static str, FieldRef<'static>, bool, fn(&str) -> String);

/// Every emoji alone, inside a text, at the end of a line, as a target and as a field's value.
#[test]
fn every_emoji_passes_wherever_a_value_may_stand() {
    let places: [Place; 5] = [
        ("a text of it alone", FieldRef::Text, true, |e| e.to_owned()),
        ("inside a text", FieldRef::Text, true, |e| {
            format!("Look: {e} here\nand {e}")
        }),
        ("a target", FieldRef::Target, false, |e| format!("@news{e}")),
        ("a field's value", FieldRef::Field("mood"), false, |e| {
            format!("{e}{e}")
        }),
        ("after a letter", FieldRef::Field("caption"), false, |e| {
            format!("a{e}b")
        }),
    ];
    let mut refused = Vec::new();
    for e in emoji() {
        for (place, field, newline, value) in &places {
            if let Err(why) = check_value(&value(e), *field, *newline) {
                refused.push(format!("{} as {place}: {why}", code_points(e)));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

/// A long text of emoji, each after a word, is cut into parts only between whole emoji: each
/// part's end is a grapheme-cluster boundary of the whole text, and the parts join back to it.
#[test]
fn a_long_text_of_emoji_is_never_cut_inside_one() {
    let text: String = emoji().iter().map(|e| format!("x{e}")).collect();
    let boundaries: std::collections::HashSet<usize> = text
        .grapheme_indices(true)
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    for room in [64, 300, 4000] {
        let parts = split::chunks(&text, room);
        assert!(parts.len() > 1, "room {room}: one part");
        assert_eq!(parts.concat(), text, "room {room}: parts do not join back");
        let mut at = 0;
        for (i, part) in parts.iter().enumerate() {
            at += part.len();
            assert!(
                boundaries.contains(&at),
                "room {room}: part {} ends inside an emoji (its last scalars, last first: {})",
                i + 1,
                code_points(&part.chars().rev().take(4).collect::<String>())
            );
        }
    }
}
