//! The store's rules, tested against a real SQLite file and a real journal in a temp dir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::params;

use super::ask::{AskOutcome, AskPolicy, NewAsk};
use super::db::Db;
use super::state::RecordState;
use super::transitions::StateChange;
use super::{Store, StoreError};
use crate::journal;
use consentd_core::action::{Action, Attachment};
use consentd_core::reason::Reason;

pub(super) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
}

/// A database and a journal in a temp dir (the withdraw tests share it).
pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) db_path: PathBuf,
    pub(super) journal_path: PathBuf,
}

impl Fixture {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Fixture {
            db_path: dir.path().join("consentd.db"),
            journal_path: dir.path().join("decisions.jsonl"),
            _dir: dir,
        }
    }

    pub(super) fn open(&self) -> Db {
        Db::open(&self.db_path, &self.journal_path, t0()).unwrap().0
    }

    pub(super) fn journal_verifies(&self) -> consentd_core::journal::Head {
        match journal::verify_file(&self.journal_path, None).unwrap() {
            Ok(verified) => verified.head,
            Err(problem) => panic!("journal does not verify: {problem}"),
        }
    }

    pub(super) fn journal_events(&self) -> Vec<String> {
        std::fs::read_to_string(&self.journal_path)
            .unwrap()
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["ev"].as_str().unwrap().to_owned()
            })
            .collect()
    }
}

fn action(kind: &str, text: &str) -> Action {
    Action {
        kind: kind.to_owned(),
        target: Some("@someone".to_owned()),
        text: Some(text.to_owned()),
        fields: BTreeMap::new(),
        cost_usd: None,
        attachments: Vec::new(),
        origin: None,
    }
}

pub(super) fn new_ask(kind: &str, text: &str, key: Option<&str>) -> NewAsk {
    let action = action(kind, text);
    NewAsk {
        peer: crate::Peer::main(1000),
        digest: action.digest().to_hex(),
        action,
        idempotency_key: key.map(str::to_owned),
        urgent: false,
        agent_runs: false,
        hook: None,
        ttl: None,
        monotonic: monotonic(),
    }
}

/// The built-in ceilings on a mandate's day, which a config that lowers none of them has.
pub(super) fn spec_mandate_day() -> consentd_core::mandate::Usage {
    consentd_core::mandate::Usage {
        actions: 100,
        usd: rust_decimal::Decimal::new(1000, 2),
    }
}

pub(super) fn policy() -> AskPolicy {
    AskPolicy {
        owner_known: true,
        card_chat: None,
        decline_memory: Duration::from_secs(24 * 3600),
        max_pending: 20,
        max_pending_per_uid: 20,
        attachment_bytes_per_uid: 256 * 1024 * 1024,
        tz: chrono_tz::UTC,
        mandates_cover: true,
        mandate_day: crate::tests::spec_mandate_day(),
    }
}

fn created(outcome: AskOutcome) -> super::Record {
    match outcome {
        AskOutcome::Created(record) => record,
        other => panic!("expected a new record, got {other:?}"),
    }
}

fn refused_reason(outcome: AskOutcome) -> Reason {
    match outcome {
        AskOutcome::Refused { refusal, .. } => refusal.reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Inserts a record directly in `state`, bypassing the state machine (inserts are not guarded).
fn insert_in_state(db: &Db, id: &str, state: RecordState) {
    db.connection()
        .execute(
            "INSERT INTO records (id, peer_uid, kind, digest, state, created_at)
             VALUES (?1, 1000, 'k', ?3, ?2, '2026-11-29T12:00:00.000Z')",
            params![id, state.as_str(), "d".repeat(64)],
        )
        .unwrap();
}

fn state_of(db: &Db, id: &str) -> RecordState {
    db.record(id).unwrap().unwrap().state
}

#[test]
fn the_schema_and_the_code_agree_on_the_transitions() {
    let fixture = Fixture::new();
    let db = fixture.open();
    let mut statement = db
        .connection()
        .prepare("SELECT from_state, to_state FROM state_transitions")
        .unwrap();
    let mut in_schema: Vec<(RecordState, RecordState)> = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .unwrap()
        .map(|row| {
            let (from, to) = row.unwrap();
            (
                RecordState::parse(&from).unwrap(),
                RecordState::parse(&to).unwrap(),
            )
        })
        .collect();
    let mut in_code = RecordState::TRANSITIONS.to_vec();
    let key = |pair: &(RecordState, RecordState)| (pair.0.as_str(), pair.1.as_str());
    in_schema.sort_by_key(key);
    in_code.sort_by_key(key);
    assert_eq!(in_schema, in_code);
}

#[test]
fn every_illegal_transition_is_refused_by_the_code_and_by_the_database() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let mut cases = 0;
    for (index_from, from) in RecordState::ALL.into_iter().enumerate() {
        for (index_to, to) in RecordState::ALL.into_iter().enumerate() {
            if from == to || from.can_become(to) {
                continue;
            }
            cases += 1;
            let id = format!("r_illegal_{index_from}_{index_to}");
            insert_in_state(&db, &id, from);
            let result = db.transition(&id, from, to, StateChange::default(), Vec::new(), t0());
            assert!(
                matches!(result, Err(StoreError::IllegalTransition { .. })),
                "{from} -> {to} through the store: {result:?}"
            );
            let raw = db.connection().execute(
                "UPDATE records SET state = ?2 WHERE id = ?1",
                params![id, to.as_str()],
            );
            let message = raw
                .expect_err(&format!("{from} -> {to} through raw SQL"))
                .to_string();
            assert!(
                message.contains("illegal record state transition"),
                "{from} -> {to}: {message}"
            );
            assert_eq!(
                state_of(&db, &id),
                from,
                "{from} -> {to} left the record changed"
            );
        }
    }
    // 12 states, 18 legal steps, no self-steps: 132 - 18 illegal pairs.
    assert_eq!(cases, 114);
}

#[test]
fn every_legal_transition_is_one_compare_and_set() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    for (index, (from, to)) in RecordState::TRANSITIONS.into_iter().enumerate() {
        let id = format!("r_legal_{index}");
        insert_in_state(&db, &id, from);
        let record = db
            .transition(&id, from, to, StateChange::default(), Vec::new(), t0())
            .unwrap_or_else(|error| panic!("{from} -> {to}: {error}"));
        assert_eq!(record.state, to);
        // The same step again finds the record moved on: nothing to do, and it says so.
        let again = db.transition(&id, from, to, StateChange::default(), Vec::new(), t0());
        assert!(
            matches!(again, Err(StoreError::StateConflict { actual, .. }) if actual == to),
            "{from} -> {to} twice: {again:?}"
        );
    }
}

#[test]
fn a_transition_of_a_missing_record_is_missing() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let result = db.transition(
        "r_none",
        RecordState::Pending,
        RecordState::CardShown,
        StateChange::default(),
        Vec::new(),
        t0(),
    );
    assert!(matches!(result, Err(StoreError::Missing)), "{result:?}");
}

#[test]
fn an_ask_is_stored_pending_and_journaled_without_its_text() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let ask = new_ask("publish_x", "a secret text", None);
    let record = created(db.ask(&ask, policy(), t0()).unwrap());
    assert_eq!(record.state, RecordState::Pending);
    let action = record.action().expect("an action");
    assert_eq!(action.text.as_deref(), Some("a secret text"));
    assert_eq!(action.asked.digest.to_hex(), ask.digest);
    assert_eq!(fixture.journal_events(), ["started", "asked"]);
    let journal = std::fs::read_to_string(&fixture.journal_path).unwrap();
    assert!(!journal.contains("a secret text"));
    assert!(journal.contains(&ask.digest));
    fixture.journal_verifies();
}

#[test]
fn the_same_digest_joins_the_open_record() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = created(db.ask(&new_ask("k", "same", None), policy(), t0()).unwrap());
    match db.ask(&new_ask("k", "same", None), policy(), t0()).unwrap() {
        AskOutcome::Joined(record) => assert_eq!(record.id, first.id),
        other => panic!("expected to join, got {other:?}"),
    }
    let other = created(
        db.ask(&new_ask("k", "different", None), policy(), t0())
            .unwrap(),
    );
    assert_ne!(other.id, first.id);
}

#[test]
fn idempotency_keys_return_the_record_or_refuse_another_digest() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = created(
        db.ask(&new_ask("k", "one", Some("key-1")), policy(), t0())
            .unwrap(),
    );
    match db
        .ask(&new_ask("k", "one", Some("key-1")), policy(), t0())
        .unwrap()
    {
        AskOutcome::Existing(record) => assert_eq!(record.id, first.id),
        other => panic!("expected the existing record, got {other:?}"),
    }
    let conflict = db
        .ask(&new_ask("k", "two", Some("key-1")), policy(), t0())
        .unwrap();
    assert_eq!(refused_reason(conflict), Reason::IdentityConflict);
    // The key is the peer's own: another peer may use it for its own record.
    let mut other_peer = new_ask("k", "two", Some("key-1"));
    other_peer.peer = crate::Peer::main(1001);
    created(db.ask(&other_peer, policy(), t0()).unwrap());
}

/// An approval-only ask (the agent runs the action itself once it is approved) never joins an
/// open record: one yes would then approve two waiters, and the action would run twice. Each
/// gets its own card; an ask the daemon runs still joins.
#[test]
fn an_approval_only_ask_never_joins_an_open_record() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let agent_runs = || NewAsk {
        agent_runs: true,
        ..new_ask("k", "make deploy", None)
    };
    let first = created(db.ask(&agent_runs(), policy(), t0()).unwrap());
    let second = db.ask(&agent_runs(), policy(), t0()).unwrap();
    assert!(
        matches!(&second, AskOutcome::Created(record) if record.id != first.id),
        "a second approval-only ask of the same action: {second:?}"
    );
    let daemon_runs = created(db.ask(&new_ask("k", "one", None), policy(), t0()).unwrap());
    let joined = db.ask(&new_ask("k", "one", None), policy(), t0()).unwrap();
    assert!(
        matches!(&joined, AskOutcome::Joined(record) if record.id == daemon_runs.id),
        "{joined:?}"
    );
}

/// A key first used by an ask that joined an open record names that record from then on: asked
/// again with it, in any state the record has reached, the ask gets it back; with another
/// digest it is refused. Without this the key named nothing, and once the record ended the same
/// key made a new ask of the same action (run a second time under a mandate).
#[test]
fn a_key_that_joined_an_open_record_names_it_from_then_on() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = created(db.ask(&new_ask("k", "one", None), policy(), t0()).unwrap());
    let joined = db
        .ask(&new_ask("k", "one", Some("late-key")), policy(), t0())
        .unwrap();
    assert!(
        matches!(&joined, AskOutcome::Joined(record) if record.id == first.id),
        "{joined:?}"
    );
    db.card_showing(
        &first.id,
        t0() + chrono::Duration::minutes(15),
        t0(),
        &monotonic(),
    )
    .unwrap();
    grant(&mut db, &first.id, t0());
    let cases: [(&str, NewAsk, Option<Reason>); 3] = [
        (
            "the same action, the record granted since",
            new_ask("k", "one", Some("late-key")),
            None,
        ),
        (
            "another action with that key",
            new_ask("k", "two", Some("late-key")),
            Some(Reason::IdentityConflict),
        ),
        (
            "another peer's key of that name is its own",
            NewAsk {
                peer: crate::Peer::main(1001),
                ..new_ask("k", "one", Some("late-key"))
            },
            None,
        ),
    ];
    for (name, ask, refused) in cases {
        let outcome = db.ask(&ask, policy(), t0()).unwrap();
        match (refused, &outcome, ask.peer.uid) {
            (Some(reason), _, _) => assert_eq!(refused_reason(outcome), reason, "{name}"),
            (None, AskOutcome::Existing(record), 1000) => {
                assert_eq!(record.id, first.id, "{name}");
                assert_eq!(record.state, RecordState::Granted, "{name}");
            }
            (None, AskOutcome::Created(record), 1001) => assert_ne!(record.id, first.id, "{name}"),
            _ => panic!("{name}: {outcome:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_asks_with_one_idempotency_key_make_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, thread, _) = Store::open(dir.path(), &dir.path().join("j.jsonl"), t0()).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .ask(new_ask("k", "racing", Some("race")), policy(), t0())
                .await
                .unwrap()
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    let mut created_count = 0;
    for task in tasks {
        match task.await.unwrap() {
            AskOutcome::Created(record) => {
                created_count += 1;
                ids.insert(record.id);
            }
            AskOutcome::Existing(record) | AskOutcome::Joined(record) => {
                ids.insert(record.id);
            }
            AskOutcome::Refused { refusal, .. } => panic!("refused: {refusal:?}"),
            AskOutcome::Covered(record) => panic!("no mandate is open, yet {record:?} was covered"),
        }
    }
    assert_eq!(created_count, 1);
    assert_eq!(ids.len(), 1);
    let count: i64 = store
        .call(|db| {
            Ok(db
                .connection()
                .query_row("SELECT count(*) FROM records", [], |r| r.get(0))?)
        })
        .await
        .unwrap();
    assert_eq!(count, 1);
    store.close();
    thread.join();
}

fn show_card(db: &mut Db, id: &str) {
    db.transition(
        id,
        RecordState::Pending,
        RecordState::CardShown,
        StateChange::default(),
        Vec::new(),
        t0(),
    )
    .unwrap();
}

#[test]
fn a_no_is_remembered_by_digest_for_the_decline_memory() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let ask = new_ask("k", "declined text", None);
    let record = created(db.ask(&ask, policy(), t0()).unwrap());
    show_card(&mut db, &record.id);
    assert!(!decline(&mut db, &record.id, 3, t0()));
    let again = db
        .ask(&ask, policy(), t0() + chrono::Duration::hours(23))
        .unwrap();
    assert_eq!(refused_reason(again), Reason::DeclinedRecently);
    // Another text of the same kind is not declined.
    created(
        db.ask(&new_ask("k", "another text", None), policy(), t0())
            .unwrap(),
    );
    // After the memory, the same digest may be asked again.
    let later = t0() + chrono::Duration::hours(24) + chrono::Duration::seconds(1);
    created(db.ask(&ask, policy(), later).unwrap());
}

#[test]
fn the_decline_streak_silences_a_kind_and_a_yes_ends_it() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    for n in 1..=3 {
        let record = created(
            db.ask(&new_ask("k", &format!("t{n}"), None), policy(), t0())
                .unwrap(),
        );
        show_card(&mut db, &record.id);
        assert_eq!(
            decline(&mut db, &record.id, 3, t0()),
            n == 3,
            "no number {n}"
        );
    }
    let silenced = db.ask(&new_ask("k", "t4", None), policy(), t0()).unwrap();
    assert_eq!(refused_reason(silenced), Reason::KindSilenced);
    // Another kind is not silenced.
    created(
        db.ask(&new_ask("other", "t4", None), policy(), t0())
            .unwrap(),
    );
    // A day later the kind may ask again, and the silence that ran out ended the streak: it
    // takes three more no's, not one, to silence the kind again.
    let tomorrow = t0() + chrono::Duration::days(1) + chrono::Duration::seconds(1);
    for n in 1..=3 {
        let record = created(
            db.ask(
                &new_ask("k", &format!("again{n}"), None),
                policy(),
                tomorrow,
            )
            .unwrap(),
        );
        show_card(&mut db, &record.id);
        assert_eq!(
            decline(&mut db, &record.id, 3, tomorrow),
            n == 3,
            "no number {n} after the silence ran out"
        );
    }
    let tomorrow = tomorrow + chrono::Duration::days(1) + chrono::Duration::seconds(1);
    let record = created(
        db.ask(&new_ask("k", "t5", None), policy(), tomorrow)
            .unwrap(),
    );
    // A yes resets the streak: two more no's do not silence it.
    show_card(&mut db, &record.id);
    grant(&mut db, &record.id, tomorrow);
    for n in 6..=7 {
        let record = created(
            db.ask(&new_ask("k", &format!("t{n}"), None), policy(), tomorrow)
                .unwrap(),
        );
        show_card(&mut db, &record.id);
        assert!(!decline(&mut db, &record.id, 3, tomorrow));
    }
    created(
        db.ask(&new_ask("k", "t8", None), policy(), tomorrow)
            .unwrap(),
    );
    let events = fixture.journal_events();
    assert_eq!(events.iter().filter(|e| *e == "silenced").count(), 2);
    assert_eq!(events.iter().filter(|e| *e == "declined").count(), 8);
    fixture.journal_verifies();
}

#[test]
fn max_pending_bounds_the_open_asks() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let small = AskPolicy {
        max_pending: 3,
        ..policy()
    };
    for n in 0..3 {
        created(
            db.ask(&new_ask("k", &format!("t{n}"), None), small, t0())
                .unwrap(),
        );
    }
    let over = db.ask(&new_ask("k", "t3", None), small, t0()).unwrap();
    assert_eq!(refused_reason(over), Reason::TooManyPending);
    // The same digest as an open one still joins: it adds no card.
    assert!(matches!(
        db.ask(&new_ask("k", "t0", None), small, t0()).unwrap(),
        AskOutcome::Joined(_)
    ));
}

/// One uid at its share (`max_pending_per_uid`) is refused and told its share, while another
/// uid still has room; a mandate request is one of its open asks.
#[test]
fn a_uids_share_of_the_open_asks_leaves_room_for_another() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let shared = AskPolicy {
        max_pending: 4,
        max_pending_per_uid: 2,
        ..policy()
    };
    let of = |uid: u32, text: &str| NewAsk {
        peer: crate::Peer::main(uid),
        ..new_ask("k", text, None)
    };
    created(db.ask_mandate(&plain_mandate("k"), shared, t0()).unwrap());
    created(db.ask(&of(1000, "a1"), shared, t0()).unwrap());
    let over = db.ask(&of(1000, "a2"), shared, t0()).unwrap();
    let AskOutcome::Refused { refusal, .. } = over else {
        panic!("expected a refusal, got {over:?}");
    };
    assert_eq!(refusal.reason, Reason::TooManyPending);
    assert_eq!(
        refusal.message,
        "uid 1000 already has 2 asks waiting for the owner; its share is 2 \
         (max_pending_per_uid), so wait for one to end or withdraw one"
    );
    created(db.ask(&of(1001, "b1"), shared, t0()).unwrap());
    created(db.ask(&of(1001, "b2"), shared, t0()).unwrap());
    // All four slots are taken now: a third uid meets `max_pending` itself.
    let full = db.ask(&of(1002, "c1"), shared, t0()).unwrap();
    assert_eq!(refused_reason(full), Reason::TooManyPending);
}

/// Decline memory and a silence are per uid: uid 1000's no's never refuse uid 1001's asks, a
/// Resume lifts only the silence of the uid whose record started it, and a yes to one uid's
/// card leaves another uid's silence standing.
#[test]
fn declines_and_silences_are_each_uids_own() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let of = |uid: u32, text: &str| NewAsk {
        peer: crate::Peer::main(uid),
        ..new_ask("k", text, None)
    };
    let silence = |db: &mut Db, uid: u32| -> String {
        let mut last = String::new();
        for n in 0..3 {
            let record = created(
                db.ask(&of(uid, &format!("junk {uid} {n}")), policy(), t0())
                    .unwrap(),
            );
            show_card(db, &record.id);
            assert_eq!(
                decline(db, &record.id, 3, t0()),
                n == 2,
                "uid {uid}, no {n}"
            );
            last = record.id;
        }
        last
    };
    let by_a = silence(&mut db, 1000);
    let refused = db.ask(&of(1000, "more"), policy(), t0()).unwrap();
    assert_eq!(refused_reason(refused), Reason::KindSilenced);
    let refused = db.ask(&of(1000, "junk 1000 0"), policy(), t0()).unwrap();
    assert_eq!(refused_reason(refused), Reason::DeclinedRecently);
    // The same digest and the same kind from another uid: a card of its own.
    created(db.ask(&of(1001, "junk 1000 0"), policy(), t0()).unwrap());
    let by_b = silence(&mut db, 1001);
    assert_ne!(by_a, by_b);
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "k", t0()).unwrap(),
        Some(Some(by_a.clone()))
    );
    assert_eq!(
        db.silence_of(&crate::Peer::main(1001), "k", t0()).unwrap(),
        Some(Some(by_b.clone()))
    );
    // A's Resume lifts A's silence only.
    assert!(resume(&mut db, "k", &by_a, 1, t0()));
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "k", t0()).unwrap(),
        None
    );
    assert_eq!(
        db.silence_of(&crate::Peer::main(1001), "k", t0()).unwrap(),
        Some(Some(by_b.clone()))
    );
    assert!(!resume(&mut db, "k", &by_a, 2, t0()));
    created(db.ask(&of(1000, "more"), policy(), t0()).unwrap());
    let refused = db.ask(&of(1001, "more"), policy(), t0()).unwrap();
    assert_eq!(refused_reason(refused), Reason::KindSilenced);
    // A yes to A's card leaves B silenced.
    let open = created(db.ask(&of(1000, "good"), policy(), t0()).unwrap());
    show_card(&mut db, &open.id);
    grant(&mut db, &open.id, t0());
    assert_eq!(
        db.silence_of(&crate::Peer::main(1001), "k", t0()).unwrap(),
        Some(Some(by_b))
    );
    let journal = std::fs::read_to_string(&fixture.journal_path).unwrap();
    let silenced: Vec<_> = journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["ev"] == "silenced")
        .map(|event| event["uid"].as_u64())
        .collect();
    assert_eq!(silenced, [Some(1000), Some(1001)]);
}

/// Migration 20 gives each remembered no and each streak to the uid whose declined record it
/// came from; a streak no record explains is dropped.
#[test]
fn migration_20_gives_each_decline_and_streak_its_uid() {
    let fixture = Fixture::new();
    {
        let conn = rusqlite::Connection::open(&fixture.db_path).unwrap();
        for (_, sql) in super::migrate::MIGRATIONS.iter().filter(|(n, _)| *n <= 18) {
            conn.execute_batch(sql).unwrap();
        }
        let (d1, d2) = ("d1".repeat(32), "d2".repeat(32));
        conn.execute_batch(&format!(
            "PRAGMA user_version = 18;
             INSERT INTO records (id, peer_uid, kind, digest, state, created_at)
                 VALUES ('r_a', 1000, 'k', '{d1}', 'declined', '2026-11-29T11:00:00.000Z'),
                        ('r_b', 1001, 'k', '{d2}', 'declined', '2026-11-29T11:01:00.000Z'),
                        ('r_c', 1001, 'k', '{d1}', 'declined', '2026-11-29T11:02:00.000Z');
             INSERT INTO declines VALUES ('{d1}', '2026-11-29T11:02:00.000Z'),
                                         ('{d2}', '2026-11-29T11:01:00.000Z');
             INSERT INTO kind_streaks VALUES ('k', 3, '2026-11-30T11:00:00.000Z', 'r_a'),
                                             ('gone', 1, NULL, NULL);"
        ))
        .unwrap();
    }
    let db = fixture.open();
    let rows = |sql: &str| -> Vec<String> {
        let mut statement = db.connection().prepare(sql).unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        rows("SELECT peer_uid || ' ' || substr(digest, 1, 2) FROM declines ORDER BY 1"),
        ["1000 d1", "1001 d1", "1001 d2"]
    );
    assert_eq!(
        rows("SELECT peer_uid || ' ' || kind || ' ' || silenced_by FROM kind_streaks"),
        ["1000 k r_a"]
    );
}

/// `attachment_bytes_per_uid` bounds the bytes one uid's open and kept records hold: over it an
/// ask is refused `too_large` naming the limit, another uid still has its own, and bytes a
/// record no longer keeps (withdrawn) count no more.
#[test]
fn a_uids_attachment_bytes_are_bounded_and_its_own() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let small = AskPolicy {
        attachment_bytes_per_uid: 2048,
        ..policy()
    };
    let with = |uid: u32, text: &str| {
        let mut action = action("k", text);
        action.attachments = vec![consentd_core::action::Attachment::new(
            "a.bin".to_owned(),
            "application/octet-stream".to_owned(),
            vec![text.len() as u8; 1024],
        )];
        NewAsk {
            peer: crate::Peer::main(uid),
            digest: action.digest().to_hex(),
            action,
            ..new_ask("k", text, None)
        }
    };
    let first = created(db.ask(&with(1000, "one"), small, t0()).unwrap());
    created(db.ask(&with(1000, "two!"), small, t0()).unwrap());
    let over = db.ask(&with(1000, "three"), small, t0()).unwrap();
    let AskOutcome::Refused { refusal, .. } = over else {
        panic!("expected a refusal, got {over:?}");
    };
    assert_eq!(refusal.reason, Reason::TooLarge);
    assert_eq!(
        refusal.message,
        "uid 1000 holds 2048 bytes of attachments in open and kept asks; this ask's 1024 bytes \
         would pass limits.attachment_bytes_per_uid (2048)"
    );
    created(db.ask(&with(1001, "three"), small, t0()).unwrap());
    db.transition(
        &first.id,
        RecordState::Pending,
        RecordState::Withdrawn,
        StateChange::default(),
        Vec::new(),
        t0(),
    )
    .unwrap();
    created(db.ask(&with(1000, "three"), small, t0()).unwrap());
}

/// What SQLite plans for `sql` with `params` bound: one step a line.
pub(crate) fn query_plan(db: &Db, sql: &str, params: impl rusqlite::Params) -> Vec<String> {
    db.connection()
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(params, |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A mandate's day is counted at every ask it may cover: from the index alone, never a row.
#[test]
fn a_mandates_day_is_counted_from_its_index_alone() {
    let fixture = Fixture::new();
    let db = fixture.open();
    let plan = query_plan(
        &db,
        super::mandate_rows::USAGE_ON_DAY,
        params!["m_x", "2026-03-01", "2026-03-02"],
    );
    assert!(
        plan.iter()
            .any(|step| step.contains("USING COVERING INDEX records_by_mandate")),
        "{plan:?}"
    );
}

/// The day of all a kind's mandates is counted from indexes alone: the kind's mandates, then
/// each one's uses.
#[test]
fn a_kinds_mandate_day_is_counted_from_indexes_alone() {
    let fixture = Fixture::new();
    let db = fixture.open();
    let plans = [
        query_plan(
            &db,
            super::mandate_rows::KIND_USAGE_ON_DAY,
            params!["publish_x", "2026-03-01", "2026-03-02"],
        ),
        // So is its latest use, which tells a wall clock stepped back.
        query_plan(
            &db,
            super::mandate_rows::LATEST_KIND_USE,
            params!["publish_x"],
        ),
    ];
    for plan in plans {
        for index in [
            "INDEX mandates_by_kind",
            "COVERING INDEX records_by_mandate",
        ] {
            assert!(
                plan.iter().any(|step| step.contains(index)),
                "{index}: {plan:?}"
            );
        }
    }
}

/// The owner's list of open asks reads the open index, not every record ever made.
#[test]
fn open_records_are_listed_from_the_open_index() {
    let fixture = Fixture::new();
    let db = fixture.open();
    let plan = query_plan(&db, super::cards::OPEN_RECORDS_IN, params!["pending"]);
    assert!(
        plan.iter().any(|step| step.contains("records_open")),
        "{plan:?}"
    );
    // So do the sweep's looks for cards and asks past their time, every second.
    for sql in [super::cards::DUE_FOR_EXPIRY, super::withdraw::DUE_UNSHOWN] {
        let plan = query_plan(&db, sql, params![]);
        assert!(
            // A walk of the open index only: never of the whole table ("SCAN records").
            plan.iter().any(|step| step.contains("records_open"))
                && !plan.iter().any(|step| step == "SCAN records"),
            "{sql}: {plan:?}"
        );
    }
}

/// A runaway agent's refusals are records of its own; finding its open ask to join must not
/// walk them. The plan is checked rather than a timing: with `records_by_peer` the lookup is a
/// scan of the peer's whole history on the store's one thread.
#[test]
fn joining_an_open_ask_uses_the_open_index_not_the_peers_history() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let small = AskPolicy {
        max_pending: 1,
        ..policy()
    };
    for n in 0..200 {
        db.ask(&new_ask("k", &format!("t{n}"), None), small, t0())
            .unwrap();
    }
    for condition in [
        super::records::OPEN_BY_DIGEST,
        super::mandates::OPEN_REQUEST_BY_DIGEST,
    ] {
        let sql = super::records::record_where_sql(condition);
        let plan = query_plan(&db, &sql, params!["d", 1000, ""]);
        assert!(
            plan.iter().any(|step| step.contains("records_open")),
            "{condition}: {plan:?}"
        );
    }
    // And the lookup still finds the open ask to join.
    assert!(matches!(
        db.ask(&new_ask("k", "t0", None), small, t0()).unwrap(),
        AskOutcome::Joined(_)
    ));
}

#[test]
fn without_an_owner_asks_are_refused() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let ownerless = AskPolicy {
        owner_known: false,
        ..policy()
    };
    let outcome = db.ask(&new_ask("k", "t", None), ownerless, t0()).unwrap();
    assert_eq!(refused_reason(outcome), Reason::NoOwner);
    let events = fixture.journal_events();
    assert_eq!(events.last().map(String::as_str), Some("denied"));
}

#[test]
fn attachments_are_recorded_by_their_facts() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let mut ask = new_ask("k", "t", None);
    ask.action.attachments = vec![Attachment::new(
        "a.png".into(),
        "image/png".into(),
        vec![1, 2, 3],
    )];
    ask.digest = ask.action.digest().to_hex();
    let record = created(db.ask(&ask, policy(), t0()).unwrap());
    let attachments = &record.action().expect("an action").attachments;
    assert_eq!(attachments.len(), 1);
    assert_eq!(attachments[0].bytes, 3);
    assert_eq!(
        attachments[0].sha256,
        consentd_core::digest::Sha256Hash::of(&[1, 2, 3]).to_hex()
    );
}

#[test]
fn list_pages_newest_first_per_peer() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    for n in 0..5 {
        created(
            db.ask(&new_ask("k", &format!("t{n}"), None), policy(), t0())
                .unwrap(),
        );
    }
    let mut stranger = new_ask("k", "theirs", None);
    stranger.peer = crate::Peer::main(7);
    created(db.ask(&stranger, policy(), t0()).unwrap());
    let (page, next) = db.list(&crate::Peer::main(1000), None, 2).unwrap();
    assert_eq!(page.len(), 2);
    assert!(page[0].seq > page[1].seq);
    let (rest, end) = db.list(&crate::Peer::main(1000), next, 10).unwrap();
    assert_eq!(rest.len(), 3);
    assert_eq!(end, None);
    assert!(rest
        .iter()
        .chain(&page)
        .all(|record| record.peer_uid == 1000));
}

fn cut_last_line(path: &Path, keep_bytes_of_it: usize) {
    let text = std::fs::read(path).unwrap();
    let body = &text[..text.len() - 1];
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    std::fs::write(path, &text[..start + keep_bytes_of_it]).unwrap();
}

#[test]
fn lines_lost_after_the_commit_are_appended_at_the_next_start() {
    for keep in [0, 10] {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        created(db.ask(&new_ask("k", "t", None), policy(), t0()).unwrap());
        let whole = std::fs::read_to_string(&fixture.journal_path).unwrap();
        drop(db);
        // A crash after the commit, before (or in the middle of) appending the `asked` line.
        cut_last_line(&fixture.journal_path, keep);
        let (_db, report) = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap();
        assert_eq!(report.lines_recovered, 1, "keep {keep}");
        assert_eq!(report.torn_tail_cut_bytes, keep as u64, "keep {keep}");
        let now = std::fs::read_to_string(&fixture.journal_path).unwrap();
        assert!(
            now.starts_with(&whole),
            "keep {keep}: the recovered line differs"
        );
        assert_eq!(fixture.journal_events(), ["started", "asked", "started"]);
        let started = now.lines().last().unwrap();
        assert_eq!(
            started.contains("torn_tail_cut_bytes"),
            keep > 0,
            "{started}"
        );
        fixture.journal_verifies();
    }
}

#[test]
fn a_journal_missing_lines_the_store_wrote_stops_the_start() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    created(db.ask(&new_ask("k", "t1", None), policy(), t0()).unwrap());
    created(db.ask(&new_ask("k", "t2", None), policy(), t0()).unwrap());
    drop(db);
    // Lines 1..3 were written and their staged copies dropped; removing two is tampering.
    cut_last_line(&fixture.journal_path, 0);
    cut_last_line(&fixture.journal_path, 0);
    let error = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap_err();
    assert!(
        matches!(error, StoreError::JournalDisagrees { .. }),
        "{error}"
    );
    std::fs::write(&fixture.journal_path, "").unwrap();
    let error = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap_err();
    assert!(
        error.to_string().contains("the journal ends at line 0"),
        "{error}"
    );
}

#[test]
fn a_journal_from_elsewhere_stops_the_start() {
    let fixture = Fixture::new();
    drop(fixture.open());
    let other = Fixture::new();
    let mut db = other.open();
    created(db.ask(&new_ask("k", "t", None), policy(), t0()).unwrap());
    drop(db);
    std::fs::copy(&other.journal_path, &fixture.journal_path).unwrap();
    let error = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap_err();
    assert!(
        matches!(error, StoreError::JournalDisagrees { .. }),
        "{error}"
    );
}

#[test]
fn migrations_are_recorded_and_a_newer_schema_is_refused() {
    let fixture = Fixture::new();
    let db = fixture.open();
    let version: u32 = db
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, crate::SCHEMA, "every migration ran");
    let mode: String = db
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = db
        .connection()
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 2, "synchronous must be FULL");
    let fk: i64 = db
        .connection()
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    db.connection()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    drop(db);
    let error = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::TooNew {
                found: 99,
                latest: crate::SCHEMA
            }
        ),
        "{error}"
    );
}

#[test]
fn a_damaged_database_is_refused_at_start() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let roomy = AskPolicy {
        max_pending: 100,
        max_pending_per_uid: 100,
        ..policy()
    };
    for n in 0..50 {
        created(
            db.ask(
                &new_ask("k", &format!("text number {n}"), None),
                roomy,
                t0(),
            )
            .unwrap(),
        );
    }
    db.connection()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(db);
    let mut bytes = std::fs::read(&fixture.db_path).unwrap();
    // Page 2 onwards: overwrite the b-tree pages, keep the header so SQLite opens the file.
    for byte in bytes.iter_mut().skip(4096).take(8192) {
        *byte = 0xA5;
    }
    std::fs::write(&fixture.db_path, bytes).unwrap();
    let error = Db::open(&fixture.db_path, &fixture.journal_path, t0()).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(
            error,
            StoreError::Corrupt { .. } | StoreError::Sql(_) | StoreError::Migration { .. }
        ),
        "{message}"
    );
}

#[test]
fn another_peer_with_the_same_digest_gets_its_own_record() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let mine = created(db.ask(&new_ask("k", "same", None), policy(), t0()).unwrap());
    let mut theirs = new_ask("k", "same", None);
    theirs.peer = crate::Peer::main(2000);
    let other = created(db.ask(&theirs, policy(), t0()).unwrap());
    assert_ne!(
        mine.id, other.id,
        "a peer must not join another peer's record"
    );
}

#[test]
fn a_second_store_on_one_state_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");
    let (store, thread, _) = Store::open(dir.path(), &journal, t0()).unwrap();
    let second = Store::open(dir.path(), &journal, t0());
    assert!(
        matches!(second, Err(StoreError::Locked { .. })),
        "{second:?}"
    );
    store.close();
    thread.join();
    // Released with the first store: a restart takes it again.
    let (store, thread, _) = Store::open(dir.path(), &journal, t0()).unwrap();
    store.close();
    thread.join();
}

/// Opens a mandate on `@someone` for `kind` as the owner would: asked, shown, granted.
fn open_mandate(db: &mut Db, kind: &str, actions_per_day: u32, at: DateTime<Utc>) -> String {
    open_mandate_asked(db, kind, actions_per_day, (at, None))
}

/// [`open_mandate`], asked at `at` with the monotonic clock then, when it is given.
fn open_mandate_asked(
    db: &mut Db,
    kind: &str,
    actions_per_day: u32,
    (at, asked): (DateTime<Utc>, Option<consentd_core::clock::Monotonic>),
) -> String {
    let request = consentd_core::mandate::MandateRequest {
        kind: kind.to_owned(),
        targets: vec!["@someone".to_owned()],
        days: 7,
        usd_per_day: Some(rust_decimal::Decimal::new(1000, 2)),
        actions_per_day,
        reason: None,
        origin: None,
    };
    let new = super::NewMandate {
        peer: crate::Peer::main(1000),
        digest: request.digest().to_hex(),
        request,
        monotonic: asked,
    };
    let id = created(db.ask_mandate(&new, policy(), at).unwrap()).id;
    assert!(db
        .card_showing(&id, at + chrono::Duration::minutes(15), at, &monotonic())
        .unwrap());
    grant(db, &id, at);
    id
}

/// A seven-day mandate asked at `t0`, 100 s into boot "test": its term runs out on whichever
/// clock says so first, so a wall clock stepped back does not stretch it; after a reboot the
/// wall clock decides alone.
#[test]
fn a_mandates_term_runs_out_on_either_clock() {
    let week: u64 = 7 * 24 * 3600;
    // (case, seconds on the wall clock from t0, boot, seconds since that boot, covered)
    let cases: [(&str, i64, &str, u64, bool); 5] = [
        ("an hour in on both", 3_600, "test", 100 + 3_600, true),
        (
            "an hour in on the wall, a week on the monotonic",
            3_600,
            "test",
            100 + week,
            false,
        ),
        (
            "the wall stepped back 2 h, a week in",
            -7_200,
            "test",
            100 + week,
            false,
        ),
        (
            "a week in on the wall",
            week as i64,
            "test",
            100 + 3_600,
            false,
        ),
        (
            "after a reboot, an hour in on the wall",
            3_600,
            "other",
            5,
            true,
        ),
    ];
    for (name, wall, boot, since_boot, covered) in cases {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let mandate = open_mandate_asked(&mut db, "publish_x", 100, (t0(), Some(monotonic())));
        let now = consentd_core::deadline::Now {
            wall: t0() + chrono::Duration::seconds(wall),
            monotonic: consentd_core::clock::Monotonic {
                boot: boot.to_owned(),
                since_boot: std::time::Duration::from_secs(since_boot),
            },
        };
        assert_eq!(covered_at(&mut db, name, &now), covered, "{name}");
        // The sweep ends exactly the mandates that no longer cover.
        let ended = db
            .end_due_mandates(&now, &crate::mandates::MandateNotices::default())
            .unwrap();
        assert_eq!(ended, usize::from(!covered), "{name}");
        let row = crate::mandate_rows::mandate_row(db.connection(), &mandate)
            .unwrap()
            .unwrap();
        assert_eq!(row.ended_at.is_some(), !covered, "{name}");
    }
}

/// A mandate's days are the owner's local days on the wall clock, but a wall clock stepped back
/// before the mandate was granted must not find a fresh day there: each day before its opening
/// would otherwise hand out another day's actions (and dollars), so that within its term, now
/// bounded on the monotonic clock, an ask of one action a day runs as often as the clock is
/// stepped back a day. Coverage refuses a `now` before `opened_at` (`Term::BeforeOpened`).
#[test]
fn a_wall_clock_stepped_back_before_a_mandate_opened_finds_no_fresh_day() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    open_mandate_asked(&mut db, "publish_x", 1, (t0(), Some(monotonic())));
    // (case, seconds on the wall clock from t0, seconds on the monotonic one, covered)
    let cases: [(&str, i64, u64, bool); 4] = [
        ("an hour in: the day's one action", 3_600, 3_600, true),
        ("a minute later: the day's one is used", 3_660, 3_660, false),
        (
            "the wall clock stepped back a day",
            3_720 - 86_400,
            3_720,
            false,
        ),
        ("stepped back two days", 3_780 - 2 * 86_400, 3_780, false),
    ];
    for (name, wall, since, covered) in cases {
        let now = consentd_core::deadline::Now {
            wall: t0() + chrono::Duration::seconds(wall),
            monotonic: consentd_core::clock::Monotonic {
                since_boot: monotonic().since_boot + Duration::from_secs(since),
                ..monotonic()
            },
        };
        assert_eq!(covered_at(&mut db, name, &now), covered, "{name}");
    }
}

/// Whether an ask of `publish_x` with `text`, taken at `now` on both clocks, is covered.
fn covered_at(db: &mut Db, text: &str, now: &consentd_core::deadline::Now) -> bool {
    let ask = NewAsk {
        monotonic: now.monotonic.clone(),
        ..new_ask("publish_x", text, None)
    };
    let outcome = db.ask(&ask, policy(), now.wall).unwrap();
    matches!(outcome, AskOutcome::Covered(_))
}

/// The config's ceilings on a mandate's day bound all the open mandates of a kind together:
/// two granted for one kind (by one session or by two) do not add their days up. Each case is
/// the next ask of the day, in order.
#[test]
fn the_open_mandates_of_a_kind_share_the_days_ceilings() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    open_mandate(&mut db, "publish_x", 2, t0());
    open_mandate(&mut db, "publish_x", 2, t0());
    let three = AskPolicy {
        mandate_day: consentd_core::mandate::Usage {
            actions: 3,
            ..spec_mandate_day()
        },
        ..policy()
    };
    let cases = [
        ("the first mandate's first", true),
        ("the first mandate's second", true),
        ("the second mandate's first: three of the kind today", true),
        (
            "the second mandate has one left, but the kind's day is full",
            false,
        ),
    ];
    for (name, covered) in cases {
        let outcome = db
            .ask(&new_ask("publish_x", name, None), three, t0())
            .unwrap();
        assert_eq!(
            matches!(outcome, AskOutcome::Covered(_)),
            covered,
            "{name}: {outcome:?}"
        );
    }
    // Another kind's day is its own.
    open_mandate(&mut db, "other", 1, t0());
    assert!(matches!(
        db.ask(&new_ask("other", "another kind", None), three, t0())
            .unwrap(),
        AskOutcome::Covered(_)
    ));
}

#[test]
fn a_mandates_day_is_the_owners_local_day() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let moscow = AskPolicy {
        tz: chrono_tz::Europe::Moscow,
        ..policy()
    };
    open_mandate(&mut db, "publish_x", 1, t0());
    // 23:59:59 in Moscow (UTC+3), then midnight: two local days, one action each.
    let last_second = Utc.with_ymd_and_hms(2026, 11, 29, 20, 59, 59).unwrap();
    let midnight = Utc.with_ymd_and_hms(2026, 11, 29, 21, 0, 0).unwrap();
    let cases = [
        ("the day's one action", last_second, "before midnight", true),
        ("the next local day's", midnight, "at midnight", true),
        ("over that day's count", midnight, "just after", false),
    ];
    for (name, at, text, covered) in cases {
        // Time passes on the monotonic clock as on the wall one.
        let ask = NewAsk {
            monotonic: monotonic_at(at),
            ..new_ask("publish_x", text, None)
        };
        let outcome = db.ask(&ask, moscow, at).unwrap();
        assert_eq!(
            matches!(outcome, AskOutcome::Covered(_)),
            covered,
            "{name}: {outcome:?}"
        );
    }
    // The same instants in UTC fall on one day: the second ask would already be over.
    let fixture = Fixture::new();
    let mut db = fixture.open();
    open_mandate(&mut db, "publish_x", 1, t0());
    assert!(matches!(
        db.ask(&new_ask("publish_x", "a", None), policy(), last_second)
            .unwrap(),
        AskOutcome::Covered(_)
    ));
    assert!(matches!(
        db.ask(&new_ask("publish_x", "b", None), policy(), midnight)
            .unwrap(),
        AskOutcome::Created(_)
    ));
}

#[test]
fn a_covered_ask_is_claimed_in_the_transaction_that_counts_it() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let mandate = open_mandate(&mut db, "publish_x", 2, t0());
    let AskOutcome::Covered(record) = db
        .ask(&new_ask("publish_x", "x", None), policy(), t0())
        .unwrap()
    else {
        panic!("covered");
    };
    assert_eq!(record.state, RecordState::Running);
    assert_eq!(
        record
            .action()
            .and_then(|action| action.mandate_id.as_deref()),
        Some(mandate.as_str())
    );
    // The record handed back is the record as stored: the loop runs it without reading it again.
    assert_eq!(db.record(&record.id).unwrap().as_ref(), Some(&record));
    let events = fixture.journal_events();
    assert_eq!(events[events.len() - 3..], ["asked", "mandate_use", "used"]);
    // A mandate request is never claimed, by the code or by SQLite.
    let error = db
        .connection()
        .execute(
            "UPDATE records SET state = 'running' WHERE id = ?1",
            params![mandate],
        )
        .unwrap_err();
    assert!(error.to_string().contains("never run"), "{error}");
    fixture.journal_verifies();
}

#[test]
fn each_covered_ask_keeps_its_mandates_day_as_of_its_own_claim() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    open_mandate(&mut db, "publish_x", 10, t0());
    let mut ids = Vec::new();
    for (text, cost) in [("one", 10), ("two", 20), ("three", 30)] {
        let mut ask = new_ask("publish_x", text, None);
        ask.action.cost_usd = Some(rust_decimal::Decimal::new(cost, 2));
        ask.digest = ask.action.digest().to_hex();
        let AskOutcome::Covered(record) = db.ask(&ask, policy(), t0()).unwrap() else {
            panic!("{text} is covered");
        };
        ids.push(record.id);
    }
    // Read back after all three were claimed: each still has its own day, not the day's end.
    for (id, (actions, usd)) in ids.iter().zip([(1, 10), (2, 30), (3, 60)]) {
        let record = db.record(id).unwrap().unwrap();
        assert_eq!(
            record.action().expect("an action").mandate_use,
            Some(consentd_core::mandate::Usage {
                actions,
                usd: rust_decimal::Decimal::new(usd, 2),
            }),
            "{id}"
        );
    }
    // An ask a mandate did not answer has none.
    let carded = created(
        db.ask(&new_ask("send_letter", "x", None), policy(), t0())
            .unwrap(),
    );
    assert_eq!(carded.action().expect("an action").mandate_use, None);
}

#[test]
fn a_stored_attachment_changed_since_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let attachment = Attachment::new(
        "a.png".into(),
        "image/png".into(),
        b"\x89PNG\r\n\x1a\n".to_vec(),
    );
    let path = dir.path().join(attachment.sha256.to_hex());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, b"not these").unwrap();
    /// Changes the file at the first path; the second is a file elsewhere it may point to.
    type Change = fn(&Path, &Path);
    // (what the file under the attachment's name became, in words)
    let cases: [(&str, Change); 4] = [
        ("other bytes", |path, _| {
            std::fs::write(path, b"other").unwrap()
        }),
        ("cut short", |path, _| {
            std::fs::write(path, b"\x89PNG").unwrap()
        }),
        ("a symlink", |path, elsewhere| {
            std::os::unix::fs::symlink(elsewhere, path).unwrap()
        }),
        ("gone", |_, _| {}),
    ];
    for (what, change) in cases {
        let _ = std::fs::remove_file(&path);
        change(&path, &elsewhere);
        crate::blobs::save_all(dir.path(), std::slice::from_ref(&attachment)).unwrap();
        assert!(
            !std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{what}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), attachment.data, "{what}");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"not these", "{what}");
    }
}

/// The monotonic clock as a card is shown in these tests.
pub(super) fn monotonic() -> consentd_core::clock::Monotonic {
    consentd_core::clock::Monotonic {
        boot: "test".to_owned(),
        since_boot: std::time::Duration::from_secs(100),
    }
}

/// The monotonic reading at wall time `at`, when both clocks have run together since [`t0`] at
/// [`monotonic`].
pub(super) fn monotonic_at(at: DateTime<Utc>) -> consentd_core::clock::Monotonic {
    let since_t0 = (at - t0()).to_std().expect("at or after t0");
    consentd_core::clock::Monotonic {
        since_boot: monotonic().since_boot + since_t0,
        ..monotonic()
    }
}

/// A card asked for `text` and shown at `t0` at [`monotonic`], for 15 minutes; its record id.
fn shown_card(db: &mut Db, text: &str) -> String {
    let id = created(
        db.ask(&new_ask("publish_x", text, None), policy(), t0())
            .unwrap(),
    )
    .id;
    assert!(db
        .card_showing(
            &id,
            t0() + chrono::Duration::minutes(15),
            t0(),
            &monotonic()
        )
        .unwrap());
    id
}

fn drawn(shows: char, buttons: &[&str]) -> super::drawn::Drawn {
    super::drawn::Drawn {
        shows: shows.to_string().repeat(64),
        buttons: buttons.iter().map(|b| (*b).to_owned()).collect(),
    }
}

#[test]
fn a_drawn_message_is_kept_per_chat_replaced_by_an_edit_and_forgotten() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.message_drawn(7, 100, &drawn('a', &["yes", "no"]), t0())
        .unwrap();
    db.message_drawn(8, 100, &drawn('b', &["stop"]), t0())
        .unwrap();
    assert_eq!(
        db.drawn_message(7, 100).unwrap(),
        Some(drawn('a', &["yes", "no"]))
    );
    assert_eq!(
        db.drawn_message(8, 100).unwrap(),
        Some(drawn('b', &["stop"]))
    );
    assert_eq!(db.drawn_message(7, 101).unwrap(), None, "another message");
    // An edit that keeps buttons replaces what the message shows.
    db.message_drawn(
        7,
        100,
        &drawn('c', &["yes"]),
        t0() + chrono::Duration::days(9),
    )
    .unwrap();
    assert_eq!(
        db.drawn_message(7, 100).unwrap(),
        Some(drawn('c', &["yes"]))
    );
    // One that takes them away forgets it; so does age.
    db.message_undrawn(8, 100).unwrap();
    assert_eq!(db.drawn_message(8, 100).unwrap(), None);
    let forgotten = db
        .forget_drawn_before(t0() + chrono::Duration::days(1))
        .unwrap();
    assert_eq!(forgotten, 0, "the edit dated the row anew");
    assert_eq!(
        db.forget_drawn_before(t0() + chrono::Duration::days(10))
            .unwrap(),
        1
    );
    assert_eq!(db.drawn_message(7, 100).unwrap(), None);
}

#[test]
fn a_card_sent_keeps_its_message_and_what_it_shows_in_one_transaction() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_card(&mut db, "hello");
    db.card_sent(0, &id, (7, 42), Some(&drawn('d', &["y"])), t0())
        .unwrap();
    assert_eq!(db.record_message_id(&id, "card").unwrap(), Some(42));
    assert_eq!(db.drawn_message(7, 42).unwrap(), Some(drawn('d', &["y"])));
    let record = db.record(&id).unwrap().unwrap();
    let window = record.window().expect("a shown card has its window");
    assert_eq!(window.shown_monotonic, Some(monotonic()));
    assert_eq!(
        window.expires_at - window.shown_at,
        chrono::Duration::minutes(15)
    );
}

#[test]
fn a_claim_judges_the_window_only_when_told_to() {
    use super::claims::{Claim, ClaimNotices, ClaimWindow};
    use consentd_core::deadline::Now;
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let granted = |db: &mut Db, text: &str| {
        let id = created(
            db.ask(&new_ask("publish_x", text, None), policy(), t0())
                .unwrap(),
        )
        .id;
        db.card_showing(
            &id,
            t0() + chrono::Duration::minutes(15),
            t0(),
            &monotonic(),
        )
        .unwrap();
        grant(db, &id, t0());
        id
    };
    let late_again = granted(&mut db, "a");
    let late_at_grant = granted(&mut db, "b");
    let in_time = granted(&mut db, "c");
    // Three days later on the wall clock, on another boot.
    let later = Now {
        wall: t0() + chrono::Duration::days(3),
        monotonic: consentd_core::clock::Monotonic {
            boot: "another".to_owned(),
            since_boot: Duration::from_secs(5),
        },
    };
    let notices = ClaimNotices::default();
    let claim = |db: &mut Db, id: &str, now: &Now, window| {
        db.claim(id, true, (now, window), &notices).unwrap()
    };
    assert!(matches!(
        claim(&mut db, &late_again, &later, ClaimWindow::JudgeAgain),
        Claim::Expired(_)
    ));
    assert_eq!(state_of(&db, &late_again), RecordState::Expired);
    assert!(matches!(
        claim(&mut db, &late_at_grant, &later, ClaimWindow::JudgedAtGrant),
        Claim::Claimed(_)
    ));
    let soon = Now {
        wall: t0() + chrono::Duration::minutes(1),
        monotonic: consentd_core::clock::Monotonic {
            boot: "test".to_owned(),
            since_boot: Duration::from_secs(160),
        },
    };
    assert!(matches!(
        claim(&mut db, &in_time, &soon, ClaimWindow::JudgeAgain),
        Claim::Claimed(_)
    ));
    let events = fixture.journal_events();
    assert_eq!(events.iter().filter(|e| *e == "expired").count(), 1);
    assert_eq!(events.iter().filter(|e| *e == "used").count(), 2);
    fixture.journal_verifies();
}

/// uid 1000's request for a week of `kind` to `@someone`, five actions a day, no money.
fn plain_mandate(kind: &str) -> super::NewMandate {
    let request = consentd_core::mandate::MandateRequest {
        kind: kind.to_owned(),
        targets: vec!["@someone".to_owned()],
        days: 7,
        usd_per_day: None,
        actions_per_day: 5,
        reason: None,
        origin: None,
    };
    super::NewMandate {
        peer: crate::Peer::main(1000),
        digest: request.digest().to_hex(),
        request,
        monotonic: None,
    }
}

/// The category must still be on when an action is claimed (docs/PROTOCOL.md, "Statuses"). The
/// daemon checks its copy of the owner's switches first, but an ask, a mandate request or a yes
/// may be past that check when the Off is stored: each is judged again by the switch as stored,
/// in its own transaction. Each case: the daemon's copy still says on, the store says off.
#[test]
fn an_off_committed_before_an_ask_or_a_claim_wins_over_the_daemons_copy() {
    use super::claims::{Claim, ClaimNotices, ClaimWindow};
    let fixture = Fixture::new();
    let mut db = fixture.open();
    open_mandate(&mut db, "publish_x", 10, t0());
    // A yes given while the kind was on, its claim still to come.
    let pending = created(
        db.ask(
            &new_ask("other", "granted before the off", None),
            policy(),
            t0(),
        )
        .unwrap(),
    )
    .id;
    db.card_showing(
        &pending,
        t0() + chrono::Duration::minutes(15),
        t0(),
        &monotonic(),
    )
    .unwrap();
    grant(&mut db, &pending, t0());
    let off = |kind: &str| {
        decided(super::Decided::Switch {
            kind: kind.to_owned(),
            on: false,
            changed: true,
            by: 42,
            replies: Vec::new(),
        })
    };
    db.decide(&off("publish_x"), t0()).unwrap();
    db.decide(&off("other"), t0()).unwrap();
    let outcome = db
        .ask(
            &new_ask("publish_x", "inside the mandate", None),
            policy(),
            t0(),
        )
        .unwrap();
    assert!(
        matches!(&outcome, AskOutcome::Refused { refusal, .. } if refusal.reason == Reason::CategoryOff),
        "a covered ask after the off: {outcome:?}"
    );
    let outcome = db
        .ask(&new_ask("publish_x", "a new card", None), policy(), t0())
        .unwrap();
    assert!(
        matches!(&outcome, AskOutcome::Refused { refusal, .. } if refusal.reason == Reason::CategoryOff),
        "an ask that would get a card after the off: {outcome:?}"
    );
    let outcome = db
        .ask_mandate(&plain_mandate("publish_x"), policy(), t0())
        .unwrap();
    assert!(
        matches!(&outcome, AskOutcome::Refused { refusal, .. } if refusal.reason == Reason::CategoryOff),
        "a mandate request, whose card would ask for a kind that is off: {outcome:?}"
    );
    let claim = db
        .claim(
            &pending,
            true,
            (
                &consentd_core::deadline::Now {
                    wall: t0(),
                    monotonic: monotonic(),
                },
                ClaimWindow::JudgeAgain,
            ),
            &ClaimNotices::default(),
        )
        .unwrap();
    assert!(
        matches!(claim, Claim::CategoryOff(_)),
        "a yes claimed after the off: {claim:?}"
    );
    assert_eq!(state_of(&db, &pending), RecordState::Refused);
    let events = fixture.journal_events();
    assert!(
        !events.iter().any(|e| e == "used" || e == "mandate_use"),
        "{events:?}"
    );
    fixture.journal_verifies();
}

#[test]
fn a_resume_lifts_only_the_silence_its_record_started() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let decline_one = |db: &mut Db, text: &str, at: DateTime<Utc>| {
        let id = created(
            db.ask(&new_ask("publish_x", text, None), policy(), at)
                .unwrap(),
        )
        .id;
        db.card_showing(&id, at + chrono::Duration::minutes(15), at, &monotonic())
            .unwrap();
        assert!(decline(db, &id, 1, at));
        id
    };
    let first = decline_one(&mut db, "first", t0());
    let at = t0() + chrono::Duration::minutes(1);
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "publish_x", at)
            .unwrap(),
        Some(Some(first.clone()))
    );
    assert!(resume(&mut db, "publish_x", &first, 1, at));
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "publish_x", at)
            .unwrap(),
        None
    );
    let second = decline_one(&mut db, "second", at);
    assert!(
        !resume(&mut db, "publish_x", &first, 2, at),
        "an old Resume lifted a later silence"
    );
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "publish_x", at)
            .unwrap(),
        Some(Some(second.clone()))
    );
    // A silence from before silences were named is lifted by a Resume of its kind.
    db.connection()
        .execute("UPDATE kind_streaks SET silenced_by = NULL", [])
        .unwrap();
    assert_eq!(
        db.silence_of(&crate::Peer::main(1000), "publish_x", at)
            .unwrap(),
        Some(None)
    );
    assert!(resume(&mut db, "publish_x", &first, 3, at));
    fixture.journal_verifies();
}

#[test]
fn a_nos_reason_is_kept_once_on_a_declined_record_and_journaled_by_its_hash() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let reply = || (42, super::outbox::Body::default());
    // A plain No takes no reason, and neither does "No, and say why…" once its wait is over.
    let plain = created(
        db.ask(&new_ask("k0", "post that", None), policy(), t0())
            .unwrap(),
    );
    show_card(&mut db, &plain.id);
    decline(&mut db, &plain.id, 3, t0());
    assert!(!db
        .note_decline_reason(&plain.id, "why", 42, 8, t0(), reply())
        .unwrap());
    let late = created(
        db.ask(&new_ask("k1", "post this", None), policy(), t0())
            .unwrap(),
    );
    show_card(&mut db, &late.id);
    decline_asking_why(
        &mut db,
        &late.id,
        t0() + chrono::Duration::seconds(60),
        t0(),
    );
    assert!(!db
        .note_decline_reason(
            &late.id,
            "why",
            42,
            9,
            t0() + chrono::Duration::seconds(60),
            reply()
        )
        .unwrap());
    let record = created(
        db.ask(&new_ask("k", "post it", None), policy(), t0())
            .unwrap(),
    );
    show_card(&mut db, &record.id);
    db.record_message(&record.id, "card", 555).unwrap();
    assert_eq!(db.record_of_card(555).unwrap().unwrap().id, record.id);
    assert!(db.record_of_card(556).unwrap().is_none());
    let reason = "Use the new logo";
    // Only a declined record takes a reason.
    assert!(!db
        .note_decline_reason(&record.id, reason, 42, 10, t0(), reply())
        .unwrap());
    decline_asking_why(
        &mut db,
        &record.id,
        t0() + chrono::Duration::seconds(60),
        t0(),
    );
    let stored = db.record(&record.id).unwrap().unwrap();
    let until = stored.asked().unwrap().reason_until;
    assert_eq!(until, Some(t0() + chrono::Duration::seconds(60)));
    assert!(db
        .note_decline_reason(&record.id, reason, 42, 11, t0(), reply())
        .unwrap());
    assert!(!db
        .note_decline_reason(&record.id, "another", 42, 12, t0(), reply())
        .unwrap());
    let stored = db.record(&record.id).unwrap().unwrap();
    assert_eq!(
        stored.asked().unwrap().decline_reason.as_deref(),
        Some(reason)
    );
    assert_eq!(stored.state, RecordState::Declined);
    assert_eq!(db.next_offset().unwrap(), 12, "each reply moved the offset");
    let events = fixture.journal_events();
    assert_eq!(events.iter().filter(|e| *e == "decline_reason").count(), 1);
    let journal = std::fs::read_to_string(&fixture.journal_path).unwrap();
    assert!(
        !journal.contains("logo"),
        "the reason's text is not journaled"
    );
    let hash = consentd_core::digest::Sha256Hash::of(reason.as_bytes()).to_hex();
    assert!(journal.contains(&hash), "its hash is");
    fixture.journal_verifies();
}

#[test]
fn a_button_that_ended_is_taken_off_every_message_that_carries_it() {
    use crate::drawn::{unbutton_in, Drawn};
    use consentd_core::press::PressAction;
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let (ended, other) = ("r_0123456789abcdef0123", "r_0123456789abcdef0124");
    let data =
        |action: char, subject: &str| format!("1.abcd.{action}.{subject}.{}", "A".repeat(22));
    let drawn = |buttons: Vec<String>| Drawn {
        shows: "0".repeat(64),
        buttons,
    };
    for (message_id, buttons) in [
        (1, vec![data('s', ended)]),
        (2, vec![data('s', other)]),
        (3, vec![data('r', ended)]),
        (4, vec![data('s', ended)]),
    ] {
        db.message_drawn(7, message_id, &drawn(buttons), t0())
            .unwrap();
    }
    let queued = db
        .write_effects(t0(), None, |tx, effects| {
            unbutton_in(tx, effects, PressAction::Stop, ended)
        })
        .unwrap();
    assert_eq!(queued, 2);
    let mut edited = Vec::new();
    while let Some(row) = db.next_outbox(t0()).unwrap() {
        assert_eq!(row.body.text, None, "only the buttons go");
        assert_eq!(row.chat_id, 7);
        edited.push(row.message_id.unwrap());
        db.outbox_sent(row.seq).unwrap();
    }
    assert_eq!(edited, [1, 4]);
}

/// The owner's answer to a card, with no edit to queue (these tests read the tables).
pub(super) fn card(id: &str) -> super::CardDecision {
    super::CardDecision {
        id: id.to_owned(),
        by: 42,
        decider_name: "Owner".to_owned(),
        card_edit: None,
    }
}

fn decided(decided: super::Decided) -> super::OwnerDecision {
    super::OwnerDecision {
        next_offset: None,
        decided,
    }
}

/// The owner's yes to an approval-only card at `at`: the record as it then stands.
pub(super) fn approve(
    db: &mut Db,
    id: &str,
    at: DateTime<Utc>,
) -> Result<super::Record, super::StoreError> {
    db.decide(&decided(super::Decided::Approve(card(id))), at)?;
    Ok(db.record(id)?.expect("the record"))
}

/// The owner's yes to a shown card at `at`.
pub(super) fn grant(db: &mut Db, id: &str, at: DateTime<Utc>) {
    db.decide(&decided(super::Decided::Grant(card(id))), at)
        .unwrap();
}

/// The owner's no to a shown card at `at`; whether it silenced the kind.
pub(super) fn decline(db: &mut Db, id: &str, streak_limit: u32, at: DateTime<Utc>) -> bool {
    let decision = decided(super::Decided::Decline {
        card: card(id),
        streak_limit,
        notice_if_silenced: None,
        reason_until: None,
    });
    db.decide(&decision, at).unwrap() == super::Applied::Silenced
}

/// The owner's "No, and say why…" to a shown card at `at`, waiting for a reason until `until`.
pub(super) fn decline_asking_why(db: &mut Db, id: &str, until: DateTime<Utc>, at: DateTime<Utc>) {
    let decision = decided(super::Decided::Decline {
        card: card(id),
        streak_limit: 3,
        notice_if_silenced: None,
        reason_until: Some(until),
    });
    db.decide(&decision, at).unwrap();
}

/// The owner's Resume of the silence `silenced_by` started; whether it lifted one.
fn resume(db: &mut Db, kind: &str, silenced_by: &str, next: i64, at: DateTime<Utc>) -> bool {
    let decision = super::OwnerDecision {
        next_offset: Some(next),
        decided: super::Decided::Resume {
            kind: kind.to_owned(),
            silenced_by: silenced_by.to_owned(),
            by: 42,
            reply: super::Outgoing::message(42, Default::default(), super::outbox::Sound::Silent),
        },
    };
    db.decide(&decision, at).unwrap() == super::Applied::Done
}

/// The owner's Stop of a mandate; whether it stopped it.
pub(super) fn stop(db: &mut Db, id: &str, next: i64, at: DateTime<Utc>) -> bool {
    let decision = super::OwnerDecision {
        next_offset: Some(next),
        decided: super::Decided::Stop {
            mandate_id: id.to_owned(),
            by: 42,
            reply: super::Outgoing::message(42, Default::default(), super::outbox::Sound::Silent),
        },
    };
    db.decide(&decision, at).unwrap() == super::Applied::Done
}

/// Applying an owner's decision: what one transaction changes, journals and queues.
mod decide {
    use super::super::outbox::{Body, Sound};
    use super::super::{Applied, Decided, Outgoing, OwnerDecision};
    use super::*;

    fn shown(db: &mut Db, text: &str) -> String {
        let id = created(db.ask(&new_ask("k", text, None), policy(), t0()).unwrap()).id;
        show_card(db, &id);
        id
    }

    fn queued(db: &Db) -> Vec<(String, Option<String>)> {
        let mut statement = db
            .connection()
            .prepare("SELECT what, record_id FROM outbox ORDER BY seq")
            .unwrap();
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn next_offset(db: &Db) -> i64 {
        db.next_offset().unwrap()
    }

    fn decline_with_notice(id: &str, streak_limit: u32) -> OwnerDecision {
        OwnerDecision {
            next_offset: Some(7),
            decided: Decided::Decline {
                card: super::super::CardDecision {
                    card_edit: Some(Outgoing::card_edit(
                        42,
                        id,
                        consentd_core::styled::Styled::plain("declined"),
                    )),
                    ..card(id)
                },
                streak_limit,
                notice_if_silenced: Some(Box::new(Outgoing::message(
                    42,
                    Body::default(),
                    Sound::Gated,
                ))),
                reason_until: None,
            },
        }
    }

    #[test]
    fn a_decline_below_the_streak_limit_queues_the_edit_and_not_the_notice() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let id = shown(&mut db, "one");
        let applied = db.decide(&decline_with_notice(&id, 2), t0()).unwrap();
        assert_eq!(applied, Applied::Done);
        assert_eq!(queued(&db), [("edit".to_owned(), Some(id.clone()))]);
        assert_eq!(state_of(&db, &id), RecordState::Declined);
        assert_eq!(next_offset(&db), 7);
        let record = db.record(&id).unwrap().unwrap();
        let asked = record.asked().unwrap();
        assert_eq!(asked.decided_by, Some(42));
        assert_eq!(asked.decided_by_name.as_deref(), Some("Owner"));
        assert_eq!(
            db.silence_of(&crate::Peer::main(1000), "k", t0()).unwrap(),
            None
        );
    }

    #[test]
    fn a_decline_at_the_streak_limit_silences_and_queues_the_notice() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let id = shown(&mut db, "one");
        let applied = db.decide(&decline_with_notice(&id, 1), t0()).unwrap();
        assert_eq!(applied, Applied::Silenced);
        assert_eq!(
            queued(&db),
            [
                ("edit".to_owned(), Some(id.clone())),
                ("message".to_owned(), None)
            ]
        );
        assert_eq!(
            db.silence_of(&crate::Peer::main(1000), "k", t0()).unwrap(),
            Some(Some(id))
        );
        let events = fixture.journal_events();
        assert_eq!(events[events.len() - 2..], ["declined", "silenced"]);
    }

    /// Every card decision on a record that is no longer shown: a conflict, and nothing changes
    /// (no state, no journal line, no row, no offset).
    #[test]
    fn a_card_decision_on_a_record_no_longer_shown_is_a_conflict_and_changes_nothing() {
        type Case = (&'static str, fn(&str) -> Decided);
        let cases: [Case; 3] = [
            ("grant", |id| Decided::Grant(card(id))),
            ("decline", |id| Decided::Decline {
                card: card(id),
                streak_limit: 1,
                notice_if_silenced: Some(Box::new(Outgoing::message(
                    42,
                    Body::default(),
                    Sound::Gated,
                ))),
                reason_until: None,
            }),
            ("expire", |id| Decided::Expire {
                id: id.to_owned(),
                card_edit: Some(Outgoing::card_edit(
                    42,
                    id,
                    consentd_core::styled::Styled::plain("expired"),
                )),
            }),
        ];
        for (name, decided) in cases {
            let fixture = Fixture::new();
            let mut db = fixture.open();
            let id = shown(&mut db, "one");
            grant(&mut db, &id, t0());
            let lines = fixture.journal_events().len();
            let decision = OwnerDecision {
                next_offset: Some(9),
                decided: decided(&id),
            };
            let result = db.decide(&decision, t0());
            assert!(
                matches!(
                    result,
                    Err(StoreError::StateConflict {
                        expected: RecordState::CardShown,
                        actual: RecordState::Granted,
                        ..
                    })
                ),
                "{name}: {result:?}"
            );
            assert_eq!(state_of(&db, &id), RecordState::Granted, "{name}");
            assert_eq!(fixture.journal_events().len(), lines, "{name}");
            assert!(queued(&db).is_empty(), "{name}");
            assert_eq!(next_offset(&db), 0, "{name}");
        }
    }

    #[test]
    fn an_expiry_journals_expired_and_queues_the_cards_edit() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let id = shown(&mut db, "one");
        let decision = OwnerDecision {
            next_offset: None,
            decided: Decided::Expire {
                id: id.clone(),
                card_edit: Some(Outgoing::card_edit(
                    42,
                    &id,
                    consentd_core::styled::Styled::plain("expired"),
                )),
            },
        };
        assert_eq!(db.decide(&decision, t0()).unwrap(), Applied::Done);
        assert_eq!(state_of(&db, &id), RecordState::Expired);
        assert_eq!(fixture.journal_events().last().unwrap(), "expired");
        assert_eq!(queued(&db), [("edit".to_owned(), Some(id))]);
    }

    #[test]
    fn a_switch_journals_only_a_change_and_queues_its_replies_in_order() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let switch = |changed| OwnerDecision {
            next_offset: Some(3),
            decided: Decided::Switch {
                kind: "k".to_owned(),
                on: false,
                changed,
                by: 42,
                replies: vec![
                    Outgoing::MessageEdit {
                        chat: 42,
                        message_id: 5,
                        body: Body::default(),
                    },
                    Outgoing::message(42, Body::default(), Sound::Silent),
                ],
            },
        };
        let lines = fixture.journal_events().len();
        db.decide(&switch(false), t0()).unwrap();
        assert_eq!(fixture.journal_events().len(), lines);
        db.decide(&switch(true), t0()).unwrap();
        assert_eq!(fixture.journal_events().last().unwrap(), "category_off");
        assert_eq!(
            queued(&db),
            [
                ("edit".to_owned(), None),
                ("message".to_owned(), None),
                ("edit".to_owned(), None),
                ("message".to_owned(), None),
            ]
        );
        assert_eq!(next_offset(&db), 3);
    }
}

/// The outbox's lanes: each lane's oldest ready row, and an edit that waits for its card.
mod lanes {
    use super::super::outbox::{Body, Lane, Outgoing, Sound};
    use super::*;

    fn head(db: &Db, lane: Lane, now: DateTime<Utc>) -> Option<(String, Option<String>, bool)> {
        db.next_in_lane(lane, now).unwrap().map(|head| {
            let what = format!("{:?}", head.row.what);
            (what, head.row.record_id, head.waits_for_card)
        })
    }

    fn queue(db: &mut Db, outgoing: Outgoing) {
        db.write_effects(t0(), None, |tx, effects| outgoing.queue_in(tx, effects))
            .unwrap();
    }

    fn carded() -> AskPolicy {
        AskPolicy {
            card_chat: Some(42),
            ..policy()
        }
    }

    #[test]
    fn each_lane_offers_its_oldest_row_and_an_edit_waits_for_its_card() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        let a = created(db.ask(&new_ask("k", "one", None), carded(), t0()).unwrap()).id;
        queue(
            &mut db,
            Outgoing::message(42, Body::default(), Sound::Receipt),
        );
        queue(
            &mut db,
            Outgoing::message(42, Body::default(), Sound::Urgent),
        );
        let edit = Outgoing::card_edit(42, &a, consentd_core::styled::Styled::plain("ended"));
        queue(&mut db, edit);
        let b = created(db.ask(&new_ask("k", "two", None), carded(), t0()).unwrap()).id;
        let card = |id: &str| Some(("Card".to_owned(), Some(id.to_owned()), false));
        assert_eq!(
            head(&db, Lane::Urgent, t0()),
            Some(("Message".to_owned(), None, false)),
            "the urgent notice, though queued after a card and a receipt"
        );
        assert_eq!(head(&db, Lane::Card, t0()), card(&a), "the first card");
        assert_eq!(
            head(&db, Lane::Rest, t0()),
            Some(("Message".to_owned(), None, false)),
            "the receipt"
        );
        let urgent = db.next_in_lane(Lane::Urgent, t0()).unwrap().unwrap();
        db.outbox_sent(urgent.row.seq).unwrap();
        assert_eq!(head(&db, Lane::Urgent, t0()), None);
        let receipt = db.next_in_lane(Lane::Rest, t0()).unwrap().unwrap();
        db.outbox_sent(receipt.row.seq).unwrap();
        assert_eq!(
            head(&db, Lane::Rest, t0()),
            Some(("Edit".to_owned(), Some(a.clone()), true)),
            "the edit of a card still queued waits for it"
        );
        // A card held for the morning holds up neither its lane nor the edit.
        let held = db.next_in_lane(Lane::Card, t0()).unwrap().unwrap();
        let morning = t0() + chrono::Duration::hours(8);
        db.outbox_hold(held.row.seq, morning).unwrap();
        assert_eq!(head(&db, Lane::Card, t0()), card(&b), "the next card goes");
        assert_eq!(
            head(&db, Lane::Rest, t0()),
            Some(("Edit".to_owned(), Some(a.clone()), false)),
            "an edit does not wait for a card held until the morning"
        );
        assert_eq!(
            head(&db, Lane::Rest, morning),
            Some(("Edit".to_owned(), Some(a.clone()), true)),
            "but does once that card is due"
        );
        db.outbox_sent(held.row.seq).unwrap();
        assert_eq!(
            head(&db, Lane::Rest, morning),
            Some(("Edit".to_owned(), Some(a), false)),
            "nor once the card was sent"
        );
    }

    /// The sender decides a row on what it read, then writes the hold; the evening summary may
    /// release the row in between (summary_at inside quiet hours: the hold runs out the moment
    /// the summary is due, and both wake). The stale hold must not hold the released row, now
    /// `silent`, a whole day more.
    #[test]
    fn a_hold_decided_before_the_summary_released_the_row_does_not_hold_it_again() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        queue(
            &mut db,
            Outgoing::message(42, Body::default(), Sound::Receipt),
        );
        let summary = t0() + chrono::Duration::hours(11);
        let seq = db.next_in_lane(Lane::Rest, t0()).unwrap().unwrap().row.seq;
        db.outbox_hold(seq, summary).unwrap();
        assert_eq!(head(&db, Lane::Rest, t0()), None, "held for the summary");
        // The hold runs out: the sender reads the row, and decides (still quiet hours) to hold
        // it until tomorrow's summary...
        let read = db.next_in_lane(Lane::Rest, summary).unwrap().unwrap();
        assert_eq!(read.row.seq, seq);
        // ...while the summary's transaction releases it...
        let day = summary.date_naive();
        assert_eq!(
            db.send_summary(
                day,
                summary,
                crate::settings::HeldReceipts::Send,
                &crate::settings::Summary::default()
            )
            .unwrap(),
            crate::settings::SummarySent::Now
        );
        // ...and then writes what it decided.
        db.outbox_hold(seq, summary + chrono::Duration::days(1))
            .unwrap();
        assert_eq!(
            head(&db, Lane::Rest, summary).map(|(what, _, _)| what),
            Some("Message".to_owned()),
            "the receipt the summary released goes now, not a day later"
        );
    }
}

/// The sweep's list of cards past their ttl (`Db::due_for_expiry`), on both clocks. A wall clock
/// stepped back before the card's `shown_at` must not keep a card open past its ttl on the
/// monotonic clock: the card is expired and its session hears so within the ttl (docs/CONFIG.md,
/// `card_ttl`: a card
/// nobody answered within ttl is expired), not when the wall clock has caught up hours later.
#[test]
fn a_card_past_its_ttl_on_the_monotonic_clock_is_due_whatever_the_wall_clock_says() {
    use consentd_core::clock::Monotonic;
    use consentd_core::deadline::Now;
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_card(&mut db, "hello");
    let ttl = chrono::Duration::minutes(15);
    // (case, the wall clock from `shown_at`, the monotonic clock from the card's reading, due)
    let cases: [(&str, chrono::Duration, u64, bool); 5] = [
        ("at once", chrono::Duration::zero(), 0, false),
        ("a second in", chrono::Duration::seconds(1), 1, false),
        (
            "past the ttl by both",
            ttl + chrono::Duration::seconds(1),
            901,
            true,
        ),
        (
            "wall stepped forward past the end, 5 s in",
            chrono::Duration::hours(1),
            5,
            true,
        ),
        (
            "wall stepped back 2 h, 902 s in",
            chrono::Duration::seconds(902) - chrono::Duration::hours(2),
            902,
            true,
        ),
    ];
    for (name, wall, monotonic_secs, due) in cases {
        let now = Now {
            wall: t0() + wall,
            monotonic: Monotonic {
                since_boot: monotonic().since_boot + Duration::from_secs(monotonic_secs),
                ..monotonic()
            },
        };
        let listed = db.due_for_expiry(&now).unwrap();
        assert_eq!(listed.contains(&id), due, "{name}: {listed:?}");
    }
}

/// A journal line holds each key once (`journal verify` refuses one that holds a key twice): an
/// event given a member again keeps its place with the later value.
#[test]
fn a_journal_event_holds_each_key_once() {
    use super::events::{EventName, JournalEvent};
    let event = JournalEvent::new(EventName::Asked)
        .with("id", "r_1")
        .with("kind", "k")
        .with("id", "r_2");
    let keys: Vec<&str> = event.members.iter().map(|(key, _)| *key).collect();
    assert_eq!(keys, ["id", "kind"]);
    assert_eq!(event.members[0].1, serde_json::json!("r_2"));
}

/// A uid through a labelled socket is a peer of its own: what it asked through one socket is
/// never read, joined, keyed, counted or remembered for the same uid through another. Each row
/// is one rule, tried through "devbox" (where it applies) and then on the main socket (where it
/// must not), by uid 1000 both times.
#[test]
fn the_same_uid_through_two_sockets_is_two_peers() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let devbox = crate::Peer::through(1000, Some("devbox"));
    let main = crate::Peer::main(1000);
    let share_of_one = AskPolicy {
        max_pending_per_uid: 1,
        ..policy()
    };
    let ask = |db: &mut Db, peer: &crate::Peer, text: &str, key: Option<&str>| {
        let new = NewAsk {
            peer: peer.clone(),
            ..new_ask("k", text, key)
        };
        let word = match db.ask(&new, share_of_one, t0()).unwrap() {
            AskOutcome::Existing(_) => "existing".to_owned(),
            AskOutcome::Joined(_) => "joined".to_owned(),
            AskOutcome::Created(_) => "created".to_owned(),
            AskOutcome::Refused { refusal, .. } => refusal.reason.as_str().to_owned(),
            AskOutcome::Covered(_) => "covered".to_owned(),
        };
        // The main peer's asks are withdrawn at once, so its own share stays free.
        let (mine, _) = db.list(&main, None, 100).unwrap();
        for record in mine.iter().filter(|r| r.state.is_open()) {
            db.withdraw(&record.id, &main, None, t0()).unwrap();
        }
        word
    };
    let open = created(
        db.ask(
            &NewAsk {
                peer: devbox.clone(),
                ..new_ask("k", "open", Some("key"))
            },
            policy(),
            t0(),
        )
        .unwrap(),
    );
    assert_eq!(open.listener.as_deref(), Some("devbox"));
    // (the rule, the text and key asked, what devbox meets)
    let before_declines = [
        ("the same key", "open", Some("key"), "existing"),
        ("the same digest while open", "open", None, "joined"),
        (
            "the share of open asks",
            "another",
            None,
            "too_many_pending",
        ),
    ];
    for (rule, text, key, on_devbox) in before_declines {
        assert_eq!(
            ask(&mut db, &devbox, text, key),
            on_devbox,
            "{rule}, through devbox"
        );
        assert_eq!(
            ask(&mut db, &main, text, key),
            "created",
            "{rule}, on the main socket"
        );
    }
    for n in 0..3 {
        let record = created(
            db.ask(
                &NewAsk {
                    peer: devbox.clone(),
                    ..new_ask("k", &format!("no {n}"), None)
                },
                policy(),
                t0(),
            )
            .unwrap(),
        );
        show_card(&mut db, &record.id);
        decline(&mut db, &record.id, 3, t0());
    }
    let after_declines = [
        (
            "a digest declined recently",
            "no 0",
            None,
            "declined_recently",
        ),
        ("a silenced kind", "fresh", None, "kind_silenced"),
    ];
    for (rule, text, key, on_devbox) in after_declines {
        assert_eq!(
            ask(&mut db, &devbox, text, key),
            on_devbox,
            "{rule}, through devbox"
        );
        assert_eq!(
            ask(&mut db, &main, text, key),
            "created",
            "{rule}, on the main socket"
        );
    }
    // Listing and withdrawing: each peer has only its own.
    let (devbox_records, _) = db.list(&devbox, None, 100).unwrap();
    let (main_records, _) = db.list(&main, None, 100).unwrap();
    assert!(devbox_records
        .iter()
        .all(|r| r.listener.as_deref() == Some("devbox")));
    assert!(main_records.iter().all(|r| r.listener.is_none()));
    assert_eq!(main_records.len(), 5, "{main_records:?}");
    assert_eq!(
        db.withdraw(&open.id, &main, None, t0()).unwrap(),
        crate::Withdrawal::NoRecord,
        "another socket's record is not the main peer's to withdraw"
    );
    assert!(matches!(
        db.withdraw(&open.id, &devbox, None, t0()).unwrap(),
        crate::Withdrawal::Withdrawn(_)
    ));
    // The journal's `asked` lines name devbox for its asks, and nothing for the main socket's.
    let journal = std::fs::read_to_string(&fixture.journal_path).unwrap();
    let asked: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains(r#""ev":"asked""#))
        .collect();
    let named = asked
        .iter()
        .filter(|l| l.contains(r#""origin":"devbox""#))
        .count();
    assert_eq!(named, 4, "{asked:#?}");
    assert_eq!(asked.len(), 4 + 5, "{asked:#?}");
}
