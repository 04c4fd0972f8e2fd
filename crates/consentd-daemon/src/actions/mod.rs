//! The built-in actions (docs/CONFIG.md, "Built-in actions"): what consentd does itself for a
//! category with `action = "telegram_post" | "http" | "email"` instead of running a command.
//!
//! Each runs once, after the same durable claim as a command, and is never retried: a request
//! that went out and got no answer is `outcome_unknown`, as a command killed at its timeout is.
//! The whole action runs under the category's `timeout`. What it sends is what the card showed:
//! the record's target, text, fields and cost, and each attachment's stored copy re-hashed
//! against the record's SHA-256 on the way (`consentd_store::stored`), as a command's copies are.
//!
//! Secrets (an `http` action's headers, an `email` action's login) come from files only the
//! daemon may read (`secrets`), read at each run; their contents are never in an outcome, the
//! journal or a log line.

mod email;
mod http;
mod post;
pub(crate) mod secrets;

use consentd_core::config::{BuiltIn, Category};
use consentd_store::stored;

use crate::executor::{RunOutcome, RunSpec};
use crate::telegram::Telegram;

/// At most this many characters of an answer's first line become the result, as for a command.
const RESULT_MAX_CHARS: usize = 200;

/// One attachment's bytes, read from its stored copy and checked against the record's SHA-256
/// and size: the bytes the owner was shown.
#[derive(Debug, Clone)]
pub(crate) struct Attachment {
    pub(crate) name: String,
    pub(crate) media_type: String,
    pub(crate) sha256: String,
    pub(crate) bytes: Vec<u8>,
}

/// Runs `action` once for the claimed record `spec` and says how it ended. Never retries.
pub(crate) async fn run(action: &BuiltIn, spec: &RunSpec, telegram: &Telegram) -> RunOutcome {
    let attachments = match read_attachments(spec).await {
        Ok(attachments) => attachments,
        Err(reason) => return RunOutcome::NotStarted { reason },
    };
    let work = async {
        match action {
            BuiltIn::Http(http) => {
                match read_secret(http.headers_file.as_deref(), secrets::headers) {
                    Ok(headers) => {
                        http::send(http, spec, &attachments, headers.unwrap_or_default()).await
                    }
                    Err(outcome) => outcome,
                }
            }
            BuiltIn::TelegramPost => post::post(telegram, spec, &attachments).await,
            BuiltIn::Email(email) => {
                match read_secret(email.credentials_file.as_deref(), secrets::credentials) {
                    Ok(login) => email::send(email, spec, &attachments, login).await,
                    Err(outcome) => outcome,
                }
            }
        }
    };
    // The category's timeout bounds the whole action; what was under way may have acted.
    match tokio::time::timeout(spec.timeout, work).await {
        Ok(outcome) => outcome,
        Err(_) => RunOutcome::Unknown {
            message: format!(
                "the {} action did not finish in time: it may or may not have acted",
                action.name()
            ),
            detail: "timeout".to_owned(),
        },
    }
}

/// A secret file read and parsed at the run, as the preflight did; a file that no longer reads
/// stops the action before anything is sent.
fn read_secret<T>(
    path: Option<&std::path::Path>,
    parse: fn(&std::path::Path, &str) -> Result<T, secrets::SecretError>,
) -> Result<Option<T>, RunOutcome> {
    let Some(path) = path else { return Ok(None) };
    secrets::read(path)
        .and_then(|text| parse(path, &text))
        .map(Some)
        .map_err(|error| not_started(error.to_string()))
}

/// Nothing was sent.
fn not_started(reason: String) -> RunOutcome {
    RunOutcome::NotStarted { reason }
}

/// Each attachment's stored copy, read and checked as a command's copy is: a copy that is no
/// longer what the card showed stops the action before anything is sent.
async fn read_attachments(spec: &RunSpec) -> Result<Vec<Attachment>, String> {
    let sources = spec.attachments.clone();
    let since = if spec.on_card {
        "the card was shown"
    } else {
        "it was asked for"
    };
    let read = tokio::task::spawn_blocking(move || {
        sources
            .into_iter()
            .map(|source| {
                let expected = stored::Expected {
                    sha256: source.sha256.clone(),
                    bytes: source.bytes,
                };
                match stored::read(&source.source, &expected) {
                    Ok(bytes) => Ok(Attachment {
                        name: source.name,
                        media_type: source.media_type,
                        sha256: source.sha256,
                        bytes,
                    }),
                    Err(problem) if problem.is_change() => Err(format!(
                        "attachment {:?} changed after {since}, so nothing was sent: {problem}",
                        source.name
                    )),
                    Err(problem) => Err(format!("attachment {:?}: {problem}", source.name)),
                }
            })
            .collect::<Result<Vec<_>, String>>()
    })
    .await;
    read.unwrap_or_else(|error| Err(format!("cannot read the attachments: {error}")))
}

/// The first line of an answer, at most 200 characters, without a trailing `\r`; `None` when it
/// is empty.
fn first_line(text: &str) -> Option<String> {
    let line = text.split('\n').next().unwrap_or_default();
    let line = line.strip_suffix('\r').unwrap_or(line);
    let line: String = line.chars().take(RESULT_MAX_CHARS).collect();
    (!line.trim().is_empty()).then_some(line)
}

/// Why a category's built-in action could not run here, each with the key's last part: its
/// secret files, read and parsed as a run reads them. Nothing for a category with a command.
pub(crate) fn problems(category: &Category) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    match &category.action {
        Some(BuiltIn::Http(http)) => {
            if let Some(path) = &http.headers_file {
                let parsed = secrets::read(path).and_then(|text| secrets::headers(path, &text));
                if let Err(error) = parsed {
                    found.push(("headers_file", error.to_string()));
                }
            }
        }
        Some(BuiltIn::Email(email)) => {
            if let Some(problem) = email::from_problem(&email.from) {
                found.push(("from", problem));
            }
            if let Some(path) = &email.credentials_file {
                let parsed = secrets::read(path).and_then(|text| secrets::credentials(path, &text));
                if let Err(error) = parsed {
                    found.push(("credentials_file", error.to_string()));
                }
            }
        }
        Some(BuiltIn::TelegramPost) | None => {}
    }
    found
}
