//! Runs at most once, across crashes: the daemon dies at each point around a run, 20 times each,
//! and is restarted. No record may run twice, every record ends in exactly one final state, and
//! the journal verifies.

use std::collections::BTreeMap;

use nix::sys::signal::Signal;
use serde_json::json;

use crate::fixture::{consentd, stdout, Daemon};

const ROUNDS: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    BeforeClaim,
    AfterClaim,
    DuringCommand,
    AfterExit,
}

fn crash_around_a_run(point: Point) {
    let mut daemon = Daemon::start();
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let mut expected = BTreeMap::new();
    for round in 0..ROUNDS {
        let env = match point {
            Point::BeforeClaim => vec![("CONSENTD_CRASH_AT".into(), "before_claim".into())],
            Point::AfterClaim => vec![("CONSENTD_CRASH_AT".into(), "after_claim".into())],
            Point::AfterExit => vec![("CONSENTD_CRASH_AT".into(), "after_exit".into())],
            Point::DuringCommand => Vec::new(),
        };
        daemon = daemon.restart_with(env);
        let hold = daemon.dir.path().join("hold");
        let running = daemon.dir.path().join("running");
        let _ = std::fs::remove_file(&running);
        if point == Point::DuringCommand {
            std::fs::write(&hold, "").unwrap();
        }
        let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"publish_x","target":"@m",
            "text": format!("{point:?} round {round}"), "cost_usd":"0.01","wait":false}));
        let id = answer["id"].as_str().unwrap().to_owned();
        daemon.press_yes(&daemon.card_of(&id));
        match point {
            Point::DuringCommand => {
                daemon.wait_for("the command to start", |_| running.exists());
                daemon.stop_with(Signal::SIGKILL);
                std::fs::remove_file(&hold).unwrap();
            }
            _ => {
                let status = daemon.wait_exit();
                assert!(
                    !status.success(),
                    "{point:?} round {round}: the crash point was not reached"
                );
            }
        }
        daemon = daemon.restart();
        let outcome = match point {
            // The yes was durable but nothing was claimed: the restart claims and runs it once.
            Point::BeforeClaim => "executed",
            // A claim without an outcome is never re-run.
            Point::AfterClaim | Point::DuringCommand | Point::AfterExit => "outcome_unknown",
        };
        daemon.wait_state(&id, outcome);
        let ran = usize::from(point != Point::AfterClaim);
        expected.insert(id, ran);
        assert!(daemon.stop_with(Signal::SIGTERM).success());
    }
    // The orphaned commands of DuringCommand finish once released; give them their stdin line.
    let runs = daemon.runs_by_record();
    for (id, ran) in &expected {
        assert_eq!(
            runs.get(id).copied().unwrap_or(0),
            *ran,
            "{point:?}: {id} ran a wrong number of times"
        );
    }
    let events = daemon.journal_events();
    for id in expected.keys() {
        let finals = events
            .iter()
            .filter(|e| e["id"] == id.as_str())
            .filter(|e| {
                matches!(
                    e["ev"].as_str(),
                    Some("executed" | "failed" | "outcome_unknown")
                )
            })
            .count();
        assert_eq!(finals, 1, "{point:?}: {id} has {finals} final states");
        let used = events
            .iter()
            .filter(|e| e["id"] == id.as_str() && e["ev"] == "used")
            .count();
        assert_eq!(used, 1, "{point:?}: {id} was claimed {used} times");
    }
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
}

#[test]
fn a_crash_before_the_claim_runs_the_action_once_after_the_restart() {
    crash_around_a_run(Point::BeforeClaim);
}

#[test]
fn a_crash_after_the_claim_never_runs_the_action() {
    crash_around_a_run(Point::AfterClaim);
}

#[test]
fn a_crash_during_the_command_is_outcome_unknown_and_never_rerun() {
    crash_around_a_run(Point::DuringCommand);
}

#[test]
fn a_crash_after_the_command_exits_is_outcome_unknown_and_never_rerun() {
    crash_around_a_run(Point::AfterExit);
}
