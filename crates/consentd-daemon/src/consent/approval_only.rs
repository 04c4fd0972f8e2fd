//! An approval-only category in the loop: the agent runs it, consentd never does. The owner's Yes
//! approves it (`approved`: nothing is claimed or run), and one a mandate approved gets its
//! receipt.

use consentd_store::claims::Finish;
use consentd_store::{Decided, Record, RecordState, StoreError};

use super::{Consent, Decision};

impl Consent {
    /// Whether `record`'s category is approval-only: the agent runs it, consentd never does.
    /// As it was asked, not as the config says now: the card told the owner who runs it, and a
    /// Yes to "the agent runs this; consentd runs nothing" must never start a command. (A
    /// category that became approval-only after an ask is stopped at the claim instead.)
    pub(super) fn agent_runs(&self, record: &Record) -> bool {
        record.action().is_some_and(|action| action.agent_runs)
    }

    /// The owner's Yes to an approval-only category's card: approved in one compare-and-set,
    /// the card edited to say so; nothing is claimed and nothing runs.
    pub(super) async fn approved(
        &self,
        record: Record,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let edit = self
            .outcome_text(
                &record,
                RecordState::Approved,
                Some(&decision.from.name),
                decision.now,
            )
            .await;
        let card = self.card_decision(&record, &decision, edit);
        let approved = self
            .store
            .decide(decision.offset_with(Decided::Approve(card)), decision.now)
            .await;
        self.lost_race(approved, &decision, &record.id)
            .await
            .map(|_| ())
    }

    /// An ask of an approval-only category that a mandate approved (in the ask's transaction):
    /// nothing runs, and the owner gets its receipt with Stop, as for any covered action.
    pub(super) async fn approved_by_mandate(&self, record: Record) -> Result<(), StoreError> {
        let now = self.clock.now();
        let finish = Finish {
            state: RecordState::Approved,
            result: None,
            message: None,
            stderr: None,
            detail: None,
        };
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        // The receipt is drawn from what the store holds now, as at a run's end.
        let facts = self
            .store
            .ending_facts(&record.id, now, self.config.owner.timezone)
            .await?;
        let ending = self.ending(&record, facts, &finish, now);
        self.store
            .tell(
                consentd_store::Tell::messages(None, ending.outgoing(owner.id)),
                now,
            )
            .await
    }
}
