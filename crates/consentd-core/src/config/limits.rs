//! `[limits]` (docs/CONFIG.md): one rule table gives every limit its kind, its default, its bounds
//! and the words of its messages. `Limits::default`, the walk over the config and the mandate
//! ceilings ([`crate::mandate::Ceilings::spec`]) all read that table and nothing else.

use std::time::Duration;

use rust_decimal::Decimal;
use toml::Table;

use super::walker::{fmt_bytes, fmt_duration, join, Walker};
use super::{parse_duration, parse_money, KIB, MIB};

/// The validated `[limits]`. Each field is read through its row of [`RULES`].
#[derive(Debug, Clone)]
pub struct Limits {
    pub card_ttl: Duration,
    pub decline_memory: Duration,
    pub decline_streak: u32,
    pub mandate_max_days: u32,
    pub mandate_max_usd_per_day: Decimal,
    pub mandate_max_actions_per_day: u32,
    pub max_pending: u32,
    /// Open asks one peer uid may hold at once, its share of `max_pending`.
    pub max_pending_per_uid: u32,
    /// How long the attachment copies of a record that ran are kept; zero removes them at once.
    pub attachment_retention: Duration,
    /// Bytes of attachment copies one uid's open and retained records may hold together.
    pub attachment_bytes_per_uid: u64,
    pub max_text_chars: usize,
    pub max_attachments: usize,
    pub max_attachment_bytes: u64,
    pub max_request_bytes: u64,
    /// Request bytes all connections together may hold while they are read and handled.
    pub max_request_bytes_in_flight: u64,
    /// Connections one uid may hold open at once.
    pub max_connections_per_uid: usize,
    /// How long a No waits for the owner's reply with a reason before the session's final
    /// `declined` line goes without one; zero turns the wait (and the invitation) off.
    pub decline_reason_wait: Duration,
    /// Refused asks recorded one by one per peer uid and minute; the rest are counted
    /// ([`crate::refusal_budget`]).
    pub refusals_per_minute: u32,
    /// How long repeats of one refusal are counted under its record; zero for never.
    pub refusal_window: Duration,
    /// Asks are refused `disk_full` while the state directory's file system has less free.
    pub min_free_bytes: u64,
    /// Approvals of one kind and target within 7 days after which a mandate is suggested
    /// ([`crate::suggest`]); zero turns suggestions off.
    pub suggest_mandate_after: u32,
}

impl Default for Limits {
    /// Each rule's default: the ceiling itself, except where [`RULES`] says otherwise.
    fn default() -> Self {
        Limits::build(&mut Defaults)
    }
}

/// What a limit measures, which decides how the config writes it and how a bound is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitKind {
    /// A plain integer.
    Count,
    /// An integer of bytes, shown with its KiB or MiB.
    Bytes,
    /// A duration string (`"15m"`); the rule's numbers are seconds.
    Duration,
    /// A duration string, or zero (`"0s"`) to turn the feature off; the numbers are seconds.
    DurationOrOff,
    /// A string amount of dollars (`"10.00"`); the rule's numbers are cents.
    Money,
    /// Like `DurationOrOff`, in days too (`"7d"`); the numbers are seconds.
    Retention,
}

impl LimitKind {
    /// What a value of the wrong type is told it should have been.
    fn expected(self) -> &'static str {
        match self {
            LimitKind::Count | LimitKind::Bytes => "an integer",
            LimitKind::Duration => "a string with a unit, like \"15m\"",
            LimitKind::DurationOrOff => "a string with a unit, like \"60s\", or \"0s\" for none",
            LimitKind::Money => "a string amount like \"10.00\"",
            LimitKind::Retention => "a string with a unit, like \"7d\", or \"0s\" for none",
        }
    }

    /// A bound, in the kind's unit, as a message shows it.
    fn show(self, n: u64) -> String {
        match self {
            LimitKind::Count => n.to_string(),
            LimitKind::Bytes => fmt_bytes(n),
            LimitKind::Duration | LimitKind::DurationOrOff => fmt_duration(Duration::from_secs(n)),
            LimitKind::Money => cents(n).to_string(),
            LimitKind::Retention if n != 0 && n.is_multiple_of(DAY) => format!("{}d", n / DAY),
            LimitKind::Retention => fmt_duration(Duration::from_secs(n)),
        }
    }
}

/// How a lower bound is named: `decline_memory` has a floor the owner may raise from; the
/// others simply cannot go lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lower {
    Floor,
    Minimum,
}

impl Lower {
    fn word(self) -> &'static str {
        match self {
            Lower::Floor => "floor",
            Lower::Minimum => "minimum",
        }
    }
}

/// One limit: its key under `[limits]`, its kind, and its numbers in the kind's unit (a count,
/// bytes, seconds or cents).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LimitRule {
    pub(crate) key: &'static str,
    pub(crate) kind: LimitKind,
    pub(crate) default: u64,
    /// The lowest value allowed and its name; `None` leaves only the syntax's own (no zero
    /// duration, no negative amount).
    pub(crate) lower: Option<(u64, Lower)>,
    /// The highest value allowed (the built-in ceiling); `None` for no ceiling.
    pub(crate) ceiling: Option<u64>,
}

impl LimitRule {
    /// The ceiling as a count, for the mandate ceilings; a rule with none has no limit.
    pub(crate) const fn ceiling_count(&self) -> u32 {
        match self.ceiling {
            // Every count's ceiling is a small number; the cast cannot truncate.
            Some(n) => n as u32,
            None => u32::MAX,
        }
    }

    /// The ceiling as dollars, for the mandate ceilings; a money rule always has one.
    pub(crate) const fn ceiling_money(&self) -> Decimal {
        match self.ceiling {
            Some(n) => cents(n),
            None => Decimal::MAX,
        }
    }

    /// The message for `value` outside the bounds, quoting it as `written`; `unit` turns the
    /// rule's numbers into values of the same type.
    fn out_of_bounds<T: PartialOrd>(
        &self,
        value: T,
        written: &str,
        unit: impl Fn(u64) -> T,
    ) -> Option<String> {
        if let Some((min, lower)) = self.lower {
            if value < unit(min) {
                let (word, min) = (lower.word(), self.kind.show(min));
                return Some(format!("{written} is under the {word} of {min}"));
            }
        }
        let max = self.ceiling?;
        (value > unit(max))
            .then(|| format!("{written} is over the ceiling of {}", self.kind.show(max)))
    }
}

/// A day, in seconds.
const DAY: u64 = 24 * 3600;

const fn cents(n: u64) -> Decimal {
    // Every amount in the table is a few dollars; the cast cannot truncate.
    Decimal::from_parts(n as u32, 0, 0, false, 2)
}

use LimitKind::{Bytes, Count, DurationOrOff, Money};

pub(crate) const CARD_TTL: LimitRule = LimitRule {
    key: "card_ttl",
    kind: LimitKind::Duration,
    default: 15 * 60,
    lower: Some((60, Lower::Minimum)),
    ceiling: Some(15 * 60),
};
pub(crate) const DECLINE_MEMORY: LimitRule = LimitRule {
    key: "decline_memory",
    kind: LimitKind::Duration,
    default: 24 * 3600,
    lower: Some((24 * 3600, Lower::Floor)),
    ceiling: None,
};
pub(crate) const DECLINE_STREAK: LimitRule = LimitRule {
    key: "decline_streak",
    kind: Count,
    default: 3,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(3),
};
pub(crate) const MANDATE_MAX_DAYS: LimitRule = LimitRule {
    key: "mandate_max_days",
    kind: Count,
    default: 7,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(7),
};
/// $10.00 a day.
pub(crate) const MANDATE_MAX_USD_PER_DAY: LimitRule = LimitRule {
    key: "mandate_max_usd_per_day",
    kind: Money,
    default: 1000,
    lower: None,
    ceiling: Some(1000),
};
pub(crate) const MANDATE_MAX_ACTIONS_PER_DAY: LimitRule = LimitRule {
    key: "mandate_max_actions_per_day",
    kind: Count,
    default: 100,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(100),
};
/// The default is far below the ceiling: 100 open asks are more than one owner should face.
pub(crate) const MAX_PENDING: LimitRule = LimitRule {
    key: "max_pending",
    kind: Count,
    default: 20,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(100),
};
/// Half the default `max_pending`, so one session holding its whole share leaves as much to the
/// others. Never above `max_pending` (checked after the walk): unwritten, it is cut to it.
pub(crate) const MAX_PENDING_PER_UID: LimitRule = LimitRule {
    key: "max_pending_per_uid",
    kind: Count,
    default: 10,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(100),
};
/// A week to look back at what ran; a month at most, so copies of what ran cannot pile up.
pub(crate) const ATTACHMENT_RETENTION: LimitRule = LimitRule {
    key: "attachment_retention",
    kind: LimitKind::Retention,
    default: 7 * DAY,
    lower: None,
    ceiling: Some(30 * DAY),
};
/// A dozen of the largest attachments; 4 GiB at most, so one session cannot fill a disk alone.
pub(crate) const ATTACHMENT_BYTES_PER_UID: LimitRule = LimitRule {
    key: "attachment_bytes_per_uid",
    kind: Bytes,
    default: 256 * MIB,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(4 * 1024 * MIB),
};
pub(crate) const MAX_TEXT_CHARS: LimitRule = LimitRule {
    key: "max_text_chars",
    kind: Count,
    default: 20_000,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(20_000),
};
pub(crate) const MAX_ATTACHMENTS: LimitRule = LimitRule {
    key: "max_attachments",
    kind: Count,
    default: 4,
    lower: Some((0, Lower::Minimum)),
    ceiling: Some(4),
};
pub(crate) const MAX_ATTACHMENT_BYTES: LimitRule = LimitRule {
    key: "max_attachment_bytes",
    kind: Bytes,
    default: 20 * MIB,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(20 * MIB),
};
pub(crate) const MAX_REQUEST_BYTES: LimitRule = LimitRule {
    key: "max_request_bytes",
    kind: Bytes,
    default: 32 * MIB,
    lower: Some((KIB, Lower::Minimum)),
    ceiling: Some(32 * MIB),
};
/// Two requests of the largest size at once: enough for an agent that sends big attachments
/// while another asks, and the daemon's memory stays bounded however many connect.
pub(crate) const MAX_REQUEST_BYTES_IN_FLIGHT: LimitRule = LimitRule {
    key: "max_request_bytes_in_flight",
    kind: Bytes,
    default: 64 * MIB,
    lower: Some((KIB, Lower::Minimum)),
    ceiling: Some(256 * MIB),
};
/// Far below the socket's 4,096 connections in all, so one uid holding its whole share
/// leaves room for every other; 64 is more than any agent waits on at once.
pub(crate) const MAX_CONNECTIONS_PER_UID: LimitRule = LimitRule {
    key: "max_connections_per_uid",
    kind: Count,
    default: 64,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(1024),
};
/// The session's final line waits this long for the owner's reason, and an agent blocked ten
/// minutes on a No is long enough.
pub(crate) const DECLINE_REASON_WAIT: LimitRule = LimitRule {
    key: "decline_reason_wait",
    kind: DurationOrOff,
    default: 60,
    lower: None,
    ceiling: Some(10 * 60),
};

/// A minute's burst of distinct refusals is recorded; beyond 100 a second, a flood would be
/// what the budget is there to stop.
pub(crate) const REFUSALS_PER_MINUTE: LimitRule = LimitRule {
    key: "refusals_per_minute",
    kind: Count,
    default: 60,
    lower: Some((1, Lower::Minimum)),
    ceiling: Some(6000),
};
/// A day of repeats under one record is the longest a count may wait for its line.
pub(crate) const REFUSAL_WINDOW: LimitRule = LimitRule {
    key: "refusal_window",
    kind: DurationOrOff,
    default: 60,
    lower: None,
    ceiling: Some(24 * 3600),
};
/// Room kept for the database and journal writes of work already accepted.
pub(crate) const MIN_FREE_BYTES: LimitRule = LimitRule {
    key: "min_free_bytes",
    kind: Bytes,
    default: 64 * MIB,
    lower: Some((0, Lower::Minimum)),
    ceiling: Some(64 * 1024 * MIB),
};

/// Three yeses to the same thing in a week is a habit worth a bounded mandate; a threshold
/// above a hundred would never be met by anyone who still reads the cards. Zero is off.
pub(crate) const SUGGEST_MANDATE_AFTER: LimitRule = LimitRule {
    key: "suggest_mandate_after",
    kind: Count,
    default: 3,
    lower: Some((0, Lower::Minimum)),
    ceiling: Some(100),
};

/// Every limit, in the order the walk reads them and reports their problems.
pub(crate) const RULES: [LimitRule; 21] = [
    CARD_TTL,
    DECLINE_MEMORY,
    DECLINE_STREAK,
    MANDATE_MAX_DAYS,
    MANDATE_MAX_USD_PER_DAY,
    MANDATE_MAX_ACTIONS_PER_DAY,
    MAX_PENDING,
    MAX_PENDING_PER_UID,
    ATTACHMENT_RETENTION,
    ATTACHMENT_BYTES_PER_UID,
    MAX_TEXT_CHARS,
    MAX_ATTACHMENTS,
    MAX_ATTACHMENT_BYTES,
    MAX_REQUEST_BYTES,
    MAX_REQUEST_BYTES_IN_FLIGHT,
    MAX_CONNECTIONS_PER_UID,
    DECLINE_REASON_WAIT,
    REFUSALS_PER_MINUTE,
    REFUSAL_WINDOW,
    MIN_FREE_BYTES,
    SUGGEST_MANDATE_AFTER,
];

/// The keys `[limits]` may hold: the table's, in its order.
pub(super) const LIMITS_KEYS: &[&str] = &{
    let mut keys = [""; RULES.len()];
    let mut i = 0;
    while i < RULES.len() {
        keys[i] = RULES[i].key;
        i += 1;
    }
    keys
};

/// Where [`Limits::build`] takes each value from, asked once per rule in the table's order.
trait Source {
    /// A `Count` or `Bytes` rule's value.
    fn number(&mut self, rule: &LimitRule) -> u64;
    /// A `Duration` or `DurationOrOff` rule's value.
    fn duration(&mut self, rule: &LimitRule) -> Duration;
    /// A `Money` rule's value.
    fn money(&mut self, rule: &LimitRule) -> Decimal;
}

impl Limits {
    /// The one place each field meets its rule.
    fn build(source: &mut impl Source) -> Limits {
        // The casts are of counts, each at most its ceiling (6000 at most): none can truncate.
        Limits {
            card_ttl: source.duration(&CARD_TTL),
            decline_memory: source.duration(&DECLINE_MEMORY),
            decline_streak: source.number(&DECLINE_STREAK) as u32,
            mandate_max_days: source.number(&MANDATE_MAX_DAYS) as u32,
            mandate_max_usd_per_day: source.money(&MANDATE_MAX_USD_PER_DAY),
            mandate_max_actions_per_day: source.number(&MANDATE_MAX_ACTIONS_PER_DAY) as u32,
            max_pending: source.number(&MAX_PENDING) as u32,
            max_pending_per_uid: source.number(&MAX_PENDING_PER_UID) as u32,
            attachment_retention: source.duration(&ATTACHMENT_RETENTION),
            attachment_bytes_per_uid: source.number(&ATTACHMENT_BYTES_PER_UID),
            max_text_chars: source.number(&MAX_TEXT_CHARS) as usize,
            max_attachments: source.number(&MAX_ATTACHMENTS) as usize,
            max_attachment_bytes: source.number(&MAX_ATTACHMENT_BYTES),
            max_request_bytes: source.number(&MAX_REQUEST_BYTES),
            max_request_bytes_in_flight: source.number(&MAX_REQUEST_BYTES_IN_FLIGHT),
            max_connections_per_uid: source.number(&MAX_CONNECTIONS_PER_UID) as usize,
            decline_reason_wait: source.duration(&DECLINE_REASON_WAIT),
            refusals_per_minute: source.number(&REFUSALS_PER_MINUTE) as u32,
            refusal_window: source.duration(&REFUSAL_WINDOW),
            min_free_bytes: source.number(&MIN_FREE_BYTES),
            suggest_mandate_after: source.number(&SUGGEST_MANDATE_AFTER) as u32,
        }
    }
}

/// Each rule's default.
struct Defaults;

impl Source for Defaults {
    fn number(&mut self, rule: &LimitRule) -> u64 {
        rule.default
    }

    fn duration(&mut self, rule: &LimitRule) -> Duration {
        Duration::from_secs(rule.default)
    }

    fn money(&mut self, rule: &LimitRule) -> Decimal {
        cents(rule.default)
    }
}

/// The config's `[limits]`: a value missing, of the wrong type or out of bounds is reported
/// (but for a missing one) and replaced by the default, so the walk goes on.
struct Written<'a> {
    walker: &'a mut Walker,
    table: &'a Table,
}

const SECTION: &str = "limits";

impl<'a> Written<'a> {
    fn string(&mut self, rule: &LimitRule) -> Option<&'a str> {
        let expected = rule.kind.expected();
        self.walker.string(self.table, SECTION, rule.key, expected)
    }

    fn report(&mut self, rule: &LimitRule, message: String) {
        self.walker.report(join(SECTION, rule.key), message);
    }
}

impl Source for Written<'_> {
    fn number(&mut self, rule: &LimitRule) -> u64 {
        let expected = rule.kind.expected();
        let Some(v) = self.walker.integer(self.table, SECTION, rule.key, expected) else {
            return rule.default;
        };
        let unit = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        match rule.out_of_bounds(v, &v.to_string(), unit) {
            Some(message) => {
                self.report(rule, message);
                rule.default
            }
            // Within bounds means at least the minimum, which is never negative.
            None => v.unsigned_abs(),
        }
    }

    fn duration(&mut self, rule: &LimitRule) -> Duration {
        let default = Duration::from_secs(rule.default);
        let off = matches!(rule.kind, LimitKind::DurationOrOff | LimitKind::Retention);
        let Some(raw) = self.string(rule) else {
            return default;
        };
        let (in_hours, written);
        written = raw;
        let raw = match raw.strip_suffix('d') {
            // Days, where the rule takes them: the same strict syntax, counted in hours.
            Some(days) if rule.kind == LimitKind::Retention && !days.ends_with(['s', 'm', 'h']) => {
                in_hours = match days.parse::<u64>() {
                    Ok(n) if !days.starts_with('0') || days == "0" => format!("{}h", n * 24),
                    _ => days.to_owned() + "d",
                };
                in_hours.as_str()
            }
            _ => raw,
        };
        // The strict duration syntax has no zero; where the feature can be off, zero is the
        // way to say so.
        if off && matches!(raw, "0" | "0s" | "0m" | "0h") {
            return Duration::ZERO;
        }
        let message = match parse_duration(raw) {
            Ok(value) => match rule.out_of_bounds(value, written, Duration::from_secs) {
                None => return value,
                Some(message) => message,
            },
            Err(message) if off => format!("{message}, or \"0s\" for no wait"),
            Err(message) => message,
        };
        self.report(rule, message);
        default
    }

    fn money(&mut self, rule: &LimitRule) -> Decimal {
        let Some(raw) = self.string(rule) else {
            return cents(rule.default);
        };
        let message = match parse_money(raw) {
            Ok(value) => match rule.out_of_bounds(value, raw, cents) {
                None => return value,
                Some(message) => message,
            },
            Err(message) => message,
        };
        self.report(rule, message);
        cents(rule.default)
    }
}

/// Reads `[limits]` from `table`, reporting every problem under its key.
pub(super) fn limits(walker: &mut Walker, table: &Table) -> Limits {
    walker.unknown_keys(table, SECTION, LIMITS_KEYS);
    let mut limits = Limits::build(&mut Written { walker, table });
    pending_share(walker, table, &mut limits);
    if limits.max_request_bytes_in_flight < limits.max_request_bytes {
        // A request the budget can never hold would be refused however idle the daemon is.
        walker.report(
            join(SECTION, MAX_REQUEST_BYTES_IN_FLIGHT.key),
            format!(
                "{} is below max_request_bytes ({}): one request of the largest size must fit",
                fmt_bytes(limits.max_request_bytes_in_flight),
                fmt_bytes(limits.max_request_bytes)
            ),
        );
    }
    limits
}

/// `max_pending_per_uid` is a share of `max_pending`: written above it, it is a config error;
/// left to its default, it is cut to `max_pending`, so a small `max_pending` alone stays valid.
fn pending_share(walker: &mut Walker, table: &Table, limits: &mut Limits) {
    if limits.max_pending_per_uid <= limits.max_pending {
        return;
    }
    if table.contains_key(MAX_PENDING_PER_UID.key) {
        walker.report(
            join(SECTION, MAX_PENDING_PER_UID.key),
            format!(
                "{} is above max_pending ({}): one uid's share cannot be more than all the open \
                 asks",
                limits.max_pending_per_uid, limits.max_pending
            ),
        );
    }
    limits.max_pending_per_uid = limits.max_pending;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records which rule `build` asks for, and through which method.
    #[derive(Default)]
    struct Asked(Vec<(&'static str, LimitKind)>);

    impl Asked {
        fn note(&mut self, rule: &LimitRule, kinds: &[LimitKind]) {
            assert!(kinds.contains(&rule.kind), "{} read as {kinds:?}", rule.key);
            self.0.push((rule.key, rule.kind));
        }
    }

    impl Source for Asked {
        fn number(&mut self, rule: &LimitRule) -> u64 {
            self.note(rule, &[Count, Bytes]);
            rule.default
        }

        fn duration(&mut self, rule: &LimitRule) -> Duration {
            self.note(
                rule,
                &[LimitKind::Duration, DurationOrOff, LimitKind::Retention],
            );
            Duration::from_secs(rule.default)
        }

        fn money(&mut self, rule: &LimitRule) -> Decimal {
            self.note(rule, &[Money]);
            cents(rule.default)
        }
    }

    #[test]
    fn build_reads_every_rule_once_in_the_table_order_by_its_kind() {
        let mut asked = Asked::default();
        Limits::build(&mut asked);
        let table: Vec<_> = RULES.iter().map(|rule| (rule.key, rule.kind)).collect();
        assert_eq!(asked.0, table);
    }

    #[test]
    fn every_default_is_within_its_bounds() {
        for rule in RULES {
            let within = rule.out_of_bounds(rule.default, "default", |n| n);
            assert_eq!(within, None, "{}", rule.key);
        }
    }
}
