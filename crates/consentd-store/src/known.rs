//! The targets the owner approved recently, which a card's target is compared with for
//! look-alikes ([`consentd_core::lookalike`]): the targets of mandates the owner granted and of asks the
//! owner said yes to that then ran.
//!
//! The set is read *as of* an instant, from facts that never change once written (when a
//! mandate opened, ended or was stopped; when an ask was decided), so a card, its later edit and
//! a receipt drawn against the same instant show the same warnings. A card's instant is when it
//! is shown ([`Db::known_targets_for`]): a card held until morning is drawn against the targets
//! approved in the night.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::Db;
use super::time::timestamp;
use super::{RecordState, StoreError};
use consentd_core::lookalike::{KnownTargets, KNOWN_DAYS};

/// A card is pressed within its ttl of being shown (at most 15 minutes), so an ask decided after
/// `since` was shown after `since` less this much: the records' `shown_at` index then narrows
/// the search to the last month's cards.
const SHOWN_BEFORE_DECIDED: chrono::Duration = chrono::Duration::days(1);

/// The targets of asks the owner said yes to, decided in (?2, ?1], among the cards shown after
/// ?3: those consentd went on to run, and those of an approval-only category the owner approved
/// for the agent to run (the target is as much the owner's choice either way).
const APPROVED_ASKS: &str = "SELECT DISTINCT target FROM records
     WHERE shown_at > ?3 AND subject = 'action' AND target IS NOT NULL
       AND state IN ('running', 'executed', 'failed', 'outcome_unknown', 'approved')
       AND decided_at > ?2 AND decided_at <= ?1";

/// The targets (a JSON array each) of mandates granted by ?1 whose term had not ended, nor been
/// stopped, by ?2.
const GRANTED_MANDATES: &str = "SELECT targets FROM mandates
     WHERE opened_at IS NOT NULL AND opened_at <= ?1 AND ends_at > ?2
       AND (stopped_at IS NULL OR stopped_at > ?2)";

impl Db {
    /// The targets known at `at`, looking back [`KNOWN_DAYS`]:
    /// - of every mandate the owner granted before `at` whose term had not ended, nor been
    ///   stopped, more than [`KNOWN_DAYS`] before it (open, or recently ended or stopped: a
    ///   look-alike of a name the owner trusted last week is as suspicious as of one trusted now);
    /// - of every ask the owner said yes to in those days that then ran (running, executed,
    ///   failed, outcome_unknown). An ask a mandate answered is among its mandate's targets.
    pub fn known_targets(&self, at: DateTime<Utc>) -> Result<KnownTargets, StoreError> {
        let since = at - chrono::Duration::days(KNOWN_DAYS);
        let (at, shown_since, since) = (
            timestamp(at),
            timestamp(since - SHOWN_BEFORE_DECIDED),
            timestamp(since),
        );
        let mut targets: Vec<String> = Vec::new();
        let mut asks = self.conn.prepare_cached(APPROVED_ASKS)?;
        for target in asks.query_map(params![at, since, shown_since], |row| row.get(0))? {
            targets.push(target?);
        }
        let mut mandates = self.conn.prepare_cached(GRANTED_MANDATES)?;
        for list in mandates.query_map(params![at, since], |row| row.get::<_, String>(0))? {
            let list: Vec<String> = serde_json::from_str(&list?)
                .map_err(|error| StoreError::Encode(format!("a mandate's targets: {error}")))?;
            targets.extend(list);
        }
        Ok(KnownTargets::new(targets))
    }

    /// The targets a record's card is drawn against, as of the instant it is shown:
    /// - a card already shown: its `shown_at`, fixed once written, so the card, its parts, its
    ///   edits and a mandate's lines in `/mandates` all agree;
    /// - a card not shown yet (pending): `now`, the instant the sender shows it (it reads them
    ///   again once the card is open, which is then its `shown_at`);
    /// - a record that never had a card (an ask a mandate answered, whose receipt this draws; an
    ///   ask that ended before its card went out): when it was asked, its `created_at`.
    pub fn known_targets_for(
        &self,
        record_id: &str,
        now: DateTime<Utc>,
    ) -> Result<KnownTargets, StoreError> {
        let row: Option<(String, Option<String>, String)> = self
            .conn
            .prepare_cached("SELECT created_at, shown_at, state FROM records WHERE id = ?1")?
            .query_row([record_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .optional()?;
        let (created_at, shown_at, state) = row.ok_or(StoreError::Missing)?;
        let parse = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&Utc))
                .map_err(|error| StoreError::Encode(format!("record {record_id}: {error}")))
        };
        let at = match (shown_at, RecordState::parse(&state)) {
            (Some(shown_at), _) => parse(&shown_at)?,
            (None, Some(RecordState::Pending)) => now,
            (None, _) => parse(&created_at)?,
        };
        self.known_targets(at)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use chrono::{DateTime, TimeZone, Utc};

    use super::super::ask::{AskOutcome, AskPolicy, NewAsk};
    use super::super::claims::Finish;
    use super::super::db::Db;
    use super::super::mandates::NewMandate;
    use super::super::state::RecordState;
    use consentd_core::action::Action;
    use consentd_core::mandate::MandateRequest;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }

    fn days(n: i64) -> chrono::Duration {
        chrono::Duration::days(n)
    }

    /// The policy of a kind mandates may cover.
    fn covering() -> AskPolicy {
        AskPolicy {
            mandates_cover: true,
            ..policy()
        }
    }

    fn policy() -> AskPolicy {
        AskPolicy {
            owner_known: true,
            card_chat: None,
            decline_memory: Duration::from_secs(3600),
            max_pending: 100,
            max_pending_per_uid: 100,
            attachment_bytes_per_uid: 256 * 1024 * 1024,
            tz: chrono_tz::UTC,
            mandates_cover: false,
            mandate_day: crate::tests::spec_mandate_day(),
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        db: Db,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(
                &dir.path().join("consentd.db"),
                &dir.path().join("decisions.jsonl"),
                t0() - days(60),
            )
            .unwrap()
            .0;
            Fixture { _dir: dir, db }
        }

        fn action(target: &str, at: DateTime<Utc>) -> Action {
            Action {
                kind: "publish_x".to_owned(),
                target: Some(target.to_owned()),
                text: Some(format!("to {target} at {at}")),
                fields: BTreeMap::new(),
                cost_usd: None,
                attachments: Vec::new(),
                origin: None,
            }
        }

        fn new_ask(action: Action) -> NewAsk {
            NewAsk {
                peer: crate::Peer::main(1000),
                digest: action.digest().to_hex(),
                action,
                idempotency_key: None,
                urgent: false,
                agent_runs: false,
                hook: None,
                ttl: None,
                monotonic: super::super::tests::monotonic(),
            }
        }

        /// An ask to `target` at `at`, its card not shown yet; its id.
        fn asked(&mut self, target: &str, at: DateTime<Utc>) -> String {
            let ask = Self::new_ask(Self::action(target, at));
            match self.db.ask(&ask, policy(), at).unwrap() {
                AskOutcome::Created(record) => record.id,
                other => panic!("{other:?}"),
            }
        }

        /// An ask to `target` at `at`, its card shown at once.
        fn shown(&mut self, target: &str, at: DateTime<Utc>) -> String {
            let id = self.asked(target, at);
            self.show(&id, at);
            id
        }

        fn monotonic() -> consentd_core::clock::Monotonic {
            consentd_core::clock::Monotonic {
                boot: "test".to_owned(),
                since_boot: std::time::Duration::from_secs(100),
            }
        }

        /// A pending record's card, shown at `at`.
        fn show(&mut self, id: &str, at: DateTime<Utc>) {
            assert!(self
                .db
                .card_showing(
                    id,
                    at + chrono::Duration::minutes(15),
                    at,
                    &Self::monotonic()
                )
                .unwrap());
        }

        /// An ask the owner said yes to at `at`, then claimed, then ended in `end` (`None`: still
        /// running; `Some(Granted)`: not claimed yet).
        fn approved(&mut self, target: &str, at: DateTime<Utc>, end: Option<RecordState>) {
            let id = self.shown(target, at);
            super::super::tests::grant(&mut self.db, &id, at);
            if end == Some(RecordState::Granted) {
                return;
            }
            let now = consentd_core::deadline::Now {
                wall: at,
                monotonic: Self::monotonic(),
            };
            let window = crate::claims::ClaimWindow::JudgedAtGrant;
            let notices = crate::claims::ClaimNotices::default();
            self.db.claim(&id, true, (&now, window), &notices).unwrap();
            if let Some(state) = end {
                let finish = Finish {
                    state,
                    result: None,
                    message: None,
                    stderr: None,
                    detail: None,
                };
                self.db.finish(&id, &finish, &[], at).unwrap();
            }
        }

        /// A mandate request for `targets` at `at`, granted unless `grant` is false.
        fn mandate(&mut self, targets: &[&str], at: DateTime<Utc>, grant: bool) -> String {
            let request = MandateRequest {
                kind: "publish_x".to_owned(),
                targets: targets.iter().map(|t| (*t).to_owned()).collect(),
                days: 7,
                usd_per_day: Some(rust_decimal::Decimal::new(100, 2)),
                actions_per_day: 5,
                reason: None,
                origin: None,
            };
            let new = NewMandate {
                peer: crate::Peer::main(1000),
                digest: request.digest().to_hex(),
                request,
                monotonic: None,
            };
            let id = match self.db.ask_mandate(&new, policy(), at).unwrap() {
                AskOutcome::Created(record) => record.id,
                other => panic!("{other:?}"),
            };
            self.show(&id, at);
            if grant {
                super::super::tests::grant(&mut self.db, &id, at);
            }
            id
        }

        fn known_at(&self, at: DateTime<Utc>) -> Vec<String> {
            let known = self.db.known_targets(at).unwrap();
            known.iter().map(str::to_owned).collect()
        }
    }

    #[test]
    fn asks_the_owner_said_yes_to_that_ran_in_the_last_30_days() {
        let mut f = Fixture::new();
        f.approved("@executed", t0() - days(10), Some(RecordState::Executed));
        f.approved("@failed", t0() - days(29), Some(RecordState::Failed));
        f.approved(
            "@unknown",
            t0() - days(1),
            Some(RecordState::OutcomeUnknown),
        );
        f.approved("@running", t0() - days(1), None);
        f.approved("@not_claimed", t0() - days(1), Some(RecordState::Granted));
        f.approved("@too_old", t0() - days(31), Some(RecordState::Executed));
        f.approved("@later", t0() + days(1), Some(RecordState::Executed));
        let declined = f.shown("@declined", t0() - days(2));
        super::super::tests::decline(&mut f.db, &declined, 99, t0() - days(2));
        f.shown("@still_open", t0() - days(1));
        assert_eq!(
            f.known_at(t0()),
            ["@executed", "@failed", "@running", "@unknown"]
        );
        // As of another instant: what was known then (@failed is 31 days old by then).
        assert_eq!(
            f.known_at(t0() + days(2)),
            ["@executed", "@later", "@running", "@unknown"]
        );
        assert_eq!(f.known_at(t0() - days(30)), ["@too_old"]);
    }

    /// An approval-only category's Yes ends the ask `approved`: the agent then does exactly
    /// what the card showed, to the target the owner chose. That target is as much the owner's
    /// choice as one of an ask consentd ran, so a later card's look-alike of it is marked.
    #[test]
    fn asks_the_owner_approved_for_the_agent_to_run_are_known() {
        let mut f = Fixture::new();
        let at = t0() - days(2);
        let mut ask = Fixture::new_ask(Fixture::action("@approved", at));
        ask.agent_runs = true;
        let id = match f.db.ask(&ask, policy(), at).unwrap() {
            AskOutcome::Created(record) => record.id,
            other => panic!("{other:?}"),
        };
        f.show(&id, at);
        let record = super::super::tests::approve(&mut f.db, &id, at).unwrap();
        assert_eq!(record.state, RecordState::Approved);
        assert_eq!(
            f.known_at(t0()),
            ["@approved"],
            "the target of an ask the owner approved two days ago"
        );
    }

    #[test]
    fn mandates_granted_open_or_ended_in_the_last_30_days() {
        let mut f = Fixture::new();
        f.mandate(&["@open", "@open_too"], t0() - days(1), true);
        f.mandate(&["@asked_only"], t0() - days(1), false);
        // Its term (7 days) ended 13 days ago.
        f.mandate(&["@ended"], t0() - days(20), true);
        // Its term ended 33 days ago.
        f.mandate(&["@ended_long_ago"], t0() - days(40), true);
        let stopped = f.mandate(&["@stopped"], t0() - days(3), true);
        super::super::tests::stop(&mut f.db, &stopped, 1, t0() - days(2));
        let stopped_long_ago = f.mandate(&["@stopped_long_ago"], t0() - days(33), true);
        super::super::tests::stop(&mut f.db, &stopped_long_ago, 2, t0() - days(32));
        f.mandate(&["@granted_later"], t0() + days(1), true);
        assert_eq!(
            f.known_at(t0()),
            ["@ended", "@open", "@open_too", "@stopped"]
        );
    }

    fn known_for(f: &Fixture, id: &str, now: DateTime<Utc>) -> Vec<String> {
        let known = f.db.known_targets_for(id, now).unwrap();
        known.iter().map(str::to_owned).collect()
    }

    fn hours(n: i64) -> chrono::Duration {
        chrono::Duration::hours(n)
    }

    #[test]
    fn a_card_held_for_the_morning_is_drawn_against_what_is_known_when_it_is_shown() {
        let mut f = Fixture::new();
        f.approved("@mila_news", t0() - days(1), Some(RecordState::Executed));
        // Asked at night, its card held; @mila_shop is approved two hours later.
        let held = f.asked("@rnila_shop", t0());
        f.approved("@mila_shop", t0() + hours(2), Some(RecordState::Executed));
        // Not shown yet: as of the instant the sender shows it.
        assert_eq!(known_for(&f, &held, t0() + hours(1)), ["@mila_news"]);
        assert_eq!(
            known_for(&f, &held, t0() + hours(10)),
            ["@mila_news", "@mila_shop"]
        );
        // Shown in the morning: from then on as of its `shown_at`, whenever it is read again
        // (its edits), and a target approved after it was shown changes nothing.
        f.show(&held, t0() + hours(10));
        f.approved("@mila_blog", t0() + hours(11), Some(RecordState::Executed));
        for now in [t0() + hours(12), t0() + days(40)] {
            assert_eq!(known_for(&f, &held, now), ["@mila_news", "@mila_shop"]);
        }
        assert!(matches!(
            f.db.known_targets_for("r_missing", t0()),
            Err(super::StoreError::Missing)
        ));
    }

    #[test]
    fn an_ask_a_mandate_answered_is_drawn_against_what_was_known_when_it_was_asked() {
        let mut f = Fixture::new();
        f.mandate(&["@covered"], t0() - days(1), true);
        let action = Fixture::action("@covered", t0());
        let outcome =
            f.db.ask(&Fixture::new_ask(action), covering(), t0())
                .unwrap();
        let AskOutcome::Covered(record) = outcome else {
            panic!("{outcome:?}")
        };
        f.approved("@mila_blog", t0() + hours(1), Some(RecordState::Executed));
        // Its receipt, drawn whenever the run ends: no card, so as of `created_at`.
        assert_eq!(known_for(&f, &record.id, t0() + hours(2)), ["@covered"]);
    }

    #[test]
    fn the_asks_part_reads_the_shown_at_index() {
        let f = Fixture::new();
        let plan = crate::tests::query_plan(&f.db, super::APPROVED_ASKS, ["a", "b", "c"]);
        assert!(
            plan.iter().any(|step| step.contains("records_shown")),
            "{plan:?}"
        );
    }
}
