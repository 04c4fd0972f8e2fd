//! The store's withdraw, approval-only and ttl operations against a real SQLite file and journal: a withdraw
//! from each state, an approval-only yes, an ask's own deadline, and migration 0008 keeping every
//! record of a database made before it.

use std::collections::BTreeMap;
use std::time::Duration;

use rusqlite::{params, Connection};

use super::super::ask::{AskOutcome, AskPolicy, NewAsk};
use super::super::db::Db;
use super::super::state::RecordState;
use super::super::tests::{approve, t0, Fixture};
use super::super::transitions::StateChange;
use super::Withdrawal;
use consentd_core::action::Action;

/// The journal verifies; its events in order.
fn events(fixture: &Fixture) -> Vec<String> {
    fixture.journal_verifies();
    fixture.journal_events()
}

fn ask(text: &str, ttl: Option<u64>) -> NewAsk {
    let action = Action {
        kind: "shell".to_owned(),
        target: None,
        text: Some(text.to_owned()),
        fields: BTreeMap::new(),
        cost_usd: None,
        attachments: Vec::new(),
        origin: Some("Claude Code · ~/src/blog".to_owned()),
    };
    NewAsk {
        peer: crate::Peer::main(1000),
        digest: action.digest().to_hex(),
        action,
        idempotency_key: None,
        urgent: false,
        ttl: ttl.map(Duration::from_secs),
        agent_runs: true,
        hook: None,
        monotonic: crate::tests::monotonic(),
    }
}

fn policy() -> AskPolicy {
    AskPolicy {
        owner_known: true,
        card_chat: Some(42),
        decline_memory: Duration::from_secs(24 * 3600),
        max_pending: 20,
        max_pending_per_uid: 20,
        attachment_bytes_per_uid: 256 * 1024 * 1024,
        tz: chrono_tz::UTC,
        mandates_cover: false,
        mandate_day: crate::tests::spec_mandate_day(),
    }
}

fn created(db: &mut Db, text: &str, ttl: Option<u64>) -> String {
    match db.ask(&ask(text, ttl), policy(), t0()).unwrap() {
        AskOutcome::Created(record) => record.id,
        other => panic!("expected a new record, got {other:?}"),
    }
}

/// Moves `id` along the legal steps to `state` (as the loop would).
fn walk_to(db: &mut Db, id: &str, path: &[RecordState]) {
    for pair in path.windows(2) {
        db.transition(
            id,
            pair[0],
            pair[1],
            StateChange::default(),
            Vec::new(),
            t0(),
        )
        .unwrap();
    }
}

fn queued_cards(db: &Db, id: &str) -> i64 {
    db.connection()
        .query_row(
            "SELECT count(*) FROM outbox WHERE record_id = ?1 AND what = 'card' AND state = 'queued'",
            [id],
            |row| row.get(0),
        )
        .unwrap()
}

fn queued_edits(db: &Db, id: &str) -> i64 {
    db.connection()
        .query_row(
            "SELECT count(*) FROM outbox WHERE record_id = ?1 AND what = 'edit' AND state = 'queued'",
            [id],
            |row| row.get(0),
        )
        .unwrap()
}

#[test]
fn only_an_open_record_of_ones_own_is_withdrawn() {
    use RecordState::*;
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let cases: &[(&[RecordState], bool)] = &[
        (&[Pending], true),
        (&[Pending, CardShown], true),
        (&[Pending, CardShown, Granted], false),
        (&[Pending, CardShown, Granted, Running], false),
        (&[Pending, CardShown, Granted, Running, Executed], false),
        (&[Pending, CardShown, Declined], false),
        (&[Pending, CardShown, Expired], false),
        (&[Pending, CardShown, Approved], false),
        (&[Pending, Refused], false),
    ];
    for (index, (path, withdrawable)) in cases.iter().enumerate() {
        let id = created(&mut db, &format!("case {index}"), None);
        walk_to(&mut db, &id, path);
        let state = *path.last().unwrap();
        assert_eq!(
            db.withdraw(&id, &crate::Peer::main(1001), None, t0())
                .unwrap(),
            Withdrawal::NoRecord,
            "{state}: another peer's"
        );
        let edit = super::super::Outgoing::card_edit(
            42,
            &id,
            consentd_core::styled::Styled::plain("withdrawn"),
        );
        let outcome = db
            .withdraw(&id, &crate::Peer::main(1000), Some(&edit), t0())
            .unwrap();
        let edited = queued_edits(&db, &id) == 1;
        let now = db.record(&id).unwrap().unwrap();
        if *withdrawable {
            assert!(
                matches!(outcome, Withdrawal::Withdrawn(_)),
                "{state}: {outcome:?}"
            );
            assert!(
                edited,
                "{state}: the card's edit is queued in the transaction"
            );
            assert_eq!(now.state, Withdrawn);
            assert_eq!(queued_cards(&db, &id), 0, "{state}: no card left to send");
            let again = db
                .withdraw(&id, &crate::Peer::main(1000), None, t0())
                .unwrap();
            assert!(matches!(again, Withdrawal::AlreadyWithdrawn(_)), "{state}");
        } else {
            assert!(
                matches!(outcome, Withdrawal::NotWithdrawable(_)),
                "{state}: {outcome:?}"
            );
            assert!(!edited, "{state}");
            assert_eq!(now.state, state, "{state}: unchanged");
        }
    }
    let events = events(&fixture);
    assert_eq!(events.iter().filter(|e| *e == "withdrawn").count(), 2);
}

#[test]
fn an_approval_only_yes_ends_approved_and_cannot_be_claimed() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = created(&mut db, "cargo publish", None);
    walk_to(
        &mut db,
        &id,
        &[RecordState::Pending, RecordState::CardShown],
    );
    let record = approve(&mut db, &id, t0()).unwrap();
    assert_eq!(record.state, RecordState::Approved);
    assert_eq!(record.asked().unwrap().decided_by, Some(42));
    assert!(record.is_final());
    assert_eq!(
        record.asked().unwrap().origin.as_deref(),
        Some("Claude Code · ~/src/blog")
    );
    // No step leads on from approved: nothing can claim or run it.
    for to in RecordState::ALL {
        assert!(!RecordState::Approved.can_become(to), "approved -> {to}");
    }
    let raw = db.connection().execute(
        "UPDATE records SET state = 'running' WHERE id = ?1",
        params![id],
    );
    assert!(raw.is_err(), "the trigger refuses it too");
    // A second Yes finds nothing to approve.
    assert!(approve(&mut db, &id, t0()).is_err());
    assert_eq!(
        events(&fixture),
        ["started", "asked", "approved"],
        "the card's own opening is the sender's; here it was moved by hand"
    );
}

#[test]
fn a_pending_ask_past_its_own_ttl_expires_unshown() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let short = created(&mut db, "short", Some(60));
    let usual = created(&mut db, "usual", None);
    let record = db.record(&short).unwrap().unwrap();
    let asked = record.asked().unwrap();
    assert_eq!(asked.expires_at, Some(t0() + chrono::Duration::seconds(60)));
    assert_eq!(asked.shown_at, None);
    // Asked at `crate::tests::monotonic()`, 100 s into boot "test"; its ttl is 60 s on either
    // clock. (case, seconds on the wall clock from the ask, boot, seconds since that boot, due)
    let cases: [(&str, i64, &str, u64, bool); 6] = [
        ("59 s in on both", 59, "test", 159, false),
        ("60 s in on both", 60, "test", 160, true),
        (
            "wall stepped back 2 h, 61 s in",
            61 - 7_200,
            "test",
            161,
            true,
        ),
        (
            "wall stepped back 2 h, 30 s in",
            30 - 7_200,
            "test",
            130,
            false,
        ),
        ("wall 30 s in, monotonic 61 s in", 30, "test", 161, true),
        ("after a reboot, 61 s in by the wall", 61, "other", 5, true),
    ];
    for (name, wall, boot, since_boot, due) in cases {
        let now = consentd_core::deadline::Now {
            wall: t0() + chrono::Duration::seconds(wall),
            monotonic: consentd_core::clock::Monotonic {
                boot: boot.to_owned(),
                since_boot: Duration::from_secs(since_boot),
            },
        };
        // An ask without a ttl is never due unshown.
        let expected = if due { vec![short.clone()] } else { Vec::new() };
        assert_eq!(db.due_unshown(&now).unwrap(), expected, "{name}");
    }
    assert!(db
        .expire_unshown(&short, t0() + chrono::Duration::seconds(60))
        .unwrap());
    assert_eq!(
        db.record(&short).unwrap().unwrap().state,
        RecordState::Expired
    );
    assert_eq!(queued_cards(&db, &short), 0);
    assert_eq!(queued_cards(&db, &usual), 1);
    // Already ended: nothing more.
    assert!(!db.expire_unshown(&short, t0()).unwrap());
    assert_eq!(events(&fixture), ["started", "asked", "asked", "expired"]);
}

/// The schema as it was before 0008: migrations 1 to 7, applied by hand.
const BEFORE: [&str; 7] = [
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_telegram.sql"),
    include_str!("migrations/0003_mandates.sql"),
    include_str!("migrations/0004_gate.sql"),
    include_str!("migrations/0005_binding.sql"),
    include_str!("migrations/0006_mandate_use.sql"),
    include_str!("migrations/0007_decline_reason.sql"),
];

#[test]
fn migration_8_keeps_every_record_and_what_names_it() {
    let fixture = Fixture::new();
    {
        let conn = Connection::open(&fixture.db_path).unwrap();
        for sql in BEFORE {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "PRAGMA user_version = 7;
             PRAGMA foreign_keys = ON;
             INSERT INTO records (id, peer_uid, kind, digest, state, created_at, stderr,
                                  decline_reason)
                 VALUES ('r_old', 1000, 'publish_x', 'd1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1', 'card_shown',
                         '2026-11-29T11:00:00.000Z', 'err', 'because');
             INSERT INTO records (id, peer_uid, kind, digest, subject, state, created_at)
                 VALUES ('r_mandate', 1000, 'publish_x', 'd2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2', 'mandate', 'granted',
                         '2026-11-29T11:00:00.000Z');
             INSERT INTO mandates (id, kind, targets, days, usd_per_day, actions_per_day)
                 VALUES ('r_mandate', 'publish_x', '[]', 1, '0.00', 1);
             INSERT INTO attachments VALUES ('r_old', 0, 'a.png', 'image/png', 1, 'ab');
             INSERT INTO outbox (chat_id, what, record_id, created_at)
                 VALUES (42, 'card', 'r_old', '2026-11-29T11:00:00.000Z');
             INSERT INTO record_messages VALUES ('r_old', 'card', 7);",
        )
        .unwrap();
    }
    let mut db = fixture.open();
    let version: u32 = db
        .connection()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, crate::SCHEMA, "every migration ran");
    let old = db.record("r_old").unwrap().unwrap();
    assert_eq!(old.state, RecordState::CardShown);
    let action = old.action().expect("an action");
    assert_eq!(action.attachments.len(), 1, "its attachment still names it");
    assert_eq!(action.asked.decline_reason.as_deref(), Some("because"));
    assert_eq!(action.asked.origin, None);
    assert!(
        !action.agent_runs,
        "a record from before 0009 was asked of a category that runs"
    );
    assert_eq!(db.record_message_id("r_old", "card").unwrap(), Some(7));
    let mandate = db.record("r_mandate").unwrap().unwrap();
    assert!(
        mandate
            .mandate_request()
            .is_some_and(|request| request.row.is_some()),
        "its mandate's row still names it"
    );
    let foreign_keys: i64 = db
        .connection()
        .query_row("PRAGMA foreign_keys", [], |row| row.get(0))
        .unwrap();
    assert_eq!(foreign_keys, 1, "back on after the migrations");
    // The new states are taken, along the new steps only; a mandate request is never approved.
    let withdrawn = db
        .withdraw("r_old", &crate::Peer::main(1000), None, t0())
        .unwrap();
    assert!(matches!(withdrawn, Withdrawal::Withdrawn(_)));
    let approved = db.connection().execute(
        "UPDATE records SET state = 'approved' WHERE id = 'r_mandate'",
        [],
    );
    assert!(approved.is_err());
    let new_id = created(&mut db, "after the migration", None);
    let seq = |id: &str| db.record(id).unwrap().unwrap().seq;
    assert!(seq(&new_id) > seq("r_mandate"), "ids keep counting up");
}
