//! The owner out of reach: Telegram refusing the bot itself (409 Conflict, a webhook set, 401
//! Unauthorized), the owner having blocked it (403 on their chat), or Telegram not answering
//! at all (the network, 5xx) is an episode. The daemon keeps serving its socket, remembers
//! since when and why in one value that waiting sessions follow (their `waiting` says
//! `owner_unreachable`), says so once in the log, and retries (a refusal or a block with
//! [`Backoff::unreachable`](crate::backoff::Backoff::unreachable)) until Telegram answers again.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::telegram::SendError;

/// Why Telegram cannot reach the owner; the core's word for it, so a waiting session's
/// `waiting` and the owner's notice name the same causes.
pub(crate) use consentd_core::waiting::Cut as Cause;

/// The cause behind a failed call when it is Telegram refusing the bot itself (409, a webhook,
/// 401): retrying alone cannot end it, so every lane waits, up to a minute between tries.
pub(crate) fn refusal(error: &SendError) -> Option<Cause> {
    match error {
        SendError::Conflict => Some(Cause::Conflict),
        SendError::WebhookSet => Some(Cause::Webhook),
        SendError::Unauthorized => Some(Cause::Revoked),
        _ => None,
    }
}

/// The cause behind a failed getUpdates that is not a refusal: the network or Telegram's own
/// servers failing. The poller calls Telegram without pause, so it is the one that notes these.
pub(crate) fn outage(error: &SendError) -> Option<Cause> {
    match error {
        SendError::Transient(_) => Some(Cause::Network),
        SendError::ServerError(_) => Some(Cause::ServerError),
        _ => None,
    }
}

/// Whether an answer from getUpdates ends an episode of `cause`: a block is the owner's, and
/// only a message delivered to them ends it ([`Reach::delivered`]).
fn ended_by_polling(cause: Cause) -> bool {
    cause != Cause::Blocked
}

/// Whether the owner hears that an episode ended: a refusal of the bot or a block always (only
/// a person ended it), the network or Telegram's servers only after a minute or more, so a
/// blip that no card waited out is not worth a message.
fn worth_a_notice(ended: &Unreachable, now: DateTime<Utc>) -> bool {
    !matches!(ended.cause, Cause::Network | Cause::ServerError)
        || now - ended.since >= chrono::TimeDelta::minutes(1)
}

/// The one line the log gets when an episode starts (or its cause changes): what happened and
/// what the operator does about it.
fn log_line(cause: Cause) {
    match cause {
        Cause::Conflict => tracing::error!(
            "Telegram answered 409 Conflict: another consentd or another program is polling \
             this bot's token; stop it. consentd keeps serving its socket (asks wait) and \
             retries getUpdates until it can poll again"
        ),
        Cause::Webhook => tracing::error!(
            "a webhook is set for this bot, so Telegram refuses getUpdates (409 Conflict): \
             remove it with the Bot API's deleteWebhook (curl \
             https://api.telegram.org/bot<TOKEN>/deleteWebhook) and give consentd a bot of \
             its own. consentd keeps serving its socket (asks wait) and retries"
        ),
        Cause::Revoked => tracing::error!(
            "Telegram answered 401 Unauthorized: the bot token was revoked or is wrong: make \
             a new one with @BotFather and put it in token_file, then restart consentd. \
             consentd keeps serving its socket (asks wait; nothing runs without a press) \
             and retries"
        ),
        Cause::Blocked => tracing::error!(
            "Telegram answered 403 Forbidden for the owner's chat: the owner blocked the bot. \
             Messages and cards wait until they unblock it; consentd keeps serving its socket \
             (asks wait) and retries"
        ),
        Cause::Network | Cause::ServerError => tracing::warn!(
            cause = cause.as_str(),
            "Telegram cannot be reached; waiting sessions are told the owner is out of reach \
             until it answers again"
        ),
    }
}

/// An episode of the owner out of reach: since when, and the latest cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreachable {
    /// The first refusal of the episode; a change of cause keeps it (the owner was cut off all
    /// along).
    pub since: DateTime<Utc>,
    pub cause: Cause,
}

/// How long a cause's log line, or the owner's "reachable again" notice, is not repeated. Two
/// pollers on one token take turns: each turn would otherwise end an episode and begin the
/// next, with a line in the log and a message to the owner every minute or so.
const REPEAT_QUIET: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// What was said, across episodes: each cause's last log line, and the last notice.
#[derive(Debug, Default)]
struct Said {
    lines: Vec<(Cause, DateTime<Utc>)>,
    notice: Option<DateTime<Utc>>,
}

impl Said {
    /// Whether `cause`'s line is due at `now` (and, if so, it counts as said).
    fn line_due(&mut self, cause: Cause, now: DateTime<Utc>) -> bool {
        match self.lines.iter_mut().find(|(said, _)| *said == cause) {
            Some((_, at)) if now - *at < REPEAT_QUIET => false,
            Some((_, at)) => {
                *at = now;
                true
            }
            None => {
                self.lines.push((cause, now));
                true
            }
        }
    }

    /// Whether the owner's notice is due at `now` (and, if so, it counts as told).
    fn notice_due(&mut self, now: DateTime<Utc>) -> bool {
        let due = self.notice.is_none_or(|at| now - at >= REPEAT_QUIET);
        if due {
            self.notice = Some(now);
        }
        due
    }
}

/// What the daemon knows about reaching the owner: `None` while Telegram answers, else the
/// episode. One value shared by the poller (which opens and ends episodes), the sender (which
/// opens one when a send is refused the same way) and whoever reports it to waiting sessions
/// (through [`Reach::watch`]); created by the daemon's wiring.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    episode: Arc<watch::Sender<Option<Unreachable>>>,
    said: Arc<Mutex<Said>>,
}

impl Reach {
    /// Telegram refused the bot for `cause` at `now`: opens an episode or notes its new cause,
    /// and logs a line only for a cause not said within the last hour, never for each retry.
    pub(crate) fn refused(&self, cause: Cause, now: DateTime<Utc>) {
        self.episode.send_if_modified(|current| {
            let opened = current.is_none();
            let episode = current.get_or_insert_with(|| Unreachable { since: now, cause });
            let changed = opened || episode.cause != cause;
            episode.cause = cause;
            changed
        });
        let due = self
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .line_due(cause, now);
        if due {
            log_line(cause);
        }
    }

    /// Telegram answered getUpdates again at `now`: ends the episode, if one was open and was
    /// not a block, and returns it when the owner is to be told.
    pub(crate) fn answered(&self, now: DateTime<Utc>) -> Option<Unreachable> {
        self.end(now, ended_by_polling)
    }

    /// A message reached the owner's chat at `now`: ends a block, and returns it when the
    /// owner is to be told. Sends go through during a 409 (only polling is refused), so they
    /// end nothing else.
    pub(crate) fn delivered(&self, now: DateTime<Utc>) -> Option<Unreachable> {
        self.end(now, |cause| cause == Cause::Blocked)
    }

    /// Ends the open episode when `ends` says its cause is over; the ended episode when the
    /// owner is to be told (worth a notice, and not within an hour of the last one).
    fn end(&self, now: DateTime<Utc>, ends: fn(Cause) -> bool) -> Option<Unreachable> {
        let mut ended = None;
        self.episode.send_if_modified(|current| {
            if current.as_ref().is_some_and(|episode| ends(episode.cause)) {
                ended = current.take();
            }
            ended.is_some()
        });
        let ended = ended?;
        tracing::info!(
            since = %ended.since,
            cause = ended.cause.as_str(),
            "Telegram reaches the owner again"
        );
        if !worth_a_notice(&ended, now) {
            return None;
        }
        let tell = self
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .notice_due(now);
        tell.then_some(ended)
    }

    /// Follows the episodes as they open, change cause and end, for waiting sessions.
    pub(crate) fn watch(&self) -> watch::Receiver<Option<Unreachable>> {
        self.episode.subscribe()
    }

    /// The open episode, if any: since when, and its latest cause.
    pub(crate) fn current(&self) -> Option<Unreachable> {
        self.episode.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_keeps_its_start_across_causes_and_ends_once() {
        let reach = Reach::default();
        let at = |secs: i64| DateTime::<Utc>::from_timestamp(secs, 0).unwrap();
        let mut watching = reach.watch();
        reach.refused(Cause::Conflict, at(1_000));
        assert!(
            watching.has_changed().unwrap(),
            "an opened episode is announced"
        );
        watching.mark_unchanged();
        reach.refused(Cause::Conflict, at(2_000));
        assert!(
            !watching.has_changed().unwrap(),
            "a retry of the same cause is not"
        );
        assert_eq!(
            watching.borrow().as_ref().map(|u| (u.since, u.cause)),
            Some((at(1_000), Cause::Conflict))
        );
        reach.refused(Cause::Revoked, at(2_000));
        assert_eq!(
            watching.borrow().as_ref().map(|u| (u.since, u.cause)),
            Some((at(1_000), Cause::Revoked)),
            "a new cause keeps the episode's start"
        );
        assert_eq!(reach.answered(at(2_100)).map(|u| u.since), Some(at(1_000)));
        assert_eq!(*watching.borrow(), None, "the episode has ended");
        assert_eq!(reach.answered(at(2_200)), None, "an episode ends once");
        assert_eq!(refusal(&SendError::Transient("x".into())), None);
        assert_eq!(refusal(&SendError::Unauthorized), Some(Cause::Revoked));
        assert_eq!(
            outage(&SendError::Transient("x".into())),
            Some(Cause::Network)
        );
        assert_eq!(
            outage(&SendError::ServerError("x".into())),
            Some(Cause::ServerError)
        );
    }

    /// Two pollers on one token take turns: the owner is told once an hour at most, and each
    /// cause's log line is not repeated within the hour either.
    #[test]
    fn a_flapping_refusal_tells_the_owner_and_the_log_once_an_hour() {
        let reach = Reach::default();
        let at = |minutes: i64| DateTime::<Utc>::from_timestamp(minutes * 60, 0).unwrap();
        let mut told = Vec::new();
        for minute in 0..130 {
            if minute % 2 == 0 {
                reach.refused(Cause::Conflict, at(minute));
            } else if reach.answered(at(minute)).is_some() {
                told.push(minute);
            }
        }
        assert_eq!(told, [1, 61, 121], "a notice an hour at most");
        let mut said = Said::default();
        let lines: Vec<i64> = (0..130)
            .filter(|minute| said.line_due(Cause::Conflict, at(*minute)))
            .collect();
        assert_eq!(lines, [0, 60, 120], "a line an hour at most");
        assert!(
            said.line_due(Cause::Revoked, at(5)),
            "another cause has its own line"
        );
    }

    /// Which success ends which episode, and which ended episode the owner hears of: a table,
    /// one assertion per case.
    #[test]
    fn a_block_ends_by_a_delivery_and_a_short_outage_tells_no_one() {
        let at = |secs: i64| DateTime::<Utc>::from_timestamp(1_000_000 + secs, 0).unwrap();
        // (case, cause, what succeeded, seconds later, ended, owner told)
        let cases = [
            (
                "a block outlives a poll",
                Cause::Blocked,
                "poll",
                300,
                false,
                false,
            ),
            (
                "a block ends by a delivery",
                Cause::Blocked,
                "send",
                300,
                true,
                true,
            ),
            (
                "a 409 outlives a send",
                Cause::Conflict,
                "send",
                300,
                false,
                false,
            ),
            (
                "a 409 ends by a poll",
                Cause::Conflict,
                "poll",
                5,
                true,
                true,
            ),
            (
                "a 401 ends by a poll",
                Cause::Revoked,
                "poll",
                5,
                true,
                true,
            ),
            (
                "a network blip ends untold",
                Cause::Network,
                "poll",
                20,
                true,
                false,
            ),
            (
                "a network hour is told",
                Cause::Network,
                "poll",
                3_600,
                true,
                true,
            ),
            (
                "a short 5xx ends untold",
                Cause::ServerError,
                "poll",
                59,
                true,
                false,
            ),
            (
                "a 5xx minute is told",
                Cause::ServerError,
                "poll",
                60,
                true,
                true,
            ),
        ];
        for (case, cause, success, later, ended, told) in cases {
            let reach = Reach::default();
            reach.refused(cause, at(0));
            let notice = match success {
                "poll" => reach.answered(at(later)),
                _ => reach.delivered(at(later)),
            };
            assert_eq!(reach.current().is_none(), ended, "{case}: ended");
            assert_eq!(notice.is_some(), told, "{case}: told");
        }
    }
}
