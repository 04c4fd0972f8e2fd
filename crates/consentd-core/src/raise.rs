//! Raise today: the receipt of the action that used up a mandate's count or money for the day
//! carries one signed button that lifts that mandate's limit for the rest of the owner's local
//! day to the next step. The mandate's own terms never change, and tomorrow is as granted: the
//! raise is a value kept for one day, which coverage reads beside the terms.
//!
//! Pure: the caller reads the facts from the store and applies what this decides. The steps are
//! the suggestions' ([`crate::suggest`]): 5 actions, $0.50; a raise is never above a ceiling,
//! and never more than once a day per mandate, so one press is the most a day can widen.

use rust_decimal::Decimal;

use crate::config::Limits;
use crate::mandate::{money_term, Ceilings, Usage};

/// Actions a day are offered, and raised, in steps of this many.
pub const ACTIONS_STEP: u32 = 5;
/// Money a day is offered, and raised, in steps of this many cents.
pub const USD_STEP_CENTS: i64 = 50;

/// The limits a mandate runs under for one day: its terms, or today's raise of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayLimits {
    pub actions_per_day: u32,
    /// `None`: no money term (a kind that never costs).
    pub usd_per_day: Option<Decimal>,
}

/// Why a receipt's Raise is not offered, or a press of it does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRaised {
    /// The mandate is stopped, ended or past its term: there is nothing to raise.
    Closed,
    /// The press came on another local day than the action's: a raise is for the rest of the
    /// day that was used up, never for the next one.
    OtherDay,
    /// The mandate was raised already today.
    AlreadyRaised,
    /// The action left room in both its count and its money.
    NotUsedUp,
    /// The used-up limit is at its ceiling already.
    AtCeiling,
}

impl NotRaised {
    /// A stable lowercase name, for logs and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            NotRaised::Closed => "closed",
            NotRaised::OtherDay => "other_day",
            NotRaised::AlreadyRaised => "already_raised",
            NotRaised::NotUsedUp => "not_used_up",
            NotRaised::AtCeiling => "at_ceiling",
        }
    }
}

/// What a receipt's Raise is judged on, as of the press (or of the drawing of the receipt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaiseFacts {
    /// The mandate is granted, not stopped, and in its term.
    pub open: bool,
    /// Now falls in the owner's local day the action was counted in.
    pub same_day: bool,
    /// The mandate's raise on that day, if it has one.
    pub raised: Option<DayLimits>,
    /// The mandate's own terms.
    pub granted: DayLimits,
    /// The mandate's use of that day as of the action, the action included.
    pub usage: Usage,
    /// What the action cost (zero when it cost nothing).
    pub cost: Decimal,
}

/// Whether the receipt's Raise stands, and if so the day's limits it lifts the mandate to.
/// Checked in the order of [`NotRaised`]'s variants.
pub fn offered(facts: &RaiseFacts, limits: &Limits) -> Result<DayLimits, NotRaised> {
    if !facts.open {
        return Err(NotRaised::Closed);
    }
    if !facts.same_day {
        return Err(NotRaised::OtherDay);
    }
    if facts.raised.is_some() {
        return Err(NotRaised::AlreadyRaised);
    }
    raised_limits(facts.granted, facts.usage, facts.cost, limits)
}

/// The limits one raise lifts `granted` to: the count to the next step above it when the count
/// is used up, the money to the next step above it when another action of this one's cost
/// would not fit; the other limit stays as granted. Never above a ceiling of the config in
/// force (which may be lower than when the mandate was granted).
pub fn raised_limits(
    granted: DayLimits,
    usage: Usage,
    cost: Decimal,
    limits: &Limits,
) -> Result<DayLimits, NotRaised> {
    let ceilings = Ceilings::of(limits).effective();
    let count_used = usage.actions >= granted.actions_per_day;
    let money = money_term(granted.usd_per_day);
    let money_used = money.is_some_and(|max| usage.usd >= max || usage.usd + cost > max);
    if !count_used && !money_used {
        return Err(NotRaised::NotUsedUp);
    }
    let mut raised = granted;
    if count_used {
        raised.actions_per_day =
            next_actions_step(granted.actions_per_day).min(ceilings.max_actions_per_day);
    }
    if let Some(max) = money.filter(|_| money_used) {
        raised.usd_per_day = Some(next_usd_step(max).min(ceilings.max_usd_per_day));
    }
    // Every used-up limit must rise: one stuck at its ceiling keeps the next ask a card anyway,
    // and a button that cannot help is not drawn.
    let count_rises = !count_used || raised.actions_per_day > granted.actions_per_day;
    let money_rises = !money_used || raised.usd_per_day > granted.usd_per_day;
    if count_rises && money_rises {
        Ok(raised)
    } else {
        Err(NotRaised::AtCeiling)
    }
}

/// The next multiple of [`ACTIONS_STEP`] above `n`.
pub fn next_actions_step(n: u32) -> u32 {
    (n / ACTIONS_STEP)
        .saturating_add(1)
        .saturating_mul(ACTIONS_STEP)
}

/// The next multiple of $0.50 above `usd`.
pub fn next_usd_step(usd: Decimal) -> Decimal {
    let step = Decimal::new(USD_STEP_CENTS, 2);
    ((usd / step).floor() + Decimal::ONE) * step
}

/// The first multiple of [`ACTIONS_STEP`] at or above `n`, and never below one step.
pub fn actions_step_at_or_above(n: u32) -> u32 {
    n.div_ceil(ACTIONS_STEP).max(1).saturating_mul(ACTIONS_STEP)
}

/// The first multiple of $0.50 at or above `usd`, and never below one step.
pub fn usd_step_at_or_above(usd: Decimal) -> Decimal {
    let step = Decimal::new(USD_STEP_CENTS, 2);
    (usd / step).ceil().max(Decimal::ONE) * step
}

#[cfg(test)]
#[path = "raise_tests.rs"]
mod tests;
