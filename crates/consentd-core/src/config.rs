//! The consentd configuration file (docs/CONFIG.md): reading it, checking it, and
//! turning it into typed values the rest of the daemon can trust.
//!
//! This module owns every rule the config must satisfy: which keys exist, their
//! types, the ceilings and floors on `[limits]`, the shape of each category, and
//! the strict duration and money syntaxes. Nothing outside it re-checks a value it
//! hands out; a `Config` that exists is a valid one.
//!
//! Loading runs in two stages. The text is first parsed into a plain `toml::Table`,
//! so a syntax error is reported once with its line and column. Then a single walk
//! over that table collects *every* problem, each under its full dotted key, so the
//! owner can fix a bad config in one edit instead of one error per restart.
//!
//! `parse_duration`, `parse_money` and `is_valid_kind` are public because the socket
//! protocol applies the same syntaxes to what clients send.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveTime;
use chrono_tz::Tz;
use rust_decimal::Decimal;
use toml::{Table, Value};

pub mod limits;

use crate::protocol::ASK_KEYS;
use limits::limits;
pub use limits::Limits;
#[cfg(test)]
use limits::LIMITS_KEYS;

const DEFAULT_API_URL: &str = "https://api.telegram.org";
const DEFAULT_SOCKET: &str = "/run/consentd/consent.sock";
const JOURNAL_FILE_NAME: &str = "decisions.jsonl";
const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);
const NIGHT_CARD_LIMIT_MAX: i64 = 100;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

const TOP_KEYS: &[&str] = &[
    "owner",
    "telegram",
    "paths",
    "client",
    "limits",
    "gate",
    "categories",
];
const OWNER_KEYS: &[&str] = &["telegram_id", "language", "timezone"];
const TELEGRAM_KEYS: &[&str] = &["token_file", "api_url"];
const PATHS_KEYS: &[&str] = &["state_dir", "journal", "socket"];
const CLIENT_KEYS: &[&str] = &["allowed_uids"];
const GATE_KEYS: &[&str] = &["quiet_hours", "night_card_limit", "summary_at", "receipts"];
const CATEGORY_KEYS: &[&str] = &[
    "label",
    "class",
    "enabled",
    "mandate_ok",
    "target",
    "text",
    "fields",
    "attachments",
    "cost",
    "command",
    "run_as",
    "env_file",
    "timeout",
    "field_labels",
];
const LABEL_KEYS: &[&str] = &["en", "ru", "pt"];

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// A language the bot can speak to the owner in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    En,
    Ru,
    Pt,
}

impl Language {
    pub const ALL: [Language; 3] = [Language::En, Language::Ru, Language::Pt];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Ru => "ru",
            Language::Pt => "pt",
        }
    }
}

impl FromStr for Language {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "en" => Ok(Language::En),
            "ru" => Ok(Language::Ru),
            "pt" => Ok(Language::Pt),
            other => Err(format!(
                "{other:?} is not a supported language; use en, ru or pt"
            )),
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole, validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub owner: Owner,
    pub telegram: Telegram,
    pub paths: Paths,
    pub client: Client,
    pub limits: Limits,
    pub gate: Gate,
    /// Keyed by category name (the request `kind`).
    pub categories: BTreeMap<String, Category>,
}

#[derive(Debug, Clone)]
pub struct Owner {
    /// `None` until the owner pairs with the bot.
    pub telegram_id: Option<i64>,
    /// `None` means: use the owner's Telegram `language_code`, else English.
    pub language: Option<Language>,
    pub timezone: Tz,
}

impl Default for Owner {
    fn default() -> Self {
        Owner {
            telegram_id: None,
            language: None,
            timezone: Tz::UTC,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Telegram {
    /// `None` means the token comes from `CONSENTD_BOT_TOKEN`.
    pub token_file: Option<PathBuf>,
    /// Base URL without a trailing slash, so callers can append `/bot…/method`.
    pub api_url: String,
}

impl Default for Telegram {
    fn default() -> Self {
        Telegram {
            token_file: None,
            api_url: DEFAULT_API_URL.to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Paths {
    pub state_dir: PathBuf,
    pub journal: PathBuf,
    pub socket: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub struct Client {
    /// Empty means any peer that can open the socket.
    pub allowed_uids: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct Gate {
    /// Start and end in the owner's local time; the end may be before the start
    /// (the window crosses midnight). `None` means no quiet hours.
    pub quiet_hours: Option<(NaiveTime, NaiveTime)>,
    pub night_card_limit: u32,
    pub summary_at: NaiveTime,
    pub receipts: Receipts,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            quiet_hours: Some((hm(23, 0), hm(8, 0))),
            night_card_limit: 2,
            summary_at: hm(21, 0),
            receipts: Receipts::Each,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Receipts {
    Each,
    Summary,
}

impl Receipts {
    pub fn as_str(self) -> &'static str {
        match self {
            Receipts::Each => "each",
            Receipts::Summary => "summary",
        }
    }
}

/// One kind of action the owner can be asked to approve.
#[derive(Debug, Clone)]
pub struct Category {
    pub name: String,
    /// Always holds `Language::En`.
    pub label: BTreeMap<Language, String>,
    pub class: Class,
    pub enabled: bool,
    pub mandate_ok: bool,
    pub target: Presence,
    pub text: Presence,
    pub fields: Vec<String>,
    /// Each field's label per language (`field_labels`), where the config gives one; a field
    /// without one is shown under its name.
    pub field_labels: BTreeMap<String, BTreeMap<Language, String>>,
    pub attachments: usize,
    pub cost: Cost,
    pub command: Vec<String>,
    pub run_as: Option<String>,
    pub env_file: Option<PathBuf>,
    pub timeout: Duration,
}

impl Category {
    /// The label in `lang`, falling back to English (always present after
    /// validation), and to the category name for a hand-built value without one.
    pub fn label(&self, lang: Language) -> &str {
        self.label
            .get(&lang)
            .or_else(|| self.label.get(&Language::En))
            .map_or(self.name.as_str(), String::as_str)
    }

    /// What a card calls `field` in `lang`: its label there, else its English label, else the
    /// field's own name.
    pub fn field_label<'a>(&'a self, field: &'a str, lang: Language) -> &'a str {
        self.field_labels
            .get(field)
            .and_then(|labels| labels.get(&lang).or_else(|| labels.get(&Language::En)))
            .map_or(field, String::as_str)
    }

    /// Every field's label in `lang` ([`Category::field_label`]), by field name.
    pub fn field_labels_in(&self, lang: Language) -> BTreeMap<String, String> {
        self.fields
            .iter()
            .map(|field| (field.clone(), self.field_label(field, lang).to_owned()))
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    External,
    Spend,
    Destructive,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::External => "external",
            Class::Spend => "spend",
            Class::Destructive => "destructive",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a request part (target, text) must, may or must not be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Presence {
    Required,
    Optional,
    None,
}

impl Presence {
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Required => "required",
            Presence::Optional => "optional",
            Presence::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cost {
    /// The action costs nothing; a request carrying `cost_usd` is refused.
    None,
    /// Each request states its own `cost_usd`.
    Request,
    /// Every action costs this many US dollars.
    Fixed(Decimal),
}

/// One thing wrong with a config, under the dotted key it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Full dotted path, e.g. `categories.publish_x.label.en`. Empty only for a
    /// syntax error whose key could not be told.
    pub key: String,
    pub message: String,
}

impl fmt::Display for Problem {
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
        problems: Vec<Problem>,
    },
}

fn render_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// Parses and validates config text. `origin` names the source in the error
/// (usually the file path; the file itself is read by the daemon, `consentd::config::load`).
pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
    parse_checked(text, origin, &mut no_more_checks)
}

/// Checks of a config beyond the file's own rules, over its token source, its categories and
/// its paths (`None` when they are wrong).
pub type MoreChecks<'a> =
    &'a mut dyn FnMut(&Telegram, &BTreeMap<String, Category>, Option<&Paths>) -> Vec<Problem>;

fn no_more_checks(_: &Telegram, _: &BTreeMap<String, Category>, _: Option<&Paths>) -> Vec<Problem> {
    Vec::new()
}

/// [`parse`], with `more` run over the parts of the config a check of the machine needs (the
/// token's source, the well-formed categories, the paths when they are well formed) even when
/// other keys are wrong: its problems join the file's, so one run names them all (`serve` and
/// `check-config` pass their preflight through `consentd::config::load_checked`).
pub fn parse_checked(
    text: &str,
    origin: &str,
    more: MoreChecks<'_>,
) -> Result<Config, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        origin: origin.to_owned(),
        problems,
    };
    let table = text
        .parse::<Table>()
        .map_err(|e| invalid(vec![syntax_problem(text, &e)]))?;
    validate(&table, more).map_err(invalid)
}

impl Config {
    /// One line for `check-config` and the startup log.
    pub fn summary(&self) -> String {
        let total = self.categories.len();
        let on = self.categories.values().filter(|c| c.enabled).count();
        let noun = if total == 1 { "category" } else { "categories" };
        let owner = match self.owner.telegram_id {
            Some(id) => format!("owner {id}"),
            None => "owner not paired yet".to_owned(),
        };
        let quiet = match self.gate.quiet_hours {
            Some((start, end)) => format!("{}-{}", start.format("%H:%M"), end.format("%H:%M")),
            None => "off".to_owned(),
        };
        format!(
            "ok: {total} {noun} ({on} on), {owner}, timezone {}, quiet hours {quiet}",
            self.owner.timezone.name()
        )
    }
}

/// A strictly written duration: a positive whole number without leading zeros
/// and one unit, `s`, `m` or `h` (`"90s"`, `"15m"`, `"24h"`). Anything looser is
/// refused rather than guessed at, since a misread timeout or TTL fails silently.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const HINT: &str = "a whole number with a unit (s, m or h), like \"15m\"";
    if s.is_empty() {
        return Err(format!("an empty string is not a duration; use {HINT}"));
    }
    if s.chars().any(char::is_whitespace) {
        return Err(format!("{s:?} must not contain spaces; use {HINT}"));
    }
    if s.starts_with('-') {
        return Err(format!("{s:?} is negative; use {HINT}"));
    }
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("{s:?} is not a duration; use {HINT}"));
    }
    if unit.starts_with('.') || unit.starts_with(',') {
        return Err(format!(
            "{s:?} is not a whole number; use a smaller unit instead, like \"90m\" for 1.5h"
        ));
    }
    let unit_secs: u64 = match unit {
        "" => return Err(format!("{s:?} needs a unit (s, m or h), like \"{s}m\"")),
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        other => {
            return Err(format!(
                "{s:?} has an unknown unit {other:?}; use one of s, m or h, like \"15m\""
            ))
        }
    };
    if digits.bytes().all(|b| b == b'0') {
        return Err(format!(
            "{s:?} is zero; a duration must be at least 1{unit}"
        ));
    }
    if digits.starts_with('0') {
        return Err(format!(
            "{s:?} has a leading zero; write it without, like \"15m\""
        ));
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_secs))
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{s:?} is too long a duration"))
}

/// A strictly written amount of US dollars: digits, optionally a point and one
/// or two decimals (`"0"`, `"0.04"`, `"10.00"`). No sign, no currency symbol, no
/// exponent, no leading zeros: money is never rounded or guessed at.
pub fn parse_money(s: &str) -> Result<Decimal, String> {
    const HINT: &str = "write US dollars with at most 2 decimal places, like \"0.04\"";
    if s.is_empty() {
        return Err(format!("an empty string is not an amount; {HINT}"));
    }
    if s.starts_with('-') {
        return Err(format!("{s:?} is negative; an amount must be 0 or more"));
    }
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !frac.is_none_or(all_digits) {
        return Err(format!("{s:?} is not an amount; {HINT}"));
    }
    if whole.is_empty() {
        return Err(format!(
            "{s:?} needs a digit before the point, like \"0{s}\""
        ));
    }
    if whole.len() > 1 && whole.starts_with('0') {
        return Err(format!("{s:?} has a leading zero; {HINT}"));
    }
    match frac {
        Some("") => {
            return Err(format!(
                "{s:?} needs digits after the point, like \"{s}00\""
            ))
        }
        Some(f) if f.len() > 2 => return Err(format!("{s:?} has more than 2 decimal places")),
        _ => {}
    }
    Decimal::from_str_exact(s).map_err(|_| format!("{s:?} is too large an amount"))
}

/// Whether `name` is a valid category name (a request `kind`):
/// `[a-z][a-z0-9_]{0,31}`. Category field names follow the same rule.
pub fn is_valid_kind(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 32
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

// ---------------------------------------------------------------------------
// Stage one: syntax
// ---------------------------------------------------------------------------

fn syntax_problem(text: &str, err: &toml::de::Error) -> Problem {
    let detail = err.message().trim_end();
    match err.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            Problem {
                key: key_at_line(text, line).unwrap_or_default(),
                message: format!("invalid TOML at line {line}, column {column}: {detail}"),
            }
        }
        None => Problem {
            key: String::new(),
            message: format!("invalid TOML: {detail}"),
        },
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
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
fn key_at_line(text: &str, line: usize) -> Option<String> {
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

// ---------------------------------------------------------------------------
// Stage two: the walk
// ---------------------------------------------------------------------------

fn validate(root: &Table, more: MoreChecks<'_>) -> Result<Config, Vec<Problem>> {
    let mut w = Walker::default();
    let empty = Table::new();
    w.unknown_keys(root, "", TOP_KEYS);

    // A section of the wrong type is reported once and then read as empty, so
    // the walk still checks everything else.
    let mut section = |name: &str| w.table(root, "", name, "a table").unwrap_or(&empty);
    let (s_owner, s_telegram, s_paths, s_client, s_limits, s_gate, s_categories) = (
        section("owner"),
        section("telegram"),
        section("paths"),
        section("client"),
        section("limits"),
        section("gate"),
        section("categories"),
    );

    let owner = owner(&mut w, s_owner);
    let telegram = telegram(&mut w, s_telegram);
    let paths = paths(&mut w, s_paths);
    let client = client(&mut w, s_client);
    let limits = limits(&mut w, s_limits);
    let gate = gate(&mut w, s_gate);
    let categories = categories(&mut w, s_categories, limits.max_attachments);
    w.problems
        .extend(more(&telegram, &categories, paths.as_ref()));

    match paths {
        Some(paths) if w.problems.is_empty() => Ok(Config {
            owner,
            telegram,
            paths,
            client,
            limits,
            gate,
            categories,
        }),
        _ => Err(w.problems),
    }
}

/// Collects problems while the walk goes on; every getter reports a wrong type
/// itself and returns `None`, so callers only decide what a missing value means.
#[derive(Debug, Default)]
struct Walker {
    problems: Vec<Problem>,
}

impl Walker {
    fn report(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            key: key.into(),
            message: message.into(),
        });
    }

    fn unknown_keys(&mut self, t: &Table, path: &str, allowed: &[&str]) {
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                self.report(
                    join(path, k),
                    format!("unknown key (allowed: {})", allowed.join(", ")),
                );
            }
        }
    }

    fn wrong_type(&mut self, key: String, expected: &str, got: &Value) {
        self.report(key, format!("expected {expected}, got {}", type_name(got)));
    }

    fn string<'t>(
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

    fn integer(&mut self, t: &Table, path: &str, key: &str, expected: &str) -> Option<i64> {
        match t.get(key)? {
            Value::Integer(i) => Some(*i),
            other => {
                self.wrong_type(join(path, key), expected, other);
                None
            }
        }
    }

    fn boolean(&mut self, t: &Table, path: &str, key: &str) -> Option<bool> {
        match t.get(key)? {
            Value::Boolean(b) => Some(*b),
            other => {
                self.wrong_type(join(path, key), "a boolean (true or false)", other);
                None
            }
        }
    }

    fn array<'t>(
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

    fn table<'t>(
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
    fn abs_path(&mut self, t: &Table, path: &str, key: &str) -> Option<PathBuf> {
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
    fn duration<'t>(&mut self, t: &'t Table, path: &str, key: &str) -> Option<(Duration, &'t str)> {
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
    fn choice<T: Copy>(
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

fn check_abs_path(s: &str) -> Result<PathBuf, String> {
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

fn owner(w: &mut Walker, t: &Table) -> Owner {
    let p = "owner";
    w.unknown_keys(t, p, OWNER_KEYS);
    let mut owner = Owner::default();

    if let Some(id) = w.integer(
        t,
        p,
        "telegram_id",
        "a positive integer (a Telegram user id)",
    ) {
        if id > 0 {
            owner.telegram_id = Some(id);
        } else {
            w.report(
                join(p, "telegram_id"),
                format!("{id} is not a Telegram user id; it must be a positive integer"),
            );
        }
    }
    if let Some(s) = w.string(t, p, "language", "a string (en, ru or pt)") {
        match s.parse::<Language>() {
            Ok(lang) => owner.language = Some(lang),
            Err(msg) => w.report(join(p, "language"), msg),
        }
    }
    if let Some(s) = w.string(t, p, "timezone", "a string with an IANA time zone name") {
        match s.parse::<Tz>() {
            Ok(tz) => owner.timezone = tz,
            Err(_) => w.report(
                join(p, "timezone"),
                format!(
                    "{s:?} is not an IANA time zone; use a name like \"Europe/Moscow\" or \"UTC\""
                ),
            ),
        }
    }
    owner
}

fn telegram(w: &mut Walker, t: &Table) -> Telegram {
    let p = "telegram";
    w.unknown_keys(t, p, TELEGRAM_KEYS);
    let mut telegram = Telegram {
        token_file: w.abs_path(t, p, "token_file"),
        ..Telegram::default()
    };
    if let Some(url) = w.string(t, p, "api_url", "a string with an http:// or https:// URL") {
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        match rest {
            None => w.report(
                join(p, "api_url"),
                format!("{url:?} must start with http:// or https://"),
            ),
            Some(rest) if rest.trim_end_matches('/').is_empty() => {
                w.report(join(p, "api_url"), format!("{url:?} has no host"));
            }
            Some(_) if url.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                w.report(
                    join(p, "api_url"),
                    format!("{url:?} must not contain spaces"),
                );
            }
            Some(_) => telegram.api_url = url.trim_end_matches('/').to_owned(),
        }
    }
    telegram
}

fn paths(w: &mut Walker, t: &Table) -> Option<Paths> {
    let p = "paths";
    w.unknown_keys(t, p, PATHS_KEYS);
    let state_dir = w.abs_path(t, p, "state_dir");
    if !t.contains_key("state_dir") {
        w.report(
            join(p, "state_dir"),
            "required; set an absolute path like \"/var/lib/consentd\"",
        );
    }
    let journal = w.abs_path(t, p, "journal");
    let socket = w.abs_path(t, p, "socket");
    let journal_ok = journal.is_some() || !t.contains_key("journal");
    let socket_ok = socket.is_some() || !t.contains_key("socket");
    let state_dir = state_dir?;
    if !journal_ok || !socket_ok {
        return None;
    }
    Some(Paths {
        journal: journal.unwrap_or_else(|| state_dir.join(JOURNAL_FILE_NAME)),
        socket: socket.unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET)),
        state_dir,
    })
}

fn client(w: &mut Walker, t: &Table) -> Client {
    let p = "client";
    w.unknown_keys(t, p, CLIENT_KEYS);
    let key = join(p, "allowed_uids");
    let mut uids = Vec::new();
    let Some(items) = w.array(t, p, "allowed_uids", "an array of uids (integers)") else {
        return Client::default();
    };
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::Integer(n) => match u32::try_from(*n) {
                Ok(uid) if seen.insert(uid) => uids.push(uid),
                Ok(uid) => w.report(&key, format!("uid {uid} is listed more than once")),
                Err(_) => w.report(
                    &key,
                    format!("allowed_uids[{i}] is {n}; a uid is from 0 to {}", u32::MAX),
                ),
            },
            other => w.report(
                &key,
                format!(
                    "allowed_uids[{i}]: expected an integer uid, got {}",
                    type_name(other)
                ),
            ),
        }
    }
    Client { allowed_uids: uids }
}

fn gate(w: &mut Walker, t: &Table) -> Gate {
    let p = "gate";
    w.unknown_keys(t, p, GATE_KEYS);
    let mut gate = Gate::default();

    if let Some(s) = w.string(
        t,
        p,
        "quiet_hours",
        "a string like \"23:00-08:00\" or \"off\"",
    ) {
        match parse_quiet_hours(s) {
            Ok(q) => gate.quiet_hours = q,
            Err(msg) => w.report(join(p, "quiet_hours"), msg),
        }
    }
    if let Some(n) = w.integer(t, p, "night_card_limit", "an integer") {
        match u32::try_from(n) {
            Ok(n) if i64::from(n) <= NIGHT_CARD_LIMIT_MAX => gate.night_card_limit = n,
            _ => w.report(
                join(p, "night_card_limit"),
                format!("{n} is out of range; use 0 to {NIGHT_CARD_LIMIT_MAX}"),
            ),
        }
    }
    if let Some(s) = w.string(t, p, "summary_at", "a quoted string like \"21:00\"") {
        match parse_hhmm(s) {
            Some(time) => gate.summary_at = time,
            None => w.report(join(p, "summary_at"), not_a_time(s)),
        }
    }
    if let Some(r) = w.choice(
        t,
        p,
        "receipts",
        &[("each", Receipts::Each), ("summary", Receipts::Summary)],
    ) {
        gate.receipts = r;
    }
    gate
}

pub fn parse_quiet_hours(s: &str) -> Result<Option<(NaiveTime, NaiveTime)>, String> {
    if s == "off" {
        return Ok(None);
    }
    let Some((a, b)) = s.split_once('-') else {
        return Err(format!(
            "{s:?} is not a time range; use \"HH:MM-HH:MM\" like \"23:00-08:00\", or \"off\""
        ));
    };
    let start = parse_hhmm(a).ok_or_else(|| not_a_time(a))?;
    let end = parse_hhmm(b).ok_or_else(|| not_a_time(b))?;
    if start == end {
        return Err(format!(
            "{s:?} starts and ends at the same time; use \"off\" for no quiet hours"
        ));
    }
    Ok(Some((start, end)))
}

fn not_a_time(s: &str) -> String {
    format!("{s:?} is not a time of day; use HH:MM from 00:00 to 23:59")
}

/// Exactly `HH:MM`, 24-hour, two digits each: times in the config are read by
/// people, and one form means no two readings.
pub fn parse_hhmm(s: &str) -> Option<NaiveTime> {
    let b = s.as_bytes();
    if b.len() != 5 || b[2] != b':' {
        return None;
    }
    let digit = |i: usize| b[i].is_ascii_digit().then(|| u32::from(b[i] - b'0'));
    let hour = digit(0)? * 10 + digit(1)?;
    let minute = digit(3)? * 10 + digit(4)?;
    NaiveTime::from_hms_opt(hour, minute, 0)
}

fn categories(w: &mut Walker, t: &Table, max_attachments: usize) -> BTreeMap<String, Category> {
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

fn category(
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
    let command = category_command(w, p, t);

    let run_as = category_run_as(w, p, t);
    let env_file = w.abs_path(t, p, "env_file");
    let timeout = category_timeout(w, p, t);

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
        command: command?,
        run_as,
        env_file,
        timeout,
    })
}

fn category_run_as(w: &mut Walker, p: &str, t: &Table) -> Option<String> {
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

fn category_timeout(w: &mut Walker, p: &str, t: &Table) -> Duration {
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

fn category_label(w: &mut Walker, p: &str, t: &Table) -> Option<BTreeMap<Language, String>> {
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
fn label_table(w: &mut Walker, key: &str, table: &Table) -> Option<BTreeMap<Language, String>> {
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
fn category_field_labels(
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

fn category_fields(w: &mut Walker, p: &str, t: &Table) -> Vec<String> {
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

fn category_cost(w: &mut Walker, p: &str, t: &Table) -> Cost {
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

fn category_command(w: &mut Walker, p: &str, t: &Table) -> Option<Vec<String>> {
    let key = join(p, "command");
    let example = "an argv list like [\"/usr/lib/consentd/publish-x\"]";
    let Some(items) = w.array(t, p, "command", example) else {
        if !t.contains_key("command") {
            w.report(key, format!("required; {example}"));
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
fn is_valid_user_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

fn hm(hour: u32, minute: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(hour, minute, 0).unwrap_or(NaiveTime::MIN)
}

/// Dotted key path; keys that are not bare TOML keys are quoted, as TOML would.
fn join(path: &str, key: &str) -> String {
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

fn type_name(v: &Value) -> &'static str {
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

fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The largest unit that states the duration exactly, as the config would.
fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s != 0 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

fn fmt_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{n} ({} MiB)", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{n} ({} KiB)", n / KIB)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest valid config; every case starts from it.
    const BASE: &str = r#"
[paths]
state_dir = "/var/lib/consentd"
"#;

    /// A valid category that category cases override key by key.
    const CATEGORY: &str = r#"
[categories.publish_x]
label = { en = "Post to X" }
class = "external"
command = ["/usr/lib/consentd/publish-x"]
"#;

    /// Merges `over` into `base`: sections and categories merge key by key,
    /// anything deeper is replaced whole (so a case can replace a label table).
    fn merge(base: &mut Table, over: Table, depth: usize) {
        for (k, v) in over {
            match (base.get_mut(&k), v) {
                (Some(Value::Table(b)), Value::Table(o)) if depth < 2 => merge(b, o, depth + 1),
                (_, v) => {
                    base.insert(k, v);
                }
            }
        }
    }

    fn table_of(parts: &[&str]) -> Table {
        let mut table = Table::new();
        for part in parts {
            let t: Table = part.parse().expect("test snippet is valid TOML");
            merge(&mut table, t, 0);
        }
        table
    }

    fn problems_of(parts: &[&str]) -> Vec<Problem> {
        match validate(&table_of(parts), &mut no_more_checks) {
            Ok(c) => panic!("expected problems, got a valid config: {c:?}"),
            Err(p) => p,
        }
    }

    fn assert_problem(problems: &[Problem], key: &str, substring: &str) {
        assert!(
            problems
                .iter()
                .any(|p| p.key == key && p.message.contains(substring)),
            "no problem at {key:?} containing {substring:?}; got:\n{}",
            render_problems(problems)
        );
    }

    /// BASE plus `snippet` must fail with a problem at exactly `key` whose
    /// message contains `substring`.
    fn check_problem(snippet: &str, key: &str, substring: &str) {
        assert_problem(&problems_of(&[BASE, snippet]), key, substring);
    }

    /// Like `check_problem`, but `overrides` are keys of the valid category.
    fn check_category_problem(overrides: &str, key: &str, substring: &str) {
        let snippet = format!("[categories.publish_x]\n{overrides}");
        assert_problem(&problems_of(&[BASE, CATEGORY, &snippet]), key, substring);
    }

    fn check_ok(snippet: &str) -> Config {
        validate(&table_of(&[BASE, snippet]), &mut no_more_checks)
            .unwrap_or_else(|p| panic!("expected valid, got:\n{}", render_problems(&p)))
    }

    fn category_ok(overrides: &str) -> Category {
        let snippet = format!("[categories.publish_x]\n{overrides}");
        let config = validate(&table_of(&[BASE, CATEGORY, &snippet]), &mut no_more_checks)
            .unwrap_or_else(|p| panic!("expected valid, got:\n{}", render_problems(&p)));
        config.categories["publish_x"].clone()
    }

    fn parse_err(text: &str) -> Vec<Problem> {
        match parse(text, "test.toml") {
            Err(ConfigError::Invalid { origin, problems }) => {
                assert_eq!(origin, "test.toml");
                problems
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    // --- the example file, defaults, and the error shape ---

    #[test]
    fn example_config_parses_and_summarizes() {
        let config =
            parse(include_str!("../../../config.toml"), "config.toml").expect("example is valid");
        let cat = &config.categories["publish_x"];
        assert!(!cat.enabled);
        assert!(cat.mandate_ok);
        assert_eq!(cat.class, Class::External);
        assert_eq!(cat.cost, Cost::None);
        assert_eq!(cat.fields, ["reply_to"]);
        assert_eq!(cat.label(Language::Ru), "Пост в X");
        assert_eq!(cat.field_label("reply_to", Language::En), "Reply to");
        assert_eq!(config.paths.state_dir, Path::new("/var/lib/consentd"));
        assert_eq!(config.paths.socket, Path::new("/run/consentd/consent.sock"));
        let zernio = &config.categories["publish_zernio"];
        assert!(!zernio.enabled);
        assert_eq!(
            zernio.env_file.as_deref(),
            Some(Path::new("/etc/consentd/publish-zernio.env"))
        );
        assert_eq!(
            config.summary(),
            "ok: 2 categories (0 on), owner not paired yet, timezone UTC, quiet hours 23:00-08:00"
        );
    }

    #[test]
    fn example_limits_equal_the_defaults() {
        let config =
            parse(include_str!("../../../config.toml"), "config.toml").expect("example is valid");
        let (a, b) = (config.limits, Limits::default());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn defaults_fill_every_optional_key() {
        let c = check_ok("");
        assert_eq!(c.owner.telegram_id, None);
        assert_eq!(c.owner.language, None);
        assert_eq!(c.owner.timezone, Tz::UTC);
        assert_eq!(c.telegram.token_file, None);
        assert_eq!(c.telegram.api_url, "https://api.telegram.org");
        assert_eq!(
            c.paths.journal,
            Path::new("/var/lib/consentd/decisions.jsonl")
        );
        assert_eq!(c.paths.socket, Path::new("/run/consentd/consent.sock"));
        assert!(c.client.allowed_uids.is_empty());
        let l = c.limits;
        assert_eq!(l.card_ttl, secs(900));
        assert_eq!(l.decline_memory, secs(86_400));
        assert_eq!(l.decline_streak, 3);
        assert_eq!(l.mandate_max_days, 7);
        assert_eq!(l.mandate_max_usd_per_day, Decimal::new(10, 0));
        assert_eq!(l.mandate_max_actions_per_day, 100);
        assert_eq!(l.max_pending, 20);
        assert_eq!(l.max_text_chars, 20_000);
        assert_eq!(l.max_attachments, 4);
        assert_eq!(l.max_attachment_bytes, 20_971_520);
        assert_eq!(l.max_request_bytes, 33_554_432);
        assert_eq!(l.decline_reason_wait, secs(60));
        assert_eq!(c.gate.quiet_hours, Some((hm(23, 0), hm(8, 0))));
        assert_eq!(c.gate.night_card_limit, 2);
        assert_eq!(c.gate.summary_at, hm(21, 0));
        assert_eq!(c.gate.receipts, Receipts::Each);
        assert!(c.categories.is_empty());
    }

    #[test]
    fn category_defaults() {
        let cat = category_ok("");
        assert_eq!(cat.name, "publish_x");
        assert!(!cat.enabled);
        assert!(!cat.mandate_ok);
        assert_eq!(cat.target, Presence::None);
        assert_eq!(cat.text, Presence::None);
        assert!(cat.fields.is_empty());
        assert!(cat.field_labels.is_empty());
        assert_eq!(cat.attachments, 0);
        assert_eq!(cat.cost, Cost::None);
        assert_eq!(cat.run_as, None);
        assert_eq!(cat.env_file, None);
        assert_eq!(cat.timeout, secs(60));
    }

    #[test]
    fn no_categories_is_valid_and_summary_says_zero() {
        let c = parse(BASE, "x").expect("valid");
        assert_eq!(
            c.summary(),
            "ok: 0 categories (0 on), owner not paired yet, timezone UTC, quiet hours 23:00-08:00"
        );
    }

    #[test]
    fn summary_counts_enabled_and_names_owner() {
        let c = check_ok(
            r#"
[owner]
telegram_id = 123456789
timezone = "Europe/Moscow"
[gate]
quiet_hours = "off"
[categories.a]
label = { en = "A" }
class = "external"
enabled = true
command = ["/bin/true"]
[categories.b]
label = { en = "B" }
class = "spend"
command = ["/bin/true"]
[categories.c]
label = { en = "C" }
class = "destructive"
command = ["/bin/true"]
"#,
        );
        assert_eq!(
            c.summary(),
            "ok: 3 categories (1 on), owner 123456789, timezone Europe/Moscow, quiet hours off"
        );
    }

    #[test]
    fn several_problems_are_all_reported() {
        let problems = parse_err(
            r#"
[owner]
tiemzone = "UTC"
[paths]
state_dir = "relative/dir"
[limits]
card_ttl = "20m"
"#,
        );
        assert_eq!(problems.len(), 3, "{}", render_problems(&problems));
        assert_problem(&problems, "owner.tiemzone", "unknown key");
        assert_problem(
            &problems,
            "paths.state_dir",
            "must be an absolute path, got \"relative/dir\"",
        );
        assert_problem(
            &problems,
            "limits.card_ttl",
            "20m is over the ceiling of 15m",
        );
    }

    #[test]
    fn invalid_error_lists_every_problem_under_origin() {
        let err = parse(
            "[owner]\nlanguage = \"de\"\nbogus = 1\n[paths]\nstate_dir = \"/s\"\n",
            "/etc/c.toml",
        )
        .expect_err("invalid");
        let text = err.to_string();
        assert!(text.starts_with("2 problem(s) in /etc/c.toml:\n"), "{text}");
        assert!(
            text.contains(
                "\n  owner.bogus: unknown key (allowed: telegram_id, language, timezone)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "\n  owner.language: \"de\" is not a supported language; use en, ru or pt"
            ),
            "{text}"
        );
    }

    #[test]
    fn problem_display_is_key_colon_message() {
        let p = Problem {
            key: "limits.card_ttl".into(),
            message: "20m is over the ceiling of 15m".into(),
        };
        assert_eq!(
            p.to_string(),
            "limits.card_ttl: 20m is over the ceiling of 15m"
        );
    }

    #[test]
    fn messages_have_no_trailing_period() {
        let problems = parse_err(
            r#"
bogus = 1
[owner]
telegram_id = 0
language = "de"
timezone = "Mars/Base"
[paths]
state_dir = "x"
[limits]
card_ttl = "15"
mandate_max_usd_per_day = "10.001"
[categories.wipe]
label = { ru = "" }
class = "destructive"
mandate_ok = true
command = ["rm"]
"#,
        );
        assert!(problems.len() >= 9, "{}", render_problems(&problems));
        for p in &problems {
            assert!(!p.message.ends_with('.'), "{p}");
        }
    }

    // --- syntax ---

    #[test]
    fn syntax_error_is_one_problem_with_line_column_and_key() {
        let problems =
            parse_err("[paths]\nstate_dir = \"/s\"\n[owner]\ntimezone = Europe/Moscow\n");
        assert_eq!(problems.len(), 1, "{}", render_problems(&problems));
        assert_eq!(problems[0].key, "owner.timezone");
        assert!(
            problems[0]
                .message
                .starts_with("invalid TOML at line 4, column 12: "),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn syntax_error_duplicate_key_names_the_key() {
        let problems = parse_err("[limits]\ncard_ttl = \"1m\"\ncard_ttl = \"2m\"\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].key, "limits.card_ttl");
        assert!(
            problems[0].message.contains("line 3, column 1"),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].message.contains("duplicate key"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn syntax_error_without_a_key_line_has_an_empty_key() {
        let problems = parse_err("[client]\nallowed_uids = [1,\n2,\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].key, "");
        assert!(
            problems[0]
                .to_string()
                .starts_with("invalid TOML at line 3"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\nпр x", 8), (2, 4));
        assert_eq!(line_column("", 0), (1, 1));
    }

    // --- top level and types ---

    #[test]
    fn unknown_top_level_key() {
        check_problem("[ownr]\ntelegram_id = 1\n", "ownr", "unknown key");
    }

    #[test]
    fn section_of_the_wrong_type() {
        check_problem("owner = 5\n", "owner", "expected a table, got an integer");
    }

    #[test]
    fn unquoted_time_is_a_type_error_with_a_hint() {
        check_problem(
            "[gate]\nsummary_at = 21:00:00\n",
            "gate.summary_at",
            "put it in quotes",
        );
    }

    // --- owner ---

    #[test]
    fn owner_unknown_key() {
        check_problem(
            "[owner]\ntiemzone = \"UTC\"\n",
            "owner.tiemzone",
            "unknown key",
        );
    }

    #[test]
    fn owner_telegram_id_must_be_positive() {
        check_problem(
            "[owner]\ntelegram_id = 0\n",
            "owner.telegram_id",
            "positive integer",
        );
        check_problem(
            "[owner]\ntelegram_id = -5\n",
            "owner.telegram_id",
            "positive integer",
        );
        check_problem(
            "[owner]\ntelegram_id = \"123\"\n",
            "owner.telegram_id",
            "expected a positive integer",
        );
        assert_eq!(
            check_ok("[owner]\ntelegram_id = 123456789\n")
                .owner
                .telegram_id,
            Some(123_456_789)
        );
    }

    #[test]
    fn owner_language_is_en_ru_or_pt() {
        check_problem(
            "[owner]\nlanguage = \"de\"\n",
            "owner.language",
            "use en, ru or pt",
        );
        check_problem(
            "[owner]\nlanguage = \"EN\"\n",
            "owner.language",
            "use en, ru or pt",
        );
        assert_eq!(
            check_ok("[owner]\nlanguage = \"pt\"\n").owner.language,
            Some(Language::Pt)
        );
    }

    #[test]
    fn owner_timezone_is_iana() {
        check_problem(
            "[owner]\ntimezone = \"Mars/Base\"\n",
            "owner.timezone",
            "\"Mars/Base\" is not an IANA time zone",
        );
        check_problem("[owner]\ntimezone = \"+03:00\"\n", "owner.timezone", "IANA");
        let tz = check_ok("[owner]\ntimezone = \"America/Sao_Paulo\"\n")
            .owner
            .timezone;
        assert_eq!(tz.name(), "America/Sao_Paulo");
    }

    // --- telegram ---

    #[test]
    fn telegram_unknown_key() {
        check_problem(
            "[telegram]\ntoken = \"x\"\n",
            "telegram.token",
            "unknown key",
        );
    }

    #[test]
    fn telegram_token_file_is_absolute() {
        check_problem(
            "[telegram]\ntoken_file = \"bot-token\"\n",
            "telegram.token_file",
            "must be an absolute path, got \"bot-token\"",
        );
        let c = check_ok("[telegram]\ntoken_file = \"/etc/consentd/bot-token\"\n");
        assert_eq!(
            c.telegram.token_file.as_deref(),
            Some(Path::new("/etc/consentd/bot-token"))
        );
    }

    #[test]
    fn telegram_api_url_is_http_or_https() {
        check_problem(
            "[telegram]\napi_url = \"ftp://x\"\n",
            "telegram.api_url",
            "http:// or https://",
        );
        check_problem(
            "[telegram]\napi_url = \"api.telegram.org\"\n",
            "telegram.api_url",
            "http:// or https://",
        );
        check_problem(
            "[telegram]\napi_url = \"https://\"\n",
            "telegram.api_url",
            "has no host",
        );
        check_problem(
            "[telegram]\napi_url = \"http://a b\"\n",
            "telegram.api_url",
            "spaces",
        );
        let c = check_ok("[telegram]\napi_url = \"http://127.0.0.1:8081/\"\n");
        assert_eq!(c.telegram.api_url, "http://127.0.0.1:8081");
    }

    // --- paths ---

    #[test]
    fn paths_unknown_key() {
        check_problem(
            "[paths]\ndatabase = \"/x\"\n",
            "paths.database",
            "unknown key",
        );
    }

    #[test]
    fn paths_state_dir_is_required() {
        assert_problem(&parse_err(""), "paths.state_dir", "required");
        assert_problem(
            &parse_err("[paths]\nsocket = \"/s\"\n"),
            "paths.state_dir",
            "required",
        );
    }

    #[test]
    fn paths_are_absolute() {
        check_problem(
            "[paths]\nstate_dir = \"state\"\n",
            "paths.state_dir",
            "absolute path",
        );
        check_problem(
            "[paths]\njournal = \"d.jsonl\"\n",
            "paths.journal",
            "absolute path",
        );
        check_problem(
            "[paths]\nsocket = \"./c.sock\"\n",
            "paths.socket",
            "absolute path",
        );
        check_problem(
            "[paths]\nsocket = 5\n",
            "paths.socket",
            "expected a string with an absolute path",
        );
    }

    #[test]
    fn journal_defaults_under_state_dir_and_paths_can_be_set() {
        let c = check_ok("[paths]\nstate_dir = \"/srv/c\"\n");
        assert_eq!(c.paths.journal, Path::new("/srv/c/decisions.jsonl"));
        let c = check_ok("[paths]\njournal = \"/log/j.jsonl\"\nsocket = \"/tmp/s.sock\"\n");
        assert_eq!(c.paths.journal, Path::new("/log/j.jsonl"));
        assert_eq!(c.paths.socket, Path::new("/tmp/s.sock"));
    }

    // --- client ---

    #[test]
    fn client_unknown_key() {
        check_problem(
            "[client]\nallowed_gids = [1]\n",
            "client.allowed_gids",
            "unknown key",
        );
    }

    #[test]
    fn client_uids_fit_u32() {
        check_problem(
            "[client]\nallowed_uids = [1000, -1]\n",
            "client.allowed_uids",
            "allowed_uids[1] is -1",
        );
        check_problem(
            "[client]\nallowed_uids = [4294967296]\n",
            "client.allowed_uids",
            "from 0 to 4294967295",
        );
        check_problem(
            "[client]\nallowed_uids = [\"1000\"]\n",
            "client.allowed_uids",
            "expected an integer uid",
        );
        check_problem(
            "[client]\nallowed_uids = 1000\n",
            "client.allowed_uids",
            "expected an array",
        );
        let c = check_ok("[client]\nallowed_uids = [0, 1000, 4294967295]\n");
        assert_eq!(c.client.allowed_uids, [0, 1000, u32::MAX]);
    }

    #[test]
    fn client_uids_have_no_duplicates() {
        check_problem(
            "[client]\nallowed_uids = [1000, 1001, 1000]\n",
            "client.allowed_uids",
            "uid 1000 is listed more than once",
        );
    }

    // --- durations and money ---

    #[test]
    fn parse_duration_accepts_strict_forms() {
        assert_eq!(parse_duration("1s"), Ok(secs(1)));
        assert_eq!(parse_duration("90s"), Ok(secs(90)));
        assert_eq!(parse_duration("15m"), Ok(secs(900)));
        assert_eq!(parse_duration("24h"), Ok(secs(86_400)));
    }

    #[test]
    fn parse_duration_refuses_everything_else() {
        let cases = [
            ("", "empty"),
            ("0m", "is zero"),
            ("0", "needs a unit"),
            ("-5m", "negative"),
            ("1.5h", "whole number"),
            ("15 m", "spaces"),
            (" 15m", "spaces"),
            ("15", "\"15\" needs a unit (s, m or h), like \"15m\""),
            ("15d", "unknown unit \"d\""),
            ("15ms", "unknown unit \"ms\""),
            ("15M", "unknown unit \"M\""),
            ("1m30s", "unknown unit"),
            ("m", "not a duration"),
            ("015m", "leading zero"),
            ("99999999999999999999h", "too long"),
            ("9999999999999999999h", "too long"),
        ];
        for (input, expected) in cases {
            let err = parse_duration(input).expect_err(input);
            assert!(err.contains(expected), "{input:?}: {err}");
            assert!(!err.ends_with('.'), "{err}");
        }
    }

    #[test]
    fn parse_money_accepts_strict_forms() {
        assert_eq!(parse_money("0"), Ok(Decimal::ZERO));
        assert_eq!(parse_money("0.04"), Ok(Decimal::new(4, 2)));
        assert_eq!(parse_money("1.5"), Ok(Decimal::new(15, 1)));
        assert_eq!(parse_money("10"), Ok(Decimal::new(10, 0)));
        assert_eq!(parse_money("10.00"), Ok(Decimal::new(1000, 2)));
    }

    #[test]
    fn parse_money_refuses_everything_else() {
        let cases = [
            ("", "empty"),
            ("10.001", "\"10.001\" has more than 2 decimal places"),
            ("-1", "negative"),
            ("01", "leading zero"),
            ("00.5", "leading zero"),
            ("1.", "digits after the point"),
            (".5", "digit before the point"),
            ("$5", "not an amount"),
            ("1e3", "not an amount"),
            ("1,00", "not an amount"),
            (" 1", "not an amount"),
            ("1.2.3", "not an amount"),
            ("99999999999999999999999999999999", "too large"),
        ];
        for (input, expected) in cases {
            let err = parse_money(input).expect_err(input);
            assert!(err.contains(expected), "{input:?}: {err}");
        }
    }

    // --- limits ---

    #[test]
    fn limits_unknown_key() {
        check_problem(
            "[limits]\nmax_pendng = 5\n",
            "limits.max_pendng",
            "unknown key",
        );
    }

    #[test]
    fn limits_card_ttl_ceiling_and_minimum() {
        check_problem(
            "[limits]\ncard_ttl = \"20m\"\n",
            "limits.card_ttl",
            "20m is over the ceiling of 15m",
        );
        check_problem(
            "[limits]\ncard_ttl = \"901s\"\n",
            "limits.card_ttl",
            "901s is over the ceiling of 15m",
        );
        check_problem(
            "[limits]\ncard_ttl = \"59s\"\n",
            "limits.card_ttl",
            "59s is under the minimum of 1m",
        );
        assert_eq!(
            check_ok("[limits]\ncard_ttl = \"15m\"\n").limits.card_ttl,
            secs(900)
        );
        assert_eq!(
            check_ok("[limits]\ncard_ttl = \"900s\"\n").limits.card_ttl,
            secs(900)
        );
        assert_eq!(
            check_ok("[limits]\ncard_ttl = \"1m\"\n").limits.card_ttl,
            secs(60)
        );
    }

    #[test]
    fn limits_card_ttl_syntax_and_type() {
        check_problem(
            "[limits]\ncard_ttl = \"15\"\n",
            "limits.card_ttl",
            "\"15\" needs a unit (s, m or h), like \"15m\"",
        );
        check_problem(
            "[limits]\ncard_ttl = 15\n",
            "limits.card_ttl",
            "expected a string with a unit",
        );
    }

    #[test]
    fn limits_decline_memory_floor() {
        check_problem(
            "[limits]\ndecline_memory = \"12h\"\n",
            "limits.decline_memory",
            "12h is under the floor of 24h",
        );
        check_problem(
            "[limits]\ndecline_memory = \"86399s\"\n",
            "limits.decline_memory",
            "under the floor of 24h",
        );
        assert_eq!(
            check_ok("[limits]\ndecline_memory = \"24h\"\n")
                .limits
                .decline_memory,
            secs(86_400)
        );
        assert_eq!(
            check_ok("[limits]\ndecline_memory = \"72h\"\n")
                .limits
                .decline_memory,
            secs(259_200)
        );
    }

    #[test]
    fn limits_decline_streak_bounds() {
        check_problem(
            "[limits]\ndecline_streak = 4\n",
            "limits.decline_streak",
            "4 is over the ceiling of 3",
        );
        check_problem(
            "[limits]\ndecline_streak = 0\n",
            "limits.decline_streak",
            "0 is under the minimum of 1",
        );
        check_problem(
            "[limits]\ndecline_streak = \"3\"\n",
            "limits.decline_streak",
            "expected an integer",
        );
        assert_eq!(
            check_ok("[limits]\ndecline_streak = 1\n")
                .limits
                .decline_streak,
            1
        );
    }

    #[test]
    fn limits_mandate_max_days_bounds() {
        check_problem(
            "[limits]\nmandate_max_days = 8\n",
            "limits.mandate_max_days",
            "over the ceiling of 7",
        );
        check_problem(
            "[limits]\nmandate_max_days = 0\n",
            "limits.mandate_max_days",
            "under the minimum of 1",
        );
        assert_eq!(
            check_ok("[limits]\nmandate_max_days = 7\n")
                .limits
                .mandate_max_days,
            7
        );
    }

    #[test]
    fn limits_mandate_max_usd_per_day_ceiling_and_syntax() {
        let key = "limits.mandate_max_usd_per_day";
        check_problem(
            "[limits]\nmandate_max_usd_per_day = \"10.01\"\n",
            key,
            "10.01 is over the ceiling of 10.00",
        );
        check_problem(
            "[limits]\nmandate_max_usd_per_day = \"11\"\n",
            key,
            "over the ceiling of 10.00",
        );
        check_problem(
            "[limits]\nmandate_max_usd_per_day = \"10.001\"\n",
            key,
            "\"10.001\" has more than 2 decimal places",
        );
        check_problem(
            "[limits]\nmandate_max_usd_per_day = 10.0\n",
            key,
            "expected a string amount",
        );
        let l = check_ok("[limits]\nmandate_max_usd_per_day = \"10.00\"\n").limits;
        assert_eq!(l.mandate_max_usd_per_day, Decimal::new(10, 0));
        let l = check_ok("[limits]\nmandate_max_usd_per_day = \"0\"\n").limits;
        assert_eq!(l.mandate_max_usd_per_day, Decimal::ZERO);
    }

    #[test]
    fn limits_mandate_max_actions_per_day_bounds() {
        let key = "limits.mandate_max_actions_per_day";
        check_problem(
            "[limits]\nmandate_max_actions_per_day = 101\n",
            key,
            "over the ceiling of 100",
        );
        check_problem(
            "[limits]\nmandate_max_actions_per_day = 0\n",
            key,
            "under the minimum of 1",
        );
        let l = check_ok("[limits]\nmandate_max_actions_per_day = 100\n").limits;
        assert_eq!(l.mandate_max_actions_per_day, 100);
    }

    #[test]
    fn limits_max_pending_bounds() {
        check_problem(
            "[limits]\nmax_pending = 101\n",
            "limits.max_pending",
            "101 is over the ceiling of 100",
        );
        check_problem(
            "[limits]\nmax_pending = 0\n",
            "limits.max_pending",
            "under the minimum of 1",
        );
        check_problem(
            "[limits]\nmax_pending = -3\n",
            "limits.max_pending",
            "-3 is under the minimum of 1",
        );
        assert_eq!(
            check_ok("[limits]\nmax_pending = 100\n").limits.max_pending,
            100
        );
    }

    #[test]
    fn limits_max_text_chars_bounds() {
        check_problem(
            "[limits]\nmax_text_chars = 20001\n",
            "limits.max_text_chars",
            "over the ceiling of 20000",
        );
        check_problem(
            "[limits]\nmax_text_chars = 0\n",
            "limits.max_text_chars",
            "under the minimum of 1",
        );
        assert_eq!(
            check_ok("[limits]\nmax_text_chars = 20000\n")
                .limits
                .max_text_chars,
            20_000
        );
    }

    #[test]
    fn limits_max_attachments_bounds() {
        check_problem(
            "[limits]\nmax_attachments = 5\n",
            "limits.max_attachments",
            "over the ceiling of 4",
        );
        check_problem(
            "[limits]\nmax_attachments = -1\n",
            "limits.max_attachments",
            "under the minimum of 0",
        );
        assert_eq!(
            check_ok("[limits]\nmax_attachments = 0\n")
                .limits
                .max_attachments,
            0
        );
    }

    #[test]
    fn limits_max_attachment_bytes_bounds() {
        let key = "limits.max_attachment_bytes";
        check_problem(
            "[limits]\nmax_attachment_bytes = 20971521\n",
            key,
            "20971521 is over the ceiling of 20971520 (20 MiB)",
        );
        check_problem(
            "[limits]\nmax_attachment_bytes = 0\n",
            key,
            "under the minimum of 1",
        );
        assert_eq!(
            check_ok("[limits]\nmax_attachment_bytes = 1\n")
                .limits
                .max_attachment_bytes,
            1
        );
    }

    #[test]
    fn limits_max_request_bytes_bounds() {
        let key = "limits.max_request_bytes";
        check_problem(
            "[limits]\nmax_request_bytes = 33554433\n",
            key,
            "over the ceiling of 33554432 (32 MiB)",
        );
        check_problem(
            "[limits]\nmax_request_bytes = 1023\n",
            key,
            "1023 is under the minimum of 1024 (1 KiB)",
        );
        assert_eq!(
            check_ok("[limits]\nmax_request_bytes = 1024\n")
                .limits
                .max_request_bytes,
            1024
        );
        assert_eq!(
            check_ok("[limits]\nmax_request_bytes = 33554432\n")
                .limits
                .max_request_bytes,
            32 * MIB
        );
    }

    #[test]
    fn limits_decline_reason_wait_ceiling_zero_and_syntax() {
        let key = "limits.decline_reason_wait";
        check_problem(
            "[limits]\ndecline_reason_wait = \"11m\"\n",
            key,
            "11m is over the ceiling of 10m",
        );
        check_problem(
            "[limits]\ndecline_reason_wait = \"601s\"\n",
            key,
            "601s is over the ceiling of 10m",
        );
        check_problem(
            "[limits]\ndecline_reason_wait = \"60\"\n",
            key,
            "needs a unit (s, m or h), like \"60m\", or \"0s\" for no wait",
        );
        check_problem(
            "[limits]\ndecline_reason_wait = 60\n",
            key,
            "expected a string with a unit, like \"60s\", or \"0s\" for none",
        );
        check_problem("[limits]\ndecline_reason_wait = \"00s\"\n", key, "is zero");
        for zero in ["0", "0s", "0m", "0h"] {
            let snippet = format!("[limits]\ndecline_reason_wait = \"{zero}\"\n");
            assert_eq!(check_ok(&snippet).limits.decline_reason_wait, secs(0));
        }
        let lowered = check_ok("[limits]\ndecline_reason_wait = \"90s\"\n");
        assert_eq!(lowered.limits.decline_reason_wait, secs(90));
        let ceiling = check_ok("[limits]\ndecline_reason_wait = \"10m\"\n");
        assert_eq!(ceiling.limits.decline_reason_wait, secs(600));
    }

    // --- gate ---

    #[test]
    fn gate_unknown_key() {
        check_problem("[gate]\nquiet = \"off\"\n", "gate.quiet", "unknown key");
    }

    #[test]
    fn gate_quiet_hours_format() {
        let key = "gate.quiet_hours";
        check_problem("[gate]\nquiet_hours = \"23:00\"\n", key, "not a time range");
        check_problem(
            "[gate]\nquiet_hours = \"23:00-8:00\"\n",
            key,
            "\"8:00\" is not a time of day",
        );
        check_problem(
            "[gate]\nquiet_hours = \"24:00-08:00\"\n",
            key,
            "\"24:00\" is not a time of day",
        );
        check_problem(
            "[gate]\nquiet_hours = \"23:60-08:00\"\n",
            key,
            "not a time of day",
        );
        check_problem(
            "[gate]\nquiet_hours = \"23:00 - 08:00\"\n",
            key,
            "not a time of day",
        );
        check_problem("[gate]\nquiet_hours = \"none\"\n", key, "or \"off\"");
        check_problem(
            "[gate]\nquiet_hours = \"08:00-08:00\"\n",
            key,
            "starts and ends at the same time",
        );
        check_problem("[gate]\nquiet_hours = false\n", key, "expected a string");
    }

    #[test]
    fn gate_quiet_hours_accepts_off_and_both_directions() {
        assert_eq!(
            check_ok("[gate]\nquiet_hours = \"off\"\n").gate.quiet_hours,
            None
        );
        assert_eq!(
            check_ok("[gate]\nquiet_hours = \"22:30-07:15\"\n")
                .gate
                .quiet_hours,
            Some((hm(22, 30), hm(7, 15)))
        );
        assert_eq!(
            check_ok("[gate]\nquiet_hours = \"00:00-06:00\"\n")
                .gate
                .quiet_hours,
            Some((hm(0, 0), hm(6, 0)))
        );
    }

    #[test]
    fn gate_summary_at_is_hh_mm() {
        check_problem(
            "[gate]\nsummary_at = \"9pm\"\n",
            "gate.summary_at",
            "use HH:MM",
        );
        check_problem(
            "[gate]\nsummary_at = \"21:00:00\"\n",
            "gate.summary_at",
            "use HH:MM",
        );
        assert_eq!(
            check_ok("[gate]\nsummary_at = \"23:59\"\n").gate.summary_at,
            hm(23, 59)
        );
    }

    #[test]
    fn gate_night_card_limit_range() {
        check_problem(
            "[gate]\nnight_card_limit = 101\n",
            "gate.night_card_limit",
            "use 0 to 100",
        );
        check_problem(
            "[gate]\nnight_card_limit = -1\n",
            "gate.night_card_limit",
            "use 0 to 100",
        );
        assert_eq!(
            check_ok("[gate]\nnight_card_limit = 0\n")
                .gate
                .night_card_limit,
            0
        );
        assert_eq!(
            check_ok("[gate]\nnight_card_limit = 100\n")
                .gate
                .night_card_limit,
            100
        );
    }

    #[test]
    fn gate_receipts_each_or_summary() {
        check_problem(
            "[gate]\nreceipts = \"never\"\n",
            "gate.receipts",
            "\"never\" is not one of each or summary",
        );
        assert_eq!(
            check_ok("[gate]\nreceipts = \"summary\"\n").gate.receipts,
            Receipts::Summary
        );
    }

    // --- categories ---

    #[test]
    fn category_names_match_the_kind_rule() {
        let body = "label = { en = \"A\" }\nclass = \"external\"\ncommand = [\"/bin/true\"]\n";
        check_problem(
            &format!("[categories.Publish]\n{body}"),
            "categories.Publish",
            "not a valid category name",
        );
        check_problem(
            &format!("[categories.9lives]\n{body}"),
            "categories.9lives",
            "[a-z][a-z0-9_]{0,31}",
        );
        check_problem(
            &format!("[categories.publish-x]\n{body}"),
            "categories.publish-x",
            "not a valid",
        );
        check_problem(
            &format!("[categories.\"publish x\"]\n{body}"),
            "categories.\"publish x\"",
            "not a valid",
        );
        let long = "a".repeat(33);
        check_problem(
            &format!("[categories.{long}]\n{body}"),
            &format!("categories.{long}"),
            "not a valid",
        );
        let max = "a".repeat(32);
        assert!(check_ok(&format!("[categories.{max}]\n{body}"))
            .categories
            .contains_key(&max));
    }

    #[test]
    fn is_valid_kind_rule() {
        for ok in ["a", "publish_x", "x9", "a_b_c", &"z".repeat(32)] {
            assert!(is_valid_kind(ok), "{ok}");
        }
        for bad in ["", "_a", "9a", "A", "a-b", "a b", "é", &"z".repeat(33)] {
            assert!(!is_valid_kind(bad), "{bad}");
        }
    }

    #[test]
    fn categories_and_category_must_be_tables() {
        check_problem("categories = [1]\n", "categories", "expected a table");
        check_problem(
            "[categories]\npublish_x = \"on\"\n",
            "categories.publish_x",
            "expected a table",
        );
    }

    #[test]
    fn category_unknown_key() {
        check_category_problem(
            "shell = true\n",
            "categories.publish_x.shell",
            "unknown key",
        );
    }

    #[test]
    fn category_label_unknown_key() {
        check_category_problem(
            "label = { en = \"Post\", de = \"Posten\" }\n",
            "categories.publish_x.label.de",
            "unknown key (allowed: en, ru, pt)",
        );
    }

    #[test]
    fn category_label_en_is_required() {
        check_category_problem(
            "label = { ru = \"Пост в X\" }\n",
            "categories.publish_x.label",
            "an \"en\" label is required",
        );
        assert_problem(
            &problems_of(&[
                BASE,
                "[categories.x]\nclass = \"spend\"\ncommand = [\"/bin/true\"]\n",
            ]),
            "categories.x.label",
            "required",
        );
        check_category_problem(
            "label = \"Post to X\"\n",
            "categories.publish_x.label",
            "expected a table",
        );
    }

    #[test]
    fn category_labels_are_non_empty_single_lines() {
        check_category_problem(
            "label = { en = \"  \" }\n",
            "categories.publish_x.label.en",
            "must not be empty",
        );
        check_category_problem(
            "label = { en = \"Post\", pt = \"\" }\n",
            "categories.publish_x.label.pt",
            "must not be empty",
        );
        check_category_problem(
            "label = { en = \"Post\\nto X\" }\n",
            "categories.publish_x.label.en",
            "single line",
        );
        check_category_problem(
            "label = { en = 1 }\n",
            "categories.publish_x.label.en",
            "expected a string",
        );
    }

    #[test]
    fn category_label_falls_back_to_english() {
        let cat = category_ok("label = { en = \"Post to X\", pt = \"Post no X\" }\n");
        assert_eq!(cat.label(Language::Pt), "Post no X");
        assert_eq!(cat.label(Language::Ru), "Post to X");
        assert_eq!(cat.label(Language::En), "Post to X");
    }

    #[test]
    fn category_class_values_and_required() {
        check_category_problem(
            "class = \"risky\"\n",
            "categories.publish_x.class",
            "\"risky\" is not one of external, spend or destructive",
        );
        assert_problem(
            &problems_of(&[
                BASE,
                "[categories.x]\nlabel = { en = \"X\" }\ncommand = [\"/bin/true\"]\n",
            ]),
            "categories.x.class",
            "required",
        );
        assert_eq!(category_ok("class = \"spend\"\n").class, Class::Spend);
        assert_eq!(
            category_ok("class = \"destructive\"\n").class,
            Class::Destructive
        );
    }

    #[test]
    fn category_enabled_and_mandate_ok_are_booleans() {
        check_category_problem(
            "enabled = \"yes\"\n",
            "categories.publish_x.enabled",
            "expected a boolean",
        );
        check_category_problem(
            "mandate_ok = 1\n",
            "categories.publish_x.mandate_ok",
            "expected a boolean",
        );
        let cat = category_ok("enabled = true\nmandate_ok = true\n");
        assert!(cat.enabled && cat.mandate_ok);
    }

    #[test]
    fn destructive_category_can_never_be_mandate_ok() {
        let problems = problems_of(&[
            BASE,
            "[categories.wipe]\nlabel = { en = \"Wipe\" }\nclass = \"destructive\"\nmandate_ok = true\ncommand = [\"/bin/wipe\"]\n",
        ]);
        assert_problem(
            &problems,
            "categories.wipe.mandate_ok",
            "a destructive category can never be mandate_ok",
        );
        assert!(!category_ok("class = \"destructive\"\nmandate_ok = false\n").mandate_ok);
    }

    #[test]
    fn category_target_and_text_presence() {
        check_category_problem(
            "target = \"maybe\"\n",
            "categories.publish_x.target",
            "not one of required, optional or none",
        );
        check_category_problem(
            "text = true\n",
            "categories.publish_x.text",
            "expected a string",
        );
        let cat = category_ok("target = \"optional\"\ntext = \"required\"\n");
        assert_eq!(
            (cat.target, cat.text),
            (Presence::Optional, Presence::Required)
        );
    }

    #[test]
    fn category_field_labels_are_optional_and_per_language() {
        let cat = category_ok("fields = [\"reply_to\", \"lang\"]\n");
        assert_eq!(cat.field_label("reply_to", Language::Ru), "reply_to");
        let cat = category_ok(
            "fields = [\"reply_to\", \"lang\"]\n\
             [categories.publish_x.field_labels]\n\
             reply_to = { en = \"Reply to\", ru = \"Ответ на\", pt = \"Resposta a\" }\n\
             lang = { en = \"Language\" }\n",
        );
        assert_eq!(cat.field_label("reply_to", Language::En), "Reply to");
        assert_eq!(cat.field_label("reply_to", Language::Ru), "Ответ на");
        assert_eq!(cat.field_label("reply_to", Language::Pt), "Resposta a");
        // English when the language has none; the name when the field has none.
        assert_eq!(cat.field_label("lang", Language::Pt), "Language");
        assert_eq!(cat.field_label("other", Language::En), "other");
        assert_eq!(
            cat.field_labels_in(Language::Ru),
            BTreeMap::from([
                ("lang".to_owned(), "Language".to_owned()),
                ("reply_to".to_owned(), "Ответ на".to_owned()),
            ])
        );
    }

    #[test]
    fn category_field_labels_rules() {
        let fields = "fields = [\"reply_to\"]\n[categories.publish_x.field_labels]\n";
        check_category_problem(
            &format!("{fields}reply = {{ en = \"Reply\" }}\n"),
            "categories.publish_x.field_labels.reply",
            "\"reply\" is not one of this category's fields; the category's fields are reply_to",
        );
        check_category_problem(
            "[categories.publish_x.field_labels]\nreply_to = { en = \"Reply\" }\n",
            "categories.publish_x.field_labels.reply_to",
            "the category lists no fields",
        );
        check_category_problem(
            &format!("{fields}reply_to = {{ ru = \"Ответ\" }}\n"),
            "categories.publish_x.field_labels.reply_to",
            "an \"en\" label is required",
        );
        check_category_problem(
            &format!("{fields}reply_to = {{ en = \"Reply\", de = \"Antwort\" }}\n"),
            "categories.publish_x.field_labels.reply_to.de",
            "unknown key",
        );
        check_category_problem(
            &format!("{fields}reply_to = {{ en = \"Reply\\nto\" }}\n"),
            "categories.publish_x.field_labels.reply_to.en",
            "must be a single line",
        );
        check_category_problem(
            &format!("{fields}reply_to = \"Reply to\"\n"),
            "categories.publish_x.field_labels.reply_to",
            "expected a table",
        );
        check_category_problem(
            "fields = [\"reply_to\"]\nfield_labels = [\"Reply to\"]\n",
            "categories.publish_x.field_labels",
            "expected a table",
        );
    }

    #[test]
    fn category_fields_rules() {
        let key = "categories.publish_x.fields";
        check_category_problem(
            "fields = [\"Reply\"]\n",
            key,
            "fields[0] \"Reply\" is not a valid field name",
        );
        check_category_problem(
            "fields = [\"a\", \"a\"]\n",
            key,
            "\"a\" is listed more than once",
        );
        check_category_problem("fields = [\"cost_usd\"]\n", key, "envelope's own keys");
        check_category_problem("fields = [\"ok\", \"text\"]\n", key, "fields[1] \"text\"");
        check_category_problem(
            "fields = [1]\n",
            key,
            "fields[0]: expected a string, got an integer",
        );
        check_category_problem("fields = \"reply_to\"\n", key, "expected an array");
        assert_eq!(
            category_ok("fields = [\"reply_to\", \"quote_of\"]\n").fields,
            ["reply_to", "quote_of"]
        );
    }

    #[test]
    fn every_envelope_key_is_refused_as_a_field() {
        for k in ASK_KEYS {
            check_category_problem(
                &format!("fields = [\"{k}\"]\n"),
                "categories.publish_x.fields",
                "envelope",
            );
        }
    }

    #[test]
    fn category_attachments_up_to_the_limit() {
        let key = "categories.publish_x.attachments";
        check_category_problem(
            "attachments = 5\n",
            key,
            "5 is over limits.max_attachments (4)",
        );
        check_category_problem("attachments = -1\n", key, "negative");
        assert_problem(
            &problems_of(&[
                BASE,
                "[limits]\nmax_attachments = 2\n",
                CATEGORY,
                "[categories.publish_x]\nattachments = 3\n",
            ]),
            key,
            "3 is over limits.max_attachments (2)",
        );
        assert_eq!(category_ok("attachments = 4\n").attachments, 4);
    }

    #[test]
    fn category_cost_values() {
        let key = "categories.publish_x.cost";
        assert_eq!(category_ok("cost = \"none\"\n").cost, Cost::None);
        assert_eq!(category_ok("cost = \"request\"\n").cost, Cost::Request);
        assert_eq!(
            category_ok("cost = \"0.04\"\n").cost,
            Cost::Fixed(Decimal::new(4, 2))
        );
        check_category_problem(
            "cost = \"0.041\"\n",
            key,
            "\"0.041\" has more than 2 decimal places",
        );
        check_category_problem("cost = \"-1\"\n", key, "negative");
        for zero in ["0", "0.0", "0.00"] {
            check_category_problem(
                &format!("cost = \"{zero}\"\n"),
                key,
                &format!(
                    "\"{zero}\" is a fixed cost of zero; write cost = \"none\" for a kind that \
                     never costs"
                ),
            );
        }
        check_category_problem(
            "cost = \"free\"\n",
            key,
            "\"free\" is not none, request or an amount",
        );
        check_category_problem(
            "cost = 0.04\n",
            key,
            "expected a string: none, request or a fixed amount",
        );
    }

    #[test]
    fn category_command_rules() {
        let key = "categories.publish_x.command";
        check_category_problem(
            "command = [\"publish-x\"]\n",
            key,
            "command[0] must be an absolute path, got \"publish-x\"",
        );
        check_category_problem("command = []\n", key, "must not be empty");
        check_category_problem(
            "command = [\"/bin/x\", \"\"]\n",
            key,
            "command[1] must not be empty",
        );
        check_category_problem(
            "command = [\"/bin/x\", 3]\n",
            key,
            "command[1]: expected a string, got an integer",
        );
        check_category_problem("command = \"/bin/x --y\"\n", key, "expected an argv list");
        check_category_problem("command = [\"/bin/x\", \"a\\u0000b\"]\n", key, "NUL");
        assert_problem(
            &problems_of(&[
                BASE,
                "[categories.x]\nlabel = { en = \"X\" }\nclass = \"spend\"\n",
            ]),
            "categories.x.command",
            "required",
        );
        let cat = category_ok("command = [\"/usr/bin/env\", \"FOO=1\", \"x\"]\n");
        assert_eq!(cat.command, ["/usr/bin/env", "FOO=1", "x"]);
    }

    #[test]
    fn category_run_as_is_a_user_name() {
        let key = "categories.publish_x.run_as";
        check_category_problem("run_as = \"Consent IO\"\n", key, "not a valid user name");
        check_category_problem("run_as = \"1user\"\n", key, "not a valid user name");
        check_category_problem("run_as = \"\"\n", key, "not a valid user name");
        check_category_problem(
            &format!("run_as = \"{}\"\n", "u".repeat(33)),
            key,
            "not a valid user name",
        );
        check_category_problem("run_as = 1000\n", key, "expected a string");
        assert_eq!(
            category_ok("run_as = \"consent-io\"\n").run_as.as_deref(),
            Some("consent-io")
        );
        assert_eq!(
            category_ok("run_as = \"_svc\"\n").run_as.as_deref(),
            Some("_svc")
        );
    }

    #[test]
    fn category_env_file_is_absolute() {
        check_category_problem(
            "env_file = \"x.env\"\n",
            "categories.publish_x.env_file",
            "absolute path",
        );
        let cat = category_ok("env_file = \"/etc/consentd/x.env\"\n");
        assert_eq!(
            cat.env_file.as_deref(),
            Some(Path::new("/etc/consentd/x.env"))
        );
    }

    #[test]
    fn category_timeout_range() {
        let key = "categories.publish_x.timeout";
        check_category_problem("timeout = \"61m\"\n", key, "61m is over the maximum of 1h");
        check_category_problem("timeout = \"3601s\"\n", key, "over the maximum of 1h");
        check_category_problem("timeout = \"0s\"\n", key, "is zero");
        check_category_problem("timeout = \"60\"\n", key, "needs a unit");
        check_category_problem("timeout = 60\n", key, "expected a string with a unit");
        assert_eq!(category_ok("timeout = \"1h\"\n").timeout, secs(3600));
        assert_eq!(category_ok("timeout = \"1s\"\n").timeout, secs(1));
    }

    #[test]
    fn problems_in_two_categories_are_both_reported() {
        let problems = problems_of(&[
            BASE,
            "[categories.a]\nlabel = { en = \"A\" }\nclass = \"x\"\ncommand = [\"/a\"]\n\
             [categories.b]\nlabel = { en = \"B\" }\nclass = \"spend\"\ncommand = [\"b\"]\n",
        ]);
        assert_eq!(problems.len(), 2, "{}", render_problems(&problems));
        assert_problem(&problems, "categories.a.class", "not one of");
        assert_problem(&problems, "categories.b.command", "absolute path");
    }

    // --- enums and loading ---

    #[test]
    fn language_round_trips() {
        for lang in Language::ALL {
            assert_eq!(lang.as_str().parse::<Language>(), Ok(lang));
        }
        assert!("english".parse::<Language>().is_err());
        assert!(Language::En < Language::Ru && Language::Ru < Language::Pt);
        assert_eq!(Class::Destructive.as_str(), "destructive");
    }
}

#[cfg(test)]
mod doc_tests;
