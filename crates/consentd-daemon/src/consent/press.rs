//! A button press: the facts it is judged on (the message as drawn, the clocks, its subject),
//! the verdict of the pure [`consentd_core::press::verify`], the answer to the presser first, and then
//! what an accepted press does — Yes and Grant, No and Decline, Resume, Stop — or how a rejected
//! one is journaled and, when it matters, told to the owner.

use std::time::Duration;

use tokio_util::task::TaskTracker;

use crate::telegram::{ChatRef, Person, Press};
use consentd_core::card;
use consentd_core::deadline::{reason_deadline, Now};
use consentd_core::press::{
    self, AsDrawn, MessageFacts, PressAction, PressContext, PressRejection, SubjectFacts, Verdict,
};
use consentd_core::styled::Styled;
use consentd_store::claims::ClaimWindow;
use consentd_store::drawn::Drawn;
use consentd_store::events::EventName;
use consentd_store::outbox::{Body, Sound};
use consentd_store::strangers::StrangerPress;
use consentd_store::{
    Applied, CardDecision, Decided, JournalEvent, Outgoing, Record, RecordState, StoreError,
    Subject,
};

use super::queue::{say, text_body};
use super::stale;
use super::{Consent, Decision, Owner, PressFacts, PressSubject};

/// How long a press, or a reply to a card, waits for a send in flight to be recorded before it
/// is judged (see [`Drawing`](crate::sender::Drawing)). A send stalled longer than this leaves
/// it judged on what is known.
pub(super) const DRAWING_PATIENCE: Duration = Duration::from_secs(3);

/// Category switches name a kind, not a record.
fn is_switch(action: PressAction) -> bool {
    matches!(action, PressAction::CategoryOn | PressAction::CategoryOff)
}

impl Consent {
    /// A button press: the facts, the verdict (a pure function), the answer to the presser at
    /// once, then what the press does.
    pub(super) async fn press(
        &self,
        press: Press,
        next: i64,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
        let owner = self.owner();
        let (facts, now) = self.press_facts(&press).await?;
        let chat = press.chat.unwrap_or(ChatRef {
            id: 0,
            private: false,
        });
        let context = PressContext {
            presser_id: press.from.id,
            chat_id: chat.id,
            chat_is_private: chat.private,
            owner_id: owner.map(|o| o.id),
            subject: facts.subject.as_ref().map(|subject| SubjectFacts {
                digest: &subject.digest,
                open: subject.open,
                window: subject.window.clone(),
                offers_always: subject.offers_always,
            }),
            message: facts.message,
            now: now.clone(),
        };
        let data = press.data.clone().unwrap_or_default();
        let verdict = press::verify(&data, &self.key, &context);
        // Answered first: Telegram gives a query only seconds.
        let answer = self.press_answer(&verdict, &facts, &context, &press.from);
        self.answer(press.query_id.clone(), answer);
        let subject = facts.callback.map(|c| c.subject);
        let decision = Decision {
            from: press.from,
            next,
            now: now.wall,
            monotonic: now.monotonic.clone(),
            message: chat_message(press.chat, press.message_id),
        };
        if verdict.is_accept() && facts.message == MessageFacts::Drawn(AsDrawn::Changed) {
            // Only a press that takes something back counts on an altered message; the owner
            // hears that the message was changed behind their back.
            self.tell_altered(&decision).await?;
        }
        match verdict {
            Verdict::Reject(rejection) => self.rejected(rejection, &decision, subject).await,
            Verdict::Accept { action, subject } => {
                self.pressed(action, subject, facts.record, decision, runs)
                    .await
            }
        }
    }

    /// Reads what a press is judged on: the message it came from, as the daemon drew it (waiting
    /// for a send in flight when the message is not known yet), then the clocks — read after
    /// that wait — and the subject its data names (a record, a mandate, a kind's switch or
    /// silence).
    async fn press_facts(&self, press: &Press) -> Result<(PressFacts, Now), StoreError> {
        let message = self.message_facts(press).await?;
        let now = Now::read(self.clock.as_ref());
        let callback = press::parse_callback(press.data.as_deref().unwrap_or_default()).ok();
        let record = match &callback {
            Some(callback) if callback.subject.starts_with("r_") => {
                let id = callback.subject.clone();
                self.store.record(&id).await?
            }
            _ => None,
        };
        let subject = match (&callback, &record) {
            (None, _) => None,
            (Some(callback), _) if is_switch(callback.action) => {
                self.switch_subject(&callback.subject, callback.action)
            }
            (Some(callback), _) if callback.action == PressAction::Suggest => {
                self.suggestion_subject(&callback.subject, &now).await?
            }
            (Some(callback), _) if callback.action == PressAction::Remove => {
                self.rule_subject(&callback.subject).await?
            }
            (Some(_), None) => None,
            (Some(callback), Some(record)) => {
                Some(self.record_subject(callback.action, record, &now).await?)
            }
        };
        let facts = PressFacts {
            callback,
            record,
            subject,
            message,
        };
        Ok((facts, now))
    }

    /// What a record is, as the subject of a press of `action`.
    async fn record_subject(
        &self,
        action: PressAction,
        record: &Record,
        now: &Now,
    ) -> Result<PressSubject, StoreError> {
        if action == PressAction::Raise {
            return self.raise_subject(record, now).await;
        }
        let (open, window, stale) = match action {
            // Resume names the record whose no started the silence: it is open while that
            // silence lasts, and a later silence (started by another record) is not its own.
            PressAction::Resume => {
                let wall = now.wall;
                // A record refused before it had a kind started no silence.
                let (peer, silence) = (record.peer(), record.kind().map(str::to_owned));
                let silence = match silence {
                    Some(kind) => self.store.silence_of(peer, &kind, wall).await?,
                    None => None,
                };
                let open = match &silence {
                    Some(Some(by)) => *by == record.id,
                    // A silence from before silences were named: any Resume of its kind.
                    Some(None) => true,
                    None => false,
                };
                (open, None, stale::resume(silence.is_some()))
            }
            // Stop names the mandate: open while granted, not stopped and in its term.
            PressAction::Stop => {
                let row = record.mandate_request().and_then(|m| m.row.as_ref());
                (
                    row.is_some_and(|m| m.is_open(now.wall)),
                    None,
                    stale::stop(row),
                )
            }
            _ => (
                record.state == RecordState::CardShown,
                record.window(),
                stale::card(record.state),
            ),
        };
        let category = record
            .kind()
            .and_then(|kind| self.config.categories.get(kind));
        Ok(PressSubject {
            digest: super::drawer::signed_digest(record),
            open,
            window,
            offers_always: super::drawer::offers_always(category, record),
            stale: stale.filter(|_| !open),
            origin: record.listener.clone(),
        })
    }

    /// Whether the press's data was drawn on the message it came from, and whether that
    /// message still shows what it was drawn with. A press on a message not as the daemon
    /// recorded it may be on a send or an edit whose answer is being recorded this moment (the
    /// owner sees a message, or its new buttons, before Telegram's answer reaches the daemon):
    /// then the press waits (briefly) for that to finish and is judged on what is recorded after.
    async fn message_facts(&self, press: &Press) -> Result<MessageFacts, StoreError> {
        let (Some(chat), Some(message_id), Some(data)) =
            (press.chat, press.message_id, press.data.clone())
        else {
            return Ok(MessageFacts::NotDrawn);
        };
        let read = || async {
            let drawn = self.store.drawn_message(chat.id, message_id).await?;
            Ok::<_, StoreError>(as_drawn(drawn, &data, press.message_shows.as_deref()))
        };
        let facts = read().await?;
        // Only the owner, in a private chat, can press a message the daemon is recording this
        // moment; anyone else's press is rejected whatever is recorded, and must not hold the
        // one consent loop (and the owner's presses behind it) on a send in flight.
        let owners = self.owner().is_some_and(|owner| owner.id == press.from.id) && chat.private;
        if facts == MessageFacts::Drawn(AsDrawn::Same) || !owners {
            return Ok(facts);
        }
        let _sent = tokio::time::timeout(DRAWING_PATIENCE, self.drawing.lock()).await;
        read().await
    }

    /// What an accepted press does.
    async fn pressed(
        &self,
        action: PressAction,
        subject: String,
        record: Option<Record>,
        decision: Decision,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
        if is_switch(action) {
            let on = action == PressAction::CategoryOn;
            return self.switch_category(subject, on, &decision).await;
        }
        if action == PressAction::Suggest {
            return self.suggestion_opened(subject, decision).await;
        }
        if action == PressAction::Remove {
            return self.remove_rule(subject, decision).await;
        }
        let Some(record) = record else {
            return self
                .rejected(PressRejection::UnknownSubject, &decision, Some(subject))
                .await;
        };
        match (action, record.subject()) {
            // An approval-only category's yes ends it approved: nothing is claimed or run.
            (PressAction::Yes, Subject::Action) if self.agent_runs(&record) => {
                self.approved(record, decision).await
            }
            // Offered only on an approval-only card (the verdict checked `offers_always`).
            (PressAction::Always, Subject::Action) => self.always(record, decision).await,
            (PressAction::Yes, Subject::Action) | (PressAction::Grant, Subject::Mandate) => {
                self.granted(record, decision, runs).await
            }
            (PressAction::No, Subject::Action) | (PressAction::Decline, Subject::Mandate) => {
                self.declined(record, decision, false).await
            }
            (PressAction::NoSayWhy, Subject::Action | Subject::Mandate) => {
                self.declined(record, decision, true).await
            }
            (PressAction::Resume, _) => self.resumed(record, decision).await,
            (PressAction::Stop, Subject::Mandate) => self.stopped(record, decision).await,
            (PressAction::Raise, Subject::Action) => self.raised(record, decision).await,
            // A button this record never carries (a Yes on a mandate, a Stop on an action, a
            // category switch): never signed, so a valid tag cannot exist.
            _ => {
                self.rejected(PressRejection::Malformed, &decision, Some(subject))
                    .await
            }
        }
    }

    /// The owner's Yes (or Grant): granted in one compare-and-set, then claimed and run (a
    /// granted mandate request opened its mandate: nothing runs).
    async fn granted(
        &self,
        record: Record,
        decision: Decision,
        runs: &TaskTracker,
    ) -> Result<(), StoreError> {
        let edit = self
            .outcome_text(
                &record,
                RecordState::Granted,
                Some(&decision.from.name),
                decision.now,
            )
            .await;
        let card = self.card_decision(&record, &decision, edit);
        let granted = self
            .store
            .decide(decision.offset_with(Decided::Grant(card)), decision.now)
            .await;
        match self.lost_race(granted, &decision, &record.id).await? {
            Some(_) if record.subject() == Subject::Mandate => Ok(()),
            Some(_) => {
                self.claim_and_run(record.id, ClaimWindow::JudgedAtGrant, runs)
                    .await
            }
            None => Ok(()),
        }
    }

    /// The owner's No (or Decline): declined in one compare-and-set; at the streak's limit the
    /// kind is silenced and the owner gets the notice with Resume. A plain No answers a waiting
    /// session at once; with `say_why` ("No, and say why…", while the wait is on) the record
    /// keeps until when its answer waits for the owner's reply, and the card's edit asks for it.
    async fn declined(
        &self,
        record: Record,
        decision: Decision,
        say_why: bool,
    ) -> Result<(), StoreError> {
        let lang = self.language();
        let reason_until = say_why
            .then(|| reason_deadline(decision.now, self.config.limits.decline_reason_wait))
            .flatten();
        let edit = self
            .declined_text(&record, &decision.from.name, reason_until, decision.now)
            .await;
        let notice = self.silenced_notice(&record, lang, decision.now);
        let decided = Decided::Decline {
            card: self.card_decision(&record, &decision, edit),
            streak_limit: self.config.limits.decline_streak,
            notice_if_silenced: Some(Box::new(Outgoing::message(
                self.owner_chat(&decision),
                notice,
                Sound::Gated,
            ))),
            reason_until,
        };
        let declined = self
            .store
            .decide(decision.offset_with(decided), decision.now)
            .await;
        self.lost_race(declined, &decision, &record.id)
            .await
            .map(|_| ())
    }

    /// The owner's Resume: the silence this record started ends (a later one stays).
    async fn resumed(&self, record: Record, decision: Decision) -> Result<(), StoreError> {
        let lang = self.language();
        let label = self.label(&record, lang);
        let reply = text_body(card::resumed_notice(&self.locales, lang, &label));
        let decided = Decided::Resume {
            kind: record.asked()?.kind.to_owned(),
            silenced_by: record.id.clone(),
            by: decision.from.id,
            reply: Outgoing::message(self.owner_chat(&decision), reply, Sound::Silent),
        };
        let applied = self
            .store
            .decide(decision.offset_with(decided), decision.now)
            .await?;
        if applied == Applied::Unchanged {
            // Lifted in the meantime (a yes to a card of the kind), or replaced by another.
            tracing::debug!("a Resume found no silence of its own to lift");
        }
        Ok(())
    }

    /// The owner's Stop on a mandate.
    async fn stopped(&self, record: Record, decision: Decision) -> Result<(), StoreError> {
        let lang = self.language();
        let label = self.label(&record, lang);
        let reply = card::mandate::mandate_stopped(&self.locales, lang, &label);
        let decided = Decided::Stop {
            mandate_id: record.id.clone(),
            by: decision.from.id,
            reply: Outgoing::message(self.owner_chat(&decision), text_body(reply), Sound::Silent),
        };
        self.store
            .decide(decision.offset_with(decided), decision.now)
            .await
            .map(|_| ())
    }

    /// The owner's answer to `record`'s card, with the card's `edit` for the owner's chat.
    pub(super) fn card_decision(
        &self,
        record: &Record,
        decision: &Decision,
        edit: Styled,
    ) -> CardDecision {
        CardDecision {
            id: record.id.clone(),
            by: decision.from.id,
            decider_name: decision.from.name.clone(),
            card_edit: Some(Outgoing::card_edit(
                self.owner_chat(decision),
                &record.id,
                edit,
            )),
        }
    }

    /// The owner's chat, for what a press changes (the presser's before pairing is recorded).
    pub(super) fn owner_chat(&self, decision: &Decision) -> i64 {
        self.owner().map_or(decision.from.id, |o| o.id)
    }

    /// A verified press that found its record already moved on — a second or concurrent press
    /// of the same button: journaled as not open, and nothing else happens.
    pub(super) async fn lost_race<T>(
        &self,
        result: Result<T, StoreError>,
        decision: &Decision,
        record_id: &str,
    ) -> Result<Option<T>, StoreError> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(StoreError::StateConflict { .. }) => {
                let subject = Some(record_id.to_owned());
                self.rejected(PressRejection::NotOpen, decision, subject)
                    .await?;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Answers a press without waiting on it (it must not hold up the loop).
    fn answer(&self, query_id: String, text: Option<String>) {
        let telegram = self.telegram.clone();
        tokio::spawn(async move {
            if let Err(error) = telegram.answer_press(&query_id, text.as_deref()).await {
                tracing::debug!(%error, "answering a press failed");
            }
        });
    }

    /// The urgent notice that a message with the owner's buttons was changed after it was sent,
    /// while a press on it that only took something back still counted.
    async fn tell_altered(&self, decision: &Decision) -> Result<(), StoreError> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let text = card::altered_notice(&self.locales, owner.language);
        let now = decision.now;
        let notice = say(owner.id, text, Sound::Urgent);
        self.store
            .tell(consentd_store::Tell::messages(None, vec![notice]), now)
            .await
    }

    /// A press that did not count: journaled, and the owner told at once when someone else
    /// pressed their buttons or a card's message was changed behind their back. Someone else's
    /// presses go by windows (`crate::stranger`): the owner hears of a stranger once an hour at
    /// most, and the journal counts the rest in one line.
    pub(super) async fn rejected(
        &self,
        rejection: PressRejection,
        decision: &Decision,
        subject: Option<String>,
    ) -> Result<(), StoreError> {
        let Decision {
            from, next, now, ..
        } = decision;
        let (next, now) = (*next, *now);
        tracing::warn!(
            presser = from.id,
            reason = rejection.as_str(),
            "press rejected"
        );
        let owner = self.owner();
        let subject = subject.filter(|s| press::is_record_id(s) || press::is_kind_name(s));
        let Some(owner) = owner.filter(|owner| owner.id == from.id) else {
            let notice = owner
                .filter(|_| rejection == PressRejection::NotOwner)
                .map(|owner| self.stranger_notice(owner, from, rejection))
                .map(|(chat, body)| Outgoing::message(chat, body, Sound::Urgent));
            let press = StrangerPress {
                user_id: from.id,
                reason: rejection.as_str(),
                subject,
                notice,
            };
            return self
                .store
                .stranger_press_rejected(press, Some(next), now)
                .await
                .map(|_| ());
        };
        // The owner's own presses: each is journaled; a changed message is told every time
        // (only the owner's account can press as the owner, so nobody else can flood it).
        let notice = (rejection == PressRejection::CardAltered)
            .then(|| self.stranger_notice(owner, from, rejection));
        let presser = from.id;
        let mut event = JournalEvent::new(EventName::PressRejected)
            .with("reason", rejection.as_str())
            .with("by", presser);
        if let Some(subject) = subject {
            event = event.with("subject", subject);
        }
        let tell = consentd_store::Tell {
            next_offset: Some(next),
            events: vec![event],
            messages: notice
                .map(|(chat, body)| Outgoing::message(chat, body, Sound::Urgent))
                .into_iter()
                .collect(),
        };
        self.store.tell(tell, now).await
    }

    /// The owner's urgent notice that `from` pressed one of their buttons and why it did not
    /// count.
    fn stranger_notice(
        &self,
        owner: Owner,
        from: &Person,
        rejection: PressRejection,
    ) -> (i64, Body) {
        let who = if from.name.is_empty() {
            from.id.to_string()
        } else {
            format!("{} ({})", from.name, from.id)
        };
        let text =
            card::press_rejected_notice(&self.locales, owner.language, &who, rejection.as_str());
        (owner.id, Body::new(text, Vec::new()))
    }
}

/// The pressed message as (chat, message id), when Telegram said both.
fn chat_message(chat: Option<ChatRef>, message_id: Option<i64>) -> Option<(i64, i64)> {
    Some((chat?.id, message_id?))
}

/// How the pressed message, drawn as `drawn` (if it was), stands for a press with `data`
/// on a message that now shows `shows` (`None`: Telegram did not show it).
fn as_drawn(drawn: Option<Drawn>, data: &str, shows: Option<&str>) -> MessageFacts {
    match drawn {
        Some(drawn) if drawn.buttons.iter().any(|b| b == data) => {
            MessageFacts::Drawn(match shows {
                None => AsDrawn::Unreadable,
                Some(shows) if shows == drawn.shows => AsDrawn::Same,
                Some(_) => AsDrawn::Changed,
            })
        }
        _ => MessageFacts::NotDrawn,
    }
}
