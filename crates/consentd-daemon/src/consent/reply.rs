//! A No can carry a reason. A plain No answers the card and the waiting session at once.
//! "No, and say why…" answers the card at once too (only a press answers), and the declined
//! card's edit then invites a reply: the owner's reply to that card's message, within
//! `limits.decline_reason_wait` of the press (the record's `reason_until`), reaches the session
//! as the `message` of its final `declined` line (the intake holds that line back for as long)
//! and stays on the record for `status`. The reply must show all it holds (no hidden scalars,
//! NFC); it is journaled by its hash alone and never logged.

use chrono::{DateTime, Utc};

use super::press::DRAWING_PATIENCE;
use super::queue::{say, text_body};
use super::{Consent, Owner, Said};
use consentd_core::card::owner::{self, ReasonReply};
use consentd_core::card::{self, Outcome};
use consentd_core::refusal::visible::{self, Unshowable};
use consentd_core::styled::Styled;
use consentd_store::outbox::Sound;
use consentd_store::{Record, RecordState, StoreError};

/// What a reply to a card comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Judged {
    /// The No's reason: kept, and sent to the session.
    Reason,
    /// Not kept; the owner is told why.
    Say(ReasonReply),
    /// Not about a card that can take a reason: read as any stray message.
    Stray,
}

/// The reply `text` to the card of `record` (if the message replied to is a card), judged at
/// `now` against the wait its No started. Pure: every fact comes in.
pub(super) fn judge(record: Option<&Record>, text: &str, now: DateTime<Utc>) -> Judged {
    let Some(record) = record else {
        return Judged::Stray;
    };
    match record.state {
        RecordState::Pending | RecordState::CardShown => {
            return Judged::Say(ReasonReply::NotAnAnswer)
        }
        RecordState::Declined => {}
        _ => return Judged::Stray,
    }
    let Some(asked) = record.asked_part() else {
        return Judged::Stray;
    };
    // A plain No: its answer went at once, without a reason.
    let Some(deadline) = asked.reason_until else {
        return Judged::Say(ReasonReply::NotAsked);
    };
    if asked.decline_reason.is_some() {
        return Judged::Say(ReasonReply::Already);
    }
    if now >= deadline {
        return Judged::Say(ReasonReply::Late);
    }
    match visible::check_owner_words(text) {
        Ok(()) => Judged::Reason,
        Err(Unshowable::NotNfc { position, .. }) => Judged::Say(ReasonReply::NotNfc { position }),
        Err(
            Unshowable::Invisible {
                code_point,
                name,
                position,
                ..
            }
            | Unshowable::HiddenTags {
                code_point,
                name,
                position,
                ..
            },
        ) => Judged::Say(ReasonReply::Hidden {
            char: format!("U+{:04X} {name}", u32::from(code_point)),
            position,
        }),
        // The owner's words get no spacing, mark or cluster rules (they are the owner's own, sent to the
        // agent, not shown to them as someone else's); kept for completeness of the match.
        Err(
            Unshowable::Spacing { .. }
            | Unshowable::StackedMarks { .. }
            | Unshowable::RepeatedMark { .. }
            | Unshowable::JoinedConsonants { .. }
            | Unshowable::LongCluster { .. },
        ) => Judged::Reason,
    }
}

impl Consent {
    /// The declined card's edit: the outcome and who decided, and — after "No, and say why…",
    /// `reason_until` — the line that invites a reply with the reason, until when in the
    /// owner's time.
    pub(super) async fn declined_text(
        &self,
        record: &Record,
        decided_by: &str,
        reason_until: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Styled {
        let lang = self.language();
        let reply_by = reason_until.map(|until| {
            card::local_time(&self.locales, lang, until, self.config.owner.timezone, now)
        });
        let outcome = Outcome {
            state: RecordState::Declined.as_str(),
            decided_by: Some(decided_by.to_owned()),
            result: record.action().and_then(|action| action.result.as_deref()),
            reason: record.reason.as_deref(),
            reply_by,
        };
        self.outcome_text_with(record, outcome, now).await
    }

    /// The record whose card is message `message_id`. A message not known yet may be a card
    /// whose send is being recorded this moment (Telegram has it, the daemon is still writing
    /// its id down): then, as for a press, the reply waits briefly for that to finish.
    async fn card_replied_to(&self, message_id: i64) -> Result<Option<Record>, StoreError> {
        let read = || self.store.record_of_card(message_id);
        let record = read().await?;
        if record.is_some() {
            return Ok(record);
        }
        let _sent = tokio::time::timeout(DRAWING_PATIENCE, self.drawing.lock()).await;
        read().await
    }

    /// The owner's message that is no command, in reply to another message: the reason for a
    /// No when it answers a declined card in time; otherwise what it comes to is told in one
    /// line.
    pub(super) async fn owner_reply(
        &self,
        owner: Owner,
        said: Said,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let record = match said.reply_to {
            Some(message_id) => self.card_replied_to(message_id).await?,
            None => None,
        };
        let lang = owner.language;
        let chat = said.chat.id;
        let line = match judge(record.as_ref(), &said.text, now) {
            Judged::Reason => {
                let id = record.map(|r| r.id).unwrap_or_default();
                let reply = text_body(owner::reason_reply(&self.locales, lang, &ReasonReply::Sent));
                let reason = said.text;
                let kept = self
                    .store
                    .note_decline_reason(
                        consentd_store::writes::DeclineReason {
                            id,
                            reason,
                            by: owner.id,
                            next_offset: next,
                            reply: (chat, reply),
                        },
                        now,
                    )
                    .await?;
                if !kept {
                    tracing::warn!("a No's reason found its record changed; not kept");
                }
                return Ok(());
            }
            Judged::Say(reply) => owner::reason_reply(&self.locales, lang, &reply),
            Judged::Stray => owner::help_pointer(&self.locales, lang),
        };
        let reply = say(chat, line, Sound::Silent);
        self.store
            .tell(consentd_store::Tell::messages(Some(next), vec![reply]), now)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 3, 12, 0, 0).unwrap() + chrono::Duration::seconds(seconds)
    }

    /// A declined action's record: what a reason replies to, declined with "No, and say why…"
    /// at `at(0)` with a minute's wait. Its digest is any digest; the judgment reads only the
    /// state, the wait's end and the reason.
    fn record(state: RecordState, reason: Option<&str>) -> Record {
        record_until(state, reason, Some(at(60)))
    }

    fn record_until(
        state: RecordState,
        reason: Option<&str>,
        reason_until: Option<DateTime<Utc>>,
    ) -> Record {
        let asked = consentd_store::Asked {
            kind: "publish_x".into(),
            digest: consentd_core::digest::Sha256Hash::of(b"publish_x"),
            origin: None,
            shown_at: None,
            expires_at: None,
            shown_monotonic: None,
            decided_at: Some(at(0)),
            decided_by: Some(42),
            decided_by_name: None,
            decline_reason: reason.map(str::to_owned),
            reason_until,
        };
        Record {
            seq: 1,
            id: "r_0123456789abcdef0123".into(),
            peer_uid: 1000,
            listener: None,
            state,
            created_at: at(-100),
            asked_monotonic: None,
            reason: None,
            message: None,
            finished_at: None,
            body: consentd_store::Body::Action(Box::new(consentd_store::ActionRecord {
                asked,
                target: None,
                text: None,
                fields: Default::default(),
                cost_usd: None,
                attachments: Vec::new(),
                idempotency_key: None,
                urgent: false,
                agent_runs: false,
                hook: None,
                mandate_id: None,
                mandate_use: None,
                result: None,
            })),
        }
    }

    /// The reply `text` to `record`'s card, `seconds` after a No at `at(0)`.
    fn check(record: Option<Record>, text: &str, seconds: i64, expected: Judged) {
        let judged = judge(record.as_ref(), text, at(seconds));
        assert_eq!(judged, expected, "{text:?} after {seconds}s");
    }

    #[test]
    fn a_reply_is_a_reason_only_to_a_card_declined_asking_why_in_time_and_visible() {
        let declined = || Some(record(RecordState::Declined, None));
        let say = Judged::Say;
        check(declined(), "Use the new logo", 30, Judged::Reason);
        check(declined(), "No.\n\nTry  tomorrow\n", 1, Judged::Reason);
        check(declined(), "late", 60, say(ReasonReply::Late));
        let plain = Some(record_until(RecordState::Declined, None, None));
        check(plain, "why", 1, say(ReasonReply::NotAsked));
        let given = Some(record(RecordState::Declined, Some("first")));
        check(given, "second", 1, say(ReasonReply::Already));
        check(None, "hello", 1, Judged::Stray);
        let open = Some(record(RecordState::CardShown, None));
        check(open, "yes", 1, say(ReasonReply::NotAnAnswer));
        let done = Some(record(RecordState::Executed, None));
        check(done, "ok", 1, Judged::Stray);
        let hidden = |char: &str, position| {
            say(ReasonReply::Hidden {
                char: char.to_owned(),
                position,
            })
        };
        let space = hidden("U+200B ZERO WIDTH SPACE", 3);
        check(declined(), "no\u{200B}pe", 1, space);
        let tag = hidden("U+E0041 TAG LATIN CAPITAL LETTER A", 3);
        check(declined(), "ok\u{E0041}", 1, tag);
        let nfc = say(ReasonReply::NotNfc { position: 4 });
        check(declined(), "cafe\u{301}", 1, nfc);
    }
}
