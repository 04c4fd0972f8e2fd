//! Drawing for the owner: a record's card and its edits once answered or ended, mandate views,
//! notices with buttons signed for their subject, and the sender's [`Drawer`], which draws a
//! card at the moment it is sent. Only renders and signs; it queues nothing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::sender::{Drawer, DrawnCard};
use consentd_core::card::mandate::MandateView;
use consentd_core::card::{self, AttachmentView, CardError, CardView, Outcome};
use consentd_core::config::Gate;
use consentd_core::locale::Language;
use consentd_core::lookalike::{self, KnownTargets, Warning};
use consentd_core::press::PressAction;
use consentd_core::styled::Styled;
use consentd_store::outbox::{Body, ButtonSpec};
use consentd_store::{MandateRow, Record, RecordState};

use super::Consent;

impl Consent {
    pub(super) fn label(&self, record: &Record, lang: Language) -> String {
        let kind = record.kind().unwrap_or("");
        self.config.categories.get(kind).map_or_else(
            || kind.to_owned(),
            |category| category.label(lang).to_owned(),
        )
    }

    /// Every category's label in `lang`, by kind.
    pub(super) fn labels(&self, lang: Language) -> BTreeMap<String, String> {
        self.config
            .categories
            .iter()
            .map(|(kind, category)| (kind.clone(), category.label(lang).to_owned()))
            .collect()
    }

    fn class_of(&self, kind: &str) -> &str {
        self.config
            .categories
            .get(kind)
            .map_or("external", |category| category.class.as_str())
    }

    /// A stored mandate as its card shows it, with its category's `label`, its targets'
    /// look-alike warnings and its `origin` line ([`mandate_origin`]).
    pub(super) fn mandate_view<'a>(
        &'a self,
        row: &'a MandateRow,
        (label, origin): (&'a str, Option<&'a str>),
        target_warnings: &'a [Vec<Warning>],
    ) -> MandateView<'a> {
        MandateView {
            record_id: &row.id,
            label,
            class: self.class_of(&row.kind),
            targets: &row.targets,
            target_warnings,
            ends_at: row.ends_at.unwrap_or(DateTime::<Utc>::MAX_UTC),
            usd_per_day: row.usd_per_day,
            actions_per_day: row.actions_per_day,
            reason: row.reason.as_deref(),
            tz: self.config.owner.timezone,
            origin,
            suggested_after: row.suggested_after,
            raised_today: row.raised_today,
        }
    }

    /// A card's buttons as this daemon offers them: "No, and say why…" only while
    /// `limits.decline_reason_wait` is on (with it off no reply could reach the session, and a
    /// button that promised one would mislead the owner).
    fn offered(&self, mut buttons: Vec<card::Button>) -> Vec<card::Button> {
        if self.config.limits.decline_reason_wait.is_zero() {
            buttons.retain(|button| button.action != PressAction::NoSayWhy);
        }
        buttons
    }

    /// Buttons with their callback data signed for `subject` and its digest, for the owner.
    pub(super) fn signed(
        &self,
        buttons: Vec<card::Button>,
        subject: &str,
        digest: &str,
    ) -> Vec<ButtonSpec> {
        let owner_id = self.owner().map_or(0, |o| o.id);
        buttons
            .into_iter()
            .map(|button| ButtonSpec {
                label: button.label,
                data: self.key.sign(button.action, subject, digest, owner_id),
                row: button.row,
            })
            .collect()
    }

    pub(super) async fn outcome_text(
        &self,
        record: &Record,
        state: RecordState,
        decided_by: Option<&str>,
        now: DateTime<Utc>,
    ) -> Styled {
        let outcome = Outcome {
            state: state.as_str(),
            decided_by: decided_by.map(str::to_owned),
            result: record.action().and_then(|action| action.result.as_deref()),
            reason: record.reason.as_deref(),
            reply_by: None,
        };
        self.outcome_text_with(record, outcome, now).await
    }

    /// The card's edit once `record` has `outcome`: the action's card, or the mandate card (which
    /// shows no result).
    pub(super) async fn outcome_text_with(
        &self,
        record: &Record,
        outcome: Outcome<'_>,
        now: DateTime<Utc>,
    ) -> Styled {
        let known = self.known_for(&record.id, now).await;
        self.outcome_text_known(record, outcome, &known, now)
    }

    /// [`Consent::outcome_text_with`] against targets already read: on the store's thread, in
    /// the call that records the outcome.
    pub(super) fn outcome_text_known(
        &self,
        record: &Record,
        outcome: Outcome<'_>,
        known: &KnownTargets,
        now: DateTime<Utc>,
    ) -> Styled {
        let lang = self.language();
        if let Some(row) = record.mandate_request().and_then(|m| m.row.as_ref()) {
            let label = self.label(record, lang);
            let warnings = lookalike::warnings_each(&row.targets, known);
            let origin = mandate_origin(row);
            let view = self.mandate_view(row, (&label, origin.as_deref()), &warnings);
            let outcome = Outcome {
                result: None,
                ..outcome
            };
            return card::mandate::render_mandate_outcome(
                &view,
                &outcome,
                &self.locales,
                lang,
                now,
            );
        }
        let expires = record
            .asked_part()
            .and_then(|asked| asked.expires_at)
            .unwrap_or(now);
        with_view(self, record, known, lang, expires, |view| {
            card::render_outcome(view, &self.locales, lang, &outcome)
        })
    }

    /// The targets a record's card was drawn against (`Store::known_targets_for`: as of its
    /// `shown_at`), so its edits show the card's warnings; for an ask a mandate answered, those
    /// known when it was asked. Never fails: what the owner is told must not stand in the way of
    /// recording an outcome, so without them only the mixed-script warnings show.
    pub(super) async fn known_for(&self, record_id: &str, now: DateTime<Utc>) -> KnownTargets {
        let id = record_id.to_owned();
        let read = self.store.known_targets_for(&id, now).await;
        known_or_none(read, record_id)
    }

    pub(super) fn silenced_notice(
        &self,
        record: &Record,
        lang: Language,
        now: DateTime<Utc>,
    ) -> Body {
        let label = self.label(record, lang);
        let origin = record_origin(record);
        let session = session_name(record.peer_uid, origin.as_deref());
        let until = now + chrono::Duration::days(1);
        let (text, buttons) = card::silenced_notice(
            &self.locales,
            lang,
            (&label, &session),
            self.config.limits.decline_streak,
            until,
            self.config.owner.timezone,
            now,
        );
        let digest = signed_digest(record);
        Body::new(
            Styled::plain(text),
            self.signed(buttons, &record.id, &digest),
        )
    }
}

/// A record's origin line: the labelled socket it was asked through, then the client's own
/// words (the card, the receipt and the silence notice draw the same).
pub(super) fn record_origin(record: &Record) -> Option<String> {
    card::shown_origin(
        record.listener.as_deref(),
        record
            .asked_part()
            .and_then(|asked| asked.origin.as_deref()),
    )
}

/// A mandate's origin line, from the record that asked for it ([`record_origin`]).
pub(super) fn mandate_origin(row: &MandateRow) -> Option<String> {
    card::shown_origin(row.listener.as_deref(), row.origin.as_deref())
}

/// The session a silence is for, as the owner knows it: its uid's user name (the uid alone when
/// it has none), and the origin of the socket it asked through when it has one.
pub(super) fn session_name(uid: u32, origin: Option<&str>) -> String {
    let user = match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    };
    match origin {
        Some(origin) => format!("{user} · {origin}"),
        None => user,
    }
}

/// The digest a record's buttons are signed with, in hex. Only a record refused before it had
/// one lacks it, and it never gets buttons: the empty text would verify no press.
pub(super) fn signed_digest(record: &Record) -> String {
    record
        .asked_part()
        .map_or_else(String::new, |asked| asked.digest.to_hex())
}

/// Builds the card's view of a record, its target and one-word field values compared with
/// `known`, and hands it to `render`.
pub(super) fn with_view<T>(
    consent: &Consent,
    record: &Record,
    known: &KnownTargets,
    lang: Language,
    expires_at: DateTime<Utc>,
    render: impl FnOnce(&CardView<'_>) -> T,
) -> T {
    let kind = record.kind().unwrap_or("");
    let category = consent.config.categories.get(kind);
    // A mandate request drawn without its terms, or a record refused early, shows no action.
    let action = record.action();
    let no_fields = BTreeMap::new();
    // The socket's label first, then the client's own words: as the intake measured it.
    let origin = record_origin(record);
    let shown = card::ActionShown {
        record_id: &record.id,
        kind,
        category,
        target: action.and_then(|action| action.target.as_deref()),
        text: action.and_then(|action| action.text.as_deref()),
        fields: action.map_or(&no_fields, |action| &action.fields),
        attachments: action
            .map_or(&[][..], |action| &action.attachments)
            .iter()
            .map(AttachmentView::from)
            .collect(),
        cost_usd: action.and_then(|action| action.cost_usd),
        urgent: action.is_some_and(|action| action.urgent),
        origin: origin.as_deref(),
        // As it was asked: a card says what the owner's Yes will do, whatever the config says
        // by the time it is drawn.
        agent_runs: action.is_some_and(|action| action.agent_runs),
        hook: action
            .and_then(|action| action.hook.as_ref())
            .map(|call| card::HookView {
                call,
                always: offers_always(category, record),
            }),
        lang,
        tz: consent.config.owner.timezone,
    };
    let derived = shown.derive(known);
    let view = CardView::for_action(&shown, &derived, expires_at);
    render(&view)
}

impl Drawer for Consent {
    fn draw(
        &self,
        record: &Record,
        known: &KnownTargets,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<DrawnCard, CardError> {
        let lang = self.language();
        let digest = signed_digest(record);
        if let Some(row) = record.mandate_request().and_then(|m| m.row.as_ref()) {
            let label = self.label(record, lang);
            let warnings = lookalike::warnings_each(&row.targets, known);
            let origin = mandate_origin(row);
            let view = self.mandate_view(row, (&label, origin.as_deref()), &warnings);
            // Checked, not only drawn: its targets may look like more known targets now than
            // when the intake measured it (a request held until morning).
            let rendered = card::mandate::try_render_mandate_card(
                &view,
                expires_at,
                &self.locales,
                lang,
                now,
            )?;
            return Ok(DrawnCard {
                parts: Vec::new(),
                captions: Vec::new(),
                text: rendered.card,
                buttons: self.signed(self.offered(rendered.buttons), &record.id, &digest),
            });
        }
        Ok(with_view(self, record, known, lang, expires_at, |view| {
            let rendered = card::render_card(view, &self.locales, lang, now);
            let captions = view
                .attachments
                .iter()
                .map(|a| card::attachment_caption(&self.locales, lang, a))
                .collect();
            DrawnCard {
                parts: rendered.parts,
                captions,
                text: rendered.card,
                buttons: self.signed(self.offered(rendered.buttons), &record.id, &digest),
            }
        }))
    }

    fn gate(&self) -> (Gate, chrono_tz::Tz) {
        (self.owner.gate(), self.config.owner.timezone)
    }

    fn owner_chat(&self) -> Option<i64> {
        self.owner().map(|owner| owner.id)
    }

    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.config.limits.card_ttl)
            .unwrap_or(chrono::Duration::minutes(15))
    }
}

/// Whether `record`'s card offers Always here: a hook's gate ask, approval-only as it was asked,
/// of a category that is not destructive now (the config decides the class, as the card's
/// title shows it). A press is judged on the same answer (`SubjectFacts::offers_always`).
pub(super) fn offers_always(
    category: Option<&consentd_core::config::Category>,
    record: &Record,
) -> bool {
    record.action().is_some_and(|action| {
        action.agent_runs
            && category
                .is_some_and(|c| consentd_core::exact::offers_always(c, action.hook.as_ref()))
    })
}

/// The known targets read, or none (only the mixed-script warnings then show) when they could not
/// be read: what the owner is told must not stand in the way of recording an outcome.
pub(super) fn known_or_none(
    read: Result<KnownTargets, consentd_store::StoreError>,
    record_id: &str,
) -> KnownTargets {
    read.unwrap_or_else(|error| {
        tracing::warn!(%error, id = %record_id, "cannot read the known targets");
        KnownTargets::default()
    })
}
