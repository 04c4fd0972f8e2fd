//! Why an open ask waits, as a waiting session is told on each interim line and in `status`:
//! from plain facts the daemon gathers (the card's place in the sender's queue or in the chat,
//! whether it is held for quiet hours, whether Telegram can be reached), one [`Waiting`] value.
//! The session's only other source would be guessing, and a model behind `consent_ask` that
//! cannot tell "the owner is asleep" from "the bot is cut off" retries, or gives up, wrongly.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};

/// Why Telegram cannot reach the owner: the cause of an episode, with what the operator does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cut {
    /// The network (DNS, connect, TLS, a timeout): Telegram's servers cannot be reached.
    Network,
    /// Telegram answers 5xx: its side is failing.
    ServerError,
    /// 401 Unauthorized: the bot token was revoked or is wrong.
    Revoked,
    /// 403 Forbidden on the owner's chat: the owner blocked the bot (or deleted their account).
    Blocked,
    /// 409 Conflict: another program long-polls the same token.
    Conflict,
    /// 409 while a webhook is set: Telegram delivers updates there instead.
    Webhook,
}

impl Cut {
    /// One word, for the owner's notice's selector and the daemon's log.
    pub fn as_str(self) -> &'static str {
        match self {
            Cut::Network => "network",
            Cut::ServerError => "server_error",
            Cut::Revoked => "token_revoked",
            Cut::Blocked => "blocked",
            Cut::Conflict => "conflict",
            Cut::Webhook => "webhook",
        }
    }

    /// What a waiting session's `detail` says: which cause, and what the operator does about
    /// it. It starts with the cause's word, so a program can match it.
    pub fn detail(self) -> &'static str {
        match self {
            Cut::Network => {
                "network: Telegram's servers cannot be reached from this machine; the operator \
                 checks the machine's network (DNS, firewall, proxy)"
            }
            Cut::ServerError => {
                "server_error: Telegram answers with server errors (5xx); it usually passes on \
                 its own, and consentd keeps trying"
            }
            Cut::Revoked => {
                "token_revoked: Telegram answered 401, the bot token was revoked or is wrong; \
                 the operator makes a new one with @BotFather, puts it in token_file and \
                 restarts consentd"
            }
            Cut::Blocked => {
                "blocked: Telegram answered 403, the owner blocked the bot; the owner unblocks \
                 it in Telegram (or sends it /start)"
            }
            Cut::Conflict => {
                "conflict: Telegram answered 409, another program is polling this bot's token; \
                 the operator stops the other consentd or script"
            }
            Cut::Webhook => {
                "webhook: a webhook is set for this bot, so Telegram refuses to be polled; the \
                 operator removes it with the Bot API's deleteWebhook"
            }
        }
    }
}

/// Why an open record waits: one of four, tagged `why` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Waiting {
    /// Held by the notification gate until `until`: the owner's quiet hours end then (or, for a
    /// card over the night's limit, a night card slot frees then).
    QuietHours {
        #[serde(serialize_with = "instant")]
        until: DateTime<Utc>,
    },
    /// In the sender's queue, `ahead` cards before it.
    Queued { ahead: u32 },
    /// The last attempts to reach Telegram failed, since `since`; `detail` says why and what
    /// the operator does ([`Cut::detail`]).
    OwnerUnreachable {
        #[serde(serialize_with = "instant")]
        since: DateTime<Utc>,
        detail: String,
    },
    /// The card is in the owner's chat, answerable until `until`.
    Shown {
        #[serde(serialize_with = "instant")]
        until: DateTime<Utc>,
    },
}

/// Times on the wire as everywhere else in the protocol: RFC 3339, UTC, milliseconds.
fn instant<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// Where an open record's card is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Queued to be sent, `ahead` cards due before it; `held_until` when the gate holds it.
    Queued {
        ahead: u32,
        held_until: Option<DateTime<Utc>>,
    },
    /// Shown in the owner's chat, answerable until `until`.
    Shown { until: DateTime<Utc> },
}

/// The facts [`waiting`] decides from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub place: Place,
    /// The open episode of Telegram out of reach: since when, and its latest cause.
    pub unreachable: Option<(DateTime<Utc>, Cut)>,
    pub now: DateTime<Utc>,
}

/// Why a record waits. When several hold, the first of these wins:
///
/// 1. `owner_unreachable` while Telegram cannot be reached: nothing else moves meanwhile (a
///    queued card cannot go, a shown card's press cannot arrive), and only a person can end
///    some causes, so it is what the session most needs to know;
/// 2. `shown` once the card is in the chat: the owner can answer now;
/// 3. `quiet_hours` while the gate holds the card past `now`;
/// 4. `queued`, with the cards due before it (a hold that has passed counts as queued).
pub fn waiting(facts: Facts) -> Waiting {
    if let Some((since, cut)) = facts.unreachable {
        return Waiting::OwnerUnreachable {
            since,
            detail: cut.detail().to_owned(),
        };
    }
    match facts.place {
        Place::Shown { until } => Waiting::Shown { until },
        Place::Queued {
            held_until: Some(until),
            ..
        } if until > facts.now => Waiting::QuietHours { until },
        Place::Queued { ahead, .. } => Waiting::Queued { ahead },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn the_first_reason_that_holds_wins() {
        let now = at(0);
        let queued = |ahead, held_until| Place::Queued { ahead, held_until };
        let cut = Some((at(-60), Cut::Blocked));
        let unreachable = Waiting::OwnerUnreachable {
            since: at(-60),
            detail: Cut::Blocked.detail().to_owned(),
        };
        let cases = [
            (
                "queued, nothing else",
                queued(3, None),
                None,
                Waiting::Queued { ahead: 3 },
            ),
            (
                "next to go",
                queued(0, None),
                None,
                Waiting::Queued { ahead: 0 },
            ),
            (
                "held until the morning",
                queued(2, Some(at(3_600))),
                None,
                Waiting::QuietHours { until: at(3_600) },
            ),
            (
                "a hold that has passed is queued",
                queued(2, Some(at(0))),
                None,
                Waiting::Queued { ahead: 2 },
            ),
            (
                "shown",
                Place::Shown { until: at(300) },
                None,
                Waiting::Shown { until: at(300) },
            ),
            (
                "unreachable beats queued",
                queued(5, None),
                cut,
                unreachable.clone(),
            ),
            (
                "unreachable beats quiet hours",
                queued(0, Some(at(3_600))),
                cut,
                unreachable.clone(),
            ),
            (
                "unreachable beats shown",
                Place::Shown { until: at(300) },
                cut,
                unreachable.clone(),
            ),
        ];
        for (case, place, unreachable, expected) in cases {
            let facts = Facts {
                place,
                unreachable,
                now,
            };
            assert_eq!(waiting(facts), expected, "{case}");
        }
    }

    #[test]
    fn each_form_on_the_wire() {
        let cases = [
            (
                Waiting::QuietHours { until: at(0) },
                r#"{"why":"quiet_hours","until":"2027-01-15T08:00:00.000Z"}"#,
            ),
            (
                Waiting::Queued { ahead: 4 },
                r#"{"why":"queued","ahead":4}"#,
            ),
            (
                Waiting::Shown { until: at(90) },
                r#"{"why":"shown","until":"2027-01-15T08:01:30.000Z"}"#,
            ),
        ];
        for (waiting, line) in cases {
            assert_eq!(serde_json::to_string(&waiting).unwrap(), line);
            assert_eq!(serde_json::from_str::<Waiting>(line).unwrap(), waiting);
        }
        let cut = Waiting::OwnerUnreachable {
            since: at(0),
            detail: Cut::Conflict.detail().to_owned(),
        };
        let line = serde_json::to_value(&cut).unwrap();
        assert_eq!(line["why"], "owner_unreachable");
        assert_eq!(line["since"], "2027-01-15T08:00:00.000Z");
        assert!(line["detail"].as_str().unwrap().starts_with("conflict: "));
    }

    #[test]
    fn each_cause_names_itself_first_in_its_detail() {
        for cut in [
            Cut::Network,
            Cut::ServerError,
            Cut::Revoked,
            Cut::Blocked,
            Cut::Conflict,
            Cut::Webhook,
        ] {
            let word = format!("{}: ", cut.as_str());
            assert!(cut.detail().starts_with(&word), "{cut:?}");
        }
    }
}
