//! The walk's getters: each reports a value of the wrong type under its full key and returns
//! `None`, so a section only decides what a missing value means; and the words its messages use.

use std::path::PathBuf;
use std::time::Duration;

use toml::{Table, Value};

use super::{parse_duration, ConfigProblem, KIB, MIB};

/// Collects problems while the walk goes on; every getter reports a wrong type
/// itself and returns `None`, so callers only decide what a missing value means.
#[derive(Debug, Default)]
pub(super) struct Walker {
    pub(super) problems: Vec<ConfigProblem>,
}

impl Walker {
    pub(super) fn report(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.problems.push(ConfigProblem {
            key: key.into(),
            message: message.into(),
        });
    }

    pub(super) fn unknown_keys(&mut self, t: &Table, path: &str, allowed: &[&str]) {
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                self.report(
                    join(path, k),
                    format!("unknown key (allowed: {})", allowed.join(", ")),
                );
            }
        }
    }

    pub(super) fn wrong_type(&mut self, key: String, expected: &str, got: &Value) {
        self.report(key, format!("expected {expected}, got {}", type_name(got)));
    }

    pub(super) fn string<'t>(
        &mut self,
        t: &'t Table,
        path: &str,
        key: &str,
        expected: &str,
    ) -> Option<&'t str> {
        match t.get(key)? {
            Value::String(s) => Some(s),
            other => {
                self.wrong_type(join(path, key), expected, other);
                None
            }
        }
    }

    pub(super) fn integer(
        &mut self,
        t: &Table,
        path: &str,
        key: &str,
        expected: &str,
    ) -> Option<i64> {
        match t.get(key)? {
            Value::Integer(i) => Some(*i),
            other => {
                self.wrong_type(join(path, key), expected, other);
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, t: &Table, path: &str, key: &str) -> Option<bool> {
        match t.get(key)? {
            Value::Boolean(b) => Some(*b),
            other => {
                self.wrong_type(join(path, key), "a boolean (true or false)", other);
                None
            }
        }
    }

    pub(super) fn array<'t>(
        &mut self,
        t: &'t Table,
        path: &str,
        key: &str,
        expected: &str,
    ) -> Option<&'t [Value]> {
        match t.get(key)? {
            Value::Array(a) => Some(a),
            other => {
                self.wrong_type(join(path, key), expected, other);
                None
            }
        }
    }

    pub(super) fn table<'t>(
        &mut self,
        t: &'t Table,
        path: &str,
        key: &str,
        expected: &str,
    ) -> Option<&'t Table> {
        match t.get(key)? {
            Value::Table(inner) => Some(inner),
            other => {
                self.wrong_type(join(path, key), expected, other);
                None
            }
        }
    }

    /// An absolute path; relative ones would depend on the daemon's working
    /// directory, which a service manager does not promise.
    pub(super) fn abs_path(&mut self, t: &Table, path: &str, key: &str) -> Option<PathBuf> {
        let s = self.string(t, path, key, "a string with an absolute path")?;
        match check_abs_path(s) {
            Ok(p) => Some(p),
            Err(msg) => {
                self.report(join(path, key), msg);
                None
            }
        }
    }

    /// The parsed duration and the text as written, so bound messages quote the
    /// owner's own spelling ("60m", not "1h").
    pub(super) fn duration<'t>(
        &mut self,
        t: &'t Table,
        path: &str,
        key: &str,
    ) -> Option<(Duration, &'t str)> {
        let raw = self.string(t, path, key, "a string with a unit, like \"15m\"")?;
        match parse_duration(raw) {
            Ok(d) => Some((d, raw)),
            Err(msg) => {
                self.report(join(path, key), msg);
                None
            }
        }
    }

    /// A string that must be one of `choices`; the message lists them.
    pub(super) fn choice<T: Copy>(
        &mut self,
        t: &Table,
        path: &str,
        key: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let list = or_list(&names);
        let s = self.string(t, path, key, &format!("a string ({list})"))?;
        match choices.iter().find(|(n, _)| *n == s) {
            Some((_, v)) => Some(*v),
            None => {
                self.report(join(path, key), format!("{s:?} is not one of {list}"));
                None
            }
        }
    }
}

pub(super) fn check_abs_path(s: &str) -> Result<PathBuf, String> {
    if s.contains('\0') {
        return Err(format!("{s:?} contains a NUL character"));
    }
    let p = PathBuf::from(s);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(format!("must be an absolute path, got {s:?}"))
    }
}

/// Dotted key path; keys that are not bare TOML keys are quoted, as TOML would.
pub(super) fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "an unquoted date/time (put it in quotes)",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

pub(super) fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The largest unit that states the duration exactly, as the config would.
pub(super) fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s != 0 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

pub(super) fn fmt_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{n} ({} MiB)", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{n} ({} KiB)", n / KIB)
    } else {
        n.to_string()
    }
}
