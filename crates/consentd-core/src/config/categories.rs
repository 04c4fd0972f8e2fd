//! `[categories.NAME]`: each category's label, class, what its card shows, its cost and the
//! command or built-in action (`builtin`) that runs it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toml::{Table, Value};

use super::builtin::{builtin, BuiltIn, BUILTIN_KEYS};
use super::walker::{fmt_duration, join, type_name, Walker};
use super::{
    is_valid_kind, parse_money, Category, Class, Cost, Language, Mode, Presence, CATEGORY_KEYS,
    DEFAULT_COMMAND_TIMEOUT, LABEL_KEYS, MAX_COMMAND_TIMEOUT,
};
use crate::protocol::ASK_KEYS;

pub(super) fn categories(
    w: &mut Walker,
    t: &Table,
    max_attachments: usize,
) -> BTreeMap<String, Category> {
    let mut out = BTreeMap::new();
    for (name, value) in t {
        let path = join("categories", name);
        if !is_valid_kind(name) {
            w.report(
                &path,
                format!(
                    "{name:?} is not a valid category name; use [a-z][a-z0-9_]{{0,31}} (a lowercase letter, then up to 31 lowercase letters, digits or _)"
                ),
            );
        }
        let Value::Table(body) = value else {
            w.wrong_type(path, &format!("a table ([categories.{name}])"), value);
            continue;
        };
        if let Some(category) = category(w, name, &path, body, max_attachments) {
            out.insert(name.clone(), category);
        }
    }
    out
}

pub(super) fn category(
    w: &mut Walker,
    name: &str,
    p: &str,
    t: &Table,
    max_attachments: usize,
) -> Option<Category> {
    w.unknown_keys(t, p, CATEGORY_KEYS);

    let label = category_label(w, p, t);

    let class = w.choice(
        t,
        p,
        "class",
        &[
            ("external", Class::External),
            ("spend", Class::Spend),
            ("destructive", Class::Destructive),
        ],
    );
    if !t.contains_key("class") {
        w.report(
            join(p, "class"),
            "required; one of external, spend or destructive",
        );
    }

    let enabled = w.boolean(t, p, "enabled").unwrap_or(false);
    let mandate_ok = w.boolean(t, p, "mandate_ok").unwrap_or(false);
    if class == Some(Class::Destructive) && mandate_ok {
        w.report(
            join(p, "mandate_ok"),
            "a destructive category can never be mandate_ok; every destructive action needs its own approval",
        );
    }

    let presence = [
        ("required", Presence::Required),
        ("optional", Presence::Optional),
        ("none", Presence::None),
    ];
    let target = w
        .choice(t, p, "target", &presence)
        .unwrap_or(Presence::None);
    let text = w.choice(t, p, "text", &presence).unwrap_or(Presence::None);

    let fields = category_fields(w, p, t);
    let field_labels = category_field_labels(w, p, t, &fields);

    let mut attachments = 0;
    if let Some(n) = w.integer(t, p, "attachments", "an integer") {
        match usize::try_from(n) {
            Ok(n) if n <= max_attachments => attachments = n,
            Ok(_) => w.report(
                join(p, "attachments"),
                format!("{n} is over limits.max_attachments ({max_attachments})"),
            ),
            Err(_) => w.report(
                join(p, "attachments"),
                format!("{n} is negative; use 0 to {max_attachments}"),
            ),
        }
    }

    let cost = category_cost(w, p, t);
    let card = (target, text, attachments);
    let (mode, (command, run_as, env_file, timeout), action) = category_runs(w, p, t, card);

    Some(Category {
        name: name.to_owned(),
        label: label?,
        class: class?,
        enabled,
        mandate_ok,
        target,
        text,
        fields,
        field_labels,
        attachments,
        cost,
        mode,
        command: command?,
        action,
        run_as,
        env_file,
        timeout,
    })
}

/// What running a category takes: its command, user, environment and timeout.
type Runs = (
    Option<Vec<String>>,
    Option<String>,
    Option<std::path::PathBuf>,
    Duration,
);

/// `mode`, and what running the category takes (an approve category has none of it): a
/// command, or a built-in action (with no command, `run_as` or `env_file`). `card` is what its
/// asks carry (target, text, attachments), which a built-in action must fit.
fn category_runs(
    w: &mut Walker,
    p: &str,
    t: &Table,
    card: (Presence, Presence, usize),
) -> (Mode, Runs, Option<BuiltIn>) {
    let choices = [("run", Mode::Run), ("approve", Mode::Approve)];
    let mode = w.choice(t, p, "mode", &choices).unwrap_or_default();
    match mode {
        Mode::Run if t.contains_key("action") => {
            let (target, text, attachments) = card;
            let action = builtin(w, p, t, target, text, attachments);
            let command = action.as_ref().map(|_| Vec::new());
            let timeout = category_timeout(w, p, t);
            (mode, (command, None, None, timeout), action)
        }
        Mode::Run => {
            // Reports an action's keys on a command's category.
            let (target, text, attachments) = card;
            builtin(w, p, t, target, text, attachments);
            let runs = (
                category_command(w, p, t),
                category_run_as(w, p, t),
                w.abs_path(t, p, "env_file"),
                category_timeout(w, p, t),
            );
            (mode, runs, None)
        }
        Mode::Approve => {
            approve_has_nothing_to_run(w, p, t);
            (
                mode,
                (Some(Vec::new()), None, None, DEFAULT_COMMAND_TIMEOUT),
                None,
            )
        }
    }
}

/// An approval-only category runs nothing in consentd: each key that says how to run something
/// is a problem by its name, so a config cannot look as if consentd ran it.
fn approve_has_nothing_to_run(w: &mut Walker, p: &str, t: &Table) {
    let runs = ["command", "run_as", "env_file", "timeout"];
    for &key in runs.iter().chain(BUILTIN_KEYS) {
        if t.contains_key(key) {
            w.report(
                join(p, key),
                "a category with mode = \"approve\" runs nothing in consentd (the agent runs \
                 the action itself once the owner approves); remove this key or use mode = \"run\"",
            );
        }
    }
}

pub(super) fn category_run_as(w: &mut Walker, p: &str, t: &Table) -> Option<String> {
    let user = w.string(t, p, "run_as", "a string with a user name")?;
    if is_valid_user_name(user) {
        return Some(user.to_owned());
    }
    w.report(
        join(p, "run_as"),
        format!("{user:?} is not a valid user name; use [a-z_][a-z0-9_-]{{0,31}}"),
    );
    None
}

pub(super) fn category_timeout(w: &mut Walker, p: &str, t: &Table) -> Duration {
    let Some((d, raw)) = w.duration(t, p, "timeout") else {
        return DEFAULT_COMMAND_TIMEOUT;
    };
    if d > MAX_COMMAND_TIMEOUT {
        let max = fmt_duration(MAX_COMMAND_TIMEOUT);
        w.report(
            join(p, "timeout"),
            format!("{raw} is over the maximum of {max}"),
        );
        return DEFAULT_COMMAND_TIMEOUT;
    }
    d
}

pub(super) fn category_label(
    w: &mut Walker,
    p: &str,
    t: &Table,
) -> Option<BTreeMap<Language, String>> {
    let key = join(p, "label");
    let expected = "a table like { en = \"Post to X\" }";
    let Some(table) = w.table(t, p, "label", expected) else {
        if !t.contains_key("label") {
            w.report(
                key,
                format!("required; {expected} with at least an \"en\" label"),
            );
        }
        return None;
    };
    label_table(w, &key, table)
}

/// A table of one-line labels by language, `{ en = "…", ru = "…", pt = "…" }`, under `key`; an
/// English one is required, as the others fall back to it.
pub(super) fn label_table(
    w: &mut Walker,
    key: &str,
    table: &Table,
) -> Option<BTreeMap<Language, String>> {
    w.unknown_keys(table, key, LABEL_KEYS);
    let mut labels = BTreeMap::new();
    for lang in Language::ALL {
        let Some(s) = w.string(table, key, lang.as_str(), "a string") else {
            continue;
        };
        if s.trim().is_empty() {
            w.report(join(key, lang.as_str()), "must not be empty");
        } else if s.contains(['\n', '\r']) {
            // Labels are card titles, field names and button captions: one line.
            w.report(join(key, lang.as_str()), "must be a single line");
        } else {
            labels.insert(lang, s.to_owned());
        }
    }
    if !table.contains_key("en") {
        w.report(key, "an \"en\" label is required");
        return None;
    }
    Some(labels)
}

/// `field_labels`: a table keyed by the category's own field names, each a label table like
/// the category's `label`. Optional, so a config that only lists `fields` stays valid; a key
/// that is not one of `fields` is a problem named by its key.
pub(super) fn category_field_labels(
    w: &mut Walker,
    p: &str,
    t: &Table,
    fields: &[String],
) -> BTreeMap<String, BTreeMap<Language, String>> {
    let key = join(p, "field_labels");
    let expected = "a table like { reply_to = { en = \"Reply to\" } }";
    let mut out = BTreeMap::new();
    let Some(table) = w.table(t, p, "field_labels", expected) else {
        return out;
    };
    for (field, value) in table {
        let path = join(&key, field);
        if !fields.contains(field) {
            let listed = if fields.is_empty() {
                "the category lists no fields".to_owned()
            } else {
                format!("the category's fields are {}", fields.join(", "))
            };
            w.report(
                &path,
                format!("{field:?} is not one of this category's fields; {listed}"),
            );
            continue;
        }
        let Value::Table(labels) = value else {
            w.wrong_type(path, "a table like { en = \"Reply to\" }", value);
            continue;
        };
        if let Some(labels) = label_table(w, &path, labels) {
            out.insert(field.clone(), labels);
        }
    }
    out
}

pub(super) fn category_fields(w: &mut Walker, p: &str, t: &Table) -> Vec<String> {
    let key = join(p, "fields");
    let mut fields = Vec::new();
    let Some(items) = w.array(t, p, "fields", "an array of field names") else {
        return fields;
    };
    for (i, item) in items.iter().enumerate() {
        let Value::String(f) = item else {
            w.report(
                &key,
                format!("fields[{i}]: expected a string, got {}", type_name(item)),
            );
            continue;
        };
        if !is_valid_kind(f) {
            w.report(
                &key,
                format!("fields[{i}] {f:?} is not a valid field name; use [a-z][a-z0-9_]{{0,31}}"),
            );
        } else if ASK_KEYS.contains(&f.as_str()) {
            w.report(
                &key,
                format!(
                    "fields[{i}] {f:?} is one of the request envelope's own keys ({})",
                    ASK_KEYS.join(", ")
                ),
            );
        } else if fields.contains(f) {
            w.report(&key, format!("{f:?} is listed more than once"));
        } else {
            fields.push(f.clone());
        }
    }
    fields
}

pub(super) fn category_cost(w: &mut Walker, p: &str, t: &Table) -> Cost {
    let Some(s) = w.string(
        t,
        p,
        "cost",
        "a string: none, request or a fixed amount like \"0.04\"",
    ) else {
        return Cost::None;
    };
    match s {
        "none" => Cost::None,
        "request" => Cost::Request,
        _ if s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') => {
            match parse_money(s) {
                // A kind that costs nothing must say so: a fixed zero would count as money
                // (a mandate would need a money term, a receipt would say "$0.00 of $X").
                Ok(d) if d.is_zero() => {
                    w.report(
                        join(p, "cost"),
                        format!(
                            "{s:?} is a fixed cost of zero; write cost = \"none\" for a kind \
                             that never costs"
                        ),
                    );
                    Cost::None
                }
                Ok(d) => Cost::Fixed(d),
                Err(msg) => {
                    w.report(join(p, "cost"), msg);
                    Cost::None
                }
            }
        }
        _ => {
            w.report(
                join(p, "cost"),
                format!("{s:?} is not none, request or an amount like \"0.04\""),
            );
            Cost::None
        }
    }
}

pub(super) fn category_command(w: &mut Walker, p: &str, t: &Table) -> Option<Vec<String>> {
    let key = join(p, "command");
    let example = "an argv list like [\"/usr/lib/consentd/publish-x\"]";
    let Some(items) = w.array(t, p, "command", example) else {
        if !t.contains_key("command") {
            w.report(
                key,
                format!(
                    "required, or a built-in action instead (action = \"telegram_post\", \"http\" \
                     or \"email\"); {example}"
                ),
            );
        }
        return None;
    };
    if items.is_empty() {
        w.report(key, format!("must not be empty; give {example}"));
        return None;
    }
    let mut argv = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let Value::String(arg) = item else {
            w.report(
                &key,
                format!("command[{i}]: expected a string, got {}", type_name(item)),
            );
            ok = false;
            continue;
        };
        if arg.is_empty() {
            w.report(&key, format!("command[{i}] must not be empty"));
            ok = false;
        } else if arg.contains('\0') {
            // exec cannot pass a NUL inside an argument.
            w.report(&key, format!("command[{i}] contains a NUL character"));
            ok = false;
        } else if i == 0 && !Path::new(arg).is_absolute() {
            // No shell and no PATH lookup: the program is named exactly.
            w.report(
                &key,
                format!("command[0] must be an absolute path, got {arg:?}"),
            );
            ok = false;
        } else {
            argv.push(arg.clone());
        }
    }
    ok.then_some(argv)
}

/// The portable POSIX-ish user name rule also used by useradd's defaults.
pub(super) fn is_valid_user_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}
