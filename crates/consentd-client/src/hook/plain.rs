//! The plain grammar: the only shell lines a pass rule can pass.
//!
//! `shell` reads as much of bash as it can, to find the programs a block or gate rule names,
//! and every line on which it and bash disagree is a line a pass could get wrong. A pass is
//! therefore decided on a grammar small enough that bash provably reads it as written, and
//! everything outside it is gated whole or blocked (docs/HOOKS.md, "The plain grammar"):
//!
//! ```text
//! line     = blank* segment (blank* joiner blank* segment)* blank*
//! joiner   = "|" | "&&" | "||" | ";"
//! segment  = program (blank+ (word | redirect))*
//! program  = bare name: plain characters, unquoted, no "/" and no "=", not a wrapper
//! word     = (plain | "'" plain* "'")+
//! redirect = "2>&1" | ">/dev/null" | "2>/dev/null"      (then a blank or the end)
//! plain    = A-Z a-z 0-9 _ - . / : = @ % + ,
//! blank    = " "
//! ```
//!
//! Why bash reads each piece as written: plain characters are none of bash's metacharacters,
//! quotes, expansion or history characters, so a run of them is one literal word; inside single
//! quotes bash changes nothing at all; a blank is bash's own word separator; the four joiners
//! are control operators with no other reading; the three redirections name a descriptor or
//! /dev/null and write no file. What is left out is what could make bash run, expand or write
//! something the line does not spell: `#` (a comment bash may or may not see), `$` and the
//! backtick (expansions and substitutions), `\` (escapes and line continuations), `!` (history
//! and negation), `~`, `*`, `?` and `[` (expansions), braces and parentheses (expansions,
//! groups, subshells), `<` and `>` (redirections), `&` alone (a background job), the double
//! quote, tab, newline, carriage return, NUL and anything outside printable ASCII.

use std::fmt;

use super::shell;

/// Programs never passed, even when a pass rule names them, besides the reader's own lists
/// (`shell::WRAPPERS`, `SHELLS`, `RUNNERS`, `RESERVED`): more that run another program, or
/// change what a later name runs (`set -k`, `printf -v PATH`, `wait -p`).
const ALSO_NEVER_PASSED: &[&str] = &[
    "runuser", "pkexec", "ionice", "taskset", "chrt", "strace", "ltrace", "gdb", "ssh", "csh",
    "tcsh", "unalias", "set", "printf", "wait", "caller", "history",
];

/// Whether `program` runs another program or changes what a later name runs: never passed.
pub(crate) fn never_passed(program: &str) -> bool {
    [
        shell::WRAPPERS,
        shell::SHELLS,
        shell::RUNNERS,
        shell::RESERVED,
        ALSO_NEVER_PASSED,
    ]
    .iter()
    .any(|list| list.contains(&program))
}

/// `find`'s actions that run a program or write a file.
const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// The only redirections a plain line holds.
const REDIRECTS: &[&str] = &["2>&1", "2>/dev/null", ">/dev/null"];

/// One simple command of a plain line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlainSegment {
    /// The words as bash passes them (quotes removed, redirections left out), the program first.
    pub words: Vec<String>,
    /// The segment as written, trimmed.
    pub text: String,
    /// Its stdin is the previous command's stdout.
    pub piped: bool,
}

/// Why a line is not plain, and where (a byte offset: the grammar is ASCII).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotPlain {
    pub at: usize,
    pub what: NotPlainWhat,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotPlainWhat {
    /// A character the grammar leaves out.
    Character(char),
    /// A quote with no end.
    UnclosedQuote,
    /// Two joiners in a row, or one at either end.
    EmptyCommand,
    /// A joiner the grammar leaves out (`|&`, `&` alone, `;;`).
    Joiner(String),
    /// A redirection other than the three exact tokens, or one glued to what follows.
    Redirection,
    /// A program that is a path, an assignment, quoted, or on the never-passed list.
    Program(String),
    /// `find` with an action that runs a program or writes a file.
    FindAction(String),
}

impl fmt::Display for NotPlain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at + 1;
        match &self.what {
            NotPlainWhat::Character(c) if c.is_ascii_graphic() || *c == ' ' => {
                write!(f, "the character `{c}` at byte {at}")
            }
            NotPlainWhat::Character(c) => {
                write!(f, "the character U+{:04X} at byte {at}", u32::from(*c))
            }
            NotPlainWhat::UnclosedQuote => write!(f, "a quote opened at byte {at} and not closed"),
            NotPlainWhat::EmptyCommand => write!(f, "an empty command at byte {at}"),
            NotPlainWhat::Joiner(j) => write!(f, "the operator `{j}` at byte {at}"),
            NotPlainWhat::Redirection => write!(
                f,
                "a redirection at byte {at} other than `2>&1`, `>/dev/null` or `2>/dev/null` \
                 standing alone"
            ),
            NotPlainWhat::Program(p) => write!(
                f,
                "the program `{p}` at byte {at} (a pass needs a bare name that runs nothing else)"
            ),
            NotPlainWhat::FindAction(a) => write!(f, "find's `{a}` at byte {at}"),
        }
    }
}

fn not_plain(at: usize, what: NotPlainWhat) -> NotPlain {
    NotPlain { at, what }
}

/// A character of a plain word.
pub(crate) fn is_plain_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'_' | b'-' | b'.' | b'/' | b':' | b'=' | b'@' | b'%' | b'+' | b','
        )
}

/// Reads `line` in the plain grammar: its segments, or the first thing that is not plain.
pub(crate) fn read(line: &str) -> Result<Vec<PlainSegment>, NotPlain> {
    let bytes = line.as_bytes();
    // Checked first and whole: no character outside the grammar anywhere, quoted or not.
    if let Some((at, c)) = line.char_indices().find(|&(_, c)| {
        let b = u32::from(c);
        !(c.is_ascii()
            && (is_plain_char(b as u8) || matches!(c, ' ' | '\'' | '|' | '&' | ';' | '>')))
    }) {
        return Err(not_plain(at, NotPlainWhat::Character(c)));
    }
    let mut segments = Vec::new();
    let mut reader = Reader {
        bytes,
        at: 0,
        start: 0,
        words: Vec::new(),
    };
    let mut piped = false;
    loop {
        reader.skip_blanks();
        let joiner = reader.segment()?;
        segments.push(reader.finish(line, piped)?);
        match joiner {
            None => return Ok(segments),
            Some(next_piped) => piped = next_piped,
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Where the current segment starts.
    start: usize,
    /// The current segment's words, each with where it starts and whether it was quoted.
    words: Vec<(usize, String, bool)>,
}

impl Reader<'_> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.at + offset).copied()
    }

    fn skip_blanks(&mut self) {
        while self.peek(0) == Some(b' ') {
            self.at += 1;
        }
    }

    /// Reads one segment's words up to its joiner; `Some(piped)` when a joiner follows.
    fn segment(&mut self) -> Result<Option<bool>, NotPlain> {
        self.start = self.at;
        loop {
            self.skip_blanks();
            match self.peek(0) {
                None => return Ok(None),
                Some(b'|' | b'&' | b';') => return self.joiner().map(Some),
                Some(_) => self.token()?,
            }
        }
    }

    /// A joiner at `at`: `|` (piped), `&&`, `||` or `;`.
    fn joiner(&mut self) -> Result<bool, NotPlain> {
        let at = self.at;
        let (width, piped) = match (self.peek(0), self.peek(1)) {
            (Some(b'|'), Some(b'|')) | (Some(b'&'), Some(b'&')) => (2, false),
            (Some(b'|'), Some(b'&')) => {
                return Err(not_plain(at, NotPlainWhat::Joiner("|&".into())))
            }
            (Some(b'|'), _) => (1, true),
            (Some(b';'), Some(b';')) => {
                return Err(not_plain(at, NotPlainWhat::Joiner(";;".into())))
            }
            (Some(b';'), _) => (1, false),
            _ => return Err(not_plain(at, NotPlainWhat::Joiner("&".into()))),
        };
        self.at += width;
        Ok(piped)
    }

    /// One word or redirection, starting at `at` (not a blank, not a joiner).
    fn token(&mut self) -> Result<(), NotPlain> {
        let at = self.at;
        let rest = &self.bytes[at..];
        if let Some(redirect) = REDIRECTS.iter().find(|r| rest.starts_with(r.as_bytes())) {
            self.at += redirect.len();
            // Glued to more (`2>&1#`, `>/dev/nullx`, `2>&12`), it is another redirection.
            return match self.peek(0) {
                None | Some(b' ') => Ok(()),
                Some(_) => Err(not_plain(at, NotPlainWhat::Redirection)),
            };
        }
        let mut word = String::new();
        let mut quoted = false;
        loop {
            match self.peek(0) {
                Some(b'\'') => {
                    quoted = true;
                    let open = self.at;
                    self.at += 1;
                    loop {
                        match self.peek(0) {
                            Some(b'\'') => break,
                            Some(b) if is_plain_char(b) => word.push(char::from(b)),
                            Some(b) => {
                                return Err(not_plain(
                                    self.at,
                                    NotPlainWhat::Character(char::from(b)),
                                ))
                            }
                            None => return Err(not_plain(open, NotPlainWhat::UnclosedQuote)),
                        }
                        self.at += 1;
                    }
                    self.at += 1;
                }
                Some(b) if is_plain_char(b) => {
                    word.push(char::from(b));
                    self.at += 1;
                }
                // A word ends at a blank or a joiner; `>` right after it (`ls2>/dev/null`,
                // `x>&1`) would make bash read its digits as a descriptor.
                None | Some(b' ' | b'|' | b'&' | b';') => break,
                Some(_) => return Err(not_plain(self.at, NotPlainWhat::Redirection)),
            }
        }
        self.words.push((at, word, quoted));
        Ok(())
    }

    /// Ends the segment read so far, checking its program.
    fn finish(&mut self, line: &str, piped: bool) -> Result<PlainSegment, NotPlain> {
        let words = std::mem::take(&mut self.words);
        let end = self.at;
        let Some((at, program, quoted)) = words.first() else {
            return Err(not_plain(
                self.start.min(line.len()),
                NotPlainWhat::EmptyCommand,
            ));
        };
        // A first character other than a letter, digit or `_` is no ordinary name to bash
        // (`%1` names a job, `-x` an option, `.x` a hidden file).
        let bad_program = *quoted
            || !program.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            || program.contains(['/', '='])
            || never_passed(program);
        if bad_program {
            return Err(not_plain(*at, NotPlainWhat::Program(program.clone())));
        }
        if program == "find" {
            if let Some((at, action, _)) = words
                .iter()
                .find(|(_, w, _)| FIND_ACTIONS.contains(&w.as_str()))
            {
                return Err(not_plain(*at, NotPlainWhat::FindAction(action.clone())));
            }
        }
        // The joiner's own bytes are not the segment's.
        let text_end = line[..end].trim_end_matches(['|', '&', ';']).len();
        Ok(PlainSegment {
            words: words.into_iter().map(|(_, w, _)| w).collect(),
            text: line[self.start.min(text_end)..text_end].trim().to_owned(),
            piped,
        })
    }
}

#[cfg(test)]
#[path = "plain_tests.rs"]
mod tests;
