//! The owner's attention: a news agent's week (fixtures/attention/week.toml) replayed through the
//! real daemon on its injected clock, with a scripted owner, once with suggested mandates on and
//! once with them off. Each simulated day prints a row — asks, cards, receipts, loud messages in
//! quiet hours, suggestions, and cards per 100 routine actions — and the replay asserts the
//! contract's hard limits: no loud message in quiet hours but an urgent one, no card beyond the
//! night limit, no mandate opened without the owner's Grant on its card just before, no day
//! raised without the owner's Raise today on that receipt just before. It is also a gate on the
//! owner's attention: the cards for posts and images (the routine work a mandate is for) from
//! day 2, per 100 of them that ran, stay within [`ROUTINE_BOUND_EVERY_FIRST`] for an owner who
//! accepts every first suggestion and [`ROUTINE_BOUND_IMAGES_IGNORED`] for one who ignores the
//! images' suggestion.
//!
//! `cargo test --test integration attention -- --nocapture` prints the tables.
//!
//! The simulated time moves only by the daemon's clock file, step by step; after each step the
//! replay waits until the daemon has nothing left to do at that moment (every update handled,
//! no run under way, no card past its ttl, no outbox row due), so each message the emulator
//! records belongs to the step, and the simulated time, that made it. The sender's pace (about
//! one message a second, a Telegram limit) is turned off for it: a week's messages would
//! otherwise take minutes of real time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveTime, Timelike, Utc};
use consentd_emulator::ChatMessage;
use consentd_store::inspect::Inspect;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::fixture::{Daemon, DaemonBuilder, OWNER};

/// The week, as data.
const WEEK: &str = include_str!("../../fixtures/attention/week.toml");

/// Cards a night may show (the config's `night_card_limit`).
const NIGHT_CARD_LIMIT: usize = 2;

/// The two channels the agent posts to: the owner accepts the first suggestion for each.
const CHANNELS: [&str; 2] = ["@news_main", "@news_digest"];

/// How long the owner takes to read a message and tap, in simulated seconds.
const OWNER_DELAY: i64 = 60;

/// How long the daemon may take to finish a step before the replay fails, in real time.
const PATIENCE: Duration = Duration::from_secs(20);

/// At most this many cards for posts and images per 100 that ran, from day 2, for the owner who
/// accepts every first suggestion (and presses Raise today when a receipt offers it).
const ROUTINE_BOUND_EVERY_FIRST: f64 = 5.0;

/// The same for the owner who ignores the suggestion that names no channel (the images').
/// Every image is then a card: 25 of this week's 74 routine actions that run from day 2, 33.8
/// per 100 however few cards the posts take, so no bound under that can hold without a mandate
/// the owner did not grant. This one leaves the posts about 2 cards per 100 above that floor.
const ROUTINE_BOUND_IMAGES_IGNORED: f64 = 36.0;

/// A replayed week's real time may not pass this, on a loaded 2-core machine (three runs at
/// once; each took about 15 s there).
pub(crate) const WEEK_TIME_BOUND: Duration = Duration::from_secs(150);

/// A post or a reply: each names its one target, and a mandate may cover it.
const EXTERNAL: &str =
    "class = \"external\"\nmandate_ok = true\ntarget = \"required\"\ntext = \"required\"";

/// The week's categories beside the fixture's own (whose `generate_image`, from
/// `DaemonBuilder::mandate_kinds`, is the images'): each runs the fixture's action script.
fn categories() -> String {
    [
        ("post_news", "Post to a channel", EXTERNAL),
        ("reply_reader", "Reply to a reader", EXTERNAL),
        // Destructive: never mandate_ok, every deletion has its card.
        (
            "delete_post",
            "Delete a post",
            "class = \"destructive\"\ntarget = \"required\"",
        ),
    ]
    .iter()
    .map(|(kind, label, rules)| {
        format!(
            "\n[categories.{kind}]\nlabel = {{ en = \"{label}\" }}\nenabled = true\n{rules}\n\
             command = [\"/bin/sh\", \"{{dir}}/action.sh\"]\n"
        )
    })
    .collect()
}

#[derive(Debug, Deserialize)]
struct Week {
    day: Vec<Day>,
}

#[derive(Debug, Deserialize)]
struct Day {
    day: u32,
    asks: Vec<Ask>,
}

#[derive(Debug, Clone, Deserialize)]
struct Ask {
    at: String,
    kind: String,
    target: Option<String>,
    text: Option<String>,
    cost_usd: Option<String>,
    #[serde(default)]
    urgent: bool,
    /// "no" when the owner declines its card; otherwise the owner says yes.
    owner: Option<String>,
    /// "refused" when the gate must refuse it.
    expect: Option<String>,
}

impl Ask {
    fn request(&self) -> Value {
        let mut request = json!({"v":1,"op":"ask","kind":self.kind,"wait":false});
        for (key, value) in [
            ("target", &self.target),
            ("text", &self.text),
            ("cost_usd", &self.cost_usd),
        ] {
            if let Some(value) = value {
                request[key] = json!(value);
            }
        }
        if self.urgent {
            request["urgent"] = json!(true);
        }
        request
    }

    /// A post or an image: the routine work a mandate is for.
    fn is_routine(&self) -> bool {
        matches!(self.kind.as_str(), "post_news" | "generate_image")
    }
}

/// What made a step's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Ask,
    Press,
    Morning,
    Summary,
}

/// One simulated day's figures.
#[derive(Debug, Default, Clone)]
struct DayRow {
    asks: usize,
    refused: usize,
    messages: usize,
    cards: usize,
    receipts: usize,
    loud_in_quiet: usize,
    /// Loud in quiet hours too, but about an urgent ask, as the contract allows.
    urgent_in_quiet: usize,
    suggestions: usize,
    routine: usize,
}

impl DayRow {
    fn cards_per_100(&self) -> f64 {
        per_100(self.cards, self.routine)
    }
}

fn per_100(cards: usize, routine: usize) -> f64 {
    if routine == 0 {
        0.0
    } else {
        100.0 * cards as f64 / routine as f64
    }
}

/// A run of the week: which variant, and its figures.
#[derive(Debug)]
struct Figures {
    name: &'static str,
    /// The replay's real time.
    took: Duration,
    days: BTreeMap<u32, DayRow>,
    /// The cards of days 2-7 by kind ("mandate" for a mandate card).
    cards_by_kind: BTreeMap<String, usize>,
    /// The owner's Raise today presses.
    raises: usize,
}

impl Figures {
    /// The figures as a Markdown table, as docs/BENCHMARKS.md shows them.
    fn table(&self) -> String {
        let mut out = format!(
            "{} (replayed in {:.1} s)\n\n| day | asks | refused | messages | cards | receipts | \
             loud in quiet hours (urgent) | suggestions | routine actions ran | cards per 100 \
             routine |\n|{}\n",
            self.name,
            self.took.as_secs_f64(),
            " --- |".repeat(10)
        );
        for (day, row) in &self.days {
            out.push_str(&format!(
                "| {day} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {:.1} |\n",
                row.asks,
                row.refused,
                row.messages,
                row.cards,
                row.receipts,
                row.loud_in_quiet,
                row.urgent_in_quiet,
                row.suggestions,
                row.routine,
                row.cards_per_100()
            ));
        }
        let (cards, routine) = self.since_day_2();
        let (routine_cards, routine_per_100) = self.routine_per_100();
        out.push_str(&format!(
            "\nDays 2-7: {cards} cards for {routine} routine actions, {:.1} cards per 100 routine \
             actions; of them {routine_cards} for posts and images, {routine_per_100:.1} per \
             100 (the gate). Raised today: {} times. The cards by kind: {}.\n",
            per_100(cards, routine),
            self.raises,
            self.cards_by_kind
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        out
    }

    /// The cards for posts and images from day 2, and per 100 posts and images that ran.
    fn routine_per_100(&self) -> (usize, f64) {
        let routine_cards: usize = ["post_news", "generate_image"]
            .iter()
            .filter_map(|kind| self.cards_by_kind.get(*kind))
            .sum();
        (routine_cards, per_100(routine_cards, self.since_day_2().1))
    }

    fn since_day_2(&self) -> (usize, usize) {
        self.days
            .range(2..)
            .fold((0, 0), |(c, r), (_, row)| (c + row.cards, r + row.routine))
    }
}

/// The daemon, the simulated clock, and what the scripted owner has seen and done.
struct Replay {
    daemon: Daemon,
    db: Inspect,
    /// Day 1 at 00:00, simulated.
    start: DateTime<Utc>,
    /// The wall clock's offset when the daemon started: the monotonic one moves with the wall
    /// clock from there.
    wall_at_start: i64,
    /// The last owner-chat message already counted.
    seen: i64,
    days: BTreeMap<u32, DayRow>,
    cards_by_kind: BTreeMap<String, usize>,
    /// Each record asked for, by id.
    asked: HashMap<String, Ask>,
    /// Cards, by message id, the owner has answered or left.
    handled: HashSet<i64>,
    accepted: HashSet<&'static str>,
    /// Whether the owner also accepts the first suggestion that names no channel (the images').
    accepts_every_first: bool,
    /// Whether the daemon makes suggestions at all in this run.
    suggestions_on: bool,
    /// Each mandate card the owner granted, with the journal's length just before the press.
    grants: Vec<(String, usize)>,
    /// Each receipt the owner pressed Raise today on (its record), with the journal's length
    /// just before the press.
    raises: Vec<(String, usize)>,
    /// Cards shown in quiet hours, by the morning that ends the night.
    night_cards: BTreeMap<chrono::NaiveDate, usize>,
    /// Records whose ask was urgent: their messages may sound at night.
    urgent: HashSet<String>,
}

impl Replay {
    fn start(builder: DaemonBuilder, suggestions_on: bool, accepts_every_first: bool) -> Replay {
        let daemon = builder
            .unpaced()
            .gate(&format!(
                "quiet_hours = \"23:00-08:00\"\nnight_card_limit = {NIGHT_CARD_LIMIT}\n\
                 summary_at = \"21:00\"\nreceipts = \"each\""
            ))
            .mandate_kinds()
            .config_tail(&categories())
            .start();
        let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
        // Tomorrow at 00:00: the simulated week only ever moves the clock forward.
        let start = (Utc::now() + chrono::Duration::days(1))
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
        let wall_at_start = daemon.clocks().0;
        Replay {
            daemon,
            db,
            start,
            wall_at_start,
            seen: 0,
            days: BTreeMap::new(),
            cards_by_kind: BTreeMap::new(),
            asked: HashMap::new(),
            handled: HashSet::new(),
            accepted: HashSet::new(),
            accepts_every_first,
            suggestions_on,
            grants: Vec::new(),
            raises: Vec::new(),
            night_cards: BTreeMap::new(),
            urgent: HashSet::new(),
        }
    }

    /// The daemon's time now (the clock file's offset on the real clock).
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::seconds(self.daemon.clocks().0)
    }

    /// Moves the daemon's clocks to `at`, or a second past its time now if that is later: the
    /// simulated time never goes back.
    fn set_clock(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        let at = at.max(self.now() + chrono::Duration::seconds(1));
        let wall = (at - Utc::now()).num_seconds() + 1;
        self.daemon
            .set_clocks(wall, (wall - self.wall_at_start).max(0));
        self.now()
    }

    fn day_of(&self, at: DateTime<Utc>) -> u32 {
        u32::try_from((at - self.start).num_days() + 1).unwrap()
    }

    fn row(&mut self, at: DateTime<Utc>) -> &mut DayRow {
        let day = self.day_of(at);
        self.days.entry(day).or_default()
    }

    /// Waits until the daemon has done everything due at its time now.
    fn settle(&self) {
        let deadline = Instant::now() + PATIENCE;
        while !self.idle() {
            assert!(
                Instant::now() < deadline,
                "the daemon did not settle at {}\n{}",
                self.now(),
                self.daemon.log()
            );
            std::thread::sleep(Duration::from_millis(3));
        }
    }

    fn idle(&self) -> bool {
        if !self.daemon.bot.pending_updates().is_empty() {
            return false;
        }
        let busy = self.db.due_work(self.now()).unwrap().total();
        busy == 0
    }

    /// Counts the messages the last step sent, at simulated time `at`.
    fn attribute(&mut self, at: DateTime<Utc>, step: Step) {
        let fresh: Vec<ChatMessage> = self
            .daemon
            .owner_chat()
            .into_iter()
            .filter(|m| m.message_id > self.seen)
            .collect();
        let quiet = in_quiet_hours(at);
        for message in fresh.iter().map(as_sent) {
            self.seen = self.seen.max(message.message_id);
            let letters = letters(&message);
            let card = matches!(letters.first().map(String::as_str), Some("y" | "g"));
            if card && self.day_of(at) >= 2 {
                let kind = self
                    .asked
                    .get(&subject(&message, 0))
                    .map_or("mandate", |ask| ask.kind.as_str());
                *self.cards_by_kind.entry(kind.to_owned()).or_default() += 1;
            }
            // Only an urgent ask's own card may sound at night: not its outcome, not its receipt.
            let urgent = card
                && message
                    .text
                    .as_deref()
                    .is_some_and(|text| self.urgent.iter().any(|id| text.contains(id.as_str())));
            if card && quiet {
                let morning = if at.hour() >= 12 {
                    at.date_naive() + chrono::Duration::days(1)
                } else {
                    at.date_naive()
                };
                *self.night_cards.entry(morning).or_default() += 1;
            }
            // The open mandates the summary lists carry Stop too; a receipt names its record.
            let receipt = letters.iter().any(|l| l == "s")
                && (step != Step::Summary
                    || message.text.as_deref().is_some_and(|t| {
                        !t.starts_with("Summary")
                            && self.asked.keys().any(|id| t.contains(id.as_str()))
                    }));
            let row = self.row(at);
            row.messages += 1;
            row.cards += usize::from(card);
            row.suggestions += usize::from(letters == ["m"]);
            row.receipts += usize::from(receipt);
            if quiet && !message.disable_notification {
                if urgent {
                    row.urgent_in_quiet += 1;
                } else {
                    row.loud_in_quiet += 1;
                    eprintln!("loud at {at} in quiet hours: {:?}", message.text);
                }
            }
        }
    }

    /// The agent asks; the daemon answers and does what follows.
    fn ask(&mut self, day: u32, ask: &Ask) {
        let at = self.start
            + chrono::Duration::days(i64::from(day - 1))
            + (NaiveTime::parse_from_str(&ask.at, "%H:%M").unwrap() - NaiveTime::MIN);
        let at = self.set_clock(at);
        let answer = self.daemon.request(&ask.request());
        let status = answer["status"].as_str().unwrap_or_default();
        let refused = status == "refused";
        assert_eq!(
            refused,
            ask.expect.as_deref() == Some("refused"),
            "{ask:?}: {answer}"
        );
        if let Some(id) = answer["id"].as_str() {
            self.asked.insert(id.to_owned(), ask.clone());
            if ask.urgent {
                self.urgent.insert(id.to_owned());
            }
        }
        let row = self.row(at);
        row.asks += 1;
        row.refused += usize::from(refused);
        self.settle();
        self.attribute(at, Step::Ask);
        self.owner_turn();
    }

    /// The owner taps `button` of `message`, a moment after the last step.
    fn tap(&mut self, message: &ChatMessage, button: usize) {
        let at = self.set_clock(self.now() + chrono::Duration::seconds(OWNER_DELAY));
        self.daemon.tap(message, button);
        self.settle();
        self.attribute(at, Step::Press);
    }

    /// When awake, the owner answers every open card and the suggestions for a channel not yet
    /// under a mandate of theirs (other suggestions are left alone), and presses Raise today
    /// on a receipt that offers it.
    fn owner_turn(&mut self) {
        if in_quiet_hours(self.now()) {
            return;
        }
        loop {
            let open: Vec<ChatMessage> = self
                .daemon
                .owner_chat()
                .into_iter()
                .filter(|m| !self.handled.contains(&m.message_id) && !m.buttons().is_empty())
                .collect();
            let Some(message) = open.into_iter().find(|m| {
                let letters = letters(m);
                letters.first().is_some_and(|l| l == "y")
                    || letters == ["m"]
                    || letters == ["s", "l"]
            }) else {
                return;
            };
            self.handled.insert(message.message_id);
            if letters(&message) == ["m"] {
                self.consider_suggestion(&message);
            } else if letters(&message) == ["s", "l"] {
                let record = subject(&message, 1);
                self.raises
                    .push((record, self.daemon.journal_events().len()));
                self.tap(&message, 1);
            } else {
                let id = subject(&message, 0);
                let no = self
                    .asked
                    .get(&id)
                    .is_some_and(|ask| ask.owner.as_deref() == Some("no"));
                self.tap(&message, usize::from(no));
            }
        }
    }

    /// Accepts the suggestion when it is the first for one of the channels (or, for an owner
    /// who accepts every first suggestion, the first that names none: the images'): taps it,
    /// then Grants the mandate card it brings.
    fn consider_suggestion(&mut self, suggestion: &ChatMessage) {
        let text = suggestion.text.clone().unwrap_or_default();
        let named = CHANNELS.into_iter().find(|c| text.contains(c));
        let channel = match named {
            Some(channel) => channel,
            None if self.accepts_every_first => "",
            None => return,
        };
        if self.accepted.contains(channel) {
            return;
        }
        self.accepted.insert(channel);
        self.tap(suggestion, 0);
        let card = self
            .daemon
            .owner_chat()
            .into_iter()
            .rev()
            .find(|m| letters(m).first().is_some_and(|l| l == "g"))
            .expect("tapping a suggestion brings a mandate card");
        assert!(
            card.text.as_deref().is_some_and(|t| t.contains(channel)),
            "the card names {channel:?}: {:?}",
            card.text
        );
        self.handled.insert(card.message_id);
        let id = subject(&card, 0);
        self.grants.push((id, self.daemon.journal_events().len()));
        self.tap(&card, 0);
    }

    /// 08:00: quiet hours end, the held cards come, and the owner answers what is open.
    fn morning(&mut self, day: u32) {
        let at = self.set_clock(self.start + chrono::Duration::days(i64::from(day - 1)) + hours(8));
        self.settle();
        self.attribute(at, Step::Morning);
        self.owner_turn();
    }

    /// 21:00: the evening summary.
    fn summary(&mut self, day: u32) {
        let at =
            self.set_clock(self.start + chrono::Duration::days(i64::from(day - 1)) + hours(21));
        let deadline = Instant::now() + PATIENCE;
        while self.events("summary_sent").len() < day as usize {
            assert!(Instant::now() < deadline, "no summary on day {day}");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle();
        self.attribute(at, Step::Summary);
        self.owner_turn();
    }

    fn events(&self, ev: &str) -> Vec<(usize, Value)> {
        self.daemon
            .journal_events()
            .into_iter()
            .enumerate()
            .filter(|(_, e)| e["ev"] == ev)
            .collect()
    }

    /// The whole week, day by day.
    fn run(mut self, name: &'static str) -> Figures {
        let began = Instant::now();
        let week: Week = toml::from_str(WEEK).unwrap();
        for day in &week.day {
            let (night, daytime): (Vec<&Ask>, Vec<&Ask>) =
                day.asks.iter().partition(|ask| ask.at.as_str() < "08:00");
            for ask in night {
                self.ask(day.day, ask);
            }
            self.morning(day.day);
            for ask in daytime.iter().filter(|ask| ask.at.as_str() < "21:00") {
                self.ask(day.day, ask);
            }
            self.summary(day.day);
            for ask in daytime.iter().filter(|ask| ask.at.as_str() >= "21:00") {
                self.ask(day.day, ask);
            }
        }
        self.count_routine();
        self.check_limits(name);
        Figures {
            name,
            took: began.elapsed(),
            days: self.days,
            cards_by_kind: self.cards_by_kind,
            raises: self.raises.len(),
        }
    }

    /// Posts and images that ran, by the simulated day of their `executed` line.
    fn count_routine(&mut self) {
        for (_, event) in self.events("executed") {
            let id = event["id"].as_str().unwrap_or_default();
            let routine = self.asked.get(id).is_some_and(Ask::is_routine);
            let at: DateTime<Utc> = event["ts"].as_str().unwrap().parse().unwrap();
            self.row(at).routine += usize::from(routine);
        }
    }

    /// The contract's hard limits.
    fn check_limits(&self, name: &str) {
        for (day, row) in &self.days {
            assert_eq!(
                row.loud_in_quiet, 0,
                "{name}, day {day}: a loud message at night"
            );
        }
        for (morning, cards) in &self.night_cards {
            assert!(
                *cards <= NIGHT_CARD_LIMIT,
                "{name}: {cards} cards in the night before {morning}"
            );
        }
        // Each mandate opened is one the owner granted, after the press.
        for (line, event) in self.events("mandate_open") {
            let id = event["id"].as_str().unwrap();
            let grant = self.grants.iter().find(|(granted, _)| granted == id);
            assert!(
                grant.is_some_and(|(_, before)| line >= *before),
                "{name}: mandate {id} opened without the owner's Grant: {event}"
            );
            assert_eq!(event["by"], OWNER, "{event}");
        }
        assert_eq!(
            self.events("mandate_open").len(),
            self.grants.len(),
            "{name}: each Grant opens one mandate"
        );
        // Each day raised is one the owner raised on that very receipt, after the press.
        for (line, event) in self.events("mandate_raised") {
            let record = event["record"].as_str().unwrap();
            let press = self.raises.iter().find(|(pressed, _)| pressed == record);
            assert!(
                press.is_some_and(|(_, before)| line >= *before),
                "{name}: a day raised without the owner's press on its receipt: {event}"
            );
            assert_eq!(event["by"], OWNER, "{event}");
        }
        assert!(
            self.events("mandate_raised").len() <= self.raises.len(),
            "{name}: more raises than presses"
        );
        // The runs with suggestions on must have made and granted some: else the checks above
        // would pass on nothing.
        let suggested = self.events("mandate_suggested").len();
        let (made, granted) = match self.suggestions_on {
            true => (suggested >= 2, self.grants.len() >= 2),
            false => (suggested == 0, self.grants.is_empty()),
        };
        assert!(
            made && granted,
            "{name}: {suggested} suggestions, {} granted",
            self.grants.len()
        );
    }
}

fn hours(h: i64) -> chrono::Duration {
    chrono::Duration::hours(h)
}

/// 23:00-08:00 in the owner's zone (UTC).
fn in_quiet_hours(at: DateTime<Utc>) -> bool {
    at.hour() >= 23 || at.hour() < 8
}

/// The message as it was sent, before any edit: a card answered within the step that showed it
/// has lost its buttons since.
fn as_sent(message: &ChatMessage) -> ChatMessage {
    let mut sent = message.clone();
    if let Some(first) = message.history.first() {
        sent.text = first.text.clone();
        sent.reply_markup = first.reply_markup.clone();
    }
    sent
}

/// The action letter of each of the message's buttons (`1.<kid>.<a>.<subject>.<tag>`).
fn letters(message: &ChatMessage) -> Vec<String> {
    message
        .buttons()
        .iter()
        .filter_map(|b| b.callback_data.as_deref())
        .map(|data| data.split('.').nth(2).unwrap_or_default().to_owned())
        .collect()
}

/// The record a button is about.
fn subject(message: &ChatMessage, button: usize) -> String {
    let data = message.buttons()[button].callback_data.clone().unwrap();
    data.split('.').nth(3).unwrap().to_owned()
}

#[test]
fn a_news_agents_week_keeps_the_owners_attention_within_the_contracts_limits() {
    // The limit set both ways, not left to the fixture's default.
    let variants = [
        (
            "suggestions on",
            Daemon::builder().suggestions(3),
            true,
            false,
        ),
        (
            "suggestions off",
            Daemon::builder().suggestions(0),
            false,
            false,
        ),
        (
            "suggestions on, every first one accepted",
            Daemon::builder().suggestions(3),
            true,
            true,
        ),
    ];
    let figures: Vec<Figures> = std::thread::scope(|scope| {
        let runs: Vec<_> = variants
            .into_iter()
            .map(|(name, builder, on, every)| {
                scope.spawn(move || Replay::start(builder, on, every).run(name))
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    for figures in &figures {
        println!("{}", figures.table());
        println!(
            "{}: {:.1} cards for posts and images per 100 from day 2, replayed in {:.1} s\n",
            figures.name,
            figures.routine_per_100().1,
            figures.took.as_secs_f64()
        );
    }
    for figures in &figures {
        assert!(
            figures.took <= WEEK_TIME_BOUND,
            "{}: the week took {:?}",
            figures.name,
            figures.took
        );
    }
    let bounds = [
        ("suggestions on", ROUTINE_BOUND_IMAGES_IGNORED),
        (
            "suggestions on, every first one accepted",
            ROUTINE_BOUND_EVERY_FIRST,
        ),
    ];
    for (name, bound) in bounds {
        let run = figures.iter().find(|f| f.name == name).unwrap();
        let (cards, per_100) = run.routine_per_100();
        assert!(
            per_100 <= bound,
            "{name}: {cards} cards for posts and images, {per_100:.1} per 100 from day 2, over \
             {bound}"
        );
    }
}
