//! Who owns the files the daemon trusts, and who else may change them: checked before the store
//! opens anything, so a planted or loosened file is refused rather than used.
//!
//! The rules, each judged against the effective uid of the process that checks:
//! - `telegram.token_file`: owned by that uid or by root, and no bit for group or other (the token
//!   is a password to the bot: readable by another user, it is theirs). Root is accepted as the
//!   owner because root can replace any file whoever owns it: a root-owned 0600 file gives nobody
//!   a power they did not have (it can only be read by a daemon that runs as root, or through
//!   systemd's `LoadCredential=`).
//! - the state directory, the journal, and every entry directly inside the state directory (the
//!   database and its `-wal`/`-shm`, `press.key`, `attachments/`, `runs/`, `lock`, …): not a
//!   symlink, FIFO or device, owned by that uid or by root, not writable by group or other. `press.key` and
//!   `journal-seal.key` may have no bit for group or other at all. A missing file is no
//!   problem: the daemon makes it.
//!
//! Only the entries directly inside the state directory are looked at; what the daemon makes
//! below them (attachments, run directories) is opened without following symlinks.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use consentd_core::config::{ConfigProblem, Paths, TelegramSection};

/// What one file may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A secret: no bit at all for group or other.
    Secret,
    /// Others may read it (the journal is 0640), but only its owner may change it.
    Kept,
}

/// The problems with the owners and modes of the token file, the state directory, what is in
/// it, and the journal.
pub fn check(telegram: &TelegramSection, paths: &Paths) -> Vec<ConfigProblem> {
    let euid = nix::unistd::geteuid().as_raw();
    let mut problems = Vec::new();
    let mut push = |key: &str, message: Option<String>| {
        if let Some(message) = message {
            problems.push(ConfigProblem {
                key: key.to_owned(),
                message,
            });
        }
    };
    if let Some(token) = &telegram.token_file {
        // The token file may be a link (a credentials directory); what it names is judged.
        // What is no file at all cannot be read, which the token's own check says.
        let found = std::fs::metadata(token).and_then(|meta| match meta.is_file() {
            true => Ok(meta),
            false => Err(ErrorKind::NotFound.into()),
        });
        push(
            "telegram.token_file",
            judge(token, found, Rule::Secret, euid, true),
        );
    }
    let state_dir = &paths.state_dir;
    let found = std::fs::symlink_metadata(state_dir);
    let dir_is_fine = matches!(&found, Ok(meta) if meta.is_dir());
    push(
        "paths.state_dir",
        judge(state_dir, found, Rule::Kept, euid, false),
    );
    if dir_is_fine {
        for problem in inside_state_dir(state_dir, euid) {
            push("paths.state_dir", Some(problem));
        }
    }
    // Inside the state directory the journal was judged with the rest.
    if paths.journal.parent() != Some(state_dir.as_path()) {
        let found = std::fs::symlink_metadata(&paths.journal);
        push(
            "paths.journal",
            judge(&paths.journal, found, Rule::Kept, euid, false),
        );
    }
    problems
}

/// The problems of each entry directly inside the state directory.
fn inside_state_dir(state_dir: &Path, euid: u32) -> Vec<String> {
    let entries = match std::fs::read_dir(state_dir) {
        Ok(entries) => entries,
        Err(error) => return vec![format!("cannot list {}: {error}", state_dir.display())],
    };
    let mut problems = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                problems.push(format!("cannot list {}: {error}", state_dir.display()));
                continue;
            }
        };
        let path = entry.path();
        // The press key and the journal's seal key: either read by another user forges what
        // they protect (a press, the current epoch's lines).
        let name = entry.file_name();
        let rule = if name == "press.key" || name == consentd_store::journal::SEAL_KEY_FILE {
            Rule::Secret
        } else {
            Rule::Kept
        };
        let found = std::fs::symlink_metadata(&path);
        problems.extend(judge(&path, found, rule, euid, false));
    }
    problems.sort();
    problems
}

/// What is wrong with `path` (its metadata `found`) under `rule`, if anything; a missing file is
/// fine. `linked` says whether a symlink was followed to get `found`.
fn judge(
    path: &Path,
    found: std::io::Result<std::fs::Metadata>,
    rule: Rule,
    euid: u32,
    linked: bool,
) -> Option<String> {
    let shown = path.display();
    let meta = match found {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return None,
        // The token file's own check says why it cannot be read.
        Err(_) if linked => return None,
        Err(error) => return Some(format!("cannot look at {shown}: {error}")),
    };
    if meta.file_type().is_symlink() {
        return Some(format!(
            "{shown} is a symlink: the daemon follows no symlink for its state, replace it with \
             the file or directory itself"
        ));
    }
    let kind = meta.file_type();
    if kind.is_fifo() || kind.is_char_device() || kind.is_block_device() {
        // A FIFO blocks the daemon's first read until someone writes to it; a device never
        // ends or is someone else's disk. (A socket fails to open at once: a stale one is the
        // daemon's own, and is no danger.)
        return Some(format!(
            "{shown} is a FIFO or a device, not a regular file: the daemon would wait on it or \
             read it without end (remove it; the daemon makes its files)"
        ));
    }
    let owner = meta.uid();
    if owner != euid && owner != 0 {
        return Some(format!(
            "{shown} is owned by uid {owner}, not by uid {euid} that the daemon runs as: that \
             user could change it (chown it to uid {euid})"
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    match rule {
        Rule::Secret if mode & 0o077 != 0 => Some(format!(
            "{shown} has mode {mode:04o}: group or other may read or change it, and it holds a \
             secret (chmod 600 it)"
        )),
        Rule::Kept if mode & 0o022 != 0 => Some(format!(
            "{shown} has mode {mode:04o}: group or other may write to it (chmod go-w it)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(dir: &Path) -> Paths {
        Paths {
            state_dir: dir.join("state"),
            journal: dir.join("state/decisions.jsonl"),
            socket: dir.join("consent.sock"),
        }
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn missing_files_are_made_later_and_are_no_problem() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check(&TelegramSection::default(), &paths(dir.path())).is_empty());
    }

    /// Each unsafe mode or symlink, made on a fresh tree, is one problem naming the file.
    #[test]
    fn each_unsafe_mode_or_symlink_is_named() {
        // (what to do to a fresh tree, the key, the file the message names, a word of it)
        type Spoil = fn(&Path);
        let cases: [(&str, Spoil, &str, &str, &str); 8] = [
            (
                "token 0644",
                |d| chmod(&d.join("token"), 0o644),
                "telegram.token_file",
                "token",
                "mode 0644",
            ),
            (
                "token 0640",
                |d| chmod(&d.join("token"), 0o640),
                "telegram.token_file",
                "token",
                "mode 0640",
            ),
            (
                "state dir 0777",
                |d| chmod(&d.join("state"), 0o777),
                "paths.state_dir",
                "state",
                "may write",
            ),
            (
                "journal 0666",
                |d| chmod(&d.join("state/decisions.jsonl"), 0o666),
                "paths.state_dir",
                "decisions.jsonl",
                "mode 0666",
            ),
            (
                "key 0640",
                |d| chmod(&d.join("state/press.key"), 0o640),
                "paths.state_dir",
                "press.key",
                "secret",
            ),
            (
                "seal key 0644",
                |d| {
                    let key = d.join("state/journal-seal.key");
                    std::fs::write(&key, "").unwrap();
                    chmod(&key, 0o644);
                },
                "paths.state_dir",
                "journal-seal.key",
                "secret",
            ),
            (
                "db 0620",
                |d| chmod(&d.join("state/consentd.db"), 0o620),
                "paths.state_dir",
                "consentd.db",
                "may write",
            ),
            (
                "attachments a symlink",
                |d| {
                    std::fs::remove_dir(d.join("state/attachments")).unwrap();
                    std::os::unix::fs::symlink(d.join("elsewhere"), d.join("state/attachments"))
                        .unwrap();
                },
                "paths.state_dir",
                "attachments",
                "symlink",
            ),
        ];
        for (name, spoil, key, file, word) in cases {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            std::fs::write(d.join("token"), "1:a").unwrap();
            chmod(&d.join("token"), 0o600);
            std::fs::create_dir(d.join("state")).unwrap();
            chmod(&d.join("state"), 0o700);
            std::fs::create_dir(d.join("elsewhere")).unwrap();
            std::fs::create_dir(d.join("state/attachments")).unwrap();
            for f in ["decisions.jsonl", "press.key", "consentd.db"] {
                std::fs::write(d.join("state").join(f), "").unwrap();
                chmod(&d.join("state").join(f), 0o600);
            }
            let telegram = TelegramSection {
                token_file: Some(d.join("token")),
                ..TelegramSection::default()
            };
            assert!(check(&telegram, &paths(d)).is_empty(), "{name}: fresh");
            spoil(d);
            let problems = check(&telegram, &paths(d));
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            assert_eq!(problems[0].key, key, "{name}");
            assert!(
                problems[0].message.contains(file),
                "{name}: {}",
                problems[0].message
            );
            assert!(
                problems[0].message.contains(word),
                "{name}: {}",
                problems[0].message
            );
        }
    }
}
