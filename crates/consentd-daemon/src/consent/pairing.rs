//! Pairing: while no owner is known, `/start` with a code from `consentd pair` makes its sender
//! the owner. The verdict (right, wrong, locked out) is the store's, made with the attempt in
//! one transaction; this part replies and fills the shared owner cell.

use chrono::{DateTime, Utc};

use crate::telegram::{ChatRef, Person};
use consentd_core::card;
use consentd_core::pairing::PairVerdict;
use consentd_store::consent::OwnerRow;
use consentd_store::outbox::Sound;
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
}
