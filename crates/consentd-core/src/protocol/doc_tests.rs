//! docs/PROTOCOL.md against the code: the keys each request takes and the reason codes are the
//! ones the code knows, no more and no fewer; its digest examples are what the daemon computes.

use std::collections::BTreeSet;

use rust_decimal::Decimal;
use serde_json::Value;

use super::{
    ASK_KEYS, ATTACHMENT_KEYS, KINDS_KEYS, LIST_KEYS, MANDATE_KEYS, RULE_KEYS, STATUS_KEYS,
    WITHDRAW_KEYS,
};
use crate::digest::{of_json, Sha256Hash};
use crate::mandate::MandateRequest;
use crate::refusal::Reason;

use super::doc_tables::{first_cells, rows, section, set};

#[test]
fn every_request_key_is_documented_and_nothing_else() {
    let ask = first_cells("### ask");
    let (attachment, top): (BTreeSet<String>, BTreeSet<String>) = ask
        .into_iter()
        .partition(|key| key.starts_with("attachments[i]."));
    assert_eq!(top, set(ASK_KEYS), "### ask");
    let attachment: BTreeSet<String> = attachment
        .iter()
        .map(|key| key.trim_start_matches("attachments[i].").to_owned())
        .collect();
    assert_eq!(attachment, set(ATTACHMENT_KEYS), "### ask, attachments");
    assert_eq!(first_cells("### mandate"), set(MANDATE_KEYS), "### mandate");
    assert_eq!(first_cells("### status"), set(STATUS_KEYS), "### status");
    assert_eq!(first_cells("### list"), set(LIST_KEYS), "### list");
    assert_eq!(first_cells("### kinds"), set(KINDS_KEYS), "### kinds");
    assert_eq!(
        first_cells("### withdraw"),
        set(WITHDRAW_KEYS),
        "### withdraw"
    );
    assert_eq!(first_cells("### rule"), set(RULE_KEYS), "### rule");
}

#[test]
fn every_reason_code_is_documented_and_nothing_else() {
    let mut documented: Vec<String> = rows(section("## Refusals"))
        .into_iter()
        .map(|(reason, _)| reason)
        .collect();
    let mut known: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    documented.sort_unstable();
    known.sort_unstable();
    assert_eq!(documented, known);
}

/// The `canonical:` and `sha256:` line pairs of the digest examples.
fn digest_examples() -> Vec<(&'static str, &'static str)> {
    let lines: Vec<&str> = section("## Digests").lines().collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let canonical = pair[0].strip_prefix("canonical: ")?;
            let sha256 = pair[1].strip_prefix("sha256:")?.trim();
            Some((canonical, sha256))
        })
        .collect()
}

fn string(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

#[test]
fn the_digest_examples_are_what_the_daemon_computes() {
    let examples = digest_examples();
    assert_eq!(examples.len(), 4, "two actions and two mandate requests");
    for (canonical, sha256) in examples {
        let value: Value = serde_json::from_str(canonical).unwrap();
        assert_eq!(
            Sha256Hash::of(canonical.as_bytes()).to_hex(),
            sha256,
            "{canonical}"
        );
        if value["op"] == "mandate" {
            let request = MandateRequest {
                kind: string(&value["kind"]).unwrap(),
                targets: serde_json::from_value(value["targets"].clone()).unwrap(),
                days: serde_json::from_value(value["days"].clone()).unwrap(),
                usd_per_day: value["usd_per_day"]
                    .as_str()
                    .map(|usd| usd.parse::<Decimal>().unwrap()),
                actions_per_day: serde_json::from_value(value["actions_per_day"].clone()).unwrap(),
                reason: string(&value["reason"]),
                origin: None,
            };
            assert_eq!(request.digest().to_hex(), sha256, "{canonical}");
        } else {
            assert_eq!(of_json(&value), (canonical.to_owned(), sha256.to_owned()));
        }
    }
}
