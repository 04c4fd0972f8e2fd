use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use super::*;

const POLICY: BudgetPolicy = BudgetPolicy {
    per_minute: 3,
    window: Duration::from_secs(60),
};

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap() + chrono::Duration::seconds(seconds)
}

fn key(uid: u32, kind: Option<&str>, reason: Reason) -> RefusalKey {
    RefusalKey {
        uid,
        listener: None,
        kind: kind.map(str::to_owned),
        reason,
    }
}

fn recorded(verdict: &Verdict) -> bool {
    matches!(verdict, Verdict::Record { .. })
}

/// Judges and notes one refusal as a store would, the recorded ones named `r<n>`; returns the
/// verdict and the lines that came due before it.
fn refuse(
    budget: &mut RefusalBudget,
    key: &RefusalKey,
    now: DateTime<Utc>,
    n: usize,
) -> (Verdict, Vec<Closed>) {
    let due = budget.due(now);
    let verdict = budget.judge(key, POLICY, now);
    budget.close_due(now);
    let id = recorded(&verdict).then(|| format!("r{n}"));
    budget.note(&verdict, id, POLICY, now);
    (verdict, due)
}

#[test]
fn a_refusal_is_recorded_then_its_repeats_are_counted_under_its_record() {
    // (seconds, uid, kind, reason, expected verdict: Some(id) counted under it, None recorded)
    type Case = (
        i64,
        u32,
        Option<&'static str>,
        Reason,
        Option<Option<&'static str>>,
    );
    let cases: [Case; 8] = [
        (0, 1, Some("publish_x"), Reason::NotNfc, None),
        (1, 1, Some("publish_x"), Reason::NotNfc, Some(Some("r0"))),
        (2, 1, Some("publish_x"), Reason::NotNfc, Some(Some("r0"))),
        // Another reason, another kind, another uid: each a key of its own.
        (3, 1, Some("publish_x"), Reason::TooLarge, None),
        (4, 1, Some("send_mail"), Reason::NotNfc, None),
        (5, 2, Some("publish_x"), Reason::NotNfc, None),
        (59, 1, Some("publish_x"), Reason::NotNfc, Some(Some("r0"))),
        // The window has ended: recorded again (uid 1's bucket had three tokens, one refilled).
        (60, 1, Some("publish_x"), Reason::NotNfc, None),
    ];
    let mut budget = RefusalBudget::default();
    for (n, (seconds, uid, kind, reason, expected)) in cases.into_iter().enumerate() {
        let key = key(uid, kind, reason);
        let (verdict, _) = refuse(&mut budget, &key, at(seconds), n);
        let want = match expected {
            None => Verdict::Record { key: key.clone() },
            Some(id) => Verdict::Count {
                key: key.clone(),
                id: id.map(str::to_owned),
            },
        };
        assert_eq!(verdict, want, "case {n} at {seconds}s");
    }
}

#[test]
fn an_empty_bucket_counts_a_new_key_without_a_record() {
    let mut budget = RefusalBudget::default();
    let reasons = [
        Reason::NotNfc,
        Reason::TooLarge,
        Reason::BadRequest,
        Reason::UnknownKind,
    ];
    let verdicts: Vec<Verdict> = reasons
        .iter()
        .enumerate()
        .map(|(n, reason)| refuse(&mut budget, &key(7, None, *reason), at(0), n).0)
        .collect();
    assert!(verdicts[..3].iter().all(recorded), "{verdicts:?}");
    assert_eq!(
        verdicts[3],
        Verdict::Count {
            key: key(7, None, Reason::UnknownKind),
            id: None
        }
    );
}

#[test]
fn the_bucket_refills_one_token_per_interval() {
    // Three tokens a minute: one every 20 s once the burst is spent.
    let cases: [(i64, bool); 6] = [
        (0, true),
        (0, true),
        (0, true),
        (19, false),
        (20, true),
        (21, false),
    ];
    let mut budget = RefusalBudget::default();
    for (n, (seconds, want_record)) in cases.into_iter().enumerate() {
        // A new key each time, so no window answers it.
        let kind = format!("kind{n}");
        let key = key(1, Some(&kind), Reason::NotNfc);
        let (verdict, _) = refuse(&mut budget, &key, at(seconds), n);
        assert_eq!(recorded(&verdict), want_record, "case {n} at {seconds}s");
    }
}

#[test]
fn an_ended_window_with_repeats_comes_due_once_with_its_count() {
    let mut budget = RefusalBudget::default();
    let flood = key(1, Some("publish_x"), Reason::NotNfc);
    for n in 0..5 {
        refuse(&mut budget, &flood, at(n), n as usize);
    }
    assert_eq!(budget.due(at(59)), [], "still open");
    let (_, due) = refuse(&mut budget, &key(2, None, Reason::BadRequest), at(60), 9);
    assert_eq!(
        due,
        [Closed {
            key: flood,
            id: Some("r0".into()),
            count: 4
        }]
    );
    assert_eq!(budget.due(at(61)), [], "written once");
}

#[test]
fn a_window_without_repeats_writes_no_line() {
    let mut budget = RefusalBudget::default();
    refuse(&mut budget, &key(1, None, Reason::NotNfc), at(0), 0);
    assert_eq!(budget.due(at(600)), []);
    assert_eq!(budget.drain(), []);
}

#[test]
fn drain_gives_every_open_count_in_a_fixed_order() {
    let mut budget = RefusalBudget::default();
    for n in 0..3 {
        refuse(
            &mut budget,
            &key(2, None, Reason::TooLarge),
            at(n),
            n as usize,
        );
        refuse(
            &mut budget,
            &key(1, None, Reason::NotNfc),
            at(n),
            10 + n as usize,
        );
    }
    assert_eq!(budget.pending_count(), 4);
    let drained = budget.drain();
    let keys: Vec<(u32, u64)> = drained
        .iter()
        .map(|line| (line.key.uid, line.count))
        .collect();
    assert_eq!(keys, [(1, 2), (2, 2)]);
    assert_eq!(budget.pending_count(), 0);
}

#[test]
fn a_uid_inventing_kinds_is_folded_into_a_key_without_one() {
    let mut budget = RefusalBudget::default();
    let policy = BudgetPolicy {
        per_minute: 1000,
        ..POLICY
    };
    for n in 0..MAX_WINDOWS_PER_UID + 10 {
        let kind = format!("k{n}");
        let key = key(1, Some(&kind), Reason::UnknownKind);
        let verdict = budget.judge(&key, policy, at(0));
        let id = recorded(&verdict).then(|| format!("r{n}"));
        budget.note(&verdict, id, policy, at(0));
    }
    assert!(budget.windows.len() <= MAX_WINDOWS_PER_UID + 1);
    assert!(budget
        .windows
        .contains_key(&key(1, None, Reason::UnknownKind)));
}

/// Every refusal is either recorded (one `denied` line) or counted once in a line that comes due:
/// the sum is the number of refusals, and the lines are bounded by the windows and the bucket.
#[test]
fn a_flood_is_accounted_for_exactly_and_its_lines_are_bounded() {
    let mut budget = RefusalBudget::default();
    let reasons = [
        Reason::NotNfc,
        Reason::TooLarge,
        Reason::BadRequest,
        Reason::InvisibleCharacter,
    ];
    let (mut records, mut counted, mut lines) = (0u64, 0u64, 0u64);
    let refusals = 2_000u64;
    // One refusal every 150 ms over 300 s, cycling through four keys.
    for n in 0..refusals {
        let now = at(0) + chrono::Duration::milliseconds(150 * n as i64);
        let key = key(1, None, reasons[n as usize % reasons.len()]);
        let (verdict, due) = refuse(&mut budget, &key, now, n as usize);
        records += u64::from(recorded(&verdict));
        lines += due.len() as u64;
        counted += due.iter().map(|line| line.count).sum::<u64>();
    }
    let rest = budget.drain();
    lines += rest.len() as u64;
    counted += rest.iter().map(|line| line.count).sum::<u64>();
    assert_eq!(records + counted, refusals);
    let minutes = 300 / 60;
    // Each key: one window a minute, so at most one record and one count line a minute.
    let bound = reasons.len() as u64 * (minutes + 1) * 2;
    assert!(records + lines <= bound, "{records} + {lines} > {bound}");
}

#[test]
fn with_coalescing_off_each_refusal_is_recorded_while_the_bucket_lasts() {
    let off = BudgetPolicy {
        per_minute: 2,
        window: Duration::ZERO,
    };
    let mut budget = RefusalBudget::default();
    let flood = key(1, None, Reason::NotNfc);
    let mut verdicts = Vec::new();
    for n in 0..5 {
        let verdict = budget.judge(&flood, off, at(0));
        budget.close_due(at(0));
        let id = recorded(&verdict).then(|| format!("r{n}"));
        budget.note(&verdict, id, off, at(0));
        verdicts.push(recorded(&verdict));
    }
    assert_eq!(verdicts, [true, true, false, false, false]);
    // A refusal timed a moment before the last one noted is taken as at its time: not a
    // repeat of it, and judged by the same bucket.
    let earlier = at(0) - chrono::Duration::milliseconds(5);
    let off_but_roomy = BudgetPolicy {
        window: Duration::ZERO,
        ..POLICY
    };
    let mut fresh = RefusalBudget::default();
    let record = fresh.judge(&flood, off_but_roomy, at(0));
    fresh.note(&record, Some("r".into()), off_but_roomy, at(0));
    assert!(recorded(&fresh.judge(&flood, off_but_roomy, earlier)));
    assert_eq!(budget.due(at(59)), [], "over the budget: a minute's window");
    let due = budget.due(at(60));
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].id.clone(), due[0].count), (None, 3));
}
