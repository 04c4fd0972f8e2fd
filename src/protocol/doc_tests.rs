//! docs/PROTOCOL.md against the code: the keys each request takes, the statuses with their
//! finality and exit codes, and the reason codes are the ones the code knows, no more and no
//! fewer; its digest examples are what the daemon computes; its example exchanges are requests
//! the parser takes and answers with known statuses and reasons.

use std::collections::BTreeSet;

use rust_decimal::Decimal;
use serde_json::Value;

use super::{parse_request, ASK_KEYS, ATTACHMENT_KEYS, LIST_KEYS, MANDATE_KEYS, STATUS_KEYS};
use crate::client::exit_code_for_record;
use crate::digest::{of_json, Sha256Hash};
use crate::mandate::MandateRequest;
use crate::refusal::Reason;
use crate::store::RecordState;

const DOC: &str = include_str!("../../docs/PROTOCOL.md");

/// The text under `heading` (a whole line, `### ask`), up to the next heading of its level or
/// above.
fn section(heading: &str) -> &'static str {
    let level = heading.split(' ').next().unwrap_or_default();
    let start = DOC
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/PROTOCOL.md has no heading {heading:?}"))
        + heading.len()
        + 2;
    let rest = &DOC[start..];
    let end = (1..=level.len())
        .filter_map(|n| rest.find(&format!("\n{} ", "#".repeat(n))))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The table rows of a section whose first cell is one code span: that span and the other cells.
fn rows(section: &str) -> Vec<(String, Vec<String>)> {
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.strip_prefix('|')?.split('|').map(str::trim).collect();
            let first = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
            (!first.contains('`')).then(|| {
                let rest = cells[1..].iter().map(|c| (*c).to_owned()).collect();
                (first.to_owned(), rest)
            })
        })
        .collect()
}

fn first_cells(heading: &str) -> BTreeSet<String> {
    rows(section(heading))
        .into_iter()
        .map(|(first, _)| first)
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|key| (*key).to_owned()).collect()
}

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
}

#[test]
fn every_status_is_documented_with_its_finality_and_exit_code() {
    let rows = rows(section("## Statuses"));
    let mut documented: Vec<&str> = rows.iter().map(|(status, _)| status.as_str()).collect();
    let mut known: Vec<&str> = RecordState::ALL.iter().map(|s| s.as_str()).collect();
    documented.sort_unstable();
    known.sort_unstable();
    assert_eq!(documented, known);
    for (status, cells) in &rows {
        let state = RecordState::parse(status).unwrap();
        let (finality, exit) = (&cells[1], &cells[2]);
        let code = |is_final: bool| {
            exit_code_for_record(&serde_json::json!({"status": status, "final": is_final}))
        };
        if state == RecordState::Granted {
            // Final for a mandate request only.
            assert!(
                finality.contains("no") && finality.contains("yes"),
                "{status}"
            );
            assert_eq!(
                exit,
                &format!(
                    "{} for an action, {} for a mandate request",
                    code(false),
                    code(true)
                )
            );
        } else {
            let is_final = state.is_final();
            assert_eq!(finality, if is_final { "yes" } else { "no" }, "{status}");
            assert_eq!(exit, &code(is_final).to_string(), "{status}");
        }
    }
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
            };
            assert_eq!(request.digest().to_hex(), sha256, "{canonical}");
        } else {
            assert_eq!(of_json(&value), (canonical.to_owned(), sha256.to_owned()));
        }
    }
}

#[test]
fn the_example_exchanges_speak_the_protocol() {
    let statuses: BTreeSet<&str> = RecordState::ALL
        .iter()
        .map(|s| s.as_str())
        .chain(["refused", "error"])
        .collect();
    let (mut sent, mut answered) = (0, 0);
    // The reason the parser refuses the last request with, which its first answer must name.
    let mut refused: Option<Reason> = None;
    for line in DOC.lines() {
        if let Some(request) = line.strip_prefix("→ ") {
            // A line shortened with "…", or one that is not JSON at all, is parsed by nobody.
            if serde_json::from_str::<Value>(request).is_ok() {
                refused = parse_request(request.as_bytes())
                    .err()
                    .map(|rejection| rejection.refusal.reason);
                sent += 1;
            }
        } else if let Some(answer) = line.strip_prefix("← ") {
            let value: Value =
                serde_json::from_str(answer).unwrap_or_else(|e| panic!("{answer}: {e}"));
            assert_eq!(value["v"], 1, "{answer}");
            if let Some(status) = value.get("status") {
                assert!(statuses.contains(status.as_str().unwrap()), "{answer}");
            }
            if let Some(reason) = value.get("reason") {
                assert!(
                    Reason::parse(reason.as_str().unwrap()).is_some(),
                    "{answer}"
                );
            }
            if let Some(reason) = refused.take() {
                assert_eq!(value["status"], "refused", "{answer}");
                assert_eq!(value["reason"], reason.as_str(), "{answer}");
            }
            answered += 1;
        }
    }
    assert!(
        sent >= 15 && answered >= 25,
        "{sent} requests, {answered} answers"
    );
}
