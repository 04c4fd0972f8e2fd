//! Times as the store writes them in its columns (RFC 3339, milliseconds, UTC) and reads them
//! back: the one place a stored time is written or parsed.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A time as the store writes it ([`timestamp`]) read back; `None` for anything else. The one
/// place a stored time is parsed.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

pub(super) fn since(now: DateTime<Utc>, span: Duration) -> String {
    let span = chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX);
    timestamp(
        now.checked_sub_signed(span)
            .unwrap_or(DateTime::<Utc>::MIN_UTC),
    )
}
