//! Visibility gate for consent cards: decides whether a text, target or field
//! value holds only characters an owner can actually see, and refuses it
//! otherwise.
//!
//! A value is refused when it holds a scalar that does not show (by the
//! General_Category and Default_Ignorable_Code_Point data pinned in
//! `icu_properties`, plus four blank-looking symbols), or when it is not in
//! NFC. The only scalars that may hide inside a value are the joiners,
//! variation selectors and tags that build a visible emoji, and only where
//! they sit inside that emoji's grapheme cluster.

use std::fmt;

use icu_properties::props::{
    DefaultIgnorableCodePoint, EmojiModifier, ExtendedPictographic, GeneralCategory,
    NoncharacterCodePoint,
};
use icu_properties::{
    CodePointMapData, CodePointMapDataBorrowed, CodePointSetData, CodePointSetDataBorrowed,
};
use unicode_normalization::{is_nfc, is_nfc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

const GENERAL_CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();
const DEFAULT_IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();
const PICTOGRAPH: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<ExtendedPictographic>();
const SKIN_TONE: CodePointSetDataBorrowed<'static> = CodePointSetData::new::<EmojiModifier>();
const NONCHARACTER: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<NoncharacterCodePoint>();

/// Assigned symbols in visible categories that nonetheless draw as an empty
/// cell, so an owner sees a gap where text is.
const BLANKS: [char; 4] = ['\u{2800}', '\u{1D159}', '\u{FFFC}', '\u{16FE4}'];

const ZWJ: char = '\u{200D}';
const TEXT_PRESENTATION: char = '\u{FE0E}';
const EMOJI_PRESENTATION: char = '\u{FE0F}';
const KEYCAP: char = '\u{20E3}';
const CANCEL_TAG: char = '\u{E007F}';

/// Where a value came from; used in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldRef<'a> {
    /// The card's body text.
    Text,
    /// What the consent is for.
    Target,
    /// A named field value.
    Field(&'a str),
}

impl fmt::Display for FieldRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldRef::Text => f.write_str("text"),
            FieldRef::Target => f.write_str("target"),
            FieldRef::Field(name) => write!(f, "field {name}"),
        }
    }
}

/// Why a value cannot be shown on a consent card. Positions are 1-based
/// indexes of Unicode scalar values within the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A scalar that an owner could not see.
    #[error("U+{:04X} {name} in {field} at char {position}", u32::from(*.code_point))]
    Invisible {
        code_point: char,
        name: String,
        field: String,
        position: usize,
    },
    /// The value differs from its NFC form, starting at `position`.
    #[error("{field} is not in NFC (first non-NFC character at char {position})")]
    NotNfc { field: String, position: usize },
}

impl Refusal {
    /// Stable machine-readable reason.
    pub fn reason_code(&self) -> &'static str {
        match self {
            Refusal::Invisible { .. } => "invisible_character",
            Refusal::NotNfc { .. } => "not_nfc",
        }
    }

    /// What was refused and where, for the person who submitted the value.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// Refuses `value` if an owner could not see all of it, or if it is not NFC.
///
/// Invisible characters are reported before normalization problems, because
/// a hidden character is the more serious finding and NFC says nothing about
/// whether the text can be seen. `allow_newline` admits U+000A; every other
/// line or paragraph break stays refused.
pub fn check_value(value: &str, field: FieldRef<'_>, allow_newline: bool) -> Result<(), Refusal> {
    if let Some((index, code_point)) = first_invisible(value, allow_newline) {
        return Err(Refusal::Invisible {
            code_point,
            name: display_name(code_point),
            field: field.to_string(),
            position: index + 1,
        });
    }
    match first_non_nfc(value) {
        Some(index) => Err(Refusal::NotNfc {
            field: field.to_string(),
            position: index + 1,
        }),
        None => Ok(()),
    }
}

/// The raw predicate (no cluster exception): would this scalar be refused on its own?
pub fn is_refused_alone(c: char, allow_newline: bool) -> bool {
    match c {
        '\n' => return !allow_newline,
        // Printable ASCII is the bulk of real input and never refused.
        ' '..='~' => return false,
        _ => {}
    }
    let hidden_category = matches!(
        GENERAL_CATEGORY.get(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    );
    hidden_category || DEFAULT_IGNORABLE.contains(c) || BLANKS.contains(&c)
}

/// Index (0-based, in scalars) and value of the first scalar that is refused
/// once the emoji exceptions have been applied.
fn first_invisible(value: &str, allow_newline: bool) -> Option<(usize, char)> {
    // Everything before the first suspicious scalar is visible, and only emoji
    // glue can be excused by its cluster, so segmentation is paid for only
    // when the first suspicious scalar is glue.
    let (index, first) = value
        .chars()
        .enumerate()
        .find(|&(_, c)| is_refused_alone(c, allow_newline))?;
    if !is_emoji_glue_scalar(first) {
        return Some((index, first));
    }
    let mut offset = 0;
    let mut scalars = Vec::new();
    for cluster in value.graphemes(true) {
        scalars.clear();
        scalars.extend(cluster.chars());
        if let Some(index) = first_refused_in_cluster(&scalars, allow_newline) {
            return Some((offset + index, scalars[index]));
        }
        offset += scalars.len();
    }
    None
}

/// Scans one grapheme cluster left to right, so the reported scalar is the
/// first one an emoji reading cannot account for.
fn first_refused_in_cluster(cluster: &[char], allow_newline: bool) -> Option<usize> {
    let mut i = 0;
    while i < cluster.len() {
        let c = cluster[i];
        if !is_refused_alone(c, allow_newline) {
            i += 1;
            continue;
        }
        if is_tag_spec(c) || c == CANCEL_TAG {
            // Judged as a whole run so that a long tag run costs linear time;
            // an unclosed or misplaced run is reported at its first tag.
            let run_end = i + cluster[i..].iter().take_while(|&&t| is_tag_spec(t)).count();
            let closed = run_end > i && cluster.get(run_end) == Some(&CANCEL_TAG);
            let after_pictograph = i > 0 && PICTOGRAPH.contains(cluster[i - 1]);
            if !(closed && after_pictograph) {
                return Some(i);
            }
            i = run_end + 1;
            continue;
        }
        if !is_emoji_glue(cluster, i) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether the joiner or variation selector at `i` is part of an emoji the
/// cluster visibly draws.
fn is_emoji_glue(cluster: &[char], i: usize) -> bool {
    let previous = i.checked_sub(1).map(|p| cluster[p]);
    let next = cluster.get(i + 1).copied();
    match cluster[i] {
        ZWJ => {
            // A joiner after a modified pictograph ("🏳️‍🌈", "👩🏿‍💻") still
            // joins that pictograph, so presentation selectors and skin tones
            // are looked through.
            let base = cluster[..i]
                .iter()
                .rev()
                .find(|&&p| !is_presentation_selector(p) && !SKIN_TONE.contains(p));
            base.is_some_and(|&p| PICTOGRAPH.contains(p))
                && next.is_some_and(|n| PICTOGRAPH.contains(n))
        }
        TEXT_PRESENTATION | EMOJI_PRESENTATION => match previous {
            Some(p) if PICTOGRAPH.contains(p) => true,
            Some(p) if cluster[i] == EMOJI_PRESENTATION && is_keycap_base(p) => {
                next == Some(KEYCAP)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The only scalars that an emoji cluster can excuse.
fn is_emoji_glue_scalar(c: char) -> bool {
    c == ZWJ || is_presentation_selector(c) || is_tag_spec(c) || c == CANCEL_TAG
}

fn is_presentation_selector(c: char) -> bool {
    c == TEXT_PRESENTATION || c == EMOJI_PRESENTATION
}

fn is_keycap_base(c: char) -> bool {
    c.is_ascii_digit() || c == '#' || c == '*'
}

fn is_tag_spec(c: char) -> bool {
    ('\u{E0020}'..='\u{E007E}').contains(&c)
}

/// The character's Unicode name, or a label in angle brackets for code points
/// that have none (controls, private use, unassigned) or that the pinned name
/// table does not know yet.
fn display_name(c: char) -> String {
    if let Some(name) = unicode_names2::name(c) {
        return name.to_string();
    }
    let label = match GENERAL_CATEGORY.get(c) {
        GeneralCategory::Control => "<control>",
        GeneralCategory::PrivateUse => "<private use>",
        GeneralCategory::Surrogate => "<surrogate>",
        GeneralCategory::Unassigned if NONCHARACTER.contains(c) => "<noncharacter>",
        GeneralCategory::Unassigned => "<unassigned>",
        _ => "<unnamed>",
    };
    label.to_owned()
}

/// Index (0-based, in scalars) of the first scalar at which `value` differs
/// from its NFC form, or `None` when it is NFC.
///
/// The first difference is used rather than the first scalar whose
/// NFC_Quick_Check is not Yes: a Maybe scalar (a combining mark) is often
/// fine, and when it is not, the change NFC makes starts at the base before
/// it ("e\u{301}" becomes "é" from char 1), which is what the owner sees as
/// the wrong character. Canonical decompositions never start with the
/// decomposed scalar itself, so a non-NFC value always differs from its NFC
/// form at an index inside the value.
fn first_non_nfc(value: &str) -> Option<usize> {
    let normalized = match is_nfc_quick(value.chars()) {
        IsNormalized::Yes => true,
        IsNormalized::No => false,
        IsNormalized::Maybe => is_nfc(value),
    };
    if normalized {
        return None;
    }
    let first_difference = value.chars().zip(value.nfc()).position(|(a, b)| a != b);
    Some(first_difference.unwrap_or_else(|| value.chars().count().saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Instant;

    #[track_caller]
    fn check(
        label: &str,
        input: &str,
        field: FieldRef<'_>,
        allow_newline: bool,
        expected: Result<(), &str>,
    ) {
        let actual = check_value(input, field, allow_newline).map_err(|r| r.message());
        assert_eq!(
            actual.as_ref().copied().map_err(String::as_str),
            expected,
            "case `{label}` on {input:?} ({field}, allow_newline={allow_newline})"
        );
    }

    const T: FieldRef<'static> = FieldRef::Text;
    const TARGET: FieldRef<'static> = FieldRef::Target;
    const REPLY_TO: FieldRef<'static> = FieldRef::Field("reply_to");

    #[test]
    fn field_ref_display() {
        assert_eq!(FieldRef::Text.to_string(), "text");
        assert_eq!(FieldRef::Target.to_string(), "target");
        assert_eq!(FieldRef::Field("reply_to").to_string(), "field reply_to");
    }

    #[test]
    fn reason_codes() {
        let invisible = check_value("a\u{200B}", T, false).unwrap_err();
        assert_eq!(invisible.reason_code(), "invisible_character");
        let not_nfc = check_value("e\u{301}", T, false).unwrap_err();
        assert_eq!(not_nfc.reason_code(), "not_nfc");
        assert_eq!(
            invisible,
            Refusal::Invisible {
                code_point: '\u{200B}',
                name: "ZERO WIDTH SPACE".into(),
                field: "text".into(),
                position: 2,
            }
        );
    }

    #[test]
    fn exact_messages() {
        // The 17th code point is the ZWSP.
        check(
            "zwsp at char 17",
            "Please pay Alice\u{200B}now",
            T,
            false,
            Err("U+200B ZERO WIDTH SPACE in text at char 17"),
        );
        check(
            "field name in message",
            "ops@exa\u{200B}mple.org",
            REPLY_TO,
            false,
            Err("U+200B ZERO WIDTH SPACE in field reply_to at char 8"),
        );
        check(
            "positions count scalars across emoji clusters",
            "ab👨\u{200D}👩\u{200D}👧c\u{200B}d",
            T,
            false,
            Err("U+200B ZERO WIDTH SPACE in text at char 9"),
        );
        check(
            "five hex digits",
            "x\u{E0041}",
            T,
            false,
            Err("U+E0041 TAG LATIN CAPITAL LETTER A in text at char 2"),
        );
        check(
            "six hex digits, noncharacter label",
            "\u{10FFFF}",
            T,
            false,
            Err("U+10FFFF <noncharacter> in text at char 1"),
        );
        check(
            "BMP noncharacter",
            "ok\u{FDD0}",
            T,
            false,
            Err("U+FDD0 <noncharacter> in text at char 3"),
        );
        check(
            "supplementary private use",
            "\u{F0000}",
            TARGET,
            false,
            Err("U+F0000 <private use> in target at char 1"),
        );
        check(
            "invisible reported before not_nfc",
            "e\u{301}\u{200B}",
            T,
            false,
            Err("U+200B ZERO WIDTH SPACE in text at char 3"),
        );
        check("empty value", "", T, false, Ok(()));
    }

    #[test]
    fn general_categories() {
        check(
            "Cc bell",
            "a\u{7}",
            T,
            true,
            Err("U+0007 <control> in text at char 2"),
        );
        check(
            "Cc NUL",
            "\u{0}",
            T,
            true,
            Err("U+0000 <control> in text at char 1"),
        );
        check(
            "Cc DEL",
            "a\u{7F}",
            T,
            true,
            Err("U+007F <control> in text at char 2"),
        );
        check(
            "Cc NEL",
            "a\u{85}",
            T,
            true,
            Err("U+0085 <control> in text at char 2"),
        );
        check(
            "Cc tab",
            "a\tb",
            T,
            true,
            Err("U+0009 <control> in text at char 2"),
        );
        check(
            "Cc CR",
            "a\rb",
            T,
            true,
            Err("U+000D <control> in text at char 2"),
        );
        check(
            "Cc CRLF refused at CR",
            "a\r\nb",
            T,
            true,
            Err("U+000D <control> in text at char 2"),
        );
        check(
            "LF in text when allowed",
            "line one\nline two",
            T,
            true,
            Ok(()),
        );
        check(
            "LF in text when not allowed",
            "a\nb",
            T,
            false,
            Err("U+000A <control> in text at char 2"),
        );
        check(
            "LF in target",
            "abcd\nx",
            TARGET,
            false,
            Err("U+000A <control> in target at char 5"),
        );
        check(
            "LF in field",
            "ab\n",
            REPLY_TO,
            false,
            Err("U+000A <control> in field reply_to at char 3"),
        );
        check(
            "Cf ZWSP",
            "a\u{200B}b",
            T,
            false,
            Err("U+200B ZERO WIDTH SPACE in text at char 2"),
        );
        check(
            "Cf soft hyphen",
            "a\u{AD}b",
            T,
            false,
            Err("U+00AD SOFT HYPHEN in text at char 2"),
        );
        check(
            "Cf BOM",
            "\u{FEFF}a",
            T,
            false,
            Err("U+FEFF ZERO WIDTH NO-BREAK SPACE in text at char 1"),
        );
        check(
            "Cf ZWNJ",
            "a\u{200C}b",
            T,
            false,
            Err("U+200C ZERO WIDTH NON-JOINER in text at char 2"),
        );
        check(
            "Cf word joiner",
            "a\u{2060}b",
            T,
            false,
            Err("U+2060 WORD JOINER in text at char 2"),
        );
        check(
            "Co BMP private use",
            "a\u{E000}",
            T,
            false,
            Err("U+E000 <private use> in text at char 2"),
        );
        check(
            "Cn unassigned",
            "a\u{378}",
            T,
            false,
            Err("U+0378 <unassigned> in text at char 2"),
        );
        check(
            "Zl",
            "a\u{2028}b",
            T,
            true,
            Err("U+2028 LINE SEPARATOR in text at char 2"),
        );
        check(
            "Zp",
            "a\u{2029}b",
            T,
            true,
            Err("U+2029 PARAGRAPH SEPARATOR in text at char 2"),
        );
        check(
            "Zs no-break space",
            "a\u{A0}b",
            T,
            false,
            Err("U+00A0 NO-BREAK SPACE in text at char 2"),
        );
        check(
            "Zs ideographic space",
            "a\u{3000}b",
            T,
            false,
            Err("U+3000 IDEOGRAPHIC SPACE in text at char 2"),
        );
        check(
            "Zs thin space",
            "a\u{2009}b",
            T,
            false,
            Err("U+2009 THIN SPACE in text at char 2"),
        );
        check("Zs U+0020 allowed", "a b c", TARGET, false, Ok(()));
    }

    #[test]
    fn default_ignorables_and_blanks() {
        check(
            "Hangul choseong filler",
            "a\u{115F}",
            T,
            false,
            Err("U+115F HANGUL CHOSEONG FILLER in text at char 2"),
        );
        check(
            "Hangul jungseong filler",
            "a\u{1160}",
            T,
            false,
            Err("U+1160 HANGUL JUNGSEONG FILLER in text at char 2"),
        );
        check(
            "Hangul filler",
            "a\u{3164}",
            T,
            false,
            Err("U+3164 HANGUL FILLER in text at char 2"),
        );
        check(
            "halfwidth Hangul filler",
            "a\u{FFA0}",
            T,
            false,
            Err("U+FFA0 HALFWIDTH HANGUL FILLER in text at char 2"),
        );
        check(
            "combining grapheme joiner",
            "a\u{34F}",
            T,
            false,
            Err("U+034F COMBINING GRAPHEME JOINER in text at char 2"),
        );
        check(
            "braille blank",
            "a\u{2800}",
            T,
            false,
            Err("U+2800 BRAILLE PATTERN BLANK in text at char 2"),
        );
        check(
            "null notehead",
            "a\u{1D159}",
            T,
            false,
            Err("U+1D159 MUSICAL SYMBOL NULL NOTEHEAD in text at char 2"),
        );
        check(
            "object replacement",
            "a\u{FFFC}",
            T,
            false,
            Err("U+FFFC OBJECT REPLACEMENT CHARACTER in text at char 2"),
        );
        check(
            "Khitan filler",
            "a\u{16FE4}",
            T,
            false,
            Err("U+16FE4 KHITAN SMALL SCRIPT FILLER in text at char 2"),
        );
    }

    #[test]
    fn bidi_controls() {
        let cases = [
            ('\u{202A}', "LEFT-TO-RIGHT EMBEDDING"),
            ('\u{202B}', "RIGHT-TO-LEFT EMBEDDING"),
            ('\u{202C}', "POP DIRECTIONAL FORMATTING"),
            ('\u{202D}', "LEFT-TO-RIGHT OVERRIDE"),
            ('\u{202E}', "RIGHT-TO-LEFT OVERRIDE"),
            ('\u{2066}', "LEFT-TO-RIGHT ISOLATE"),
            ('\u{2067}', "RIGHT-TO-LEFT ISOLATE"),
            ('\u{2068}', "FIRST STRONG ISOLATE"),
            ('\u{2069}', "POP DIRECTIONAL ISOLATE"),
            ('\u{200E}', "LEFT-TO-RIGHT MARK"),
            ('\u{200F}', "RIGHT-TO-LEFT MARK"),
            ('\u{061C}', "ARABIC LETTER MARK"),
        ];
        for (c, name) in cases {
            let expected = format!("U+{:04X} {name} in target at char 4", u32::from(c));
            check(name, &format!("pay{c}bob"), TARGET, false, Err(&expected));
        }
    }

    #[test]
    fn emoji_glue_outside_emoji() {
        check(
            "tags after a letter",
            "a\u{E0067}\u{E0062}\u{E007F}",
            T,
            false,
            Err("U+E0067 TAG LATIN SMALL LETTER G in text at char 2"),
        );
        check(
            "cancel tag alone after pictograph",
            "🏴\u{E007F}",
            T,
            false,
            Err("U+E007F CANCEL TAG in text at char 2"),
        );
        check(
            "unclosed tag run",
            "🏴\u{E0067}\u{E0062}\u{E0073}",
            T,
            false,
            Err("U+E0067 TAG LATIN SMALL LETTER G in text at char 2"),
        );
        check(
            "tag run closed then reopened",
            "🏴\u{E0067}\u{E007F}\u{E0067}\u{E007F}",
            T,
            false,
            Err("U+E0067 TAG LATIN SMALL LETTER G in text at char 4"),
        );
        check(
            "tags after VS16",
            "🏴\u{FE0F}\u{E0067}\u{E007F}",
            T,
            false,
            Err("U+E0067 TAG LATIN SMALL LETTER G in text at char 3"),
        );
        check(
            "lone VS16 after a letter",
            "a\u{FE0F}",
            T,
            false,
            Err("U+FE0F VARIATION SELECTOR-16 in text at char 2"),
        );
        check(
            "VS15 after a letter",
            "a\u{FE0E}",
            T,
            false,
            Err("U+FE0E VARIATION SELECTOR-15 in text at char 2"),
        );
        check(
            "VS1",
            "a\u{FE00}",
            T,
            false,
            Err("U+FE00 VARIATION SELECTOR-1 in text at char 2"),
        );
        check(
            "VS1 after a pictograph",
            "❤\u{FE00}",
            T,
            false,
            Err("U+FE00 VARIATION SELECTOR-1 in text at char 2"),
        );
        check(
            "VS16 at start",
            "\u{FE0F}",
            T,
            false,
            Err("U+FE0F VARIATION SELECTOR-16 in text at char 1"),
        );
        check(
            "doubled VS16",
            "❤\u{FE0F}\u{FE0F}",
            T,
            false,
            Err("U+FE0F VARIATION SELECTOR-16 in text at char 3"),
        );
        check(
            "VS16 after skin tone",
            "👍🏽\u{FE0F}",
            T,
            false,
            Err("U+FE0F VARIATION SELECTOR-16 in text at char 3"),
        );
        check(
            "keycap VS16 without keycap mark",
            "1\u{FE0F}",
            T,
            false,
            Err("U+FE0F VARIATION SELECTOR-16 in text at char 2"),
        );
        check(
            "keycap with VS15",
            "1\u{FE0E}\u{20E3}",
            T,
            false,
            Err("U+FE0E VARIATION SELECTOR-15 in text at char 2"),
        );
        check(
            "ZWJ between letters",
            "a\u{200D}b",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 2"),
        );
        check(
            "ZWJ at start",
            "\u{200D}👩",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 1"),
        );
        check(
            "ZWJ at end after pictograph",
            "👨\u{200D}",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 2"),
        );
        check(
            "ZWJ pictograph to letter",
            "👨\u{200D}a",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 2"),
        );
        check(
            "ZWJ letter to pictograph",
            "a\u{200D}👨",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 2"),
        );
        check(
            "double ZWJ",
            "👨\u{200D}\u{200D}👩",
            T,
            false,
            Err("U+200D ZERO WIDTH JOINER in text at char 2"),
        );
        check(
            "ZWJ in a target",
            "a\u{200D}b",
            TARGET,
            false,
            Err("U+200D ZERO WIDTH JOINER in target at char 2"),
        );
    }

    #[test]
    fn visible_emoji_accepted() {
        check("ZWJ family", "👨\u{200D}👩\u{200D}👧", T, false, Ok(()));
        check("rainbow flag", "🏳\u{FE0F}\u{200D}🌈", T, false, Ok(()));
        check(
            "transgender flag",
            "🏳\u{FE0F}\u{200D}⚧\u{FE0F}",
            T,
            false,
            Ok(()),
        );
        check("red heart", "❤\u{FE0F}", T, false, Ok(()));
        check("text-style smiley", "☺\u{FE0E}", T, false, Ok(()));
        check("keycap 1", "1\u{FE0F}\u{20E3}", T, false, Ok(()));
        check("keycap #", "#\u{FE0F}\u{20E3}", T, false, Ok(()));
        check("keycap * without VS16", "*\u{20E3}", T, false, Ok(()));
        check(
            "Scotland flag",
            "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
            T,
            false,
            Ok(()),
        );
        check("skin tone", "👍🏽", T, false, Ok(()));
        check("skin tone then ZWJ", "👩🏿\u{200D}💻", T, false, Ok(()));
        check(
            "kiss",
            "👩\u{200D}❤\u{FE0F}\u{200D}💋\u{200D}👨",
            T,
            false,
            Ok(()),
        );
        check(
            "eye in speech bubble",
            "👁\u{FE0F}\u{200D}🗨\u{FE0F}",
            T,
            false,
            Ok(()),
        );
        check("regional indicator flag", "🇫🇷", T, false, Ok(()));
        check(
            "emoji in a field",
            "ok 👨\u{200D}👩\u{200D}👧 ❤\u{FE0F}",
            REPLY_TO,
            false,
            Ok(()),
        );
        check(
            "emoji in a target",
            "1\u{FE0F}\u{20E3}🏳\u{FE0F}\u{200D}🌈",
            TARGET,
            false,
            Ok(()),
        );
    }

    #[test]
    fn scripts_and_normalization() {
        check("Cyrillic", "Привет, мир", T, false, Ok(()));
        check("CJK", "同意します 中文", T, false, Ok(()));
        check("Arabic", "مرحبا بالعالم", T, false, Ok(()));
        check("Devanagari", "नमस्ते दुनिया", T, false, Ok(()));
        check("Hangul syllables", "한국어", T, false, Ok(()));
        check(
            "combining mark with no precomposed form",
            "x\u{301}",
            T,
            false,
            Ok(()),
        );
        check("precomposed e acute", "caf\u{E9}", T, false, Ok(()));
        check(
            "NFD e acute",
            "e\u{301}",
            T,
            false,
            Err("text is not in NFC (first non-NFC character at char 1)"),
        );
        check(
            "NFD after plain text",
            "cafe\u{301}",
            T,
            false,
            Err("text is not in NFC (first non-NFC character at char 4)"),
        );
        check(
            "NFD in a field",
            "ab e\u{301}",
            REPLY_TO,
            false,
            Err("field reply_to is not in NFC (first non-NFC character at char 4)"),
        );
        check(
            "singleton decomposition",
            "1\u{212B}",
            TARGET,
            false,
            Err("target is not in NFC (first non-NFC character at char 2)"),
        );
        check(
            "misordered marks",
            "a\u{301}\u{316}",
            T,
            false,
            Err("text is not in NFC (first non-NFC character at char 1)"),
        );
    }

    /// The policy restated from the raw properties, independent of the
    /// module's fast paths.
    fn policy_refuses(c: char, allow_newline: bool) -> bool {
        let by_category = match CodePointMapData::<GeneralCategory>::new().get(c) {
            GeneralCategory::Control => !(c == '\n' && allow_newline),
            GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator => true,
            GeneralCategory::SpaceSeparator => c != ' ',
            _ => false,
        };
        by_category
            || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
            || matches!(c, '\u{2800}' | '\u{1D159}' | '\u{FFFC}' | '\u{16FE4}')
    }

    /// The name a refusal of `c` must carry, restated from the name table and
    /// the general category.
    fn expected_name(c: char) -> String {
        if let Some(name) = unicode_names2::name(c) {
            return name.to_string();
        }
        let noncharacter =
            (u32::from(c) & 0xFFFE) == 0xFFFE || ('\u{FDD0}'..='\u{FDEF}').contains(&c);
        match CodePointMapData::<GeneralCategory>::new().get(c) {
            GeneralCategory::Control => "<control>",
            GeneralCategory::PrivateUse => "<private use>",
            GeneralCategory::Unassigned if noncharacter => "<noncharacter>",
            GeneralCategory::Unassigned => "<unassigned>",
            other => panic!("refused U+{:04X} ({other:?}) has no name", u32::from(c)),
        }
        .to_owned()
    }

    fn expected_nfc_result(value: &str) -> Result<(), Refusal> {
        let normalized: String = value.nfc().collect();
        match value
            .chars()
            .zip(normalized.chars())
            .position(|(a, b)| a != b)
        {
            Some(index) => Err(Refusal::NotNfc {
                field: "text".into(),
                position: index + 1,
            }),
            None if normalized == value => Ok(()),
            None => panic!("{value:?} differs from its NFC form only in length"),
        }
    }

    fn check_scalar(c: char) {
        let refused = policy_refuses(c, false);
        let hex = u32::from(c);
        assert_eq!(is_refused_alone(c, false), refused, "U+{hex:04X}");
        assert_eq!(
            is_refused_alone(c, true),
            policy_refuses(c, true),
            "U+{hex:04X} with newlines allowed"
        );

        let alone = c.to_string();
        let after_letter = format!("a{c}");
        let alone_result = check_value(&alone, FieldRef::Text, false);
        let after_letter_result = check_value(&after_letter, FieldRef::Text, false);
        if !refused {
            assert_eq!(
                alone_result,
                expected_nfc_result(&alone),
                "U+{hex:04X} alone"
            );
            assert_eq!(
                after_letter_result,
                expected_nfc_result(&after_letter),
                "U+{hex:04X} after a letter"
            );
            return;
        }
        // Building the expected name once keeps this test within its time
        // budget; both refusals must then carry exactly that name.
        let name = expected_name(c);
        for (result, position) in [(alone_result, 1), (after_letter_result, 2)] {
            let expected = Refusal::Invisible {
                code_point: c,
                name: name.clone(),
                field: "text".into(),
                position,
            };
            assert_eq!(result, Err(expected), "U+{hex:04X} at char {position}");
        }
    }

    #[test]
    fn every_scalar_matches_the_policy() {
        let started = Instant::now();
        let scalars: Vec<char> = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        assert_eq!(scalars.len(), 0x110000 - 0x800);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::thread::scope(|scope| {
            for chunk in scalars.chunks(scalars.len().div_ceil(workers)) {
                scope.spawn(move || chunk.iter().copied().for_each(check_scalar));
            }
        });
        eprintln!(
            "every_scalar_matches_the_policy: {} scalars on {workers} threads in {:.2?}",
            scalars.len(),
            started.elapsed()
        );
    }

    #[test]
    fn long_values_stay_linear() {
        // Values of this size arrive in practice; a quadratic cluster scan
        // would take seconds on the tag run.
        let tags: String = std::iter::repeat_n('\u{E0067}', 19_998).collect();
        let long_tag_run = format!("🏴{tags}\u{E007F}");
        let family = "👨\u{200D}👩\u{200D}👧".repeat(4_000);
        let started = Instant::now();
        assert_eq!(check_value(&long_tag_run, T, false), Ok(()));
        assert_eq!(check_value(&family, T, false), Ok(()));
        let plain = "a".repeat(20_000) + "\u{200B}";
        assert_eq!(
            check_value(&plain, T, false).unwrap_err().message(),
            "U+200B ZERO WIDTH SPACE in text at char 20001"
        );
        assert!(
            started.elapsed().as_secs() < 2,
            "took {:?}",
            started.elapsed()
        );
    }

    const VISIBLE_PIECES: &[&str] = &[
        "a",
        "Z",
        "7",
        " ",
        ".",
        "caf\u{E9}",
        "ж",
        "Привет",
        "中文",
        "同意",
        "مرحبا",
        "नमस्ते",
        "한국어",
        "Ωμέγα",
        "x\u{301}",
        "😀",
        "👨\u{200D}👩\u{200D}👧",
        "🏳\u{FE0F}\u{200D}🌈",
        "❤\u{FE0F}",
        "☺\u{FE0E}",
        "1\u{FE0F}\u{20E3}",
        "#\u{FE0F}\u{20E3}",
        "*\u{FE0F}\u{20E3}",
        "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
        "👍🏽",
        "👩🏿\u{200D}💻",
        "🇫🇷",
        "👁\u{FE0F}\u{200D}🗨\u{FE0F}",
        "🧑\u{200D}🤝\u{200D}🧑",
    ];

    fn pieces(allow_newline: bool) -> impl Strategy<Value = Vec<&'static str>> {
        let newline: &'static [&'static str] = if allow_newline { &["\n"] } else { &[] };
        let choices: Vec<&'static str> = VISIBLE_PIECES.iter().chain(newline).copied().collect();
        prop::collection::vec(prop::sample::select(choices), 0..40)
    }

    fn field() -> impl Strategy<Value = FieldRef<'static>> {
        prop_oneof![
            Just(FieldRef::Text),
            Just(FieldRef::Target),
            Just(FieldRef::Field("reply_to")),
        ]
    }

    /// A scalar that is refused on its own and cannot be read as emoji glue.
    fn hidden_scalar(allow_newline: bool) -> impl Strategy<Value = char> {
        let notable = prop::sample::select(vec![
            '\u{0}',
            '\u{7}',
            '\n',
            '\r',
            '\u{85}',
            '\u{AD}',
            '\u{200B}',
            '\u{200C}',
            '\u{FEFF}',
            '\u{A0}',
            '\u{2009}',
            '\u{3000}',
            '\u{2028}',
            '\u{2029}',
            '\u{202E}',
            '\u{2066}',
            '\u{200E}',
            '\u{61C}',
            '\u{115F}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{2800}',
            '\u{1D159}',
            '\u{FFFC}',
            '\u{16FE4}',
            '\u{E000}',
            '\u{378}',
            '\u{FE00}',
            '\u{E0100}',
            '\u{34F}',
        ]);
        prop_oneof![notable, any::<char>()].prop_filter("refused and not emoji glue", move |&c| {
            is_refused_alone(c, allow_newline) && !is_emoji_glue_scalar(c)
        })
    }

    fn case_with_insertion(
    ) -> impl Strategy<Value = (bool, FieldRef<'static>, Vec<&'static str>, char)> {
        any::<bool>().prop_flat_map(|allow_newline| {
            (
                Just(allow_newline),
                field(),
                pieces(allow_newline),
                hidden_scalar(allow_newline),
            )
        })
    }

    proptest! {
        #[test]
        fn visible_strings_are_accepted(
            (allow_newline, field, parts) in any::<bool>()
                .prop_flat_map(|nl| (Just(nl), field(), pieces(nl)))
        ) {
            let value = parts.concat();
            prop_assert_eq!(check_value(&value, field, allow_newline), Ok(()));
        }

        #[test]
        fn hidden_scalar_between_pieces_is_found_where_inserted(
            (allow_newline, field, parts, hidden) in case_with_insertion(),
            slot in any::<prop::sample::Index>(),
        ) {
            let at = slot.index(parts.len() + 1);
            let before = parts[..at].concat();
            let value = format!("{before}{hidden}{}", parts[at..].concat());
            let refusal = check_value(&value, field, allow_newline).unwrap_err();
            prop_assert_eq!(
                refusal,
                Refusal::Invisible {
                    code_point: hidden,
                    name: display_name(hidden),
                    field: field.to_string(),
                    position: before.chars().count() + 1,
                }
            );
        }

        /// Dropped inside an emoji, a hidden scalar can also break the glue
        /// before it (a joiner losing its right-hand pictograph); then the
        /// refusal lands earlier, and only on glue.
        #[test]
        fn hidden_scalar_anywhere_is_refused_no_later_than_inserted(
            (allow_newline, field, parts, hidden) in case_with_insertion(),
            slot in any::<prop::sample::Index>(),
        ) {
            let clean: Vec<char> = parts.concat().chars().collect();
            let at = slot.index(clean.len() + 1);
            let mut scalars = clean.clone();
            scalars.insert(at, hidden);
            let value: String = scalars.iter().collect();
            match check_value(&value, field, allow_newline) {
                Err(Refusal::Invisible { code_point, position, .. }) => {
                    prop_assert!(position <= at + 1);
                    prop_assert_eq!(code_point, scalars[position - 1]);
                    if position < at + 1 {
                        prop_assert!(is_emoji_glue_scalar(code_point), "{:?}", code_point);
                    } else {
                        prop_assert_eq!(code_point, hidden);
                    }
                }
                other => prop_assert!(false, "expected an invisible refusal, got {:?}", other),
            }
        }
    }
}
