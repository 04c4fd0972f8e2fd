//! Grapheme clusters as the gate's Unicode data draws them. The gate judges scalars with
//! `icu_properties` (Unicode 18.0); clusters are found with `unicode-segmentation`, whose tables
//! may be a version behind (1.13: Unicode 17.0). To the older tables a combining mark new in the
//! newer version is a cluster of its own, so a text the gate accepts could be cut into parts
//! between a letter and its mark, or hold a cluster longer than the cap counts. Here the older
//! segmenter's boundaries are kept only where the newer data allows a break too: never before
//! an Extend, ZWJ or SpacingMark scalar, never after a Prepend one, unless a control, CR or LF
//! stands on the other side (UAX #29, GB4, GB5, GB9, GB9a, GB9b). Where the two versions agree,
//! which is everywhere but the scalars new in the newer one, nothing changes.

use icu_properties::props::GraphemeClusterBreak as Gcb;
use icu_properties::{CodePointMapData, CodePointMapDataBorrowed};
use unicode_segmentation::UnicodeSegmentation;

const BREAK: CodePointMapDataBorrowed<'static, Gcb> = CodePointMapData::<Gcb>::new();

/// The grapheme clusters of `text` with their byte offsets, as [`UnicodeSegmentation::
/// grapheme_indices`] (extended clusters) gives them, joined where the gate's Unicode data
/// forbids the break.
pub fn grapheme_indices(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut clusters = text.grapheme_indices(true).peekable();
    std::iter::from_fn(move || {
        let (start, first) = clusters.next()?;
        let mut end = start + first.len();
        while let Some(&(next_start, next)) = clusters.peek() {
            let before = text[..next_start].chars().next_back();
            let after = next.chars().next();
            match (before, after) {
                (Some(before), Some(after)) if !breaks_between(before, after) => {
                    end = next_start + next.len();
                    clusters.next();
                }
                _ => break,
            }
        }
        Some((start, &text[start..end]))
    })
}

/// [`grapheme_indices`] without the offsets.
pub fn graphemes(text: &str) -> impl Iterator<Item = &str> {
    grapheme_indices(text).map(|(_, cluster)| cluster)
}

/// Whether the gate's data allows a boundary the segmenter found between `before` and `after`.
fn breaks_between(before: char, after: char) -> bool {
    let is_control = |c: char| matches!(BREAK.get(c), Gcb::Control | Gcb::CR | Gcb::LF);
    if is_control(before) || is_control(after) {
        return true;
    }
    let extends = matches!(BREAK.get(after), Gcb::Extend | Gcb::ZWJ | Gcb::SpacingMark);
    let prepends = BREAK.get(before) == Gcb::Prepend;
    !(extends || prepends)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters(text: &str) -> Vec<&str> {
        graphemes(text).collect()
    }

    /// Marks new in Unicode 18.0 stay on their letter; what both versions know is cut as the
    /// segmenter cuts it.
    #[test]
    fn the_table_of_clusters() {
        let cases: [(&str, &str, Vec<&str>); 8] = [
            ("ASCII", "ab", vec!["a", "b"]),
            (
                "a mark both versions know",
                "e\u{301}x",
                vec!["e\u{301}", "x"],
            ),
            (
                "a Hebrew mark new in 18.0",
                "\u{5D0}\u{5C8}x",
                vec!["\u{5D0}\u{5C8}", "x"],
            ),
            (
                "an Oriya sign new in 18.0",
                "\u{B15}\u{B53}",
                vec!["\u{B15}\u{B53}"],
            ),
            (
                "a spacing mark new in 18.0",
                "x\u{1D250}y",
                vec!["x\u{1D250}", "y"],
            ),
            (
                "a new mark after a line break",
                "a\n\u{5C8}",
                vec!["a", "\n", "\u{5C8}"],
            ),
            ("CR LF", "a\r\nb", vec!["a", "\r\n", "b"]),
            (
                "an emoji family",
                "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}!",
                vec!["\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", "!"],
            ),
        ];
        for (label, text, expected) in cases {
            assert_eq!(clusters(text), expected, "{label}");
        }
    }

    /// The segmenter's tables are the older ones: the day they catch up, this module's joins
    /// become no-ops and the version pins below say so.
    #[test]
    fn the_segmenter_is_the_older_version() {
        assert_eq!(unicode_segmentation::UNICODE_VERSION, (17, 0, 0));
        assert_eq!("\u{5D0}\u{5C8}".graphemes(true).count(), 2);
    }

    /// Offsets and clusters cover the text exactly, in order.
    #[test]
    fn the_clusters_join_back_to_the_text() {
        let text = "x\u{5C8}\u{5C8}e\u{301}\r\n\u{1ADE}\u{1F1F5}\u{1F1F9}a";
        let mut at = 0;
        for (start, cluster) in grapheme_indices(text) {
            assert_eq!(start, at);
            at += cluster.len();
        }
        assert_eq!(at, text.len());
    }
}
