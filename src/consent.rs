//! The consent loop: what the owner's chat does to records, and what records do to the chat.
//!
//! One task handles [`Event`]s one at a time: a batch of Telegram updates (each handled with its
//! next offset stored in the same transaction as what it changed), the expiry sweep's tick, and
//! the end of a run. Deciding is done by pure functions — [`crate::press::verify`],
//! [`crate::pairing::decide`], the card renderers — and this module does the IO around them.

mod reply;
mod stale;

pub(crate) use reply::reason_deadline;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::card::mandate::{MandateView, UsageView};
use crate::card::{self, AttachmentView, CardError, CardView, Outcome};
use crate::clock::Clock;
use crate::commands::{self, Command};
use crate::config::{Category, Config, Gate};
use crate::deadline::{Now, Window};
use crate::digest::Sha256Hash;
use crate::executor::{self, AttachmentSource, RunOutcome, RunSpec, StdinAction};
use crate::locale::{Language, Locales};
use crate::lookalike::{self, KnownTargets, Warning};
use crate::pairing::PairVerdict;
use crate::press::{
    self, AsDrawn, MessageFacts, PressAction, PressContext, PressKey, Rejection, SubjectFacts,
    Verdict,
};
use crate::sender::{Drawer, Drawing, DrawnCard};
use crate::store::consent::{Claim, ClaimNotices, ClaimWindow, Finish, OwnerRow};
use crate::store::db::note_decider_name;
use crate::store::outbox::{self, Body, ButtonSpec, Sound, What};
use crate::store::{
    Effects, Event as JournalEvent, MandateRow, Record, RecordState, StateChange, Store,
    StoreError, Subject as StoreSubject,
};
use crate::styled::Styled;
use crate::telegram::{
    ChatRef, Incoming, Person, Press, Probe, SendError, Telegram, POLL_TIMEOUT_SECS, UNREADABLE,
};

/// What a category switch's buttons are signed for in place of a record's digest.
const CATEGORY_DIGEST: &str = "category";

/// How often the expiry sweep looks for cards past their ttl.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a press waits for a send in flight to be recorded before it is judged (see
/// [`Drawing`]). A send stalled longer than this leaves the press judged on what is known.
const DRAWING_PATIENCE: Duration = Duration::from_secs(3);

/// How long a drawn button counts at most: a mandate's term (7 days) and a day to spare.
const DRAWN_KEPT_DAYS: i64 = 8;

/// Category switches name a kind, not a record.
fn is_switch(action: PressAction) -> bool {
    matches!(action, PressAction::CategoryOn | PressAction::CategoryOff)
}

/// A press's subject as the store knows it (owned: [`SubjectFacts`] borrows from it).
#[derive(Debug)]
struct Subject {
    digest: String,
    open: bool,
    window: Option<Window>,
    /// Why it is not open, in words the owner's press can be answered with.
    stale: Option<card::owner::Stale>,
}

/// Everything a press is judged on.
#[derive(Debug)]
struct PressFacts {
    callback: Option<press::Callback>,
    record: Option<Record>,
    subject: Option<Subject>,
    message: MessageFacts,
}

/// A text message in a private chat, as the loop reads it.
#[derive(Debug)]
struct Said {
    chat: ChatRef,
    text: String,
    /// The message it replies to, if any.
    reply_to: Option<i64>,
}

/// Who pressed, and the update's next offset and time, for what the press changes.
#[derive(Debug)]
struct Decision {
    from: Person,
    next: i64,
    now: DateTime<Utc>,
    /// The pressed message (chat, message id), when Telegram said which.
    message: Option<(i64, i64)>,
}

/// The owner, once known: from the config, or paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub id: i64,
    pub language: Language,
}

/// The owner as shared between the loop (which pairs) and the intake (which needs to know).
pub type OwnerCell = Arc<RwLock<Option<Owner>>>;

/// What the loop handles, one at a time.
#[derive(Debug)]
pub enum Event {
    /// A batch of updates from one getUpdates; the poller waits for the reply before asking for
    /// the next batch, so no update is confirmed to Telegram before it is handled.
    Updates(Vec<Incoming>, oneshot::Sender<()>),
    /// Time to expire cards past their ttl.
    Sweep,
    /// A run ended.
    RunEnded { id: String, outcome: RunOutcome },
    /// An ask an open mandate covered: the store has already claimed it (running, `used`
    /// durable) in the transaction that took its share of the mandate; its run starts.
    Covered(String),
}

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct Consent {
    pub config: Arc<Config>,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub key: Arc<PressKey>,
    pub locales: Arc<Locales>,
    pub owner: OwnerCell,
    pub switches: Arc<RwLock<BTreeMap<String, bool>>>,
    /// The gate's settings: the config's, with what the owner set in the chat.
    pub gate: Arc<RwLock<Gate>>,
    /// Where runs get their private working directories.
    pub work_root: PathBuf,
    pub telegram: Telegram,
    /// Held by the sender while a message with buttons is sent and recorded.
    pub drawing: Drawing,
}

/// The language the owner reads: the config's, else their Telegram language, else English.
pub fn owner_language(config: &Config, telegram_code: Option<&str>) -> Language {
    config
        .owner
        .language
        .or_else(|| telegram_code.and_then(Language::from_code))
        .unwrap_or(Language::En)
}

/// Reads who the owner is at start: the config's `telegram_id`, else the paired one.
pub fn load_owner(config: &Config, stored: Option<OwnerRow>) -> Option<Owner> {
    match (config.owner.telegram_id, stored) {
        (Some(id), stored) => Some(Owner {
            id,
            language: owner_language(
                config,
                stored
                    .as_ref()
                    .filter(|row| row.telegram_id == id)
                    .and_then(|row| row.language_code.as_deref()),
            ),
        }),
        (None, Some(row)) => Some(Owner {
            id: row.telegram_id,
            language: owner_language(config, row.language_code.as_deref()),
        }),
        (None, None) => None,
    }
}

impl Consent {
    fn owner(&self) -> Option<Owner> {
        *self.owner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn language(&self) -> Language {
        self.owner().map_or_else(
            || owner_language(&self.config, None),
            |owner| owner.language,
        )
    }

    fn category_enabled(&self, kind: &str) -> bool {
        let switches = self.switches.read().unwrap_or_else(|p| p.into_inner());
        switches
            .get(kind)
            .copied()
            .unwrap_or_else(|| self.config.categories.get(kind).is_some_and(|c| c.enabled))
    }

    /// Runs the loop until `shutdown`; returns an error when Telegram says another instance polls
    /// the same bot.
    /// `recovered` is told once the claims a crash left behind are settled: asks served before
    /// then could be mistaken for them.
    pub async fn run(
        self,
        daemon_shutdown: CancellationToken,
        mut covered: mpsc::UnboundedReceiver<String>,
        recovered: oneshot::Sender<()>,
    ) -> anyhow::Result<()> {
        // The loop's own tasks stop when the daemon stops and when the loop itself ends (a 409).
        let shutdown = daemon_shutdown.child_token();
        let (events, mut inbox) = mpsc::channel::<Event>(64);
        let runs = TaskTracker::new();
        let conflict = CancellationToken::new();
        let tasks = self.spawn_helpers(&events, &shutdown, &conflict);

        self.set_command_menu();
        self.recover(&runs, &events).await?;
        let _ = recovered.send(());
        let result = self
            .handle_until_stopped(
                &shutdown,
                &conflict,
                &mut inbox,
                &mut covered,
                &runs,
                &events,
            )
            .await;
        shutdown.cancel();
        // The loop ends the daemon too (a 409 ends it from here).
        daemon_shutdown.cancel();
        self.run_covered_while_stopping(covered, &runs, &events)
            .await;
        self.finish_runs(&runs, inbox).await;
        tasks.wait().await;
        result
    }

    /// Starts the loop's helpers: the poller, the sender and the sweep's ticks. A sender that
    /// stops ends the loop, as a 409 does.
    fn spawn_helpers(
        &self,
        events: &mpsc::Sender<Event>,
        shutdown: &CancellationToken,
        conflict: &CancellationToken,
    ) -> TaskTracker {
        let tasks = TaskTracker::new();
        tasks.spawn(poll(
            self.store.clone(),
            self.telegram.clone(),
            events.clone(),
            shutdown.clone(),
            conflict.clone(),
        ));
        tasks.spawn(self.clone().send_until(shutdown.clone(), conflict.clone()));
        tasks.spawn(tick_sweeps(events.clone(), shutdown.clone()));
        tasks.close();
        tasks
    }

    /// The sender's task; its failure is reported through `conflict`, which ends the loop.
    async fn send_until(self, shutdown: CancellationToken, conflict: CancellationToken) {
        let (store, telegram, clock, drawing) = (
            self.store.clone(),
            self.telegram.clone(),
            self.clock.clone(),
            self.drawing.clone(),
        );
        let drawer: Arc<dyn Drawer> = Arc::new(self);
        if let Err(error) =
            crate::sender::run(store, telegram, drawer, clock, drawing, shutdown).await
        {
            tracing::error!(%error, "the sender stopped");
            conflict.cancel();
        }
    }

    /// The loop proper: one event at a time until `shutdown`, a 409 (`conflict`) or the inbox
    /// closes.
    async fn handle_until_stopped(
        &self,
        shutdown: &CancellationToken,
        conflict: &CancellationToken,
        inbox: &mut mpsc::Receiver<Event>,
        covered: &mut mpsc::UnboundedReceiver<String>,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> anyhow::Result<()> {
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = conflict.cancelled() => return Err(anyhow::anyhow!(SendError::Conflict)),
                event = inbox.recv() => event,
                Some(id) = covered.recv() => Some(Event::Covered(id)),
            };
            let Some(event) = event else { return Ok(()) };
            if let Err(error) = self.handle(event, runs, events).await {
                tracing::error!(%error, "the consent loop could not handle an event");
            }
        }
    }

    /// Claimed while stopping: they run now rather than become outcome_unknown at the next
    /// start. The channel closes when the socket server has finished its last connection, so a
    /// covered ask committed during the stop is not left behind.
    async fn run_covered_while_stopping(
        &self,
        mut covered: mpsc::UnboundedReceiver<String>,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) {
        while let Some(id) = covered.recv().await {
            if let Err(error) = self.run_claimed(id, runs, events).await {
                tracing::error!(%error, "could not start a covered ask while stopping");
            }
        }
    }

    /// Runs in flight finish and their outcomes are recorded even while stopping, so a clean
    /// stop never leaves a claim without an outcome. Other events are dropped: updates are
    /// fetched again after the restart, and the sweep runs again.
    async fn finish_runs(&self, runs: &TaskTracker, mut inbox: mpsc::Receiver<Event>) {
        runs.close();
        loop {
            tokio::select! {
                () = runs.wait() => break,
                event = inbox.recv() => match event {
                    Some(Event::RunEnded { id, outcome }) => self.record_outcome(id, outcome).await,
                    Some(_) => {}
                    None => break,
                },
            }
        }
        // A run that ended just before `runs.wait()` returned may have queued its outcome last.
        while let Ok(event) = inbox.try_recv() {
            if let Event::RunEnded { id, outcome } = event {
                self.record_outcome(id, outcome).await;
            }
        }
    }

    async fn record_outcome(&self, id: String, outcome: RunOutcome) {
        if let Err(error) = self.run_ended(id, outcome).await {
            tracing::error!(%error, "could not record a run's outcome while stopping");
        }
    }

    async fn handle(
        &self,
        event: Event,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        match event {
            Event::Updates(batch, done) => {
                for incoming in batch {
                    self.incoming(incoming, runs, events).await?;
                }
                let _ = done.send(());
            }
            Event::Sweep => self.expire_due().await?,
            Event::RunEnded { id, outcome } => self.run_ended(id, outcome).await?,
            Event::Covered(id) => self.run_claimed(id, runs, events).await?,
        }
        Ok(())
    }

    /// At start: claims without an outcome become outcome_unknown (never re-run), with an urgent
    /// notice; granted records not yet claimed are claimed and run.
    async fn recover(
        &self,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now();
        let orphans = self
            .store
            .call(|db| db.records_in(RecordState::Running))
            .await?;
        for record in orphans {
            let (notice, _) = self.unknown_texts(&record, now).await;
            let finish = Finish {
                state: RecordState::OutcomeUnknown,
                result: None,
                message: Some(
                    "consentd stopped while the action ran; it may or may not have run".into(),
                ),
                stderr: None,
                detail: Some("restart".into()),
            };
            let ending = self.ending(&record, &finish, now).await;
            let owner = self.owner();
            let id = record.id.clone();
            self.store
                .call(move |db| {
                    db.finish(
                        &id,
                        &finish,
                        |tx, effects, _| {
                            if let Some(owner) = owner {
                                ending.queue(tx, effects, owner.id)?;
                                say(tx, effects, owner.id, notice, Sound::Urgent)?;
                            }
                            Ok(())
                        },
                        now,
                    )
                })
                .await?;
        }
        let granted = self
            .store
            .call(|db| db.records_in(RecordState::Granted))
            .await?;
        // A granted mandate request is where it ends: it opened a mandate and never runs.
        for record in granted
            .into_iter()
            .filter(|r| r.subject == StoreSubject::Action)
        {
            self.claim_and_run(record.id, ClaimWindow::JudgeAgain, runs, events)
                .await?;
        }
        Ok(())
    }

    async fn unknown_texts(&self, record: &Record, now: DateTime<Utc>) -> (String, Styled) {
        let lang = self.language();
        let label = self.label(record, lang);
        let notice = card::outcome_unknown_notice(&self.locales, lang, &record.id, &label);
        let edit = self
            .outcome_text(record, RecordState::OutcomeUnknown, None, now)
            .await;
        (notice, edit)
    }

    /// What the owner is told when a run ends: the card edited to its outcome, or — for an ask a
    /// mandate answered, which had no card — a receipt with today's use and Stop (none when the
    /// config keeps receipts for the summary).
    ///
    /// Never fails: what the owner is told must not stand in the way of recording the outcome.
    async fn ending(&self, record: &Record, finish: &Finish, now: DateTime<Utc>) -> Ending {
        let Some(mandate_id) = record.mandate_id.clone() else {
            // The edit keeps saying who decided (SPEC §6), now with how the run ended.
            let outcome = Outcome {
                state: finish.state.as_str(),
                decided_by: record.decided_by_name.clone(),
                result: finish.result.as_deref(),
                reason: finish.message.as_deref(),
                reply_by: None,
            };
            let edit = self.outcome_text_with(record, outcome, now).await;
            return Ending {
                record_id: record.id.clone(),
                edit: Some(edit),
                messages: Vec::new(),
                sound: Sound::Silent,
            };
        };
        let none = Ending {
            record_id: record.id.clone(),
            edit: None,
            messages: Vec::new(),
            sound: Sound::Silent,
        };
        // With receipts in the summary, a run that did not succeed is still told at once: the
        // owner gets a short reason for a failure (SPEC §8).
        let receipts = self.gate.read().unwrap_or_else(|p| p.into_inner()).receipts;
        if receipts == crate::config::Receipts::Summary && finish.state == RecordState::Executed {
            return none;
        }
        let tz = self.config.owner.timezone;
        // The day the ask was claimed in, so a run that crosses midnight counts where it was
        // taken. Its use as of its own claim is kept with it; only an ask claimed before the
        // store kept that is shown against the whole day.
        let day = parse_time(&record.created_at).unwrap_or(now);
        let (row, day_usage) = match self
            .store
            .call(move |db| db.mandate_usage(&mandate_id, day, tz))
            .await
        {
            Ok(Some(found)) => found,
            Ok(None) => return none,
            Err(error) => {
                tracing::warn!(%error, id = %record.id, "no receipt: cannot read its mandate");
                return none;
            }
        };
        let lang = self.language();
        let outcome = Outcome {
            state: finish.state.as_str(),
            decided_by: None,
            result: finish.result.as_deref(),
            reason: finish.message.as_deref(),
            reply_by: None,
        };
        let label = self.label(record, lang);
        // The receipt shows the action's target, not the mandate's terms.
        let view = self.mandate_view(&row, &label, &[]);
        let usage = record.mandate_use.clone().unwrap_or(day_usage);
        let usage = UsageView {
            actions: usage.actions,
            usd: usage.usd,
        };
        let known = self.known_for(&record.id, now).await;
        let rendered = with_view(self, record, &known, lang, now, |action| {
            card::mandate::render_receipt(action, &view, usage, &outcome, &self.locales, lang, now)
        });
        let mut messages: Vec<Body> = rendered
            .parts
            .into_iter()
            .map(|part| Body::new(part, Vec::new()))
            .collect();
        // A Stop for a mandate already stopped or ended would only be "not accepted".
        let buttons = if row.is_open(now) {
            self.signed(rendered.buttons, &row.id, &row.digest)
        } else {
            Vec::new()
        };
        messages.push(Body::new(rendered.card, buttons));
        Ending {
            record_id: record.id.clone(),
            edit: None,
            messages,
            sound: if finish.state == RecordState::Executed {
                Sound::Receipt
            } else {
                Sound::Gated
            },
        }
    }

    async fn incoming(
        &self,
        incoming: Incoming,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let next = incoming.update_id() + 1;
        let stored = self.store.call(|db| db.next_offset()).await?;
        if incoming.update_id() < stored {
            // Handled before (a duplicate or a late, out-of-order delivery): nothing changes twice.
            return Ok(());
        }
        let now = self.clock.now();
        match incoming {
            Incoming::Other { what, update_id } => {
                if what == UNREADABLE {
                    tracing::warn!(update_id, "skipping an update teloxide cannot read");
                } else {
                    tracing::debug!(what, "update ignored");
                }
                self.store.call(move |db| db.skip_update(next, now)).await
            }
            Incoming::Text {
                from,
                chat,
                text,
                forwarded,
                reply_to,
                ..
            } => {
                if !chat.private || forwarded {
                    return self.store.call(move |db| db.skip_update(next, now)).await;
                }
                let said = Said {
                    chat,
                    text,
                    reply_to,
                };
                self.text(from, said, next, now).await
            }
            Incoming::Press { press, .. } => self.press(press, next, runs, events).await,
        }
    }

    async fn text(
        &self,
        from: Person,
        said: Said,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let chat = said.chat;
        let command = commands::parse(&said.text, self.config.gate.night_card_limit);
        match (self.owner(), command) {
            (None, Command::Start(code)) => self.pair(from, chat, code, next, now).await,
            // Not a command, in reply to a message: perhaps the reason for a No.
            (Some(owner), Command::Unknown) if from.id == owner.id && said.reply_to.is_some() => {
                self.owner_reply(owner, said, next, now).await
            }
            (Some(owner), command) if from.id == owner.id => {
                self.command(owner, chat, command, next, now).await
            }
            _ => {
                let line = card::not_owner_line(&self.locales, self.language_for(&from));
                self.store
                    .call(move |db| {
                        db.stranger_may_hear(from.id, next, now, |tx, effects| {
                            say(tx, effects, chat.id, line, Sound::Gated)
                        })
                        .map(|_| ())
                    })
                    .await
            }
        }
    }

    /// The owner's command: settings are stored and journaled with their reply; the other
    /// commands only reply. Replies are quiet: the owner has just typed.
    async fn command(
        &self,
        owner: Owner,
        chat: ChatRef,
        command: Command,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let lang = owner.language;
        let locales = &self.locales;
        let replies: Vec<Body> = match command {
            Command::Pending => self
                .pending_texts(lang, now)
                .await?
                .into_iter()
                .map(text_body)
                .collect(),
            Command::Mandates => self.mandates_replies(lang, now).await?,
            Command::Categories => self.categories_replies(lang),
            Command::Anchor => {
                let head = self.store.call(|db| Ok(db.journal_head())).await?;
                let head = (head.n > 0).then_some((head.n, head.h.as_str()));
                vec![text_body(card::owner::anchor(locales, lang, head))]
            }
            Command::Usage(usage) => vec![text_body(card::owner::usage(locales, lang, usage))],
            Command::QuietNow | Command::NightCardsNow => {
                vec![text_body(self.setting_now(command, lang))]
            }
            Command::Quiet(_) | Command::NightCards(_) | Command::Summary(_) | Command::Lang(_) => {
                return self.change_setting(owner, command, next, now).await;
            }
            Command::Start(_) | Command::Help => {
                vec![text_body(card::help_text(locales, lang))]
            }
            // One line, not the whole help: a stray message is more often a slip than a question.
            Command::Unknown => vec![text_body(card::owner::help_pointer(locales, lang))],
        };
        self.store
            .call(move |db| {
                db.write_effects(now, Some(next), |tx, effects| {
                    for reply in replies {
                        queue(
                            tx,
                            effects,
                            chat.id,
                            What::Message,
                            None,
                            reply,
                            Sound::Silent,
                        )?;
                    }
                    Ok(())
                })
            })
            .await
    }

    /// What `/quiet` or `/nightcards` alone answers: the setting as the gate has it now (the
    /// config's, or the owner's own over it).
    fn setting_now(&self, command: Command, lang: Language) -> String {
        let gate = self.gate.read().unwrap_or_else(|p| p.into_inner()).clone();
        match command {
            Command::NightCardsNow => card::owner::nightcards_current(
                &self.locales,
                lang,
                gate.night_card_limit,
                self.config.gate.night_card_limit,
            ),
            _ => card::owner::quiet_current(&self.locales, lang, gate.quiet_hours),
        }
    }

    /// `/quiet`, `/nightcards`, `/summary` or `/lang` with its value: stored, journaled, replied
    /// to, and in force at once.
    async fn change_setting(
        &self,
        owner: Owner,
        command: Command,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let lang = owner.language;
        let locales = &self.locales;
        match command {
            Command::Quiet(quiet) => {
                let value = match quiet {
                    Some((from, to)) => format!("{}-{}", from.format("%H:%M"), to.format("%H:%M")),
                    None => "off".to_owned(),
                };
                let reply = card::owner::quiet_set(locales, lang, quiet);
                // The gate the sender reads changes before the store releases held cards: a
                // card held under the old hours after that release is released by the sender
                // itself (see `sender::card_delivery`).
                self.write_gate().quiet_hours = quiet;
                self.set(owner, "quiet_hours", value, reply, next, now)
                    .await
            }
            Command::NightCards(count) => {
                let reply = card::owner::nightcards_set(locales, lang, count);
                // Before the store's release of held cards, as for the quiet hours.
                self.write_gate().night_card_limit = count;
                let value = count.to_string();
                self.set(owner, "night_card_limit", value, reply, next, now)
                    .await
            }
            Command::Summary(at) => {
                let reply = card::owner::summary_set(locales, lang, at);
                let value = at.format("%H:%M").to_string();
                self.set(owner, "summary_at", value, reply, next, now)
                    .await?;
                self.write_gate().summary_at = at;
                Ok(())
            }
            Command::Lang(chosen) => {
                let reply = card::owner::lang_set(locales, chosen);
                let value = chosen.as_str().to_owned();
                // The cell before the store: the reply is queued there, and whatever shows the
                // owner's language beside the daemon (the sandbox's page) must already have the
                // new one when the reply reaches the chat.
                if let Some(known) = self
                    .owner
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_mut()
                {
                    known.language = chosen;
                }
                self.set(owner, "language", value, reply, next, now).await
            }
            // Not a setting (the caller sends only settings here): only the offset moves.
            _ => self.store.call(move |db| db.skip_update(next, now)).await,
        }
    }

    /// Stores one of the owner's settings (journaled `settings`) with its reply.
    async fn set(
        &self,
        owner: Owner,
        key: &'static str,
        value: String,
        reply: String,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.store
            .call(move |db| {
                db.set_owner_setting(key, &value, owner.id, next, now, |tx, effects| {
                    say(tx, effects, owner.id, reply, Sound::Silent)
                })
            })
            .await
    }

    fn write_gate(&self) -> std::sync::RwLockWriteGuard<'_, Gate> {
        self.gate.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The `/categories` reply: a title, then each kind with its switch and the button that
    /// flips it (signed for the kind, like every button).
    fn categories_replies(&self, lang: Language) -> Vec<Body> {
        let mut replies = vec![text_body(card::owner::categories_title(
            &self.locales,
            lang,
        ))];
        for kind in self.config.categories.keys() {
            replies.push(self.category_line(kind, self.category_enabled(kind), lang));
        }
        replies
    }

    /// One kind's line in `/categories`: its label, class and switch (`on`), and the signed
    /// button that flips it.
    fn category_line(&self, kind: &str, on: bool, lang: Language) -> Body {
        let category = self.config.categories.get(kind);
        let (text, button) = card::owner::category_item(
            &self.locales,
            lang,
            category.map_or(kind, |c| c.label(lang)),
            category.map_or("external", |c| c.class.as_str()),
            on,
        );
        Body::new(
            Styled::plain(text),
            self.signed(vec![button], kind, CATEGORY_DIGEST),
        )
    }

    /// The owner's On or Off: the switch is stored and journaled, the shared switches change,
    /// and the owner is told; the pressed `/categories` line is drawn again with its new state
    /// and the button that flips it back.
    async fn switch_category(
        &self,
        kind: String,
        on: bool,
        decision: &Decision,
    ) -> Result<(), StoreError> {
        let (by, next, now) = (decision.from.id, decision.next, decision.now);
        let lang = self.language();
        let label = self
            .config
            .categories
            .get(&kind)
            .map_or(kind.clone(), |c| c.label(lang).to_owned());
        let reply = card::owner::category_switched(&self.locales, lang, &label, on);
        let redrawn = decision
            .message
            .map(|message| (message, self.category_line(&kind, on, lang)));
        let stored = kind.clone();
        let changed = self.category_enabled(&kind) != on;
        self.store
            .call(move |db| {
                db.switch_category(&stored, on, changed, by, next, now, |tx, effects| {
                    if let Some(((chat, message_id), body)) = redrawn {
                        outbox::queue_message_edit(tx, chat, message_id, &body, effects.now)?;
                        effects.queued = true;
                    }
                    say(tx, effects, by, reply, Sound::Silent)
                })
            })
            .await?;
        self.switches
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kind, on);
        Ok(())
    }

    /// The evening summary, once a local day, at `summary_at` or at the first sweep after it
    /// (the daemon may have been down then).
    async fn summary_if_due(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let tz = self.config.owner.timezone;
        let summary_at = self
            .gate
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .summary_at;
        let day = now.with_timezone(&tz).date_naive();
        match crate::gate::local_instant(day, summary_at, tz) {
            Some(at) if now >= at => {}
            _ => return Ok(()),
        }
        if self.store.call(move |db| db.summary_sent_on(day)).await? {
            return Ok(());
        }
        // Since the last summary (else since local midnight): nothing falls between two.
        let (midnight, _) = crate::mandate::local_day(now, tz);
        let start = self
            .store
            .call(|db| db.last_summary_sent_at())
            .await?
            .unwrap_or(midnight);
        let counts = self.store.call(move |db| db.day_counts(start, now)).await?;
        let spend = self
            .store
            .call(move |db| db.mandate_spend(start, now))
            .await?;
        let lang = owner.language;
        let labels = self.labels(lang);
        let locales = self.locales.clone();
        // Drawn inside the summary's transaction: the anchor is known only there.
        let render = move |anchor: &str| {
            let mandates: Vec<card::owner::MandateDay<'_>> = spend
                .iter()
                .map(|s| card::owner::MandateDay {
                    id: &s.id,
                    label: labels.get(&s.kind).map_or(s.kind.as_str(), String::as_str),
                    actions: s.actions,
                    usd: s.usd,
                })
                .collect();
            card::owner::summary(&locales, lang, day, &counts, &mandates, anchor)
        };
        // The open mandates follow, each with its Stop, as `/mandates` shows them.
        let open = self.mandates_replies(lang, now).await?;
        let sent = self
            .store
            .call(move |db| {
                db.send_summary(day, now, |tx, effects, anchor| {
                    say(tx, effects, owner.id, render(anchor), Sound::Gated)?;
                    for body in open.into_iter().skip(1) {
                        queue(
                            tx,
                            effects,
                            owner.id,
                            What::Message,
                            None,
                            body,
                            Sound::Gated,
                        )?;
                    }
                    Ok(())
                })
            })
            .await?;
        if sent {
            tracing::info!(%day, "evening summary sent");
            // Once a day, the buttons drawn long ago are forgotten (see `forget_drawn_before`).
            let before = now - chrono::Duration::days(DRAWN_KEPT_DAYS);
            self.store
                .call(move |db| db.forget_drawn_before(before))
                .await?;
        }
        Ok(())
    }

    /// Sets the bot's command menu in each language (and in the owner's for other clients).
    fn set_command_menu(&self) {
        let telegram = self.telegram.clone();
        let locales = self.locales.clone();
        let default = self.language();
        tokio::spawn(async move {
            let menus = Language::ALL
                .into_iter()
                .map(|lang| (Some(lang), lang))
                .chain([(None, default)]);
            for (code, lang) in menus {
                let menu = card::command_menu(&locales, lang);
                let code = code.map(Language::as_str);
                if let Err(error) = telegram.set_commands(code, &menu).await {
                    tracing::warn!(%error, "cannot set the bot's command menu");
                }
            }
        });
    }

    /// A stranger's language, for the one line they get.
    fn language_for(&self, person: &Person) -> Language {
        person
            .language_code
            .as_deref()
            .and_then(Language::from_code)
            .unwrap_or(Language::En)
    }

    async fn pending_texts(
        &self,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        // Shown cards with their deadlines, then those not shown yet (held for the morning).
        let (shown, waiting) = self
            .store
            .call(|db| {
                Ok((
                    db.records_in(RecordState::CardShown)?,
                    db.records_in(RecordState::Pending)?,
                ))
            })
            .await?;
        let labels: Vec<(String, String, Option<DateTime<Utc>>)> = shown
            .iter()
            .chain(&waiting)
            .map(|record| {
                let expires = record.expires_at.as_deref().and_then(parse_time);
                (record.id.clone(), self.label(record, lang), expires)
            })
            .collect();
        let items: Vec<(&str, &str, Option<DateTime<Utc>>)> = labels
            .iter()
            .map(|(id, label, at)| (id.as_str(), label.as_str(), *at))
            .collect();
        Ok(card::pending_list(
            &self.locales,
            lang,
            &items,
            self.config.owner.timezone,
            now,
        ))
    }

    async fn pair(
        &self,
        from: Person,
        chat: ChatRef,
        code: String,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let language = owner_language(&self.config, from.language_code.as_deref());
        let tz = self.config.owner.timezone;
        let locales = self.locales.clone();
        let candidate = OwnerRow {
            telegram_id: from.id,
            language_code: from.language_code.clone(),
        };
        let verdict = self
            .store
            .call(move |db| {
                db.pairing_attempt(&code, candidate, next, now, |tx, effects, verdict| {
                    let reply = match verdict {
                        PairVerdict::Paired => card::paired(&locales, language),
                        PairVerdict::Locked { until } => {
                            card::pairing_locked(&locales, language, *until, tz, now)
                        }
                        _ => card::pairing_wrong_code(&locales, language),
                    };
                    say(tx, effects, chat.id, reply, Sound::Gated)
                })
            })
            .await?;
        tracing::info!(user = from.id, verdict = ?verdict, "pairing attempt");
        if verdict == PairVerdict::Paired {
            *self.owner.write().unwrap_or_else(|p| p.into_inner()) = Some(Owner {
                id: from.id,
                language,
            });
        }
        Ok(())
    }

    /// Reads what a press is judged on: the message it came from, as the daemon drew it (waiting
    /// for a send in flight when the message is not known yet), then the clocks — read after
    /// that wait — and the subject its data names (a record, a mandate, a kind's switch or
    /// silence).
    async fn press_facts(&self, press: &Press) -> Result<(PressFacts, Now), StoreError> {
        let message = self.message_facts(press).await?;
        let now = Now::read(self.clock.as_ref());
        let callback = press::parse_callback(press.data.as_deref().unwrap_or_default()).ok();
        let record = match &callback {
            Some(callback) if callback.subject.starts_with("r_") => {
                let id = callback.subject.clone();
                self.store.call(move |db| db.record(&id)).await?
            }
            _ => None,
        };
        let subject = match (&callback, &record) {
            (None, _) => None,
            (Some(callback), _) if is_switch(callback.action) => {
                self.switch_subject(&callback.subject, callback.action)
            }
            (Some(_), None) => None,
            (Some(callback), Some(record)) => {
                Some(self.record_subject(callback.action, record, &now).await?)
            }
        };
        let facts = PressFacts {
            callback,
            record,
            subject,
            message,
        };
        Ok((facts, now))
    }

    /// What a record is, as the subject of a press of `action`.
    async fn record_subject(
        &self,
        action: PressAction,
        record: &Record,
        now: &Now,
    ) -> Result<Subject, StoreError> {
        let (open, window, stale) = match action {
            // Resume names the record whose no started the silence: it is open while that
            // silence lasts, and a later silence (started by another record) is not its own.
            PressAction::Resume => {
                let kind = record.kind.clone().unwrap_or_default();
                let wall = now.wall;
                let silence = self
                    .store
                    .call(move |db| db.silence_of(&kind, wall))
                    .await?;
                let open = match &silence {
                    Some(Some(by)) => *by == record.id,
                    // A silence from before silences were named: any Resume of its kind.
                    Some(None) => true,
                    None => false,
                };
                (open, None, stale::resume(silence.is_some()))
            }
            // Stop names the mandate: open while granted, not stopped and in its term.
            PressAction::Stop => (
                record.mandate.as_ref().is_some_and(|m| m.is_open(now.wall)),
                None,
                stale::stop(record.mandate.as_ref()),
            ),
            _ => (
                record.state == RecordState::CardShown,
                record.window(),
                stale::card(record.state),
            ),
        };
        Ok(Subject {
            digest: record.digest.clone().unwrap_or_default(),
            open,
            window,
            stale: stale.filter(|_| !open),
        })
    }

    /// Whether the press's data was drawn on the message it came from, and whether that
    /// message still shows what it was drawn with. A message not known yet may be a card whose
    /// send is being recorded this moment: then the press waits (briefly) for it.
    async fn message_facts(&self, press: &Press) -> Result<MessageFacts, StoreError> {
        let (Some(chat), Some(message_id), Some(data)) =
            (press.chat, press.message_id, press.data.clone())
        else {
            return Ok(MessageFacts::NotDrawn);
        };
        let read = || {
            self.store
                .call(move |db| db.drawn_message(chat.id, message_id))
        };
        let mut drawn = read().await?;
        if drawn.is_none() {
            let _sent = tokio::time::timeout(DRAWING_PATIENCE, self.drawing.lock()).await;
            drawn = read().await?;
        }
        Ok(match drawn {
            Some(drawn) if drawn.buttons.contains(&data) => {
                MessageFacts::Drawn(match &press.message_shows {
                    None => AsDrawn::Unreadable,
                    Some(shows) if *shows == drawn.shows => AsDrawn::Same,
                    Some(_) => AsDrawn::Changed,
                })
            }
            _ => MessageFacts::NotDrawn,
        })
    }

    /// A button press: the facts, the verdict (a pure function), the answer to the presser at
    /// once, then what the press does.
    async fn press(
        &self,
        press: Press,
        next: i64,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let owner = self.owner();
        let (facts, now) = self.press_facts(&press).await?;
        let chat = press.chat.unwrap_or(ChatRef {
            id: 0,
            private: false,
        });
        let context = PressContext {
            presser_id: press.from.id,
            chat_id: chat.id,
            chat_is_private: chat.private,
            owner_id: owner.map(|o| o.id),
            subject: facts.subject.as_ref().map(|subject| SubjectFacts {
                digest: &subject.digest,
                open: subject.open,
                window: subject.window.clone(),
            }),
            message: facts.message,
            now: now.clone(),
        };
        let data = press.data.clone().unwrap_or_default();
        let verdict = press::verify(&data, &self.key, &context);
        // Answered first: Telegram gives a query only seconds.
        let answer = self.press_answer(&verdict, &facts, &press.from);
        self.answer(press.query_id.clone(), answer);
        let subject = facts.callback.map(|c| c.subject);
        let decision = Decision {
            from: press.from,
            next,
            now: now.wall,
            message: chat_message(press.chat, press.message_id),
        };
        if verdict.is_accept() && facts.message == MessageFacts::Drawn(AsDrawn::Changed) {
            // Only a press that takes something back counts on an altered message; the owner
            // hears that the message was changed behind their back.
            self.tell_altered(&decision).await?;
        }
        match verdict {
            Verdict::Reject(rejection) => self.rejected(rejection, &decision, subject).await,
            Verdict::Accept { action, subject } => {
                self.pressed(action, subject, facts.record, decision, runs, events)
                    .await
            }
        }
    }

    /// What an accepted press does.
    async fn pressed(
        &self,
        action: PressAction,
        subject: String,
        record: Option<Record>,
        decision: Decision,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        if is_switch(action) {
            let on = action == PressAction::CategoryOn;
            return self.switch_category(subject, on, &decision).await;
        }
        let Some(record) = record else {
            return self
                .rejected(Rejection::UnknownSubject, &decision, Some(subject))
                .await;
        };
        match (action, record.subject) {
            (PressAction::Yes, StoreSubject::Action)
            | (PressAction::Grant, StoreSubject::Mandate) => {
                self.granted(record, decision, runs, events).await
            }
            (PressAction::No, StoreSubject::Action)
            | (PressAction::Decline, StoreSubject::Mandate) => {
                self.declined(record, decision).await
            }
            (PressAction::Resume, _) => self.resumed(record, decision).await,
            (PressAction::Stop, StoreSubject::Mandate) => self.stopped(record, decision).await,
            // A button this record never carries (a Yes on a mandate, a Stop on an action, a
            // category switch): never signed, so a valid tag cannot exist.
            _ => {
                self.rejected(Rejection::Malformed, &decision, Some(subject))
                    .await
            }
        }
    }

    /// The owner's Yes (or Grant): granted in one compare-and-set, then claimed and run (a
    /// granted mandate request opened its mandate: nothing runs).
    async fn granted(
        &self,
        record: Record,
        decision: Decision,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = &decision;
        let (next, now) = (*next, *now);
        let owner_id = self.owner().map_or(from.id, |o| o.id);
        let edit = self
            .outcome_text(&record, RecordState::Granted, Some(&from.name), now)
            .await;
        let (decider, by, id) = (from.name.clone(), from.id, record.id.clone());
        let granted = self
            .store
            .call(move |db| {
                db.grant(
                    &id,
                    by,
                    Some(next),
                    |tx, effects, record| {
                        note_decider_name(tx, &record.id, &decider)?;
                        queue_card_edit(tx, effects, owner_id, &record.id, edit)
                    },
                    now,
                )
            })
            .await;
        match self.lost_race(granted, &decision, &record.id).await? {
            Some(_) if record.subject == StoreSubject::Mandate => Ok(()),
            Some(_) => {
                self.claim_and_run(record.id, ClaimWindow::JudgedAtGrant, runs, events)
                    .await
            }
            None => Ok(()),
        }
    }

    /// The owner's No (or Decline): declined in one compare-and-set; at the streak's limit the
    /// kind is silenced and the owner gets the notice with Resume.
    async fn declined(&self, record: Record, decision: Decision) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = &decision;
        let (next, now) = (*next, *now);
        let owner_id = self.owner().map_or(from.id, |o| o.id);
        let lang = self.language();
        let edit = self.declined_text(&record, &from.name, now).await;
        let notice = self.silenced_notice(&record, lang, now);
        let (decider, by, id) = (from.name.clone(), from.id, record.id.clone());
        let streak_limit = self.config.limits.decline_streak;
        let declined = self
            .store
            .call(move |db| {
                db.decline(
                    &id,
                    by,
                    streak_limit,
                    Some(next),
                    |tx, effects, record, silenced| {
                        note_decider_name(tx, &record.id, &decider)?;
                        queue_card_edit(tx, effects, owner_id, &record.id, edit)?;
                        if silenced {
                            queue(
                                tx,
                                effects,
                                owner_id,
                                What::Message,
                                None,
                                notice,
                                Sound::Gated,
                            )?;
                        }
                        Ok(())
                    },
                    now,
                )
            })
            .await;
        self.lost_race(declined, &decision, &record.id)
            .await
            .map(|_| ())
    }

    /// The owner's Resume: the silence this record started ends (a later one stays).
    async fn resumed(&self, record: Record, decision: Decision) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = decision;
        let owner_id = self.owner().map_or(from.id, |o| o.id);
        let lang = self.language();
        let kind = record.kind.clone().unwrap_or_default();
        let label = self.label(&record, lang);
        let reply = text_body(card::resumed_notice(&self.locales, lang, &label));
        let resumed = self
            .store
            .call(move |db| {
                db.resume_kind(&kind, &record.id, from.id, next, now, (owner_id, reply))
            })
            .await?;
        if !resumed {
            // Lifted in the meantime (a yes to a card of the kind), or replaced by another.
            tracing::debug!("a Resume found no silence of its own to lift");
        }
        Ok(())
    }

    /// The owner's Stop on a mandate.
    async fn stopped(&self, record: Record, decision: Decision) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = decision;
        let owner_id = self.owner().map_or(from.id, |o| o.id);
        let lang = self.language();
        let label = self.label(&record, lang);
        let reply = card::mandate::mandate_stopped(&self.locales, lang, &label);
        let id = record.id.clone();
        self.store
            .call(move |db| {
                db.stop_mandate(&id, from.id, next, now, |tx, effects, _| {
                    say(tx, effects, owner_id, reply, Sound::Silent)
                })
                .map(|_| ())
            })
            .await
    }

    /// A verified press that found its record already moved on — a second or concurrent press
    /// of the same button: journaled as not open, and nothing else happens.
    async fn lost_race<T>(
        &self,
        result: Result<T, StoreError>,
        decision: &Decision,
        record_id: &str,
    ) -> Result<Option<T>, StoreError> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(StoreError::StateConflict { .. }) => {
                let subject = Some(record_id.to_owned());
                self.rejected(Rejection::NotOpen, decision, subject).await?;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Answers a press without waiting on it (it must not hold up the loop).
    fn answer(&self, query_id: String, text: Option<String>) {
        let telegram = self.telegram.clone();
        tokio::spawn(async move {
            if let Err(error) = telegram.answer_press(&query_id, text.as_deref()).await {
                tracing::debug!(%error, "answering a press failed");
            }
        });
    }

    /// The urgent notice that a message with the owner's buttons was changed after it was sent,
    /// while a press on it that only took something back still counted.
    async fn tell_altered(&self, decision: &Decision) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let text = card::altered_notice(&self.locales, owner.language);
        let now = decision.now;
        self.store
            .call(move |db| {
                db.write_effects(now, None, |tx, effects| {
                    say(tx, effects, owner.id, text, Sound::Urgent)
                })
            })
            .await
    }

    /// A press that did not count: journaled, and the owner told at once when someone else
    /// pressed their buttons or a card's message was changed behind their back.
    async fn rejected(
        &self,
        rejection: Rejection,
        decision: &Decision,
        subject: Option<String>,
    ) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = decision;
        let (next, now) = (*next, *now);
        tracing::warn!(
            presser = from.id,
            reason = rejection.as_str(),
            "press rejected"
        );
        let owner = self.owner();
        let worth_telling = match rejection {
            Rejection::NotOwner => owner.is_some_and(|owner| owner.id != from.id),
            Rejection::CardAltered => true,
            _ => false,
        };
        let notice = owner.filter(|_| worth_telling).map(|owner| {
            let who = if from.name.is_empty() {
                from.id.to_string()
            } else {
                format!("{} ({})", from.name, from.id)
            };
            let text = card::press_rejected_notice(
                &self.locales,
                owner.language,
                &who,
                rejection.as_str(),
            );
            (owner.id, Body::new(text, Vec::new()))
        });
        let presser = from.id;
        self.store
            .call(move |db| {
                db.write_effects(now, Some(next), |tx, effects| {
                    let mut event = JournalEvent::new("press_rejected")
                        .with("reason", rejection.as_str())
                        .with("by", presser);
                    if let Some(subject) =
                        subject.filter(|s| press::is_record_id(s) || press::is_kind_name(s))
                    {
                        event = event.with("subject", subject);
                    }
                    effects.push(event);
                    if let Some((chat, body)) = notice {
                        queue(tx, effects, chat, What::Message, None, body, Sound::Urgent)?;
                    }
                    Ok(())
                })
            })
            .await
    }

    /// The claim, then the run on its own task; the run's end comes back as an event.
    async fn claim_and_run(
        &self,
        id: String,
        window: ClaimWindow,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let lookup = id.clone();
        let Some(record) = self.store.call(move |db| db.record(&lookup)).await? else {
            return Err(StoreError::Missing);
        };
        let kind = record.kind.clone().unwrap_or_default();
        let enabled = self.category_enabled(&kind);
        crate::failpoint::hit("before_claim");
        let now = Now::read(self.clock.as_ref());
        let notices = self.claim_notices(&record, now.wall).await;
        let claim_id = id.clone();
        let claim = self
            .store
            .call(move |db| db.claim(&claim_id, enabled, (&now, window), &notices))
            .await?;
        match claim {
            Claim::CategoryOff(_) | Claim::Expired(_) => Ok(()),
            Claim::Claimed(record) => self.spawn_run(record, runs, events),
        }
    }

    /// What the owner is told when a claim does not run, drawn before the claim decides.
    async fn claim_notices(&self, record: &Record, now: DateTime<Utc>) -> ClaimNotices {
        let lang = self.language();
        let decided_by = record.decided_by_name.as_deref();
        let refused = Outcome {
            state: RecordState::Refused.as_str(),
            decided_by: None,
            result: None,
            reason: Some("category_off"),
            reply_by: None,
        };
        let refused_edit = self.outcome_text_with(record, refused, now).await;
        let expired_edit = self
            .outcome_text(record, RecordState::Expired, decided_by, now)
            .await;
        let label = self.label(record, lang);
        let expired_notice = card::expired_at_claim_notice(&self.locales, lang, &record.id, &label);
        ClaimNotices {
            chat: self.owner().map(|owner| owner.id),
            refused_edit: Some(Body::new(refused_edit, Vec::new())),
            expired_edit: Some(Body::new(expired_edit, Vec::new())),
            expired_notice: Some(text_body(expired_notice)),
        }
    }

    /// An ask the store claimed under a mandate: its run starts.
    async fn run_claimed(
        &self,
        id: String,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        let Some(record) = self.store.call(move |db| db.record(&id)).await? else {
            return Err(StoreError::Missing);
        };
        if record.state != RecordState::Running {
            return Err(StoreError::StateConflict {
                id: record.id,
                expected: RecordState::Running,
                actual: record.state,
            });
        }
        self.spawn_run(record, runs, events)
    }

    /// Starts a claimed record's command on its own task; its end comes back as an event.
    fn spawn_run(
        &self,
        record: Record,
        runs: &TaskTracker,
        events: &mpsc::Sender<Event>,
    ) -> Result<(), StoreError> {
        // The claim and its `used` line are durable: from here the command may start.
        crate::failpoint::hit("after_claim");
        let kind = record.kind.clone().unwrap_or_default();
        let Some(category) = self.config.categories.get(&kind) else {
            return Err(StoreError::Missing);
        };
        let spec = self.run_spec(&record, category);
        let events = events.clone();
        let id = record.id;
        runs.spawn(async move {
            let outcome = executor::run(&spec).await;
            crate::failpoint::hit("after_exit");
            let _ = events.send(Event::RunEnded { id, outcome }).await;
        });
        Ok(())
    }

    fn run_spec(&self, record: &Record, category: &Category) -> RunSpec {
        RunSpec {
            record_id: record.id.clone(),
            kind: category.name.clone(),
            command: category.command.clone(),
            run_as: category.run_as.clone(),
            env_file: category.env_file.clone(),
            timeout: category.timeout,
            work_root: self.work_root.clone(),
            stdin: StdinAction {
                id: record.id.clone(),
                kind: category.name.clone(),
                target: record.target.clone(),
                text: record.text.clone(),
                fields: record.fields.clone(),
                cost_usd: record.cost_usd.clone(),
            },
            attachments: record
                .attachments
                .iter()
                .map(|a| AttachmentSource {
                    name: a.name.clone(),
                    media_type: a.media_type.clone(),
                    sha256: a.sha256.clone(),
                    bytes: a.bytes,
                    source: self.store.attachment_path(&a.sha256),
                })
                .collect(),
            on_card: record.mandate_id.is_none(),
        }
    }

    async fn run_ended(&self, id: String, outcome: RunOutcome) -> Result<(), StoreError> {
        let now = self.clock.now();
        let finish = match outcome {
            RunOutcome::Executed { result } => Finish {
                state: RecordState::Executed,
                result,
                message: None,
                stderr: None,
                detail: None,
            },
            RunOutcome::Failed { exit, stderr } => Finish {
                state: RecordState::Failed,
                result: None,
                message: Some(exit.clone()),
                stderr: Some(stderr),
                detail: Some(exit),
            },
            RunOutcome::TimedOut { stderr } => Finish {
                state: RecordState::OutcomeUnknown,
                result: None,
                message: Some("the command did not finish in time and was killed".into()),
                stderr: Some(stderr),
                detail: Some("timeout".into()),
            },
            RunOutcome::NotStarted { reason } => Finish {
                state: RecordState::Failed,
                result: None,
                message: Some(format!("the command could not start: {reason}")),
                stderr: None,
                detail: Some("not_started".into()),
            },
        };
        let lookup = id.clone();
        let Some(record) = self.store.call(move |db| db.record(&lookup)).await? else {
            return Err(StoreError::Missing);
        };
        let ending = self.ending(&record, &finish, now).await;
        let owner = self.owner();
        self.store
            .call(move |db| {
                db.finish(
                    &id,
                    &finish,
                    |tx, effects, _| match owner {
                        Some(owner) => ending.queue(tx, effects, owner.id),
                        None => Ok(()),
                    },
                    now,
                )
            })
            .await?;
        Ok(())
    }

    /// Cards past their ttl: expired, edited to say so without buttons; the session hears
    /// `expired`. Silence is never consent, and never a no.
    async fn expire_due(&self) -> Result<(), StoreError> {
        let now = self.clock.now();
        self.end_due_mandates(now).await?;
        // Expiry first and the summary's failure only logged: a summary that cannot be made
        // must not keep cards from expiring.
        let expired = self.expire_cards(now).await;
        if let Err(error) = self.summary_if_due(now).await {
            tracing::error!(%error, "cannot send the evening summary");
        }
        expired
    }

    async fn expire_cards(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let reading = Now {
            wall: now,
            monotonic: self.clock.monotonic(),
        };
        let due = self
            .store
            .call(move |db| db.due_for_expiry(&reading))
            .await?;
        for id in due {
            let lookup = id.clone();
            let Some(record) = self.store.call(move |db| db.record(&lookup)).await? else {
                continue;
            };
            let edit = self
                .outcome_text(&record, RecordState::Expired, None, now)
                .await;
            let owner = self.owner();
            let result = self
                .store
                .call(move |db| {
                    db.write_effects(now, None, |tx, effects| {
                        let change = StateChange {
                            finished_at: Some(now),
                            ..StateChange::default()
                        };
                        crate::store::db::transition_in(
                            tx,
                            &id,
                            RecordState::CardShown,
                            RecordState::Expired,
                            &change,
                        )?;
                        effects.changed.push((id.clone(), RecordState::Expired));
                        effects.push(JournalEvent::new("expired").with("id", id.as_str()));
                        if let Some(owner) = owner {
                            queue_card_edit(tx, effects, owner.id, &id, edit)?;
                        }
                        Ok(())
                    })
                })
                .await;
            match result {
                // Answered in the meantime: not expired.
                Ok(()) | Err(StoreError::StateConflict { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Mandates whose term is over: ended, `mandate_end` journaled, the owner told quietly.
    async fn end_due_mandates(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let lang = self.language();
        let owner = self.owner();
        let locales = self.locales.clone();
        let labels = self.labels(lang);
        self.store
            .call(move |db| {
                db.end_due_mandates(now, |tx, effects, row| {
                    let Some(owner) = owner else { return Ok(()) };
                    let label = labels
                        .get(&row.kind)
                        .map_or(row.kind.as_str(), String::as_str);
                    let text = card::mandate::mandate_ended(&locales, lang, &row.id, label);
                    say(tx, effects, owner.id, text, Sound::Gated)
                })
            })
            .await
            .map(|_| ())
    }

    /// Every category's label in `lang`, by kind.
    fn labels(&self, lang: Language) -> BTreeMap<String, String> {
        self.config
            .categories
            .iter()
            .map(|(kind, category)| (kind.clone(), category.label(lang).to_owned()))
            .collect()
    }

    /// A stored mandate as its card shows it, with its category's `label` and its targets'
    /// look-alike warnings.
    fn mandate_view<'a>(
        &'a self,
        row: &'a MandateRow,
        label: &'a str,
        target_warnings: &'a [Vec<Warning>],
    ) -> MandateView<'a> {
        MandateView {
            record_id: &row.id,
            label,
            class: self.class_of(&row.kind),
            targets: &row.targets,
            target_warnings,
            ends_at: row.ends_at.unwrap_or(DateTime::<Utc>::MAX_UTC),
            usd_per_day: row.usd_per_day,
            actions_per_day: row.actions_per_day,
            reason: row.reason.as_deref(),
            tz: self.config.owner.timezone,
        }
    }

    fn class_of(&self, kind: &str) -> &str {
        self.config
            .categories
            .get(kind)
            .map_or("external", |category| category.class.as_str())
    }

    /// Buttons with their callback data signed for `subject` and its digest, for the owner.
    fn signed(&self, buttons: Vec<card::Button>, subject: &str, digest: &str) -> Vec<ButtonSpec> {
        let owner_id = self.owner().map_or(0, |o| o.id);
        buttons
            .into_iter()
            .map(|button| ButtonSpec {
                label: button.label,
                data: self.key.sign(button.action, subject, digest, owner_id),
            })
            .collect()
    }

    /// The `/mandates` reply: a count line, then each open mandate with today's use and Stop.
    async fn mandates_replies(
        &self,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Result<Vec<Body>, StoreError> {
        let tz = self.config.owner.timezone;
        let open = self.store.call(move |db| db.open_mandates(now, tz)).await?;
        let mut replies = vec![text_body(card::mandate::mandates_count(
            &self.locales,
            lang,
            open.len(),
        ))];
        let labels = self.labels(lang);
        for (row, usage) in open {
            let label = labels
                .get(&row.kind)
                .cloned()
                .unwrap_or_else(|| row.kind.clone());
            let known = self.known_for(&row.id, now).await;
            let warnings = lookalike::warnings_each(&row.targets, &known);
            let view = self.mandate_view(&row, &label, &warnings);
            let usage = UsageView {
                actions: usage.actions,
                usd: usage.usd,
            };
            let (text, buttons) =
                card::mandate::mandate_summary(&view, usage, &self.locales, lang, now);
            replies.push(Body::new(text, self.signed(buttons, &row.id, &row.digest)));
        }
        Ok(replies)
    }

    fn label(&self, record: &Record, lang: Language) -> String {
        let kind = record.kind.as_deref().unwrap_or("");
        self.config.categories.get(kind).map_or_else(
            || kind.to_owned(),
            |category| category.label(lang).to_owned(),
        )
    }

    async fn outcome_text(
        &self,
        record: &Record,
        state: RecordState,
        decided_by: Option<&str>,
        now: DateTime<Utc>,
    ) -> Styled {
        let outcome = Outcome {
            state: state.as_str(),
            decided_by: decided_by.map(str::to_owned),
            result: record.result.as_deref(),
            reason: record.reason.as_deref(),
            reply_by: None,
        };
        self.outcome_text_with(record, outcome, now).await
    }

    /// The targets a record's card was drawn against (`Db::known_targets_for`: as of its
    /// `shown_at`), so its edits show the card's warnings; for an ask a mandate answered, those
    /// known when it was asked. Never fails: what the owner is told must not stand in the way of
    /// recording an outcome, so without them only the mixed-script warnings show.
    async fn known_for(&self, record_id: &str, now: DateTime<Utc>) -> KnownTargets {
        let id = record_id.to_owned();
        match self
            .store
            .call(move |db| db.known_targets_for(&id, now))
            .await
        {
            Ok(known) => known,
            Err(error) => {
                tracing::warn!(%error, id = %record_id, "cannot read the known targets");
                KnownTargets::default()
            }
        }
    }

    /// The card's edit once `record` has `outcome`: the action's card, or the mandate card (which
    /// shows no result).
    async fn outcome_text_with(
        &self,
        record: &Record,
        outcome: Outcome<'_>,
        now: DateTime<Utc>,
    ) -> Styled {
        let lang = self.language();
        let known = self.known_for(&record.id, now).await;
        if let Some(row) = &record.mandate {
            let label = self.label(record, lang);
            let warnings = lookalike::warnings_each(&row.targets, &known);
            let view = self.mandate_view(row, &label, &warnings);
            let outcome = Outcome {
                result: None,
                ..outcome
            };
            return card::mandate::render_mandate_outcome(
                &view,
                &outcome,
                &self.locales,
                lang,
                now,
            );
        }
        let expires = record
            .expires_at
            .as_deref()
            .and_then(parse_time)
            .unwrap_or(now);
        with_view(self, record, &known, lang, expires, |view| {
            card::render_outcome(view, &self.locales, lang, &outcome)
        })
    }

    fn silenced_notice(&self, record: &Record, lang: Language, now: DateTime<Utc>) -> Body {
        let label = self.label(record, lang);
        let until = now + chrono::Duration::days(1);
        let (text, buttons) = card::silenced_notice(
            &self.locales,
            lang,
            &label,
            self.config.limits.decline_streak,
            until,
            self.config.owner.timezone,
            now,
        );
        let digest = record.digest.as_deref().unwrap_or("");
        Body::new(
            Styled::plain(text),
            self.signed(buttons, &record.id, digest),
        )
    }
}

/// The pressed message as (chat, message id), when Telegram said both.
fn chat_message(chat: Option<ChatRef>, message_id: Option<i64>) -> Option<(i64, i64)> {
    Some((chat?.id, message_id?))
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What ending a run sends: the card's edit, or (for an ask a mandate answered) the receipt and
/// the parts before it.
#[derive(Debug)]
struct Ending {
    record_id: String,
    edit: Option<Styled>,
    messages: Vec<Body>,
    /// A receipt of success is one the gate may keep for the summary; a failure is told.
    sound: Sound,
}

impl Ending {
    fn queue(
        self,
        tx: &rusqlite::Transaction<'_>,
        effects: &mut Effects,
        chat: i64,
    ) -> Result<(), StoreError> {
        if let Some(edit) = self.edit {
            queue_card_edit(tx, effects, chat, &self.record_id, edit)?;
        }
        for body in self.messages {
            queue(tx, effects, chat, What::Message, None, body, self.sound)?;
        }
        Ok(())
    }
}

fn text_body(text: String) -> Body {
    Body::new(Styled::plain(text), Vec::new())
}

fn queue(
    tx: &rusqlite::Transaction<'_>,
    effects: &mut Effects,
    chat: i64,
    what: What,
    record_id: Option<&str>,
    body: Body,
    sound: Sound,
) -> Result<(), StoreError> {
    outbox::queue_in(tx, chat, what, record_id, &body, sound, effects.now)?;
    effects.queued = true;
    Ok(())
}

/// Queues a message to `chat` that sounds as `sound` says: `Gated` for a notice (with sound by
/// day), `Urgent` for one that sounds at once even at night, `Silent` for a reply.
fn say(
    tx: &rusqlite::Transaction<'_>,
    effects: &mut Effects,
    chat: i64,
    text: String,
    sound: Sound,
) -> Result<(), StoreError> {
    queue(
        tx,
        effects,
        chat,
        What::Message,
        None,
        text_body(text),
        sound,
    )
}

/// Queues the edit of a record's card in `chat` (silently: outcomes are not urgent). The edit
/// has no buttons: the card can no longer be answered.
fn queue_card_edit(
    tx: &rusqlite::Transaction<'_>,
    effects: &mut Effects,
    chat: i64,
    record_id: &str,
    text: Styled,
) -> Result<(), StoreError> {
    queue(
        tx,
        effects,
        chat,
        What::Edit,
        Some(record_id),
        Body::new(text, Vec::new()),
        Sound::Silent,
    )
}

/// Builds the card's view of a record, its target and one-word field values compared with
/// `known`, and hands it to `render`.
fn with_view<T>(
    consent: &Consent,
    record: &Record,
    known: &KnownTargets,
    lang: Language,
    expires_at: DateTime<Utc>,
    render: impl FnOnce(&CardView<'_>) -> T,
) -> T {
    let kind = record.kind.as_deref().unwrap_or("");
    let category = consent.config.categories.get(kind);
    let label = category.map_or(kind, |c| c.label(lang));
    let class = category.map_or("external", |c| c.class.as_str());
    let field_labels = category
        .map(|c| c.field_labels_in(lang))
        .unwrap_or_default();
    let attachments: Vec<AttachmentView<'_>> = record
        .attachments
        .iter()
        .map(AttachmentView::from)
        .collect();
    let text_hash = record
        .text
        .as_deref()
        .map(|t| Sha256Hash::of(t.as_bytes()).to_hex());
    let target_warnings = record
        .target
        .as_deref()
        .map(|target| lookalike::warnings(target, known))
        .unwrap_or_default();
    let field_warnings = lookalike::field_warnings(record.fields.values(), known);
    let view = CardView {
        record_id: &record.id,
        kind,
        label,
        class,
        target: record.target.as_deref(),
        target_warnings: &target_warnings,
        fields: &record.fields,
        field_labels: &field_labels,
        field_warnings: &field_warnings,
        cost_usd: record.cost_usd.as_deref(),
        attachments: &attachments,
        text: record.text.as_deref(),
        text_sha256_hex: text_hash.as_deref(),
        expires_at,
        tz: consent.config.owner.timezone,
        urgent: record.urgent,
    };
    render(&view)
}

impl Drawer for Consent {
    fn draw(
        &self,
        record: &Record,
        known: &KnownTargets,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<DrawnCard, CardError> {
        let lang = self.language();
        let digest = record.digest.as_deref().unwrap_or("");
        if let Some(row) = &record.mandate {
            let label = self.label(record, lang);
            let warnings = lookalike::warnings_each(&row.targets, known);
            let view = self.mandate_view(row, &label, &warnings);
            // Checked, not only drawn: its targets may look like more known targets now than
            // when the intake measured it (a request held until morning).
            let rendered = card::mandate::try_render_mandate_card(
                &view,
                expires_at,
                &self.locales,
                lang,
                now,
            )?;
            return Ok(DrawnCard {
                parts: Vec::new(),
                captions: Vec::new(),
                text: rendered.card,
                buttons: self.signed(rendered.buttons, &record.id, digest),
            });
        }
        Ok(with_view(self, record, known, lang, expires_at, |view| {
            let rendered = card::render_card(view, &self.locales, lang, now);
            let captions = view
                .attachments
                .iter()
                .map(|a| card::attachment_caption(&self.locales, lang, a))
                .collect();
            DrawnCard {
                parts: rendered.parts,
                captions,
                text: rendered.card,
                buttons: self.signed(rendered.buttons, &record.id, digest),
            }
        }))
    }

    fn gate(&self) -> (Gate, chrono_tz::Tz) {
        (
            self.gate.read().unwrap_or_else(|p| p.into_inner()).clone(),
            self.config.owner.timezone,
        )
    }

    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.config.limits.card_ttl)
            .unwrap_or(chrono::Duration::minutes(15))
    }
}

/// Asks the loop for an expiry sweep every [`SWEEP_EVERY`] until `shutdown`.
async fn tick_sweeps(events: mpsc::Sender<Event>, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = ticks.tick() => {
                if events.send(Event::Sweep).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// The long-polling loop: one getUpdates at a time from the stored offset; each batch is handed
/// to the consent loop, which stores the next offset with what each update changed, before the
/// next getUpdates confirms them to Telegram.
async fn poll(
    store: Store,
    telegram: Telegram,
    events: mpsc::Sender<Event>,
    shutdown: CancellationToken,
    conflict: CancellationToken,
) {
    let mut failures: u32 = 0;
    loop {
        let offset = match store.call(|db| db.next_offset()).await {
            Ok(offset) => offset,
            Err(error) => {
                tracing::error!(%error, "cannot read the polling offset");
                return;
            }
        };
        let batch = tokio::select! {
            () = shutdown.cancelled() => return,
            batch = telegram.updates(offset, POLL_TIMEOUT_SECS) => batch,
        };
        let wait = match batch {
            Ok(batch) if batch.is_empty() => {
                failures = 0;
                continue;
            }
            Ok(batch) => {
                failures = 0;
                if !hand_over(batch, &events).await {
                    return;
                }
                continue;
            }
            // The same batch would come back at the same offset: find out whether its first
            // update is the one that cannot be read, without waiting.
            Err(SendError::Malformed(error)) => {
                let probe = tokio::select! {
                    () = shutdown.cancelled() => return,
                    probe = telegram.probe(offset) => probe,
                };
                // A 429 answering the probe binds the next getUpdates like any other.
                let mut retry_after = Duration::ZERO;
                match probe {
                    Ok(Probe::Read(batch)) if !batch.is_empty() => {
                        failures = 0;
                        if !hand_over(batch, &events).await {
                            return;
                        }
                        continue;
                    }
                    Ok(Probe::Unreadable {
                        update_id,
                        error: why,
                    }) => {
                        // Skipped, never acted on: nothing in it can be trusted, and only the
                        // offset moves (past it alone); the loop logs the skip.
                        tracing::warn!(update_id, %why, "this update makes its batch unreadable");
                        let skip = Incoming::Other {
                            update_id,
                            what: UNREADABLE,
                        };
                        if !hand_over(vec![skip], &events).await {
                            return;
                        }
                        continue;
                    }
                    Ok(Probe::Read(_)) => {}
                    Err(SendError::Conflict) => {
                        tracing::error!("Telegram answered 409 Conflict while probing; stopping");
                        conflict.cancel();
                        return;
                    }
                    Err(SendError::RetryAfter(after)) => retry_after = after,
                    Err(probe_error) => tracing::debug!(%probe_error, "probing the batch failed"),
                }
                failures += 1;
                tracing::warn!(%error, "getUpdates answered unreadably; retrying");
                Duration::from_secs(1u64 << failures.min(5))
                    .min(crate::sender::MAX_BACKOFF)
                    .max(retry_after)
            }
            Err(SendError::Conflict) => {
                tracing::error!(
                    "Telegram answered 409 Conflict: another program is polling this bot; stopping"
                );
                conflict.cancel();
                return;
            }
            Err(SendError::RetryAfter(after)) => after,
            Err(error) => {
                failures += 1;
                tracing::warn!(%error, "getUpdates failed; retrying");
                Duration::from_secs(1u64 << failures.min(5)).min(crate::sender::MAX_BACKOFF)
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Hands a batch to the consent loop in `update_id` order and waits until it is handled; false
/// when the loop has gone. Telegram sends updates in order, but a batch out of order would
/// otherwise lose its lower ids: the loop skips any id below the offset already stored.
async fn hand_over(mut batch: Vec<Incoming>, events: &mpsc::Sender<Event>) -> bool {
    batch.sort_by_key(Incoming::update_id);
    let (done, handled) = oneshot::channel();
    if events.send(Event::Updates(batch, done)).await.is_err() {
        return false;
    }
    let _ = handled.await;
    true
}
