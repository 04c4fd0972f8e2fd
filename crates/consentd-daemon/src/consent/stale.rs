//! Stale buttons: a press of the owner's own, on a message as drawn, whose thing has moved on (a
//! card already answered, a mandate already stopped or ended, a silence already lifted, a
//! switch already in that state) or cannot be done (an On for a kind whose command cannot run
//! here). The press is refused as `not_open` as before; the owner is told why in its answer
//! rather than a bare "Not accepted.". The buttons of a mandate that ends and of a Resume that
//! is used are taken away by the store in the same transaction (`store::drawn::unbutton_in`),
//! so such a press comes only from a message not edited yet.

use super::{Consent, PressFacts, PressSubject, CATEGORY_DIGEST};
use crate::preflight;
use crate::telegram::Person;
use consentd_core::card::owner::{self, Stale};
use consentd_core::press::{PressAction, PressContext, PressRejection, Verdict};
use consentd_store::{MandateRow, RecordState};

/// Why a Yes, No, Grant or Decline on a card in `state` no longer counts.
pub(super) fn card(state: RecordState) -> Option<Stale> {
    match state {
        RecordState::Expired => Some(Stale::CardExpired),
        RecordState::Withdrawn => Some(Stale::CardWithdrawn),
        // Not shown yet: a button on it cannot have been drawn.
        RecordState::Pending => None,
        _ => Some(Stale::CardAnswered),
    }
}

/// Why a Stop on `mandate` no longer counts: stopped, or its term over. A mandate never granted
/// has no Stop that could have been drawn, so it gets no words.
pub(super) fn stop(mandate: Option<&MandateRow>) -> Option<Stale> {
    let mandate = mandate.filter(|m| m.opened_at.is_some())?;
    Some(if mandate.stopped_at.is_some() {
        Stale::MandateStopped
    } else {
        Stale::MandateEnded
    })
}

/// Why a suggestion's button no longer counts: it opened its card already, or its week is over.
pub(super) fn suggestion(open: bool) -> Option<Stale> {
    (!open).then_some(Stale::Suggestion)
}

/// Why a Resume no longer counts: its silence is over, or a newer one (with its own notice)
/// took its place (`silenced`: the kind is silenced now).
pub(super) fn resume(silenced: bool) -> Option<Stale> {
    Some(if silenced {
        Stale::SilencedAgain
    } else {
        Stale::Resumed
    })
}

impl Consent {
    /// A category switch as the subject of an On or Off: open while the kind is not already in
    /// the state the button asks for and, for an On, while its runs could start here (its
    /// command, `run_as` user and `env_file`, as `serve` checks them at its start).
    pub(super) fn switch_subject(&self, kind: &str, action: PressAction) -> Option<PressSubject> {
        let category = self.config.categories.get(kind)?;
        let on = action == PressAction::CategoryOn;
        let stale = if self.category_enabled(kind) == on {
            Some(Stale::CategoryAlready { on })
        } else if on {
            preflight::category_problem(category).map(|(leaf, _)| Stale::CategoryCannotRun { leaf })
        } else {
            None
        };
        Some(PressSubject {
            digest: CATEGORY_DIGEST.to_owned(),
            offers_always: false,
            origin: None,
            open: stale.is_none(),
            window: None,
            stale,
        })
    }

    /// The answer to a press: nothing for an accepted one; why, for the owner's genuine press
    /// on a stale button (only `not_open` comes after every check of who pressed, where, on
    /// which message, with which signature), and for the owner's press, in their own chat, on a
    /// button drawn before an upgrade or a key rotation (which cannot be checked at all, so it
    /// is told only to whoever is the owner, and does nothing); "Not accepted." for everything
    /// else, which tells a stranger or a forger nothing.
    pub(super) fn press_answer(
        &self,
        verdict: &Verdict,
        facts: &PressFacts,
        context: &PressContext<'_>,
        from: &Person,
    ) -> Option<String> {
        let stale = match verdict {
            Verdict::Accept { .. } => return None,
            Verdict::Reject(PressRejection::NotOpen) => {
                facts.subject.as_ref().and_then(|s| s.stale)
            }
            Verdict::Reject(rejection)
                if rejection.is_from_before_upgrade() && context.is_owner_in_own_chat() =>
            {
                Some(Stale::FromBeforeUpgrade)
            }
            Verdict::Reject(_) => None,
        };
        Some(match stale {
            Some(stale) => {
                // The presser is the owner here: their language, as everything else they read.
                let lang = self.language();
                let kind = facts.callback.as_ref().map_or("", |c| c.subject.as_str());
                if let Stale::CategoryCannotRun { leaf } = stale {
                    tracing::warn!(
                        key = format!("categories.{kind}.{leaf}"),
                        "the owner's On was refused: the category's runs could not start \
                         (consentd check-config says why)"
                    );
                }
                let label = self
                    .config
                    .categories
                    .get(kind)
                    .map_or(kind, |category| category.label(lang));
                let origin = facts.subject.as_ref().and_then(|s| s.origin.as_deref());
                owner::stale_toast(&self.locales, lang, stale, (kind, label), origin)
            }
            None => consentd_core::card::not_accepted(&self.locales, self.language_for(from)),
        })
    }
}
