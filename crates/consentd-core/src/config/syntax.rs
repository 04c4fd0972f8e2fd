//! The strict syntaxes the config shares with the socket protocol: a duration, an amount of
//! dollars, a kind name, and a time of day. Anything looser is refused rather than guessed at.

use std::time::Duration;

use chrono::NaiveTime;
use rust_decimal::Decimal;

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
pub(crate) fn parse_money(s: &str) -> Result<Decimal, String> {
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

pub(crate) fn parse_quiet_hours(s: &str) -> Result<Option<(NaiveTime, NaiveTime)>, String> {
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

pub(super) fn not_a_time(s: &str) -> String {
    format!("{s:?} is not a time of day; use HH:MM from 00:00 to 23:59")
}

/// Exactly `HH:MM`, 24-hour, two digits each: times in the config are read by
/// people, and one form means no two readings.
pub(crate) fn parse_hhmm(s: &str) -> Option<NaiveTime> {
    let b = s.as_bytes();
    if b.len() != 5 || b[2] != b':' {
        return None;
    }
    let digit = |i: usize| b[i].is_ascii_digit().then(|| u32::from(b[i] - b'0'));
    let hour = digit(0)? * 10 + digit(1)?;
    let minute = digit(3)? * 10 + digit(4)?;
    NaiveTime::from_hms_opt(hour, minute, 0)
}

pub(super) fn hm(hour: u32, minute: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(hour, minute, 0).unwrap_or(NaiveTime::MIN)
}
