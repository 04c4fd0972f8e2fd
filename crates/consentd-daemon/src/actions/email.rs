//! `action = "email"`: one message over SMTP (docs/CONFIG.md, "Built-in actions"), with lettre
//! on tokio and rustls with the system's roots (docs/adr/0005-builtin-action-clients.md).
//!
//! From the category's `from` to the record's target, the text the plain-text body, a `subject`
//! field the subject, each attachment attached under its name and media type. One connection,
//! one message, never retried. The server's refusal (a 4xx or 5xx reply, a recipient it does not
//! take) is `failed` with its reply; no connection, or TLS refused, is `failed` too (nothing was
//! handed over); a connection lost or silent in the middle is `outcome_unknown`. The login from
//! `credentials_file` goes to lettre only, and is in no outcome or log line.

use lettre::message::header::ContentType;
use lettre::message::{Attachment as Part, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};

use consentd_core::config::{EmailAction, SmtpTls};

use super::{first_line, not_started, Attachment};
use crate::executor::{RunOutcome, RunSpec};

/// Whether `from` reads as a sender's address (for the preflight's `from` check).
pub(crate) fn from_problem(from: &str) -> Option<String> {
    from.parse::<Mailbox>()
        .err()
        .map(|error| format!("{from:?} is not an address: {error}"))
}

/// Sends the one message, with the credentials file's login when there is one.
pub(crate) async fn send(
    email: &EmailAction,
    spec: &RunSpec,
    attachments: &[Attachment],
    login: Option<(String, String)>,
) -> RunOutcome {
    let message = match message(email, spec, attachments) {
        Ok(message) => message,
        Err(outcome) => return outcome,
    };
    let transport = match transport(email, spec, login) {
        Ok(transport) => transport,
        Err(reason) => return not_started(reason),
    };
    match transport.send(message).await {
        Ok(response) => {
            let answer = response.message().collect::<Vec<_>>().join(" ");
            let result = first_line(&format!("{} {answer}", response.code()));
            RunOutcome::Executed { result }
        }
        Err(error) => refused_or_unknown(&error),
    }
}

/// The message, from what the card showed.
fn message(
    email: &EmailAction,
    spec: &RunSpec,
    attachments: &[Attachment],
) -> Result<Message, RunOutcome> {
    let failed = |message: String, detail: &str| RunOutcome::ActionFailed {
        message,
        detail: detail.to_owned(),
    };
    let from: Mailbox = email
        .from
        .parse()
        .map_err(|error| not_started(format!("from {:?}: {error}", email.from)))?;
    let target = spec.stdin.target.as_deref().unwrap_or_default();
    let to: Mailbox = target.parse().map_err(|error| {
        failed(
            format!("{target:?} is not an email address: {error}"),
            "smtp bad_target",
        )
    })?;
    let mut builder = Message::builder().from(from).to(to);
    if let Some(subject) = spec.stdin.fields.get("subject") {
        builder = builder.subject(subject);
    }
    let text = spec.stdin.text.clone().unwrap_or_default();
    let built = if attachments.is_empty() {
        builder.header(ContentType::TEXT_PLAIN).body(text)
    } else {
        let mut parts = MultiPart::mixed().singlepart(SinglePart::plain(text));
        for attachment in attachments {
            let kind = ContentType::parse(&attachment.media_type)
                .unwrap_or(ContentType::parse("application/octet-stream").expect("a media type"));
            let part = Part::new(attachment.name.clone()).body(attachment.bytes.clone(), kind);
            parts = parts.singlepart(part);
        }
        builder.multipart(parts)
    };
    built.map_err(|error| not_started(format!("cannot build the message: {error}")))
}

/// One connection to `smtp_url`, as its scheme says: TLS from the start, STARTTLS required, or
/// none (loopback only, which the config made sure of).
fn transport(
    email: &EmailAction,
    spec: &RunSpec,
    login: Option<(String, String)>,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let server = &email.smtp;
    let parameters = || {
        TlsParameters::new(server.host.clone())
            .map_err(|error| format!("cannot set up TLS for {}: {error}", server.host))
    };
    let tls = match server.tls {
        SmtpTls::Implicit => Tls::Wrapper(parameters()?),
        SmtpTls::StartTls => Tls::Required(parameters()?),
        SmtpTls::None => Tls::None,
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(server.host.clone())
        .port(server.port)
        .tls(tls)
        .timeout(Some(spec.timeout));
    if let Some((user, password)) = login {
        builder = builder.credentials(Credentials::new(user, password));
    }
    Ok(builder.build())
}

/// A send that did not end with the server's acceptance.
fn refused_or_unknown(error: &lettre::transport::smtp::Error) -> RunOutcome {
    let words = first_line(&error.to_string()).unwrap_or_default();
    if error.is_permanent() || error.is_transient() {
        let code = error
            .status()
            .map(|code| code.to_string())
            .unwrap_or_default();
        return RunOutcome::ActionFailed {
            message: format!("the mail server refused the message: {words}"),
            detail: format!("smtp {code}"),
        };
    }
    if error.is_tls() || error.is_client() || is_connect(error) {
        return RunOutcome::ActionFailed {
            message: format!("the message could not be handed over: {words}"),
            detail: "smtp not_sent".to_owned(),
        };
    }
    RunOutcome::Unknown {
        message: format!(
            "the connection to the mail server broke or fell silent ({words}): the message may \
             or may not have been sent"
        ),
        detail: if error.is_timeout() {
            "timeout"
        } else {
            "smtp no_answer"
        }
        .to_owned(),
    }
}

/// Whether the error is the connection's opening failing (nothing was sent): lettre says so only
/// in its words ("Connection error: …"), having no `is_` for it.
fn is_connect(error: &lettre::transport::smtp::Error) -> bool {
    error.to_string().starts_with("Connection error")
}
