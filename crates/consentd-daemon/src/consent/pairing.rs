//! Pairing: while no owner is known, `/start` with a code from `consentd pair` makes its sender
//! the owner. The verdict (right, wrong, locked out) is the store's, made with the attempt in
//! one transaction; this part replies and fills the shared owner cell.

use chrono::{DateTime, Utc};

use crate::telegram::{ChatRef, Person};
use consentd_core::card;
use consentd_core::pairing::PairVerdict;
use consentd_store::outbox::Sound;
use consentd_store::owner::{OwnerRow, PairReplies};
use consentd_store::writes::PairingAttempt;
use consentd_store::StoreError;

use super::queue::say;
use super::{owner_language, Consent, Owner};

impl Consent {
    pub(super) async fn pair(
        &self,
        from: Person,
        chat: ChatRef,
        code: String,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let language = owner_language(&self.config, from.language_code.as_deref());
        let tz = self.config.owner.timezone;
        let locales = &self.locales;
        let candidate = OwnerRow {
            telegram_id: from.id,
            language_code: from.language_code.clone(),
        };
        // Every reply is drawn before the attempt, the locked one for the lock stored now; the
        // store queues the one its verdict takes, or, if the lock moved meanwhile, writes
        // nothing and the replies are drawn again.
        let verdict = loop {
            let lock = self.store.pairing_lock().await?;
            let replies = PairReplies {
                paired: say(chat.id, card::paired(locales, language), Sound::Gated),
                wrong: say(
                    chat.id,
                    card::pairing_wrong_code(locales, language),
                    Sound::Gated,
                ),
                locked: lock.map(|until| {
                    let text = card::pairing_locked(locales, language, until, tz, now);
                    (until, say(chat.id, text, Sound::Gated))
                }),
            };
            let attempt = PairingAttempt {
                code: code.clone(),
                candidate: candidate.clone(),
                next_offset: next,
                replies,
            };
            if let Some(verdict) = self.store.pair(attempt, now).await? {
                break verdict;
            }
        };
        tracing::info!(user = from.id, verdict = ?verdict, "pairing attempt");
        if verdict == PairVerdict::Paired {
            self.owner.set_owner(Some(Owner {
                id: from.id,
                language,
            }));
        }
        Ok(())
    }
}
