//! Suggested mandates: when the owner keeps saying yes to the same kind and target, consentd
//! offers the bounded mandate that would have covered those yeses, instead of the next card.
//! Pure: the caller reads the history from the store and applies what this decides.
//!
//! Policy, checked in this order, the first that holds giving its reason:
//!
//! 1. `off` — `[limits] suggest_mandate_after` is zero.
//! 2. `no_mandates` — the category never takes a mandate (destructive, or not `mandate_ok`).
//! 3. `kind_off` — the owner switched the kind off: a mandate request for it would be refused.
//! 4. `too_few` — fewer than `suggest_mandate_after` of the owner's yeses to this kind and
//!    target in the last 7 days, the one just run included.
//! 5. `covered` — an open mandate already names this kind and target: its limits are what sent
//!    the card, and a second mandate beside it would double them behind the owner's back.
//! 6. `repeated` — a suggestion for this kind and target (for any uid) was made, or its card
//!    answered, in the last 7 days. Granted, declined or ignored, the owner has seen it; asking
//!    again within the week is nagging.
//! 7. `two_a_day` — two suggestions (for anything) were already made today, in the owner's
//!    day. A second one the same day is for another kind or target: one for the same was made
//!    today, so rule 6 holds first.
//! 8. `terms` — the terms would not pass the checks every mandate request meets (a target with
//!    a wildcard, or a look-alike of another, say): nothing is offered that could not be asked.
//!
//! The same checks but the history's run again when the owner presses the suggestion's button
//! ([`still_offered`]): a kind switched off since, ceilings lowered since, or a mandate granted
//! for it since, and the button opens nothing.
//!
//! The terms offered cover the week with room to grow ([`headroom`]): that target (none for a
//! kind without one), the longest term the config allows (at most 7 days), and the busiest local
//! day's count and money in the last 7 days times 1.5, rounded up to a step — a multiple of 5
//! actions, of $0.50 — and never above a ceiling. A kind that never costs gets no money term.
//! The suggestion says what they are based on: the busiest day's count (and money).

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;
use std::collections::BTreeMap;

use crate::config::{Category, Limits};
use crate::mandate::{self, Ceilings, MandateRequest};
use crate::raise;

/// How far back approvals count, and how long a suggestion is not made again.
pub const WINDOW_DAYS: i64 = 7;
/// How many suggestions (for different kinds or targets) a local day may bring.
pub const SUGGESTIONS_A_DAY: usize = 2;

/// One of the owner's yeses to this kind and target: when it was asked and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Approval {
    pub asked_at: DateTime<Utc>,
    pub cost_usd: Option<Decimal>,
}

/// What the store knows of this kind and target, as of now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The owner's yeses in the last [`WINDOW_DAYS`], the one just run included.
    pub approvals: Vec<Approval>,
    /// An open mandate names this kind and target (or, for a kind without one, the kind).
    pub covered_by_open_mandate: bool,
    /// When the last suggestion for this kind and target (any uid's) was made, or its card
    /// answered, whichever is later.
    pub last_suggested: Option<DateTime<Utc>>,
    /// When the last two suggestions for anything were made (fewer when fewer were).
    pub recent_suggested_any: Vec<DateTime<Utc>>,
}

/// Why no suggestion is made; see the module's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSuggested {
    Off,
    NoMandates,
    KindOff,
    TooFew { approvals: u32 },
    Covered,
    Repeated,
    TwoADay,
    Terms(String),
}

impl NotSuggested {
    /// A stable lowercase name, for logs and tests.
    pub fn as_str(&self) -> &'static str {
        match self {
            NotSuggested::Off => "off",
            NotSuggested::NoMandates => "no_mandates",
            NotSuggested::KindOff => "kind_off",
            NotSuggested::TooFew { .. } => "too_few",
            NotSuggested::Covered => "covered",
            NotSuggested::Repeated => "repeated",
            NotSuggested::TwoADay => "two_a_day",
            NotSuggested::Terms(_) => "terms",
        }
    }
}

/// A suggestion to make: the mandate request its button opens (the caller sets its `reason`
/// in the owner's words before taking its digest), how many yeses it stands for, and the busiest
/// day's count and money it was drawn from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub request: MandateRequest,
    pub approvals: u32,
    pub busiest_actions: u32,
    pub busiest_usd: Decimal,
}

/// What to say about one kind and target just approved and run.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub category: &'a Category,
    pub target: Option<&'a str>,
    /// The kind is on (the owner's switch, else the config's `enabled`).
    pub enabled: bool,
}

/// Decides whether the owner's latest yes to `asked` is followed by a suggestion.
pub fn decide(
    asked: Asked<'_>,
    limits: &Limits,
    history: &History,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Offer, NotSuggested> {
    let after = limits.suggest_mandate_after;
    let rules = kind_rules(asked, limits)?;
    let since = now - Duration::days(WINDOW_DAYS);
    let recent: Vec<&Approval> = history
        .approvals
        .iter()
        .filter(|a| a.asked_at > since && a.asked_at <= now)
        .collect();
    let approvals = u32::try_from(recent.len()).unwrap_or(u32::MAX);
    if approvals < after {
        return Err(NotSuggested::TooFew { approvals });
    }
    if history.covered_by_open_mandate {
        return Err(NotSuggested::Covered);
    }
    if history.last_suggested.is_some_and(|at| at > since) {
        return Err(NotSuggested::Repeated);
    }
    let (today, _) = mandate::local_day(now, tz);
    let made_today = history
        .recent_suggested_any
        .iter()
        .filter(|at| **at >= today)
        .count();
    if made_today >= SUGGESTIONS_A_DAY {
        return Err(NotSuggested::TwoADay);
    }
    let (busiest_actions, busiest_usd) = busiest_day(&recent, tz);
    let (actions_per_day, usd_per_day) = headroom(busiest_actions, busiest_usd, limits);
    let request = MandateRequest {
        kind: asked.category.name.clone(),
        targets: asked.target.map(str::to_owned).into_iter().collect(),
        days: Ceilings::of(limits).effective().max_days,
        usd_per_day: rules.costs.then_some(usd_per_day),
        actions_per_day,
        reason: None,
        origin: None,
    };
    still_offered(&request, asked, limits)?;
    Ok(Offer {
        request,
        approvals,
        busiest_actions,
        busiest_usd,
    })
}

/// Whether a suggestion's request may still be opened, as the owner presses its button:
/// suggestions are still on, the kind still takes a mandate and is on, and the terms pass what a session's request for them
/// would meet now — the ceilings of the config in force (which may be lower than when it was
/// made), the targets' rules and the look-alike check between them.
pub fn still_offered(
    request: &MandateRequest,
    asked: Asked<'_>,
    limits: &Limits,
) -> Result<(), NotSuggested> {
    let rules = kind_rules(asked, limits)?;
    let ceilings = Ceilings::of(limits);
    mandate::check_terms(request, &rules, &ceilings)
        .map_err(|refusal| NotSuggested::Terms(refusal.message))?;
    if let Some(message) = crate::lookalike::mandate_targets_refusal(&request.targets) {
        return Err(NotSuggested::Terms(message));
    }
    Ok(())
}

/// The first three rules, which need no history: suggestions on, a kind that takes a mandate,
/// switched on. The caller checks them before it reads the history.
pub fn may_suggest(asked: Asked<'_>, limits: &Limits) -> Result<(), NotSuggested> {
    kind_rules(asked, limits).map(|_| ())
}

/// The first three rules: suggestions on, a kind that takes a mandate, switched on.
fn kind_rules(asked: Asked<'_>, limits: &Limits) -> Result<mandate::KindRules, NotSuggested> {
    if limits.suggest_mandate_after == 0 {
        return Err(NotSuggested::Off);
    }
    let rules = mandate::KindRules::of(asked.category);
    if rules.destructive || !rules.mandate_ok {
        return Err(NotSuggested::NoMandates);
    }
    if !asked.enabled {
        return Err(NotSuggested::KindOff);
    }
    Ok(rules)
}

/// The busiest local day's count of yeses and their money (each the day's highest, which may
/// be two different days).
fn busiest_day(approvals: &[&Approval], tz: Tz) -> (u32, Decimal) {
    let mut days: BTreeMap<DateTime<Utc>, (u32, Decimal)> = BTreeMap::new();
    for approval in approvals {
        let (start, _) = mandate::local_day(approval.asked_at, tz);
        let day = days.entry(start).or_default();
        day.0 += 1;
        day.1 += approval.cost_usd.unwrap_or_default();
    }
    days.values().fold((0, Decimal::ZERO), |(count, usd), day| {
        (count.max(day.0), usd.max(day.1))
    })
}

/// The day's limits a suggestion offers for a busiest day of `busiest_actions` and
/// `busiest_usd`: each times 1.5 (room for a busier day than any seen, so the first such day is
/// not a card), rounded up to a step (5 actions, $0.50; never less than one step), and never
/// above the config's ceilings. A busiest day of 4 is offered 10; of 3, 5; of 10, 15.
pub fn headroom(busiest_actions: u32, busiest_usd: Decimal, limits: &Limits) -> (u32, Decimal) {
    let ceilings = Ceilings::of(limits).effective();
    let actions = busiest_actions.saturating_mul(3).div_ceil(2);
    let usd = busiest_usd * Decimal::new(15, 1);
    (
        raise::actions_step_at_or_above(actions).min(ceilings.max_actions_per_day),
        raise::usd_step_at_or_above(usd).min(ceilings.max_usd_per_day),
    )
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;
