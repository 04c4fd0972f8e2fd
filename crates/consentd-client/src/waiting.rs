//! A line's `waiting` in words: for a person reading `consentd ask`'s stderr, and for the model
//! behind `consent_ask`, which needs to know what to do next (keep waiting, stop retrying, ask
//! the owner another way) more than why.

use serde_json::Value;

use consentd_core::waiting::Waiting;

/// The `waiting` a daemon's line carries, when it carries one this build can read.
pub(crate) fn of(line: &Value) -> Option<Waiting> {
    serde_json::from_value(line.get("waiting")?.clone()).ok()
}

/// A time as a reader takes it in: the hour and minute, in UTC (the daemon's and the agent's
/// zones may differ; UTC is the one both can name).
const CLOCK: &str = "%H:%M UTC";

/// One sentence for a person watching the ask wait.
pub(crate) fn for_person(waiting: &Waiting) -> String {
    match waiting {
        Waiting::QuietHours { until } => format!(
            "the owner's quiet hours hold the card until {}",
            until.format(CLOCK)
        ),
        Waiting::Queued { ahead: 0 } => "the card is next to be sent to the owner".to_owned(),
        Waiting::Queued { ahead: 1 } => "the card is queued behind 1 other card".to_owned(),
        Waiting::Queued { ahead } => format!("the card is queued behind {ahead} other cards"),
        Waiting::OwnerUnreachable { since, detail } => format!(
            "the owner cannot be reached since {} ({detail})",
            since.format(CLOCK)
        ),
        Waiting::Shown { until } => format!(
            "the card is in the owner's chat, answerable until {}",
            until.format(CLOCK)
        ),
    }
}

/// One sentence a model can act on: what the wait means and what to do about it.
pub(crate) fn for_model(waiting: &Waiting) -> String {
    match waiting {
        Waiting::OwnerUnreachable { since, detail } => format!(
            "the owner cannot be reached since {}: do not retry; try later or ask the owner \
             another way ({detail})",
            since.format(CLOCK)
        ),
        Waiting::QuietHours { until } => format!(
            "the owner's quiet hours hold the card until {}: no answer comes before then; do \
             not ask again, carry on with other work",
            until.format(CLOCK)
        ),
        Waiting::Queued { .. } => {
            format!("{}: keep waiting; do not ask again", for_person(waiting))
        }
        Waiting::Shown { until } => format!(
            "the card is in the owner's chat until {}: keep waiting for their answer; do not \
             ask again",
            until.format(CLOCK)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_form_reads_as_a_sentence() {
        let cases = [
            (
                json!({"why":"quiet_hours","until":"2027-01-15T08:00:00.000Z"}),
                "the owner's quiet hours hold the card until 08:00 UTC",
                "no answer comes before then",
            ),
            (
                json!({"why":"queued","ahead":0}),
                "the card is next to be sent to the owner",
                "keep waiting",
            ),
            (
                json!({"why":"queued","ahead":12}),
                "the card is queued behind 12 other cards",
                "do not ask again",
            ),
            (
                json!({"why":"owner_unreachable","since":"2027-01-15T14:02:09.000Z",
                       "detail":"conflict: another program"}),
                "the owner cannot be reached since 14:02 UTC (conflict: another program)",
                "the owner cannot be reached since 14:02 UTC: do not retry; try later or ask \
                 the owner another way",
            ),
            (
                json!({"why":"shown","until":"2027-01-15T14:17:00.000Z"}),
                "the card is in the owner's chat, answerable until 14:17 UTC",
                "keep waiting for their answer",
            ),
        ];
        for (waiting, person, model) in cases {
            let line = json!({"v":1,"id":"r_1","status":"pending","waiting":waiting});
            let read = of(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(for_person(&read), person);
            assert!(for_model(&read).contains(model), "{}", for_model(&read));
        }
        assert_eq!(of(&json!({"status":"pending"})), None);
        assert_eq!(
            of(&json!({"waiting":{"why":"later"}})),
            None,
            "an unknown form is skipped"
        );
    }
}
