//! A session's withdraw in the loop: its open ask withdrawn and its card edited without buttons
//! in the same transaction.

use consentd_store::{Outgoing, Peer, RecordState, StoreError, Withdrawal};

use super::Consent;

impl Consent {
    /// A session takes back its own open ask: withdrawn, and its card (if it was shown) edited
    /// to say so, without buttons, in the same transaction. Done here, between the loop's other
    /// events, so a press and a withdraw of one card are decided one after the other.
    pub(super) async fn withdraw(&self, id: String, peer: Peer) -> Result<Withdrawal, StoreError> {
        let now = self.clock.now();
        let lookup = id.clone();
        let record = self.store.record(&lookup).await?;
        // Drawn before the transaction (drawing reads the store); used only if it withdraws. A
        // card never sent has no message: its edit is dropped by the sender.
        let edit = match (&record, self.owner()) {
            (Some(record), Some(owner)) if record.peer() == peer && record.state.is_open() => {
                let text = self
                    .outcome_text(record, RecordState::Withdrawn, None, now)
                    .await;
                Some(Outgoing::card_edit(owner.id, &record.id, text))
            }
            _ => None,
        };
        self.store.withdraw(id, peer, edit, now).await
    }
}
