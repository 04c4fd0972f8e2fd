//! Journal events as the store's writes produce them: every event's name in one place
//! ([`EventName`]), an event with its members ([`JournalEvent`]), and what one write produced
//! besides its table changes ([`Effects`]). The line format they become is consentd-core's.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::state::RecordState;
use consentd_core::journal;

/// The name of a journal event: the one place the names are written (docs/CONTRACT-NOTES.md,
/// "Journal", has the newer ones, `decline_reason` among them). A line's `ev` is one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventName {
    Started,
    OwnerSet,
    Asked,
    CardShown,
    Granted,
    Declined,
    Expired,
    Denied,
    Used,
    Executed,
    Failed,
    OutcomeUnknown,
    PressRejected,
    MandateAsked,
    MandateOpen,
    MandateDeclined,
    MandateUse,
    MandateStop,
    MandateEnd,
    CategoryOn,
    CategoryOff,
    Settings,
    Silenced,
    Resumed,
    SummarySent,
    DeclineReason,
    Withdrawn,
    Approved,
    /// Refusals counted, not recorded one by one, in one window of the refusal budget.
    DeniedRepeats,
    SealStarted,
    SealRotated,
    /// A mandate suggested to the owner after their yeses to the same kind and target.
    MandateSuggested,
    /// An exact rule saved by the owner's Always here (docs/HOOKS.md).
    RuleSaved,
    /// A call passed by a saved exact rule, with no card.
    RuleUsed,
    /// An exact rule the owner removed.
    RuleRemoved,
    /// The owner's Raise today on a receipt: a mandate's limits lifted for the rest of a day.
    MandateRaised,
}

impl EventName {
    pub const ALL: [EventName; 36] = [
        EventName::Started,
        EventName::OwnerSet,
        EventName::Asked,
        EventName::CardShown,
        EventName::Granted,
        EventName::Declined,
        EventName::Expired,
        EventName::Denied,
        EventName::Used,
        EventName::Executed,
        EventName::Failed,
        EventName::OutcomeUnknown,
        EventName::PressRejected,
        EventName::MandateAsked,
        EventName::MandateOpen,
        EventName::MandateDeclined,
        EventName::MandateUse,
        EventName::MandateStop,
        EventName::MandateEnd,
        EventName::CategoryOn,
        EventName::CategoryOff,
        EventName::Settings,
        EventName::Silenced,
        EventName::Resumed,
        EventName::SummarySent,
        EventName::DeclineReason,
        EventName::Withdrawn,
        EventName::Approved,
        EventName::DeniedRepeats,
        EventName::SealStarted,
        EventName::SealRotated,
        EventName::MandateSuggested,
        EventName::RuleSaved,
        EventName::RuleUsed,
        EventName::RuleRemoved,
        EventName::MandateRaised,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Started => "started",
            EventName::OwnerSet => "owner_set",
            EventName::Asked => "asked",
            EventName::CardShown => "card_shown",
            EventName::Granted => "granted",
            EventName::Declined => "declined",
            EventName::Expired => "expired",
            EventName::Denied => "denied",
            EventName::Used => "used",
            EventName::Executed => "executed",
            EventName::Failed => "failed",
            EventName::OutcomeUnknown => "outcome_unknown",
            EventName::PressRejected => "press_rejected",
            EventName::MandateAsked => "mandate_asked",
            EventName::MandateOpen => "mandate_open",
            EventName::MandateDeclined => "mandate_declined",
            EventName::MandateUse => "mandate_use",
            EventName::MandateStop => "mandate_stop",
            EventName::MandateEnd => "mandate_end",
            EventName::CategoryOn => "category_on",
            EventName::CategoryOff => "category_off",
            EventName::Settings => "settings",
            EventName::Silenced => "silenced",
            EventName::Resumed => "resumed",
            EventName::SummarySent => "summary_sent",
            EventName::DeclineReason => "decline_reason",
            EventName::Withdrawn => "withdrawn",
            EventName::Approved => "approved",
            EventName::DeniedRepeats => "denied_repeats",
            EventName::SealStarted => journal::SEAL_STARTED,
            EventName::SealRotated => journal::SEAL_ROTATED,
            EventName::MandateSuggested => "mandate_suggested",
            EventName::RuleSaved => "rule_saved",
            EventName::RuleUsed => "rule_used",
            EventName::RuleRemoved => "rule_removed",
            EventName::MandateRaised => "mandate_raised",
        }
    }
}

/// A journal event waiting for its line: the event name and its own members, in order.
#[derive(Debug, Clone)]
pub struct JournalEvent {
    pub ev: EventName,
    pub members: Vec<(&'static str, Value)>,
}

impl JournalEvent {
    pub fn new(ev: EventName) -> Self {
        Self {
            ev,
            members: Vec::new(),
        }
    }

    /// Adds a member, or sets it again when the event has it already: a journal line holds each
    /// key once (`journal verify` refuses a line that holds one twice).
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        let value = value.into();
        match self.members.iter_mut().find(|(have, _)| *have == key) {
            Some((_, old)) => *old = value,
            None => self.members.push((key, value)),
        }
        self
    }
}

/// What one write transaction produced besides its table changes: journal events, records whose
/// state changed (for waiters), and whether it queued anything for Telegram.
#[derive(Debug)]
pub struct Effects {
    /// The transaction's time, as the clock gave it to the write.
    pub now: DateTime<Utc>,
    pub events: Vec<JournalEvent>,
    pub changed: Vec<(String, RecordState)>,
    pub queued: bool,
}

impl Effects {
    pub fn new(now: DateTime<Utc>) -> Self {
        Effects {
            now,
            events: Vec::new(),
            changed: Vec::new(),
            queued: false,
        }
    }

    pub fn push(&mut self, event: JournalEvent) {
        self.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_distinct_and_lower_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for name in EventName::ALL {
            let text = name.as_str();
            assert!(seen.insert(text), "{text} twice");
            assert!(
                !text.is_empty()
                    && text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    && !text.starts_with('_')
                    && !text.ends_with('_'),
                "{text}"
            );
        }
    }
}
