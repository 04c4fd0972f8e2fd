//! `action = "http"`: one request with the action as a JSON body (docs/CONFIG.md, "Built-in
//! actions"), never retried.
//!
//! The client is reqwest, already in the tree through teloxide, with rustls and the system's
//! root certificates only (docs/adr/0005-builtin-action-clients.md). No redirect is
//! followed: a 3xx is the server's answer, and following it would send the body a second time.
//! A request that could not connect was never sent (`failed`); one sent with no answer in time,
//! or whose connection dropped, may have acted (`outcome_unknown`). The record's id goes as
//! `Idempotency-Key`, so a server can tell a request sent again by hand from a new one.
//!
//! The headers file's values go to reqwest only: they are in no outcome, message or log line,
//! and reqwest's errors name the URL, never a header.

use std::time::Duration;

use base64::Engine as _;
use consentd_core::config::HttpAction;
use serde_json::json;

use super::{first_line, not_started, Attachment};
use crate::executor::{RunOutcome, RunSpec};

/// Bytes of the response body kept while looking for its first line; the rest is not read.
const BODY_KEEP: usize = 4096;

/// The documented JSON body: the action as the card showed it, each attachment with its bytes.
pub(crate) fn body(spec: &RunSpec, attachments: &[Attachment]) -> serde_json::Value {
    let action = &spec.stdin;
    let attachments: Vec<serde_json::Value> = attachments
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "media_type": a.media_type,
                "sha256": a.sha256,
                "bytes": a.bytes.len(),
                "content_base64": base64::engine::general_purpose::STANDARD.encode(&a.bytes),
            })
        })
        .collect();
    json!({
        "id": action.id,
        "kind": action.kind,
        "target": action.target,
        "text": action.text,
        "fields": action.fields,
        "cost_usd": action.cost_usd,
        "attachments": attachments,
    })
}

/// Sends the one request and reads how it ended. `headers` are the headers file's, already read.
pub(crate) async fn send(
    http: &HttpAction,
    spec: &RunSpec,
    attachments: &[Attachment],
    headers: Vec<(String, String)>,
) -> RunOutcome {
    let client = match client(spec.timeout) {
        Ok(client) => client,
        Err(error) => return not_started(format!("cannot make an HTTP client: {error}")),
    };
    let method = match http.method.as_str().parse::<reqwest::Method>() {
        Ok(method) => method,
        Err(_) => return not_started("the method is not valid".to_owned()),
    };
    let mut request = client
        .request(method, &http.url)
        .header("content-type", "application/json")
        .header("idempotency-key", &spec.record_id);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let body = match serde_json::to_vec(&body(spec, attachments)) {
        Ok(body) => body,
        Err(error) => return not_started(format!("cannot write the body: {error}")),
    };
    match request.body(body).send().await {
        Ok(response) => answered(response).await,
        Err(error) => unanswered(error),
    }
}

/// rustls, the system's roots and nothing else, no redirects, no proxy from the environment
/// (the daemon's environment is not the owner's choice of a route), and the whole exchange
/// bounded by the category's timeout.
fn client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .tls_built_in_native_certs(true)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .user_agent(concat!("consentd/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// An answer came: 2xx is `executed` with the body's first line, anything else `failed` with
/// the status and that line.
async fn answered(mut response: reqwest::Response) -> RunOutcome {
    let status = response.status();
    let mut kept = Vec::new();
    // The body is read only until its first line; a body cut off or late still leaves the
    // status, which is the answer.
    while kept.len() < BODY_KEEP && !kept.contains(&b'\n') {
        match response.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    let line = first_line(&String::from_utf8_lossy(&kept));
    if status.is_success() {
        return RunOutcome::Executed { result: line };
    }
    let code = status.as_u16();
    let words = status.canonical_reason().unwrap_or("");
    let mut message = format!("the server answered HTTP {code} {words}");
    if status.is_redirection() {
        message.push_str(" (redirects are not followed)");
    }
    if let Some(line) = line {
        message = format!("{message}: {line}");
    }
    RunOutcome::ActionFailed {
        message,
        detail: format!("http {code}"),
    }
}

/// No answer: whether the request can have reached the server decides between `failed` and
/// `outcome_unknown`.
fn unanswered(error: reqwest::Error) -> RunOutcome {
    // reqwest's words name the URL, never a header; without the URL they say enough.
    let error = error.without_url();
    let mut words = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        words = format!("{words}: {cause}");
        source = cause.source();
    }
    if error.is_connect() || error.is_builder() {
        return RunOutcome::ActionFailed {
            message: format!("the request could not be sent: {words}"),
            detail: "http not_sent".to_owned(),
        };
    }
    let message = if error.is_timeout() {
        "the request was sent and no answer came in time: it may or may not have acted".to_owned()
    } else {
        format!(
            "the request was sent and its connection broke ({words}): it may or may not have acted"
        )
    };
    RunOutcome::Unknown {
        message,
        detail: if error.is_timeout() {
            "timeout"
        } else {
            "http no_answer"
        }
        .to_owned(),
    }
}
