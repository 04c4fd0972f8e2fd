//! Strings the bot shows but did not check: a command's result line, a failure's reason, a
//! Telegram user's name. The refusal gate never saw them, so they may hold what the gate refuses
//! (a right-to-left override that reorders the line, tag characters that hide text, a zero-width
//! space). Each such scalar is written out as `U+XXXX` instead, so the owner sees that it is
//! there and the line cannot be made to read as something else.
//!
//! The policy is the gate's scalar policy (`refusal::visible::is_refused_alone`, line
//! breaks included), with the visible emoji kept whole: a joiner between two pictographs, a
//! presentation selector after one, and the tag sequence of a flag Unicode recommends (England,
//! Scotland, Wales). Any other flag-shaped tag run draws as a plain black flag, so its tags are
//! written out like any hidden scalar.

use std::borrow::Cow;
use std::fmt::Write as _;

use icu_properties::props::{EmojiModifier, ExtendedPictographic};
use icu_properties::{CodePointSetData, CodePointSetDataBorrowed};

use crate::refusal::visible::{is_recommended_flag, is_refused_alone};

const PICTOGRAPH: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<ExtendedPictographic>();
const SKIN_TONE: CodePointSetDataBorrowed<'static> = CodePointSetData::new::<EmojiModifier>();

const ZWJ: char = '\u{200D}';
const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';

/// `s` with every hidden scalar written as `U+XXXX`; borrowed when there is none.
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    let scalars: Vec<char> = s.chars().collect();
    if !scalars.iter().any(|&c| is_refused_alone(c, false)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut i = 0;
    while i < scalars.len() {
        let c = scalars[i];
        if c == BLACK_FLAG {
            if let Some(end) = flag_end(&scalars, i) {
                out.extend(&scalars[i..end]);
                i = end;
                continue;
            }
        }
        if is_refused_alone(c, false) && !is_emoji_glue(&scalars, i) {
            let _ = write!(out, "U+{:04X}", u32::from(c));
        } else {
            out.push(c);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Where a recommended flag starting at `start` ends: U+1F3F4, the tag spec of England, Scotland
/// or Wales, and CANCEL TAG.
fn flag_end(scalars: &[char], start: usize) -> Option<usize> {
    // A recommended code is five tags long: looking at six tells a longer run from it.
    let spec_len = scalars[start + 1..]
        .iter()
        .take(6)
        .take_while(|&&c| ('\u{E0020}'..='\u{E007E}').contains(&c))
        .count();
    let spec = &scalars[start + 1..start + 1 + spec_len];
    let closed = scalars.get(start + 1 + spec_len) == Some(&CANCEL_TAG);
    (closed && is_recommended_flag(spec)).then_some(start + spec_len + 2)
}

/// A joiner between two pictographs (the one before may carry a selector or a skin tone, as in
/// 🏳️‍🌈 and 👩🏽‍💻), a presentation selector right after a pictograph, or the selector of a
/// keycap (1️⃣).
fn is_emoji_glue(scalars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|p| scalars[p]);
    let after = scalars.get(i + 1).copied();
    let pictograph = |c: Option<char>| c.is_some_and(|c| PICTOGRAPH.contains(c));
    match scalars[i] {
        ZWJ => {
            let base = scalars[..i]
                .iter()
                .rev()
                .find(|&&c| !matches!(c, '\u{FE0E}' | '\u{FE0F}') && !SKIN_TONE.contains(c));
            pictograph(base.copied()) && pictograph(after)
        }
        '\u{FE0E}' => pictograph(before),
        '\u{FE0F}' => {
            let keycap = before.is_some_and(|c| c.is_ascii_digit() || c == '#' || c == '*')
                && after == Some('\u{20E3}');
            pictograph(before) || keycap
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_scalars_are_written_out() {
        let cases: [(&str, &str, &str); 14] = [
            (
                "plain",
                "https://x.com/mila/status/2",
                "https://x.com/mila/status/2",
            ),
            (
                "right-to-left override",
                "done \u{202E}gpj.exe",
                "done U+202Egpj.exe",
            ),
            ("zero-width space", "ok\u{200B}!", "okU+200B!"),
            ("a line break", "one\ntwo", "oneU+000Atwo"),
            (
                "a tag run after an emoji",
                "😀\u{E0049}\u{E0047}",
                "😀U+E0049U+E0047",
            ),
            (
                "a private-use marker",
                "a\u{F0000}0\u{F0001}",
                "aU+F00000U+F0001",
            ),
            (
                "a family",
                "👨\u{200D}👩\u{200D}👧",
                "👨\u{200D}👩\u{200D}👧",
            ),
            ("a red heart", "❤\u{FE0F}", "❤\u{FE0F}"),
            ("a joiner between letters", "a\u{200D}b", "aU+200Db"),
            (
                "the Scottish flag",
                "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
                "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
            ),
            (
                "a flag hiding upper-case tags",
                "🏴\u{E0047}\u{E0042}\u{E007F}",
                "🏴U+E0047U+E0042U+E007F",
            ),
            (
                "a well-formed flag Unicode does not recommend",
                "🏴\u{E0075}\u{E0073}\u{E0074}\u{E0078}\u{E007F}",
                "🏴U+E0075U+E0073U+E0074U+E0078U+E007F",
            ),
            (
                "a recommended code with a tag more",
                "🏴\u{E0067}\u{E0062}\u{E0077}\u{E006C}\u{E0073}\u{E0078}\u{E007F}",
                "🏴U+E0067U+E0062U+E0077U+E006CU+E0073U+E0078U+E007F",
            ),
            ("a no-break space", "Mila\u{A0}P.", "MilaU+00A0P."),
        ];
        for (label, input, expected) in cases {
            assert_eq!(shown(input), expected, "{label}");
        }
    }

    /// Common sequences with a joiner after a selector or a skin tone, or a keycap's selector
    /// after its digit: kept whole.
    #[test]
    fn common_emoji_sequences_are_kept_whole() {
        let mut bad = Vec::new();
        for emoji in [
            "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}",
            "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB}",
            "\u{2764}\u{FE0F}\u{200D}\u{1F525}",
            "1\u{FE0F}\u{20E3}",
        ] {
            let name = format!("Mila {emoji}");
            if shown(&name) != name {
                bad.push(shown(&name).into_owned());
            }
        }
        assert!(bad.is_empty(), "{bad:?}");
    }

    #[test]
    fn nothing_hidden_borrows() {
        assert!(matches!(shown("Mila Petrova 👋🏽"), Cow::Borrowed(_)));
    }
}
