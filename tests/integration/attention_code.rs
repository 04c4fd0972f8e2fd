//! The owner's attention, second week: a coding agent (fixtures/attention/code_week.toml)
//! through `consentd hook claude-code` against the real daemon, with a scripted owner who
//! presses Always here the first time a routine command comes. Each simulated day prints a
//! row — tool calls, passed by the rules file, blocked, passed by a saved exact rule, cards, and
//! cards per 100 tool calls — and each call is checked against what the rules and the owner's
//! rules so far say it must be: a reading command passes with no card, a force push is blocked,
//! a gated command passes with no card only when the owner saved exactly it in exactly that
//! directory before, and draws a card otherwise; every `rule_saved` follows the owner's own
//! Always here on that card.
//!
//! `cargo test --test integration attention_code -- --nocapture` prints the table.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use consentd_emulator::ChatMessage;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::attention::WEEK_TIME_BOUND;
use crate::fixture::{Daemon, OWNER};
use crate::hooks::{event as fixture_event, finish, pre_tool_use, rules_file, spawn_hook};
use crate::hooks_gate::SHELL_CATEGORY;

/// The week, as data.
const WEEK: &str = include_str!("../../fixtures/attention/code_week.toml");

/// Reading passes; a force push is blocked; builds, tests and git are gated to `shell`.
const RULES: &str = r#"
[[rule]]
name = "reading"
tool = "Bash"
program = ["ls", "cat", "wc", "grep"]
action = "pass"

[[rule]]
name = "no force push"
tool = "Bash"
program = "git"
args = '^push (.* )?(--force|-f)( |$)'
action = "block"
message = "force pushes are not for the agent"

[[rule]]
name = "builds, tests and git"
tool = "Bash"
program = ["cargo", "make", "git"]
action = "gate"
kind = "shell"
"#;

/// How long one call may take before the replay fails, in real time.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Debug, Deserialize)]
struct Week {
    day: Vec<Day>,
}

#[derive(Debug, Deserialize)]
struct Day {
    day: u32,
    cwd: String,
    calls: Vec<Call>,
}

#[derive(Debug, Clone, Deserialize)]
struct Call {
    cmd: String,
    /// "always" or "no" for the owner's press on its card; otherwise Yes.
    owner: Option<String>,
}

/// What became of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The rules file passed it: no ask.
    Passed,
    /// The rules file blocked it.
    Blocked,
    /// A saved exact rule passed it: no card.
    Rule,
    /// It drew a card.
    Card,
}

/// One day's figures.
#[derive(Debug, Default, Clone, Copy)]
struct DayRow {
    calls: usize,
    passed: usize,
    blocked: usize,
    rules: usize,
    cards: usize,
    saved: usize,
}

fn per_100(cards: usize, calls: usize) -> f64 {
    if calls == 0 {
        0.0
    } else {
        100.0 * cards as f64 / calls as f64
    }
}

struct Replay {
    daemon: Daemon,
    rules: PathBuf,
    days: BTreeMap<u32, DayRow>,
    /// (directory, command) the owner saved with Always here.
    saved: HashSet<(String, String)>,
    /// The journal's length just before each Always press.
    always_presses: Vec<usize>,
}

impl Replay {
    fn start() -> Replay {
        let daemon = Daemon::builder()
            .unpaced()
            .config_tail(SHELL_CATEGORY)
            .start();
        let rules = rules_file(daemon.dir.path(), RULES);
        Replay {
            daemon,
            rules,
            days: BTreeMap::new(),
            saved: HashSet::new(),
            always_presses: Vec::new(),
        }
    }

    fn events(&self, ev: &str) -> Vec<(usize, Value)> {
        self.daemon
            .journal_events()
            .into_iter()
            .enumerate()
            .filter(|(_, e)| e["ev"] == ev)
            .collect()
    }

    /// Runs the hook on one call; the owner answers its card, if it draws one.
    fn call(&mut self, day: u32, cwd: &str, call: &Call) {
        let mut event = fixture_event("claude-code/pre_tool_use_bash", Some(&call.cmd));
        event["cwd"] = json!(cwd);
        let before = self.daemon.bot.messages(OWNER).len();
        let used = self.events("rule_used").len();
        let mut hook = spawn_hook(
            "claude-code",
            &self.rules,
            &self.daemon.socket,
            &[],
            event.to_string().as_bytes(),
        );
        let deadline = Instant::now() + PATIENCE;
        let mut card = None;
        while hook.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "{call:?}: no answer");
            card = new_card(&self.daemon, before, &call.cmd);
            if card.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(card) = &card {
            self.answer(card, call, cwd);
        }
        let output = finish(hook);
        let fate = match (&card, self.events("rule_used").len() > used) {
            (Some(_), _) => Fate::Card,
            (None, true) => Fate::Rule,
            (None, false) if decision(&output) == "deny" => Fate::Blocked,
            (None, false) => Fate::Passed,
        };
        self.check(call, cwd, fate, &output);
        let row = self.days.entry(day).or_default();
        row.calls += 1;
        row.passed += usize::from(fate == Fate::Passed);
        row.blocked += usize::from(fate == Fate::Blocked);
        row.rules += usize::from(fate == Fate::Rule);
        row.cards += usize::from(fate == Fate::Card);
    }

    /// The owner's press: Always here, No, or Yes, as the week says.
    fn answer(&mut self, card: &ChatMessage, call: &Call, cwd: &str) {
        let labels: Vec<String> = card.buttons().into_iter().map(|b| b.text).collect();
        assert_eq!(
            labels,
            ["Yes", "No", "Always here", "No, and say why…"],
            "{call:?}"
        );
        let button = match call.owner.as_deref() {
            Some("always") => {
                self.always_presses.push(self.daemon.journal_events().len());
                self.saved.insert((cwd.to_owned(), call.cmd.clone()));
                2
            }
            Some("no") => 1,
            _ => 0,
        };
        self.daemon.tap(card, button);
    }

    /// What the call must have come to, from the rules file and the owner's rules so far.
    fn check(&mut self, call: &Call, cwd: &str, fate: Fate, output: &Output) {
        let program = call.cmd.split(' ').next().unwrap_or_default();
        let expected = match program {
            "ls" | "cat" | "wc" | "grep" => Fate::Passed,
            _ if call.cmd.starts_with("git push --force") => Fate::Blocked,
            _ if self.was_saved_before(cwd, call) => Fate::Rule,
            _ => Fate::Card,
        };
        assert_eq!(fate, expected, "{cwd}: {call:?}");
        let allowed = decision(output) == "allow";
        let should = fate != Fate::Blocked && call.owner.as_deref() != Some("no");
        assert_eq!(allowed, should, "{cwd}: {call:?}: {output:?}");
        if call.owner.as_deref() == Some("always") {
            self.days.entry(0).or_default().saved += 1;
        }
    }

    /// Saved before this call: the owner pressed Always on an earlier card of exactly this.
    fn was_saved_before(&self, cwd: &str, call: &Call) -> bool {
        let key = (cwd.to_owned(), call.cmd.clone());
        self.saved.contains(&key) && call.owner.as_deref() != Some("always")
    }

    fn run(mut self) -> (BTreeMap<u32, DayRow>, Duration) {
        let began = Instant::now();
        let week: Week = toml::from_str(WEEK).unwrap();
        for day in &week.day {
            for call in &day.calls {
                self.call(day.day, &day.cwd, call);
            }
        }
        self.daemon.settle();
        // Each rule saved follows the owner's own Always here, and there is one per press.
        let saved = self.events("rule_saved");
        assert_eq!(
            saved.len(),
            self.always_presses.len(),
            "one rule per Always"
        );
        for ((line, event), before) in saved.iter().zip(&self.always_presses) {
            assert!(
                line >= before,
                "a rule saved before the owner's press: {event}"
            );
        }
        self.days.remove(&0);
        (self.days, began.elapsed())
    }
}

/// The first card after the first `before` messages whose text shows `command`.
fn new_card(daemon: &Daemon, before: usize, command: &str) -> Option<ChatMessage> {
    daemon
        .bot
        .messages(OWNER)
        .into_iter()
        .skip(before)
        .find(|m| {
            m.outgoing
                && !m.buttons().is_empty()
                && m.text.as_deref().is_some_and(|t| t.contains(command))
        })
}

/// Claude Code's decision in the hook's answer ("allow" or "deny").
fn decision(output: &Output) -> String {
    pre_tool_use(output).0
}

fn table(days: &BTreeMap<u32, DayRow>, took: Duration) -> String {
    let mut out = format!(
        "A coding agent's week through the Claude Code hook (replayed in {:.1} s)\n\n| day | \
         tool calls | passed by the rules file | blocked | passed by a saved rule | cards | \
         cards per 100 calls |\n|{}\n",
        took.as_secs_f64(),
        " --- |".repeat(7)
    );
    for (day, row) in days {
        out.push_str(&format!(
            "| {day} | {} | {} | {} | {} | {} | {:.1} |\n",
            row.calls,
            row.passed,
            row.blocked,
            row.rules,
            row.cards,
            per_100(row.cards, row.calls)
        ));
    }
    let (cards, calls) = since_day_2(days);
    let (all_cards, all_calls) = days
        .values()
        .fold((0, 0), |(c, n), row| (c + row.cards, n + row.calls));
    out.push_str(&format!(
        "\nThe week: {all_cards} cards for {all_calls} tool calls, {:.1} per 100; days 2-7: \
         {cards} cards for {calls} tool calls, {:.1} per 100.\n",
        per_100(all_cards, all_calls),
        per_100(cards, calls)
    ));
    out
}

fn since_day_2(days: &BTreeMap<u32, DayRow>) -> (usize, usize) {
    days.range(2..)
        .fold((0, 0), |(c, n), (_, row)| (c + row.cards, n + row.calls))
}

/// At most this many cards per 100 tool calls from day 2: what is left are commits (each a new
/// command), a push the owner refuses, one-off git commands, and the second repository's first
/// calls (a rule is for its own directory).
const CARDS_BOUND: f64 = 30.0;

#[test]
fn a_coding_agents_week_through_the_hook_asks_only_for_what_no_exact_rule_covers() {
    let (days, took) = Replay::start().run();
    println!("{}", table(&days, took));
    let (cards, calls) = since_day_2(&days);
    assert!(took <= WEEK_TIME_BOUND, "the week took {took:?}");
    assert!(
        per_100(cards, calls) <= CARDS_BOUND,
        "{cards} cards for {calls} calls from day 2"
    );
}
