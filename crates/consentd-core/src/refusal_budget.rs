//! How many refused asks are recorded one by one, per peer uid: the budget that keeps a refusal
//! flood from growing the records and the journal without bound.
//!
//! The policy:
//! - A refusal's key is its peer uid, its kind (when it has one) and its reason code. The message
//!   is not part of the key: it says where in the ask the problem is (a character position, a
//!   count of waiting asks), which a flood varies at will, and the session is answered with the
//!   message of its own ask in any case.
//! - The first refusal of a key is recorded (a `refused` record and a `denied` journal line, as
//!   always) and opens a window of `window` for that key. Repeats of the key inside the window are
//!   answered with that record's id, and only counted.
//! - Recording takes a token from the uid's bucket: `per_minute` tokens, refilled evenly over a
//!   minute (a burst of up to `per_minute`, then one every `60 s / per_minute`). A refusal that
//!   would open a window when the bucket is empty is not recorded: it opens a window with no
//!   record, and it and its repeats are counted.
//! - A window with no record lasts at least a minute. `window` zero turns coalescing off: each
//!   refusal is then judged by the bucket alone, and those over it are still only counted.
//! - When a window ends with something counted, one journal line says how many (`denied_repeats`,
//!   with the record's id when the window has one). So every refusal is either one `denied` line
//!   or counted once in one `denied_repeats` line.
//! - A uid holds at most [`MAX_WINDOWS_PER_UID`] windows; a refusal of a new key beyond that is
//!   keyed without its kind, so a session inventing kinds cannot grow the state either.
//!
//! Pure: the caller keeps the state, gives the time and writes what the verdicts say. Deciding
//! ([`RefusalBudget::judge`], [`RefusalBudget::due`]) does not change the state; the caller notes
//! the outcome ([`RefusalBudget::note`], [`RefusalBudget::close_due`]) only once what it wrote is
//! committed, so a failed write leaves no window naming a record that does not exist.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::reason::Reason;

/// The windows one uid may hold at once before a new key loses its kind.
pub const MAX_WINDOWS_PER_UID: usize = 32;

/// The configured budget: `[limits] refusals_per_minute` and `refusal_window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetPolicy {
    pub per_minute: u32,
    pub window: Duration,
}

/// What makes two refusals the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefusalKey {
    pub uid: u32,
    /// The labelled socket it came through (`None`: the main one). A window's record id is
    /// answered only to refusals of the same socket and uid: another peer never learns it. The
    /// rate (`per_minute`) is the uid's, whatever its socket.
    pub listener: Option<String>,
    pub kind: Option<String>,
    pub reason: Reason,
}

/// What to do with one refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Record it and journal its `denied` line; its record opens the window of `key` (the
    /// refusal's own, or without its kind when the uid holds too many windows).
    Record { key: RefusalKey },
    /// Only count it, under `key` (as for `Record`): in an open window, answered with that window's record id if it has one,
    /// or in a new window with no record (the uid's bucket is empty).
    Count { key: RefusalKey, id: Option<String> },
}

/// A window that ended with refusals counted in it: one `denied_repeats` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub key: RefusalKey,
    /// The record that opened the window, if it was recorded.
    pub id: Option<String>,
    /// Refusals counted in the window (the recorded first one is not among them).
    pub count: u64,
}

#[derive(Debug, Clone)]
struct Window {
    /// When the window ends: its repeats are counted until then.
    until: DateTime<Utc>,
    id: Option<String>,
    count: u64,
}

/// The budget's state: open windows by key, and each uid's bucket as the time its next token is
/// due when it is empty (the "theoretical arrival time" of a generic cell rate algorithm).
#[derive(Debug, Clone, Default)]
pub struct RefusalBudget {
    windows: HashMap<RefusalKey, Window>,
    next_due: HashMap<u32, DateTime<Utc>>,
    /// The latest time noted. Times are read before the store's queue, so one may come a moment
    /// after a later one; each is taken as at least this, and the budget's time never goes back.
    latest: Option<DateTime<Utc>>,
}

fn interval(policy: BudgetPolicy) -> chrono::Duration {
    chrono::Duration::milliseconds(60_000 / i64::from(policy.per_minute.max(1)))
}

/// How long a window lasts: `window` for a recorded one; at least a minute for one with no
/// record, so that with coalescing off (`window` zero) a refusal over the budget is still only
/// counted, in at most one line a minute per key.
fn length(policy: BudgetPolicy, recorded: bool) -> chrono::Duration {
    let window = chrono::Duration::from_std(policy.window).unwrap_or(chrono::Duration::MAX);
    if recorded {
        window
    } else {
        window.max(chrono::Duration::minutes(1))
    }
}

impl RefusalBudget {
    /// What to do with a refusal of `key` at `now`. Changes nothing.
    pub fn judge(&self, key: &RefusalKey, policy: BudgetPolicy, now: DateTime<Utc>) -> Verdict {
        let now = self.at(now);
        let key = self.effective_key(key, now);
        if let Some(open) = self.open_window(&key, now) {
            return Verdict::Count {
                id: open.id.clone(),
                key,
            };
        }
        if self.has_token(key.uid, policy, now) {
            Verdict::Record { key }
        } else {
            Verdict::Count { key, id: None }
        }
    }

    /// Notes what was done with a refusal judged `verdict`; `id` is the record a `Record`
    /// verdict wrote.
    pub fn note(
        &mut self,
        verdict: &Verdict,
        id: Option<String>,
        policy: BudgetPolicy,
        now: DateTime<Utc>,
    ) {
        let now = self.at(now);
        self.latest = Some(now);
        match verdict {
            Verdict::Record { key } => {
                self.take_token(key.uid, policy, now);
                let length = length(policy, true);
                // With coalescing off no window opens, even for a refusal judged a moment
                // earlier and noted later (the times are taken before the store's queue).
                if length > chrono::Duration::zero() {
                    let window = Window {
                        until: now + length,
                        id,
                        count: 0,
                    };
                    self.windows.insert(key.clone(), window);
                }
            }
            Verdict::Count { key, id } => {
                let open = self.windows.entry(key.clone()).or_insert(Window {
                    until: now + length(policy, id.is_some()),
                    id: id.clone(),
                    count: 0,
                });
                open.count += 1;
            }
        }
    }

    /// The windows ended by `now` with something counted, whose lines are due. Changes nothing.
    pub fn due(&self, now: DateTime<Utc>) -> Vec<Closed> {
        let now = self.at(now);
        let mut due: Vec<Closed> = self
            .windows
            .iter()
            .filter(|(_, open)| open.count > 0 && open.until <= now)
            .map(|(key, open)| closed(key, open))
            .collect();
        sort(&mut due);
        due
    }

    /// Forgets the windows ended by `now` (their lines, from [`Self::due`], are written) and the
    /// buckets that are full again.
    pub fn close_due(&mut self, now: DateTime<Utc>) {
        let now = self.at(now);
        self.windows.retain(|_, open| open.until > now);
        self.next_due.retain(|_, due| *due > now);
    }

    /// Every window with something counted, ended or not, and forgets them all: at shutdown.
    pub fn drain(&mut self) -> Vec<Closed> {
        let mut all: Vec<Closed> = self
            .windows
            .drain()
            .filter(|(_, open)| open.count > 0)
            .map(|(key, open)| closed(&key, &open))
            .collect();
        self.next_due.clear();
        self.latest = None;
        sort(&mut all);
        all
    }

    /// The refusals counted and not yet written, over all open windows.
    pub fn pending_count(&self) -> u64 {
        self.windows.values().map(|open| open.count).sum()
    }

    fn at(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.latest.map_or(now, |latest| latest.max(now))
    }

    fn open_window(&self, key: &RefusalKey, now: DateTime<Utc>) -> Option<&Window> {
        self.windows.get(key).filter(|open| open.until > now)
    }

    /// `key`, or `key` without its kind when the uid already holds its most windows.
    fn effective_key(&self, key: &RefusalKey, now: DateTime<Utc>) -> RefusalKey {
        if key.kind.is_none() || self.windows.contains_key(key) {
            return key.clone();
        }
        let held = self
            .windows
            .iter()
            .filter(|(held, open)| held.uid == key.uid && open.until > now)
            .count();
        if held < MAX_WINDOWS_PER_UID {
            return key.clone();
        }
        RefusalKey {
            kind: None,
            ..key.clone()
        }
    }

    fn has_token(&self, uid: u32, policy: BudgetPolicy, now: DateTime<Utc>) -> bool {
        let burst = interval(policy) * (policy.per_minute.max(1) as i32 - 1);
        self.next_due
            .get(&uid)
            .is_none_or(|due| *due - burst <= now)
    }

    fn take_token(&mut self, uid: u32, policy: BudgetPolicy, now: DateTime<Utc>) {
        let due = self.next_due.entry(uid).or_insert(now);
        *due = (*due).max(now) + interval(policy);
    }
}

fn closed(key: &RefusalKey, open: &Window) -> Closed {
    Closed {
        key: key.clone(),
        id: open.id.clone(),
        count: open.count,
    }
}

/// A fixed order for lines written together, so a journal is the same from run to run.
fn sort(lines: &mut [Closed]) {
    lines.sort_by(|a, b| {
        (a.key.uid, &a.key.kind, a.key.reason.as_str(), &a.id).cmp(&(
            b.key.uid,
            &b.key.kind,
            b.key.reason.as_str(),
            &b.id,
        ))
    });
}

#[cfg(test)]
mod tests;
