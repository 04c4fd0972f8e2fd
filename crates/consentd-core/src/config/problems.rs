//! What is wrong with a config: a problem under its dotted key, the error that carries them
//! all, and the first stage's report of a TOML syntax error with its line, column and key.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// One thing wrong with a config, under the dotted key it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Full dotted path, e.g. `categories.publish_x.label.en`. Empty only for a
    /// syntax error whose key could not be told.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// `source` is shared so that the error stays `Clone`.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("{} problem(s) in {origin}:\n{}", .problems.len(), render_problems(.problems))]
    Invalid {
        origin: String,
        problems: Vec<ConfigProblem>,
    },
}

pub(super) fn render_problems(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn syntax_problem(text: &str, err: &toml::de::Error) -> ConfigProblem {
    let detail = err.message().trim_end();
    match err.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            ConfigProblem {
                key: key_at_line(text, line).unwrap_or_default(),
                message: format!("invalid TOML at line {line}, column {column}: {detail}"),
            }
        }
        None => ConfigProblem {
            key: String::new(),
            message: format!("invalid TOML: {detail}"),
        },
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Best-effort dotted key for a syntax error on 1-based `line`: the table header
/// above it joined with the key assigned on that line, or the header itself when
/// the error is in one. Quoted keys are not untangled; then the key is unknown.
pub(super) fn key_at_line(text: &str, line: usize) -> Option<String> {
    let is_bare_path = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                let part = part.trim();
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
    };
    let normalize = |s: &str| s.split('.').map(str::trim).collect::<Vec<_>>().join(".");
    let mut header = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        let header_here = l
            .strip_prefix('[')
            .map(|rest| rest.trim_start_matches('['))
            .and_then(|rest| rest.split(']').next())
            .map(str::trim);
        if i + 1 == line {
            if let Some(h) = header_here {
                return is_bare_path(h).then(|| normalize(h));
            }
            let (k, _) = l.split_once('=')?;
            let k = k.trim();
            if !is_bare_path(k) {
                return None;
            }
            return Some(if header.is_empty() {
                normalize(k)
            } else {
                format!("{header}.{}", normalize(k))
            });
        }
        if let Some(h) = header_here {
            header = if is_bare_path(h) {
                normalize(h)
            } else {
                String::new()
            };
        }
    }
    None
}
