//! Exact rules in the store: Always saves one rule in the Yes's transaction, the same exact call
//! is answered (counted and journaled), any other call is not, and a removed rule answers
//! nothing.

use chrono::{DateTime, Duration, Utc};

use super::tests::{card, monotonic, new_ask, policy, t0, Fixture};
use super::{AskOutcome, Db, Decided, OwnerDecision, RecordState, StoreError};
use consentd_core::exact::{HookCall, RuleQuery};

const UID: u32 = 1000;

fn call(agent: &str, tool: &str, cwd: &str) -> HookCall {
    HookCall {
        agent: agent.to_owned(),
        tool: tool.to_owned(),
        cwd: cwd.to_owned(),
    }
}

fn blog() -> HookCall {
    call("claude-code", "Bash", "/home/mila/src/blog")
}

fn decided(decided: Decided) -> OwnerDecision {
    OwnerDecision {
        next_offset: None,
        decided,
    }
}

/// A hook's gate ask of `text`, approval-only, with its card shown.
fn shown_gate(db: &mut Db, text: &str) -> String {
    shown_gate_of(db, "shell", text)
}

fn shown_gate_of(db: &mut Db, kind: &str, text: &str) -> String {
    let ask = super::NewAsk {
        agent_runs: true,
        hook: Some(blog()),
        monotonic: monotonic(),
        ..new_ask(kind, text, None)
    };
    let id = match db.ask(&ask, policy(), t0()).unwrap() {
        AskOutcome::Created(record) => record.id,
        other => panic!("{other:?}"),
    };
    db.transition(
        &id,
        RecordState::Pending,
        RecordState::CardShown,
        super::StateChange::default(),
        Vec::new(),
        t0(),
    )
    .unwrap();
    id
}

fn always(db: &mut Db, id: &str, at: DateTime<Utc>) -> Result<super::Applied, StoreError> {
    db.decide(&decided(Decided::Always(card(id))), at)
}

fn query(kind: &str, call: HookCall, text: &str) -> RuleQuery {
    RuleQuery {
        kind: kind.to_owned(),
        call,
        text: text.to_owned(),
    }
}

fn journal_lines(fixture: &Fixture) -> Vec<serde_json::Value> {
    std::fs::read_to_string(&fixture.journal_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A store with one gate card for `text` shown and answered Always: the fixture, the store and
/// the card's record id.
fn saved_rule(text: &str) -> (Fixture, Db, String) {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_gate(&mut db, text);
    always(&mut db, &id, t0()).unwrap();
    (fixture, db, id)
}

#[test]
fn always_approves_and_saves_one_rule_without_its_text_in_the_journal() {
    let (fixture, db, id) = saved_rule("cargo test");
    assert_eq!(
        db.record(&id).unwrap().unwrap().state,
        RecordState::Approved
    );
    let rules = db.live_rules().unwrap();
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert!(consentd_core::exact::is_rule_id(&rule.id), "{}", rule.id);
    assert_eq!(
        (rule.peer_uid, rule.agent.as_str(), rule.tool.as_str()),
        (UID, "claude-code", "Bash")
    );
    assert_eq!(
        (rule.cwd.as_str(), rule.command.as_str(), rule.kind.as_str()),
        ("/home/mila/src/blog", "cargo test", "shell")
    );
    assert_eq!(rule.uses, 0);
    let lines = journal_lines(&fixture);
    let saved = lines.iter().find(|l| l["ev"] == "rule_saved").unwrap();
    assert_eq!(saved["rule"], rule.id.as_str());
    assert_eq!(saved["id"], id.as_str());
    assert_eq!(saved["command"], rule.command_sha256.as_str());
    assert!(lines.iter().any(|l| l["ev"] == "approved"));
    let text = std::fs::read_to_string(&fixture.journal_path).unwrap();
    assert!(
        !text.contains("cargo test"),
        "the text stays out of the journal"
    );
    assert!(!text.contains("/home/mila"), "so does the directory");
    fixture.journal_verifies();
}

#[test]
fn an_always_on_a_card_no_longer_shown_saves_nothing() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_gate(&mut db, "cargo test");
    super::tests::approve(&mut db, &id, t0()).unwrap();
    let error = always(&mut db, &id, t0()).unwrap_err();
    assert!(matches!(error, StoreError::StateConflict { .. }), "{error}");
    assert!(db.live_rules().unwrap().is_empty());
}

#[test]
fn only_the_exact_call_is_answered_and_each_use_is_counted() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_gate(&mut db, "cargo test");
    always(&mut db, &id, t0()).unwrap();
    let rule = db.live_rules().unwrap().remove(0);
    let other_dir = call("claude-code", "Bash", "/home/mila/src/shop");
    let other_agent = call("codex", "Bash", "/home/mila/src/blog");
    let other_tool = call("claude-code", "Shell", "/home/mila/src/blog");
    // (what differs, the uid, the question)
    let misses = [
        (
            "a trailing space",
            UID,
            query("shell", blog(), "cargo test "),
        ),
        (
            "a longer line",
            UID,
            query("shell", blog(), "cargo test && rm -rf build"),
        ),
        (
            "another directory",
            UID,
            query("shell", other_dir, "cargo test"),
        ),
        (
            "another agent",
            UID,
            query("shell", other_agent, "cargo test"),
        ),
        (
            "another tool",
            UID,
            query("shell", other_tool, "cargo test"),
        ),
        ("another kind", UID, query("deploy", blog(), "cargo test")),
        ("another uid", UID + 1, query("shell", blog(), "cargo test")),
    ];
    for (what, uid, question) in &misses {
        assert_eq!(db.use_rule(*uid, question, t0()).unwrap(), None, "{what}");
    }
    let exact = query("shell", blog(), "cargo test");
    for n in 1..=2 {
        let at = t0() + Duration::minutes(n);
        assert_eq!(db.use_rule(UID, &exact, at).unwrap(), Some(rule.id.clone()));
    }
    assert_eq!(db.saved_rule(&rule.id).unwrap().unwrap().uses, 2);
    let used: Vec<_> = journal_lines(&fixture)
        .into_iter()
        .filter(|l| l["ev"] == "rule_used")
        .collect();
    assert_eq!(used.len(), 2, "one line per use, none for a miss");
    assert_eq!(used[0]["rule"], rule.id.as_str());
    assert_eq!(used[0]["kind"], "shell");
    let counts = db.day_counts(t0(), t0() + Duration::days(1)).unwrap();
    assert_eq!(counts.by_rules, 2);
}

#[test]
fn the_same_call_saved_twice_keeps_one_rule() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = shown_gate(&mut db, "cargo test");
    let second = shown_gate(&mut db, "cargo test");
    always(&mut db, &first, t0()).unwrap();
    always(&mut db, &second, t0()).unwrap();
    assert_eq!(db.live_rules().unwrap().len(), 1);
    assert_eq!(
        db.record(&second).unwrap().unwrap().state,
        RecordState::Approved
    );
}

#[test]
fn the_same_call_saved_for_another_kind_is_a_rule_of_its_own() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let first = shown_gate_of(&mut db, "shell", "cargo test");
    let second = shown_gate_of(&mut db, "shell_b", "cargo test");
    always(&mut db, &first, t0()).unwrap();
    always(&mut db, &second, t0()).unwrap();
    let mut kinds: Vec<String> = db
        .live_rules()
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["shell", "shell_b"]);
    for kind in ["shell", "shell_b"] {
        let found = db
            .use_rule(UID, &query(kind, blog(), "cargo test"), t0())
            .unwrap();
        assert!(found.is_some(), "{kind}");
    }
}

#[test]
fn a_removed_rule_answers_nothing_and_is_removed_once() {
    let fixture = Fixture::new();
    let mut db = fixture.open();
    let id = shown_gate(&mut db, "cargo test");
    always(&mut db, &id, t0()).unwrap();
    let rule = db.live_rules().unwrap().remove(0);
    let remove = |rule_id: &str| {
        decided(Decided::RemoveRule {
            rule_id: rule_id.to_owned(),
            by: 42,
            edit: super::Outgoing::MessageEdit {
                chat: 42,
                message_id: 7,
                body: super::outbox::Body::default(),
            },
        })
    };
    assert_eq!(
        db.decide(&remove(&rule.id), t0()).unwrap(),
        super::Applied::Done
    );
    assert_eq!(
        db.decide(&remove(&rule.id), t0()).unwrap(),
        super::Applied::Unchanged
    );
    assert!(db.live_rules().unwrap().is_empty());
    assert!(!db.saved_rule(&rule.id).unwrap().unwrap().is_live());
    let exact = query("shell", blog(), "cargo test");
    assert_eq!(db.use_rule(UID, &exact, t0()).unwrap(), None);
    let removed: Vec<_> = journal_lines(&fixture)
        .into_iter()
        .filter(|l| l["ev"] == "rule_removed")
        .collect();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0]["rule"], rule.id.as_str());
    // Saved again from a new card, it is a new rule.
    let again = shown_gate(&mut db, "cargo test");
    always(&mut db, &again, t0()).unwrap();
    let new = db.live_rules().unwrap().remove(0);
    assert_ne!(new.id, rule.id);
    fixture.journal_verifies();
}

/// A saved rule answers nothing for a kind the owner has switched off, even when the daemon's copy
/// of the switches still said on as the query came in: no `rule_used` line, no use counted.
#[test]
fn a_rule_answers_nothing_once_its_kind_is_switched_off() {
    let (fixture, mut db, _) = saved_rule("cargo test");
    let exact = query("shell", blog(), "cargo test");
    let off = decided(Decided::Switch {
        kind: "shell".to_owned(),
        on: false,
        changed: true,
        by: 42,
        replies: Vec::new(),
    });
    db.decide(&off, t0()).unwrap();
    assert_eq!(db.use_rule(UID, &exact, t0()).unwrap(), None);
    assert!(journal_lines(&fixture)
        .iter()
        .all(|l| l["ev"] != "rule_used"));
    assert_eq!(db.live_rules().unwrap()[0].uses, 0);
}
