//! Suggested mandates in the chat: after the owner's yes to a card has run, whether to offer a
//! mandate instead of the next card (the pure [`consentd_core::suggest::decide`]) and, when it says so,
//! the silent message with its one signed button; and that button's press, which opens an
//! ordinary mandate card — granting still takes the owner's Grant on it.

use chrono::{DateTime, Utc};

use consentd_core::card::mandate::{render_suggestion, SuggestionView};
use consentd_core::deadline::Now;
use consentd_core::lookalike;
use consentd_core::mandate;
use consentd_core::press::PressRejection;
use consentd_core::suggest::{self, Asked};
use consentd_store::outbox::{Body, Sound};
use consentd_store::suggestions::{new_suggestion_id, Suggestion};
use consentd_store::{Applied, Decided, Outgoing, Record, RecordState, StoreError};

use super::stale;
use super::{Consent, Decision, PressSubject};

impl Consent {
    /// After a run a card's yes started has ended: a suggestion when the rules say so. Never
    /// fails the run's outcome, which is already recorded: a problem here is logged.
    pub(super) async fn suggest_after(
        &self,
        record: &Record,
        ended: RecordState,
        now: DateTime<Utc>,
    ) {
        let Some(action) = record.action() else {
            return;
        };
        if ended != RecordState::Executed
            || action.mandate_id.is_some()
            || action.asked.decided_by.is_none()
        {
            return;
        }
        if let Err(error) = self.try_suggest(record, now).await {
            tracing::warn!(%error, id = %record.id, "no suggestion: the store failed");
        }
    }

    async fn try_suggest(&self, record: &Record, now: DateTime<Utc>) -> Result<(), StoreError> {
        let (Some(owner), Some(kind)) = (self.owner(), record.kind().map(str::to_owned)) else {
            return Ok(());
        };
        let Some(category) = self.config.categories.get(&kind) else {
            return Ok(());
        };
        let (uid, target) = (
            record.peer_uid,
            record.action().and_then(|action| action.target.clone()),
        );
        let asked = Asked {
            category,
            target: target.as_deref(),
            enabled: self.category_enabled(&kind),
        };
        // The rules that need no history first: most runs end here, with no store read.
        if let Err(why) = suggest::may_suggest(asked, &self.config.limits) {
            tracing::debug!(id = %record.id, reason = why.as_str(), "no suggestion");
            return Ok(());
        }
        let lookup = (kind.clone(), target.clone());
        let history = self
            .store
            .suggestion_history(uid, &lookup.0, lookup.1.as_deref(), now)
            .await?;
        let tz = self.config.owner.timezone;
        let offer = match suggest::decide(asked, &self.config.limits, &history, now, tz) {
            Ok(offer) => offer,
            Err(why) => {
                tracing::debug!(id = %record.id, reason = why.as_str(), "no suggestion");
                return Ok(());
            }
        };
        let lang = owner.language;
        let request = offer.request;
        let digest = request.digest().to_hex();
        // The target's warnings, as every card that named it showed them.
        let known = self.store.known_targets(now).await?;
        let warnings = lookalike::warnings_each(&request.targets, &known);
        let view = SuggestionView {
            label: category.label(lang),
            targets: &request.targets,
            target_warnings: &warnings,
            days: request.days,
            usd_per_day: request.usd_per_day,
            actions_per_day: request.actions_per_day,
            approvals: offer.approvals,
            busiest_actions: offer.busiest_actions,
            busiest_usd: request.usd_per_day.map(|_| offer.busiest_usd),
        };
        let rendered = render_suggestion(&view, &self.locales, lang);
        let id = new_suggestion_id()?;
        let buttons = self.signed(rendered.buttons, &id, &digest);
        let message = Outgoing::message(owner.id, Body::new(rendered.card, buttons), Sound::Silent);
        let suggestion = Suggestion {
            id,
            peer_uid: uid,
            request,
            digest,
            approvals: offer.approvals,
            created_at: now,
            opened_at: None,
        };
        let (day_start, _) = mandate::local_day(now, tz);
        let made = self
            .store
            .offer_suggestion(
                consentd_store::writes::SuggestionOffer {
                    suggestion,
                    message,
                    day_start,
                },
                now,
            )
            .await?;
        if !made {
            tracing::debug!(id = %record.id, "no suggestion: another was made meanwhile");
        }
        Ok(())
    }

    /// A suggestion as the subject of a press of its button: open while not opened, within its
    /// week, and still what a mandate request could be now (`suggest::still_offered`: the kind
    /// on, the config's ceilings in force); its button is signed for the digest of the mandate
    /// request it opens.
    pub(super) async fn suggestion_subject(
        &self,
        id: &str,
        now: &Now,
    ) -> Result<Option<PressSubject>, StoreError> {
        let lookup = id.to_owned();
        let Some(found) = self.store.suggestion(&lookup).await? else {
            return Ok(None);
        };
        let still = self
            .config
            .categories
            .get(&found.request.kind)
            .map(|category| {
                let asked = Asked {
                    category,
                    target: found.target(),
                    enabled: self.category_enabled(&found.request.kind),
                };
                suggest::still_offered(&found.request, asked, &self.config.limits)
            });
        let open = found.is_open(now.wall) && matches!(still, Some(Ok(())));
        Ok(Some(PressSubject {
            digest: found.digest,
            offers_always: false,
            origin: None,
            open,
            window: None,
            stale: stale::suggestion(open),
        }))
    }

    /// The owner's press on a suggestion's button: its mandate request is made and its card
    /// queued, as if the session had asked for exactly those terms. One that finds it opened
    /// already (a second press racing the first) or a mandate granted for it since is journaled
    /// as not open, and nothing is made.
    pub(super) async fn suggestion_opened(
        &self,
        suggestion_id: String,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let card_chat = self.owner().map_or(decision.from.id, |o| o.id);
        let decided = Decided::OpenSuggestion {
            suggestion_id: suggestion_id.clone(),
            card_chat,
            max_pending: self.config.limits.max_pending,
            monotonic: decision.monotonic.clone(),
        };
        let applied = self
            .store
            .decide(decision.offset_with(decided), decision.now)
            .await?;
        if applied == Applied::Unchanged {
            self.rejected(PressRejection::NotOpen, &decision, Some(suggestion_id))
                .await?;
        }
        Ok(())
    }
}
