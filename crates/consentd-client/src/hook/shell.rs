//! A shell command line cut into the simple commands it runs, for the hook's rules.
//!
//! This is not a shell: it reads enough of POSIX/bash syntax to say which programs a command
//! line starts and with which words, and it names every construct it cannot see through
//! (a command substitution, a redirection to a file, a subshell, a variable assignment, a
//! program that runs another command given as arguments). The rules never let such a command
//! pass; a block rule still applies to what can be seen, nested commands included, so
//! `ls $(curl x | sh)` is judged on `ls`, `curl x` and `sh`.
//!
//! Quoting follows the shell: single quotes, double quotes with their four escapes,
//! backslashes, and line continuations. Separators are the unquoted `;`, `&&`, `||`, `|`, `|&`,
//! `&` and newlines; a `#` that starts a word starts a comment; only space and tab are blanks.
//!
//! Where bash could read a line otherwise than this reader (a carriage return, `${…}`, `$'…'`,
//! a here-document, a brace expansion, a wrapper option that may take a value, a redirection
//! from a socket, a builtin that defines commands or names a variable), the line is opaque:
//! the check against bash in the tests runs each hostile line with stub programs and asserts
//! that every program bash ran was either seen or the line was opaque.

/// `${…}`: its operators take words with quotes of their own (`"${x:-'"'}"`), which this
/// reader does not follow, so where the word ends is not known.
const BRACED: &str = "a parameter expansion in braces";

/// How deep substitutions and `sh -c` strings are followed before the rest is only opaque.
const MAX_DEPTH: usize = 8;

/// Programs that only run the command after them (their own options skipped).
pub(super) const WRAPPERS: &[&str] =
    &["command", "builtin", "exec", "nohup", "time", "env", "nice"];

/// Shells whose `-c` string is a command line of its own.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox",
];

/// Programs that run a command given as arguments, or as someone else: never analysable.
pub(super) const RUNNERS: &[&str] = &[
    "eval",
    "source",
    ".",
    "xargs",
    "sudo",
    "doas",
    "su",
    "timeout",
    "watch",
    "parallel",
    "nsenter",
    "chroot",
    "setsid",
    "flock",
    "script",
    "ssh-agent",
    "unshare",
    "stdbuf",
    // Builtins that run a string later, or change what a later command name runs.
    "trap",
    "alias",
    "hash",
    "enable",
    "shopt",
    "fc",
    "complete",
    "bind",
    "compgen",
    "jobs",
    // Builtins that take a variable name: `a[$(cmd)]` in it runs `cmd`, and `PATH` is one.
    "let",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "getopts",
];

/// Words the shell reads as syntax when they start a command.
pub(super) const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "in", "{", "}", "!", "[[", "]]", "coproc",
];

/// One simple command: the program and its arguments as the shell would pass them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The words after quote removal, the program first (wrappers such as `nohup` removed).
    pub words: Vec<String>,
    /// The segment as written, trimmed.
    pub text: String,
    /// Its stdin is the previous command's stdout (`a | b`: true for `b`).
    pub piped: bool,
}

impl Segment {
    /// The program's name (the last path component of the first word), if any.
    pub(crate) fn program(&self) -> Option<&str> {
        let first = self.words.first()?;
        Some(first.rsplit('/').next().unwrap_or(first))
    }

    /// The first word as written (a path, when the command names one).
    pub(crate) fn program_word(&self) -> Option<&str> {
        self.words.first().map(String::as_str)
    }

    /// The arguments after the program, joined by single spaces.
    pub(crate) fn args(&self) -> String {
        self.words.get(1..).unwrap_or_default().join(" ")
    }
}

/// A command line cut into segments, with what could not be analysed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    pub segments: Vec<Segment>,
    /// Each construct the reader could not see through, named for a message (deduplicated).
    pub opaque: Vec<&'static str>,
}

impl CommandLine {
    fn note(&mut self, what: &'static str) {
        if !self.opaque.contains(&what) {
            self.opaque.push(what);
        }
    }
}

/// Reads `command` into its segments.
pub fn parse(command: &str) -> CommandLine {
    let mut line = CommandLine::default();
    // Bash does not take a carriage return for a blank, and a NUL cuts its string short: a
    // reader that saw either differently would see other commands than bash runs.
    if command.contains('\r') {
        line.note("a carriage return");
    }
    if command.contains('\0') {
        line.note("a NUL character");
    }
    let chars: Vec<char> = command.chars().collect();
    Lexer::new(&chars, 0, &mut line).run();
    line
}

/// One word being read: its text and what in it was unquoted.
#[derive(Debug, Default)]
struct Word {
    text: String,
    started: bool,
    /// An unquoted or double-quoted `$` expansion, or an unquoted glob character.
    expands: bool,
    quoted: bool,
    /// The characters read outside quotes and escapes, for brace expansion.
    raw: String,
}

/// What the next word means after a redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    None,
    /// `<`: a file read; harmless.
    Input,
    /// `>`, `>>`, `>|`, `&>`: a file written, unless it is /dev/null.
    Output,
    /// `>&`, `<&`: a descriptor copied (`2`) or closed (`-`) when the word is one; anything
    /// else is a file name to bash (`>&2#x` writes `2#x`).
    Duplicate,
}

struct Lexer<'a> {
    chars: &'a [char],
    depth: usize,
    line: &'a mut CommandLine,
    words: Vec<Word>,
    word: Word,
    redirect: Redirect,
    start: usize,
    piped: bool,
}

impl<'a> Lexer<'a> {
    fn new(chars: &'a [char], depth: usize, line: &'a mut CommandLine) -> Self {
        Self {
            chars,
            depth,
            line,
            words: Vec::new(),
            word: Word::default(),
            redirect: Redirect::None,
            start: 0,
            piped: false,
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).copied()
    }

    fn run(mut self) {
        let mut i = 0;
        while i < self.chars.len() {
            i = self.step(i);
        }
        self.end_segment(self.chars.len(), false);
    }

    /// Reads from `i` and returns where to go on.
    fn step(&mut self, i: usize) -> usize {
        let c = self.chars[i];
        let next = self.at(i + 1);
        match c {
            ' ' | '\t' => {
                self.end_word();
                i + 1
            }
            '\\' => match next {
                Some('\n') => i + 2,
                Some(escaped) => {
                    self.push_quoted(escaped);
                    i + 2
                }
                None => {
                    self.push(c);
                    i + 1
                }
            },
            '\'' => self.single_quote(i + 1),
            '"' => self.double_quote(i + 1),
            '$' => self.dollar(i),
            '`' => self.backtick(i + 1),
            '#' if !self.word.started => self.comment(i),
            '\n' | ';' => {
                if c == ';' && next == Some(';') {
                    self.line.note("a case statement");
                }
                self.end_segment(i, false);
                self.start = i + 1;
                i + 1
            }
            '&' | '|' => self.operator(i, c, next),
            '(' | ')' => {
                self.line.note("a subshell or grouping");
                self.end_segment(i, false);
                self.start = i + 1;
                i + 1
            }
            '<' | '>' => self.redirection(i, c, next),
            _ => {
                if matches!(c, '*' | '?' | '[') {
                    self.word.expands = true;
                }
                self.word.raw.push(c);
                self.push(c);
                i + 1
            }
        }
    }

    fn push(&mut self, c: char) {
        self.word.text.push(c);
        self.word.started = true;
    }

    fn push_quoted(&mut self, c: char) {
        self.push(c);
        self.word.quoted = true;
    }

    fn single_quote(&mut self, from: usize) -> usize {
        self.word.started = true;
        self.word.quoted = true;
        let mut i = from;
        while let Some(c) = self.at(i) {
            if c == '\'' {
                return i + 1;
            }
            self.word.text.push(c);
            i += 1;
        }
        self.line.note("an unclosed quote");
        i
    }

    fn double_quote(&mut self, from: usize) -> usize {
        self.word.started = true;
        self.word.quoted = true;
        let mut i = from;
        while let Some(c) = self.at(i) {
            match c {
                '"' => return i + 1,
                '\\' => match self.at(i + 1) {
                    Some('\n') => i += 2,
                    Some(e @ ('$' | '`' | '"' | '\\')) => {
                        self.word.text.push(e);
                        i += 2;
                    }
                    _ => {
                        self.word.text.push('\\');
                        i += 1;
                    }
                },
                '$' if self.at(i + 1) == Some('(') => i = self.substitution(i + 2),
                '$' if self.at(i + 1) == Some('{') => {
                    self.line.note(BRACED);
                    self.word.expands = true;
                    self.word.text.push('$');
                    i += 1;
                }
                '$' => {
                    self.word.expands = true;
                    self.word.text.push('$');
                    i += 1;
                }
                '`' => i = self.backtick(i + 1),
                _ => {
                    self.word.text.push(c);
                    i += 1;
                }
            }
        }
        self.line.note("an unclosed quote");
        i
    }

    fn dollar(&mut self, i: usize) -> usize {
        match self.at(i + 1) {
            Some('(') => self.substitution(i + 2),
            Some('{') => {
                self.line.note(BRACED);
                self.word.expands = true;
                self.push('$');
                i + 1
            }
            Some('\'') => {
                // ANSI-C quoting: its escapes can spell any word (`$'\x72m'` is `rm`), so the
                // words it makes are not what the reader sees; it only finds the end.
                self.line.note("ANSI-C quoting ($'...')");
                self.word.started = true;
                self.word.quoted = true;
                let mut j = i + 2;
                while let Some(c) = self.at(j) {
                    match c {
                        '\'' => return j + 1,
                        '\\' => {
                            self.word.text.push(c);
                            if let Some(e) = self.at(j + 1) {
                                self.word.text.push(e);
                            }
                            j += 2;
                        }
                        _ => {
                            self.word.text.push(c);
                            j += 1;
                        }
                    }
                }
                self.line.note("an unclosed quote");
                j
            }
            _ => {
                self.word.expands = true;
                self.push('$');
                i + 1
            }
        }
    }

    /// `$(…)` (and `$((…))`) from just after the opening parenthesis: its commands are read as
    /// segments of their own; the word it stands in is opaque.
    fn substitution(&mut self, from: usize) -> usize {
        self.line.note("a command substitution");
        self.word.started = true;
        self.word.expands = true;
        let end = close_paren(self.chars, from);
        // The word keeps the substitution as written, so a rule's regex sees it, not nothing.
        let upto = (end + 1).min(self.chars.len());
        self.word.text.push('$');
        self.word.text.extend(&self.chars[from - 1..upto]);
        self.nested(from, end);
        upto
    }

    fn backtick(&mut self, from: usize) -> usize {
        self.line.note("a command substitution");
        self.word.started = true;
        self.word.expands = true;
        let mut end = from;
        let mut inner = Vec::new();
        while let Some(c) = self.at(end) {
            match c {
                '`' => break,
                '\\' if self.at(end + 1).is_some() => {
                    inner.push(self.chars[end + 1]);
                    end += 2;
                }
                _ => {
                    inner.push(c);
                    end += 1;
                }
            }
        }
        if end >= self.chars.len() {
            self.line.note("an unclosed quote");
        }
        self.word.text.push('`');
        self.word.text.extend(&inner);
        self.word.text.push('`');
        self.nested_chars(&inner);
        (end + 1).min(self.chars.len())
    }

    fn nested(&mut self, from: usize, to: usize) {
        let inner: Vec<char> = self.chars[from..to.min(self.chars.len())].to_vec();
        self.nested_chars(&inner);
    }

    fn nested_chars(&mut self, inner: &[char]) {
        if self.depth >= MAX_DEPTH {
            self.line.note("nesting too deep to read");
            return;
        }
        Lexer::new(inner, self.depth + 1, self.line).run();
    }

    fn comment(&mut self, i: usize) -> usize {
        let mut j = i;
        while self.at(j).is_some_and(|c| c != '\n') {
            j += 1;
        }
        j
    }

    fn operator(&mut self, i: usize, c: char, next: Option<char>) -> usize {
        if c == '&' && next == Some('>') {
            // `&>file`: stdout and stderr to a file.
            self.end_word();
            self.redirect = Redirect::Output;
            return if self.at(i + 2) == Some('>') {
                i + 3
            } else {
                i + 2
            };
        }
        let (width, piped) = match (c, next) {
            ('&', Some('&')) | ('|', Some('|')) => (2, false),
            ('|', Some('&')) => (2, true),
            ('|', _) => (1, true),
            _ => (1, false),
        };
        self.end_segment(i, piped);
        self.start = i + width;
        i + width
    }

    fn redirection(&mut self, i: usize, c: char, next: Option<char>) -> usize {
        if next == Some('(') {
            // Bash reads `<(…)` as part of a word (`<(true)#x` is one word, `/dev/fd/63#x`), so
            // what follows it is not the start of a word: a `#` there is no comment.
            self.line.note("a process substitution");
            let end = close_paren(self.chars, i + 2);
            let upto = (end + 1).min(self.chars.len());
            self.word.started = true;
            self.word.expands = true;
            self.word.text.extend(&self.chars[i..upto]);
            self.nested(i + 2, end);
            return upto;
        }
        // A word of digits right before the operator is the file descriptor, not an argument;
        // `{NAME}` there is bash's descriptor variable, an assignment (`{PATH}>x` sets PATH).
        let variable = (self.word.text.strip_prefix('{'))
            .and_then(|w| w.strip_suffix('}'))
            .is_some_and(|name| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
        if variable && !self.word.quoted {
            self.line.note("a variable assignment");
            self.word = Word::default();
        } else if self.word.started
            && !self.word.quoted
            && self.word.text.bytes().all(|b| b.is_ascii_digit())
        {
            self.word = Word::default();
        } else {
            self.end_word();
        }
        if c == '<' {
            if next == Some('<') {
                self.line.note("a here-document");
                return if self.at(i + 2) == Some('<') {
                    i + 3
                } else {
                    i + 2
                };
            }
            if next == Some('&') {
                return self.fd_duplicate(i + 2);
            }
            self.redirect = Redirect::Input;
            return i + 1;
        }
        match next {
            Some('&') => self.fd_duplicate(i + 2),
            Some('>' | '|') => {
                self.redirect = Redirect::Output;
                i + 2
            }
            _ => {
                self.redirect = Redirect::Output;
                i + 1
            }
        }
    }

    /// `>&2`, `<&0`, `>&-`: the word after the operator is read as any word is, and judged
    /// whole when it ends (`Redirect::Duplicate`): bash takes the word, not its leading digits.
    fn fd_duplicate(&mut self, from: usize) -> usize {
        self.redirect = Redirect::Duplicate;
        from
    }

    fn end_word(&mut self) {
        if !self.word.started {
            return;
        }
        let word = std::mem::take(&mut self.word);
        // `{rm,-rf,~}` is three words to bash, `rm` the program; `{}` and `@{u}` are one.
        let raw = &word.raw;
        if raw.contains('{') && raw.contains('}') && (raw.contains(',') || raw.contains("..")) {
            self.line.note("a brace expansion");
        }
        match std::mem::replace(&mut self.redirect, Redirect::None) {
            Redirect::None => self.words.push(word),
            Redirect::Input => {
                // Bash opens `/dev/tcp/host/port` as a connection; an expansion hides the name.
                let text = &word.text;
                let socket = text.contains("/tcp/") || text.contains("/udp/");
                if socket || word.expands || text.contains(['$', '`']) {
                    self.line
                        .note("a redirection from a socket or an expansion");
                }
            }
            Redirect::Output => {
                if word.text != "/dev/null" || word.expands {
                    self.line.note("a redirection to a file");
                }
            }
            Redirect::Duplicate => {
                let digits = word.text.strip_suffix('-').unwrap_or(&word.text);
                let descriptor = word.text == "-"
                    || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
                if !descriptor || word.quoted || word.expands {
                    self.line.note("a redirection to a file");
                }
            }
        }
    }

    fn end_segment(&mut self, end: usize, next_piped: bool) {
        self.end_word();
        if self.redirect != Redirect::None {
            self.line.note("a redirection without a file");
            self.redirect = Redirect::None;
        }
        let words = std::mem::take(&mut self.words);
        let text: String = self.chars[self.start.min(end)..end].iter().collect();
        let piped = std::mem::replace(&mut self.piped, next_piped);
        if let Some(words) = self.command_words(words) {
            self.line.segments.push(Segment {
                words,
                text: text.trim().to_owned(),
                piped,
            });
        }
    }

    /// The words of the command a segment runs, after assignments, syntax words and wrappers;
    /// notes what makes it opaque. `None` when it runs nothing.
    fn command_words(&mut self, words: Vec<Word>) -> Option<Vec<String>> {
        let mut words = words.into_iter().peekable();
        while words.peek().is_some_and(is_assignment) {
            self.line.note("a variable assignment");
            words.next();
        }
        let mut words: Vec<Word> = words.collect();
        while let Some(first) = words.first() {
            if first.quoted || !RESERVED.contains(&first.text.as_str()) {
                break;
            }
            self.line
                .note("shell syntax (if, for, while, case, braces)");
            words.remove(0);
        }
        words.first()?;
        let written: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        if !self.strip_wrappers(&mut words) || words.is_empty() {
            // A wrapper whose options are not known to take no value may hide the command it
            // runs (`env -S "rm -rf ~"`): the segment keeps its words as written, unreadable.
            self.line.note("a wrapper whose command is not seen");
            self.runs_others(&written);
            return Some(written);
        }
        let first = words.first()?;
        if first.expands {
            self.line.note("a program named by an expansion");
        }
        let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        self.runs_others(&texts);
        Some(texts)
    }

    /// Removes wrappers such as `nohup` and their options; `false` when an option is not known
    /// to take no value (or to take a plain number), so the command after it is not known.
    fn strip_wrappers(&mut self, words: &mut Vec<Word>) -> bool {
        loop {
            let Some(first) = words.first() else {
                return true;
            };
            let name = first
                .text
                .rsplit('/')
                .next()
                .unwrap_or(&first.text)
                .to_owned();
            if !WRAPPERS.contains(&name.as_str()) || first.expands {
                return true;
            }
            if first.text.contains('/') {
                // `./nohup` may be any program: what follows is read as a command only so that
                // block rules still see it.
                self.line.note("a wrapper named by a path");
            }
            words.remove(0);
            while let Some(word) = words.first() {
                if word.text == "--" {
                    words.remove(0);
                    break;
                } else if word.text.starts_with('-') {
                    let number = words.get(1).is_some_and(|w| is_number(&w.text));
                    match wrapper_option(&name, &word.text, number) {
                        Some(width) => {
                            words.drain(..width.min(words.len()));
                        }
                        None => return false,
                    }
                } else if name == "env" && is_assignment(word) {
                    self.line.note("a variable assignment");
                    words.remove(0);
                } else {
                    break;
                }
            }
        }
    }

    /// Programs that run another command: shells with `-c` (whose string is read too), `eval`,
    /// `sudo`, `xargs`, `find -exec` and the like.
    fn runs_others(&mut self, words: &[String]) {
        let program = words[0].rsplit('/').next().unwrap_or(&words[0]);
        if RUNNERS.contains(&program) {
            self.line
                .note("a program that runs a command given as arguments");
            if matches!(program, "eval") {
                let inner: Vec<char> = words[1..].join(" ").chars().collect();
                self.nested_chars(&inner);
            }
        }
        if SHELLS.contains(&program) {
            // A shell runs a file, its stdin or a `-c` string (`-c`, `-lc`, `-xc`): never
            // a command the reader can vouch for; a `-c` string is read for the block rules.
            self.line
                .note("a program that runs a command given as arguments");
            let short_c = |w: &String| {
                w.strip_prefix('-')
                    .is_some_and(|f| f.contains('c') && f.bytes().all(|b| b.is_ascii_alphabetic()))
            };
            if let Some(at) = words.iter().position(short_c) {
                if let Some(script) = words.get(at + 1) {
                    let inner: Vec<char> = script.chars().collect();
                    self.nested_chars(&inner);
                }
            }
        }
        let runs_found = [
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ];
        if program == "find" && words.iter().any(|w| runs_found.contains(&w.as_str())) {
            self.line
                .note("a program that runs a command given as arguments");
        }
        // Builtins that name a variable in an option: `printf -v 'a[$(cmd)]'` runs `cmd`.
        let names_variable = match program {
            "printf" => words.iter().any(|w| w.starts_with("-v")),
            "test" | "[" => words.iter().any(|w| w == "-v" || w == "-R"),
            "wait" => words.iter().any(|w| w.starts_with('-') && w.contains('p')),
            _ => false,
        };
        if names_variable {
            self.line.note("a builtin that names a variable");
        }
    }
}

/// How many words a wrapper's option takes with it (itself included), when it is known to take
/// no value or only a number; `None` otherwise (`exec -a NAME`, `time -o FILE`, `env -S STRING`).
fn wrapper_option(wrapper: &str, option: &str, number_next: bool) -> Option<usize> {
    let known: &[&str] = match wrapper {
        "command" => &["-p", "-v", "-V"],
        "exec" => &["-c", "-l", "-cl", "-lc"],
        "time" => &["-p", "-v", "-q", "--portability", "--verbose", "--quiet"],
        "env" => &[
            "-",
            "-i",
            "-0",
            "-v",
            "--ignore-environment",
            "--null",
            "--debug",
        ],
        "nice" => {
            if option == "-n" && number_next {
                return Some(2);
            }
            let bare = option
                .strip_prefix("--adjustment=")
                .or(option.strip_prefix('-'));
            return bare.filter(|n| is_number(n)).map(|_| 1);
        }
        _ => &[],
    };
    known.contains(&option).then_some(1)
}

fn is_number(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `NAME=`, `NAME+=`, `NAME[…]=` and `NAME[…]+=` before a command are assignments to bash.
fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let name = match name.split_once('[') {
        Some((base, rest)) if rest.ends_with(']') => base,
        _ => name,
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The index of the `)` closing a `(` just before `from`, skipping quotes and nested pairs;
/// the end of the input when it is not closed.
fn close_paren(chars: &[char], from: usize) -> usize {
    let mut depth = 1usize;
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
