//! What the loop does at start, before any update: claims a crash left without an outcome
//! become `outcome_unknown` (never run again), and granted records not yet claimed are claimed
//! and run, so nothing the owner granted is lost to a restart.

use chrono::{DateTime, Utc};
use tokio_util::task::TaskTracker;

use consentd_core::card;
use consentd_core::styled::Styled;
use consentd_store::claims::{ClaimWindow, Finish};
use consentd_store::outbox::Sound;
use consentd_store::writes::Finished;
use consentd_store::{Record, RecordState, StoreError, Subject};

use super::queue::say;
use super::Consent;

impl Consent {
    /// At start: claims without an outcome become outcome_unknown (never re-run), with an urgent
    /// notice; granted records not yet claimed are claimed and run.
    pub(super) async fn recover(&self, runs: &TaskTracker) -> Result<(), StoreError> {
        let now = self.clock.now();
        let orphans = self.store.records_in(RecordState::Running).await?;
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
            let id = record.id.clone();
            let facts = self
                .store
                .ending_facts(&id, now, self.config.owner.timezone)
                .await?;
            let ending = self.ending(&record, facts, &finish, now);
            let ending = match self.owner() {
                Some(owner) => {
                    let mut told = ending.outgoing(owner.id);
                    told.push(say(owner.id, notice, Sound::Urgent));
                    told
                }
                None => Vec::new(),
            };
            self.store
                .finish(Finished { id, finish, ending }, now)
                .await?;
        }
        let granted = self.store.records_in(RecordState::Granted).await?;
        // A granted mandate request is where it ends: it opened a mandate and never runs.
        for record in granted
            .into_iter()
            .filter(|r| r.subject() == Subject::Action)
        {
            self.claim_and_run(record.id, ClaimWindow::JudgeAgain, runs)
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
}
