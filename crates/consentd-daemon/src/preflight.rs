//! A config against this machine: what `serve` needs beyond a well-formed file. `serve` checks it
//! before it starts and refuses on any problem; `check-config` reports the same problems, under
//! the same keys, in the same run as the file's own.
//!
//! What is checked, as whoever runs the check (its uid, its environment):
//! - the bot token: `telegram.token_file` can be read and holds one word, or, without it,
//!   `$CONSENTD_BOT_TOKEN` does;
//! - any category with `run_as`: the process is root, which switching users needs;
//! - each category that is on: `command[0]` is an executable regular file, the `run_as` user
//!   exists, the `env_file` can be read; or, for a built-in action, its `headers_file` or
//!   `credentials_file` is the daemon's, 0600, and reads as a run reads it. For a category that is off these are notes, not
//!   problems: the daemon can start and every other category works, and the owner's On for it
//!   is refused while the problem lasts ([`category_problem`]).
//!
//! Whether a category is on is the owner's switch from the chat where they pressed one, else the
//! config's `enabled`. `serve` passes the switches its store holds; `check-config` reads the
//! file alone and passes none.
//!
//! Run by another user than the daemon's, the answers are that user's: root reads any token file,
//! and a shell's environment is not the service's. `check-config` says whom it checked as.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

use nix::unistd::{AccessFlags, User};

use consentd_core::config::{Category, ConfigProblem, TelegramSection};

mod files;

pub use files::check as check_files;

/// The environment variable that may carry the bot token instead of `telegram.token_file`.
pub(crate) const TOKEN_ENV: &str = "CONSENTD_BOT_TOKEN";

/// What a check of this machine found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    /// What `serve` refuses to start with.
    pub problems: Vec<ConfigProblem>,
    /// What fails only once the owner turns an off category on.
    pub notes: Vec<ConfigProblem>,
}

/// Checks the token and the categories against this machine, as this process's user; a
/// category is on by its switch in `switches` (the owner's, from the chat), else by its
/// `enabled`.
pub fn check(
    telegram: &TelegramSection,
    categories: &BTreeMap<String, Category>,
    switches: &BTreeMap<String, bool>,
) -> Findings {
    let mut findings = Findings::default();
    if let Err(problem) = bot_token(telegram) {
        findings.problems.push(problem);
    }
    let root = is_root();
    for (name, category) in categories {
        let key = |leaf: &str| format!("categories.{name}.{leaf}");
        if category.run_as.is_some() && !root {
            findings.problems.push(ConfigProblem {
                key: key("run_as"),
                message: format!(
                    "switching users needs consentd to run as root, and {} is not root",
                    whoami()
                ),
            });
        }
        let on =
            consentd_core::config::category_enabled(Some(category), switches.get(name).copied());
        for (leaf, message) in category_problems(category) {
            if on {
                findings.problems.push(ConfigProblem {
                    key: key(leaf),
                    message,
                });
            } else {
                findings.notes.push(ConfigProblem {
                    key: key(leaf),
                    message: format!(
                        "{message} (the category is off; it cannot be turned on until this is fixed)"
                    ),
                });
            }
        }
    }
    findings
}

/// The categories that are on, run a command (not a built-in action), and have no `run_as`:
/// their command runs as the daemon's user, so it can read the press key, the token file and the
/// database, and write the journal. `serve` warns about each at start (docs/OPERATOR.md, "Least privilege").
pub(crate) fn unconfined<'a>(
    categories: &'a BTreeMap<String, Category>,
    switches: &'a BTreeMap<String, bool>,
) -> impl Iterator<Item = &'a str> {
    categories
        .iter()
        .filter(|(name, category)| {
            consentd_core::config::category_enabled(Some(category), switches.get(*name).copied())
                && category.mode == consentd_core::config::Mode::Run
                && category.action.is_none()
                && category.run_as.is_none()
        })
        .map(|(name, _)| name.as_str())
}

/// The first reason a category's runs could not start here, if there is one, with the key's
/// last part (`command`, `run_as`, `env_file`): the owner's On is refused over it.
pub(crate) fn category_problem(category: &Category) -> Option<(&'static str, String)> {
    category_problems(category).next()
}

/// Why a category's runs could not start here, each with the key's last part: its command's,
/// or its built-in action's secret files (`crate::actions::problems`). An approval-only
/// category runs nothing here, so nothing of it is checked.
fn category_problems(category: &Category) -> impl Iterator<Item = (&'static str, String)> {
    let runs = category.mode == consentd_core::config::Mode::Run;
    let builtin = if runs {
        crate::actions::problems(category)
    } else {
        Vec::new()
    };
    [
        ("command", command_problem(&category.command)),
        ("run_as", category.run_as.as_deref().and_then(user_problem)),
        (
            "env_file",
            category.env_file.as_deref().and_then(env_file_problem),
        ),
    ]
    .into_iter()
    .filter(move |_| runs)
    .filter_map(|(leaf, problem)| Some((leaf, problem?)))
    .chain(builtin)
}

/// The bot token: the config's `token_file`, else `$CONSENTD_BOT_TOKEN`. Never logged; a problem
/// names the file or the variable, never what it holds.
pub fn bot_token(telegram: &TelegramSection) -> Result<String, ConfigProblem> {
    let problem = |message: String| ConfigProblem {
        key: "telegram.token_file".to_owned(),
        message,
    };
    let (token, source) = match &telegram.token_file {
        // Read as a file an ask names is: never waiting on a FIFO, never reading a device
        // without end.
        Some(path) => match consentd_client::client::read_named_file(path).and_then(|bytes| {
            String::from_utf8(bytes)
                .map_err(|error| std::io::Error::new(ErrorKind::InvalidData, error))
        }) {
            Ok(token) => (token, path.display().to_string()),
            Err(error) => return Err(problem(unreadable(path, &error))),
        },
        None => match std::env::var(TOKEN_ENV) {
            Ok(token) => (token, format!("${TOKEN_ENV}")),
            Err(_) => {
                return Err(problem(format!(
                    "not set, and ${TOKEN_ENV} is not set either: the daemon has no bot token"
                )))
            }
        },
    };
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(problem(format!(
            "the bot token in {source} is empty or has spaces in it"
        )));
    }
    Ok(token.to_owned())
}

/// The config at `file` with what `serve` checks on this machine, as `check-config` and
/// `doctor` read it: the file alone decides which categories are on (the owner's switches live
/// in the daemon's store). Returns the notes beside it. `files` adds the owners and modes of
/// the token file and the state ([`check_files`]); `doctor` reports those on a line of their own.
pub fn load_on_machine(
    file: &Path,
    files: bool,
) -> (
    Result<consentd_core::config::Config, consentd_core::config::ConfigError>,
    Vec<ConfigProblem>,
) {
    let mut notes = Vec::new();
    let loaded = crate::config::load_checked(file, &mut |telegram, categories, paths| {
        let findings = check(telegram, categories, &Default::default());
        notes = findings.notes;
        let mut problems = paths
            .filter(|_| files)
            .map(|p| check_files(telegram, p))
            .unwrap_or_default();
        problems.extend(findings.problems);
        problems
    });
    (loaded, notes)
}

/// Whom the check ran as, for the line `check-config` prints and the messages above.
pub fn whoami() -> String {
    let uid = nix::unistd::geteuid();
    match User::from_uid(uid) {
        Ok(Some(user)) => format!("uid {uid} ({})", user.name),
        _ => format!("uid {uid}"),
    }
}

/// Why `path` cannot be read, in the words of what to fix.
fn unreadable(path: &Path, error: &std::io::Error) -> String {
    let path = path.display();
    match error.kind() {
        ErrorKind::NotFound => format!("{path} does not exist"),
        ErrorKind::PermissionDenied => format!("{path} cannot be read by {}", whoami()),
        _ => format!("cannot read {path}: {error}"),
    }
}

/// Why a category's command cannot be started, if it cannot: `command[0]` must be an executable
/// regular file (the config already made sure it is an absolute path).
fn command_problem(command: &[String]) -> Option<String> {
    let program = Path::new(command.first()?);
    let shown = program.display();
    match std::fs::metadata(program) {
        Err(error) if error.kind() == ErrorKind::NotFound => {
            Some(format!("{shown} does not exist"))
        }
        Err(error) if error.kind() == ErrorKind::PermissionDenied => Some(format!(
            "{shown} cannot be reached by {}: a directory on its path is closed to it",
            whoami()
        )),
        Err(error) => Some(format!("cannot look at {shown}: {error}")),
        Ok(meta) if !meta.is_file() => Some(format!("{shown} is not a regular file")),
        Ok(_) => nix::unistd::access(program, AccessFlags::X_OK)
            .err()
            .map(|_| format!("{shown} is not executable by {}", whoami())),
    }
}

/// Why `run_as` names no user here, if it does not.
fn user_problem(user: &str) -> Option<String> {
    match User::from_name(user) {
        Ok(Some(_)) => None,
        Ok(None) => Some(format!("the user {user:?} does not exist on this machine")),
        Err(error) => Some(format!("cannot look up the user {user:?}: {error}")),
    }
}

/// Why an `env_file` cannot be read, if it cannot. Its lines are read at each run.
/// Opened without blocking (a FIFO would wait for a writer) and judged by the opened file: a
/// run reads it whole, so what is no regular file is a problem.
fn env_file_problem(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .and_then(|file| file.metadata())
        .and_then(|meta| match meta.is_file() {
            true => Ok(()),
            false => Err(std::io::Error::other("not a regular file")),
        });
    opened.err().map(|error| unreadable(path, &error))
}

/// Whether this process runs as root, which `run_as` needs.
fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use consentd_core::config;

    /// The findings for a config of one category with `lines`, its token in a file.
    fn findings(lines: &str) -> Findings {
        findings_switched(lines, None)
    }

    /// [`findings`], with the owner's switch for the category where they set one.
    fn findings_switched(lines: &str, switch: Option<bool>) -> Findings {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "123:abc\n").unwrap();
        let text = format!(
            "[telegram]\ntoken_file = \"{}/token\"\n[paths]\nstate_dir = \"/var/lib/consentd\"\n\
             [categories.post]\nlabel = {{ en = \"Post\" }}\nclass = \"external\"\n{lines}\n",
            dir.path().display(),
        );
        let config = config::parse(&text, "test").unwrap_or_else(|e| panic!("{e}"));
        let switches = switch
            .map(|on| ("post".to_owned(), on))
            .into_iter()
            .collect();
        check(&config.telegram, &config.categories, &switches)
    }

    fn keys(problems: &[ConfigProblem]) -> Vec<&str> {
        problems.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn a_category_that_is_on_must_be_able_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let plain = plain.display().to_string();
        let table = [
            ("command = [\"/bin/true\"]", vec![], ""),
            (
                "command = [\"/nonexistent/publish\"]",
                vec!["categories.post.command"],
                "/nonexistent/publish does not exist",
            ),
            (
                "command = [\"/tmp\"]",
                vec!["categories.post.command"],
                "/tmp is not a regular file",
            ),
            (
                "command = [\"/bin/true\"]\nenv_file = \"/nonexistent/post.env\"",
                vec!["categories.post.env_file"],
                "/nonexistent/post.env does not exist",
            ),
        ];
        for (lines, expected, message) in table {
            let found = findings(&format!("enabled = true\n{lines}"));
            assert_eq!(keys(&found.problems), expected, "{lines}");
            assert!(found.notes.is_empty(), "{lines}");
            if let Some(problem) = found.problems.first() {
                assert_eq!(problem.message, message, "{lines}");
            }
            // Off, the same is a note and no problem.
            let found = findings(&format!("enabled = false\n{lines}"));
            assert!(found.problems.is_empty(), "{lines}: {:?}", found.problems);
            assert_eq!(keys(&found.notes), expected, "{lines}");
        }
        if !is_root() {
            let found = findings(&format!("enabled = true\ncommand = [\"{plain}\"]"));
            assert_eq!(keys(&found.problems), ["categories.post.command"]);
            assert!(found.problems[0]
                .message
                .contains("is not executable by uid"));
        }
    }

    #[test]
    fn the_owners_switch_decides_whether_a_category_is_on() {
        let key = vec!["categories.post.command"];
        // (the config's `enabled`, the owner's switch, whether a missing command is a problem)
        let cases = [
            (false, None, false),
            (true, None, true),
            (false, Some(true), true),
            (true, Some(false), false),
            (true, Some(true), true),
            (false, Some(false), false),
        ];
        for (enabled, switch, problem) in cases {
            let found = findings_switched(
                &format!("enabled = {enabled}\ncommand = [\"/nonexistent/publish\"]"),
                switch,
            );
            let expected = if problem {
                (key.clone(), vec![])
            } else {
                (vec![], key.clone())
            };
            assert_eq!(
                (keys(&found.problems), keys(&found.notes)),
                expected,
                "enabled = {enabled}, switch {switch:?}"
            );
        }
    }

    #[test]
    fn run_as_needs_root_and_a_user_that_exists() {
        let found = findings("enabled = true\ncommand = [\"/bin/true\"]\nrun_as = \"nobody\"");
        let expected: &[&str] = if is_root() {
            &[]
        } else {
            &["categories.post.run_as"]
        };
        assert_eq!(keys(&found.problems), expected);

        let found =
            findings("enabled = true\ncommand = [\"/bin/true\"]\nrun_as = \"no-such-user\"");
        assert!(
            found
                .problems
                .iter()
                .any(|p| p.key == "categories.post.run_as"
                    && p.message == "the user \"no-such-user\" does not exist on this machine"),
            "{:?}",
            found.problems
        );
    }

    #[test]
    fn the_token_comes_from_a_readable_file_with_one_word() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let telegram = |path: &Path| TelegramSection {
            token_file: Some(path.to_owned()),
            ..TelegramSection::default()
        };
        std::fs::write(&path, "123:abc\n").unwrap();
        assert_eq!(bot_token(&telegram(&path)).unwrap(), "123:abc");
        std::fs::write(&path, "123: abc\n").unwrap();
        let problem = bot_token(&telegram(&path)).unwrap_err();
        assert_eq!(problem.key, "telegram.token_file");
        assert!(
            problem.message.contains("has spaces"),
            "{}",
            problem.message
        );
        assert!(!problem.message.contains("abc"), "the token is never said");
        let missing = dir.path().join("missing");
        let problem = bot_token(&telegram(&missing)).unwrap_err();
        assert_eq!(problem.key, "telegram.token_file");
        assert_eq!(
            problem.message,
            format!("{} does not exist", missing.display())
        );
    }
}
