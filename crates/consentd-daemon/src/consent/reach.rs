//! Telegram answers again after refusing the bot: the owner hears how long they were cut off,
//! so cards that come late (and asks that waited) have their reason in the chat.

use consentd_core::card;
use consentd_store::outbox::Sound;
use consentd_store::StoreError;

use crate::unreachable::Unreachable;

use super::queue::say;
use super::Consent;

impl Consent {
    /// Queues the notice of the `ended` episode, in the owner's language, counted in whole
    /// minutes on the daemon's clock; nothing when no one is paired.
    pub(super) async fn reachable_again(&self, ended: Unreachable) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let now = self.clock.now();
        let minutes = (now - ended.since).num_minutes().max(0);
        let text = card::reachable_again_notice(
            &self.locales,
            owner.language,
            minutes,
            ended.cause.as_str(),
        );
        let notice = say(owner.id, text, Sound::Gated);
        self.store
            .tell(consentd_store::Tell::messages(None, vec![notice]), now)
            .await
    }
}
