//! docs/PROTOCOL.md against the record states, which the store has: each status with its
//! finality and the exit code the clients give it, and the example exchanges as requests the
//! parser takes, answered with known statuses and reasons (the rest of the document is held to
//! the code in consentd-core).

#[path = "../../consentd-core/src/protocol/doc_tables.rs"]
#[allow(dead_code)]
mod doc_tables;

use consentd_client::client::exit_code_for_record;
use consentd_store::RecordState;
use doc_tables::{rows, section, DOC};

use std::collections::BTreeSet;

use serde_json::Value;

use consentd_core::protocol::parse_request;
use consentd_core::refusal::Reason;

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
fn the_example_exchanges_speak_the_protocol() {
    let statuses: BTreeSet<&str> = RecordState::ALL
        .iter()
        .map(|s| s.as_str())
        .chain(["refused", "error", "ok"])
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
