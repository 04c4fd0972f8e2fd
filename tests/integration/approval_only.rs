//! An approval-only category (`mode = "approve"`) through a real daemon: it ends `approved` on
//! a Yes or under a mandate and never runs anything, and a Yes does what its card said even
//! when the config changed since. After each case the journal verifies.

use serde_json::json;

use crate::fixture::{Daemon, OWNER};
use crate::mandates::{events_of, receipt_of};
use crate::withdraw::{daemon, grant_kind, id_of, journal_verifies, shell_ask, wait_edited};

#[test]
fn an_approve_category_ends_approved_and_runs_nothing() {
    let daemon = daemon().start();
    // Yes: approved, and nothing runs; the card said the agent runs it itself.
    let yes = id_of(&daemon.request(&shell_ask("cargo publish")));
    let card = daemon.card_of(&yes);
    let text = card.text.clone().unwrap();
    assert!(
        text.contains("The agent will run this itself if you approve. consentd runs nothing."),
        "{text}"
    );
    daemon.press_yes(&card);
    let status = daemon.wait_state(&yes, "approved");
    assert_eq!(status["final"], true);
    wait_edited(&daemon, &card, "approved: the agent runs it itself");
    assert_eq!(
        events_of(&daemon, &yes),
        ["asked", "card_shown", "approved"]
    );
    let line = daemon.wait_for_event("approved");
    assert_eq!(
        (&line["id"], &line["kind"], &line["by"]),
        (&json!(yes), &json!("shell"), &json!(OWNER))
    );
    assert_eq!(daemon.cli(&["status", &yes]).status.code(), Some(0));
    journal_verifies(&daemon, "approve yes", Some(&yes));
    // No: declined, as for any card.
    let no = id_of(&daemon.request(&shell_ask("cargo yank")));
    daemon.press_no(&daemon.card_of(&no));
    daemon.wait_state(&no, "declined");
    journal_verifies(&daemon, "approve no", Some(&no));
    // A mandate covers a mandate_ok approve kind: approved at once, with a receipt; no card.
    grant_kind(&daemon, "shell", 1, 5);
    let covered = daemon.request(&shell_ask("make docs"));
    let covered_id = id_of(&covered);
    daemon.wait_state(&covered_id, "approved");
    let receipt = receipt_of(&daemon, &covered_id);
    assert!(
        receipt
            .text
            .unwrap()
            .contains("approved: the agent runs it itself"),
        "the receipt shows the outcome"
    );
    assert_eq!(
        events_of(&daemon, &covered_id),
        ["asked", "mandate_use", "approved"],
        "approved by the mandate: never granted, claimed (`used`) or run"
    );
    assert_eq!(daemon.runs(), 0, "consentd ran nothing");
    journal_verifies(&daemon, "approve under a mandate", Some(&covered_id));
}

#[test]
fn a_claim_of_an_approve_category_never_starts_its_command() {
    // `shell` runs the fixture's script at first, and the daemon stops between the Yes and
    // the claim; it comes back with `shell` approval-only. The claim of the yes it finds
    // granted must not start anything.
    let run_category = r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
enabled = true
text = "required"
command = ["/bin/sh", "{dir}/action.sh"]
"#;
    let mut daemon = Daemon::builder()
        .config_tail(run_category)
        .env("CONSENTD_CRASH_AT", "before_claim")
        .start();
    let id = id_of(
        &daemon.request(&json!({"v":1,"op":"ask","kind":"shell","text":"make",
        "wait":false})),
    );
    daemon.press_yes(&daemon.card_of(&id));
    let status = daemon.wait_exit();
    assert!(!status.success(), "stopped at the claim");
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let dir = daemon.dir.path().display().to_string();
    let approve = config.replace(
        &format!("text = \"required\"\ncommand = [\"/bin/sh\", \"{dir}/action.sh\"]\n"),
        "text = \"required\"\nmode = \"approve\"\n",
    );
    assert_ne!(approve, config, "the config changed");
    std::fs::write(&daemon.config, approve).unwrap();
    let daemon = daemon.restart();
    let record = daemon.wait_state(&id, "failed");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("approval-only"),
        "{record}"
    );
    assert_eq!(daemon.runs(), 0, "nothing ran");
    assert_eq!(daemon.wait_for_event("failed")["detail"], "not_started");
    journal_verifies(&daemon, "claim of an approve category", Some(&id));
}

#[test]
fn a_yes_does_what_the_card_said_even_when_the_mode_changed_since() {
    // Asked while `shell` was approval-only: its card says the agent runs it. The daemon comes
    // back with `shell` running a command; the owner's Yes on that card must still run nothing.
    let mut daemon = daemon().start();
    let id = id_of(&daemon.request(&shell_ask("make deploy")));
    let card = daemon.card_of(&id);
    daemon.stop_with(nix::sys::signal::Signal::SIGTERM);
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let dir = daemon.dir.path().display().to_string();
    let runs = config.replace(
        "mode = \"approve\"\n",
        &format!("command = [\"/bin/sh\", \"{dir}/action.sh\"]\n"),
    );
    assert_ne!(runs, config, "the config changed");
    std::fs::write(&daemon.config, runs).unwrap();
    let daemon = daemon.restart();
    daemon.press_yes(&card);
    assert_eq!(daemon.wait_state(&id, "approved")["final"], true);
    daemon.settle();
    assert_eq!(daemon.runs(), 0, "nothing ran");
    journal_verifies(&daemon, "a yes after the mode changed", Some(&id));
}

/// A kind the config no longer has is off, whatever the owner's stored switch says: a yes given
/// before it was removed ends refused at the claim (`category_off`), never claimed with no
/// command to run, which the next start would call an unknown outcome.
#[test]
fn a_yes_claimed_after_its_kind_left_the_config_is_refused() {
    let off_by_config = r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
enabled = false
text = "required"
command = ["/bin/sh", "{dir}/action.sh"]
"#;
    let mut daemon = Daemon::builder()
        .config_tail(off_by_config)
        .env("CONSENTD_CRASH_AT", "before_claim")
        .start();
    // The owner's On is stored, and outlives the category.
    let line = crate::owner::say(
        &daemon,
        "/categories",
        "Run a shell command (external): off",
    );
    daemon.tap(&line, 0);
    daemon.wait_for_event("category_on");
    let id = id_of(
        &daemon.request(&json!({"v":1,"op":"ask","kind":"shell","text":"make",
        "wait":false})),
    );
    daemon.press_yes(&daemon.card_of(&id));
    assert!(!daemon.wait_exit().success(), "stopped at the claim");
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let start = config.find("[categories.shell]").unwrap();
    let end = config[start + 1..]
        .find("\n[")
        .map_or(config.len(), |at| start + 1 + at + 1);
    let without = format!("{}{}", &config[..start], &config[end..]);
    assert!(!without.contains("categories.shell"), "{without}");
    std::fs::write(&daemon.config, without).unwrap();
    let daemon = daemon.restart();
    let record = daemon.wait_state(&id, "refused");
    assert_eq!(record["reason"], "category_off", "{record}");
    assert_eq!(daemon.runs(), 0, "nothing ran");
    journal_verifies(&daemon, "a claim after the kind left the config", Some(&id));
}
