//! Combining marks stacked on one character (docs/CONTRACT-NOTES.md, "The visible-text rules"; UTS
//! #39 §5.4): too many of them draw above
//! and below the line, over the card's lines around the value, and the same mark twice in a row
//! draws as one, so two strings that differ look alike.
//!
//! A character here is a base and the combining characters after it (Unicode's combining
//! character sequence, D56: marks of every kind, ZWJ and ZWNJ), read in canonical decomposition
//! and canonical order as UTS #39 reads it: "é" carries one mark, "ệ" two, and "é\u{301}" the
//! acute twice. A pair that one scalar decomposes to is that scalar's own glyph, not a repeat
//! (U+16121 GURUNG KHEMA VOWEL SIGN AA is two U+1611E drawn as one sign, and NFC keeps it
//! whole). Only nonspacing and enclosing marks (General_Category Mn, Me) are counted; a
//! spacing mark (Mc) takes its own room on the line, as a base does. A conjunct of several
//! consonants is several characters here, each with its own marks, so a long Sanskrit cluster is
//! not one tall stack.
//!
//! Each scalar is decomposed once and each character's marks are sorted once, so the check is
//! linear in the value (up to the sort of one character's marks).

use icu_properties::props::{CanonicalCombiningClass, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointMapDataBorrowed};
use unicode_normalization::char::decompose_canonical;

const GENERAL_CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();
const COMBINING_CLASS: CodePointMapDataBorrowed<'static, CanonicalCombiningClass> =
    CodePointMapData::<CanonicalCombiningClass>::new();

/// The most nonspacing or enclosing marks on one character of a one-line value (a target, a field
/// value, a name): UTS #39 §5.4's number. Such a value sits between the card's lines that say what
/// runs (the title above a target, the look-alike warning and the cost below it), so nothing in
/// it may reach them. Real words need fewer: Vietnamese two ("ệ", "ợ"), Thai two ("ผู้"),
/// Devanagari and the other Indic scripts two or three (a vowel sign and a nasal sign, a nukta
/// and a virama), pointed Hebrew three or four ("שָּׁ֣": shin dot, dagesh, qamats, an accent),
/// Tibetan three or four ("ཧཱུྃ", "སྒྲུ").
pub(crate) const MAX_IN_LINE: usize = 4;

/// The most on one character of a text, which is prose: Biblical Hebrew with cantillation puts
/// five or six on a letter (shin dot, dagesh, vowel, meteg and one or two accents), and Tibetan
/// spelling Sanskrit stacks as many ("ཀྵྨྱཱུྃ": three subjoined letters, two vowel signs and a
/// nasal sign). A text's lines are its own neighbours on the card, and six marks, split above
/// and below the letter as these are, stay within about a line of it; a stack of 240 reaches
/// ten lines. What six refuses is rarer still: the Kalachakra monogram's stack of seven letters,
/// a symbol more than a word.
pub(crate) const MAX_IN_TEXT: usize = 6;

/// What is wrong with the marks of a value. Indexes are 0-based, in scalars, and point at the
/// character's base (at its first mark when the value starts with marks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkProblem {
    /// More than the allowed number of marks on the character at `index`.
    TooMany { count: usize, index: usize },
    /// `mark` twice in a row, in canonical order, on the character at `index`.
    Repeated { mark: char, index: usize },
}

/// The first character of `value` with more than `max` marks or a mark repeated in a row.
pub(crate) fn first_problem(value: &str, max: usize) -> Option<MarkProblem> {
    // Only a non-ASCII scalar can be or hold a mark.
    if value.is_ascii() {
        return None;
    }
    let mut character = Character::default();
    for (index, c) in value.chars().enumerate() {
        if c.is_ascii() {
            if let Some(problem) = character.judge(max) {
                return Some(problem);
            }
            character.start(index);
            continue;
        }
        let mut ended = None;
        decompose_canonical(c, |part| {
            if is_combining(part) {
                character.push(part, index, max);
            } else {
                // A base: the character before it is complete. A decomposition holds at most
                // one base, and it comes first.
                ended = character.judge(max);
                character.start(index);
            }
        });
        if ended.is_some() {
            return ended;
        }
    }
    character.judge(max)
}

/// The character being read: where it starts, how many marks it has, and its combining
/// characters, kept while there are few enough marks to check for repeats.
#[derive(Debug, Default)]
struct Character {
    index: usize,
    count: usize,
    combining: Vec<Combining>,
}

/// A combining character of the decomposition, its combining class, and the index of the
/// scalar it comes from.
#[derive(Debug, Clone, Copy)]
struct Combining {
    c: char,
    class: u8,
    from: usize,
}

impl Character {
    fn start(&mut self, index: usize) {
        self.index = index;
        self.count = 0;
        self.combining.clear();
    }

    fn push(&mut self, c: char, from: usize, max: usize) {
        if is_counted(c) {
            self.count += 1;
        }
        if self.count <= max {
            let class = COMBINING_CLASS.get(c).0;
            self.combining.push(Combining { c, class, from });
        }
    }

    /// The character's problem, if it has one.
    fn judge(&mut self, max: usize) -> Option<MarkProblem> {
        if self.count > max {
            return Some(MarkProblem::TooMany {
                count: self.count,
                index: self.index,
            });
        }
        // Canonical ordering: within each run of combining characters whose class is not 0,
        // a stable sort by class.
        for run in self.combining.split_mut(|mark| mark.class == 0) {
            run.sort_by_key(|mark| mark.class);
        }
        self.combining
            .windows(2)
            .find(|pair| {
                pair[0].c == pair[1].c && pair[0].from != pair[1].from && is_counted(pair[0].c)
            })
            .map(|pair| MarkProblem::Repeated {
                mark: pair[0].c,
                index: self.index,
            })
    }
}

/// A combining character (D52, with the joiners of D56): it belongs to the base before it.
fn is_combining(c: char) -> bool {
    matches!(
        GENERAL_CATEGORY.get(c),
        GeneralCategory::NonspacingMark
            | GeneralCategory::SpacingMark
            | GeneralCategory::EnclosingMark
    ) || c == '\u{200C}'
        || c == '\u{200D}'
}

/// A mark drawn on its base rather than beside it.
fn is_counted(c: char) -> bool {
    matches!(
        GENERAL_CATEGORY.get(c),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(label: &str, value: &str, max: usize, expected: Option<MarkProblem>) {
        assert_eq!(
            first_problem(value, max),
            expected,
            "case `{label}` on {value:?}"
        );
    }

    fn too_many(count: usize, index: usize) -> Option<MarkProblem> {
        Some(MarkProblem::TooMany { count, index })
    }

    fn repeated(mark: char, index: usize) -> Option<MarkProblem> {
        Some(MarkProblem::Repeated { mark, index })
    }

    #[test]
    fn words_of_scripts_that_stack_marks_pass_a_one_line_value() {
        let words = [
            ("plain ASCII", "@mila_news"),
            (
                "Vietnamese",
                "Tiếng Việt: Đặng Hữu Phúc, ngưỡng, quyển, nghiệp",
            ),
            ("Thai", "ผู้ใหญ่ที่สุด กิ่ง น้ำ"),
            ("Devanagari", "नमस्ते हिन्दी संस्कृतम् श्रृंगार क़िले"),
            ("Vedic accents", "अ॒ग्निमी॑ळे पु॒रोहि॑तं"),
            ("a Sanskrit conjunct", "कार्त्स्न्यं"),
            ("pointed Hebrew", "בְּרֵאשִׁ֖ית בָּרָ֣א אֱלֹהִ֑ים הַשָּׁמַ֖יִם יִשָּׂ֣א"),
            ("Tibetan", "བཀྲ་ཤིས་བདེ་ལེགས། ཨོཾ་མ་ཎི་པདྨེ་ཧཱུྃ། བསྒྲུབས"),
            ("Arabic with vowels", "بِسْمِ ٱللَّهِ ٱلرَّحْمَٰنِ"),
            ("Greek polytonic", "ᾅδης ὦ ᾠδή"),
            ("a keycap", "1\u{FE0F}\u{20E3}"),
            ("an ideographic variation sequence", "\u{845B}\u{E0100}"),
            ("Persian with a joiner", "می\u{200C}خواهم"),
            ("four marks", "a\u{300}\u{301}\u{302}\u{303}"),
        ];
        for (label, value) in words {
            check(label, value, MAX_IN_LINE, None);
        }
    }

    #[test]
    fn texts_stack_up_to_six() {
        // Shin with shin dot, dagesh, qamats, meteg and an accent (five), and a Tibetan stack for
        // Sanskrit (six).
        let shin = "\u{5E9}\u{5B8}\u{5BC}\u{5BD}\u{5C1}\u{5A3}";
        check("Biblical Hebrew", shin, MAX_IN_TEXT, None);
        check(
            "Biblical Hebrew, one-line",
            shin,
            MAX_IN_LINE,
            too_many(5, 0),
        );
        let stack = "\u{F40}\u{FB5}\u{FA8}\u{FB1}\u{F71}\u{F74}\u{F83}";
        check("Tibetan Sanskrit", stack, MAX_IN_TEXT, None);
        check(
            "Tibetan Sanskrit, one-line",
            stack,
            MAX_IN_LINE,
            too_many(6, 0),
        );
        check(
            "seven on a letter",
            "a\u{300}\u{301}\u{302}\u{303}\u{304}\u{306}\u{307}",
            MAX_IN_TEXT,
            too_many(7, 0),
        );
    }

    #[test]
    fn too_many_marks_are_counted_on_their_character() {
        check(
            "five above",
            "a\u{300}\u{301}\u{302}\u{303}\u{304}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
        check(
            "the review's 240, below and above",
            &format!(
                "@mila_newsx{}{}",
                "\u{329}".repeat(120),
                "\u{30D}".repeat(120)
            ),
            MAX_IN_LINE,
            too_many(240, 10),
        );
        check(
            "marks in the decomposition count",
            "\u{1EC7}\u{300}\u{301}\u{304}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
        check(
            "enclosing marks count",
            "x\u{20DD}\u{20DE}\u{20DF}\u{20E0}\u{20E2}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
        check(
            "the character after a good one",
            "ab\u{300}\u{301}\u{302}\u{303}\u{304}",
            MAX_IN_LINE,
            too_many(5, 1),
        );
        check(
            "marks at the start of a value",
            "\u{300}\u{301}\u{302}\u{303}\u{304}a",
            MAX_IN_LINE,
            too_many(5, 0),
        );
        check(
            "after a space",
            "ok \u{300}\u{301}\u{302}\u{303}\u{304}",
            MAX_IN_LINE,
            too_many(5, 2),
        );
        check(
            "a joiner does not end the character",
            "ب\u{64E}\u{651}\u{200C}\u{650}\u{652}\u{653}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
    }

    #[test]
    fn spacing_marks_take_their_own_room() {
        // Devanagari vowel sign I is a spacing mark: not counted, but the character goes on.
        check(
            "spacing marks between",
            "क\u{93F}\u{93F}\u{93F}\u{93F}\u{93F}\u{93F}",
            MAX_IN_LINE,
            None,
        );
        check(
            "nonspacing marks around a spacing one",
            "क\u{901}\u{902}\u{93F}\u{941}\u{942}\u{943}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
    }

    #[test]
    fn the_same_mark_twice_in_a_row_is_refused() {
        check(
            "two acutes",
            "a\u{301}\u{301}",
            MAX_IN_LINE,
            repeated('\u{301}', 0),
        );
        check(
            "a precomposed letter and its own mark again",
            "caf\u{E9}\u{301}",
            MAX_IN_LINE,
            repeated('\u{301}', 3),
        );
        check(
            "made adjacent by canonical order",
            "\u{E1}\u{316}\u{301}",
            MAX_IN_LINE,
            repeated('\u{301}', 0),
        );
        check(
            "a vowel sign that decomposes to two of one mark",
            "\u{16103}\u{16121}",
            MAX_IN_LINE,
            None,
        );
        check(
            "that vowel sign and its part again",
            "\u{16103}\u{16121}\u{1611E}",
            MAX_IN_LINE,
            repeated('\u{1611E}', 0),
        );
        check(
            "two enclosing circles",
            "x\u{20DD}\u{20DD}",
            MAX_IN_LINE,
            repeated('\u{20DD}', 0),
        );
        check(
            "three in a row on the second character",
            "ab\u{308}\u{308}\u{308}",
            MAX_IN_LINE,
            repeated('\u{308}', 1),
        );
        check(
            "one on each of two letters",
            "a\u{301}b\u{301}",
            MAX_IN_LINE,
            None,
        );
        check(
            "kept apart by a mark of class 0",
            "ཀ\u{F72}\u{F90}\u{F72}",
            MAX_IN_LINE,
            None,
        );
        check(
            "apart, around another mark",
            "a\u{301}\u{302}\u{301}",
            MAX_IN_LINE,
            None,
        );
        check(
            "a repeat after a repeated spacing mark",
            "क\u{93F}\u{93F}\u{901}\u{901}",
            MAX_IN_LINE,
            repeated('\u{901}', 0),
        );
        check(
            "a spacing mark twice is not stacked",
            "क\u{93F}\u{93F}",
            MAX_IN_LINE,
            None,
        );
        check(
            "too many comes before a repeat",
            "a\u{301}\u{301}\u{302}\u{303}\u{304}",
            MAX_IN_LINE,
            too_many(5, 0),
        );
    }

    #[test]
    fn long_values_stay_linear() {
        // 200,000 marks on one letter against as many scalars in short words, timed beside them
        // (the fastest of three runs): a count that went back over the marks for every mark
        // would be thousands of times slower, not a few.
        let many = format!("a{}", "\u{301}\u{302}".repeat(100_000));
        let spacing = format!("क{}", "\u{93F}".repeat(200_000));
        let words = "Tiếng Việt ".repeat(20_000);
        let fastest = crate::refusal::layout::tests::fastest;
        let short = fastest(&|| assert_eq!(first_problem(&words, MAX_IN_LINE), None));
        let long = fastest(&|| {
            assert_eq!(first_problem(&many, MAX_IN_LINE), too_many(200_000, 0));
            assert_eq!(first_problem(&spacing, MAX_IN_LINE), None);
        });
        assert!(
            long < short * 30,
            "{long:?} for the long runs, {short:?} for the words"
        );
    }
}
