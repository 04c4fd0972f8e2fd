//! The secret files of built-in actions: an `http` action's `headers_file` (`Name: value` lines)
//! and an `email` action's `credentials_file` (one `user:password` line).
//!
//! Both are read the same way at each run and by the preflight (`serve`, `check-config`,
//! `doctor`), so what the checks accept is what a run uses: a regular file (opened without
//! waiting on a FIFO), owned by the daemon's uid or by root, with no bit for group or other (as
//! `telegram.token_file`), at most 64 KiB of UTF-8. A message about one names the file and a line
//! number, never what the line holds.

use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// A file of secrets is a few lines; anything larger is a mistake.
const SECRET_FILE_MAX: u64 = 64 * 1024;

/// Headers consentd sets itself, or that describe the body or the connection: a headers file
/// may not set them, so the body and its key are always the ones documented.
const OWN_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "host",
    "connection",
    "idempotency-key",
];

/// Why a secret file cannot be used. The words never hold the file's contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SecretError {
    #[error("{path} cannot be read: {detail}")]
    Unreadable { path: String, detail: String },
    #[error("{path} {detail}")]
    Unsafe { path: String, detail: String },
    #[error("{path}:{line}: {detail}")]
    Line {
        path: String,
        line: usize,
        detail: String,
    },
}

/// The file's text, once its owner, mode and kind are as a secret's must be.
pub(crate) fn read(path: &Path) -> Result<String, SecretError> {
    let shown = path.display().to_string();
    let unreadable = |detail: String| SecretError::Unreadable {
        path: shown.clone(),
        detail,
    };
    let unsafe_ = |detail: String| SecretError::Unsafe {
        path: shown.clone(),
        detail,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| unreadable(error.to_string()))?;
    let meta = file
        .metadata()
        .map_err(|error| unreadable(error.to_string()))?;
    if !meta.is_file() {
        return Err(unsafe_("is not a regular file".to_owned()));
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != euid && meta.uid() != 0 {
        return Err(unsafe_(format!(
            "is owned by uid {}, not by uid {euid} that the daemon runs as: that user could \
             change it (chown it to uid {euid})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_(format!(
            "has mode {mode:04o}: group or other may read or change it, and it holds a secret \
             (chmod 600 it)"
        )));
    }
    if meta.len() > SECRET_FILE_MAX {
        return Err(unsafe_(format!("is larger than {SECRET_FILE_MAX} bytes")));
    }
    let mut bytes = Vec::new();
    file.by_ref()
        .take(SECRET_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(error.to_string()))?;
    String::from_utf8(bytes).map_err(|_| unsafe_("is not UTF-8 text".to_owned()))
}

/// The lines that say something: blank lines and `#` comments are skipped; `\r` at an end is
/// dropped. Each with its 1-based number.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix('\r').unwrap_or(line)))
        .filter(|(_, line)| {
            let line = line.trim_start();
            !line.is_empty() && !line.starts_with('#')
        })
}

/// A headers file's `Name: value` lines, in order. A name is an HTTP token; a value is trimmed
/// and may hold no control character.
pub(crate) fn headers(path: &Path, text: &str) -> Result<Vec<(String, String)>, SecretError> {
    let bad = |line: usize, detail: String| SecretError::Line {
        path: path.display().to_string(),
        line,
        detail,
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for (n, line) in lines(text) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(n, "expected a `Name: value` line".to_owned()));
        };
        let is_token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(is_token) {
            return Err(bad(n, "the header's name is not an HTTP token".to_owned()));
        }
        let lower = name.to_ascii_lowercase();
        if OWN_HEADERS.contains(&lower.as_str()) {
            return Err(bad(
                n,
                format!("{name} is set by consentd itself (the body is the documented JSON)"),
            ));
        }
        let value = value.trim_matches([' ', '\t']);
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(bad(n, "the value holds a control character".to_owned()));
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// A credentials file's one `user:password` line (the password may hold `:`).
pub(crate) fn credentials(path: &Path, text: &str) -> Result<(String, String), SecretError> {
    let bad = |line: usize, detail: &str| SecretError::Line {
        path: path.display().to_string(),
        line,
        detail: detail.to_owned(),
    };
    let mut found = lines(text);
    let Some((n, line)) = found.next() else {
        return Err(bad(1, "expected one `user:password` line, found none"));
    };
    if let Some((extra, _)) = found.next() {
        return Err(bad(extra, "expected one `user:password` line, found more"));
    }
    match line.split_once(':') {
        Some((user, password)) if !user.is_empty() && !password.is_empty() => {
            Ok((user.to_owned(), password.to_owned()))
        }
        _ => Err(bad(n, "expected `user:password`, both not empty")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_headers_line_is_named_by_its_number_and_never_shown() {
        let path = Path::new("/etc/consentd/hook.headers");
        let ok = headers(
            path,
            "# the hook's key\nAuthorization: Bearer s3cret\n\nX-A:b\r\n",
        )
        .unwrap();
        assert_eq!(
            ok,
            [
                ("Authorization".to_owned(), "Bearer s3cret".to_owned()),
                ("X-A".to_owned(), "b".to_owned())
            ]
        );
        let cases = [
            ("Authorization Bearer s3cret\n", 1, "Name: value"),
            ("X: 1\nBad Name: s3cret\n", 2, "not an HTTP token"),
            ("Content-Type: text/s3cret\n", 1, "set by consentd"),
            ("idempotency-key: s3cret\n", 1, "set by consentd"),
            ("X: s3cret\u{7}\n", 1, "control character"),
        ];
        for (text, line, words) in cases {
            let error = headers(path, text).unwrap_err();
            let shown = error.to_string();
            assert!(shown.contains(&format!(":{line}: ")), "{text:?}: {shown}");
            assert!(shown.contains(words), "{text:?}: {shown}");
            assert!(!shown.contains("s3cret"), "{text:?}: {shown}");
        }
    }

    #[test]
    fn a_credentials_file_is_one_user_password_line() {
        let path = Path::new("/etc/consentd/smtp");
        assert_eq!(
            credentials(path, "# login\nbot@example.org:pa:ss\n").unwrap(),
            ("bot@example.org".to_owned(), "pa:ss".to_owned())
        );
        let cases = [
            ("", 1),
            ("bot\n", 1),
            ("bot:\n", 1),
            (":s3cret\n", 1),
            ("a:b\nc:s3cret\n", 2),
        ];
        for (text, line) in cases {
            let error = credentials(path, text).unwrap_err();
            assert!(
                matches!(&error, SecretError::Line { line: l, .. } if *l == line),
                "{text:?}: {error}"
            );
            assert!(!error.to_string().contains("s3cret"), "{text:?}: {error}");
        }
    }
}
