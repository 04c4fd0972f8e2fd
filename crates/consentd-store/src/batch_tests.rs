//! Group commit ([`crate::batch`]): savepoints, one commit per batch, answers only once durable.

use std::sync::mpsc;

use super::events::{EventName, JournalEvent};
use super::tests::{t0, Fixture};
use super::{Store, StoreError};
use crate::journal;

/// A write that journals `settings` with `tag`, and fails after it when `fail`.
fn tagged_write(db: &mut super::Db, tag: &str, fail: bool) -> Result<(), StoreError> {
    let tag = tag.to_owned();
    db.write(t0(), move |_, events| {
        events.push(JournalEvent::new(EventName::Settings).with("tag", tag));
        if fail {
            Err(StoreError::Missing)
        } else {
            Ok(())
        }
    })
}

fn tags(fixture: &Fixture) -> Vec<String> {
    std::fs::read_to_string(&fixture.journal_path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["tag"].as_str().map(str::to_owned)
        })
        .collect()
}

#[test]
fn a_failed_write_rolls_back_its_own_savepoint_and_no_other() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let commits = db.commits();
    db.begin_batch().unwrap();
    tagged_write(&mut db, "a", false).unwrap();
    assert!(matches!(
        tagged_write(&mut db, "b", true),
        Err(StoreError::Missing)
    ));
    tagged_write(&mut db, "c", false).unwrap();
    // Nothing reaches the journal file before the batch commits.
    assert_eq!(tags(&fixture), Vec::<String>::new());
    db.finish_batch().unwrap();
    assert_eq!(db.commits(), commits + 1, "one commit for the batch");
    assert_eq!(
        tags(&fixture),
        ["a", "c"],
        "b's staged line was rolled back"
    );
    let head = fixture.journal_verifies();
    assert_eq!(head, db.journal_head());
    // The chain goes on from the batch's last line.
    tagged_write(&mut db, "d", false).unwrap();
    assert_eq!(tags(&fixture), ["a", "c", "d"]);
    fixture.journal_verifies();
}

#[test]
fn a_crash_before_the_batch_commits_leaves_none_of_it() {
    let fixture = Fixture::new();
    {
        let mut db = fixture.open();
        tagged_write(&mut db, "before", false).unwrap();
        db.begin_batch().unwrap();
        tagged_write(&mut db, "lost-1", false).unwrap();
        tagged_write(&mut db, "lost-2", false).unwrap();
        // Dropped with the batch open: the connection closes without COMMIT, as a kill would.
    }
    let db = fixture.open();
    assert_eq!(tags(&fixture), ["before"]);
    let staged: i64 = db
        .connection()
        .query_row("SELECT last_n FROM journal_state", [], |row| row.get(0))
        .unwrap();
    assert_eq!(
        staged as u64,
        db.journal_head().n,
        "store and journal agree"
    );
    fixture.journal_verifies();
}

/// A store whose thread is held by a first request until `release` is sent, so the requests
/// queued meanwhile are one batch.
async fn held_store(dir: &std::path::Path) -> (Store, super::StoreThread, mpsc::Sender<()>) {
    let (store, thread, _) = Store::open(dir, &dir.join("j.jsonl"), t0()).unwrap();
    let (release, held) = mpsc::channel::<()>();
    let (started, running) = tokio::sync::oneshot::channel();
    let holder = store.submit(move |_| {
        let _ = started.send(());
        held.recv().unwrap();
        Ok(())
    });
    drop(holder);
    running.await.unwrap();
    (store, thread, release)
}

#[tokio::test]
async fn requests_waiting_together_share_one_commit_and_are_answered_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, thread, release) = held_store(dir.path()).await;
    let answers: Vec<_> = (0..50)
        .map(|i| {
            store
                .submit(move |db| tagged_write(db, &format!("w{i}"), i == 7).map(|()| i))
                .unwrap()
        })
        .collect();
    let commits_before = store.submit(|db| Ok(db.commits())).unwrap();
    release.send(()).unwrap();
    for (i, answer) in answers.into_iter().enumerate() {
        let answer = answer.await.unwrap();
        if i == 7 {
            assert!(matches!(answer, Err(StoreError::Missing)), "{answer:?}");
        } else {
            assert_eq!(answer.unwrap(), i);
        }
    }
    let seen_in_batch = commits_before.await.unwrap().unwrap();
    let after = store.call(|db| Ok(db.commits())).await.unwrap();
    assert_eq!(after, seen_in_batch + 1, "the 50 writes were one commit");
    let journal_path = dir.path().join("j.jsonl");
    let text = std::fs::read_to_string(&journal_path).unwrap();
    let written: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["tag"].as_str().map(str::to_owned)
        })
        .collect();
    let expected: Vec<String> = (0..50)
        .filter(|&i| i != 7)
        .map(|i| format!("w{i}"))
        .collect();
    assert_eq!(written, expected, "the chain is in the order of the writes");
    assert!(journal::verify_file(&journal_path, None).unwrap().is_ok());
    store.close();
    thread.join();
}

/// SQLite rolls back the whole transaction itself on some errors (SQLITE_FULL, SQLITE_IOERR,
/// SQLITE_NOMEM: "either the individual statement or the entire transaction is rolled back").
/// Inside a batch that ends the batch's transaction under its savepoints: the next write's
/// `SAVEPOINT` then opens a transaction of its own and its `RELEASE` commits it, so its rows and
/// staged lines are committed while the batch's `COMMIT` fails and every request is told so;
/// its lines never reach the file, and from then on the database's chain is ahead of the
/// file's, so every later append is refused until a restart. Simulated here with the
/// `ROLLBACK` SQLite would have done.
#[test]
fn a_transaction_sqlite_rolled_back_mid_batch_commits_nothing_and_the_store_goes_on() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    tagged_write(&mut db, "before", false).unwrap();
    db.begin_batch().unwrap();
    tagged_write(&mut db, "a", false).unwrap();
    let failed = db.write(t0(), |tx, events| {
        events.push(JournalEvent::new(EventName::Settings).with("tag", "b"));
        tx.execute_batch("ROLLBACK").unwrap();
        Err::<(), _>(StoreError::Missing)
    });
    assert!(failed.is_err());
    let c = tagged_write(&mut db, "c", false);
    let finished = db.finish_batch();
    let committed: i64 = db
        .connection()
        .query_row("SELECT last_n FROM journal_state", [], |row| row.get(0))
        .unwrap();
    if c.is_ok() && finished.is_err() {
        assert_eq!(
            committed as u64,
            db.journal_head().n,
            "c was told its batch failed, yet its lines are committed and not in the file"
        );
    }
    tagged_write(&mut db, "after", false).expect("the store goes on after a failed batch");
    fixture.journal_verifies();
}

fn staged_rows(db: &super::Db) -> i64 {
    db.connection()
        .query_row("SELECT count(*) FROM journal_staged", [], |row| row.get(0))
        .unwrap()
}

#[test]
fn a_batch_of_reads_alone_writes_nothing_and_the_next_write_prunes_what_the_file_has() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    db.begin_batch().unwrap();
    tagged_write(&mut db, "a", false).unwrap();
    db.finish_batch().unwrap();
    let staged = staged_rows(&db);
    assert!(
        staged >= 1,
        "a's line is staged until a later write prunes it"
    );
    // Reads only: the staged rows stay, so the batch changed no page and cost no fsync.
    db.begin_batch().unwrap();
    let _ = db.journal_head();
    db.finish_batch().unwrap();
    assert_eq!(staged_rows(&db), staged);
    // The next write prunes the lines the file has; its own line is staged.
    db.begin_batch().unwrap();
    tagged_write(&mut db, "b", false).unwrap();
    db.finish_batch().unwrap();
    assert_eq!(staged_rows(&db), 1);
    assert_eq!(tags(&fixture), ["a", "b"]);
    fixture.journal_verifies();
}

/// A read that comes before a batch's first write is answered at once: it saw only what earlier
/// batches committed. A read after a write waits for the batch's lines to be in the journal
/// file, since it may have seen that write, and so does the write; a card's opening (answered at
/// the commit) is answered once the batch commits, before its lines reach the file.
#[test]
fn reads_before_the_first_write_are_answered_at_once_and_the_rest_once_durable() {
    use std::sync::{Arc, Mutex};
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let journal = fixture.journal_path.clone();
    // What each answer saw when it was given: the job's name, whether the write's line was in
    // the journal file by then, and whether the batch had committed.
    type Seen = (&'static str, bool, bool);
    let answered: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let job = |name: &'static str, write: bool, at_commit: bool| -> super::Job {
        let answered = answered.clone();
        let journal = journal.clone();
        let db_path = fixture.db_path.clone();
        let mut job = super::Job::new(move |db: &mut super::Db| -> super::Answer {
            if write {
                tagged_write(db, "w", false).unwrap();
            } else {
                db.journal_head();
            }
            Box::new(move |failed: Option<&StoreError>| {
                assert!(failed.is_none(), "{name}: {failed:?}");
                let in_file = std::fs::read_to_string(&journal)
                    .unwrap()
                    .contains("\"tag\":\"w\"");
                // Another connection sees the write only once it is committed.
                let committed: i64 = rusqlite::Connection::open(&db_path)
                    .unwrap()
                    .query_row(
                        "SELECT count(*) FROM journal_staged WHERE line LIKE '%\"tag\":\"w\"%'",
                        [],
                        |row| row.get(0),
                    )
                    .unwrap();
                answered
                    .lock()
                    .unwrap()
                    .push((name, in_file, committed > 0));
            })
        });
        job.at_commit = at_commit;
        job
    };
    let jobs = vec![
        job("read first", false, false),
        job("read second", false, false),
        job("write", true, false),
        job("opening", false, true),
        job("read after", false, false),
    ];
    super::run_batch(&mut db, jobs, &super::Bells::unheard());
    db.append_journal(&[]).unwrap();
    assert_eq!(
        *answered.lock().unwrap(),
        [
            ("read first", false, false),
            ("read second", false, false),
            ("opening", false, true),
            ("write", true, true),
            ("read after", true, true)
        ]
    );
}

/// The job of a batch: an ask for the owner's chat (42), which queues its card.
fn ask_job(text: &'static str, answered: mpsc::Sender<bool>) -> super::Job {
    super::Job::new(move |db: &mut super::Db| -> super::Answer {
        let ask = super::tests::new_ask("publish_x", text, None);
        let policy = crate::AskPolicy {
            card_chat: Some(42),
            ..super::tests::policy()
        };
        db.ask(&ask, policy, t0()).unwrap();
        Box::new(move |failed: Option<&StoreError>| {
            answered.send(failed.is_none()).unwrap();
        })
    })
}

/// A batch whose `COMMIT` fails after an ask queued its card: the card's row goes with the
/// failed commit and the sender is not rung, so the card is never sent; the ask is told its
/// batch failed. The same ask in a batch that commits rings the sender for its card.
#[test]
fn a_card_whose_batch_fails_to_commit_is_never_sent() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    // A deferred foreign key fails only at `COMMIT`: a batch that broke it cannot commit.
    db.connection()
        .execute_batch(
            "CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TEMP TABLE child (parent INTEGER REFERENCES parent (id)
                 DEFERRABLE INITIALLY DEFERRED);",
        )
        .unwrap();
    let bells = super::Bells::unheard();
    let (answered, answers) = mpsc::channel();
    let breaks_the_commit = super::Job::new(|db: &mut super::Db| -> super::Answer {
        db.connection()
            .execute("INSERT INTO child (parent) VALUES (7)", [])
            .unwrap();
        Box::new(|_| {})
    });
    let jobs = vec![
        ask_job("queues its card", answered.clone()),
        breaks_the_commit,
    ];
    super::run_batch(&mut db, jobs, &bells);
    assert_eq!(
        answers.try_recv(),
        Ok(false),
        "the ask is told its batch failed"
    );
    let rung = bells.outbox.notified();
    tokio::pin!(rung);
    assert!(!poll_once(rung.as_mut()), "the sender was rung for nothing");
    let cards: i64 = db
        .connection()
        .query_row("SELECT count(*) FROM outbox", [], |row| row.get(0))
        .unwrap();
    assert_eq!(cards, 0, "the card's row went with the failed commit");
    fixture.journal_verifies();

    super::run_batch(&mut db, vec![ask_job("queues its card", answered)], &bells);
    db.append_journal(&[]).unwrap();
    assert_eq!(answers.try_recv(), Ok(true), "committed");
    assert!(poll_once(rung.as_mut()), "the sender was rung for the card");
}

/// Whether a future is ready at its first poll.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> bool {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    future.poll(&mut context).is_ready()
}

/// Once the journal file cannot be written, nothing more is committed: a batch that would stage
/// lines (and send or start what they tell of) is rolled back and every request in it answered
/// with the failure, so nothing goes out whose line could not reach the file.
#[test]
fn once_the_journal_file_fails_no_batch_commits() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    tagged_write(&mut db, "before", false).unwrap();
    assert_eq!(db.journal_failed(), None);
    // A line that does not continue the chain: the file refuses it and is done.
    let (done, failed) = mpsc::channel();
    db.journal_then(
        vec![consentd_core::journal::Line {
            n: 999,
            h: "0".repeat(64),
            text: "{}\n".to_owned(),
        }],
        Box::new(move |failure| {
            let _ = done.send(failure.map(ToString::to_string));
        }),
    );
    assert!(failed.recv().unwrap().is_some(), "the bad line was taken");
    assert!(db.journal_failed().is_some());
    let commits = db.commits();
    db.begin_batch().unwrap();
    tagged_write(&mut db, "after", false).unwrap();
    assert!(matches!(
        db.commit_batch(),
        Err(StoreError::JournalWrite(_))
    ));
    assert_eq!(db.commits(), commits, "nothing committed after the failure");
    assert_eq!(tags(&fixture), ["before"], "nothing more reached the file");
}
