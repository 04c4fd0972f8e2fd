//! Mandates: the owner's standing permissions (docs/PROTOCOL.md, "Mandates").
//!
//! This is the pure core: checking a session's requested terms against the
//! ceilings, computing a mandate's end and the owner's local day, and deciding
//! whether one action falls inside an open mandate. Nothing here reads the
//! clock, the database or the loaded config; callers pass everything in, so every
//! rule can be tested at its exact boundary.
//!
//! Money is `rust_decimal::Decimal` throughout, never floats: a day's money adds up to the cent.

use chrono::{DateTime, NaiveDate, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;
use std::fmt;

use crate::config::limits;

/// The ceilings in force (the config may only lower the built-in ones): days, dollars a
/// day, actions a day.
///
/// `check_terms` also clamps each value to the built-in ceiling, so a config loader
/// that failed to reject a raised ceiling still cannot widen a mandate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ceilings {
    pub(crate) max_days: u32,
    pub(crate) max_usd_per_day: Decimal,
    pub(crate) max_actions_per_day: u32,
}

impl Ceilings {
    /// The built-in ceilings, for a config that lowers none of them: the `[limits]` table's.
    pub(crate) fn spec() -> Self {
        Ceilings {
            max_days: limits::MANDATE_MAX_DAYS.ceiling_count(),
            max_usd_per_day: limits::MANDATE_MAX_USD_PER_DAY.ceiling_money(),
            max_actions_per_day: limits::MANDATE_MAX_ACTIONS_PER_DAY.ceiling_count(),
        }
    }

    /// The config's ceilings.
    pub(crate) fn of(limits: &crate::config::Limits) -> Self {
        Ceilings {
            max_days: limits.mandate_max_days,
            max_usd_per_day: limits.mandate_max_usd_per_day,
            max_actions_per_day: limits.mandate_max_actions_per_day,
        }
    }

    /// The ceilings actually applied: the config's, never above the built-in ones.
    pub(crate) fn effective(&self) -> Ceilings {
        let spec = Ceilings::spec();
        Ceilings {
            max_days: self.max_days.min(spec.max_days),
            max_usd_per_day: self.max_usd_per_day.min(spec.max_usd_per_day),
            max_actions_per_day: self.max_actions_per_day.min(spec.max_actions_per_day),
        }
    }
}

/// What a session asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateRequest {
    pub kind: String,
    /// Empty for a kind with no target: the mandate then covers that kind for any use.
    pub targets: Vec<String>,
    pub days: u32,
    /// `None` for a kind that never costs money: no money term. A money term is never zero
    /// once the terms are checked (zero is read as none for such a kind, refused for others).
    pub usd_per_day: Option<Decimal>,
    pub actions_per_day: u32,
    pub reason: Option<String>,
    /// The client's one line on where the request comes from, when it sent one.
    pub origin: Option<String>,
}

impl MandateRequest {
    /// The SHA-256 of the request's canonical JSON (RFC 8785):
    /// `{"v":1,"op":"mandate","kind","targets","days","usd_per_day","actions_per_day","reason"}`
    /// with the amount at two decimals. A Grant or Decline is signed for exactly these terms,
    /// and a declined request is remembered by it.
    ///
    /// A mandate with no targets has `"targets":[]`, and one with no money term (absent or
    /// zero, which mean the same) `"usd_per_day":null`. Neither could be granted before, so
    /// every request that could has the digest it always had. An `origin` is a member only when
    /// the request carries one, so a request without it keeps its digest too.
    pub fn digest(&self) -> crate::digest::Sha256Hash {
        #[derive(serde::Serialize)]
        struct Canonical<'a> {
            v: u64,
            op: &'a str,
            kind: &'a str,
            targets: &'a [String],
            days: u32,
            usd_per_day: Option<String>,
            actions_per_day: u32,
            reason: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            origin: Option<&'a str>,
        }
        let canonical = Canonical {
            v: 1,
            op: "mandate",
            kind: &self.kind,
            targets: &self.targets,
            days: self.days,
            usd_per_day: money_term(self.usd_per_day).map(crate::action::format_usd),
            actions_per_day: self.actions_per_day,
            reason: self.reason.as_deref(),
            origin: self.origin.as_deref(),
        };
        // Strings, integers and arrays of strings always serialize.
        let json = serde_jcs::to_string(&canonical).unwrap_or_default();
        crate::digest::Sha256Hash::of(json.as_bytes())
    }
}

/// A money term as it binds: an amount of zero is no money term.
pub fn money_term(usd_per_day: Option<Decimal>) -> Option<Decimal> {
    usd_per_day.filter(|usd| !usd.is_zero())
}

/// What the category allows (from the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KindRules {
    pub(crate) exists: bool,
    pub(crate) mandate_ok: bool,
    pub(crate) destructive: bool,
    /// Its asks carry a target (`target` is required or optional), so its mandates name them.
    pub(crate) targeted: bool,
    /// Its asks can cost money (`cost` is not "none"), so its mandates bound the day's money.
    pub(crate) costs: bool,
}

impl KindRules {
    /// What a configured category allows.
    pub(crate) fn of(category: &crate::config::Category) -> Self {
        use crate::config::{Class, Cost, Presence};
        KindRules {
            exists: true,
            mandate_ok: category.mandate_ok,
            destructive: category.class == Class::Destructive,
            targeted: category.target != Presence::None,
            costs: category.cost != Cost::None,
        }
    }
}

/// Why requested terms were refused. `term` is one of `"kind"`, `"targets"`,
/// `"days"`, `"usd_per_day"`, `"actions_per_day"`; `message` is English, names
/// the term first and has no trailing period.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct TermsRefusal {
    pub(crate) term: &'static str,
    pub(crate) message: String,
}

fn refuse(term: &'static str, message: String) -> Result<(), TermsRefusal> {
    Err(TermsRefusal { term, message })
}

/// Characters that would let one target stand for many (glob and SQL LIKE).
const WILDCARDS: [char; 3] = ['*', '?', '%'];

/// Checks the terms (docs/PROTOCOL.md, "Mandates"): days `1..=max_days`, `actions_per_day`
/// `1..=max`; kind exists,
/// is `mandate_ok` and is never destructive; targets and money as the kind has them:
///
/// - a kind with a target names its targets (non-empty list, no empty or whitespace-only
///   target, no wildcard characters `*`, `?`, `%`, no duplicates — compared exactly); a kind
///   with no target names none, and its mandate covers that kind for any use;
/// - a kind that can cost has `usd_per_day` with `0 < d <= max` and at most 2 decimals; a kind
///   that never costs has none (absent or zero).
///
/// Reports the first failing term in the order kind, targets, days, usd_per_day,
/// actions_per_day.
///
/// "At most 2 decimals" is judged on the value, not on how it was written:
/// `1.50` and `1.500` are the same amount and both pass; `0.015` does not.
pub(crate) fn check_terms(
    request: &MandateRequest,
    rules: &KindRules,
    ceilings: &Ceilings,
) -> Result<(), TermsRefusal> {
    let ceilings = ceilings.effective();
    let kind = &request.kind;

    if !rules.exists {
        return refuse("kind", format!("kind: {kind:?} is not a known category"));
    }
    // Checked before mandate_ok: a destructive category must never get a
    // mandate even if its config (wrongly) says mandate_ok.
    if rules.destructive {
        return refuse(
            "kind",
            format!("kind: {kind:?} is destructive and never allows mandates"),
        );
    }
    if !rules.mandate_ok {
        return refuse("kind", format!("kind: {kind:?} does not allow mandates"));
    }

    check_targets(request, rules.targeted)?;

    let days = request.days;
    if days == 0 {
        return refuse("days", "days: 0 is under the minimum of 1".to_string());
    }
    if days > ceilings.max_days {
        return refuse(
            "days",
            format!("days: {days} is over the ceiling of {}", ceilings.max_days),
        );
    }

    check_money(request, rules.costs, ceilings.max_usd_per_day)?;

    let actions = request.actions_per_day;
    if actions == 0 {
        return refuse(
            "actions_per_day",
            "actions_per_day: 0 is under the minimum of 1".to_string(),
        );
    }
    if actions > ceilings.max_actions_per_day {
        return refuse(
            "actions_per_day",
            format!(
                "actions_per_day: {actions} is over the ceiling of {}",
                ceilings.max_actions_per_day
            ),
        );
    }

    Ok(())
}

/// Named targets for a kind with a target; none for a kind without one, whose asks carry no
/// target a name could match.
fn check_targets(request: &MandateRequest, targeted: bool) -> Result<(), TermsRefusal> {
    let kind = &request.kind;
    if !targeted {
        if request.targets.is_empty() {
            return Ok(());
        }
        return refuse(
            "targets",
            format!("targets: {kind:?} takes no target, so its mandate names none"),
        );
    }
    if request.targets.is_empty() {
        return refuse(
            "targets",
            format!("targets: at least one named target is required, as {kind:?} takes a target"),
        );
    }
    for (i, target) in request.targets.iter().enumerate() {
        if target.trim().is_empty() {
            return refuse("targets", format!("targets: target {} is empty", i + 1));
        }
        if let Some(c) = target.chars().find(|c| WILDCARDS.contains(c)) {
            return refuse(
                "targets",
                format!("targets: {target:?} contains the wildcard character {c:?}"),
            );
        }
        if request.targets[..i].contains(target) {
            return refuse("targets", format!("targets: {target:?} is named twice"));
        }
    }
    Ok(())
}

/// A positive amount within the ceiling for a kind that can cost; none (absent or zero) for a
/// kind that never costs, whose card and receipts then show no money at all.
fn check_money(
    request: &MandateRequest,
    costs: bool,
    max_usd_per_day: Decimal,
) -> Result<(), TermsRefusal> {
    let kind = &request.kind;
    let usd = match (request.usd_per_day, costs) {
        (None, false) => return Ok(()),
        (Some(usd), false) if usd.is_zero() => return Ok(()),
        (Some(usd), false) => {
            return refuse(
                "usd_per_day",
                format!(
                    "usd_per_day: {usd} is given, but {kind:?} never costs money; \
                     leave usd_per_day out or give \"0.00\""
                ),
            )
        }
        (None, true) => {
            return refuse(
                "usd_per_day",
                format!(
                "usd_per_day: missing, and {kind:?} costs money, so a positive amount is required"
            ),
            )
        }
        (Some(usd), true) => usd,
    };
    if usd <= Decimal::ZERO {
        return refuse(
            "usd_per_day",
            format!("usd_per_day: {usd} must be more than 0"),
        );
    }
    if usd.round_dp(2) != usd {
        return refuse(
            "usd_per_day",
            format!("usd_per_day: {usd} has more than 2 decimal places"),
        );
    }
    if usd > max_usd_per_day {
        return refuse(
            "usd_per_day",
            format!("usd_per_day: {usd} is over the ceiling of {max_usd_per_day:.2}"),
        );
    }
    Ok(())
}

/// An open mandate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mandate {
    pub kind: String,
    /// Empty: a kind with no target, covered for any use (only asks with no target).
    pub targets: Vec<String>,
    pub opened_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// `None`: no money term, so only asks that cost nothing are covered.
    pub usd_per_day: Option<Decimal>,
    pub actions_per_day: u32,
    pub stopped: bool,
}

/// Its end: `days` whole days after it opened, counted as `days × 24h` in UTC.
///
/// The term is a fixed length of time, not "until the same wall-clock time":
/// a 7-day mandate lasts exactly 168 hours even across a DST change, so the
/// owner never grants an hour more than the card said. The card shows this
/// instant in the owner's local time. Saturates at chrono's latest instant
/// rather than panicking on absurd input.
pub fn ends_at(opened_at: DateTime<Utc>, days: u32) -> DateTime<Utc> {
    TimeDelta::try_days(i64::from(days))
        .and_then(|d| opened_at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// The owner's local day that `at` falls in, as `[start, end)` in UTC — 23 or
/// 25 hours long on DST change days. An `at` exactly at local midnight belongs
/// to the day that starts there.
pub fn local_day(at: DateTime<Utc>, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let date = at.with_timezone(&tz).date_naive();
    let start = day_start(date, tz).unwrap_or(DateTime::<Utc>::MIN_UTC);
    let end = date
        .succ_opt()
        .and_then(|next| day_start(next, tz))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    (start, end)
}

/// The first instant whose local date in `tz` is `date`.
fn day_start(date: NaiveDate, tz: Tz) -> Option<DateTime<Utc>> {
    let midnight = date.and_hms_opt(0, 0, 0)?;
    // When midnight is repeated (clocks set back across it) the day begins
    // at its first occurrence.
    if let Some(t) = tz.from_local_datetime(&midnight).earliest() {
        return Some(t.with_timezone(&Utc));
    }
    // Midnight was skipped (clocks set forward across it, as Sao Paulo did
    // until 2019): the day begins at the transition, i.e. the first instant
    // whose local date is `date`. UTC offsets lie within ±15h, so that instant
    // is within 16h of midnight read as UTC; the local date only grows across
    // a forward jump, so a binary search over seconds finds it exactly.
    let naive_utc = midnight.and_utc().timestamp();
    let mut lo = naive_utc - 16 * 3600; // local date still before `date`
    let mut hi = naive_utc + 16 * 3600; // local date already `date` or later
    let local_date =
        |secs: i64| DateTime::from_timestamp(secs, 0).map(|t| t.with_timezone(&tz).date_naive());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if local_date(mid)? >= date {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    DateTime::from_timestamp(hi, 0)
}

/// Today's usage of a mandate: actions and dollars used during the owner's
/// local day of `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub actions: u32,
    pub usd: Decimal,
}

impl Usage {
    /// A mandate not used yet today. Coverage with it is the most a mandate can allow: use only
    /// takes coverage away (`use_only_narrows_coverage`), so a mandate that does not cover an
    /// action unused covers it at no usage.
    pub const NONE: Usage = Usage {
        actions: 0,
        usd: Decimal::ZERO,
    };
}

/// An action as coverage sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoveredAction<'a> {
    pub kind: &'a str,
    pub target: Option<&'a str>,
    /// Zero when the action costs nothing.
    pub cost_usd: Decimal,
}

/// Whether an action runs under a mandate or goes to the usual card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    Covered,
    Outside(Term),
}

/// The mandate term an action breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Term {
    /// Another kind than the mandate's.
    Kind,
    /// Not one of the mandate's targets (or none where it names some, one where it names none).
    Target,
    /// `now >= ends_at`.
    Ended,
    /// `now < opened_at`: the wall clock dates the action before the owner granted the
    /// mandate, so it has been stepped back (as a press dated before its card was shown); a
    /// day the mandate never saw would have no usage, and its day's limits would start again.
    BeforeOpened,
    /// The owner pressed Stop.
    Stopped,
    /// Today's count + 1 would exceed the actions a day.
    Actions,
    /// Today's money + cost would exceed the dollars a day.
    Money,
}

impl Term {
    /// A stable lowercase name, for the journal and logs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Term::Kind => "kind",
            Term::Target => "target",
            Term::Ended => "ended",
            Term::BeforeOpened => "before_opened",
            Term::Stopped => "stopped",
            Term::Actions => "actions",
            Term::Money => "money",
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Pure: does `mandate` cover `action` at `now`, given today's usage? Returns
/// the first term it breaks, in the order Stopped, Ended, BeforeOpened, Kind,
/// Target, Actions, Money.
///
/// A target must match one of the mandate's targets exactly (case and
/// whitespace matter: `"@Mila"` ≠ `"@mila"`, `"@mila "` ≠ `"@mila"`); an
/// action with no target is covered only by a mandate that names none, which
/// covers no action with a target. A negative cost is never covered (it would
/// hand back budget), and neither is a sum too large to represent; a mandate
/// with no money term covers only actions that cost nothing.
pub fn coverage(
    mandate: &Mandate,
    usage: &Usage,
    action: &CoveredAction,
    now: DateTime<Utc>,
) -> Coverage {
    if mandate.stopped {
        return Coverage::Outside(Term::Stopped);
    }
    if now >= mandate.ends_at {
        return Coverage::Outside(Term::Ended);
    }
    if now < mandate.opened_at {
        return Coverage::Outside(Term::BeforeOpened);
    }
    if action.kind != mandate.kind {
        return Coverage::Outside(Term::Kind);
    }
    let target_named = match action.target {
        Some(target) => mandate.targets.iter().any(|t| t == target),
        None => mandate.targets.is_empty(),
    };
    if !target_named {
        return Coverage::Outside(Term::Target);
    }
    // `used + 1 > per day`, written so it cannot overflow.
    if usage.actions >= mandate.actions_per_day {
        return Coverage::Outside(Term::Actions);
    }
    if action.cost_usd < Decimal::ZERO {
        return Coverage::Outside(Term::Money);
    }
    // No money term is a day's money of nothing: only a free action fits.
    let limit = money_term(mandate.usd_per_day).unwrap_or(Decimal::ZERO);
    match usage.usd.checked_add(action.cost_usd) {
        Some(total) if total <= limit => Coverage::Covered,
        _ => Coverage::Outside(Term::Money),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn usd(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    const OK_RULES: KindRules = KindRules {
        exists: true,
        mandate_ok: true,
        destructive: false,
        targeted: true,
        costs: true,
    };

    fn request() -> MandateRequest {
        MandateRequest {
            kind: "publish_x".to_string(),
            targets: vec!["@mila".to_string(), "@oleg".to_string()],
            days: 3,
            usd_per_day: Some(usd("2.50")),
            actions_per_day: 10,
            reason: Some("daily digest replies".to_string()),
            origin: None,
        }
    }

    fn targets(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// `None` expects acceptance; `Some((term, message))` expects that refusal.
    type Expect = Option<(&'static str, &'static str)>;

    /// How a case changes the baseline request.
    type Edit = fn(&mut MandateRequest);

    /// (label, edit, ceilings in force, expected result)
    type TermsCase<'a> = (&'static str, Edit, &'a Ceilings, Expect);

    /// (label, mandate, today's usage, action, now, expected coverage)
    type CoverageCase<'a> = (
        &'static str,
        &'a Mandate,
        Usage,
        CoveredAction<'static>,
        DateTime<Utc>,
        Coverage,
    );

    fn assert_terms(
        label: &str,
        req: &MandateRequest,
        rules: &KindRules,
        c: &Ceilings,
        want: Expect,
    ) {
        let got = check_terms(req, rules, c);
        match want {
            None => assert_eq!(got, Ok(()), "{label}"),
            Some((term, message)) => assert_eq!(
                got,
                Err(TermsRefusal {
                    term,
                    message: message.to_string()
                }),
                "{label}"
            ),
        }
    }

    #[test]
    fn check_terms_boundaries() {
        let spec = Ceilings::spec();
        let lowered = Ceilings {
            max_days: 3,
            max_usd_per_day: usd("5.00"),
            max_actions_per_day: 20,
        };
        let cases: Vec<TermsCase> = vec![
            ("baseline ok", |_| {}, &spec, None),
            // days
            ("days exactly at ceiling 7", |r| r.days = 7, &spec, None),
            (
                "days one over ceiling",
                |r| r.days = 8,
                &spec,
                Some(("days", "days: 8 is over the ceiling of 7")),
            ),
            (
                "days 9 over ceiling",
                |r| r.days = 9,
                &spec,
                Some(("days", "days: 9 is over the ceiling of 7")),
            ),
            ("days 1 is the minimum", |r| r.days = 1, &spec, None),
            (
                "days 0 refused",
                |r| r.days = 0,
                &spec,
                Some(("days", "days: 0 is under the minimum of 1")),
            ),
            ("days at lowered ceiling", |r| r.days = 3, &lowered, None),
            (
                "days over lowered ceiling",
                |r| r.days = 4,
                &lowered,
                Some(("days", "days: 4 is over the ceiling of 3")),
            ),
            // usd_per_day
            (
                "usd 10.00 at ceiling",
                |r| r.usd_per_day = Some(usd("10.00")),
                &spec,
                None,
            ),
            (
                "usd 10.01 over ceiling",
                |r| r.usd_per_day = Some(usd("10.01")),
                &spec,
                Some((
                    "usd_per_day",
                    "usd_per_day: 10.01 is over the ceiling of 10.00",
                )),
            ),
            (
                "usd 0 refused",
                |r| r.usd_per_day = Some(usd("0")),
                &spec,
                Some(("usd_per_day", "usd_per_day: 0 must be more than 0")),
            ),
            (
                "usd 0.00 refused",
                |r| r.usd_per_day = Some(usd("0.00")),
                &spec,
                Some(("usd_per_day", "usd_per_day: 0.00 must be more than 0")),
            ),
            (
                "usd negative refused",
                |r| r.usd_per_day = Some(usd("-1.00")),
                &spec,
                Some(("usd_per_day", "usd_per_day: -1.00 must be more than 0")),
            ),
            (
                "usd 0.01 smallest ok",
                |r| r.usd_per_day = Some(usd("0.01")),
                &spec,
                None,
            ),
            (
                "usd 3 decimals refused",
                |r| r.usd_per_day = Some(usd("0.015")),
                &spec,
                Some((
                    "usd_per_day",
                    "usd_per_day: 0.015 has more than 2 decimal places",
                )),
            ),
            (
                "usd trailing zero third decimal is the same amount",
                |r| r.usd_per_day = Some(usd("1.500")),
                &spec,
                None,
            ),
            (
                "usd at lowered ceiling",
                |r| r.usd_per_day = Some(usd("5")),
                &lowered,
                None,
            ),
            (
                "usd over lowered ceiling",
                |r| r.usd_per_day = Some(usd("5.01")),
                &lowered,
                Some((
                    "usd_per_day",
                    "usd_per_day: 5.01 is over the ceiling of 5.00",
                )),
            ),
            // actions_per_day
            (
                "actions exactly at ceiling 100",
                |r| r.actions_per_day = 100,
                &spec,
                None,
            ),
            (
                "actions one over ceiling",
                |r| r.actions_per_day = 101,
                &spec,
                Some((
                    "actions_per_day",
                    "actions_per_day: 101 is over the ceiling of 100",
                )),
            ),
            (
                "actions 0 refused",
                |r| r.actions_per_day = 0,
                &spec,
                Some((
                    "actions_per_day",
                    "actions_per_day: 0 is under the minimum of 1",
                )),
            ),
            (
                "actions over lowered ceiling",
                |r| r.actions_per_day = 21,
                &lowered,
                Some((
                    "actions_per_day",
                    "actions_per_day: 21 is over the ceiling of 20",
                )),
            ),
            // targets
            (
                "empty target list",
                |r| r.targets.clear(),
                &spec,
                Some((
                    "targets",
                    "targets: at least one named target is required, as \"publish_x\" takes a target",
                )),
            ),
            (
                "empty string target",
                |r| r.targets = targets(&["@mila", ""]),
                &spec,
                Some(("targets", "targets: target 2 is empty")),
            ),
            (
                "whitespace-only target",
                |r| r.targets = targets(&["  "]),
                &spec,
                Some(("targets", "targets: target 1 is empty")),
            ),
            (
                "bare star target",
                |r| r.targets = targets(&["*"]),
                &spec,
                Some((
                    "targets",
                    "targets: \"*\" contains the wildcard character '*'",
                )),
            ),
            (
                "star suffix target",
                |r| r.targets = targets(&["@mila*"]),
                &spec,
                Some((
                    "targets",
                    "targets: \"@mila*\" contains the wildcard character '*'",
                )),
            ),
            (
                "question mark target",
                |r| r.targets = targets(&["@mil?"]),
                &spec,
                Some((
                    "targets",
                    "targets: \"@mil?\" contains the wildcard character '?'",
                )),
            ),
            (
                "percent target",
                |r| r.targets = targets(&["%mila"]),
                &spec,
                Some((
                    "targets",
                    "targets: \"%mila\" contains the wildcard character '%'",
                )),
            ),
            (
                "duplicate targets",
                |r| r.targets = targets(&["@mila", "@oleg", "@mila"]),
                &spec,
                Some(("targets", "targets: \"@mila\" is named twice")),
            ),
            (
                "targets differing by case are distinct",
                |r| r.targets = targets(&["@mila", "@Mila"]),
                &spec,
                None,
            ),
            // order: kind is checked first, targets before days, days before money
            (
                "targets reported before days",
                |r| {
                    r.targets.clear();
                    r.days = 9
                },
                &spec,
                Some((
                    "targets",
                    "targets: at least one named target is required, as \"publish_x\" takes a target",
                )),
            ),
            (
                "days reported before usd",
                |r| {
                    r.days = 9;
                    r.usd_per_day = Some(usd("11"))
                },
                &spec,
                Some(("days", "days: 9 is over the ceiling of 7")),
            ),
            (
                "usd reported before actions",
                |r| {
                    r.usd_per_day = Some(usd("11"));
                    r.actions_per_day = 0
                },
                &spec,
                Some((
                    "usd_per_day",
                    "usd_per_day: 11 is over the ceiling of 10.00",
                )),
            ),
        ];
        for (label, edit, ceilings, want) in cases {
            let mut req = request();
            edit(&mut req);
            assert_terms(label, &req, &OK_RULES, ceilings, want);
        }
    }

    #[test]
    fn check_terms_kind_rules() {
        let spec = Ceilings::spec();
        let cases: [(&str, KindRules, Expect); 5] = [
            (
                "unknown kind",
                KindRules {
                    exists: false,
                    mandate_ok: true,
                    destructive: false,
                    ..OK_RULES
                },
                Some(("kind", "kind: \"publish_x\" is not a known category")),
            ),
            (
                "not mandate_ok",
                KindRules {
                    exists: true,
                    mandate_ok: false,
                    destructive: false,
                    ..OK_RULES
                },
                Some(("kind", "kind: \"publish_x\" does not allow mandates")),
            ),
            (
                "destructive though mandate_ok claims true",
                KindRules {
                    exists: true,
                    mandate_ok: true,
                    destructive: true,
                    ..OK_RULES
                },
                Some((
                    "kind",
                    "kind: \"publish_x\" is destructive and never allows mandates",
                )),
            ),
            (
                "destructive and not mandate_ok",
                KindRules {
                    exists: true,
                    mandate_ok: false,
                    destructive: true,
                    ..OK_RULES
                },
                Some((
                    "kind",
                    "kind: \"publish_x\" is destructive and never allows mandates",
                )),
            ),
            ("mandate_ok, not destructive", OK_RULES, None),
        ];
        for (label, rules, want) in cases {
            assert_terms(label, &request(), &rules, &spec, want);
        }
        // Kind comes first even when every other term is also bad.
        let mut bad = request();
        bad.targets.clear();
        bad.days = 0;
        let rules = KindRules {
            exists: false,
            mandate_ok: false,
            destructive: false,
            ..OK_RULES
        };
        assert_terms(
            "kind reported before everything",
            &bad,
            &rules,
            &spec,
            Some(("kind", "kind: \"publish_x\" is not a known category")),
        );
    }

    #[test]
    fn raised_ceilings_are_clamped_to_spec() {
        let raised = Ceilings {
            max_days: 30,
            max_usd_per_day: usd("100"),
            max_actions_per_day: 1000,
        };
        let cases: [(&str, Edit, Expect); 3] = [
            (
                "days clamped to 7",
                |r| r.days = 8,
                Some(("days", "days: 8 is over the ceiling of 7")),
            ),
            (
                "usd clamped to 10.00",
                |r| r.usd_per_day = Some(usd("10.01")),
                Some((
                    "usd_per_day",
                    "usd_per_day: 10.01 is over the ceiling of 10.00",
                )),
            ),
            (
                "actions clamped to 100",
                |r| r.actions_per_day = 101,
                Some((
                    "actions_per_day",
                    "actions_per_day: 101 is over the ceiling of 100",
                )),
            ),
        ];
        for (label, edit, want) in cases {
            let mut req = request();
            edit(&mut req);
            assert_terms(label, &req, &OK_RULES, &raised, want);
        }
    }

    #[test]
    fn refusal_displays_its_message() {
        let mut req = request();
        req.days = 9;
        let err = check_terms(&req, &OK_RULES, &Ceilings::spec()).unwrap_err();
        assert_eq!(err.to_string(), "days: 9 is over the ceiling of 7");
    }

    #[test]
    fn ends_at_is_whole_utc_days() {
        let cases = [
            ("one day", "2026-03-01T10:00:00Z", 1, "2026-03-02T10:00:00Z"),
            (
                "seven days",
                "2026-03-01T10:00:00Z",
                7,
                "2026-03-08T10:00:00Z",
            ),
            // Berlin springs forward on 2026-03-29; the term stays 7 × 24h.
            (
                "across a DST change",
                "2026-03-25T12:00:00Z",
                7,
                "2026-04-01T12:00:00Z",
            ),
            (
                "zero days ends at once",
                "2026-03-01T10:00:00Z",
                0,
                "2026-03-01T10:00:00Z",
            ),
        ];
        for (label, opened, days, want) in cases {
            assert_eq!(ends_at(utc(opened), days), utc(want), "{label}");
        }
        assert_eq!(
            ends_at(utc("2026-03-01T10:00:00Z"), u32::MAX),
            DateTime::<Utc>::MAX_UTC,
            "absurd length saturates"
        );
    }

    #[test]
    fn local_day_boundaries() {
        let moscow = chrono_tz::Europe::Moscow;
        let berlin = chrono_tz::Europe::Berlin;
        let sao_paulo = chrono_tz::America::Sao_Paulo;
        // (label, tz, at, start, end, hours)
        let cases = [
            (
                "Moscow midday",
                moscow,
                "2026-06-10T09:00:00Z",
                "2026-06-09T21:00:00Z",
                "2026-06-10T21:00:00Z",
                24,
            ),
            (
                "Moscow exactly at local midnight starts the new day",
                moscow,
                "2026-06-10T21:00:00Z",
                "2026-06-10T21:00:00Z",
                "2026-06-11T21:00:00Z",
                24,
            ),
            (
                "Moscow last second before midnight",
                moscow,
                "2026-06-10T20:59:59Z",
                "2026-06-09T21:00:00Z",
                "2026-06-10T21:00:00Z",
                24,
            ),
            (
                "Berlin spring-forward day is 23h",
                berlin,
                "2026-03-29T12:00:00Z",
                "2026-03-28T23:00:00Z",
                "2026-03-29T22:00:00Z",
                23,
            ),
            (
                "Berlin fall-back day is 25h",
                berlin,
                "2026-10-25T12:00:00Z",
                "2026-10-24T22:00:00Z",
                "2026-10-25T23:00:00Z",
                25,
            ),
            (
                "Berlin midnight after fall-back starts the next day",
                berlin,
                "2026-10-25T23:00:00Z",
                "2026-10-25T23:00:00Z",
                "2026-10-26T23:00:00Z",
                24,
            ),
            (
                "Berlin in the repeated hour",
                berlin,
                "2026-10-25T00:30:00Z",
                "2026-10-24T22:00:00Z",
                "2026-10-25T23:00:00Z",
                25,
            ),
            (
                "Sao Paulo normal day",
                sao_paulo,
                "2026-01-15T15:00:00Z",
                "2026-01-15T03:00:00Z",
                "2026-01-16T03:00:00Z",
                24,
            ),
            (
                "Sao Paulo exactly at local midnight",
                sao_paulo,
                "2026-11-01T03:00:00Z",
                "2026-11-01T03:00:00Z",
                "2026-11-02T03:00:00Z",
                24,
            ),
            // Until 2019 Sao Paulo sprang forward at midnight, so 2018-11-04
            // had no 00:00 and began at 01:00 -02.
            (
                "Sao Paulo 2018 day with no midnight",
                sao_paulo,
                "2018-11-04T12:00:00Z",
                "2018-11-04T03:00:00Z",
                "2018-11-05T02:00:00Z",
                23,
            ),
            (
                "Sao Paulo 2018 day before the skipped midnight",
                sao_paulo,
                "2018-11-03T12:00:00Z",
                "2018-11-03T03:00:00Z",
                "2018-11-04T03:00:00Z",
                24,
            ),
        ];
        for (label, tz, at, start, end, hours) in cases {
            let (s, e) = local_day(utc(at), tz);
            assert_eq!((s, e), (utc(start), utc(end)), "{label}");
            assert_eq!((e - s).num_hours(), hours, "{label}: length");
            assert!(s <= utc(at) && utc(at) < e, "{label}: contains at");
        }
    }

    fn mandate() -> Mandate {
        Mandate {
            kind: "publish_x".to_string(),
            targets: targets(&["@mila", "@oleg"]),
            opened_at: utc("2026-03-01T10:00:00Z"),
            ends_at: utc("2026-03-04T10:00:00Z"),
            usd_per_day: Some(usd("5.00")),
            actions_per_day: 10,
            stopped: false,
        }
    }

    #[test]
    fn coverage_boundaries() {
        let now = utc("2026-03-02T12:00:00Z");
        let fresh = Usage {
            actions: 0,
            usd: usd("0"),
        };
        let act = |target: Option<&'static str>, cost: &str| CoveredAction {
            kind: "publish_x",
            target,
            cost_usd: usd(cost),
        };
        let mila = Some("@mila");
        let stopped = Mandate {
            stopped: true,
            ..mandate()
        };
        let base = mandate();
        let cases: Vec<CoverageCase> = vec![
            (
                "plain covered",
                &base,
                fresh,
                act(mila, "0"),
                now,
                Coverage::Covered,
            ),
            (
                "second target covered",
                &base,
                fresh,
                act(Some("@oleg"), "0"),
                now,
                Coverage::Covered,
            ),
            // count
            (
                "used = per day - 1 covered",
                &base,
                Usage {
                    actions: 9,
                    usd: usd("0"),
                },
                act(mila, "0"),
                now,
                Coverage::Covered,
            ),
            (
                "used = per day is Actions",
                &base,
                Usage {
                    actions: 10,
                    usd: usd("0"),
                },
                act(mila, "0"),
                now,
                Coverage::Outside(Term::Actions),
            ),
            // money
            (
                "money exactly at the limit covered",
                &base,
                Usage {
                    actions: 3,
                    usd: usd("4.50"),
                },
                act(mila, "0.50"),
                now,
                Coverage::Covered,
            ),
            (
                "money one cent over is Money",
                &base,
                Usage {
                    actions: 3,
                    usd: usd("4.50"),
                },
                act(mila, "0.51"),
                now,
                Coverage::Outside(Term::Money),
            ),
            (
                "limit already used, free action covered",
                &base,
                Usage {
                    actions: 3,
                    usd: usd("5"),
                },
                act(mila, "0"),
                now,
                Coverage::Covered,
            ),
            (
                "negative cost is Money",
                &base,
                fresh,
                act(mila, "-1.00"),
                now,
                Coverage::Outside(Term::Money),
            ),
            // term start and end
            (
                "a second before opened_at is BeforeOpened",
                &base,
                fresh,
                act(mila, "0"),
                utc("2026-03-01T09:59:59Z"),
                Coverage::Outside(Term::BeforeOpened),
            ),
            (
                "exactly opened_at covered",
                &base,
                fresh,
                act(mila, "0"),
                utc("2026-03-01T10:00:00Z"),
                Coverage::Covered,
            ),
            (
                "last second before ends_at covered",
                &base,
                fresh,
                act(mila, "0"),
                utc("2026-03-04T09:59:59Z"),
                Coverage::Covered,
            ),
            (
                "exactly ends_at is Ended",
                &base,
                fresh,
                act(mila, "0"),
                utc("2026-03-04T10:00:00Z"),
                Coverage::Outside(Term::Ended),
            ),
            // stop, kind, target
            (
                "stopped is Stopped",
                &stopped,
                fresh,
                act(mila, "0"),
                now,
                Coverage::Outside(Term::Stopped),
            ),
            (
                "another kind",
                &base,
                fresh,
                CoveredAction {
                    kind: "send_mail",
                    target: mila,
                    cost_usd: usd("0"),
                },
                now,
                Coverage::Outside(Term::Kind),
            ),
            (
                "target differing by case",
                &base,
                fresh,
                act(Some("@Mila"), "0"),
                now,
                Coverage::Outside(Term::Target),
            ),
            (
                "target with trailing space",
                &base,
                fresh,
                act(Some("@mila "), "0"),
                now,
                Coverage::Outside(Term::Target),
            ),
            (
                "no target",
                &base,
                fresh,
                act(None, "0"),
                now,
                Coverage::Outside(Term::Target),
            ),
            // order: Stopped, Ended, Kind, Target, Actions, Money
            (
                "stopped wins over ended",
                &stopped,
                fresh,
                act(mila, "0"),
                utc("2026-03-05T00:00:00Z"),
                Coverage::Outside(Term::Stopped),
            ),
            (
                "ended wins over kind",
                &base,
                fresh,
                CoveredAction {
                    kind: "send_mail",
                    target: mila,
                    cost_usd: usd("0"),
                },
                utc("2026-03-05T00:00:00Z"),
                Coverage::Outside(Term::Ended),
            ),
            (
                "kind wins over target",
                &base,
                fresh,
                CoveredAction {
                    kind: "send_mail",
                    target: None,
                    cost_usd: usd("0"),
                },
                now,
                Coverage::Outside(Term::Kind),
            ),
            (
                "target wins over actions",
                &base,
                Usage {
                    actions: 10,
                    usd: usd("0"),
                },
                act(None, "0"),
                now,
                Coverage::Outside(Term::Target),
            ),
            (
                "actions wins over money",
                &base,
                Usage {
                    actions: 10,
                    usd: usd("5"),
                },
                act(mila, "1"),
                now,
                Coverage::Outside(Term::Actions),
            ),
        ];
        for (label, m, usage, action, at, want) in cases {
            assert_eq!(coverage(m, &usage, &action, at), want, "{label}");
        }
    }

    /// The store passes over a mandate that does not cover an action unused without counting
    /// its day; that is sound only if no usage can turn an uncovered action into a covered one.
    #[test]
    fn use_only_narrows_coverage() {
        let now = utc("2026-03-02T12:00:00Z");
        let mandates = [
            mandate(),
            Mandate {
                usd_per_day: None,
                ..mandate()
            },
            Mandate {
                ends_at: now,
                ..mandate()
            },
        ];
        let mut covered_with_use = 0;
        for m in &mandates {
            for target in [Some("@mila"), Some("@ana"), None] {
                for cost in ["0", "0.01", "2.50", "5.00", "5.01"] {
                    let action = CoveredAction {
                        kind: "publish_x",
                        target,
                        cost_usd: usd(cost),
                    };
                    let unused = coverage(m, &Usage::NONE, &action, now);
                    for actions in [0, 1, 9, 10, 11] {
                        for spent in ["0", "2.50", "4.99", "5.00", "7.00"] {
                            let used = Usage {
                                actions,
                                usd: usd(spent),
                            };
                            if coverage(m, &used, &action, now) == Coverage::Covered {
                                covered_with_use += 1;
                                assert_eq!(
                                    unused,
                                    Coverage::Covered,
                                    "{target:?} at ${cost} after {actions} uses and ${spent}"
                                );
                            }
                        }
                    }
                }
            }
        }
        // The grid has covered cases at all, so the check above was made.
        assert!(covered_with_use > 20, "{covered_with_use}");
    }

    #[test]
    fn term_names() {
        let cases = [
            (Term::Kind, "kind"),
            (Term::Target, "target"),
            (Term::Ended, "ended"),
            (Term::BeforeOpened, "before_opened"),
            (Term::Stopped, "stopped"),
            (Term::Actions, "actions"),
            (Term::Money, "money"),
        ];
        for (term, name) in cases {
            assert_eq!(term.as_str(), name, "as_str {name}");
            assert_eq!(term.to_string(), name, "Display {name}");
        }
    }

    /// A generation: no target, a cost in each ask.
    const UNTARGETED: KindRules = KindRules {
        targeted: false,
        ..OK_RULES
    };
    /// A note to a named person that never costs.
    const FREE: KindRules = KindRules {
        costs: false,
        ..OK_RULES
    };

    /// (label, edit, the kind's rules, expected result)
    type KindCase = (&'static str, Edit, KindRules, Expect);

    fn assert_kind_cases(cases: Vec<KindCase>) {
        for (label, edit, rules, want) in cases {
            let mut req = request();
            edit(&mut req);
            assert_terms(label, &req, &rules, &Ceilings::spec(), want);
        }
    }

    /// Named targets for a kind with a target, none for a kind without one.
    #[test]
    fn check_terms_targets_follow_the_kind() {
        let cases: Vec<KindCase> = vec![
            ("no target kind, none named", |r| r.targets.clear(), UNTARGETED, None),
            (
                "no target kind, one named",
                |r| r.targets = targets(&["@mila"]),
                UNTARGETED,
                Some((
                    "targets",
                    "targets: \"publish_x\" takes no target, so its mandate names none",
                )),
            ),
            (
                "target kind, none named",
                |r| r.targets.clear(),
                OK_RULES,
                Some((
                    "targets",
                    "targets: at least one named target is required, as \"publish_x\" takes a target",
                )),
            ),
            (
                "neither target nor money",
                |r| {
                    r.targets.clear();
                    r.usd_per_day = None
                },
                KindRules {
                    targeted: false,
                    costs: false,
                    ..OK_RULES
                },
                None,
            ),
            (
                "no target kind still bounded by days",
                |r| {
                    r.targets.clear();
                    r.days = 8
                },
                UNTARGETED,
                Some(("days", "days: 8 is over the ceiling of 7")),
            ),
            (
                "targets reported before money",
                |r| r.usd_per_day = None,
                UNTARGETED,
                Some((
                    "targets",
                    "targets: \"publish_x\" takes no target, so its mandate names none",
                )),
            ),
        ];
        assert_kind_cases(cases);
    }

    /// A positive money term for a kind that costs, none (absent or zero) for one that never does.
    #[test]
    fn check_terms_money_follows_the_kind() {
        let cases: Vec<KindCase> = vec![
            ("free kind, no money term", |r| r.usd_per_day = None, FREE, None),
            (
                "free kind, zero is no money term",
                |r| r.usd_per_day = Some(usd("0.00")),
                FREE,
                None,
            ),
            (
                "free kind, money given",
                |r| r.usd_per_day = Some(usd("1.00")),
                FREE,
                Some((
                    "usd_per_day",
                    "usd_per_day: 1.00 is given, but \"publish_x\" never costs money; \
                     leave usd_per_day out or give \"0.00\"",
                )),
            ),
            (
                "costing kind, no money term",
                |r| r.usd_per_day = None,
                OK_RULES,
                Some((
                    "usd_per_day",
                    "usd_per_day: missing, and \"publish_x\" costs money, so a positive amount is required",
                )),
            ),
            (
                "costing kind, zero",
                |r| r.usd_per_day = Some(usd("0.00")),
                OK_RULES,
                Some(("usd_per_day", "usd_per_day: 0.00 must be more than 0")),
            ),
            (
                "free kind still bounded by actions",
                |r| {
                    r.usd_per_day = None;
                    r.actions_per_day = 101
                },
                FREE,
                Some((
                    "actions_per_day",
                    "actions_per_day: 101 is over the ceiling of 100",
                )),
            ),
        ];
        assert_kind_cases(cases);
    }

    #[test]
    fn digests_of_requests_that_could_always_be_granted_never_change() {
        let mut request = MandateRequest {
            kind: "publish_x".to_string(),
            targets: targets(&["@mila_news", "@mila_shop"]),
            days: 7,
            usd_per_day: Some(usd("5.00")),
            actions_per_day: 10,
            reason: Some("Daily news".to_string()),
            origin: None,
        };
        // sha256 of {"actions_per_day":10,"days":7,"kind":"publish_x","op":"mandate",
        // "reason":"Daily news","targets":["@mila_news","@mila_shop"],"usd_per_day":"5.00","v":1}
        assert_eq!(
            request.digest().to_hex(),
            "92ea07b9f3e2192587fc01754df3bf8fa7c40aec2d3a12235cae0fa56bc2ba76"
        );
        request.reason = None;
        assert_eq!(
            request.digest().to_hex(),
            "23de8c7b5efa3d82c19eaa8582b250f74d3bf2e75b7b1dce2cc04fb390e52d1b"
        );
    }

    #[test]
    fn no_targets_and_no_money_have_their_own_digests() {
        let mut request = request();
        request.targets.clear();
        request.usd_per_day = None;
        // sha256 of {"actions_per_day":10,"days":3,"kind":"publish_x","op":"mandate",
        // "reason":"daily digest replies","targets":[],"usd_per_day":null,"v":1}
        assert_eq!(
            request.digest().to_hex(),
            "62424e0ee518776aad33165e9dfdc35633989822d45fab9395c75f23aa0a9215"
        );
        let absent = request.digest();
        request.usd_per_day = Some(usd("0.00"));
        assert_eq!(request.digest(), absent, "zero and absent are one request");
        request.usd_per_day = Some(usd("0.01"));
        assert_ne!(request.digest(), absent);
    }

    /// (label, today's count and money, the action's kind, target and cost, expected)
    type UseCase = (
        &'static str,
        (u32, &'static str),
        (&'static str, Option<&'static str>, &'static str),
        Coverage,
    );

    /// Each case against `mandate` at `now`.
    fn assert_uses(mandate: &Mandate, now: DateTime<Utc>, cases: &[UseCase]) {
        for &(label, (actions, money), (kind, target, cost), want) in cases {
            let usage = Usage {
                actions,
                usd: usd(money),
            };
            let action = CoveredAction {
                kind,
                target,
                cost_usd: usd(cost),
            };
            assert_eq!(coverage(mandate, &usage, &action, now), want, "{label}");
        }
    }

    #[test]
    fn coverage_of_a_mandate_for_any_use() {
        let any_use = Mandate {
            kind: "generate_image".to_string(),
            targets: Vec::new(),
            ..mandate()
        };
        let image = "generate_image";
        let outside = Coverage::Outside;
        let cases: &[UseCase] = &[
            (
                "an ask with no target",
                (0, "0"),
                (image, None, "0.40"),
                Coverage::Covered,
            ),
            (
                "an ask with a target",
                (0, "0"),
                (image, Some("@mila"), "0.40"),
                outside(Term::Target),
            ),
            (
                "another kind",
                (0, "0"),
                ("publish_x", None, "0.40"),
                outside(Term::Kind),
            ),
            (
                "the last action",
                (9, "1"),
                (image, None, "0.40"),
                Coverage::Covered,
            ),
            (
                "over the count",
                (10, "1"),
                (image, None, "0.40"),
                outside(Term::Actions),
            ),
            (
                "money to the cent",
                (3, "4.60"),
                (image, None, "0.40"),
                Coverage::Covered,
            ),
            (
                "over the money",
                (3, "4.61"),
                (image, None, "0.40"),
                outside(Term::Money),
            ),
        ];
        assert_uses(&any_use, utc("2026-03-02T12:00:00Z"), cases);
        let ended: &[UseCase] = &[(
            "after the term",
            (0, "0"),
            (image, None, "0.40"),
            outside(Term::Ended),
        )];
        assert_uses(&any_use, utc("2026-03-04T10:00:00Z"), ended);
        // A mandate that names targets never covers an ask with none.
        let named: &[UseCase] = &[(
            "no target",
            (0, "0"),
            ("publish_x", None, "0"),
            outside(Term::Target),
        )];
        assert_uses(&mandate(), utc("2026-03-02T12:00:00Z"), named);
    }

    #[test]
    fn coverage_of_a_mandate_with_no_money_term() {
        let now = utc("2026-03-02T12:00:00Z");
        let mila = Some("@mila");
        let outside = Coverage::Outside;
        let cases: &[UseCase] = &[
            (
                "a free ask",
                (9, "0"),
                ("publish_x", mila, "0"),
                Coverage::Covered,
            ),
            (
                "an ask that costs",
                (0, "0"),
                ("publish_x", mila, "0.01"),
                outside(Term::Money),
            ),
            (
                "still bounded by the count",
                (10, "0"),
                ("publish_x", mila, "0"),
                outside(Term::Actions),
            ),
            (
                "another target",
                (0, "0"),
                ("publish_x", Some("@oleg2"), "0"),
                outside(Term::Target),
            ),
        ];
        let free = Mandate {
            usd_per_day: None,
            ..mandate()
        };
        assert_uses(&free, now, cases);
        // A zero money term binds as none.
        let zero = Mandate {
            usd_per_day: Some(usd("0.00")),
            ..mandate()
        };
        assert_uses(&zero, now, cases);
    }
}
