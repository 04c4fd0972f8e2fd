//! Runs: a granted record claimed (durably, before its command may start), its command started
//! on its own task, and its outcome recorded with what the owner is told — the card edited to the
//! outcome, or for an ask a mandate answered a receipt.

use chrono::{DateTime, Utc};
use tokio_util::task::TaskTracker;

use crate::card::mandate::UsageView;
use crate::card::{self, Outcome};
use crate::config::Category;
use crate::deadline::Now;
use crate::executor::{self, AttachmentSource, RunOutcome, RunSpec, StdinAction};
use crate::store::consent::{Claim, ClaimNotices, ClaimWindow, Finish};
use crate::store::outbox::{Body, Sound, What};
use crate::store::{Effects, Record, RecordState, StoreError};
use crate::styled::Styled;

use super::drawer::with_view;
use super::queue::{queue, queue_card_edit, text_body};
use super::Consent;

impl Consent {
    /// The claim, then the run on its own task; the run's end comes back as an event.
    pub(super) async fn claim_and_run(
        &self,
        id: String,
        window: ClaimWindow,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
        let lookup = id.clone();
        let Some(record) = self.store.call(move |db| db.record(&lookup)).await? else {
            return Err(StoreError::Missing);
        };
        let enabled = self.category_enabled(record.asked()?.kind);
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
            Claim::Claimed(record) => self.spawn_run(record, runs),
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
    pub(super) async fn run_claimed(
        &self,
        id: String,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
        let Some(record) = self.store.call(move |db| db.record(&id)).await? else {
            return Err(StoreError::Missing);
        };
        if record.state == RecordState::Approved {
            // An approval-only category's ask the mandate approved: nothing runs; its receipt.
            return self.approved_by_mandate(record).await;
        }
        if record.state != RecordState::Running {
            return Err(StoreError::StateConflict {
                id: record.id,
                expected: RecordState::Running,
                actual: record.state,
            });
        }
        self.spawn_run(record, runs)
    }

    /// Starts a claimed record's command on its own task; its end comes back as an event.
    fn spawn_run(&self, record: Record, runs: &TaskTracker) -> Result<(), StoreError> {
        // The claim and its `used` line are durable: from here the command may start.
        crate::failpoint::hit("after_claim");
        let kind = record.asked()?.kind.to_owned();
        let Some(category) = self.config.categories.get(&kind) else {
            return Err(StoreError::Missing);
        };
        if category.mode == crate::config::Mode::Approve {
            // Never reached by design: an approval-only category's yes ends it `approved`, never
            // `granted`. A record claimed anyway (its category changed to approve since the yes)
            // ends `failed` without the executor: consentd never runs an approve category.
            tracing::error!(id = %record.id, %kind, "a claim of an approval-only category; nothing runs");
            let consent = self.clone();
            let id = record.id;
            runs.spawn(async move {
                let outcome = RunOutcome::NotStarted {
                    reason: format!(
                        "{kind} is approval-only (mode = \"approve\"): consentd runs nothing"
                    ),
                };
                consent.record_outcome(id, outcome).await;
            });
            return Ok(());
        }
        let spec = self.run_spec(&record, category);
        // The run records its own outcome: runs of different records end side by side, and
        // their store calls share commits (group commit), instead of queueing in the loop.
        let consent = self.clone();
        let id = record.id;
        runs.spawn(async move {
            let outcome = executor::run(&spec).await;
            crate::failpoint::hit("after_exit");
            consent.record_outcome(id, outcome).await;
        });
        Ok(())
    }

    fn run_spec(&self, record: &Record, category: &Category) -> RunSpec {
        RunSpec {
            record_id: record.id.clone(),
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
                cost_usd: record.cost_usd.map(crate::action::format_usd),
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

    pub(super) async fn run_ended(
        &self,
        id: String,
        outcome: RunOutcome,
    ) -> Result<(), StoreError> {
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
        let (owner, ended) = (self.owner(), finish.state);
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
        self.suggest_after(&record, ended, now).await;
        Ok(())
    }

    /// What the owner is told when a run ends: the card edited to its outcome, or — for an ask a
    /// mandate answered, which had no card — a receipt with today's use and Stop (none when the
    /// config keeps receipts for the summary).
    ///
    /// Never fails: what the owner is told must not stand in the way of recording the outcome.
    pub(super) async fn ending(
        &self,
        record: &Record,
        finish: &Finish,
        now: DateTime<Utc>,
    ) -> Ending {
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
        let receipts = self.gate.read().unwrap_or_else(|p| p.into_inner()).receipts;
        let succeeded = matches!(finish.state, RecordState::Executed | RecordState::Approved);
        let tz = self.config.owner.timezone;
        // The day the ask was claimed in, so a run that crosses midnight counts where it was
        // taken. Its use as of its own claim is kept with it; only an ask claimed before the
        // store kept that is shown against the whole day.
        let day = record.created_at;
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
        // A routine receipt never makes a sound and waits out quiet hours; a failure (SPEC §8's
        // short reason) and the last action the mandate allows today are told, since the next
        // ask will be a card. With receipts in the summary, routine ones are only counted.
        let last_today = usage.actions >= row.actions_per_day
            || row.usd_per_day.is_some_and(|max| usage.usd >= max);
        let routine = succeeded && !last_today;
        if receipts == crate::config::Receipts::Summary && routine {
            return none;
        }
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
            self.signed(rendered.buttons, &row.id, &row.digest.to_hex())
        } else {
            Vec::new()
        };
        messages.push(Body::new(rendered.card, buttons));
        Ending {
            record_id: record.id.clone(),
            edit: None,
            messages,
            sound: if routine {
                Sound::Receipt
            } else {
                Sound::Gated
            },
        }
    }
}

/// What ending a run sends: the card's edit, or (for an ask a mandate answered) the receipt and
/// the parts before it.
#[derive(Debug)]
pub(super) struct Ending {
    record_id: String,
    edit: Option<Styled>,
    messages: Vec<Body>,
    /// A routine receipt is one the gate keeps quiet; a failure or a day's last is told.
    sound: Sound,
}

impl Ending {
    pub(super) fn queue(
        self,
        tx: &rusqlite::Connection,
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
