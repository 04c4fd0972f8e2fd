//! Which lane the sender serves next: a pure choice over what each lane has ready, so the order
//! (urgent notices, then cards, then the rest) and its exceptions are tested as a table.

use tokio::time::Instant;

use consentd_store::outbox::Lane;

/// What one lane has to offer at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LaneView {
    /// The lane has a queued row that is not held for later (quiet hours).
    pub has_row: bool,
    /// Its oldest row edits a card whose own row is still queued: it goes after that card.
    pub waits_for_card: bool,
    /// The lane's oldest row failed and is waiting out its backoff until then.
    pub backoff_until: Option<Instant>,
}

/// What the sender does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Send the oldest row of this lane.
    Send(Lane),
    /// Every lane with a row is waiting out a backoff: look again then (or when a row is queued).
    WaitUntil(Instant),
    /// Nothing is ready.
    Idle,
}

/// The highest lane whose oldest row may go at `now`. A lane in backoff keeps its order (its
/// failing row stays first) but does not hold up the others; a row that waits for a card goes
/// only once the card is sent, so it never jumps ahead of it, even while the card's lane is in
/// backoff.
pub(crate) fn choose(views: &[(Lane, LaneView)], now: Instant) -> Choice {
    let mut ordered: Vec<&(Lane, LaneView)> = views.iter().collect();
    ordered.sort_by_key(|(lane, _)| *lane);
    let mut wake: Option<Instant> = None;
    for (lane, view) in ordered {
        if !view.has_row || view.waits_for_card {
            continue;
        }
        match view.backoff_until {
            Some(until) if until > now => wake = Some(wake.map_or(until, |w| w.min(until))),
            _ => return Choice::Send(*lane),
        }
    }
    wake.map_or(Choice::Idle, Choice::WaitUntil)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use consentd_store::outbox::{Sound, What};

    fn ready() -> LaneView {
        LaneView {
            has_row: true,
            ..LaneView::default()
        }
    }

    fn backing_off(until: Instant) -> LaneView {
        LaneView {
            has_row: true,
            waits_for_card: false,
            backoff_until: Some(until),
        }
    }

    fn waiting_for_card() -> LaneView {
        LaneView {
            has_row: true,
            waits_for_card: true,
            backoff_until: None,
        }
    }

    #[test]
    fn a_rows_lane_follows_from_what_it_is() {
        let cases = [
            (What::Message, Sound::Urgent, Lane::Urgent),
            (What::Card, Sound::Gated, Lane::Card),
            (What::Card, Sound::Urgent, Lane::Card),
            (What::Card, Sound::Silent, Lane::Card),
            (What::Edit, Sound::Silent, Lane::Rest),
            (What::Edit, Sound::Urgent, Lane::Rest),
            (What::Message, Sound::Receipt, Lane::Rest),
            (What::Message, Sound::Gated, Lane::Rest),
            (What::Message, Sound::Silent, Lane::Rest),
        ];
        for (what, sound, lane) in cases {
            assert_eq!(Lane::of(what, sound), lane, "{what:?} sounding {sound:?}");
        }
    }

    #[test]
    fn the_highest_ready_lane_goes_first() {
        let now = Instant::now();
        let later = now + Duration::from_secs(4);
        let sooner = now + Duration::from_secs(2);
        let none = LaneView::default();
        let cases: Vec<(&str, [LaneView; 3], Choice)> = vec![
            ("nothing queued", [none, none, none], Choice::Idle),
            (
                "all three",
                [ready(), ready(), ready()],
                Choice::Send(Lane::Urgent),
            ),
            (
                "urgent behind cards",
                [ready(), ready(), none],
                Choice::Send(Lane::Urgent),
            ),
            (
                "urgent behind edits",
                [ready(), none, ready()],
                Choice::Send(Lane::Urgent),
            ),
            (
                "cards before the rest",
                [none, ready(), ready()],
                Choice::Send(Lane::Card),
            ),
            (
                "only the rest",
                [none, none, ready()],
                Choice::Send(Lane::Rest),
            ),
            (
                "urgent in backoff lets cards go",
                [backing_off(later), ready(), ready()],
                Choice::Send(Lane::Card),
            ),
            (
                "a backoff that has ended",
                [backing_off(now), ready(), none],
                Choice::Send(Lane::Urgent),
            ),
            (
                "cards in backoff let the rest go",
                [none, backing_off(later), ready()],
                Choice::Send(Lane::Rest),
            ),
            (
                "an edit waits for its card's backoff",
                [none, backing_off(later), waiting_for_card()],
                Choice::WaitUntil(later),
            ),
            (
                "an edit waits for its card even with cards ready",
                [none, ready(), waiting_for_card()],
                Choice::Send(Lane::Card),
            ),
            (
                "every lane in backoff: the soonest",
                [backing_off(later), backing_off(sooner), backing_off(later)],
                Choice::WaitUntil(sooner),
            ),
            (
                "a backoff with nothing else queued",
                [none, none, backing_off(sooner)],
                Choice::WaitUntil(sooner),
            ),
        ];
        for (name, [urgent, card, rest], expected) in cases {
            let views = [
                (Lane::Rest, rest),
                (Lane::Urgent, urgent),
                (Lane::Card, card),
            ];
            assert_eq!(choose(&views, now), expected, "{name}");
        }
    }
}
