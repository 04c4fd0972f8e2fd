//! Exact rules ("Always here") in the loop: the owner's Always press on a hook's gate
//! card (approved, and its call saved as a rule, in one transaction), the `/rules` list with a
//! signed Remove on each rule, and what a Remove does. Only ever restricts or saves what the
//! owner saw: a rule answers nothing here (the intake answers a hook's `rule` question).

use chrono::{DateTime, Utc};

use consentd_core::card::rules::{self, RuleView};
use consentd_core::exact;

use consentd_core::card::owner::Stale;
use consentd_core::card::Outcome;
use consentd_core::locale::Language;
use consentd_core::press::PressRejection;
use consentd_store::outbox::{Body, Sound};
use consentd_store::{Decided, Outgoing, Record, RecordState, SavedRule, StoreError};

use super::drawer::with_view;
use super::queue::text_body;
use super::{Consent, Decision, PressSubject};

impl Consent {
    /// The owner's Always here: approved exactly as a Yes, and the call saved as an exact rule
    /// for the uid that asked, in one compare-and-set; the card is edited to say both. The
    /// verdict has checked that the card offers it (`SubjectFacts::offers_always`).
    pub(super) async fn always(
        &self,
        record: Record,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let lang = self.language();
        // The targets the card was drawn against, so its edit shows the card's warnings.
        let known = self.known_for(&record.id, decision.now).await;
        let outcome = Outcome {
            state: RecordState::Approved.as_str(),
            decided_by: Some(decision.from.name.clone()),
            result: None,
            reason: None,
            reply_by: None,
        };
        let expires = record
            .asked_part()
            .and_then(|asked| asked.expires_at)
            .unwrap_or(decision.now);
        let edit = with_view(self, &record, &known, lang, expires, |view| {
            rules::render_rule_saved(view, &self.locales, lang, &outcome)
        });
        let card = self.card_decision(&record, &decision, edit);
        let saved = self
            .store
            .decide(decision.offset_with(Decided::Always(card)), decision.now)
            .await;
        self.lost_race(saved, &decision, &record.id)
            .await
            .map(|_| ())
    }

    /// A rule as the subject of a Remove: open while it is live. Its buttons are signed with the
    /// SHA-256 of its command.
    pub(super) async fn rule_subject(&self, id: &str) -> Result<Option<PressSubject>, StoreError> {
        if !exact::is_rule_id(id) {
            return Ok(None);
        }
        let lookup = id.to_owned();
        let rule = self.store.saved_rule(&lookup).await?;
        Ok(rule.map(|rule| PressSubject {
            digest: rule.command_sha256.clone(),
            open: rule.is_live(),
            window: None,
            offers_always: false,
            stale: (!rule.is_live()).then_some(Stale::RuleRemoved),
            origin: None,
        }))
    }

    /// The owner's Remove: the rule answers nothing from now on (`rule_removed`), its Remove
    /// buttons go, and the pressed message says it was removed.
    pub(super) async fn remove_rule(
        &self,
        rule_id: String,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let lookup = rule_id.clone();
        let rule = self.store.saved_rule(&lookup).await?;
        let Some(rule) = rule else {
            return self
                .rejected(PressRejection::UnknownSubject, &decision, Some(rule_id))
                .await;
        };
        let text = rules::rule_removed(
            &self.rule_view(&rule),
            &self.locales,
            self.language(),
            decision.now,
        );
        let edit = match decision.message {
            Some((chat, message_id)) => Outgoing::MessageEdit {
                chat,
                message_id,
                body: Body::new(text, Vec::new()),
            },
            None => Outgoing::message(
                self.owner_chat(&decision),
                Body::new(text, Vec::new()),
                Sound::Silent,
            ),
        };
        let decided = Decided::RemoveRule {
            rule_id,
            by: decision.from.id,
            edit,
        };
        self.store
            .decide(decision.offset_with(decided), decision.now)
            .await
            .map(|_| ())
    }

    /// The `/rules` reply: a count line, then each live rule with who, where, when it was saved,
    /// how often it was used, its command, and Remove.
    pub(super) async fn rules_replies(
        &self,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Result<Vec<Body>, StoreError> {
        let live = self.store.live_rules().await?;
        let mut replies = vec![text_body(rules::rules_count(
            &self.locales,
            lang,
            live.len(),
        ))];
        for rule in &live {
            let (text, buttons) = rules::rule_item(&self.rule_view(rule), &self.locales, lang, now);
            replies.push(Body::new(
                text,
                self.signed(buttons, &rule.id, &rule.command_sha256),
            ));
        }
        Ok(replies)
    }

    fn rule_view<'a>(&self, rule: &'a SavedRule) -> RuleView<'a> {
        RuleView {
            id: &rule.id,
            agent: &rule.agent,
            tool: &rule.tool,
            cwd: &rule.cwd,
            command: &rule.command,
            command_sha256: &rule.command_sha256,
            saved_at: rule.saved_at,
            uses: rule.uses,
            tz: self.config.owner.timezone,
        }
    }
}
