//! The owner out of reach: Telegram refusing the bot itself (409 Conflict, a webhook set, 401
//! Unauthorized) is an episode only a person can end, so the daemon keeps serving its socket,
//! remembers since when and why in one value, says so once in the log, and retries with
//! [`Backoff::unreachable`](crate::backoff::Backoff::unreachable) until Telegram answers again.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::telegram::SendError;

/// Why Telegram refuses the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// 409 Conflict: another program long-polls the same token.
    Conflict,
    /// 409 while a webhook is set: Telegram delivers updates there instead.
    Webhook,
    /// 401 Unauthorized: the token was revoked or is wrong.
    Revoked,
}

impl Cause {
    /// The cause behind a failed call, when it is one that retrying alone cannot end.
    pub(crate) fn of(error: &SendError) -> Option<Cause> {
        match error {
            SendError::Conflict => Some(Cause::Conflict),
            SendError::WebhookSet => Some(Cause::Webhook),
            SendError::Unauthorized => Some(Cause::Revoked),
            _ => None,
        }
    }

    /// A word for the owner's notice's selector and for a waiting session's `detail`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cause::Conflict => "conflict",
            Cause::Webhook => "webhook",
            Cause::Revoked => "token_revoked",
        }
    }

    /// The one line the log gets when an episode starts (or its cause changes): what happened
    /// and what the operator does about it.
    fn log_line(self) {
        match self {
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
        }
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
            cause.log_line();
        }
    }

    /// Telegram answered getUpdates again at `now`: ends the episode, if one was open, and
    /// returns it when the owner is to be told (not within an hour of the last notice).
    pub(crate) fn answered(&self, now: DateTime<Utc>) -> Option<Unreachable> {
        let ended = self.episode.send_replace(None)?;
        tracing::info!(
            since = %ended.since,
            cause = ended.cause.as_str(),
            "Telegram answers again; polling resumes"
        );
        let tell = self
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .notice_due(now);
        tell.then_some(ended)
    }

    /// Follows the episodes as they open and end, for a report to waiting sessions (not made
    /// yet: only the tests follow it so far).
    #[allow(dead_code)]
    pub(crate) fn watch(&self) -> watch::Receiver<Option<Unreachable>> {
        self.episode.subscribe()
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
        assert_eq!(Cause::of(&SendError::Transient("x".into())), None);
        assert_eq!(Cause::of(&SendError::Unauthorized), Some(Cause::Revoked));
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
}
