//! Fuzz target: one socket frame through the request parser and then the refusal gate.
//!
//! Any bytes must come back as a request or a refusal without a panic, and a refusal must still
//! make a well-formed response line. What the gate lets through must hold what it promises: an
//! ask becomes an action the owner can see in full, within the limits, with a digest; a mandate
//! request becomes terms within every ceiling, with a digest. Nothing that passes carries a tag
//! character outside a flag Unicode recommends (England, Scotland, Wales), in any value an ask or
//! a mandate request carries.

#![no_main]

use std::sync::OnceLock;

use consentd_core::config::{self, Config};
use consentd_core::protocol::{self, Request, Response};
use consentd_core::refusal::{self, visible};
use libfuzzer_sys::fuzz_target;

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        config::parse(include_str!("../gate.toml"), "fuzz/gate.toml")
            .expect("the fuzz config is valid")
    })
}

/// The codes of the flags Unicode recommends (RGI_Emoji_Tag_Sequence): England, Scotland, Wales.
const RECOMMENDED_FLAGS: [&str; 3] = ["gbeng", "gbsct", "gbwls"];

/// Whether every tag character (the Tags block, U+E0000..E007F) in `value` is part of the tag
/// sequence of a recommended flag: U+1F3F4, the tag letters of "gbeng", "gbsct" or "gbwls", then
/// U+E007F. Restated here on the decoded ASCII, apart from the gate's own scan.
fn tags_only_in_flags(value: &str) -> bool {
    let scalars: Vec<char> = value.chars().collect();
    let is_tag = |c: char| ('\u{E0000}'..='\u{E007F}').contains(&c);
    let mut i = 0;
    while i < scalars.len() {
        if scalars[i] == '\u{1F3F4}' {
            let code: String = scalars[i + 1..]
                .iter()
                .take_while(|&&c| is_tag(c) && c != '\u{E007F}')
                .map(|&c| char::from_u32(u32::from(c) - 0xE0000).unwrap_or('\0'))
                .collect();
            let end = i + 1 + code.chars().count();
            if !code.is_empty() {
                let flag = RECOMMENDED_FLAGS.contains(&code.as_str())
                    && scalars.get(end) == Some(&'\u{E007F}');
                if !flag {
                    return false;
                }
                i = end + 1;
                continue;
            }
        }
        if is_tag(scalars[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether the category of `kind` is on, as the daemon starts with its switch.
fn switched_on(config: &Config, kind: &str) -> bool {
    config.categories.get(kind).is_some_and(|c| c.enabled)
}

fuzz_target!(|frame: &[u8]| {
    let config = config();
    let limits = &config.limits;
    let refusal = match protocol::parse_request(frame) {
        Err(rejection) => {
            // The daemon records a refused ask under its kind: only an ask may carry one.
            assert!(rejection.ask || rejection.kind.is_none());
            rejection.refusal
        }
        Ok(Request::Ask(ask)) => {
            let enabled = switched_on(config, &ask.kind);
            match refusal::check_ask(&ask, &config.categories, enabled, limits) {
                Err(refusal) => refusal,
                Ok(action) => {
                    assert_eq!(action.kind, ask.kind);
                    assert_eq!(action.text, ask.text);
                    assert_eq!(action.target, ask.target);
                    assert_eq!(action.fields, ask.fields);
                    let text_chars = action.text.as_deref().map_or(0, |t| t.chars().count());
                    assert!(text_chars <= limits.max_text_chars);
                    assert!(action.attachments.len() <= limits.max_attachments);
                    for attachment in &action.attachments {
                        assert!(!attachment.data.is_empty());
                        assert!(attachment.data.len() as u64 <= limits.max_attachment_bytes);
                    }
                    // The gate's Unicode verdict is what the card relies on: passing it twice
                    // must not change its mind.
                    if let Some(text) = &action.text {
                        assert!(visible::check_value(text, visible::FieldRef::Text, true).is_ok());
                    }
                    let values = action
                        .text
                        .iter()
                        .chain(&action.target)
                        .chain(action.fields.values())
                        .chain(action.attachments.iter().map(|a| &a.name))
                        .chain(&ask.idempotency_key);
                    for value in values {
                        assert!(tags_only_in_flags(value), "tags outside a flag: {value:?}");
                    }
                    assert_eq!(action.digest(), action.digest());
                    return;
                }
            }
        }
        Ok(Request::Mandate(ask)) => {
            let enabled = switched_on(config, &ask.kind);
            match refusal::check_mandate(&ask, &config.categories, enabled, limits) {
                Err(refusal) => refusal,
                Ok(terms) => {
                    assert_eq!(terms.kind, ask.kind);
                    assert!(terms.days >= 1 && terms.days <= limits.mandate_max_days);
                    // A money term, when there is one, is positive and within the ceiling.
                    if let Some(usd) = terms.usd_per_day {
                        assert!(usd > rust_decimal::Decimal::ZERO);
                        assert!(usd <= limits.mandate_max_usd_per_day);
                    }
                    assert!(
                        terms.actions_per_day >= 1
                            && terms.actions_per_day <= limits.mandate_max_actions_per_day
                    );
                    assert!(terms.targets.len() <= refusal::MAX_MANDATE_TARGETS);
                    for value in terms.targets.iter().chain(&terms.reason) {
                        assert!(tags_only_in_flags(value), "tags outside a flag: {value:?}");
                    }
                    assert_eq!(terms.digest(), terms.digest());
                    return;
                }
            }
        }
        // A hook's rule question is held to what an ask's `hook` is held to.
        Ok(Request::Rule(query)) => match consentd_core::exact::check_hook(&query.call) {
            Err(refusal) => refusal,
            Ok(()) => return,
        },
        // Reads and a withdraw carry nothing the gate checks.
        Ok(
            Request::Status { .. }
            | Request::List { .. }
            | Request::Kinds
            | Request::Withdraw { .. },
        ) => return,
    };
    assert!(!refusal.message.is_empty());
    assert_eq!(
        refusal::Reason::parse(refusal.reason.as_str()),
        Some(refusal.reason)
    );
    let line = Response::refused(None, &refusal).to_line();
    assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
    let back: serde_json::Value = serde_json::from_str(&line).expect("a refusal is one JSON line");
    assert_eq!(back["reason"], refusal.reason.as_str());
});
