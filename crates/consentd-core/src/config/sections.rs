//! The small tables of the config: `[owner]`, `[telegram]`, `[paths]`, `[client]` and `[gate]`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use chrono_tz::Tz;
use toml::{Table, Value};

use super::syntax::not_a_time;
use super::walker::{join, type_name, Walker};
use super::{
    parse_hhmm, parse_quiet_hours, Client, Gate, JournalSection, Language, OwnerSection, Paths,
    Receipts, TelegramSection, CLIENT_KEYS, DEFAULT_SOCKET, GATE_KEYS, JOURNAL_FILE_NAME,
    JOURNAL_KEYS, MAX_SEAL_EPOCH, MIN_SEAL_EPOCH, NIGHT_CARD_LIMIT_MAX, OWNER_KEYS, PATHS_KEYS,
    TELEGRAM_KEYS,
};

pub(super) fn owner(w: &mut Walker, t: &Table) -> OwnerSection {
    let p = "owner";
    w.unknown_keys(t, p, OWNER_KEYS);
    let mut owner = OwnerSection::default();

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

pub(super) fn telegram(w: &mut Walker, t: &Table) -> TelegramSection {
    let p = "telegram";
    w.unknown_keys(t, p, TELEGRAM_KEYS);
    let mut telegram = TelegramSection {
        token_file: w.abs_path(t, p, "token_file"),
        ..TelegramSection::default()
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

pub(super) fn paths(w: &mut Walker, t: &Table) -> Option<Paths> {
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

pub(super) fn client(w: &mut Walker, t: &Table) -> Client {
    let p = "client";
    w.unknown_keys(t, p, CLIENT_KEYS);
    Client {
        allowed_uids: uid_list(w, t, p).unwrap_or_default(),
    }
}

/// `allowed_uids` of the table at `p` (`[client]` or a `[[listen]]`): each uid once, each a
/// u32; `None` when the key is missing or not an array.
pub(super) fn uid_list(w: &mut Walker, t: &Table, p: &str) -> Option<Vec<u32>> {
    let key = join(p, "allowed_uids");
    let mut uids = Vec::new();
    let items = w.array(t, p, "allowed_uids", "an array of uids (integers)")?;
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
    Some(uids)
}

pub(super) fn gate(w: &mut Walker, t: &Table) -> Gate {
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

/// `[journal]`: the sealing epoch, from one minute to a day.
pub(super) fn journal(w: &mut Walker, t: &Table) -> JournalSection {
    let p = "journal";
    w.unknown_keys(t, p, JOURNAL_KEYS);
    let mut journal = JournalSection::default();
    if let Some((d, raw)) = w.duration(t, p, "seal_epoch") {
        if !(MIN_SEAL_EPOCH..=MAX_SEAL_EPOCH).contains(&d) || d.as_secs() % 60 != 0 {
            w.report(
                join(p, "seal_epoch"),
                format!("{raw} is not whole minutes from 1m to 24h"),
            );
        } else {
            journal.seal_epoch = d;
        }
    }
    journal
}
