//! Text with the spans that set apart what others wrote: the words the bot says are plain, an
//! action's text is a block quotation, and a value an agent, a command or a stranger chose (a
//! target, a field, a result, a name) is a code span.
//!
//! Everything is still sent as plain text with no parse mode; the spans travel beside it as
//! Telegram message entities, whose offsets and lengths count UTF-16 code units. So no escaping
//! is ever needed, and however an agent words its text, no line of it can pass for one of the
//! card's own lines: the owner sees it inside a quotation.
//!
//! A message's buttons ([`ButtonSpec`]) live here too, beside its text, so that the store, which
//! queues a message, and the transport, which sends it, share them without depending on each other.

use serde::{Deserialize, Serialize};

/// One inline button: its label and its signed callback data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ButtonSpec {
    pub label: String,
    pub data: String,
    /// The keyboard row, from 0 (absent from older stored rows: they had one row).
    #[serde(default, skip_serializing_if = "is_first_row")]
    pub row: u8,
}

fn is_first_row(row: &u8) -> bool {
    *row == 0
}

/// How a span is set apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// A block quotation (Telegram's `blockquote`): an action's text.
    Quote,
    /// A monospaced value (Telegram's `code`): a string the bot shows but did not write.
    Value,
}

/// A styled range, in UTF-16 code units as Telegram counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub style: Style,
    pub offset: usize,
    pub length: usize,
}

/// Text and its spans. The spans never overlap and never split a surrogate pair; each covers
/// visible characters only (no leading or trailing white space), since Telegram trims a
/// message's ends and refuses an entity that would then reach past them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Styled {
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
}

/// The length of `s` in UTF-16 code units.
pub(crate) fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Marks where a value goes in a template, so the value can be found again after a localised
/// sentence has put it wherever its grammar wants. Plane 15 private-use characters: no locale
/// file holds them, and no value can, since the gate refuses private use and [`crate::shown`]
/// writes it out as `U+XXXX`.
const MARK_OPEN: char = '\u{F0000}';
const MARK_CLOSE: char = '\u{F0001}';

/// The placeholder for the `index`th value of a template.
pub(crate) fn mark(index: usize) -> String {
    format!("{MARK_OPEN}{index}{MARK_CLOSE}")
}

impl Styled {
    pub fn plain(text: impl Into<String>) -> Styled {
        Styled {
            text: text.into(),
            spans: Vec::new(),
        }
    }

    /// `text` as one span of `style`, trimmed of white space at its ends for the span (the text
    /// itself is kept whole). A text with nothing visible gets no span.
    pub(crate) fn spanning(text: &str, style: Style) -> Styled {
        let inner = text.trim_matches(|c: char| c.is_whitespace());
        let mut styled = Styled::plain(text);
        if !inner.is_empty() {
            let before = utf16_len(&text[..text.len() - text.trim_start().len()]);
            styled.spans.push(Span {
                style,
                offset: before,
                length: utf16_len(inner),
            });
        }
        styled
    }

    pub(crate) fn value(text: &str) -> Styled {
        Styled::spanning(text, Style::Value)
    }

    pub(crate) fn quote(text: &str) -> Styled {
        Styled::spanning(text, Style::Quote)
    }

    pub(crate) fn push_str(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends `other`, its spans moved along by what came before.
    pub(crate) fn push(&mut self, other: &Styled) {
        let shift = utf16_len(&self.text);
        self.text.push_str(&other.text);
        self.spans.extend(other.spans.iter().map(|span| Span {
            offset: span.offset + shift,
            ..*span
        }));
    }

    /// `items` one after another with `separator` between them.
    pub(crate) fn join<'a>(items: impl IntoIterator<Item = &'a Styled>, separator: &str) -> Styled {
        let mut joined = Styled::default();
        for (index, item) in items.into_iter().enumerate() {
            if index > 0 {
                joined.push_str(separator);
            }
            joined.push(item);
        }
        joined
    }

    /// A template holding [`mark`]s, with the `index`th mark replaced by `values[index]` styled
    /// as a value. A mark with no value (or a stray mark character) is left out.
    pub(crate) fn fill(template: &str, values: &[&str]) -> Styled {
        let mut filled = Styled::default();
        let mut rest = template;
        while let Some(open) = rest.find(MARK_OPEN) {
            filled.push_str(&rest[..open]);
            let after = &rest[open + MARK_OPEN.len_utf8()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || !after[digits..].starts_with(MARK_CLOSE) {
                // A stray mark is left out.
                rest = after;
                continue;
            }
            if let Some(value) = after[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|index| values.get(index))
            {
                filled.push(&Styled::value(value));
            }
            rest = &after[digits + MARK_CLOSE.len_utf8()..];
        }
        filled.push_str(rest);
        filled
    }

    #[cfg(test)]
    /// The byte range of the text a span covers; `None` when it does not fall on character
    /// boundaries inside the text.
    pub(crate) fn byte_range(&self, span: &Span) -> Option<std::ops::Range<usize>> {
        let (mut units, mut start) = (0, None);
        for (index, c) in self.text.char_indices() {
            if units == span.offset {
                start = Some(index);
            }
            if units == span.offset + span.length {
                return start.map(|start| start..index);
            }
            units += c.len_utf16();
        }
        let end = (units == span.offset + span.length).then_some(self.text.len());
        let start = start.or((units == span.offset).then_some(self.text.len()));
        start.zip(end).map(|(start, end)| start..end)
    }

    #[cfg(test)]
    /// The text a span covers.
    pub(crate) fn spanned(&self, span: &Span) -> String {
        self.byte_range(span)
            .map(|range| self.text[range].to_owned())
            .unwrap_or_default()
    }

    #[cfg(test)]
    /// The text with its spans made visible, for tests and snapshots: a value as `⟨value⟩`, and
    /// each line of a quotation behind `▍`.
    pub(crate) fn marked(&self) -> String {
        let mut spans: Vec<(std::ops::Range<usize>, Style)> = self
            .spans
            .iter()
            .filter_map(|span| Some((self.byte_range(span)?, span.style)))
            .collect();
        spans.sort_by_key(|(range, _)| range.start);
        let (mut out, mut at) = (String::new(), 0);
        for (range, style) in spans {
            out.push_str(&self.text[at..range.start]);
            let inner = &self.text[range.clone()];
            match style {
                Style::Value => out.push_str(&format!("⟨{inner}⟩")),
                Style::Quote => out.push_str(&format!("▍{}", inner.replace('\n', "\n▍"))),
            }
            at = range.end;
        }
        out.push_str(&self.text[at..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_count_utf16_units_and_skip_white_space() {
        let quote = Styled::quote("\n  héllo 👋🏽\n");
        assert_eq!(
            quote.spans,
            [Span {
                style: Style::Quote,
                offset: 3,
                length: 10
            }]
        );
        assert_eq!(quote.spanned(&quote.spans[0]), "héllo 👋🏽");
        assert!(Styled::value(" \n ").spans.is_empty());
        assert!(Styled::value("").spans.is_empty());
    }

    #[test]
    fn pushing_moves_spans_by_what_came_before() {
        let mut card = Styled::plain("Target: ");
        card.push(&Styled::value("@mіla"));
        card.push_str("\n🏴󠁧󠁢󠁳󠁣󠁴󠁿 ");
        card.push(&Styled::quote("Text\nTarget: @evil"));
        let shown: Vec<String> = card.spans.iter().map(|s| card.spanned(s)).collect();
        assert_eq!(shown, ["@mіla", "Text\nTarget: @evil"]);
        assert_eq!(card.spans[1].style, Style::Quote);
    }

    #[test]
    fn a_template_gets_its_values_wherever_the_grammar_put_them() {
        let template = format!("{} — цель: {}.", mark(1), mark(0));
        let filled = Styled::fill(&template, &["@mila_news", "𝐏𝐨𝐬𝐭"]);
        assert_eq!(filled.text, "𝐏𝐨𝐬𝐭 — цель: @mila_news.");
        let shown: Vec<String> = filled.spans.iter().map(|s| filled.spanned(s)).collect();
        assert_eq!(shown, ["𝐏𝐨𝐬𝐭", "@mila_news"]);
        let stray = Styled::fill(&format!("a{MARK_OPEN}b {} {}", mark(7), mark(0)), &["x"]);
        assert_eq!(stray.text, "ab  x");
    }

    #[test]
    fn byte_ranges_fall_on_characters_or_not_at_all() {
        let styled = Styled::value("a👋b");
        let whole = styled.byte_range(&styled.spans[0]).unwrap();
        assert_eq!(&styled.text[whole], "a👋b");
        let inside_the_pair = Span {
            style: Style::Value,
            offset: 2,
            length: 1,
        };
        assert_eq!(styled.byte_range(&inside_the_pair), None);
        let past_the_end = Span {
            style: Style::Value,
            offset: 3,
            length: 9,
        };
        assert_eq!(styled.byte_range(&past_the_end), None);
        let empty_at_end = Span {
            style: Style::Value,
            offset: 4,
            length: 0,
        };
        assert_eq!(styled.byte_range(&empty_at_end), Some(6..6));
    }

    #[test]
    fn marked_shows_where_the_spans_are() {
        let mut card = Styled::plain("Target: ");
        card.push(&Styled::value("@mila"));
        card.push_str("\n\n");
        card.push(&Styled::quote("one\ntwo"));
        assert_eq!(card.marked(), "Target: ⟨@mila⟩\n\n▍one\n▍two");
    }

    #[test]
    fn joined_lines_keep_their_spans() {
        let lines = [
            Styled::value("one"),
            Styled::plain("two"),
            Styled::value("3"),
        ];
        let joined = Styled::join(&lines, "\n");
        assert_eq!(joined.text, "one\ntwo\n3");
        let shown: Vec<String> = joined.spans.iter().map(|s| joined.spanned(s)).collect();
        assert_eq!(shown, ["one", "3"]);
    }
}
