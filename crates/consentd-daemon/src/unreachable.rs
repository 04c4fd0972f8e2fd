//! The owner out of reach: Telegram refusing the bot itself (409 Conflict, a webhook set, 401
//! Unauthorized) is an episode only a person can end, so the daemon keeps serving its socket,
//! remembers since when and why in one value, says so once in the log, and retries with
//! [`Backoff::unreachable`](crate::backoff::Backoff::unreachable) until Telegram answers again.

use std::sync::Arc;

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
    /// The causes whose line the log has had in this episode: the poller and the sender may
    /// see two causes alternate (one call answered before a fix, the other after), and each is
    /// said once.
    said: Vec<Cause>,
}

/// What the daemon knows about reaching the owner: `None` while Telegram answers, else the
/// episode. One value shared by the poller (which opens and ends episodes), the sender (which
/// opens one when a send is refused the same way) and whoever reports it to waiting sessions
/// (through [`Reach::watch`]); created by the daemon's wiring.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach(Arc<watch::Sender<Option<Unreachable>>>);

impl Reach {
    /// Telegram refused the bot for `cause` at `now`: opens an episode or notes its new cause,
    /// and logs a line only then, never for each retry.
    pub(crate) fn refused(&self, cause: Cause, now: DateTime<Utc>) {
        let mut first = false;
        self.0.send_if_modified(|current| {
            let episode = current.get_or_insert_with(|| Unreachable {
                since: now,
                cause,
                said: Vec::new(),
            });
            first = !episode.said.contains(&cause);
            if first {
                episode.said.push(cause);
            }
            let changed = first || episode.cause != cause;
            episode.cause = cause;
            changed
        });
        if first {
            cause.log_line();
        }
    }

    /// Telegram answered getUpdates again: ends the episode, if one was open, and returns it.
    pub(crate) fn answered(&self) -> Option<Unreachable> {
        let ended = self.0.send_replace(None)?;
        tracing::info!(
            since = %ended.since,
            cause = ended.cause.as_str(),
            "Telegram answers again; polling resumes"
        );
        Some(ended)
    }

    /// Follows the episodes as they open and end, for a report to waiting sessions (not made
    /// yet: only the tests follow it so far).
    #[allow(dead_code)]
    pub(crate) fn watch(&self) -> watch::Receiver<Option<Unreachable>> {
        self.0.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_keeps_its_start_across_causes_and_ends_once() {
        let reach = Reach::default();
        let (t0, t1) = (
            DateTime::<Utc>::from_timestamp(1_000, 0).unwrap(),
            DateTime::<Utc>::from_timestamp(2_000, 0).unwrap(),
        );
        let watching = reach.watch();
        reach.refused(Cause::Conflict, t0);
        reach.refused(Cause::Conflict, t1);
        assert_eq!(
            watching.borrow().as_ref().map(|u| (u.since, u.cause)),
            Some((t0, Cause::Conflict))
        );
        reach.refused(Cause::Revoked, t1);
        reach.refused(Cause::Conflict, t1);
        assert_eq!(
            watching.borrow().as_ref().map(|u| u.said.clone()),
            Some(vec![Cause::Conflict, Cause::Revoked]),
            "each cause is said once"
        );
        reach.refused(Cause::Revoked, t1);
        assert_eq!(
            watching.borrow().as_ref().map(|u| u.cause),
            Some(Cause::Revoked)
        );
        assert_eq!(reach.answered().map(|u| u.since), Some(t0));
        assert_eq!(reach.answered(), None);
        assert_eq!(Cause::of(&SendError::Transient("x".into())), None);
        assert_eq!(Cause::of(&SendError::Unauthorized), Some(Cause::Revoked));
    }
}
