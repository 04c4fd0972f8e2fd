//! The record state machine: the states and the only legal steps between them.
//!
//! The same table is in the schema (`state_transitions`), enforced by a trigger; a test keeps the
//! two in agreement.

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordState {
    /// Stored; no card shown yet.
    Pending,
    /// The card is in the owner's chat.
    CardShown,
    /// The owner said yes (or a mandate covered it); not yet claimed.
    Granted,
    Declined,
    Expired,
    /// Refused before a card, or at the claim (the category was turned off).
    Refused,
    /// Claimed: the command may have started. Never re-run from here.
    Running,
    Executed,
    Failed,
    OutcomeUnknown,
    /// The session took its open ask back before the owner answered: nothing was done.
    Withdrawn,
    /// An approval-only category's yes (the owner's, or a mandate's): the agent runs it itself;
    /// consentd runs nothing.
    Approved,
}

impl RecordState {
    pub const ALL: [RecordState; 12] = [
        RecordState::Pending,
        RecordState::CardShown,
        RecordState::Granted,
        RecordState::Declined,
        RecordState::Expired,
        RecordState::Refused,
        RecordState::Running,
        RecordState::Executed,
        RecordState::Failed,
        RecordState::OutcomeUnknown,
        RecordState::Withdrawn,
        RecordState::Approved,
    ];

    /// Every legal step. A granted record ends expired when it is claimed only after its ttl
    /// (the daemon stopped between the yes and the claim): a yes is for the card's window.
    /// Only an open record is withdrawn, and an approval-only category's yes ends it
    /// `approved` straight from its card (or, under a mandate, from pending): it never passes
    /// through `granted`, so nothing can claim or run it.
    pub(crate) const TRANSITIONS: [(RecordState, RecordState); 18] = [
        (RecordState::Pending, RecordState::CardShown),
        (RecordState::Pending, RecordState::Granted),
        (RecordState::Pending, RecordState::Expired),
        (RecordState::Pending, RecordState::Refused),
        (RecordState::CardShown, RecordState::Granted),
        (RecordState::CardShown, RecordState::Declined),
        (RecordState::CardShown, RecordState::Expired),
        (RecordState::CardShown, RecordState::Refused),
        (RecordState::Granted, RecordState::Running),
        (RecordState::Granted, RecordState::Refused),
        (RecordState::Granted, RecordState::Expired),
        (RecordState::Running, RecordState::Executed),
        (RecordState::Running, RecordState::Failed),
        (RecordState::Running, RecordState::OutcomeUnknown),
        (RecordState::Pending, RecordState::Withdrawn),
        (RecordState::CardShown, RecordState::Withdrawn),
        (RecordState::Pending, RecordState::Approved),
        (RecordState::CardShown, RecordState::Approved),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Pending => "pending",
            RecordState::CardShown => "card_shown",
            RecordState::Granted => "granted",
            RecordState::Declined => "declined",
            RecordState::Expired => "expired",
            RecordState::Refused => "refused",
            RecordState::Running => "running",
            RecordState::Executed => "executed",
            RecordState::Failed => "failed",
            RecordState::OutcomeUnknown => "outcome_unknown",
            RecordState::Withdrawn => "withdrawn",
            RecordState::Approved => "approved",
        }
    }

    pub fn parse(text: &str) -> Option<RecordState> {
        RecordState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }

    pub fn can_become(self, next: RecordState) -> bool {
        RecordState::TRANSITIONS.contains(&(self, next))
    }

    /// A final state never changes again.
    pub fn is_final(self) -> bool {
        !RecordState::TRANSITIONS
            .iter()
            .any(|(from, _)| *from == self)
    }

    /// Open asks count against `max_pending` and can be joined by the same digest.
    pub fn is_open(self) -> bool {
        matches!(self, RecordState::Pending | RecordState::CardShown)
    }
}

impl std::fmt::Display for RecordState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for state in RecordState::ALL {
            assert_eq!(RecordState::parse(state.as_str()), Some(state));
        }
        assert_eq!(RecordState::parse("done"), None);
    }

    #[test]
    fn final_states_are_the_outcomes() {
        let finals: Vec<_> = RecordState::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(
            finals,
            [
                RecordState::Declined,
                RecordState::Expired,
                RecordState::Refused,
                RecordState::Executed,
                RecordState::Failed,
                RecordState::OutcomeUnknown,
                RecordState::Withdrawn,
                RecordState::Approved
            ]
        );
    }

    #[test]
    fn running_is_reached_only_from_granted() {
        for state in RecordState::ALL {
            assert_eq!(
                state.can_become(RecordState::Running),
                state == RecordState::Granted,
                "{state}"
            );
        }
    }
}
