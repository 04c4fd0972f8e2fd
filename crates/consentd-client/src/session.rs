//! The session's subcommands as the command line shows them: `ask` and `mandate` (with Ctrl-C),
//! `status`, `list`, `kinds` and `withdraw` — each one socket request, its answer printed, and
//! the exit code docs/PROTOCOL.md gives for it.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::client::{self, OnInterrupt, Waited};
use crate::output::{errln, outln};

/// Exit code: could not talk to the daemon, or an internal error.
pub const EXIT_ERROR: u8 = 1;

/// What every session subcommand is given besides its request: the command line's `--json`
/// and `--socket`.
#[derive(Debug)]
pub struct Common {
    /// Print the daemon's final response object as the last line on stdout.
    pub json: bool,
    /// The daemon's socket, if the command line names one.
    pub socket: Option<PathBuf>,
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

pub async fn ask(common: Common, request: Value, on_interrupt: OnInterrupt) -> anyhow::Result<u8> {
    let socket = client::socket_path(common.socket);
    let answer = match client::request_with_progress(&socket, &request, on_interrupt).await? {
        Waited::Final(answer) => answer,
        Waited::Interrupted { id, withdrawn } => {
            return Ok(interrupted(common.json, id, withdrawn))
        }
    };
    let status = text_of(&answer, "status");
    let id = text_of(&answer, "id");
    let code = client::exit_code_for_answer(text_of(&request, "op"), status);
    if common.json {
        outln!("{answer}");
        return Ok(code);
    }
    match status {
        "executed" => {
            if let Some(result) = answer.get("result").and_then(Value::as_str) {
                outln!("{result}");
            }
            errln!("executed {id}");
        }
        "refused" => errln!(
            "refused ({}): {}",
            text_of(&answer, "reason"),
            text_of(&answer, "message")
        ),
        "granted" if code == 0 => {
            outln!("{id}");
            errln!("granted by the owner: the mandate {id} is open");
        }
        "granted" => {
            outln!("{id}");
            errln!("granted by the owner; it runs now: see `consentd status {id}`");
        }
        "declined" => match answer.get("message").and_then(Value::as_str) {
            // The owner's reason for the No, in their words: what to do differently.
            Some(reason) => errln!("declined by the owner ({id}): {reason}"),
            None => errln!("declined by the owner ({id})"),
        },
        "expired" => errln!("expired: the owner did not answer in time ({id})"),
        "failed" => match answer.get("message").and_then(Value::as_str) {
            Some(why) => errln!("the action ran and failed ({id}): {why}"),
            None => errln!("the action ran and failed ({id})"),
        },
        "outcome_unknown" => errln!(
            "outcome unknown: the action may or may not have run; it will not be run again ({id}){}",
            answer
                .get("message")
                .and_then(Value::as_str)
                .map(|why| format!(": {why}"))
                .unwrap_or_default()
        ),
        "approved" => errln!("approved by the owner ({id}): run exactly what was asked, once"),
        "withdrawn" => errln!("withdrawn ({id}): nothing runs"),
        "pending" | "card_shown" | "running" => {
            outln!("{id}");
            errln!("{status}: see `consentd status {id}`");
        }
        _ => errln!("consentd answered: {answer}"),
    }
    Ok(code)
}

/// Ctrl-C during a wait: what became of the ask, and the exit code that says it.
fn interrupted(
    json: bool,
    id: Option<String>,
    withdrawn: Option<Result<Value, client::ClientError>>,
) -> u8 {
    let Some(id) = id else {
        errln!("interrupted before consentd named the record; `consentd list` shows it if it was taken");
        return EXIT_ERROR;
    };
    match withdrawn {
        None => {
            outln!("{id}");
            errln!("left {id} open for the owner: see `consentd status {id}`");
            client::exit_code_for("pending")
        }
        Some(Ok(answer)) if text_of(&answer, "status") == "withdrawn" => {
            if json {
                outln!("{answer}");
            }
            errln!("withdrew {id}: the owner's card says the agent took it back; nothing runs");
            client::EXIT_WITHDRAWN
        }
        Some(Ok(answer)) => {
            outln!("{id}");
            errln!(
                "could not withdraw {id}: {}; see `consentd status {id} --wait`",
                text_of(&answer, "message")
            );
            client::exit_code_for("pending")
        }
        Some(Err(error)) => {
            outln!("{id}");
            errln!("could not withdraw {id}: {error}; see `consentd status {id} --wait`");
            client::exit_code_for("pending")
        }
    }
}

pub async fn kinds(common: Common) -> anyhow::Result<u8> {
    let socket = client::socket_path(common.socket);
    let answer = client::request(&socket, &json!({"v": 1, "op": "kinds"}), |_| {}).await?;
    if common.json {
        outln!("{answer}");
    }
    let Some(kinds) = answer.get("kinds").and_then(Value::as_array) else {
        errln!("{}", text_of(&answer, "message"));
        return Ok(EXIT_ERROR);
    };
    if !common.json {
        for kind in kinds {
            outln!("{}", kind_line(kind));
        }
    }
    Ok(0)
}

/// One kind as a line: name, on or off, who runs it, what it takes, and its label.
fn kind_line(kind: &Value) -> String {
    let fields: Vec<&str> = kind
        .get("fields")
        .and_then(Value::as_array)
        .map(|fields| fields.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let cost = match text_of(kind, "cost") {
        "fixed" => format!("cost ${}", text_of(kind, "cost_usd")),
        other => format!("cost {other}"),
    };
    format!(
        "{:<20}  {:<3}  {:<7}  target {:<8}  text {:<8}  fields [{}]  attachments {}  {}  {}",
        text_of(kind, "kind"),
        if kind.get("enabled").and_then(Value::as_bool) == Some(true) {
            "on"
        } else {
            "off"
        },
        text_of(kind, "mode"),
        text_of(kind, "target"),
        text_of(kind, "text"),
        fields.join(", "),
        kind.get("attachments").and_then(Value::as_u64).unwrap_or(0),
        cost,
        text_of(kind, "label"),
    )
}

pub async fn withdraw(common: Common, request: Value) -> anyhow::Result<u8> {
    let socket = client::socket_path(common.socket);
    let answer = client::request(&socket, &request, |_| {}).await?;
    if common.json {
        outln!("{answer}");
    }
    let id = text_of(&request, "id");
    Ok(
        match (text_of(&answer, "status"), text_of(&answer, "reason")) {
            ("withdrawn", _) => {
                errln!("withdrew {id}: the owner's card says the agent took it back; nothing runs");
                client::EXIT_WITHDRAWN
            }
            ("refused", "not_withdrawable") => {
                errln!(
                    "refused (not_withdrawable): {}",
                    text_of(&answer, "message")
                );
                client::exit_code_for("refused")
            }
            _ => {
                errln!("{}", text_of(&answer, "message"));
                EXIT_ERROR
            }
        },
    )
}

pub async fn status(common: Common, request: Value) -> anyhow::Result<u8> {
    let socket = client::socket_path(common.socket);
    let answer = client::request(&socket, &request, |_| {}).await?;
    let found = answer.get("id").is_some();
    if common.json {
        outln!("{answer}");
    } else if found {
        outln!("{}", record_line(&answer));
    } else {
        errln!("{}", text_of(&answer, "message"));
    }
    // The record's state decides, as it would for `ask`: a script doing
    // `consentd status "$id" --wait && publish` must not take a No for a yes.
    Ok(if found {
        client::exit_code_for_record(&answer)
    } else {
        EXIT_ERROR
    })
}

pub async fn list(common: Common, request: Value) -> anyhow::Result<u8> {
    let socket = client::socket_path(common.socket);
    let answer = client::request(&socket, &request, |_| {}).await?;
    let Some(records) = answer.get("records").and_then(Value::as_array) else {
        if common.json {
            outln!("{answer}");
        } else {
            errln!("{}", text_of(&answer, "message"));
        }
        return Ok(EXIT_ERROR);
    };
    if common.json {
        outln!("{answer}");
        return Ok(0);
    }
    for record in records {
        outln!("{}", record_line(record));
    }
    if let Some(cursor) = answer.get("next_cursor").and_then(Value::as_str) {
        errln!("more: consentd list --cursor {cursor}");
    }
    Ok(0)
}

/// One record as a line: id, status, kind, when, and its reason or result.
fn record_line(record: &Value) -> String {
    let detail = record
        .get("result")
        .or_else(|| record.get("reason"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!(
        "{}  {:<15}  {:<20}  {}  {}",
        text_of(record, "id"),
        text_of(record, "status"),
        text_of(record, "kind"),
        text_of(record, "created_at"),
        detail
    )
    .trim_end()
    .to_owned()
}
