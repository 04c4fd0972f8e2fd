//! The protocol additions in the loop: a session's withdraw (its card edited without buttons in
//! the same transaction), an approval-only category's Yes (`approved`: nothing is claimed or
//! run), the receipt of one a mandate approved, and an ask that reached its own ttl unshown.

use consentd_store::claims::Finish;
use consentd_store::{Decided, Outgoing, Record, RecordState, StoreError, Withdrawal};

use super::{Consent, Decision};

impl Consent {
    /// Whether `record`'s category is approval-only: the agent runs it, consentd never does.
    /// As it was asked, not as the config says now: the card told the owner who runs it, and a
    /// Yes to "the agent runs this; consentd runs nothing" must never start a command. (A
    /// category that became approval-only after an ask is stopped at the claim instead.)
    pub(super) fn agent_runs(&self, record: &Record) -> bool {
        record.agent_runs
    }

    /// A session takes back its own open ask: withdrawn, and its card (if it was shown) edited
    /// to say so, without buttons, in the same transaction. Done here, between the loop's other
    /// events, so a press and a withdraw of one card are decided one after the other.
    pub(super) async fn withdraw(
        &self,
        id: String,
        peer_uid: u32,
    ) -> Result<Withdrawal, StoreError> {
        let now = self.clock.now();
        let lookup = id.clone();
        let record = self.store.record(&lookup).await?;
        // Drawn before the transaction (drawing reads the store); used only if it withdraws. A
        // card never sent has no message: its edit is dropped by the sender.
        let edit = match (&record, self.owner()) {
            (Some(record), Some(owner))
                if record.peer_uid == peer_uid && record.state.is_open() =>
            {
                let text = self
                    .outcome_text(record, RecordState::Withdrawn, None, now)
                    .await;
                Some(Outgoing::card_edit(owner.id, &record.id, text))
            }
            _ => None,
        };
        self.store.withdraw(id, peer_uid, edit, now).await
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

    /// Pending asks past their own ttl: expired, never shown (a card held for the morning, or
    /// still queued, is dropped).
    pub(super) async fn expire_unshown(&self) -> Result<(), StoreError> {
        let (now, due) = self.due(consentd_store::api::Due::Unshown).await?;
        for id in due {
            self.store
                .upkeep(consentd_store::Upkeep::ExpireUnshown { id }, now)
                .await?;
        }
        Ok(())
    }
}
