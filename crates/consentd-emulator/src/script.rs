//! What tests script and read back about calls: [`Scripted`] answers, the record of each
//! [`Call`] and its [`Outcome`], and [`retry_gaps`] over them.

use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::description;
use crate::params::as_i64;

/// An answer queued with [`Emulator::script`](crate::Emulator::script), given instead of (or,
/// for `Delay`, before) the normal handling of the next call to that method.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scripted {
    /// `{"ok":false,"error_code":code,"description":…}` with HTTP status `code`, plus
    /// `"parameters":{"retry_after":n}` when given.
    Error {
        code: u16,
        description: String,
        retry_after: Option<u32>,
    },
    /// Answer normally, this much later (to exercise client timeouts).
    Delay(Duration),
    /// Handle the call at once (a sent message is in the chat, where the owner can press or
    /// reply to it), but answer this much later: the bot learns the message's id after the owner
    /// could have acted on it.
    AnswerLate(Duration),
    /// Close the connection without answering.
    Drop,
    /// Answer 200 with a body cut off in the middle of the JSON.
    MalformedJson,
}

impl Scripted {
    pub fn error(code: u16, description: impl Into<String>) -> Scripted {
        Scripted::Error {
            code,
            description: description.into(),
            retry_after: None,
        }
    }

    /// 400 "message is not modified".
    pub fn not_modified() -> Scripted {
        Scripted::error(400, description::NOT_MODIFIED)
    }

    /// 400 "query is too old …", what a late `answerCallbackQuery` gets.
    pub fn query_too_old() -> Scripted {
        Scripted::error(400, description::QUERY_TOO_OLD)
    }

    /// 429 with `retry_after`, Telegram's flood control.
    pub fn too_many_requests(retry_after: u32) -> Scripted {
        Scripted::Error {
            code: 429,
            description: format!("Too Many Requests: retry after {retry_after}"),
            retry_after: Some(retry_after),
        }
    }

    /// 409, what a poller gets when another instance polls the same bot.
    pub fn conflict() -> Scripted {
        Scripted::error(409, description::CONFLICT)
    }

    /// 401 "Unauthorized", what every call gets once the bot's token is revoked.
    pub fn unauthorized() -> Scripted {
        Scripted::error(401, description::UNAUTHORIZED)
    }

    /// A 5xx with the reason phrase as description, as Telegram's front ends answer.
    pub fn server_error(code: u16) -> Scripted {
        let reason = StatusCode::from_u16(code)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("Internal Server Error");
        Scripted::error(code, reason)
    }
}

/// How a recorded call was answered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Outcome {
    Ok(Value),
    Error {
        code: u16,
        description: String,
        retry_after: Option<u32>,
    },
    /// The connection was closed without an answer ([`Scripted::Drop`]).
    Dropped,
    /// A cut-off body was sent ([`Scripted::MalformedJson`]).
    MalformedJson,
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    /// Position in [`Emulator::calls`](crate::Emulator::calls), from 0.
    pub seq: u64,
    /// The method name in lower case (`sendmessage`).
    pub method: String,
    /// All parameters as one JSON object, whatever the encoding; uploads as
    /// `{"name","bytes","sha256"}`.
    pub params: Value,
    pub at: SystemTime,
    /// Time since the emulator started, on a monotonic clock (for pacing and retry checks).
    pub elapsed: Duration,
    /// `false` when the token was wrong (answered 401).
    pub authorized: bool,
    /// `None` while the call is still being answered (a long poll, a scripted delay).
    pub outcome: Option<Outcome>,
}

impl Call {
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Ok(_)))
    }

    /// A parameter as an integer, whether sent as a number or a numeric string.
    pub fn param_i64(&self, name: &str) -> Option<i64> {
        self.params.get(name).and_then(as_i64)
    }

    pub fn param_str(&self, name: &str) -> Option<&str> {
        self.params.get(name).and_then(Value::as_str)
    }
}

/// For every 429 among `calls` to `methods` (lower case), its `retry_after` and the time until the
/// next call to any of them, on the emulator's clock: a client that makes those calls one at a
/// time (one sender, one poller) honoured the 429 if each gap is at least its `retry_after`.
pub fn retry_gaps(calls: &[Call], methods: &[&str]) -> Vec<(u32, Duration)> {
    let calls: Vec<&Call> = calls
        .iter()
        .filter(|c| methods.contains(&c.method.as_str()))
        .collect();
    calls
        .iter()
        .enumerate()
        .filter_map(|(i, call)| match call.outcome {
            Some(Outcome::Error {
                code: 429,
                retry_after: Some(after),
                ..
            }) => calls
                .get(i + 1)
                .map(|next| (after, next.elapsed - call.elapsed)),
            _ => None,
        })
        .collect()
}
