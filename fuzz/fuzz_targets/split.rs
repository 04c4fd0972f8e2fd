//! Fuzz target: cutting any text into Telegram-sized parts.
//!
//! The first byte picks a small room for `split::chunks`, so that short inputs reach every rule
//! of the cutter; the rest, as UTF-8, is the text, which also goes through `split::pieces` at
//! the real message limit. For both: the parts join back to the text exactly, none is empty,
//! each fits under both measures (code points and UTF-16 units), and a cut falls inside a
//! grapheme cluster only when that cluster alone is larger than the room (the documented last
//! resort). For `chunks`, a cut is also the latest that fits before a line break, else before
//! other white space, else after anything but white space, else as late as the room allows.

#![no_main]

use consentd_core::split::{self, MESSAGE_LIMIT};
use libfuzzer_sys::fuzz_target;
use unicode_segmentation::UnicodeSegmentation;

/// A cluster boundary: its byte offset; whether what comes before it does not end in white
/// space (`shown`: Telegram would not trim a part ending there); and, when shown, whether a
/// cluster of white space (`word`) holding a line break (`line`) comes after it.
struct Boundary {
    byte: usize,
    shown: bool,
    line: bool,
    word: bool,
}

fn boundaries(text: &str) -> Vec<Boundary> {
    let mut out = vec![Boundary {
        byte: 0,
        shown: false,
        line: false,
        word: false,
    }];
    let clusters: Vec<(usize, &str)> = text.grapheme_indices(true).collect();
    for (i, &(start, cluster)) in clusters.iter().enumerate() {
        let shown = !cluster.ends_with(char::is_whitespace);
        let next = clusters.get(i + 1).map(|&(_, next)| next);
        let blank = next.is_some_and(|next| next.chars().all(char::is_whitespace));
        out.push(Boundary {
            byte: start + cluster.len(),
            shown,
            line: shown && blank && next.is_some_and(|next| next.contains('\n')),
            word: shown && blank,
        });
    }
    out
}

/// Checks what every split promises; `room` is a lower bound of the room each part had.
fn check_common(text: &str, parts: &[&str], room: usize, bounds: &[Boundary]) {
    assert_eq!(parts.concat(), text, "the parts must join back to the text");
    let mut at = 0;
    for part in parts {
        assert!(!part.is_empty(), "an empty part");
        at += part.len();
        if let Err(i) = bounds.binary_search_by_key(&at, |b| b.byte) {
            // A cut inside a cluster: only a cluster too large for any part may be cut.
            let cluster = &text[bounds[i - 1].byte..bounds[i].byte];
            assert!(
                !split::fits_in_card(cluster, room),
                "a cut at byte {at} splits the cluster {cluster:?}"
            );
        }
    }
}

fn check_chunks(text: &str, room: usize, bounds: &[Boundary]) {
    let chunks = split::chunks(text, room);
    check_common(text, &chunks, room, bounds);
    let mut start = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        assert!(
            split::fits_in_card(chunk, room),
            "chunk {chunk:?} is over {room}"
        );
        let end = start + chunk.len();
        if i + 1 < chunks.len() {
            // The boundaries strictly inside the chunk, found by bisection: a scan per chunk
            // would make long texts quadratic and starve the fuzzer.
            let first = bounds.partition_point(|b| b.byte <= start);
            let past = bounds.partition_point(|b| b.byte < end);
            let inside = bounds[first..past.max(first)].iter();
            match bounds.binary_search_by_key(&end, |b| b.byte) {
                Ok(k) if bounds[k].line => {}
                Ok(k) if bounds[k].word => {
                    // A word cut is taken only when no line boundary fits.
                    assert!(
                        !inside.clone().any(|b| b.line),
                        "chunk {chunk:?} skipped a line"
                    );
                }
                Ok(k) => {
                    assert!(
                        !inside.clone().any(|b| b.line || b.word),
                        "chunk {chunk:?} skipped a break"
                    );
                    if !bounds[k].shown {
                        assert!(
                            !inside.clone().any(|b| b.shown),
                            "chunk {chunk:?} ends in white space it could have left out"
                        );
                    }
                    // Nothing later to prefer: no later boundary of the same kind fits.
                    let later = bounds[k + 1..]
                        .iter()
                        .take_while(|b| split::fits_in_card(&text[start..b.byte], room));
                    for b in later {
                        assert!(
                            !(b.shown || !bounds[k].shown),
                            "chunk {chunk:?} stopped early"
                        );
                    }
                }
                // A last-resort cut, already checked to lie in an oversized cluster.
                Err(_) => {}
            }
        }
        start = end;
    }
}

fn check_pieces(text: &str, bounds: &[Boundary]) {
    let pieces = split::pieces(text);
    let n = pieces.len();
    assert_eq!(n == 0, text.is_empty());
    for (i, piece) in pieces.iter().enumerate() {
        let message = split::part_message(i + 1, n, piece);
        assert!(
            split::message_fits(&message),
            "part {} of {n} is too long",
            i + 1
        );
    }
    // Every header is budgeted for at most as many parts as the text has bytes, which bounds
    // the room from below.
    let digits = text.len().max(1).to_string().len();
    check_common(text, &pieces, MESSAGE_LIMIT - 2 * digits - 4, bounds);
}

fuzz_target!(|data: &[u8]| {
    let Some((&room, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let bounds = boundaries(&text);
    check_chunks(&text, 2 + usize::from(room % 64), &bounds);
    check_pieces(&text, &bounds);
});
