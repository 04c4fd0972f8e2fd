//! Cutting a text into Telegram-sized messages: the numbered parts a long action text is
//! sent in before its card, and the size checks every other message goes through.
//!
//! Telegram allows 4096 characters in a message, but the server counts Unicode code points while
//! many clients count UTF-16 code units; a message is only safe when it is within both, so every
//! measure here takes the larger of the two.
//!
//! A cut never falls inside a grapheme cluster (an emoji family, a flag, a letter with its marks)
//! so no part shows half a character. Telegram trims the white space at the end of every message,
//! so a part is never cut right after white space: a cut falls just before a line break or a
//! space, which then opens the next part, after its `[i/N]` header line, where nothing trims it.
//! Among the cuts that fit, the latest before a line break wins, then the latest before other
//! white space, then the latest after anything but white space, and only then any cluster
//! boundary (a run of white space longer than a part). Joining the parts always gives the text
//! back byte for byte: nothing is trimmed, added or dropped at a cut.

/// The most a Telegram message may hold, in code points and in UTF-16 code units alike.
pub const MESSAGE_LIMIT: usize = 4096;

/// The size of `s` as Telegram's server counts it (code points) and as clients count it (UTF-16
/// code units).
pub fn measure(s: &str) -> (usize, usize) {
    s.chars()
        .fold((0, 0), |(cp, units), c| (cp + 1, units + c.len_utf16()))
}

/// Whether `s` fits in `room` under both measures.
pub fn fits_in_card(s: &str, room: usize) -> bool {
    let (cp, units) = measure(s);
    cp <= room && units <= room
}

/// Whether `s` can be sent as one message.
pub fn message_fits(s: &str) -> bool {
    fits_in_card(s, MESSAGE_LIMIT)
}

/// The header of part `i` of `n`: the line `[i/n]` and its newline.
pub(crate) fn part_header(i: usize, n: usize) -> String {
    format!("[{i}/{n}]\n")
}

/// The message that carries part `i` of `n` (1-based).
pub fn part_message(i: usize, n: usize, part: &str) -> String {
    format!("{}{part}", part_header(i, n))
}

/// [`pieces`], owned.
#[cfg(test)]
pub(crate) fn parts(text: &str) -> Vec<String> {
    pieces(text).into_iter().map(str::to_owned).collect()
}

/// The texts of the numbered parts of `text`, borrowed from it: the message for part `i` of `N`
/// is exactly [`part_message`]`(i, N, part)` and fits [`MESSAGE_LIMIT`] under both measures.
///
/// An empty text has no parts (there is nothing to send).
pub fn pieces(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    // The header's width depends on N, and N on the room the header leaves. Every header is
    // budgeted at the widest one ("[N/N]\n"), so the room depends only on the number of digits in
    // N. The budget only ever widens, so the loop ends; a budget wider than the final N needs
    // (if a smaller room happened to give fewer parts) only leaves a little room unused.
    let mut digits = 1;
    loop {
        let header = 2 * digits + 4;
        let found = chunks(text, MESSAGE_LIMIT - header);
        let needed = decimal_digits(found.len());
        if needed <= digits {
            return found;
        }
        digits = needed;
    }
}

fn decimal_digits(mut n: usize) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

/// A place where `text` may be cut, as a byte offset with the size of everything before it.
#[derive(Debug, Clone, Copy)]
struct Cut {
    byte: usize,
    cp: usize,
    units: usize,
    /// What comes before it does not end in white space: a part ending here keeps its end.
    shown: bool,
    /// `shown`, and just before a line break.
    line: bool,
    /// `shown`, and just before a cluster of white space.
    word: bool,
}

/// Cuts `text` into consecutive slices that each fit `room` under both measures, cutting only
/// between grapheme clusters, never after white space where it can be helped, and preferring
/// the cut before a line break, then before other white space (the latest that fits).
///
/// One grapheme cluster longer than `room` cannot be shown whole in any message. The refusal gate
/// refuses a text holding one (`refusal::clusters`), so only other callers meet it: it is then
/// cut between its scalar values as a last resort, because showing it in pieces is better than
/// not showing it.
///
/// # Panics
/// If `room` is below 2: one astral character alone needs two UTF-16 units.
pub fn chunks(text: &str, room: usize) -> Vec<&str> {
    assert!(room >= 2, "a chunk must hold at least one character");
    let cuts = cluster_cuts(text);
    let mut out = Vec::new();
    // Where the next chunk starts, with the size of everything before it.
    let (mut byte, mut cp, mut units) = (0usize, 0usize, 0usize);
    // The index of the first cut after `byte`.
    let mut next = 1;
    while byte < text.len() {
        while cuts[next].byte <= byte {
            next += 1;
        }
        let fits = |cut: &Cut| cut.cp - cp <= room && cut.units - units <= room;
        let mut last_fit = None;
        let mut k = next;
        while k < cuts.len() && fits(&cuts[k]) {
            last_fit = Some(k);
            k += 1;
        }
        let chosen = match last_fit {
            Some(last) if last == cuts.len() - 1 => last,
            Some(last) => {
                let window = &cuts[next..=last];
                let pick = |want: fn(&Cut) -> bool| window.iter().rposition(want);
                next + pick(|c| c.line)
                    .or_else(|| pick(|c| c.word))
                    .or_else(|| pick(|c| c.shown))
                    .unwrap_or(window.len() - 1)
            }
            None => {
                // The cluster from `byte` on is longer than a whole chunk: cut it between scalars.
                let end = cuts[next].byte;
                let mut taken = (byte, 0, 0);
                for (offset, c) in text[byte..end].char_indices() {
                    if taken.1 + 1 > room || taken.2 + c.len_utf16() > room {
                        break;
                    }
                    taken = (
                        byte + offset + c.len_utf8(),
                        taken.1 + 1,
                        taken.2 + c.len_utf16(),
                    );
                }
                out.push(&text[byte..taken.0]);
                byte = taken.0;
                cp += taken.1;
                units += taken.2;
                continue;
            }
        };
        let cut = cuts[chosen];
        out.push(&text[byte..cut.byte]);
        (byte, cp, units) = (cut.byte, cut.cp, cut.units);
    }
    out
}

/// Every grapheme cluster boundary of `text`, the start (0) and the end included.
fn cluster_cuts(text: &str) -> Vec<Cut> {
    let mut cuts = vec![Cut {
        byte: 0,
        cp: 0,
        units: 0,
        shown: false,
        line: false,
        word: false,
    }];
    let (mut cp, mut units) = (0, 0);
    let mut clusters = crate::graphemes::grapheme_indices(text).peekable();
    while let Some((start, cluster)) = clusters.next() {
        let (c, u) = measure(cluster);
        cp += c;
        units += u;
        let shown = !cluster.ends_with(char::is_whitespace);
        let next = clusters.peek().map(|&(_, next)| next);
        let blank_next = next.is_some_and(|next| next.chars().all(char::is_whitespace));
        cuts.push(Cut {
            byte: start + cluster.len(),
            cp,
            units,
            shown,
            line: shown && blank_next && next.is_some_and(|next| next.contains('\n')),
            word: shown && blank_next,
        });
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use unicode_segmentation::UnicodeSegmentation;

    /// Byte offsets of every grapheme cluster boundary of `text`.
    fn boundaries(text: &str) -> BTreeSet<usize> {
        let mut set: BTreeSet<usize> = text.grapheme_indices(true).map(|(i, _)| i).collect();
        set.insert(text.len());
        set
    }

    /// Checks everything [`parts`] promises about `text` and returns the part count.
    fn check_parts(text: &str) -> usize {
        let found = parts(text);
        let n = found.len();
        assert_eq!(found.concat(), text, "the parts must join back to the text");
        let bounds = boundaries(text);
        let mut at = 0;
        for (i, part) in found.iter().enumerate() {
            assert!(!part.is_empty(), "part {} is empty", i + 1);
            let message = part_message(i + 1, n, part);
            let (cp, units) = measure(&message);
            assert!(
                message_fits(&message),
                "part {} has {cp} cp, {units} units",
                i + 1
            );
            at += part.len();
            assert!(bounds.contains(&at), "part {} ends inside a cluster", i + 1);
        }
        n
    }

    /// Pieces that exercise every rule: clusters of several scalars, astral characters (two UTF-16
    /// units), line and word breaks, CRLF (one cluster) and a space followed by a combining mark
    /// (also one cluster, so not a word boundary).
    const PIECES: &[&str] = &[
        "a",
        "word",
        "слово",
        "palavra",
        "漢字",
        "😀",
        "👨\u{200D}👩\u{200D}👧",
        "🇧🇷",
        "🏳\u{FE0F}\u{200D}🌈",
        "e\u{301}",
        "й",
        "1\u{FE0F}\u{20E3}",
        " ",
        " ",
        "\n",
        "\r\n",
        " \u{301}",
        "\t",
        "𝔸",
        "ä\u{308}\u{308}",
    ];

    fn text_strategy(max_pieces: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..max_pieces).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn parts_join_back_and_fit(text in text_strategy(6000)) {
            check_parts(&text);
        }

        #[test]
        fn small_chunks_keep_clusters_and_prefer_lines(text in text_strategy(400), room in 16usize..60) {
            let found = chunks(&text, room);
            prop_assert_eq!(found.concat(), text.clone());
            let bounds = boundaries(&text);
            let mut at = 0;
            for (i, chunk) in found.iter().enumerate() {
                prop_assert!(fits_in_card(chunk, room));
                at += chunk.len();
                // Every cluster in PIECES is shorter than 16, so no last-resort cut is needed.
                prop_assert!(bounds.contains(&at));
                if i + 1 == found.len() {
                    continue;
                }
                // Telegram would trim white space at a message's end. (A window of 16 clusters
                // all white space, with no other cut, is too rare in these texts to meet.)
                prop_assert!(
                    !chunk.ends_with(char::is_whitespace),
                    "chunk {:?} ends in white space",
                    chunk
                );
                let rest = &text[at..];
                let next = rest.graphemes(true).next().unwrap();
                let blank = |cluster: &str| cluster.chars().all(char::is_whitespace);
                // The latest cut before a line break wins: a chunk not stopping before one has
                // none inside it either (after something other than white space).
                let before_line = blank(next) && next.contains('\n');
                if !before_line {
                    let clusters: Vec<&str> = chunk.graphemes(true).collect();
                    let skipped = clusters.windows(2).any(|pair| {
                        !pair[0].ends_with(char::is_whitespace)
                            && blank(pair[1])
                            && pair[1].contains('\n')
                    });
                    prop_assert!(!skipped, "chunk {:?} skipped a line boundary", chunk);
                }
                // A chunk not stopping before white space could not have taken the next
                // cluster too.
                if !blank(next) {
                    let longer = &text[at - chunk.len()..at + next.len()];
                    prop_assert!(!fits_in_card(longer, room), "chunk {:?} stopped early", chunk);
                }
            }
        }
    }

    /// A fixed text of 19,000 code points mixing scripts, emoji and combining marks.
    fn mixed_text() -> String {
        let pieces = [
            "Hello, world! ",
            "Привет, мир! ",
            "Olá, ação e coração. ",
            "漢字かな交じり文。",
            "👨\u{200D}👩\u{200D}👧\u{200D}👦 ",
            "🇷🇺🇧🇷🇺🇸",
            "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
            "e\u{301}\u{323} ",
            "😀😃😄",
            "\n",
            "a-very-long-token-without-any-spaces-in-it-at-all",
        ];
        let mut text = String::new();
        let mut i = 0;
        while text.chars().count() < 19_000 {
            text.push_str(pieces[i % pieces.len()]);
            i = (i * 7 + 3) % 101;
        }
        text.chars().take(19_000).collect::<String>()
    }

    #[test]
    fn mixed_19000_text() {
        let text = mixed_text();
        assert_eq!(text.chars().count(), 19_000);
        let n = check_parts(&text);
        assert!(n >= 5, "19,000 code points need at least 5 parts, got {n}");
    }

    #[test]
    fn astral_emoji_split_by_utf16_units() {
        // 5000 code points but 10,000 UTF-16 units: the UTF-16 limit decides.
        let text = "😀".repeat(5000);
        let found = parts(&text);
        assert_eq!(found.len(), 3);
        for part in &found {
            let (cp, units) = measure(part);
            assert_eq!(units, 2 * cp);
            assert!(units <= MESSAGE_LIMIT - "[3/3]\n".len());
        }
        check_parts(&text);
    }

    #[test]
    fn a_cluster_longer_than_a_message_is_cut_between_scalars() {
        // One grapheme cluster of 5001 code points: no cluster boundary fits, so the last resort
        // cuts between scalar values. Everything still arrives, and every message fits.
        let text = format!("e{}", "\u{301}".repeat(5000));
        assert_eq!(text.graphemes(true).count(), 1);
        let found = parts(&text);
        assert_eq!(found.len(), 2);
        assert_eq!(found.concat(), text);
        for (i, part) in found.iter().enumerate() {
            assert!(message_fits(&part_message(i + 1, 2, part)));
        }
        // Text after the giant cluster is cut at cluster boundaries again.
        let text = format!("ab{}cd", "\u{301}".repeat(4200));
        let found = parts(&text);
        assert_eq!(found.concat(), text);
        assert!(found.iter().all(|p| message_fits(&part_message(1, 2, p))));
    }

    /// Telegram trims the white space at the end of every message it is sent, so a part message
    /// that ends in a line feed or a space (a cut right after a line or a word) arrives without
    /// it: the parts would no longer be "the part's text verbatim", and the owner could not tell
    /// "1 000" cut after its space from "1000" cut between its digits. Only the last part may end
    /// as the text itself ends.
    #[test]
    fn no_part_but_the_last_ends_in_white_space_telegram_would_trim() {
        let line = "x".repeat(3000);
        let cases = [
            ("cut at a line", format!("{line}\n{line}")),
            ("cut at a word", format!("{line} {line}")),
            ("cut at a blank line", format!("{line}\n\n{line}")),
            (
                "a prose text",
                "All work and no play makes Jack a dull boy. ".repeat(200) + "End",
            ),
        ];
        for (label, text) in cases {
            let found = parts(&text);
            assert!(found.len() >= 2, "{label}: {} part(s)", found.len());
            assert_eq!(found.concat(), text, "{label}");
            for (i, part) in found[..found.len() - 1].iter().enumerate() {
                assert!(
                    !part.ends_with(char::is_whitespace),
                    "{label}: part {} ends in {:?}, which Telegram trims from the message",
                    i + 1,
                    part.chars().next_back().unwrap()
                );
            }
        }
    }

    /// Combining marks that Unicode 18.0 (the gate's data, `icu_properties` 2.4) makes part of
    /// the grapheme cluster of the letter before them, and that `unicode-segmentation` 1.13
    /// (Unicode 17.0) does not: the gate accepts a text holding them, and the cut may then fall
    /// between a letter and its mark, which a cut must never do. The owner then
    /// sees the letter bare at the end of one part and the mark alone on a dotted circle at the
    /// start of the next.
    #[test]
    fn a_cut_never_falls_between_a_letter_and_a_mark_new_in_unicode_18() {
        use icu_properties::props::GraphemeClusterBreak as Gcb;
        use icu_properties::CodePointMapData;
        let gcb = CodePointMapData::<Gcb>::new();
        let cases = [
            ("a Hebrew mark on alef", '\u{05D0}', '\u{05C8}'),
            ("an Oriya sign on ka", '\u{0B15}', '\u{0B53}'),
            ("a Latin-extended mark on e", 'e', '\u{1ADE}'),
            ("an Arabic Extended-C mark on beh", '\u{0628}', '\u{10EF0}'),
            ("a spacing mark on x", 'x', '\u{1D250}'),
        ];
        for (label, base, mark) in cases {
            let text = format!("{}{base}{mark} and more", "x".repeat(MESSAGE_LIMIT - 7));
            assert_eq!(
                crate::refusal::visible::check_value(
                    &text,
                    crate::refusal::visible::FieldRef::Text,
                    true
                ),
                Ok(()),
                "{label}: the gate accepts the text"
            );
            assert!(
                matches!(gcb.get(mark), Gcb::Extend | Gcb::SpacingMark),
                "{label}: U+{:04X} extends the cluster before it in Unicode 18.0",
                u32::from(mark)
            );
            let found = parts(&text);
            assert_eq!(found.concat(), text, "{label}");
            for (i, part) in found.iter().enumerate().skip(1) {
                let first = part.chars().next().unwrap();
                assert!(
                    !matches!(gcb.get(first), Gcb::Extend | Gcb::SpacingMark),
                    "{label}: part {} starts with U+{:04X}, cut from its letter {:?} at the end \
                     of part {}",
                    i + 1,
                    u32::from(first),
                    found[i - 1].chars().next_back().unwrap(),
                    i
                );
            }
        }
    }

    #[test]
    fn a_text_that_fits_is_one_part() {
        assert_eq!(parts(""), Vec::<String>::new());
        assert_eq!(parts("hi"), vec!["hi".to_owned()]);
        let full = "x".repeat(MESSAGE_LIMIT - "[1/1]\n".len());
        assert_eq!(parts(&full), vec![full.clone()]);
        assert_eq!(parts(&format!("{full}y")).len(), 2);
    }

    #[test]
    fn line_then_word_then_cluster() {
        assert_eq!(chunks("aaa\nbbb ccc", 9), vec!["aaa", "\nbbb ccc"]);
        assert_eq!(chunks("aaa bbb ccc", 9), vec!["aaa bbb", " ccc"]);
        // Never after white space, where a cut before it fits.
        assert_eq!(chunks("aaaa  bbbb", 5), vec!["aaaa", "  bbb", "b"]);
        assert_eq!(chunks("aaa \nbbbb", 5), vec!["aaa", " \nbbb", "b"]);
        assert_eq!(chunks("aaaaaaaaaaaa", 5), vec!["aaaaa", "aaaaa", "aa"]);
        // A space carrying a combining mark is one cluster, not white space then a mark.
        assert_eq!(chunks("ab \u{301}cdef", 4), vec!["ab \u{301}", "cdef"]);
        // A flag (two scalars, four units) is never halved.
        assert_eq!(chunks("a🇧🇷", 4), vec!["a", "🇧🇷"]);
    }

    #[test]
    fn the_header_width_follows_the_part_count() {
        // Enough text for 10+ parts: every header is then two digits wide on both sides.
        let text = "word ".repeat(9000);
        let n = check_parts(&text);
        assert!(n >= 10);
        let last = part_message(n, n, &parts(&text)[n - 1]);
        assert!(last.starts_with(&format!("[{n}/{n}]\n")));
    }
}
