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
//!
//! The parts: this file holds the typed values, the entry points and the walk's order;
//! `problems` what is wrong and where, `syntax` the strict syntaxes, `walker` the typed getters
//! and the words of messages, `sections` the small tables, `limits` the table of limit rules,
//! `categories` the categories, and `builtin` the built-in actions a category may run instead
//! of a command.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use chrono::NaiveTime;
use chrono_tz::Tz;
use rust_decimal::Decimal;
use toml::Table;

mod builtin;
mod categories;
pub(crate) mod limits;
mod listen;
mod problems;
mod sections;
mod syntax;
mod walker;

#[cfg(test)]
use crate::protocol::ASK_KEYS;
pub use builtin::{BuiltIn, EmailAction, HttpAction, HttpMethod, SmtpServer, SmtpTls};
use categories::categories;
use limits::limits;
pub(crate) use limits::Limits;
use listen::listeners;
pub use listen::MAX_LISTEN_ORIGIN_CHARS;
use problems::syntax_problem;
pub use problems::{ConfigError, ConfigProblem};
use sections::{client, gate, journal, owner, paths, telegram};
use syntax::hm;
pub use syntax::is_valid_kind;
pub use syntax::parse_duration;
pub(crate) use syntax::{parse_hhmm, parse_money, parse_quiet_hours};
use walker::Walker;

// The cases in `tests` and `doc_tests` reach into the parts.
#[cfg(test)]
use limits::LIMITS_KEYS;
#[cfg(test)]
use problems::{line_column, render_problems};
#[cfg(test)]
use std::{collections::BTreeSet, path::Path};
#[cfg(test)]
use toml::Value;

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
    "journal",
    "categories",
    "listen",
];
const OWNER_KEYS: &[&str] = &["telegram_id", "language", "timezone"];
const TELEGRAM_KEYS: &[&str] = &["token_file", "api_url"];
const PATHS_KEYS: &[&str] = &["state_dir", "journal", "socket"];
const CLIENT_KEYS: &[&str] = &["allowed_uids"];
const LISTEN_KEYS: &[&str] = &["socket", "origin", "allowed_uids"];
const GATE_KEYS: &[&str] = &["quiet_hours", "night_card_limit", "summary_at", "receipts"];
const JOURNAL_KEYS: &[&str] = &["seal_epoch"];
/// How long a sealing key lives by default (docs/adr/0004-journal-seals.md).
const DEFAULT_SEAL_EPOCH: Duration = Duration::from_secs(15 * 60);
/// The shortest epoch: each change costs a rename and three fsyncs.
const MIN_SEAL_EPOCH: Duration = Duration::from_secs(60);
/// The longest: a key kept a day is a day of lines a thief can rewrite.
const MAX_SEAL_EPOCH: Duration = Duration::from_secs(24 * 3600);
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
    "mode",
    "action",
    "url",
    "method",
    "headers_file",
    "smtp_url",
    "credentials_file",
    "from",
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
    pub owner: OwnerSection,
    pub telegram: TelegramSection,
    pub paths: Paths,
    pub client: Client,
    /// The labelled sockets (`[[listen]]`), in the config's order; origins and paths unique.
    pub listen: Vec<Listen>,
    pub limits: Limits,
    pub gate: Gate,
    pub journal: JournalSection,
    /// Keyed by category name (the request `kind`).
    pub categories: BTreeMap<String, Category>,
}

#[derive(Debug, Clone)]
pub struct OwnerSection {
    /// `None` until the owner pairs with the bot.
    pub telegram_id: Option<i64>,
    /// `None` means: use the owner's Telegram `language_code`, else English.
    pub language: Option<Language>,
    pub timezone: Tz,
}

impl Default for OwnerSection {
    fn default() -> Self {
        OwnerSection {
            telegram_id: None,
            language: None,
            timezone: Tz::UTC,
        }
    }
}

#[derive(Debug, Clone)]
pub struct TelegramSection {
    /// `None` means the token comes from `CONSENTD_BOT_TOKEN`.
    pub token_file: Option<PathBuf>,
    /// Base URL without a trailing slash, so callers can append `/bot…/method`.
    pub api_url: String,
}

impl Default for TelegramSection {
    fn default() -> Self {
        TelegramSection {
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

/// A labelled socket: asks through it are shown to the owner with its `origin`, and counted,
/// listed and remembered apart from the same uid's asks through any other socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub socket: PathBuf,
    pub origin: String,
    /// Peers allowed on this socket; empty allows any that can open it.
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

/// `[journal]`: how the journal is sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSection {
    /// How long each sealing key lives before it evolves and is erased; used by
    /// `consentd journal seal-init` and `rotate` (a family keeps the length it started with).
    pub seal_epoch: Duration,
}

impl Default for JournalSection {
    fn default() -> Self {
        JournalSection {
            seal_epoch: DEFAULT_SEAL_EPOCH,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Receipts {
    Each,
    Summary,
}

/// One kind of action the owner can be asked to approve.
#[derive(Debug, Clone)]
pub struct Category {
    pub name: String,
    /// Always holds `Language::En`.
    pub(crate) label: BTreeMap<Language, String>,
    pub class: Class,
    pub enabled: bool,
    pub mandate_ok: bool,
    pub(crate) target: Presence,
    pub(crate) text: Presence,
    pub(crate) fields: Vec<String>,
    /// Each field's label per language (`field_labels`), where the config gives one; a field
    /// without one is shown under its name.
    pub(crate) field_labels: BTreeMap<String, BTreeMap<Language, String>>,
    pub(crate) attachments: usize,
    pub(crate) cost: Cost,
    /// Whether consentd runs the action (`run`) or the agent does, once approved (`approve`).
    pub mode: Mode,
    /// The argv consentd runs; empty for an approve category, which has none, and for a
    /// category run by a built-in action.
    pub command: Vec<String>,
    /// The built-in action that runs the category instead of a command (`action`).
    pub action: Option<BuiltIn>,
    pub run_as: Option<String>,
    pub env_file: Option<PathBuf>,
    pub timeout: Duration,
}

/// Whether a kind is on: configured, and then as the owner last switched it in the chat, else as
/// the config's `enabled` says. A stored switch for a kind the config no longer has turns nothing
/// on: a Yes given before the kind was removed ends refused at its claim, instead of claimed with
/// no command to run, and an ask for it is refused as an unknown kind. One rule for the intake,
/// the consent loop and the preflight, so they never disagree about what is on.
pub fn category_enabled(category: Option<&Category>, switch: Option<bool>) -> bool {
    category.is_some_and(|category| switch.unwrap_or(category.enabled))
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
    pub(crate) fn field_label<'a>(&'a self, field: &'a str, lang: Language) -> &'a str {
        self.field_labels
            .get(field)
            .and_then(|labels| labels.get(&lang).or_else(|| labels.get(&Language::En)))
            .map_or(field, String::as_str)
    }

    /// Every field's label in `lang` (`Category::field_label`), by field name.
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

/// Who performs an approved action: consentd, by running the category's command, or the agent
/// itself (an approval-only category: a yes ends the record `approved` and nothing runs here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Mode {
    #[default]
    Run,
    Approve,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Approve => "approve",
        }
    }
}

/// Whether a request part (target, text) must, may or must not be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Presence {
    Required,
    Optional,
    None,
}

impl Presence {
    /// The word the config and the `kinds` answer use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Presence::Required => "required",
            Presence::Optional => "optional",
            Presence::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Cost {
    /// The action costs nothing; a request carrying `cost_usd` is refused.
    None,
    /// Each request states its own `cost_usd`.
    Request,
    /// Every action costs this many US dollars.
    Fixed(Decimal),
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
pub type MoreChecks<'a> = &'a mut dyn FnMut(
    &TelegramSection,
    &BTreeMap<String, Category>,
    Option<&Paths>,
) -> Vec<ConfigProblem>;

fn no_more_checks(
    _: &TelegramSection,
    _: &BTreeMap<String, Category>,
    _: Option<&Paths>,
) -> Vec<ConfigProblem> {
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

fn validate(root: &Table, more: MoreChecks<'_>) -> Result<Config, Vec<ConfigProblem>> {
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
    let s_journal = section("journal");

    let owner = owner(&mut w, s_owner);
    let telegram = telegram(&mut w, s_telegram);
    let paths = paths(&mut w, s_paths);
    let client = client(&mut w, s_client);
    let listen = listeners(&mut w, root, paths.as_ref().map(|p| p.socket.as_path()));
    let limits = limits(&mut w, s_limits);
    let gate = gate(&mut w, s_gate);
    let journal = journal(&mut w, s_journal);
    let categories = categories(&mut w, s_categories, limits.max_attachments);
    w.problems
        .extend(more(&telegram, &categories, paths.as_ref()));

    match paths {
        Some(paths) if w.problems.is_empty() => Ok(Config {
            owner,
            telegram,
            paths,
            client,
            listen,
            limits,
            gate,
            journal,
            categories,
        }),
        _ => Err(w.problems),
    }
}

#[cfg(test)]
mod doc_tests;
#[cfg(test)]
mod tests;
