//! The owner's text in the chat: commands (`/pending`, `/mandates`, `/rules`, `/categories`, `/anchor`,
//! `/usage`, `/help`), the settings they change (`/quiet`, `/nightcards`, `/summary`, `/lang`),
//! the `/categories` switches an On or Off press flips, and the one line a stranger gets. Kept
//! apart from presses: what is typed only ever replies or changes a setting, never answers a card.

use chrono::{DateTime, Utc};

use crate::telegram::{ChatRef, Person};
use consentd_core::card;
use consentd_core::card::mandate::UsageView;
use consentd_core::commands::{self, ChatCommand};
use consentd_core::locale::Language;
use consentd_core::lookalike;
use consentd_core::styled::Styled;
use consentd_store::outbox::{Body, Sound};
use consentd_store::writes::OwnerSetting;
use consentd_store::{Decided, Outgoing, StoreError};

use super::queue::{say, text_body};
use super::{Consent, Decision, Owner, Said, CATEGORY_DIGEST};

impl Consent {
    pub(super) async fn text(
        &self,
        from: Person,
        said: Said,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let chat = said.chat;
        let command = commands::parse(&said.text, self.config.gate.night_card_limit);
        match (self.owner(), command) {
            (None, ChatCommand::Start(code)) => self.pair(from, chat, code, next, now).await,
            // Not a command, in reply to a message: perhaps the reason for a No.
            (Some(owner), ChatCommand::Unknown)
                if from.id == owner.id && said.reply_to.is_some() =>
            {
                self.owner_reply(owner, said, next, now).await
            }
            (Some(owner), command) if from.id == owner.id => {
                self.command(owner, chat, command, next, now).await
            }
            _ => {
                let line = card::not_owner_line(&self.locales, self.language_for(&from));
                self.store
                    .stranger_reply(from.id, next, say(chat.id, line, Sound::Gated), now)
                    .await
                    .map(|_| ())
            }
        }
    }

    /// The owner's command: settings are stored and journaled with their reply; the other
    /// commands only reply. Replies are quiet: the owner has just typed.
    async fn command(
        &self,
        owner: Owner,
        chat: ChatRef,
        command: ChatCommand,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let lang = owner.language;
        let locales = &self.locales;
        let replies: Vec<Body> = match command {
            ChatCommand::Pending => self
                .pending_texts(lang, now)
                .await?
                .into_iter()
                .map(text_body)
                .collect(),
            ChatCommand::Mandates => self.mandates_replies(lang, now).await?,
            ChatCommand::Rules => self.rules_replies(lang, now).await?,
            ChatCommand::Categories => self.categories_replies(lang),
            ChatCommand::Anchor => {
                let head = self.store.journal_head().await?;
                let head = (head.n > 0).then_some((head.n, head.h.as_str()));
                vec![text_body(card::owner::anchor(locales, lang, head))]
            }
            ChatCommand::Usage(usage) => vec![text_body(card::owner::usage(locales, lang, usage))],
            ChatCommand::QuietNow | ChatCommand::NightCardsNow => {
                vec![text_body(self.setting_now(command, lang))]
            }
            ChatCommand::Quiet(_)
            | ChatCommand::NightCards(_)
            | ChatCommand::Summary(_)
            | ChatCommand::Lang(_) => {
                return self.change_setting(owner, command, next, now).await;
            }
            ChatCommand::Start(_) | ChatCommand::Help => {
                vec![text_body(card::help_text(locales, lang))]
            }
            // One line, not the whole help: a stray message is more often a slip than a question.
            ChatCommand::Unknown => vec![text_body(card::owner::help_pointer(locales, lang))],
        };
        let replies = replies
            .into_iter()
            .map(|reply| Outgoing::message(chat.id, reply, Sound::Silent))
            .collect();
        self.store
            .tell(consentd_store::Tell::messages(Some(next), replies), now)
            .await
    }

    /// What `/quiet` or `/nightcards` alone answers: the setting as the gate has it now (the
    /// config's, or the owner's own over it).
    fn setting_now(&self, command: ChatCommand, lang: Language) -> String {
        let gate = self.owner.gate();
        match command {
            ChatCommand::NightCardsNow => card::owner::nightcards_current(
                &self.locales,
                lang,
                gate.night_card_limit,
                self.config.gate.night_card_limit,
            ),
            _ => card::owner::quiet_current(&self.locales, lang, gate.quiet_hours),
        }
    }

    /// `/quiet`, `/nightcards`, `/summary` or `/lang` with its value: stored, journaled, replied
    /// to, and in force at once.
    async fn change_setting(
        &self,
        owner: Owner,
        command: ChatCommand,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let lang = owner.language;
        let locales = &self.locales;
        match command {
            ChatCommand::Quiet(quiet) => {
                let value = match quiet {
                    Some((from, to)) => format!("{}-{}", from.format("%H:%M"), to.format("%H:%M")),
                    None => "off".to_owned(),
                };
                let reply = card::owner::quiet_set(locales, lang, quiet);
                // The gate the sender reads changes before the store releases held cards: a
                // card held under the old hours after that release is released by the sender
                // itself (see `sender::card_delivery`).
                self.owner.change_gate(|gate| gate.quiet_hours = quiet);
                self.set(owner, "quiet_hours", value, reply, next, now)
                    .await
            }
            ChatCommand::NightCards(count) => {
                let reply = card::owner::nightcards_set(locales, lang, count);
                // Before the store's release of held cards, as for the quiet hours.
                self.owner.change_gate(|gate| gate.night_card_limit = count);
                let value = count.to_string();
                self.set(owner, "night_card_limit", value, reply, next, now)
                    .await
            }
            ChatCommand::Summary(at) => {
                let reply = card::owner::summary_set(locales, lang, at);
                let value = at.format("%H:%M").to_string();
                self.set(owner, "summary_at", value, reply, next, now)
                    .await?;
                self.owner.change_gate(|gate| gate.summary_at = at);
                Ok(())
            }
            ChatCommand::Lang(chosen) => {
                let reply = card::owner::lang_set(locales, chosen);
                let value = chosen.as_str().to_owned();
                // The cell before the store: the reply is queued there, and whatever shows the
                // owner's language beside the daemon (the sandbox's page) must already have the
                // new one when the reply reaches the chat.
                self.owner.set_language(chosen);
                self.set(owner, "language", value, reply, next, now).await
            }
            // Not a setting (the caller sends only settings here): only the offset moves.
            _ => {
                self.store
                    .tell(consentd_store::Tell::offset(next), now)
                    .await
            }
        }
    }

    /// Stores one of the owner's settings (journaled `settings`) with its reply.
    async fn set(
        &self,
        owner: Owner,
        key: &'static str,
        value: String,
        reply: String,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let setting = OwnerSetting {
            key,
            value,
            by: owner.id,
            next_offset: next,
            reply: say(owner.id, reply, Sound::Silent),
        };
        self.store.set_owner_setting(setting, now).await
    }

    /// The `/categories` reply: a title, then each kind with its switch and the button that
    /// flips it (signed for the kind, like every button).
    fn categories_replies(&self, lang: Language) -> Vec<Body> {
        let mut replies = vec![text_body(card::owner::categories_title(
            &self.locales,
            lang,
        ))];
        for kind in self.config.categories.keys() {
            replies.push(self.category_line(kind, self.category_enabled(kind), lang));
        }
        replies
    }

    /// One kind's line in `/categories`: its label, class and switch (`on`), and the signed
    /// button that flips it.
    fn category_line(&self, kind: &str, on: bool, lang: Language) -> Body {
        let category = self.config.categories.get(kind);
        let (text, button) = card::owner::category_item(
            &self.locales,
            lang,
            category.map_or(kind, |c| c.label(lang)),
            category.map_or("external", |c| c.class.as_str()),
            on,
        );
        Body::new(
            Styled::plain(text),
            self.signed(vec![button], kind, CATEGORY_DIGEST),
        )
    }

    /// The owner's On or Off: the switch is stored and journaled, the shared switches change,
    /// and the owner is told; the pressed `/categories` line is drawn again with its new state
    /// and the button that flips it back.
    ///
    /// Off takes effect before the decision is stored: the owner's reply leaves once it commits,
    /// before its line is in the journal and so before `decide` returns, and an ask that comes
    /// after the owner reads "now off" must already find the kind off. If the store then fails,
    /// the copy is read back from the store, which kept the Off or not. On takes effect once its
    /// line is in the journal, after `decide`.
    pub(super) async fn switch_category(
        &self,
        kind: String,
        on: bool,
        decision: &Decision,
    ) -> Result<(), StoreError> {
        let by = decision.from.id;
        let lang = self.language();
        let label = self
            .config
            .categories
            .get(&kind)
            .map_or(kind.clone(), |c| c.label(lang).to_owned());
        let reply = card::owner::category_switched(&self.locales, lang, &label, on);
        let redrawn = decision
            .message
            .map(|(chat, message_id)| Outgoing::MessageEdit {
                chat,
                message_id,
                body: self.category_line(&kind, on, lang),
            });
        let changed = self.category_enabled(&kind) != on;
        if !on {
            self.owner.set_switch(kind.clone(), false);
        }
        let decided = Decided::Switch {
            kind: kind.clone(),
            on,
            changed,
            by,
            replies: redrawn
                .into_iter()
                .chain([Outgoing::message(by, text_body(reply), Sound::Silent)])
                .collect(),
        };
        let stored = self
            .store
            .decide(decision.offset_with(decided), decision.now)
            .await;
        if let Err(error) = stored {
            if !on {
                // The copy follows what the store kept again: the press, fetched again, is
                // then judged on that, and not found already done. Where the store cannot be
                // read either, the kind stays off here: the side that refuses.
                if let Ok(switches) = self.store.category_switches().await {
                    self.owner.set_switches(switches);
                }
            }
            return Err(error);
        }
        if on {
            self.owner.set_switch(kind, true);
        }
        Ok(())
    }

    /// The `/mandates` reply: a count line, then each open mandate with today's use and Stop.
    pub(super) async fn mandates_replies(
        &self,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Result<Vec<Body>, StoreError> {
        let tz = self.config.owner.timezone;
        let open = self.store.open_mandates(now, tz).await?;
        let mut replies = vec![text_body(card::mandate::mandates_count(
            &self.locales,
            lang,
            open.len(),
        ))];
        let labels = self.labels(lang);
        for (row, usage) in open {
            let label = labels
                .get(&row.kind)
                .cloned()
                .unwrap_or_else(|| row.kind.clone());
            let known = self.known_for(&row.id, now).await;
            let warnings = lookalike::warnings_each(&row.targets, &known);
            let origin = super::drawer::mandate_origin(&row);
            let view = self.mandate_view(&row, (&label, origin.as_deref()), &warnings);
            let usage = UsageView {
                actions: usage.actions,
                usd: usage.usd,
            };
            let (text, buttons) =
                card::mandate::mandate_summary(&view, usage, &self.locales, lang, now);
            replies.push(Body::new(
                text,
                self.signed(buttons, &row.id, &row.digest.to_hex()),
            ));
        }
        Ok(replies)
    }

    async fn pending_texts(
        &self,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        // Shown cards with their deadlines, then those not shown yet (held for the morning).
        let (shown, waiting) = self.store.open_records().await?;
        let labels: Vec<(String, String, Option<DateTime<Utc>>)> = shown
            .iter()
            .chain(&waiting)
            .map(|record| {
                // A pending ask with its own ttl has a deadline before it has a card: it is
                // still "not shown yet".
                let expires = record
                    .asked_part()
                    .and_then(|asked| asked.expires_at.filter(|_| asked.shown_at.is_some()));
                (record.id.clone(), self.label(record, lang), expires)
            })
            .collect();
        let items: Vec<(&str, &str, Option<DateTime<Utc>>)> = labels
            .iter()
            .map(|(id, label, at)| (id.as_str(), label.as_str(), *at))
            .collect();
        Ok(card::pending_list(
            &self.locales,
            lang,
            &items,
            self.config.owner.timezone,
            now,
        ))
    }

    /// A stranger's language, for the one line they get.
    pub(super) fn language_for(&self, person: &Person) -> Language {
        person
            .language_code
            .as_deref()
            .and_then(Language::from_code)
            .unwrap_or(Language::En)
    }

    /// Sets the bot's command menu in each language (and in the owner's for other clients).
    pub(super) fn set_command_menu(&self) {
        let telegram = self.telegram.clone();
        let locales = self.locales.clone();
        let default = self.language();
        tokio::spawn(async move {
            let menus = Language::ALL
                .into_iter()
                .map(|lang| (Some(lang), lang))
                .chain([(None, default)]);
            for (code, lang) in menus {
                let menu = card::command_menu(&locales, lang);
                let code = code.map(Language::as_str);
                if let Err(error) = telegram.set_commands(code, &menu).await {
                    tracing::warn!(%error, "cannot set the bot's command menu");
                }
            }
        });
    }
}
