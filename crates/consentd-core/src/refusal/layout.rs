//! Spacing the owner cannot see (docs/PROTOCOL.md, "The visible-text rules"): blank lines around a
//! text or piled up inside it, and
//! spaces at the ends of a one-line value or doubled inside it.
//!
//! Every scalar here is visible on its own (only U+0020 and U+000A are left once the scalar rules
//! have run), but where they sit decides what the card shows: a line break at the end of a text
//! draws nothing, and "@mila " looks like "@mila". Each problem comes back as the words that
//! finish "`<field>` …", saying what to remove and where.
//!
//! Lines are what U+000A separates, so "Hello\n" has two: "Hello" and an empty one. A blank line
//! holds nothing or only spaces. A text's first and last lines must hold something visible, and
//! at most two blank lines may stand in a row.

/// The most blank lines a text may hold in a row.
pub(crate) const MAX_BLANK_LINES_IN_A_ROW: usize = 2;

/// What is wrong with the lines of a text, if anything: finishes "text …".
pub(crate) fn text_problem(text: &str) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    // Only whether each line is blank matters from here on.
    let blank: Vec<bool> = text
        .split('\n')
        .map(|line| line.bytes().all(|b| b == b' '))
        .collect();
    if blank.iter().all(|&b| b) {
        let what = match (text.contains(' '), text.contains('\n')) {
            (true, true) => "spaces and line breaks",
            (true, false) => "spaces",
            _ => "line breaks",
        };
        return Some(format!("is only {what}"));
    }
    let leading = blank.iter().take_while(|&&b| b).count();
    if leading > 0 {
        return Some(format!(
            "starts with {}; remove what comes before line {}",
            blank_lines(1, leading),
            leading + 1
        ));
    }
    // Runs inside the text: the first line is visible from here on, so a run
    // ends at a visible line, or at the end of the text (reported below).
    let mut run_start = None;
    for (index, &is_blank) in blank.iter().enumerate() {
        if is_blank {
            run_start.get_or_insert(index);
        } else if let Some(start) = run_start.take() {
            let run = index - start;
            if run > MAX_BLANK_LINES_IN_A_ROW {
                return Some(format!(
                    "has {run} blank lines in a row (lines {} to {index}); at most \
                     {MAX_BLANK_LINES_IN_A_ROW} are allowed",
                    start + 1
                ));
            }
        }
    }
    let trailing = blank.iter().rev().take_while(|&&b| b).count();
    let last_visible = blank.len() - trailing;
    (trailing > 0).then(|| {
        format!(
            "ends with {}; remove what follows line {last_visible}",
            blank_lines(last_visible + 1, trailing)
        )
    })
}

/// "a blank line (line 3)" or "2 blank lines (lines 3 to 4)".
fn blank_lines(first: usize, count: usize) -> String {
    match count {
        1 => format!("a blank line (line {first})"),
        _ => format!(
            "{count} blank lines (lines {first} to {})",
            first + count - 1
        ),
    }
}

/// What is wrong with the spaces of a one-line value, if anything: finishes "target …".
pub(crate) fn line_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b == b' ') {
        return Some("is only spaces".to_owned());
    }
    let leading = value.bytes().take_while(|&b| b == b' ').count();
    if leading > 0 {
        return Some(format!("has {}", spaces(leading, "leading")));
    }
    let trailing = value.bytes().rev().take_while(|&b| b == b' ').count();
    if trailing > 0 {
        return Some(format!("has {}", spaces(trailing, "trailing")));
    }
    let doubled = value.find("  ")?;
    let position = value[..doubled].chars().count() + 1;
    Some(format!("has two spaces in a row at char {position}"))
}

/// "a leading space" or "3 leading spaces".
fn spaces(count: usize, which: &str) -> String {
    match count {
        1 => format!("a {which} space"),
        _ => format!("{count} {which} spaces"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[track_caller]
    fn text(input: &str, expected: Option<&str>) {
        assert_eq!(text_problem(input).as_deref(), expected, "text {input:?}");
    }

    #[track_caller]
    fn line(input: &str, expected: Option<&str>) {
        assert_eq!(line_problem(input).as_deref(), expected, "line {input:?}");
    }

    #[test]
    fn texts_whose_lines_all_show() {
        text("", None);
        text("Hello", None);
        text("Hello\nworld", None);
        text("one\n\ntwo", None);
        text("one\n\n\ntwo", None);
        text("one\n   \n \ntwo", None);
        text("  indented first line\nand a last line  ", None);
        text("a  b   c", None);
    }

    #[test]
    fn texts_with_nothing_to_show() {
        text(" ", Some("is only spaces"));
        text("   ", Some("is only spaces"));
        text("\n", Some("is only line breaks"));
        text("\n\n\n", Some("is only line breaks"));
        text(" \n ", Some("is only spaces and line breaks"));
    }

    #[test]
    fn leading_blank_lines() {
        text(
            "\nHello",
            Some("starts with a blank line (line 1); remove what comes before line 2"),
        );
        text(
            "  \nHello",
            Some("starts with a blank line (line 1); remove what comes before line 2"),
        );
        text(
            "\n \n\nHello\n",
            Some("starts with 3 blank lines (lines 1 to 3); remove what comes before line 4"),
        );
    }

    #[test]
    fn trailing_blank_lines() {
        text(
            "Hello\n",
            Some("ends with a blank line (line 2); remove what follows line 1"),
        );
        text(
            "Hello\nworld\n",
            Some("ends with a blank line (line 3); remove what follows line 2"),
        );
        text(
            "Hello\n   ",
            Some("ends with a blank line (line 2); remove what follows line 1"),
        );
        text(
            "Hello\n\n",
            Some("ends with 2 blank lines (lines 2 to 3); remove what follows line 1"),
        );
        text(
            "a\n\nb\n\n\n\n",
            Some("ends with 4 blank lines (lines 4 to 7); remove what follows line 3"),
        );
    }

    #[test]
    fn blank_lines_piled_up_inside() {
        text(
            "one\n\n\n\ntwo",
            Some("has 3 blank lines in a row (lines 2 to 4); at most 2 are allowed"),
        );
        text(
            "one\n \n  \n   \n\ntwo",
            Some("has 4 blank lines in a row (lines 2 to 5); at most 2 are allowed"),
        );
        text(
            "a\n\nb\n\n\n\nc\n",
            Some("has 3 blank lines in a row (lines 4 to 6); at most 2 are allowed"),
        );
    }

    #[test]
    fn one_line_values() {
        line("", None);
        line("@mila_news", None);
        line("a b c", None);
        line(" ", Some("is only spaces"));
        line("   ", Some("is only spaces"));
        line(" @mila", Some("has a leading space"));
        line("   @mila", Some("has 3 leading spaces"));
        line("@mila ", Some("has a trailing space"));
        line("@mila  ", Some("has 2 trailing spaces"));
        line("Re:  hello", Some("has two spaces in a row at char 4"));
        line("Привет  мир", Some("has two spaces in a row at char 7"));
        line(" a  b ", Some("has a leading space"));
        line("a  b ", Some("has a trailing space"));
    }

    #[test]
    fn long_values_stay_linear() {
        // Long runs (200,000 line breaks in a row, 200,000 single spaces) against as many short
        // lines, timed beside them (the fastest of three runs): a check that went back over a
        // run for every character in it would be thousands of times slower, not a few.
        let text_value = "line\n".repeat(200_000) + "end";
        let blank_run = format!("a{}b", "\n".repeat(200_000));
        let spaced = "a ".repeat(200_000) + "b";
        let lines = fastest(&|| assert_eq!(text_problem(&text_value), None));
        let runs = fastest(&|| {
            assert!(text_problem(&blank_run).is_some());
            assert_eq!(line_problem(&spaced), None);
        });
        assert!(
            runs < lines * 30,
            "{runs:?} for the runs, {lines:?} for the lines"
        );
    }

    /// The fastest of three runs of `run`: what it costs when the machine is not busy elsewhere.
    pub(crate) fn fastest(run: &dyn Fn()) -> std::time::Duration {
        (0..3)
            .map(|_| {
                let started = std::time::Instant::now();
                run();
                started.elapsed()
            })
            .min()
            .unwrap()
    }
}
