//! What draws together on one spot of a card without stacking marks on one character
//! (docs/PROTOCOL.md, "The visible-text rules"): consonants joined to one letter by viramas, and
//! grapheme clusters too long to be drawn — or split into the card's numbered parts — as one.
//!
//! - **Joined consonants.** A virama (Canonical_Combining_Class 9) between two letters joins
//!   them into one conjunct. Most scripts draw a conjunct along the line, but several stack each
//!   joined consonant one step below the last: Khmer's coeng (U+17D2), Myanmar's, Balinese,
//!   Javanese, Tai Tham, Siddham. Each virama is one mark on its own letter, so the cap on marks
//!   never sees the chain, and twenty joined consonants are a tower through the card's lines
//!   under the value. Real words join far fewer: Khmer two ("ស្ត្រី"), Sanskrit at most four
//!   (five consonants, "कार्त्स्न्य"). A ZWJ or ZWNJ beside the virama, and marks on a letter,
//!   do not end the chain; any other scalar does.
//! - **Long clusters.** A text is sent in numbered parts cut on grapheme cluster boundaries, never
//!   inside a cluster. A cluster longer than a part could not be cut that way, and
//!   clusters of hundreds of scalars exist without a stacked mark: pictographs chained by ZWJ,
//!   skin tones after one pictograph, conjoining jamo, spacing vowel signs, prepended letters.
//!   The longest that real text uses are emoji ZWJ sequences (ten scalars: a kiss with two skin
//!   tones) and Indic conjuncts with their signs (about a dozen); [`MAX_CLUSTER`] leaves room
//!   above both.

use icu_properties::props::{CanonicalCombiningClass, GeneralCategory, GeneralCategoryGroup};
use icu_properties::{CodePointMapData, CodePointMapDataBorrowed};

const GENERAL_CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();
const COMBINING_CLASS: CodePointMapDataBorrowed<'static, CanonicalCombiningClass> =
    CodePointMapData::<CanonicalCombiningClass>::new();

/// The most consonants a virama may join to one letter (a conjunct of five consonants).
pub(crate) const MAX_JOINED: usize = 4;
/// The most scalars in one grapheme cluster.
pub(crate) const MAX_CLUSTER: usize = 32;

/// What draws together on one spot. Indexes are 0-based, in scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClusterProblem {
    /// `count` consonants joined by viramas to the letter at `index`.
    Joined { count: usize, index: usize },
    /// A grapheme cluster of `count` scalars starting at `index`.
    Long { count: usize, index: usize },
}

/// The first conjunct that joins too many consonants, or else the first cluster too long.
pub(crate) fn first_problem(value: &str) -> Option<ClusterProblem> {
    if value.is_ascii() {
        return None;
    }
    first_long_chain(value).or_else(|| first_long_cluster(value))
}

fn first_long_chain(value: &str) -> Option<ClusterProblem> {
    let (mut start, mut joined, mut after_virama) = (0, 0, false);
    for (index, c) in value.chars().enumerate() {
        if c == '\u{200C}' || c == '\u{200D}' {
            continue;
        }
        let category = GENERAL_CATEGORY.get(c);
        if GeneralCategoryGroup::Letter.contains(category) {
            if after_virama {
                joined += 1;
                if joined > MAX_JOINED {
                    return Some(ClusterProblem::Joined {
                        count: joined,
                        index: start,
                    });
                }
            } else {
                (start, joined) = (index, 0);
            }
            after_virama = false;
        } else if COMBINING_CLASS.get(c) == CanonicalCombiningClass::Virama {
            after_virama = true;
        } else if GeneralCategoryGroup::Mark.contains(category) {
            // A sign on the letter (a nukta, a vowel sign) keeps the chain; it does not join.
            after_virama = false;
        } else {
            (joined, after_virama) = (0, false);
        }
    }
    None
}

fn first_long_cluster(value: &str) -> Option<ClusterProblem> {
    let mut index = 0;
    for cluster in crate::graphemes::graphemes(value) {
        let count = cluster.chars().count();
        if count > MAX_CLUSTER {
            return Some(ClusterProblem::Long { count, index });
        }
        index += count;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_chains_and_clusters() {
        let khmer_tower = |n: usize| format!("\u{1780}{}", "\u{17D2}\u{1780}".repeat(n));
        let cases: Vec<(&str, String, Option<ClusterProblem>)> = vec![
            ("ASCII", "plain words".into(), None),
            ("Khmer, two joined", "\u{179F}\u{17D2}\u{178F}\u{17D2}\u{179A}\u{17B8}".into(), None),
            ("Sanskrit, five consonants", "का\u{930}\u{94D}\u{924}\u{94D}\u{938}\u{94D}\u{928}\u{94D}\u{92F}".into(), None),
            ("four joined below one letter", khmer_tower(4), None),
            (
                "five joined below one letter",
                format!("ab {}", khmer_tower(5)),
                Some(ClusterProblem::Joined { count: 5, index: 3 }),
            ),
            (
                "a joiner beside each virama",
                format!("\u{1780}{}", "\u{17D2}\u{200D}\u{1780}".repeat(5)),
                Some(ClusterProblem::Joined { count: 5, index: 0 }),
            ),
            (
                "Myanmar syllables with asat, not joined to each other",
                "\u{1019}\u{103C}\u{1014}\u{103A}\u{1019}\u{102C}".repeat(8),
                None,
            ),
            ("a space ends the chain", format!("{} {}", khmer_tower(3), khmer_tower(3)), None),
            (
                "the longest emoji ZWJ sequence",
                "\u{1F9D1}\u{1F3FB}\u{200D}\u{2764}\u{FE0F}\u{200D}\u{1F48B}\u{200D}\u{1F9D1}\u{1F3FC}".into(),
                None,
            ),
            (
                "pictographs chained by ZWJ",
                format!("ok {}", "\u{1F44D}\u{200D}".repeat(20) + "\u{1F44D}"),
                Some(ClusterProblem::Long { count: 41, index: 3 }),
            ),
            (
                "conjoining jamo",
                "\u{1100}".repeat(33),
                Some(ClusterProblem::Long { count: 33, index: 0 }),
            ),
            ("thirty-two jamo", "\u{1100}".repeat(32), None),
        ];
        for (name, value, expected) in cases {
            assert_eq!(first_problem(&value), expected, "{name}");
        }
    }
}
