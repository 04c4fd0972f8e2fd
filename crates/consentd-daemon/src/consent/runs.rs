//! Runs: a granted record claimed (durably, before its command may start), its command started
//! on its own task, and its outcome recorded with what the owner is told — the card edited to the
//! outcome, or for an ask a mandate answered a receipt.

use chrono::{DateTime, Utc};
use tokio_util::task::TaskTracker;

use crate::executor::{self, AttachmentSource, RunOutcome, RunSpec, StdinAction};
use consentd_core::card::mandate::UsageView;
use consentd_core::card::{self, Outcome};
use consentd_core::config::Category;
use consentd_core::deadline::Now;
use consentd_core::mandate::Usage;
use consentd_core::styled::Styled;
use consentd_store::api::EndingFacts;
use consentd_store::claims::{Claim, ClaimNotices, ClaimWindow, Finish};
use consentd_store::outbox::{Body, Sound};
use consentd_store::writes::{ClaimRun, Finished};
use consentd_store::{ActionRecord, Outgoing, Record, RecordState, StoreError};

use super::drawer::{known_or_none, with_view};
use super::queue::text_body;
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
        let Some(record) = self.store.record(&lookup).await? else {
            return Err(StoreError::Missing);
        };
        let enabled = self.category_enabled(&record.asked()?.kind);
        crate::failpoint::hit("before_claim");
        let now = Now::read(self.clock.as_ref());
        let notices = self.claim_notices(&record, now.wall).await;
        let claim_id = id.clone();
        let claim = self
            .store
            .claim(ClaimRun {
                id: claim_id,
                category_enabled: enabled,
                now,
                window,
                notices,
            })
            .await?;
        match claim {
            Claim::CategoryOff(_) | Claim::Expired(_) => Ok(()),
            Claim::Claimed(record) => self.spawn_run(record, runs),
        }
    }

    /// What the owner is told when a claim does not run, drawn before the claim decides.
    async fn claim_notices(&self, record: &Record, now: DateTime<Utc>) -> ClaimNotices {
        let lang = self.language();
        let decided_by = record
            .asked_part()
            .and_then(|asked| asked.decided_by_name.as_deref());
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

    /// An ask the store claimed under a mandate: its run starts. `record` is the one the ask's
    /// transaction read back after its claim; nothing changes a claimed (or approved) record
    /// before its run ends, so it is not read again.
    pub(super) async fn run_claimed(
        &self,
        record: Record,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
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

    /// Starts a claimed record's command (or its category's built-in action) on its own task;
    /// its end comes back as an event.
    fn spawn_run(&self, record: Record, runs: &TaskTracker) -> Result<(), StoreError> {
        // The claim and its `used` line are durable: from here the command may start.
        crate::failpoint::hit("after_claim");
        let action = record.action().ok_or_else(|| StoreError::NotAsked {
            id: record.id.clone(),
        })?;
        let kind = action.asked.kind.clone();
        let Some(category) = self.config.categories.get(&kind) else {
            return Err(StoreError::Missing);
        };
        if category.mode == consentd_core::config::Mode::Approve {
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
        let spec = self.run_spec(&record.id, action, category);
        let builtin = category.action.clone();
        // The run records its own outcome: runs of different records end side by side, and
        // their store calls share commits (group commit), instead of queueing in the loop.
        let consent = self.clone();
        let id = record.id;
        runs.spawn(async move {
            let outcome = match &builtin {
                Some(action) => crate::actions::run(action, &spec, &consent.telegram).await,
                None => executor::run(&spec).await,
            };
            crate::failpoint::hit("after_exit");
            consent.record_outcome(id, outcome).await;
        });
        Ok(())
    }

    fn run_spec(&self, id: &str, action: &ActionRecord, category: &Category) -> RunSpec {
        RunSpec {
            record_id: id.to_owned(),
            command: category.command.clone(),
            run_as: category.run_as.clone(),
            env_file: category.env_file.clone(),
            timeout: category.timeout,
            work_root: self.work_root.clone(),
            stdin: StdinAction {
                id: id.to_owned(),
                kind: category.name.clone(),
                target: action.target.clone(),
                text: action.text.clone(),
                fields: action.fields.clone(),
                cost_usd: action.cost_usd.map(consentd_core::action::format_usd),
            },
            attachments: action
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
            on_card: action.mandate_id.is_none(),
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
            RunOutcome::ActionFailed { message, detail } => Finish {
                state: RecordState::Failed,
                result: None,
                message: Some(message),
                stderr: None,
                detail: Some(detail),
            },
            RunOutcome::Unknown { message, detail } => Finish {
                state: RecordState::OutcomeUnknown,
                result: None,
                message: Some(message),
                stderr: None,
                detail: Some(detail),
            },
            RunOutcome::NotStarted { reason } => Finish {
                state: RecordState::Failed,
                result: None,
                message: Some(format!("the command could not start: {reason}")),
                stderr: None,
                detail: Some("not_started".into()),
            },
        };
        let ended = finish.state;
        // The record and what its ending reads, read as before the outcome's write (a read
        // answers without waiting for a commit), then the write with the ending queued in its
        // transaction.
        let facts = self
            .store
            .ending_facts(&id, now, self.config.owner.timezone)
            .await?;
        let record = facts.record.clone();
        let ending = self.ending(&record, facts, &finish, now);
        let ending = self
            .owner()
            .map_or_else(Vec::new, |owner| ending.outgoing(owner.id));
        self.store
            .finish(Finished { id, finish, ending }, now)
            .await?;
        self.suggest_after(&record, ended, now).await;
        Ok(())
    }

    /// What the owner is told when a run ends: the card edited to its outcome, or — for an ask a
    /// mandate answered, which had no card — a receipt with today's use and Stop (none when the
    /// config keeps receipts for the summary).
    ///
    /// Drawn here, in the daemon, from `facts` read just before the outcome's write
    /// ([`consentd_store::Store::ending_facts`]); the store only queues what it is given.
    ///
    /// Never fails: what the owner is told must not stand in the way of recording the outcome.
    pub(super) fn ending(
        &self,
        record: &Record,
        facts: EndingFacts,
        finish: &Finish,
        now: DateTime<Utc>,
    ) -> Ending {
        let Some(action) = record.action().filter(|action| action.mandate_id.is_some()) else {
            // The edit keeps saying who decided now with how the run ended.
            let outcome = Outcome {
                state: finish.state.as_str(),
                decided_by: record
                    .asked_part()
                    .and_then(|asked| asked.decided_by_name.clone()),
                result: finish.result.as_deref(),
                reason: finish.message.as_deref(),
                reply_by: None,
            };
            let known = known_or_none(facts.known, &record.id);
            let edit = self.outcome_text_known(record, outcome, &known, now);
            return Ending {
                record_id: record.id.clone(),
                edit: Some(edit),
                messages: Vec::new(),
                sound: Sound::Silent,
            };
        };
        let none = Ending::none(&record.id);
        let receipts = self.owner.gate().receipts;
        let succeeded = matches!(finish.state, RecordState::Executed | RecordState::Approved);
        // The day the ask was claimed in, so a run that crosses midnight counts where it was
        // taken. Its use as of its own claim is kept with it; only an ask claimed before the
        // store kept that is shown against the whole day.
        let (row, day_usage) = match facts.mandate {
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
        // The receipt shows the action's target, not the mandate's terms, and where the action
        // itself came from: a uid's mandate covers its asks through any of its sockets.
        let origin = super::drawer::record_origin(record);
        let view = self.mandate_view(&row, (&label, origin.as_deref()), &[]);
        let usage = action.mandate_use.unwrap_or(day_usage);
        let usage = UsageView {
            actions: usage.actions,
            usd: usage.usd,
        };
        // With receipts in the summary, routine ones are only counted.
        let routine = succeeded && !self.last_of_the_day(&facts.kind_usage, &row, action, usage);
        let raise = self.receipt_raise(record, &row, action, now);
        if receipts == consentd_core::config::Receipts::Summary && routine {
            return none;
        }
        let known = known_or_none(facts.known, &record.id);
        let (rendered, captions) = with_view(self, record, &known, lang, now, |action| {
            let captions: Vec<Styled> = action
                .attachments
                .iter()
                .map(|a| card::attachment_caption(&self.locales, lang, a))
                .collect();
            let receipt = card::mandate::render_receipt(
                action,
                &view,
                usage,
                raise,
                &outcome,
                &self.locales,
                lang,
                now,
            );
            (receipt, captions)
        });
        // A Stop for a mandate already stopped or ended would only be "not accepted".
        let buttons = self.receipt_buttons(rendered.buttons.clone(), &row, record, now);
        let messages = receipt_messages(action, rendered, captions, buttons);
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

    /// Whether the action just run, at `usage` today, was the last a mandate may answer today:
    /// its own day's ([`last_today`]), or the kind's shared day's (`covering_mandate`). Either
    /// way the next ask will be a card, so its receipt is told.
    fn last_of_the_day(
        &self,
        kind_usage: &Result<Usage, StoreError>,
        row: &consentd_store::MandateRow,
        action: &ActionRecord,
        usage: UsageView,
    ) -> bool {
        let cost = action.cost_usd.unwrap_or_default();
        let limits = &self.config.limits;
        let kind_full = kind_usage.as_ref().is_ok_and(|kind| {
            kind.actions >= limits.mandate_max_actions_per_day
                || kind.usd + cost > limits.mandate_max_usd_per_day
        });
        kind_full || last_today(row, usage, cost)
    }
}

/// A receipt's messages in a card's order: the text's parts, then each attachment as a document
/// under its caption, then the receipt. No card went before an ask a mandate answered, so the
/// owner sees here, as on a card, the very bytes that were run.
fn receipt_messages(
    action: &ActionRecord,
    rendered: card::Rendered,
    captions: Vec<Styled>,
    buttons: Vec<consentd_store::outbox::ButtonSpec>,
) -> Vec<Body> {
    let parts = rendered
        .parts
        .into_iter()
        .map(|part| Body::new(part, Vec::new()));
    let documents = action
        .attachments
        .iter()
        .zip(captions)
        .map(|(facts, caption)| Body {
            document: Some(facts.clone()),
            ..Body::new(caption, Vec::new())
        });
    parts
        .chain(documents)
        .chain([Body::new(rendered.card, buttons)])
        .collect()
}

/// What ending a run sends: the card's edit, or (for an ask a mandate answered) the receipt and
/// the messages before it.
#[derive(Debug)]
pub(super) struct Ending {
    record_id: String,
    edit: Option<Styled>,
    messages: Vec<Body>,
    /// A routine receipt is one the gate keeps quiet; a failure or a day's last is told.
    sound: Sound,
}

impl Ending {
    /// Nothing to tell.
    fn none(record_id: &str) -> Ending {
        Ending {
            record_id: record_id.to_owned(),
            edit: None,
            messages: Vec::new(),
            sound: Sound::Silent,
        }
    }

    /// The messages to `chat` that tell it, for the store to queue with the outcome.
    pub(super) fn outgoing(self, chat: i64) -> Vec<Outgoing> {
        let edit = self
            .edit
            .map(|edit| Outgoing::card_edit(chat, &self.record_id, edit));
        let sound = self.sound;
        edit.into_iter()
            .chain(
                self.messages
                    .into_iter()
                    .map(|body| Outgoing::message(chat, body, sound)),
            )
            .collect()
    }
}

/// Whether the action just run, at `usage` today, was the last its mandate allows today: its
/// count is used up, or another action of this one's `cost` would not fit in its money. Its
/// receipt is then told (with a sound by day), since the next ask will be a card; a routine
/// receipt never makes a sound and waits out quiet hours.
fn last_today(
    row: &consentd_store::MandateRow,
    usage: UsageView,
    cost: rust_decimal::Decimal,
) -> bool {
    // The day's limits: its raise when the owner raised it, else the terms.
    let (actions_per_day, usd_per_day) = match row.raised_today {
        Some(raised) => (raised.actions_per_day, raised.usd_per_day),
        None => (row.actions_per_day, row.usd_per_day),
    };
    usage.actions >= actions_per_day
        || usd_per_day.is_some_and(|max| usage.usd >= max || usage.usd + cost > max)
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use consentd_store::MandateRow;

    fn mandate(usd: Option<&str>, actions: u32) -> MandateRow {
        MandateRow {
            id: "r_00000000000000000001".into(),
            digest: consentd_core::digest::Sha256Hash::of(b"terms"),
            kind: "publish_x".into(),
            targets: vec!["@news".into()],
            days: 7,
            usd_per_day: usd.map(|u| u.parse().unwrap()),
            actions_per_day: actions,
            reason: None,
            opened_at: None,
            ends_at: None,
            stopped_at: None,
            ended_at: None,
            origin: None,
            listener: None,
            suggested_after: None,
            asked_at: chrono::DateTime::UNIX_EPOCH,
            asked_monotonic: None,
            raised_today: None,
        }
    }

    fn used(actions: u32, usd: &str) -> UsageView {
        UsageView {
            actions,
            usd: usd.parse().unwrap(),
        }
    }

    #[test]
    fn the_last_action_a_mandate_allows_today_is_told() {
        let money: Decimal = "0.30".parse().unwrap();
        type Case = (&'static str, MandateRow, UsageView, Decimal, bool);
        let raised = |row: MandateRow, actions: u32| MandateRow {
            raised_today: Some(consentd_core::raise::DayLimits {
                actions_per_day: actions,
                usd_per_day: row.usd_per_day,
            }),
            ..row
        };
        let cases: [Case; 8] = [
            (
                "the first of 3",
                mandate(None, 3),
                used(1, "0"),
                Decimal::ZERO,
                false,
            ),
            (
                "the third of 3",
                mandate(None, 3),
                used(3, "0"),
                Decimal::ZERO,
                true,
            ),
            (
                "$0.30 of $0.50: the next would not fit",
                mandate(Some("0.50"), 10),
                used(1, "0.30"),
                money,
                true,
            ),
            (
                "$0.30 of $1.00: room for another",
                mandate(Some("1.00"), 10),
                used(1, "0.30"),
                money,
                false,
            ),
            (
                "the money used up exactly",
                mandate(Some("0.60"), 10),
                used(2, "0.60"),
                money,
                true,
            ),
            (
                "a free action under a money term",
                mandate(Some("0.50"), 10),
                used(1, "0"),
                Decimal::ZERO,
                false,
            ),
            (
                "the fifth of 5, raised today to 10",
                raised(mandate(None, 5), 10),
                used(5, "0"),
                Decimal::ZERO,
                false,
            ),
            (
                "the tenth of 5 raised to 10",
                raised(mandate(None, 5), 10),
                used(10, "0"),
                Decimal::ZERO,
                true,
            ),
        ];
        for (name, row, usage, cost, want) in cases {
            assert_eq!(last_today(&row, usage, cost), want, "{name}");
        }
    }
}
