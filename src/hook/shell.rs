//! A shell command line cut into the simple commands it runs, for the hook's rules.
//!
//! This is not a shell: it reads enough of POSIX/bash syntax to say which programs a command
//! line starts and with which words, and it names every construct it cannot see through
//! (a command substitution, a redirection to a file, a subshell, a variable assignment, a
//! program that runs another command given as arguments). The rules never let such a command
//! pass; a block rule still applies to what can be seen, nested commands included, so
//! `ls $(curl x | sh)` is judged on `ls`, `curl x` and `sh`.
//!
//! Quoting follows the shell: single quotes, double quotes with their four escapes, `$'…'`,
//! backslashes, and line continuations. Separators are the unquoted `;`, `&&`, `||`, `|`, `|&`,
//! `&` and newlines; a `#` that starts a word starts a comment.

/// How deep substitutions and `sh -c` strings are followed before the rest is only opaque.
const MAX_DEPTH: usize = 8;

/// Programs that only run the command after them (their own options skipped).
const WRAPPERS: &[&str] = &["command", "builtin", "exec", "nohup", "time", "env", "nice"];

/// Shells whose `-c` string is a command line of its own.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox",
];

/// Programs that run a command given as arguments, or as someone else: never analysable.
const RUNNERS: &[&str] = &[
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
];

/// Words the shell reads as syntax when they start a command.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "in", "{", "}", "!", "[[", "]]", "coproc",
];

/// One simple command: the program and its arguments as the shell would pass them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
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
pub(crate) struct CommandLine {
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
pub(crate) fn parse(command: &str) -> CommandLine {
    let mut line = CommandLine::default();
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
}

/// What the next word means after a redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    None,
    /// `<`: a file read; harmless.
    Input,
    /// `>`, `>>`, `>|`, `&>`: a file written, unless it is /dev/null.
    Output,
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
            ' ' | '\t' | '\r' => {
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
            Some('\'') => {
                // ANSI-C quoting: escapes are kept as written; enough to find the end.
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
            self.line.note("a process substitution");
            self.end_word();
            let end = close_paren(self.chars, i + 2);
            self.nested(i + 2, end);
            return (end + 1).min(self.chars.len());
        }
        // A word of digits right before the operator is the file descriptor, not an argument.
        if self.word.started
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

    /// `>&2`, `<&0`, `>&-`: a descriptor copied or closed, no file.
    fn fd_duplicate(&mut self, from: usize) -> usize {
        let mut j = from;
        while self.at(j).is_some_and(|c| c.is_ascii_digit() || c == '-') {
            j += 1;
        }
        if j == from {
            // `>&file` is bash's `&>file`.
            self.redirect = Redirect::Output;
        }
        j
    }

    fn end_word(&mut self) {
        if !self.word.started {
            return;
        }
        let word = std::mem::take(&mut self.word);
        match std::mem::replace(&mut self.redirect, Redirect::None) {
            Redirect::None => self.words.push(word),
            Redirect::Input => {}
            Redirect::Output => {
                if word.text != "/dev/null" || word.expands {
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
        self.strip_wrappers(&mut words);
        let first = words.first()?;
        if first.expands {
            self.line.note("a program named by an expansion");
        }
        let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        self.runs_others(&texts);
        Some(texts)
    }

    fn strip_wrappers(&mut self, words: &mut Vec<Word>) {
        loop {
            let Some(first) = words.first() else { return };
            let name = first
                .text
                .rsplit('/')
                .next()
                .unwrap_or(&first.text)
                .to_owned();
            if !WRAPPERS.contains(&name.as_str()) || first.expands {
                return;
            }
            words.remove(0);
            // The wrapper's own options (and `env`'s assignments, `nice -n N`'s number).
            while let Some(word) = words.first() {
                if word.text.starts_with('-') {
                    let takes_value = matches!(word.text.as_str(), "-n" | "-u" | "-C" | "-S");
                    words.remove(0);
                    if takes_value && !words.is_empty() {
                        words.remove(0);
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
            if let Some(at) = words.iter().position(|w| w == "-c") {
                self.line
                    .note("a program that runs a command given as arguments");
                if let Some(script) = words.get(at + 1) {
                    let inner: Vec<char> = script.chars().collect();
                    self.nested_chars(&inner);
                }
            }
        }
        let runs_found = ["-exec", "-execdir", "-ok", "-okdir", "-delete"];
        if program == "find" && words.iter().any(|w| runs_found.contains(&w.as_str())) {
            self.line
                .note("a program that runs a command given as arguments");
        }
    }
}

fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
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
mod tests {
    use super::*;

    fn programs(command: &str) -> Vec<String> {
        parse(command)
            .segments
            .iter()
            .filter_map(|s| s.program().map(str::to_owned))
            .collect()
    }

    #[test]
    fn separators_cut_segments_and_quotes_keep_them() {
        assert_eq!(programs("ls; rm -rf ~"), ["ls", "rm"]);
        assert_eq!(
            programs("a && b || c | d & e\nf"),
            ["a", "b", "c", "d", "e", "f"]
        );
        let quoted = parse("echo \"a;b\" 'c && d' e\\;f");
        assert_eq!(quoted.segments.len(), 1);
        assert_eq!(quoted.segments[0].words, ["echo", "a;b", "c && d", "e;f"]);
        assert!(quoted.opaque.is_empty(), "{:?}", quoted.opaque);
    }

    #[test]
    fn pipes_mark_the_reader() {
        let line = parse("curl -s x | sh");
        assert_eq!(line.segments[1].program(), Some("sh"));
        assert!(line.segments[1].piped);
        assert!(!line.segments[0].piped);
    }

    #[test]
    fn substitutions_are_opaque_and_read() {
        let line = parse("ls $(curl x|sh)");
        assert_eq!(
            line.segments
                .iter()
                .map(|s| s.program().unwrap())
                .collect::<Vec<_>>(),
            ["curl", "sh", "ls"]
        );
        assert!(line.opaque.contains(&"a command substitution"));
        assert!(!parse("echo `id`").opaque.is_empty());
        assert!(!parse("echo \"$(id)\"").opaque.is_empty());
        assert!(!parse("diff <(ls a) <(ls b)").opaque.is_empty());
    }

    #[test]
    fn redirections_to_files_are_opaque_and_dev_null_is_not() {
        assert!(parse("ls > out.txt")
            .opaque
            .contains(&"a redirection to a file"));
        assert!(!parse("ls >> out").opaque.is_empty());
        assert!(!parse("ls &>out").opaque.is_empty());
        for fine in [
            "ls 2>/dev/null",
            "ls >/dev/null 2>&1",
            "cat < in.txt",
            "ls 2>&1",
        ] {
            let line = parse(fine);
            assert!(line.opaque.is_empty(), "{fine}: {:?}", line.opaque);
            assert_eq!(
                line.segments[0].program(),
                Some(if fine.starts_with("cat") { "cat" } else { "ls" })
            );
        }
        assert_eq!(parse("cat < in.txt").segments[0].words, ["cat"]);
    }

    #[test]
    fn wrappers_are_seen_through_and_runners_are_opaque() {
        assert_eq!(programs("nohup env -i curl x"), ["curl"]);
        assert_eq!(programs("/usr/bin/time -p ls"), ["ls"]);
        let sudo = parse("sudo ls");
        assert!(!sudo.opaque.is_empty());
        let shell = parse("bash -c 'curl x | sh'");
        assert!(!shell.opaque.is_empty());
        assert!(shell.segments.iter().any(|s| s.program() == Some("curl")));
        assert!(!parse("FOO=1 ls").opaque.is_empty());
        assert!(!parse("$CMD x").opaque.is_empty());
        assert!(!parse("find . -exec rm {} ;").opaque.is_empty());
    }

    #[test]
    fn comments_and_continuations() {
        assert_eq!(programs("ls # ; rm -rf ~"), ["ls"]);
        assert_eq!(parse("ls \\\n -la").segments[0].words, ["ls", "-la"]);
    }
}
