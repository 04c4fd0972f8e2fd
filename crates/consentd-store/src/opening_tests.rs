//! A card opened in its ask's own transaction: only when the ask says it can go at once and
//! nothing waits in the outbox ahead of it, with the deadline and journal line the sender's own
//! opening would give it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::db::{AskOutcome, AskPolicy, Db, NewAsk};
use super::state::RecordState;
use super::tests::{new_ask, policy, t0, Fixture};
use super::CardOpening;
use crate::outbox::{queue_in, Body, Sound, What};
use consentd_core::clock::Monotonic;

const CHAT: i64 = 42;

pub(super) fn opening() -> CardOpening {
    CardOpening {
        ttl: chrono::Duration::minutes(15),
        sender_idle: Arc::new(AtomicBool::new(true)),
    }
}

/// An ask whose card can open with it.
fn can_open() -> NewAsk {
    NewAsk {
        open_card: Some(opening()),
        ..new_ask("publish_x", "hello", None)
    }
}

/// The monotonic clock as the asks here are taken.
fn at_ask() -> Monotonic {
    Monotonic {
        boot: "boot-a".to_owned(),
        since_boot: Duration::from_secs(700),
    }
}

fn with_chat() -> AskPolicy {
    AskPolicy {
        card_chat: Some(CHAT),
        ..policy()
    }
}

/// A message queued for the owner's chat, held until `hold_until` when given.
fn queue_message(db: &Db, hold_until: Option<DateTime<Utc>>) {
    let conn = db.connection();
    queue_in(
        conn,
        CHAT,
        What::Message,
        None,
        &Body::default(),
        Sound::Gated,
        t0(),
    )
    .unwrap();
    if let Some(until) = hold_until {
        conn.execute(
            "UPDATE outbox SET hold_until = ?1 WHERE seq = last_insert_rowid()",
            [super::base::timestamp(until)],
        )
        .unwrap();
    }
}

struct Case {
    name: &'static str,
    ask: NewAsk,
    policy: AskPolicy,
    /// Set up before the ask.
    before: fn(&Db),
    /// The deadline it opens with, or `None` when it stays pending for the sender to open.
    opens_until: Option<DateTime<Utc>>,
}

fn cases() -> Vec<Case> {
    let minutes = |m| t0() + chrono::Duration::minutes(m);
    let can_open = NewAsk {
        open_card: Some(opening()),
        monotonic: at_ask(),
        ..new_ask("publish_x", "hello", None)
    };
    vec![
        Case {
            name: "it may open and nothing waits",
            ask: can_open.clone(),
            policy: with_chat(),
            before: |_| {},
            opens_until: Some(minutes(15)),
        },
        Case {
            name: "its own ttl ends before the card's would",
            ask: NewAsk {
                ttl: Some(Duration::from_secs(60)),
                ..can_open.clone()
            },
            policy: with_chat(),
            before: |_| {},
            opens_until: Some(minutes(1)),
        },
        Case {
            name: "only a row held for later is queued",
            ask: can_open.clone(),
            policy: with_chat(),
            before: |db| queue_message(db, Some(t0() + chrono::Duration::hours(8))),
            opens_until: Some(minutes(15)),
        },
        Case {
            name: "a message is queued ahead of it",
            ask: can_open.clone(),
            policy: with_chat(),
            before: |db| queue_message(db, None),
            opens_until: None,
        },
        Case {
            name: "a held row has come due ahead of it",
            ask: can_open.clone(),
            policy: with_chat(),
            before: |db| queue_message(db, Some(t0())),
            opens_until: None,
        },
        Case {
            name: "the sender has a row in hand",
            ask: NewAsk {
                open_card: Some(CardOpening {
                    sender_idle: Arc::new(AtomicBool::new(false)),
                    ..opening()
                }),
                ..can_open.clone()
            },
            policy: with_chat(),
            before: |_| {},
            opens_until: None,
        },
        Case {
            name: "the ask does not say it may open",
            ask: new_ask("publish_x", "hello", None),
            policy: with_chat(),
            before: |_| {},
            opens_until: None,
        },
        Case {
            name: "no chat to show it in",
            ask: can_open,
            policy: policy(),
            before: |_| {},
            opens_until: None,
        },
    ]
}

#[test]
fn a_card_opens_with_its_ask_only_when_it_can_go_at_once() {
    for case in cases() {
        let fixture = Fixture::new();
        let mut db = fixture.open();
        (case.before)(&db);
        let commits = db.commits();
        let outcome = db.ask(&case.ask, case.policy, t0()).unwrap();
        let AskOutcome::Created(asked) = outcome else {
            panic!("{}: {outcome:?}", case.name);
        };
        // The session's first line says what the ask made: a pending record.
        assert_eq!(asked.state, RecordState::Pending, "{}", case.name);
        assert_eq!(db.commits(), commits + 1, "{}: one commit", case.name);
        let record = db.record(&asked.id).unwrap().unwrap();
        let events = fixture.journal_events();
        let changes = db.take_changes();
        let handed = db.take_opened_card();
        assert!(
            db.take_opened_card().is_none(),
            "{}: handed once",
            case.name
        );
        match case.opens_until {
            Some(until) => {
                let handed = handed.unwrap_or_else(|| panic!("{}: not handed", case.name));
                assert_eq!(handed.record, record, "{}: the record as opened", case.name);
                let next = db.next_outbox(t0()).unwrap().unwrap();
                assert_eq!(handed.row, next, "{}: the card's own row", case.name);
                assert_eq!(handed.row.what, What::Card, "{}", case.name);
                assert_eq!(record.state, RecordState::CardShown, "{}", case.name);
                assert_eq!(record.shown_at, Some(t0()), "{}", case.name);
                assert_eq!(record.expires_at, Some(until), "{}", case.name);
                assert_eq!(record.shown_monotonic, Some(at_ask()), "{}", case.name);
                assert_eq!(
                    events[events.len() - 2..],
                    ["asked", "card_shown"],
                    "{}",
                    case.name
                );
                assert_eq!(
                    changes,
                    [
                        (asked.id.clone(), RecordState::Pending),
                        (asked.id.clone(), RecordState::CardShown)
                    ],
                    "{}: waiters hear both, in order",
                    case.name
                );
            }
            None => {
                assert!(handed.is_none(), "{}: {handed:?}", case.name);
                assert_eq!(record.state, RecordState::Pending, "{}", case.name);
                assert_eq!(record.shown_at, None, "{}", case.name);
                assert_eq!(
                    events.last().map(String::as_str),
                    Some("asked"),
                    "{}",
                    case.name
                );
                assert_eq!(
                    changes,
                    [(asked.id.clone(), RecordState::Pending)],
                    "{}",
                    case.name
                );
            }
        }
        fixture.journal_verifies();
    }
}

#[test]
fn an_ask_that_joins_or_is_refused_opens_nothing() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = can_open();
    // The first ask queues its card; the outbox then holds it, so the second, a new text,
    // stays pending, and the third, the first's text again, joins the first.
    db.ask(&first, with_chat(), t0()).unwrap();
    let second = NewAsk {
        open_card: Some(opening()),
        ..new_ask("publish_x", "another", None)
    };
    let AskOutcome::Created(second) = db.ask(&second, with_chat(), t0()).unwrap() else {
        panic!("a second ask is created");
    };
    assert_eq!(
        db.record(&second.id).unwrap().unwrap().state,
        RecordState::Pending,
        "the first card is still queued ahead of it"
    );
    let again = db.ask(&first, with_chat(), t0()).unwrap();
    assert!(matches!(again, AskOutcome::Joined(_)), "{again:?}");
    let shown = fixture
        .journal_events()
        .iter()
        .filter(|event| *event == "card_shown")
        .count();
    assert_eq!(shown, 1, "only the first card opened");
}

/// What is handed to the sender is read in the batch's transaction, after its requests ran: a
/// batch whose transaction was rolled back hands nothing, and a card no longer first in the
/// outbox is left to the sender's usual way rather than sent ahead of what now waits before it.
#[test]
fn only_a_committed_card_first_in_the_outbox_is_handed_to_the_sender() {
    let can_open = can_open();
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.begin_batch().unwrap();
    db.ask(&can_open, with_chat(), t0()).unwrap();
    db.connection().execute_batch("ROLLBACK").unwrap();
    assert!(db.commit_batch().is_err(), "nothing to commit");
    assert!(db.take_opened_card().is_none(), "rolled back, yet handed");

    let fixture = Fixture::new();
    let mut db = fixture.open();
    let AskOutcome::Created(asked) = db.ask(&can_open, with_chat(), t0()).unwrap() else {
        panic!("created");
    };
    // Sent the usual way already (the sender read the outbox before it was handed).
    db.connection()
        .execute(
            "UPDATE outbox SET state = 'sent' WHERE record_id = ?1",
            [&asked.id],
        )
        .unwrap();
    assert!(db.take_opened_card().is_none(), "its row was sent");

    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.begin_batch().unwrap();
    db.ask(&can_open, with_chat(), t0()).unwrap();
    // A row queued after it in the same batch does not change what goes first.
    queue_message(&db, None);
    db.commit_batch().unwrap();
    let handed = db.take_opened_card().expect("still first in the outbox");
    assert_eq!(handed.record.state, RecordState::CardShown);
}

/// A card opened with its ask may reach the owner between its batch's commit and the journal's
/// append: a kill there leaves its `asked` and `card_shown` lines staged, and the next start
/// puts them in the file before anything else.
#[test]
fn a_card_handed_over_keeps_its_journal_lines_when_the_append_never_happens() {
    let can_open = can_open();
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let before = fixture.journal_events().len();
    db.begin_batch().unwrap();
    db.ask(&can_open, with_chat(), t0()).unwrap();
    assert!(db.take_opened_card().is_some(), "handed over");
    // Committed, then killed before the append (the lines are dropped unwritten).
    let lines = db.commit_batch().unwrap();
    assert_eq!(lines.len(), 2, "asked and card_shown");
    assert_eq!(fixture.journal_events().len(), before, "not appended yet");
    drop(db);
    let _db = fixture.open();
    let events = fixture.journal_events();
    assert_eq!(
        events[before..before + 2],
        ["asked", "card_shown"],
        "{events:?}"
    );
    fixture.journal_verifies();
}
