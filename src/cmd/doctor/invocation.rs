//! A consentd command an agent's settings run: read as the shell reads a hook's command line
//! (the hook's own reader), its program found as the agent would find it, and its arguments
//! judged by consentd's own parser.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A command an agent runs: its words after assignments, with the options `doctor` looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invocation {
    /// The words, the program first.
    pub words: Vec<String>,
}

/// The shell constructs a hook's command line may hold: setting a variable for it
/// (`CONSENTD_SOCKET=… consentd hook …`, as the sandbox prints) changes nothing of its exit.
const HARMLESS: &[&str] = &["a variable assignment"];

impl Invocation {
    /// A hook's command line, as the shell runs it. One simple command only: anything joined
    /// to it (`|| true`, `; echo`) or hidden in it decides the exit status instead of consentd,
    /// and a block would become an allow.
    pub(super) fn from_line(line: &str) -> Result<Invocation, String> {
        let parsed = consentd_client::hook::shell::parse(line);
        if let Some(what) = parsed.opaque.iter().find(|what| !HARMLESS.contains(what)) {
            return Err(format!(
                "its command line holds {what}, so its exit status may not be consentd's: keep \
                 it to `[NAME=VALUE …] /path/to/consentd hook …`"
            ));
        }
        match parsed.segments.as_slice() {
            [one] if !one.words.is_empty() => Ok(Invocation {
                words: one.words.clone(),
            }),
            [] | [_] => Err("its command line is empty".to_owned()),
            _ => Err(format!(
                "its command line runs {} commands (`{line}`): the last one's exit status is the \
                 hook's, so a call consentd blocks could go through; run consentd alone",
                parsed.segments.len()
            )),
        }
    }

    /// An MCP entry's `command` and `args`, which are run with no shell.
    pub(super) fn from_argv(command: &str, args: &[String]) -> Invocation {
        let mut words = vec![command.to_owned()];
        words.extend(args.iter().cloned());
        Invocation { words }
    }

    /// The arguments after the program.
    pub(super) fn args(&self) -> &[String] {
        self.words.get(1..).unwrap_or_default()
    }

    /// The value of `--NAME VALUE` or `--NAME=VALUE`, if given.
    pub(super) fn option(&self, name: &str) -> Option<&str> {
        let flag = format!("--{name}");
        let args = self.args();
        args.iter().enumerate().find_map(|(i, arg)| {
            if *arg == flag {
                args.get(i + 1).map(String::as_str)
            } else {
                arg.strip_prefix(&flag)?.strip_prefix('=')
            }
        })
    }

    /// The program, found as the agent finds it: an existing executable file named `consentd`
    /// (or this very binary under another name). The agent's `PATH` may differ from this one.
    pub(super) fn program(&self) -> Result<PathBuf, String> {
        let word = &self.words[0];
        let path = if word.contains('/') {
            expand_home(word)
        } else {
            on_path(word).ok_or_else(|| {
                format!(
                    "`{word}` is not found on this PATH (the agent's may differ: give the full \
                     path, `command -v consentd` prints it)"
                )
            })?
        };
        let meta = std::fs::metadata(&path)
            .map_err(|error| format!("its program {} cannot be used: {error}", path.display()))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "its program {} is not an executable file",
                path.display()
            ));
        }
        if path.file_name().is_some_and(|name| name == "consentd") || is_this_binary(&path) {
            Ok(path)
        } else {
            Err(format!(
                "it runs {}, not consentd, so nothing of consentd decides its calls",
                path.display()
            ))
        }
    }

    /// How long the invocation waits for the owner (`--max-wait`), read by consentd's own parser
    /// for `hook` or `mcp`, so a value is understood exactly as the agent's consentd will
    /// understand it; why the arguments are refused, in one line.
    pub(super) fn max_wait(&self) -> Result<Duration, String> {
        use clap::{Args as _, Subcommand as _};
        let args = self.args();
        let command = match args.first().map(String::as_str) {
            Some("hook") => consentd_client::hook::HookCommand::augment_subcommands(
                clap::Command::new("hook").subcommand_required(true),
            ),
            Some("mcp") => consentd_client::mcp::McpArgs::augment_args(clap::Command::new("mcp")),
            _ => return Err("it runs neither `consentd hook` nor `consentd mcp`".to_owned()),
        };
        let matches = command.try_get_matches_from(args).map_err(|error| {
            let text = error.to_string();
            let first = text.lines().next().unwrap_or_default().trim();
            format!(
                "consentd refuses its arguments: {}",
                first.trim_start_matches("error: ")
            )
        })?;
        // `hook` reads whole seconds, `mcp` a duration; both have a default.
        let wait = match matches.subcommand() {
            Some((_, hook)) => hook
                .get_one::<u64>("max_wait")
                .map(|secs| Duration::from_secs(*secs)),
            None => matches.get_one::<Duration>("max_wait").copied(),
        };
        wait.ok_or_else(|| "consentd's parser gave no --max-wait".to_owned())
    }
}

/// A path as the shell reads it: `~/x` under `$HOME`.
pub(super) fn expand_home(word: &str) -> PathBuf {
    match (word.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(word),
    }
}

/// `name` in the first `PATH` directory that has it as an executable file.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

fn is_this_binary(path: &Path) -> bool {
    let this = std::env::current_exe().and_then(std::fs::canonicalize);
    matches!((this, std::fs::canonicalize(path)), (Ok(a), Ok(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_line_is_one_command_with_its_options() {
        let hook = Invocation::from_line(
            "CONSENTD_SOCKET=/tmp/s.sock '/opt/consentd' hook claude-code --rules=/r.toml",
        )
        .unwrap();
        assert_eq!(hook.words[0], "/opt/consentd");
        assert_eq!(hook.option("rules"), Some("/r.toml"));
        assert_eq!(hook.option("socket"), None);
        for line in [
            "consentd hook claude-code || true",
            "consentd hook claude-code; exit 0",
            "consentd hook claude-code $(cat x)",
            "",
        ] {
            assert!(Invocation::from_line(line).is_err(), "{line}");
        }
    }

    #[test]
    fn arguments_and_the_wait_are_read_by_consentds_parser() {
        let args = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let wait = |words: &[&str]| Invocation::from_argv("consentd", &args(words)).max_wait();
        let cases: [(&[&str], Option<u64>); 7] = [
            (&["mcp", "--origin", "x"], Some(540)),
            (&["mcp", "--max-wait", "15m"], Some(900)),
            (&["mcp", "--max-wait=90s"], Some(90)),
            (&["hook", "claude-code"], Some(540)),
            (&["hook", "codex", "--max-wait", "700"], Some(700)),
            (&["hook", "claude-code", "--max-wait", "15m"], None),
            (&["hook", "claude-code", "--nope"], None),
        ];
        for (words, expected) in cases {
            let read = wait(words).map(|wait| wait.as_secs());
            assert_eq!(read.as_ref().ok().copied(), expected, "{words:?}: {read:?}");
        }
        let refused = wait(&["hook", "claude-code", "--nope"]).unwrap_err();
        assert!(refused.contains("--nope"), "{refused}");
    }
}
