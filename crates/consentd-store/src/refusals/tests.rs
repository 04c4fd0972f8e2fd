use std::time::Duration;

use consentd_core::reason::{Reason, Refusal};
use consentd_core::refusal_budget::BudgetPolicy;

use crate::tests::{t0, Fixture};
use crate::AskOutcome;

const POLICY: BudgetPolicy = BudgetPolicy {
    per_minute: 2,
    window: Duration::from_secs(60),
};

fn at(seconds: i64) -> chrono::DateTime<chrono::Utc> {
    t0() + chrono::Duration::seconds(seconds)
}

fn not_nfc(position: usize) -> Refusal {
    Refusal::new(
        Reason::NotNfc,
        format!("text is not in NFC (first non-NFC character at char {position})"),
    )
}

fn refused_rows(db: &crate::Db) -> i64 {
    db.connection()
        .query_row(
            "SELECT count(*) FROM records WHERE state = 'refused'",
            [],
            |row| row.get(0),
        )
        .unwrap()
}

/// The journal's lines as JSON, after `started`.
fn lines(fixture: &Fixture) -> Vec<serde_json::Value> {
    std::fs::read_to_string(&fixture.journal_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|line: &serde_json::Value| line["ev"] != "started")
        .collect()
}

#[test]
fn without_a_budget_every_refusal_is_recorded() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let ids: Vec<_> = (0..3)
        .map(|n| {
            db.refuse(
                &crate::Peer::main(1000),
                Some("k"),
                not_nfc(n),
                at(n as i64),
            )
            .unwrap()
        })
        .collect();
    assert!(ids.iter().all(Option::is_some));
    assert_eq!(refused_rows(&db), 3);
    assert_eq!(
        fixture.journal_events(),
        ["started", "denied", "denied", "denied"]
    );
}

#[test]
fn repeats_share_the_first_record_touch_no_file_and_are_counted_in_one_line() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.set_refusal_budget(POLICY);
    let first = db
        .refuse(&crate::Peer::main(1000), Some("k"), not_nfc(1), at(0))
        .unwrap();
    assert!(first.is_some());
    let head = db.journal_head();
    for n in 1..5 {
        let id = db
            .refuse(
                &crate::Peer::main(1000),
                Some("k"),
                not_nfc(n + 1),
                at(n as i64),
            )
            .unwrap();
        assert_eq!(id, first, "repeat {n}");
    }
    assert_eq!(db.journal_head(), head, "a repeat writes no line");
    assert_eq!(refused_rows(&db), 1);
    assert_eq!(
        db.flush_refusal_counts(at(59)).unwrap(),
        0,
        "the window is open"
    );
    assert_eq!(db.flush_refusal_counts(at(60)).unwrap(), 1);
    assert_eq!(db.flush_refusal_counts(at(61)).unwrap(), 0, "written once");
    let lines = lines(&fixture);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["ev"], "denied_repeats");
    assert_eq!(lines[1]["id"], first.unwrap().as_str());
    assert_eq!(lines[1]["uid"], 1000);
    assert_eq!(lines[1]["kind"], "k");
    assert_eq!(lines[1]["reason"], "not_nfc");
    assert_eq!(lines[1]["count"], 4);
    assert!(lines[1].get("message").is_none());
    fixture.journal_verifies();
}

#[test]
fn over_the_bucket_a_refusal_has_no_record_and_is_counted_at_stop() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.set_refusal_budget(POLICY);
    // Three keys at once; the bucket holds two.
    let reasons = [Reason::NotNfc, Reason::TooLarge, Reason::BadRequest];
    let ids: Vec<_> = reasons
        .iter()
        .map(|reason| {
            db.refuse(
                &crate::Peer::main(1000),
                None,
                Refusal::new(*reason, "m"),
                at(0),
            )
            .unwrap()
        })
        .collect();
    assert!(ids[0].is_some() && ids[1].is_some());
    assert_eq!(ids[2], None);
    assert_eq!(refused_rows(&db), 2);
    assert_eq!(db.drain_refusal_counts(at(1)).unwrap(), 1);
    let lines = lines(&fixture);
    let last = lines.last().unwrap();
    assert_eq!(last["ev"], "denied_repeats");
    assert!(
        last.get("id").is_none() && last.get("kind").is_none(),
        "{last}"
    );
    assert_eq!(last["reason"], "bad_request");
    assert_eq!(last["count"], 1);
}

#[test]
fn a_stateful_refusal_is_coalesced_too_and_its_due_line_goes_with_the_next_one() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.set_refusal_budget(POLICY);
    let ownerless = crate::AskPolicy {
        owner_known: false,
        ..crate::tests::policy()
    };
    let ask = crate::tests::new_ask("k", "t", None);
    let id = |outcome: AskOutcome| match outcome {
        AskOutcome::Refused { id, refusal } => {
            assert_eq!(refusal.reason, Reason::NoOwner);
            id
        }
        other => panic!("{other:?}"),
    };
    let first = id(db.ask(&ask, ownerless, at(0)).unwrap());
    assert!(first.is_some());
    assert_eq!(id(db.ask(&ask, ownerless, at(1)).unwrap()), first);
    // The window has ended: the next refusal is recorded anew, with the count's line before it.
    let again = id(db.ask(&ask, ownerless, at(61)).unwrap());
    assert!(again.is_some() && again != first);
    let events = fixture.journal_events();
    assert_eq!(events, ["started", "denied", "denied_repeats", "denied"]);
}

/// The evening summary gives the day's count of refused asks. With the budget on, the
/// repeats of a refusal are only counted in memory and in a `denied_repeats` line, and
/// `day_counts` counts records alone: a flood of ten refusals shows the owner one.
#[test]
fn the_days_refused_count_includes_the_counted_repeats() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.set_refusal_budget(POLICY);
    for n in 0..10 {
        db.refuse(
            &crate::Peer::main(1000),
            Some("k"),
            not_nfc(n),
            at(n as i64),
        )
        .unwrap();
    }
    // The window ends and its line is written, as the sweep does.
    db.flush_refusal_counts(at(120)).unwrap();
    let counts = db.day_counts(at(-3600), at(3600)).unwrap();
    assert_eq!(
        counts.refused, 10,
        "the owner's summary counts every refused ask"
    );
}
