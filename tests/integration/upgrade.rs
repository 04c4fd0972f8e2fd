//! Upgrades: a database and journal that a released consentd left behind open under this build
//! and migrate, and a database a newer consentd wrote is refused with what to do.
//!
//! `fixtures/upgrade/<version>/` is a stopped daemon's state as that release left it: an
//! executed record, a declined one and one whose card was still open, with the journal, the
//! HMAC key and `records.json` (each record's id and state then). It is written by
//! [`write_the_release_fixture`], run by hand with the release's binary when one is cut.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use consentd_store::inspect::{tamper, Inspect};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use consentd_emulator::{ChatSpec, UserSpec};

use crate::fixture::{consentd, good_ask, noon_today, stdout, Daemon, OWNER};

/// The release whose state this build must open: the last one cut.
const RELEASE: &str = "0.1.0";

/// The files of a state directory a release leaves, and the mode the daemon wants each in.
const STATE_FILES: [(&str, u32); 3] = [
    ("consentd.db", 0o600),
    ("decisions.jsonl", 0o640),
    ("press.key", 0o600),
];

fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/upgrade/{RELEASE}"))
}

/// Asks on `daemon` and returns the record's id.
fn ask(daemon: &Daemon, text: &str) -> String {
    let answer = daemon.request(&good_ask(text));
    answer["id"].as_str().expect("an id").to_owned()
}

/// Writes `fixtures/upgrade/<RELEASE>/` from this build: run it with the release's code, once.
#[test]
#[ignore = "writes fixtures/upgrade/: run by hand, on the release's own code, when one is cut"]
fn write_the_release_fixture() {
    let mut daemon = Daemon::start();
    let executed = ask(&daemon, "Posted before the upgrade");
    daemon.press_yes(&daemon.card_of(&executed));
    daemon.wait_state(&executed, "executed");
    let declined = ask(&daemon, "Declined before the upgrade");
    daemon.press_no(&daemon.card_of(&declined));
    daemon.wait_state(&declined, "declined");
    let open = ask(&daemon, "Still open at the upgrade");
    daemon.card_of(&open);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let out = release_dir();
    std::fs::create_dir_all(&out).unwrap();
    for (file, _) in STATE_FILES {
        std::fs::copy(daemon.state_dir.join(file), out.join(file)).unwrap();
    }
    let records = json!({ executed: "executed", declined: "declined", open: "card_shown" });
    std::fs::write(out.join("records.json"), format!("{records:#}\n")).unwrap();
}

/// Copies the release's state into a fresh directory, with the modes the daemon wants.
fn release_state() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (file, mode) in STATE_FILES {
        let to = state.join(file);
        std::fs::copy(release_dir().join(file), &to)
            .unwrap_or_else(|e| panic!("fixtures/upgrade/{RELEASE}/{file}: {e}"));
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    dir
}

fn release_records() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(release_dir().join("records.json")).unwrap();
    let Value::Object(records) = serde_json::from_str(&text).unwrap() else {
        panic!("records.json is not an object");
    };
    records
}

/// Each record's state, read from the database, polled until it is `expected` (the sweep that
/// expires an old card runs just after start).
fn wait_for_states(state_dir: &Path, expected: &BTreeMap<String, String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now: BTreeMap<String, String> = Inspect::open_read_only(state_dir)
            .unwrap()
            .records()
            .unwrap()
            .into_iter()
            .filter(|row| expected.contains_key(&row.id))
            .map(|row| (row.id, row.state.as_str().to_owned()))
            .collect();
        if &now == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after the upgrade: {now:?}, not {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_last_releases_database_and_journal_open_migrate_and_go_on() {
    let dir = release_state();
    let state_dir = dir.path().join("state");
    let before = Inspect::open_read_only(&state_dir)
        .unwrap()
        .schema()
        .unwrap();
    assert!(
        before <= consentd_store::SCHEMA,
        "the fixture is newer ({before}) than this build ({})",
        consentd_store::SCHEMA
    );
    let mut daemon = Daemon::builder().try_start_in(dir).unwrap();
    let schema = Inspect::open_read_only(&daemon.state_dir)
        .unwrap()
        .schema()
        .unwrap();
    assert_eq!(schema, consentd_store::SCHEMA);

    // The release's records were asked at noon of the day it was cut: 20 minutes past noon
    // today is past the open card's 15 minutes whatever day the test runs.
    daemon.pass_time_to(noon_today() + chrono::Duration::minutes(20));

    // Every record the release left is there; what ended stays as it ended, and the card that
    // was open has expired, never run.
    let expected: BTreeMap<String, String> = release_records()
        .into_iter()
        .map(|(id, then)| {
            let now = match then.as_str().unwrap() {
                "card_shown" => "expired",
                ended => ended,
            };
            (id, now.to_owned())
        })
        .collect();
    assert_eq!(expected.len(), 3, "records.json: {expected:?}");
    wait_for_states(&daemon.state_dir, &expected);
    assert_eq!(daemon.runs(), 0, "nothing the release left ran again");

    // A new ask after the upgrade is carded, pressed and run once, and its lines continue the
    // release's chain: the whole journal verifies.
    let id = ask(&daemon, "Posted after the upgrade");
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    assert_eq!(daemon.runs(), 1);
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let journal = daemon.journal.to_str().unwrap().to_owned();
    let verified = consentd(&["journal", "verify", &journal]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let release_lines = std::fs::read_to_string(release_dir().join("decisions.jsonl"))
        .unwrap()
        .lines()
        .count();
    let lines = std::fs::read_to_string(&daemon.journal).unwrap();
    assert!(
        lines.lines().count() > release_lines,
        "the upgraded daemon wrote nothing after the release's lines"
    );
    assert!(
        lines.starts_with(&std::fs::read_to_string(release_dir().join("decisions.jsonl")).unwrap()),
        "the release's lines were changed"
    );
}

#[test]
fn a_database_a_newer_consentd_wrote_is_refused_and_left_as_it_was() {
    let mut daemon = Daemon::start();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let newer = consentd_store::SCHEMA + 1;
    tamper::set_schema(&daemon.state_dir, newer).unwrap();
    let db = daemon.state_dir.join("consentd.db");
    let bytes = std::fs::read(&db).unwrap();
    let failure = daemon
        .try_restart_with(Vec::new())
        .expect_err("a newer database was opened");
    let said = failure.to_string();
    for words in [
        format!("the database is at schema {newer}, newer than this consentd knows"),
        "Run the newer binary again, or restore the backup taken before the upgrade".to_owned(),
        "docs/OPERATOR.md, \"Upgrading\"".to_owned(),
    ] {
        assert!(said.contains(&words), "{words:?} not in: {said}");
    }
    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "the refused database was changed"
    );
}

/// A button drawn before an upgrade that signs buttons otherwise (another format version), or
/// under a key since rotated (another key id): the owner, in their own chat, is told it is from
/// before the upgrade; anyone else, or anywhere else, only "not accepted". Either way nothing is
/// done, and the press is journaled as rejected.
#[test]
fn a_button_from_before_an_upgrade_tells_the_owner_so_and_does_nothing() {
    const BEFORE: &str = "This button was drawn before consentd was upgraded or its key was \
                          changed, and no longer answers. Ask again.";
    const NOT_ACCEPTED: &str = "Not accepted.";
    let daemon = Daemon::start();
    let id = ask(&daemon, "pressed with an old button");
    let card = daemon.card_of(&id);
    let yes = card.buttons()[0].callback_data.clone().unwrap();
    let parts: Vec<&str> = yes.split('.').collect();
    let with = |index: usize, value: &str| {
        let mut changed = parts.clone();
        changed[index] = value;
        changed.join(".")
    };
    let older_version = with(0, "0");
    let newer_version = with(0, "2");
    let other_key = with(1, if parts[1] == "0000" { "ffff" } else { "0000" });
    let owner = UserSpec::new(OWNER, "Mila");
    let stranger = UserSpec::new(777, "Eve");
    let cases = [
        (
            "an older format, the owner in their chat",
            &older_version,
            &owner,
            ChatSpec::private(OWNER),
            BEFORE,
            "wrong_version",
        ),
        (
            "a newer format, the owner in their chat",
            &newer_version,
            &owner,
            ChatSpec::private(OWNER),
            BEFORE,
            "wrong_version",
        ),
        (
            "a rotated key, the owner in their chat",
            &other_key,
            &owner,
            ChatSpec::private(OWNER),
            BEFORE,
            "stale_key",
        ),
        (
            "an older format, a stranger in their chat",
            &older_version,
            &stranger,
            ChatSpec::private(777),
            NOT_ACCEPTED,
            "wrong_version",
        ),
        (
            "a rotated key, a stranger in the owner's chat id",
            &other_key,
            &stranger,
            ChatSpec::private(OWNER),
            NOT_ACCEPTED,
            "stale_key",
        ),
        (
            "an older format, the owner in a group",
            &older_version,
            &owner,
            ChatSpec::group(4242),
            NOT_ACCEPTED,
            "wrong_version",
        ),
    ];
    for (case, data, from, chat, toast, code) in cases {
        let answers = daemon.bot.callback_answers().len();
        let rejected = rejections(&daemon);
        daemon.bot.push_press(from, chat, card.message_id, data);
        daemon.wait_for(&format!("{case}: the toast {toast:?}"), |bot| {
            bot.callback_answers()
                .iter()
                .skip(answers)
                .any(|answer| answer.text.as_deref() == Some(toast))
        });
        daemon.wait_for(&format!("{case}: press_rejected {code}"), |_| {
            rejections(&daemon).len() > rejected.len()
        });
        assert_eq!(
            rejections(&daemon).last().map(String::as_str),
            Some(code),
            "{case}"
        );
        assert_eq!(
            status_of(&daemon, &id),
            "card_shown",
            "{case}: the card moved"
        );
    }
    assert_eq!(daemon.runs(), 0);
    // The card's own Yes still counts.
    daemon.press_yes(&card);
    daemon.wait_state(&id, "executed");
}

/// The codes of every `press_rejected` line so far, in order.
fn rejections(daemon: &Daemon) -> Vec<String> {
    daemon
        .journal_events()
        .iter()
        .filter(|event| event["ev"] == "press_rejected")
        .map(|event| event["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn status_of(daemon: &Daemon, id: &str) -> String {
    let answer = daemon.request(&json!({"v": 1, "op": "status", "id": id}));
    answer["status"].as_str().unwrap_or_default().to_owned()
}
