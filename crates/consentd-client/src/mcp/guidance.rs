//! Tool results: the daemon's answer as `structuredContent`, and a text block that tells the
//! model what to do next. The words are for a model that may be tempted to retry: every outcome
//! that must not be retried says so.

use serde_json::{json, Map, Value};

use crate::client::ClientError;

/// The members of an answer line a tool result carries.
const ANSWER_MEMBERS: [&str; 5] = ["id", "status", "result", "reason", "message"];

/// A tool result: `text` for the model, `structured` as `structuredContent`.
fn result(text: String, structured: Value, is_error: bool) -> Value {
    json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": structured,
        "isError": is_error,
    })
}

/// A call the model can fix: what was wrong with it. Nothing was asked.
pub(super) fn tool_error(message: &str) -> Value {
    json!({
        "content": [{ "type": "text", "text": format!("{message}. Nothing was asked; fix the call and try again.") }],
        "isError": true,
    })
}

/// The daemon could not be reached, or the connection broke.
pub(super) fn unreachable(error: &ClientError) -> Value {
    let text = match error {
        ClientError::Connect(message) => format!(
            "{message}. Nothing was asked, and nothing may be done without the owner's consent: \
             do not do the action another way; tell the user consentd is not reachable."
        ),
        _ => format!(
            "consentd did not answer ({error}). If an ask was sent it may still be waiting: use \
             consent_list to find it rather than asking again."
        ),
    };
    result(
        text,
        json!({ "status": "error", "message": error.to_string() }),
        true,
    )
}

fn answer_members(answer: &Value) -> Value {
    let mut picked = Map::new();
    for key in ANSWER_MEMBERS {
        if let Some(value) = answer.get(key).filter(|v| v.is_string()) {
            picked.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(picked)
}

fn text_of<'a>(answer: &'a Value, key: &str) -> Option<&'a str> {
    answer.get(key).and_then(Value::as_str)
}

/// The answer to an ask, a mandate request or a withdraw.
pub(super) fn answer_result(answer: &Value) -> Value {
    let status = text_of(answer, "status").unwrap_or("error");
    let text = next_step(answer, status);
    result(
        text,
        answer_members(answer),
        matches!(status, "refused" | "error"),
    )
}

/// What the model should do after an answer in `status`.
fn next_step(answer: &Value, status: &str) -> String {
    let id = text_of(answer, "id").unwrap_or("the record");
    let message = text_of(answer, "message");
    let with = |prefix: &str| message.map_or(String::new(), |m| format!("{prefix}{m}"));
    match status {
        "executed" => format!(
            "Done: the owner approved and consentd ran it{}. Do not run it again.",
            text_of(answer, "result").map_or(String::new(), |r| format!("; result: {r}"))
        ),
        "approved" => "Approved: the owner approved exactly this. You may now do it yourself, \
            once, exactly as asked; anything different needs a new ask."
            .to_owned(),
        "granted" => format!(
            "The owner granted it ({id}). Asks it covers now run without a card, within its \
             terms."
        ),
        "declined" => match message {
            Some(reason) => format!(
                "Declined by the owner, who said: {reason}\nDo not retry it as it was; follow \
                 what they said."
            ),
            None => "Declined by the owner. Do not retry this action or a variant of it; if \
                     it matters, ask the owner in conversation."
                .to_owned(),
        },
        "expired" => format!(
            "Nobody answered in time{}; nothing ran. Do not retry on your own; ask the owner \
             in conversation if it still matters.",
            with(": ")
        ),
        "failed" => format!(
            "It ran and failed{}. Do not retry it on your own; tell the owner.",
            with(": ")
        ),
        "outcome_unknown" => format!(
            "The outcome is unknown{}: it may or may not have happened. Never retry it; tell \
             the owner.",
            with(": ")
        ),
        "withdrawn" => format!("Withdrawn: {id} was taken back and nothing ran."),
        "refused" => refused(answer),
        "pending" | "card_shown" | "running" => open_step(answer, id, status),
        _ => format!("consentd said: {status}{}", with(": ")),
    }
}

fn open_step(line: &Value, id: &str, status: &str) -> String {
    let step = format!(
        "Still open: {id} is {status}. Do not ask again: call consent_status with id {id} and \
         wait true to learn the outcome."
    );
    match crate::waiting::of(line) {
        Some(waiting) => format!(
            "{step} Why it waits: {}.",
            crate::waiting::for_model(&waiting)
        ),
        None => step,
    }
}

/// A refusal: what to fix, or why not to retry.
fn refused(answer: &Value) -> String {
    let reason = text_of(answer, "reason").unwrap_or("unknown");
    let message = text_of(answer, "message").unwrap_or("");
    let advice = match reason {
        "bad_request"
        | "field_not_shown"
        | "invisible_character"
        | "not_nfc"
        | "too_large"
        | "mandate_terms" => "Fix exactly that and ask again.",
        "unknown_kind" => "Call consent_kinds to see the kinds there are.",
        "category_off" => "The owner has turned this kind off. Do not retry.",
        "declined_recently" => {
            "The owner declined this exact action within the last day. Do \
            not retry it."
        }
        "kind_silenced" => {
            "The owner declined this kind several times in a row, so it is \
            paused. Do not retry."
        }
        "too_many_pending" => {
            "Too many asks are waiting for the owner. Wait for them (use \
            consent_status) before asking more."
        }
        "identity_conflict" => {
            "That idempotency key already names a different action; a new \
            action needs a new key."
        }
        "no_owner" => {
            "No owner is paired with consentd yet, so nothing can be approved. Tell \
            the user."
        }
        "not_withdrawable" => "It can no longer be withdrawn.",
        "disk_full" => {
            "The disk consentd stores asks on is nearly full; nothing was stored. Tell \
            the user, and do not retry until they have freed space."
        }
        _ => "Do not retry it unchanged.",
    };
    format!("Refused ({reason}): {message}. {advice}")
}

/// `--max-wait` passed while the record was still open.
pub(super) fn still_open(last: &Value, max_wait: std::time::Duration) -> Value {
    let id = text_of(last, "id").unwrap_or("the record");
    let status = text_of(last, "status").unwrap_or("pending");
    let mut structured = answer_members(last);
    structured["message"] = json!(format!(
        "still waiting for the owner after {} s",
        max_wait.as_secs()
    ));
    result(open_step(last, id, status), structured, false)
}

/// The answer to `status`: the record, and what its state means.
pub(super) fn record_result(answer: &Value) -> Value {
    let status = text_of(answer, "status").unwrap_or("error");
    if answer.get("final").is_none() {
        // A refused request (no such record) or an internal error: no record to show.
        return answer_result(answer);
    }
    let mut record = answer.clone();
    if let Some(map) = record.as_object_mut() {
        map.remove("v");
    }
    let final_ = answer.get("final").and_then(Value::as_bool) == Some(true);
    let text = if final_ || status == "refused" {
        next_step(answer, status)
    } else {
        open_step(
            answer,
            text_of(answer, "id").unwrap_or("the record"),
            status,
        )
    };
    result(text, record, false)
}

/// The answer to `list`.
pub(super) fn list_result(answer: &Value) -> Value {
    let Some(records) = answer.get("records").and_then(Value::as_array) else {
        return answer_result(answer);
    };
    let mut text = format!("{} records, newest first:", records.len());
    for record in records {
        text.push_str(&format!(
            "\n{} {} {}",
            text_of(record, "id").unwrap_or("?"),
            text_of(record, "kind").unwrap_or("-"),
            text_of(record, "status").unwrap_or("?"),
        ));
    }
    if let Some(cursor) = text_of(answer, "next_cursor") {
        text.push_str(&format!("\nMore: call consent_list with cursor {cursor}."));
    }
    let structured = json!({
        "records": records,
        "next_cursor": answer.get("next_cursor").cloned().unwrap_or(Value::Null),
    });
    result(text, structured, false)
}

/// The answer to `kinds`.
pub(super) fn kinds_result(answer: &Value) -> Value {
    let Some(kinds) = answer.get("kinds").and_then(Value::as_array) else {
        return answer_result(answer);
    };
    let mut text = String::from("Kinds you may ask for (only those on can be approved now):");
    for kind in kinds {
        let on = kind.get("enabled").and_then(Value::as_bool) == Some(true);
        text.push_str(&format!(
            "\n{} ({}): {}, {}; target {}, text {}",
            text_of(kind, "kind").unwrap_or("?"),
            text_of(kind, "label").unwrap_or(""),
            if on { "on" } else { "off" },
            if text_of(kind, "mode") == Some("approve") {
                "you run it after an approval"
            } else {
                "consentd runs it"
            },
            text_of(kind, "target").unwrap_or("none"),
            text_of(kind, "text").unwrap_or("none"),
        ));
    }
    let mut structured = answer.clone();
    if let Some(map) = structured.as_object_mut() {
        map.remove("v");
        map.remove("status");
    }
    result(text, structured, false)
}
