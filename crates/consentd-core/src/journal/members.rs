//! A line's members between `ts` and `h`: what makes a line whose hash matches a
//! journal line and not some other text. The hash only says the line is as its writer made it;
//! a line is whole when, besides, `ts` is an RFC 3339 UTC time, `ev` follows it and names an
//! event, and the line is one compact JSON object whose keys appear once, as every reader takes
//! it to be (a key twice is read as either of its values, depending on the reader).

use std::borrow::Cow;

use chrono::DateTime;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};

const EV_KEY: &[u8] = b",\"ev\":\"";

/// Checks `members` (from `ts`'s value, its opening quote, up to the `h` member) and the whole
/// `line`, which is UTF-8 already and ends with `h` (and a seal) closing the object.
pub(super) fn check(line: &[u8], members: &[u8]) -> Result<(), &'static str> {
    let rest = members.strip_prefix(b"\"").ok_or("ts is not a string")?;
    let end = memchr::memchr(b'"', rest).ok_or("ts is not a string")?;
    let ts = std::str::from_utf8(&rest[..end]).map_err(|_| "ts is not UTF-8")?;
    let utc = DateTime::parse_from_rfc3339(ts)
        .is_ok_and(|t| t.offset().local_minus_utc() == 0 && ts.ends_with('Z'));
    if !utc {
        return Err("ts is not an RFC 3339 UTC time");
    }
    let after = rest[end + 1..]
        .strip_prefix(EV_KEY)
        .ok_or("ts is not followed by ev")?;
    let name_len = after
        .iter()
        .position(|&b| !(b.is_ascii_lowercase() || b == b'_'))
        .unwrap_or(after.len());
    if name_len == 0 || after.get(name_len) != Some(&b'"') {
        return Err("ev is not an event name");
    }
    if !compact(line) {
        return Err("is not compact JSON (white space between its members)");
    }
    let mut parser = serde_json::Deserializer::from_slice(line);
    parser
        .deserialize_map(UniqueKeys)
        .and_then(|()| parser.end())
        .map_err(|error| {
            if error.is_data() {
                "has a key twice"
            } else {
                "is not one JSON object"
            }
        })
}

/// No white space outside strings. Inside a string every byte up to its closing quote is its
/// own, a backslash escaping the next.
fn compact(json: &[u8]) -> bool {
    // Most lines hold no white space at all (a line feed never: it ends the line).
    if memchr::memchr3(b' ', b'\t', b'\r', json).is_none() {
        return true;
    }
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return false;
        }
    }
    true
}

/// Reads an object's members, refusing a key seen before; the values are skipped.
struct UniqueKeys;

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A line has a handful of keys: a scan of those seen is cheaper than a set. Borrowed
        // from the line unless a key holds an escape.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if keys.contains(&key) {
                return Err(serde::de::Error::custom("a key twice"));
            }
            keys.push(key);
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// A key, borrowed from the line where it can be.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = r#"{"n":2,"prev":"00","ts":"#;

    #[test]
    fn the_table_of_members() {
        let cases: [(&str, &str, Result<(), &str>); 11] = [
            (
                "a line",
                r#""2026-11-29T12:00:00.000Z","ev":"asked","id":"r_1""#,
                Ok(()),
            ),
            (
                "no members after ev",
                r#""2026-11-29T12:00:00.000Z","ev":"started""#,
                Ok(()),
            ),
            (
                "a string holding spaces and an escaped quote",
                r#""2026-11-29T12:00:00.000Z","ev":"asked","m":"a \" b""#,
                Ok(()),
            ),
            (
                "ts not a time",
                r#""yesterday","ev":"asked""#,
                Err("ts is not an RFC 3339 UTC time"),
            ),
            (
                "ts in another zone",
                r#""2026-11-29T15:00:00.000+03:00","ev":"asked""#,
                Err("ts is not an RFC 3339 UTC time"),
            ),
            (
                "ts a number",
                r#"1,"ev":"asked""#,
                Err("ts is not a string"),
            ),
            (
                "no ev",
                r#""2026-11-29T12:00:00.000Z""#,
                Err("ts is not followed by ev"),
            ),
            (
                "ev empty",
                r#""2026-11-29T12:00:00.000Z","ev":"""#,
                Err("ev is not an event name"),
            ),
            (
                "ev twice",
                r#""2026-11-29T12:00:00.000Z","ev":"asked","ev":"used""#,
                Err("has a key twice"),
            ),
            (
                "not compact",
                r#""2026-11-29T12:00:00.000Z","ev":"asked", "id":"r_1""#,
                Err("is not compact JSON (white space between its members)"),
            ),
            (
                "not JSON",
                r#""2026-11-29T12:00:00.000Z","ev":"asked"}}{{"#,
                Err("is not one JSON object"),
            ),
        ];
        for (name, members, expected) in cases {
            let line = format!("{PREFIX}{members},\"h\":\"00\"}}");
            assert_eq!(
                check(line.as_bytes(), members.as_bytes()),
                expected,
                "{name}"
            );
        }
    }
}
