//! A real daemon on a temp dir: its config, its socket, its journal, and ways to talk to it.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use consentd_emulator::{ChatMessage, ChatSpec, Emulator, EmulatorThread, UserSpec};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_consentd");
/// The bot token every test daemon and its emulator share.
pub const TOKEN: &str = "123456:TEST-token-for-the-emulator";
/// The owner's Telegram id in the fixture's config.
pub const OWNER: i64 = 42;

/// How long a daemon may take to start or stop before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// Builds a daemon's config.
#[derive(Debug, Clone)]
pub struct DaemonBuilder {
    allowed_uids: Vec<u32>,
    max_request_bytes: u64,
    max_pending: u32,
    owner: Option<i64>,
    decline_streak: u32,
    card_ttl: String,
    /// `limits.decline_reason_wait` when a test sets it; absent, the daemon's default (60 s).
    decline_reason_wait: Option<String>,
    /// The `[gate]` table's lines.
    gate: String,
    /// Extra environment for the daemon's first start (a preloaded library, a crash point).
    env: Vec<(String, String)>,
    /// Whether the config has the kinds of [`MANDATE_KINDS`].
    mandate_kinds: bool,
    /// More config at the end (`{dir}` stands for the daemon's temp dir).
    tail: String,
    /// `refusals_per_minute` and `refusal_window`: by default every refusal is recorded, as the
    /// tests written before the refusal budget count on; budgets_disk.rs sets the real ones.
    refusals: (u32, String),
    /// More lines in `[limits]`.
    limits: String,
    /// `[owner] timezone` (UTC unless a test sets it).
    timezone: String,
}

/// Three kinds that take mandates without a target or without money (docs/PROTOCOL.md, "Mandates"),
/// for the tests
/// that need them; off by default, as other tests count and list the fixture's kinds.
/// `generate_image` has no target and a cost in each ask; `send_note` has a target and never
/// costs; `ping_home` has neither. Each runs the fixture's action script.
const MANDATE_KINDS: &str = r#"
[categories.generate_image]
label = { en = "Generate an image", ru = "Сгенерировать картинку", pt = "Gerar uma imagem" }
class = "spend"
enabled = true
mandate_ok = true
target = "none"
text = "required"
cost = "request"
command = ["/bin/sh", "{dir}/action.sh"]

[categories.send_note]
label = { en = "Send a note" }
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
command = ["/bin/sh", "{dir}/action.sh"]

[categories.ping_home]
label = { en = "Ping home" }
class = "external"
enabled = true
mandate_ok = true
command = ["/bin/sh", "{dir}/action.sh"]
"#;

impl Default for DaemonBuilder {
    fn default() -> Self {
        Self {
            allowed_uids: vec![current_uid()],
            max_request_bytes: 1024 * 1024,
            max_pending: 20,
            owner: Some(OWNER),
            decline_streak: 3,
            card_ttl: "15m".to_owned(),
            // The daemon's default: a plain No's final line comes at once whatever the wait,
            // and every card offers "No, and say why…".
            decline_reason_wait: None,
            gate: "quiet_hours = \"off\"".to_owned(),
            env: Vec::new(),
            mandate_kinds: false,
            tail: String::new(),
            refusals: (6000, "0s".to_owned()),
            limits: String::new(),
            timezone: "UTC".to_owned(),
        }
    }
}

impl DaemonBuilder {
    pub fn refusal_budget(mut self, per_minute: u32, window: &str) -> Self {
        self.refusals = (per_minute, window.to_owned());
        self
    }
    pub fn allowed_uids(mut self, uids: Vec<u32>) -> Self {
        self.allowed_uids = uids;
        self
    }

    /// Sets `limits.max_request_bytes` (the fixture's default is 1 MiB).
    pub fn max_request_bytes(mut self, max: u64) -> Self {
        self.max_request_bytes = max;
        self
    }

    /// Turns suggested mandates on after `after` yeses (the fixture's default is off, so the
    /// older tests' chats hold only what they expect; `0` is off).
    pub fn suggestions(self, after: u32) -> Self {
        self.limit("suggest_mandate_after", &after.to_string())
    }

    /// Adds `key = value` to `[limits]`.
    pub fn limit(mut self, key: &str, value: &str) -> Self {
        self.limits.push_str(&format!("{key} = {value}\n"));
        self
    }

    pub fn max_pending(mut self, max: u32) -> Self {
        self.max_pending = max;
        self
    }

    /// Replaces the `[gate]` table's lines (the default has quiet hours off).
    pub fn gate(mut self, lines: &str) -> Self {
        self.gate = lines.to_owned();
        self
    }

    /// Sets a variable in the environment of the daemon's first start (not of its restarts:
    /// those take theirs in [`Daemon::restart_with`]).
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Turns off the sender's pace of about one message a second (`CONSENTD_TEST_UNPACED`), for
    /// a test that sends days of simulated messages and must not wait a real second for each.
    pub fn unpaced(self) -> Self {
        self.env("CONSENTD_TEST_UNPACED", "1")
    }

    /// Sets `limits.decline_streak` (the default is the ceiling, 3).
    pub fn decline_streak(mut self, streak: u32) -> Self {
        self.decline_streak = streak;
        self
    }

    /// Sets `limits.card_ttl` (the default is the ceiling, 15 minutes).
    pub fn card_ttl(mut self, ttl: &str) -> Self {
        self.card_ttl = ttl.to_owned();
        self
    }

    /// Adds the kinds of [`MANDATE_KINDS`]: no target, no cost, or neither.
    /// Sets `[owner] timezone` (an IANA name): the owner's days, quiet hours and summary.
    pub fn timezone(mut self, tz: &str) -> Self {
        self.timezone = tz.to_owned();
        self
    }

    pub fn mandate_kinds(mut self) -> Self {
        self.mandate_kinds = true;
        self
    }

    /// Adds `lines` at the end of the config (another category); `{dir}` in them stands for the
    /// daemon's temp dir.
    pub fn config_tail(mut self, lines: &str) -> Self {
        self.tail.push_str(lines);
        self
    }

    /// Sets `limits.decline_reason_wait` (unset, the config leaves it to the daemon's default).
    pub fn decline_reason_wait(mut self, wait: &str) -> Self {
        self.decline_reason_wait = Some(wait.to_owned());
        self
    }

    pub fn no_owner(mut self) -> Self {
        self.owner = None;
        self
    }

    /// The config, with the Bot API at `api_url`.
    pub fn config_text_for(&self, dir: &Path, api_url: &str) -> String {
        self.config_text(dir).replace("http://127.0.0.1:9", api_url)
    }

    pub fn config_text(&self, dir: &Path) -> String {
        let owner = self
            .owner
            .map(|id| format!("telegram_id = {id}"))
            .unwrap_or_default();
        let mut extra = if self.mandate_kinds {
            MANDATE_KINDS.to_owned()
        } else {
            String::new()
        };
        extra.push_str(&self.tail);
        let extra = extra.replace("{dir}", &dir.display().to_string());
        format!(
            r#"
[owner]
{owner}
timezone = "{timezone}"

[telegram]
api_url = "http://127.0.0.1:9"

[paths]
state_dir = "{dir}/state"
journal = "{dir}/state/decisions.jsonl"
socket = "{dir}/run/consent.sock"

[client]
allowed_uids = {uids:?}

[limits]
max_request_bytes = {max_request_bytes}
max_pending = {max_pending}
decline_streak = {decline_streak}
card_ttl = "{card_ttl}"
{decline_reason_wait}refusals_per_minute = {refusals_per_minute}
refusal_window = "{refusal_window}"
{share}{suggestions}{limits}
[gate]
{gate}

[categories.publish_x]
label = {{ en = "Post to X", ru = "Пост в X", pt = "Post no X" }}
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
fields = ["reply_to"]
attachments = 2
cost = "request"
command = ["/bin/sh", "{dir}/action.sh"]
timeout = "30s"

[categories.send_letter]
label = {{ en = "Send a letter" }}
class = "external"
enabled = true
fields = ["to", "cc", "bcc", "subject"]
field_labels.subject = {{ en = "Subject", ru = "Тема", pt = "Assunto" }}
command = ["/bin/true"]

[categories.wipe_drafts]
label = {{ en = "Delete drafts" }}
class = "destructive"
enabled = false
command = ["/bin/true"]
{extra}"#,
            dir = dir.display(),
            uids = self.allowed_uids,
            max_request_bytes = self.max_request_bytes,
            max_pending = self.max_pending,
            decline_streak = self.decline_streak,
            card_ttl = self.card_ttl,
            decline_reason_wait = self
                .decline_reason_wait
                .as_ref()
                .map_or(String::new(), |wait| format!(
                    "decline_reason_wait = \"{wait}\"\n"
                )),
            refusals_per_minute = self.refusals.0,
            refusal_window = self.refusals.1,
            limits = self.limits,
            // The older tests ask as one uid: its share is all of `max_pending` unless a test
            // sets one.
            share = if self.limits.contains("max_pending_per_uid") {
                String::new()
            } else {
                format!("max_pending_per_uid = {}\n", self.max_pending)
            },
            suggestions = if self.limits.contains("suggest_mandate_after") {
                ""
            } else {
                "suggest_mandate_after = 0\n"
            },
            gate = self.gate,
            timezone = self.timezone,
        )
    }

    /// Starts the daemon and waits until its socket answers.
    pub fn start(self) -> Daemon {
        self.try_start()
            .unwrap_or_else(|failure| panic!("{failure}"))
    }

    /// Starts the daemon in a new temp dir with its own Bot API emulator.
    pub fn try_start(self) -> Result<Daemon, StartFailure> {
        let dir = tempfile::tempdir().unwrap();
        self.try_start_in(dir)
    }

    /// Starts the daemon in `dir` (which may already hold files the test put there).
    pub fn try_start_in(self, dir: tempfile::TempDir) -> Result<Daemon, StartFailure> {
        let (emulator, thread) = Emulator::start_in_thread(TOKEN).unwrap();
        let config = dir.path().join("consentd.toml");
        std::fs::write(
            &config,
            self.config_text_for(dir.path(), &emulator.api_url()),
        )
        .unwrap();
        write_action_script(dir.path());
        // Noon today, UTC: far from the evening summary (21:00) and, unless a test says otherwise,
        // from midnight, so what a test sees does not depend on when it runs.
        std::fs::write(
            dir.path().join("clock"),
            offset_to(noon_today()).to_string(),
        )
        .unwrap();
        Daemon::start_with(dir, config, emulator, std::sync::Arc::new(thread), self.env)
    }
}

/// The category's command: notes each run in ran.log, holds while a `hold` file exists (so a
/// test can act during a run), and prints its result. Absolute paths: the environment is empty.
fn write_action_script(dir: &Path) {
    let dir = dir.display();
    std::fs::write(
        format!("{dir}/action.sh"),
        format!(
            "echo \"$(/bin/cat)\" >> {dir}/stdin.log\n\
             echo run >> {dir}/ran.log\n\
             echo running > {dir}/running\n\
             while [ -f {dir}/hold ]; do /bin/sleep 0.02; done\n\
             echo https://example.org/posted/$$\n"
        ),
    )
    .unwrap();
}

/// Why a daemon did not start; holds its temp dir so the test can look at it.
#[derive(Debug)]
pub struct StartFailure {
    pub message: String,
    _dir: tempfile::TempDir,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A running daemon; killed when dropped.
#[derive(Debug)]
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub socket: PathBuf,
    pub journal: PathBuf,
    pub state_dir: PathBuf,
    pub bot: Emulator,
    bot_thread: std::sync::Arc<EmulatorThread>,
    child: Option<Child>,
}

impl Daemon {
    pub fn builder() -> DaemonBuilder {
        DaemonBuilder::default()
    }

    pub fn start() -> Daemon {
        DaemonBuilder::default().start()
    }

    /// Starts `consentd serve` on a config in `dir`; on failure, its exit status and stderr
    /// (and `dir` is kept until the failure is dropped).
    pub fn start_with(
        dir: tempfile::TempDir,
        config: PathBuf,
        bot: Emulator,
        bot_thread: std::sync::Arc<EmulatorThread>,
        env: Vec<(String, String)>,
    ) -> Result<Daemon, StartFailure> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("daemon.log"))
            .unwrap();
        let child = Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .env("CONSENTD_LOG", "debug")
            .env("CONSENTD_BOT_TOKEN", TOKEN)
            .env("CONSENTD_TEST_CLOCK_FILE", dir.path().join("clock"))
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut daemon = Daemon {
            socket: dir.path().join("run/consent.sock"),
            journal: dir.path().join("state/decisions.jsonl"),
            state_dir: dir.path().join("state"),
            config,
            dir,
            bot,
            bot_thread,
            child: Some(child),
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = daemon.child_mut().try_wait().unwrap() {
                daemon.child = None;
                let message = format!("consentd exited with {status}: {}", daemon.log());
                let dir = std::mem::replace(&mut daemon.dir, tempfile::tempdir().unwrap());
                return Err(StartFailure { message, _dir: dir });
            }
            // The socket is bound before the store opens: ask once to be sure it answers (a
            // daemon that then refuses its database closes the connection unanswered).
            if daemon.journal.exists() && daemon.answers_a_list() {
                return Ok(daemon);
            }
            assert!(
                Instant::now() < deadline,
                "consentd did not start: {}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the daemon again on the same config, state and emulator, after it has stopped.
    pub fn restart(self) -> Daemon {
        self.restart_with(Vec::new())
    }

    /// [`Daemon::restart`] with extra environment (a crash point).
    pub fn restart_with(self, env: Vec<(String, String)>) -> Daemon {
        self.try_restart_with(env)
            .unwrap_or_else(|failure| panic!("{failure}"))
    }

    /// [`Daemon::restart_with`], returning why the daemon did not start instead of failing.
    pub fn try_restart_with(mut self, env: Vec<(String, String)>) -> Result<Daemon, StartFailure> {
        assert!(self.child.is_none(), "stop the daemon before restarting it");
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let (bot, thread) = (self.bot.clone(), self.bot_thread.clone());
        Daemon::start_with(dir, self.config.clone(), bot, thread, env)
    }

    /// Waits until every update pushed to the emulator has been handled (the daemon's next
    /// getUpdates confirmed it).
    pub fn settle(&self) {
        self.wait_for("the daemon to handle every update", |bot| {
            bot.pending_updates().is_empty()
        });
    }

    /// The journal's events, in order: every line the daemon had committed when this was called
    /// ([`Daemon::journal_text`]).
    pub fn journal_events(&self) -> Vec<Value> {
        self.journal_text()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The journal file once it holds every line the daemon had committed when this was called.
    ///
    /// The daemon answers some things at their commit and appends their lines just after (a card
    /// leaves while its `card_shown` line is written; a status read may see a state whose line is
    /// in flight), so the file may trail what a test has just seen by a batch. This waits for the
    /// file to reach the head the database records, and never reads a half-written line; a
    /// running daemon whose file never gets there fails the test. A stopped daemon's file is read
    /// as it is: what it lacks is appended at the next start.
    pub fn journal_text(&self) -> String {
        let read = || std::fs::read_to_string(&self.journal).unwrap_or_default();
        let Some(committed) = self.committed_journal_lines() else {
            return read();
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = read();
            if text.is_empty() || text.ends_with('\n') {
                let last = text.lines().last().map_or(0, |line| {
                    serde_json::from_str::<Value>(line).map_or(0, |e| e["n"].as_u64().unwrap_or(0))
                });
                if last >= committed {
                    return text;
                }
            }
            if !self.is_alive() {
                // A daemon that died meanwhile: the file as it is, for the test to judge.
                return read();
            }
            assert!(
                Instant::now() < deadline,
                "the journal file never reached line {committed}, which the database has\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A copy of the journal as [`Daemon::journal_text`] reads it, for a test that hands it to
    /// another reader (`consentd journal verify`): the daemon may go on appending to its own file
    /// while that reader is in it.
    pub fn settled_journal(&self) -> PathBuf {
        static COPIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let copy = self.dir.path().join(format!("journal-copy-{n}.jsonl"));
        std::fs::write(&copy, self.journal_text()).unwrap();
        copy
    }

    /// The number of the last journal line the running daemon has committed, if it runs.
    fn committed_journal_lines(&self) -> Option<u64> {
        if !self.is_alive() {
            return None;
        }
        let db = consentd_store::inspect::Inspect::open_read_only(&self.state_dir).ok()?;
        db.journal_head().ok().map(|head| head.n)
    }

    /// Whether the daemon's process still runs (not exited, not a zombie waiting to be reaped).
    fn is_alive(&self) -> bool {
        let Some(child) = &self.child else {
            return false;
        };
        std::fs::read_to_string(format!("/proc/{}/stat", child.id()))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(") ")
                    .map(|(_, rest)| !rest.starts_with('Z'))
            })
            .unwrap_or(false)
    }

    /// Asks `ask` until it is not refused `category_off`, and returns the answer; call it once
    /// the `category_on` line is in the journal. The owner's On holds once its line is there,
    /// and the daemon's copy of the switches follows within moments, not seconds.
    pub fn ask_once_on(&self, ask: &Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let answer = self.request(ask);
            if answer["reason"] != "category_off" {
                return answer;
            }
            assert!(
                Instant::now() < deadline,
                "the kind never came on: {answer}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the daemon to exit by itself (a crash point, a fatal error).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child_mut().try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "consentd did not exit: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the journal has an `ev` line and returns the last one.
    pub fn wait_for_event(&self, ev: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(line) = self
                .journal_events()
                .into_iter()
                .rev()
                .find(|e| e["ev"] == ev)
            {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "the journal never had {ev}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the journal has an `ev` line for record `id` and returns it. A card leaves
    /// once its opening commits, while its `card_shown` line is appended: the line may come just
    /// after the card.
    pub fn wait_for_line(&self, ev: &str, id: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(line) = self
                .journal_events()
                .into_iter()
                .find(|e| e["ev"] == ev && e["id"] == id)
            {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "the journal never had {ev} for {id}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sets the daemon's clock to `at` (through its test clock file); it runs on from there.
    pub fn set_clock(&self, at: chrono::DateTime<chrono::Utc>) {
        self.set_clocks(offset_to(at), self.clocks().1);
    }

    /// Lets time pass until the daemon's wall clock reads `at`: both clocks move together, as
    /// they do when no one steps the wall clock. (Backwards only to start a test at an earlier
    /// hour of the day, before anything it looks at happened.)
    pub fn pass_time_to(&self, at: chrono::DateTime<chrono::Utc>) {
        let (wall, monotonic) = self.clocks();
        let step = offset_to(at) - wall;
        self.set_clocks(wall + step, monotonic + step);
    }

    /// Moves the daemon's wall clock forward by `seconds` (through its test clock file); its
    /// monotonic clock stays where it is.
    pub fn advance_clock(&self, seconds: i64) {
        let (wall, monotonic) = self.clocks();
        self.set_clocks(wall + seconds, monotonic);
    }

    /// The test clock file's offsets: the wall clock's and the monotonic clock's, in seconds.
    pub fn clocks(&self) -> (i64, i64) {
        let text = std::fs::read_to_string(self.dir.path().join("clock")).unwrap_or_default();
        let mut numbers = text.split_whitespace().map(|n| n.parse::<i64>().unwrap());
        (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0))
    }

    /// Shifts the daemon's wall clock by `wall` seconds and its monotonic clock by `monotonic`
    /// seconds from the real ones (a wall clock stepped back, time passed on the monotonic one).
    pub fn set_clocks(&self, wall: i64, monotonic: i64) {
        // Renamed into place: the daemon reads the file on every clock call, and a read between
        // a truncation and the write would see no shift at all (the real time, hours away).
        let temp = self.dir.path().join("clock.next");
        std::fs::write(&temp, format!("{wall} {monotonic}")).unwrap();
        std::fs::rename(&temp, self.dir.path().join("clock")).unwrap();
    }

    /// How many times the category's command has run.
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("ran.log"))
            .map(|log| log.lines().count())
            .unwrap_or(0)
    }

    /// How many times the category's command ran for each record (from what it read on stdin).
    pub fn runs_by_record(&self) -> std::collections::BTreeMap<String, usize> {
        let mut runs = std::collections::BTreeMap::new();
        let log = std::fs::read_to_string(self.dir.path().join("stdin.log")).unwrap_or_default();
        for line in log.lines().filter(|l| !l.is_empty()) {
            let stdin: Value = serde_json::from_str(line).unwrap();
            *runs
                .entry(stdin["id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        runs
    }

    /// The bot's messages in the owner's chat.
    pub fn owner_chat(&self) -> Vec<ChatMessage> {
        self.bot
            .messages(OWNER)
            .into_iter()
            .filter(|m| m.outgoing)
            .collect()
    }

    /// Waits until `what` holds of the emulator.
    pub fn wait_for(&self, what: &str, f: impl Fn(&Emulator) -> bool) {
        self.bot
            .wait_until_blocking(what, PATIENCE, f)
            .unwrap_or_else(|error| panic!("{error}\n{}", self.log()));
    }

    /// Waits for the card of record `id` (a message naming it, with buttons) and returns it.
    pub fn card_of(&self, id: &str) -> ChatMessage {
        // The message naming it with buttons: a reply that lists it (`/pending`) has none.
        let find = |bot: &Emulator| {
            bot.messages(OWNER).into_iter().find(|m| {
                m.outgoing
                    && !m.buttons().is_empty()
                    && m.text.as_deref().is_some_and(|t| t.contains(id))
            })
        };
        self.wait_for(&format!("the card of {id}"), |bot| find(bot).is_some());
        find(&self.bot).unwrap()
    }

    /// Presses the card's first button (Yes) as the owner, in the owner's private chat.
    pub fn press_yes(&self, card: &ChatMessage) {
        self.press_nth(card, 0);
    }

    /// Presses the card's second button (No) as the owner, in the owner's private chat.
    pub fn press_no(&self, card: &ChatMessage) {
        self.press_nth(card, 1);
    }

    /// Presses the card's "No, and say why…" (the button on its second row) as the owner.
    pub fn press_no_say_why(&self, card: &ChatMessage) {
        self.press_nth(card, say_why_index(card));
    }

    /// Presses button `index` of `card` as the owner, in the owner's private chat.
    pub fn press_nth(&self, card: &ChatMessage, index: usize) {
        let data = card.buttons()[index].callback_data.clone().unwrap();
        self.bot.push_press(
            &UserSpec::new(OWNER, "Mila"),
            ChatSpec::private(OWNER),
            card.message_id,
            &data,
        );
    }

    /// The owner taps button `index` of `message` in their private chat, as a Telegram client
    /// does (only a button the message carries can be tapped).
    pub fn tap(&self, message: &ChatMessage, index: usize) {
        let data = message.buttons()[index].callback_data.clone().unwrap();
        self.bot
            .press_button(
                &UserSpec::new(OWNER, "Mila"),
                ChatSpec::private(OWNER),
                message.message_id,
                &data,
            )
            .unwrap();
    }

    /// Waits until `status` of record `id` says `state`.
    pub fn wait_state(&self, id: &str, state: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let answer = self.request(&serde_json::json!({"v":1,"op":"status","id":id}));
            if answer["status"] == state {
                return answer;
            }
            assert!(
                Instant::now() < deadline,
                "{id} never became {state}: {answer}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn child_mut(&mut self) -> &mut Child {
        self.child.as_mut().expect("the daemon has exited")
    }

    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.as_ref().expect("running").id() as i32)
    }

    /// The daemon's stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// Sends a signal and waits for the daemon to exit.
    pub fn stop_with(&mut self, signal: nix::sys::signal::Signal) -> ExitStatus {
        nix::sys::signal::kill(self.pid(), signal).unwrap();
        self.wait_exit()
    }

    pub fn is_running(&mut self) -> bool {
        self.child_mut().try_wait().unwrap().is_none()
    }

    /// Sends raw bytes as the request and returns every answer line.
    pub fn request_raw(&self, frame: &[u8]) -> Vec<Value> {
        let mut stream = UnixStream::connect(&self.socket).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        // The daemon may refuse and close before reading it all: the answer still waits to be read.
        let _ = stream.write_all(frame);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        answer_lines(&mut stream)
    }

    /// Whether a `list` on the socket gets an answer line; never panics (the daemon may be
    /// exiting).
    fn answers_a_list(&self) -> bool {
        let Ok(mut stream) = UnixStream::connect(&self.socket) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(PATIENCE));
        let _ = stream.write_all(b"{\"v\":1,\"op\":\"list\"}\n");
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        answer.contains(&b'\n')
    }

    /// Sends a JSON request and returns its final answer.
    pub fn request(&self, request: &Value) -> Value {
        let mut frame = serde_json::to_vec(request).unwrap();
        frame.push(b'\n');
        self.request_raw(&frame)
            .pop()
            .unwrap_or_else(|| panic!("no answer to {request}: {}", self.log()))
    }

    /// Runs a `consentd` client command against this daemon's socket.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("CONSENTD_SOCKET", &self.socket)
            .env("CONSENTD_BOT_TOKEN", TOKEN)
            .env("CONSENTD_TEST_CLOCK_FILE", self.dir.path().join("clock"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Starts a `consentd` client command in the background (for one that waits on the owner).
    pub fn cli_spawn(&self, args: &[&str]) -> Child {
        Command::new(BIN)
            .args(args)
            .env("CONSENTD_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads every answer line until the daemon closes the connection.
pub fn answer_lines(stream: &mut UnixStream) -> Vec<Value> {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            // A refusal sent before the request was read ends in a reset after the answer.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => {
                break
            }
            Err(e) => panic!("reading the answer: {e}"),
        }
    }
    String::from_utf8(answer)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

/// Today at 12:00 UTC.
pub fn noon_today() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
        .date_naive()
        .and_hms_opt(12, 0, 0)
        .unwrap()
        .and_utc()
}

/// Today at `h`:`m` UTC.
pub fn today_at(h: u32, m: u32) -> chrono::DateTime<chrono::Utc> {
    noon_today() - chrono::Duration::hours(12)
        + chrono::Duration::hours(i64::from(h))
        + chrono::Duration::minutes(i64::from(m))
}

/// The test clock's offset, in seconds, that makes the daemon's time `at` now.
pub fn offset_to(at: chrono::DateTime<chrono::Utc>) -> i64 {
    (at - chrono::Utc::now()).num_seconds()
}

/// A good ask for `publish_x`, with `wait` off.
pub fn good_ask(text: &str) -> Value {
    serde_json::json!({
        "v": 1, "op": "ask", "kind": "publish_x", "target": "@mila_news", "text": text,
        "fields": {"reply_to": "https://example.org/1"}, "cost_usd": "0.04", "wait": false
    })
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `consentd` with arguments, outside any daemon.
pub fn consentd(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs `command` (stdin closed, its output kept) and returns its output, or panics naming
/// `what` when it has not ended within 10 s: for what must refuse at once, never wait (a FIFO, an
/// endless file). The child is killed first, so no test leaves one behind.
pub fn output_within_ten_seconds(
    mut command: std::process::Command,
    what: &str,
) -> std::process::Output {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what}: still waiting after 10 s");
    }
    child.wait_with_output().unwrap()
}

/// The action letter of callback data (`1.<kid>.<a>.<subject>.<tag>`).
pub fn action_letter(data: &str) -> Option<&str> {
    data.split('.').nth(2)
}

/// Where `card`'s "No, and say why…" is among its buttons (row by row, left to right).
pub fn say_why_index(card: &ChatMessage) -> usize {
    card.buttons()
        .iter()
        .position(|b| b.callback_data.as_deref().and_then(action_letter) == Some("w"))
        .expect("the card offers No, and say why…")
}
