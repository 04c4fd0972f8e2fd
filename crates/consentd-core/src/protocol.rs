//! The socket protocol (docs/PROTOCOL.md): one JSON request per connection, answered by JSON
//! lines.
//!
//! Parsing here is structural only — shapes, types, the envelope's keys. Whether an ask fits its
//! category, its sizes and the Unicode policy is the refusal gate's business ([`crate::refusal`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::reason::{Reason, Refusal};

/// The only protocol version.
pub const VERSION: u64 = 1;

/// The keys an ask may carry; anything else is a field the card would not show.
pub(crate) const ASK_KEYS: &[&str] = &[
    "v",
    "op",
    "kind",
    "target",
    "text",
    "fields",
    "cost_usd",
    "attachments",
    "idempotency_key",
    "urgent",
    "wait",
    "ttl",
    "origin",
    "hook",
];
const ATTACHMENT_KEYS: &[&str] = &["name", "media_type", "data_b64"];
/// The keys a mandate request may carry; anything else is a term the card would not show.
pub(crate) const MANDATE_KEYS: &[&str] = &[
    "v",
    "op",
    "kind",
    "targets",
    "days",
    "usd_per_day",
    "actions_per_day",
    "reason",
    "wait",
    "origin",
];

/// The keys a status request may carry.
const STATUS_KEYS: &[&str] = &["v", "op", "id", "wait"];
/// The keys a list request may carry.
const LIST_KEYS: &[&str] = &["v", "op", "cursor"];
/// The keys a kinds request may carry: nothing but the envelope.
const KINDS_KEYS: &[&str] = &["v", "op"];
/// The keys a withdraw request may carry.
const WITHDRAW_KEYS: &[&str] = &["v", "op", "id"];
/// The keys a rule request may carry: all of them are required.
const RULE_KEYS: &[&str] = &["v", "op", "kind", "agent", "tool", "cwd", "text"];
/// The keys of an ask's `hook` object: all of them are required.
const HOOK_KEYS: &[&str] = &["agent", "tool", "cwd"];

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Ask(AskRequest),
    Mandate(MandateAsk),
    Status {
        id: String,
        wait: bool,
    },
    List {
        cursor: Option<String>,
    },
    /// The categories the session may ask for, each with its rules ([`crate::kinds`]).
    Kinds,
    /// The session takes back its own open ask.
    Withdraw {
        id: String,
    },
    /// A hook asks whether a saved exact rule answers its call ([`crate::exact`]).
    Rule(RuleQuery),
}

/// An ask as the session sent it, before the refusal gate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AskRequest {
    pub kind: String,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    pub(crate) cost_usd: Option<String>,
    pub(crate) attachments: Vec<AttachmentRequest>,
    pub idempotency_key: Option<String>,
    pub urgent: bool,
    pub wait: bool,
    /// Seconds the ask may wait for the owner, at most the card's ttl: a whole JSON number,
    /// bounded by the refusal gate (it knows `limits.card_ttl`). Not part of the digest.
    pub ttl: Option<u64>,
    /// One line the client chose to say where the ask comes from ("Claude Code · ~/src/blog"):
    /// shown on the card and part of the digest.
    pub origin: Option<String>,
    /// The agent's call a hook's gate asks for (agent, tool, directory): shown on the card, kept
    /// with the record for an Always press, and not part of the digest.
    pub hook: Option<HookCall>,
}

/// A mandate request as the session sent it, before the terms are checked. The amount is still
/// the string the session wrote.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MandateAsk {
    pub kind: String,
    /// Empty when `targets` was absent (or empty): right for a kind with no target.
    pub(crate) targets: Vec<String>,
    pub(crate) days: u64,
    /// Absent for a kind that never costs money.
    pub(crate) usd_per_day: Option<String>,
    pub(crate) actions_per_day: u64,
    pub(crate) reason: Option<String>,
    pub wait: bool,
    /// As on an ask: shown on the mandate card and part of its digest.
    pub origin: Option<String>,
}

/// The call a hook's gate ask is for, as the `hook` object names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// `claude-code` or `codex`.
    pub agent: String,
    /// The agent's tool (`Bash`, `Write`, …).
    pub tool: String,
    /// The call's working directory, absolute.
    pub cwd: String,
}

/// The `rule` op: is there a live rule that answers this exact call?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleQuery {
    /// The kind the hook's gate would ask for.
    pub kind: String,
    pub call: HookCall,
    /// The gate ask's text, byte-exact.
    pub text: String,
}

/// One attachment as sent: its bytes are still base64.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AttachmentRequest {
    pub(crate) name: String,
    pub(crate) media_type: String,
    pub(crate) data_b64: String,
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::BadRequest, message)
}

/// A frame refused by its shape. `ask` says whether it was an ask or a mandate request (a JSON
/// object with `"op":"ask"` or `"op":"mandate"`), which is recorded and journaled like any refused
/// ask; `kind` is its kind when it had a string one.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub refusal: Refusal,
    pub ask: bool,
    pub kind: Option<String>,
}

/// Parses one request frame (the line without its newline).
pub fn parse_request(frame: &[u8]) -> Result<Request, Rejection> {
    let object = parse_object(frame).map_err(|refusal| Rejection {
        refusal,
        ask: false,
        kind: None,
    })?;
    let is_ask = matches!(
        object.get("op").and_then(Value::as_str),
        Some("ask" | "mandate")
    );
    parse_fields(&object).map_err(|refusal| Rejection {
        refusal,
        ask: is_ask,
        kind: object
            .get("kind")
            .and_then(Value::as_str)
            .filter(|_| is_ask)
            .map(str::to_owned),
    })
}

/// The most JSON values a request line may hold: far above any request's (a few fields, at
/// most 4 attachments, at most 20 targets), far below what would weigh on memory once parsed.
pub const MAX_JSON_VALUES: usize = 4096;

/// An upper bound of the JSON values in `frame`: one for the line, and one more for each `,`,
/// `:`, `[` and `{` outside strings. Stops counting past [`MAX_JSON_VALUES`].
fn json_values(frame: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (1usize, false, false);
    for &byte in frame {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b',' | b':' | b'[' | b'{' => {
                count += 1;
                if count > MAX_JSON_VALUES {
                    break;
                }
            }
            _ => {}
        }
    }
    count
}

fn parse_object(frame: &[u8]) -> Result<Map<String, Value>, Refusal> {
    let text = std::str::from_utf8(frame).map_err(|error| {
        bad(format!(
            "the request is not UTF-8 (invalid byte at offset {})",
            error.valid_up_to()
        ))
    })?;
    // A JSON value costs some 32 bytes parsed however few bytes it took on the line (`0,` is
    // two), so a line of small values would parse into many times the bytes the socket's budget
    // held for it. No request has more than a few hundred; counted before anything is parsed.
    if json_values(frame) > MAX_JSON_VALUES {
        return Err(bad(format!(
            "the request has more than {MAX_JSON_VALUES} JSON values"
        )));
    }
    // serde_json stops at 128 levels of nesting, so hostile depth is an error, not a stack overflow.
    let value: Value = serde_json::from_str(text)
        .map_err(|error| bad(format!("the request is not valid JSON: {error}")))?;
    let Value::Object(object) = value else {
        return Err(bad("the request must be a JSON object"));
    };
    Ok(object)
}

fn parse_fields(object: &Map<String, Value>) -> Result<Request, Refusal> {
    match object.get("v") {
        Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => {}
        Some(other) => {
            return Err(bad(format!(
                "unsupported protocol version {other}; this daemon speaks v 1"
            )))
        }
        None => return Err(bad("missing key \"v\" (the protocol version, 1)")),
    }
    let op = match object.get("op") {
        Some(Value::String(op)) => op.as_str(),
        Some(_) => return Err(bad("key \"op\" must be a string")),
        None => {
            return Err(bad(
                "missing key \"op\" (ask, mandate, status, list, kinds, withdraw or rule)",
            ))
        }
    };
    match op {
        "ask" => parse_ask(object).map(Request::Ask),
        "status" => {
            only_keys(object, STATUS_KEYS, "a status request")?;
            let id = required_string(object, "id")?;
            let wait = optional_bool(object, "wait")?.unwrap_or(false);
            Ok(Request::Status { id, wait })
        }
        "list" => {
            only_keys(object, LIST_KEYS, "a list request")?;
            let cursor = optional_string(object, "cursor")?;
            Ok(Request::List { cursor })
        }
        "mandate" => parse_mandate(object).map(Request::Mandate),
        "kinds" => {
            only_keys(object, KINDS_KEYS, "a kinds request")?;
            Ok(Request::Kinds)
        }
        "withdraw" => {
            only_keys(object, WITHDRAW_KEYS, "a withdraw request")?;
            Ok(Request::Withdraw {
                id: required_string(object, "id")?,
            })
        }
        "rule" => {
            only_keys(object, RULE_KEYS, "a rule request")?;
            Ok(Request::Rule(RuleQuery {
                kind: required_string(object, "kind")?,
                call: HookCall {
                    agent: required_string(object, "agent")?,
                    tool: required_string(object, "tool")?,
                    cwd: required_string(object, "cwd")?,
                },
                text: required_string(object, "text")?,
            }))
        }
        other => Err(bad(format!(
            "unknown op {}; expected ask, mandate, status, list, kinds, withdraw or rule",
            quote(other)
        ))),
    }
}

fn parse_ask(object: &Map<String, Value>) -> Result<AskRequest, Refusal> {
    if let Some(unknown) = object.keys().find(|key| !ASK_KEYS.contains(&key.as_str())) {
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "unknown key {} in the ask; the card shows only {}",
                quote(unknown),
                ASK_KEYS.join(", ")
            ),
        ));
    }
    let fields = match object.get("fields") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(name, value)| match value {
                Value::String(value) => Ok((name.clone(), value.clone())),
                _ => Err(bad(format!("fields.{name} must be a string"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("key \"fields\" must be an object of strings")),
    };
    let attachments = match object.get("attachments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| parse_attachment(index, item))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("key \"attachments\" must be an array")),
    };
    Ok(AskRequest {
        kind: required_string(object, "kind")?,
        target: optional_string(object, "target")?,
        text: optional_string(object, "text")?,
        fields,
        cost_usd: optional_string(object, "cost_usd")?,
        attachments,
        idempotency_key: optional_string(object, "idempotency_key")?,
        urgent: optional_bool(object, "urgent")?.unwrap_or(false),
        wait: optional_bool(object, "wait")?.unwrap_or(true),
        ttl: optional_ttl(object)?,
        origin: optional_string(object, "origin")?,
        hook: optional_hook(object)?,
    })
}

/// `hook`: an object of exactly `agent`, `tool` and `cwd`, each a string.
fn optional_hook(object: &Map<String, Value>) -> Result<Option<HookCall>, Refusal> {
    let hook = match object.get("hook") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(hook)) => hook,
        Some(_) => return Err(bad("key \"hook\" must be an object of agent, tool and cwd")),
    };
    if let Some(unknown) = hook.keys().find(|key| !HOOK_KEYS.contains(&key.as_str())) {
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "unknown key {} in hook; it has only agent, tool and cwd",
                quote(unknown)
            ),
        ));
    }
    let get = |key: &str| match hook.get(key) {
        Some(Value::String(value)) => Ok(value.clone()),
        Some(_) => Err(bad(format!("hook.{key} must be a string"))),
        None => Err(bad(format!("hook is missing {key}"))),
    };
    Ok(Some(HookCall {
        agent: get("agent")?,
        tool: get("tool")?,
        cwd: get("cwd")?,
    }))
}

/// `ttl`: a whole JSON number of seconds (`60`, not `60.0`, `1.5` or `"60"`). Its bounds are the
/// gate's: the upper one is the config's `limits.card_ttl`.
fn optional_ttl(object: &Map<String, Value>) -> Result<Option<u64>, Refusal> {
    match object.get("ttl") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(other) => Err(bad(format!(
            "key \"ttl\" must be a whole number of seconds, from {MIN_TTL_SECONDS} to \
             limits.card_ttl; got {}",
            quote(&other.to_string())
        ))),
    }
}

/// The shortest `ttl` an ask may carry, in seconds: a card must stay long enough to be read.
pub const MIN_TTL_SECONDS: u64 = 10;

fn parse_mandate(object: &Map<String, Value>) -> Result<MandateAsk, Refusal> {
    if let Some(unknown) = object
        .keys()
        .find(|key| !MANDATE_KEYS.contains(&key.as_str()))
    {
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "unknown key {} in the mandate request; the card shows only {}",
                quote(unknown),
                MANDATE_KEYS.join(", ")
            ),
        ));
    }
    let targets = match object.get("targets") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(target) => Ok(target.clone()),
                _ => Err(bad(format!("targets[{index}] must be a string"))),
            })
            .collect::<Result<_, _>>()?,
        // A kind with no target names none; the terms check says which kinds must.
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(bad("key \"targets\" must be an array of strings")),
    };
    Ok(MandateAsk {
        kind: required_string(object, "kind")?,
        targets,
        days: required_count(object, "days")?,
        usd_per_day: optional_string(object, "usd_per_day")?,
        actions_per_day: required_count(object, "actions_per_day")?,
        reason: optional_string(object, "reason")?,
        wait: optional_bool(object, "wait")?.unwrap_or(true),
        origin: optional_string(object, "origin")?,
    })
}

/// A whole, non-negative JSON number (`7`, not `7.0`, `"7"` or `-1`).
fn required_count(object: &Map<String, Value>, key: &str) -> Result<u64, Refusal> {
    match object.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| bad(format!("key \"{key}\" must be a whole number, not {n}"))),
        Some(_) => Err(bad(format!("key \"{key}\" must be a number"))),
        None => Err(bad(format!("missing key \"{key}\""))),
    }
}

fn parse_attachment(index: usize, item: &Value) -> Result<AttachmentRequest, Refusal> {
    let Value::Object(object) = item else {
        return Err(bad(format!("attachments[{index}] must be an object")));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !ATTACHMENT_KEYS.contains(&key.as_str()))
    {
        return Err(Refusal::new(
            Reason::FieldNotShown,
            format!(
                "unknown key {} in attachments[{index}]; an attachment has only name, media_type and data_b64",
                quote(unknown)
            ),
        ));
    }
    let get = |key: &str| match object.get(key) {
        Some(Value::String(value)) => Ok(value.clone()),
        Some(_) => Err(bad(format!("attachments[{index}].{key} must be a string"))),
        None => Err(bad(format!("attachments[{index}] is missing {key}"))),
    };
    Ok(AttachmentRequest {
        name: get("name")?,
        media_type: get("media_type")?,
        data_b64: get("data_b64")?,
    })
}

fn only_keys(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), Refusal> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(unknown) => Err(bad(format!(
            "unknown key {} in {what}; allowed: {}",
            quote(unknown),
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn required_string(object: &Map<String, Value>, key: &str) -> Result<String, Refusal> {
    optional_string(object, key)?.ok_or_else(|| bad(format!("missing key \"{key}\"")))
}

fn optional_string(object: &Map<String, Value>, key: &str) -> Result<Option<String>, Refusal> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(bad(format!("key \"{key}\" must be a string"))),
    }
}

fn optional_bool(object: &Map<String, Value>, key: &str) -> Result<Option<bool>, Refusal> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(_) => Err(bad(format!("key \"{key}\" must be true or false"))),
    }
}

/// Quotes a value for an error message, cut short so a hostile key cannot flood the reply.
pub fn quote(value: &str) -> String {
    const MAX: usize = 64;
    let mut shown: String = value.chars().take(MAX).collect();
    if shown.len() < value.len() {
        shown.push('…');
    }
    serde_json::to_string(&shown).unwrap_or_default()
}

/// One response line. `status` is a record state, or `refused` for a refusal without a record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response {
    pub v: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why the record waits, while it waits for the owner ([`crate::waiting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<crate::waiting::Waiting>,
}

impl Response {
    pub fn refused(id: Option<String>, refusal: &Refusal) -> Self {
        Self {
            v: VERSION,
            id,
            status: "refused".to_owned(),
            reason: Some(refusal.reason.as_str().to_owned()),
            message: Some(refusal.message.clone()),
            result: None,
            waiting: None,
        }
    }

    /// The response line, newline included.
    pub fn to_line(&self) -> String {
        to_line(self)
    }
}

/// The answer to a `rule` request: `allowed` with the rule's id, or `none`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleResponse {
    pub v: u64,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl RuleResponse {
    /// `rule` answers the call, or (`None`) no saved rule does.
    pub fn of(rule: Option<String>) -> Self {
        RuleResponse {
            v: VERSION,
            status: if rule.is_some() { "allowed" } else { "none" },
            rule,
        }
    }
}

/// A record's short fields, as `status` and `list` show them: never the action's text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordSummary {
    pub id: String,
    pub kind: Option<String>,
    pub status: String,
    /// The record will not change again. `status` alone cannot say so: `granted` is final for
    /// a mandate and a passing state for an action (which runs next).
    #[serde(rename = "final")]
    pub is_final: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Why the record waits, while it waits for the owner ([`crate::waiting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<crate::waiting::Waiting>,
}

#[derive(Debug, Serialize)]
pub struct StatusResponse<'a> {
    pub v: u64,
    #[serde(flatten)]
    pub record: &'a RecordSummary,
}

#[derive(Debug, Serialize)]
pub struct ListResponse<'a> {
    pub v: u64,
    pub records: &'a [RecordSummary],
    pub next_cursor: Option<String>,
}

/// Serializes a response object as one line, newline included.
pub fn to_line<T: Serialize>(value: &T) -> String {
    // Serializing these plain structs cannot fail; an empty object keeps the reply well-formed.
    let mut line = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned());
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal_of(frame: &str) -> Refusal {
        parse_request(frame.as_bytes()).expect_err(frame).refusal
    }

    #[test]
    fn a_line_of_more_values_than_any_request_has_is_refused_before_it_is_parsed() {
        let zeros = |n: usize| {
            let array = vec!["0"; n].join(",");
            format!(r#"{{"v":1,"op":"list","x":[{array}]}}"#)
        };
        // One for the line, then the `{`, three `:`, two `,` and the `[`: seven, and one for
        // each zero after the first.
        let at_most = zeros(MAX_JSON_VALUES - 7);
        assert_eq!(json_values(at_most.as_bytes()), MAX_JSON_VALUES);
        assert!(!refusal_of(&at_most).message.contains("JSON values"));
        let refusal = refusal_of(&zeros(MAX_JSON_VALUES - 6));
        assert_eq!(refusal.reason, Reason::BadRequest);
        assert_eq!(
            refusal.message,
            format!("the request has more than {MAX_JSON_VALUES} JSON values")
        );
        // What strings hold is not counted, escaped quotes included.
        let text = r#"{"v":1,"op":"list","x":"a,b:c[d{e\",f"}"#;
        assert_eq!(json_values(text.as_bytes()), 7);
    }

    #[test]
    fn a_misshapen_ask_is_still_known_as_an_ask() {
        let rejection =
            parse_request(br#"{"v":1,"op":"ask","kind":"publish_x","x":1}"#).unwrap_err();
        assert!(rejection.ask);
        assert_eq!(rejection.kind.as_deref(), Some("publish_x"));
        let rejection = parse_request(br#"{"v":1,"op":"list","x":1}"#).unwrap_err();
        assert!(!rejection.ask);
        let rejection = parse_request(b"{").unwrap_err();
        assert!(!rejection.ask);
    }

    #[test]
    fn parses_a_full_ask() {
        let frame = r#"{"v":1,"op":"ask","kind":"publish_x","target":"@mila","text":"Hi",
            "fields":{"reply_to":"u"},"cost_usd":"0.04",
            "attachments":[{"name":"a.png","media_type":"image/png","data_b64":"AA=="}],
            "idempotency_key":"k-1","urgent":true,"wait":false}"#
            .replace('\n', "");
        let Request::Ask(ask) = parse_request(frame.as_bytes()).unwrap() else {
            panic!("not an ask")
        };
        assert_eq!(ask.kind, "publish_x");
        assert_eq!(ask.target.as_deref(), Some("@mila"));
        assert_eq!(ask.fields["reply_to"], "u");
        assert_eq!(ask.attachments[0].name, "a.png");
        assert!(ask.urgent);
        assert!(!ask.wait);
    }

    #[test]
    fn wait_defaults_to_true() {
        let Request::Ask(ask) = parse_request(br#"{"v":1,"op":"ask","kind":"k"}"#).unwrap() else {
            panic!("not an ask")
        };
        assert!(ask.wait);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let cases: &[(&str, Reason, &str)] = &[
            ("[1]", Reason::BadRequest, "must be a JSON object"),
            ("{", Reason::BadRequest, "not valid JSON"),
            (r#"{"op":"ask"}"#, Reason::BadRequest, "missing key \"v\""),
            (r#"{"v":2,"op":"ask"}"#, Reason::BadRequest, "version 2"),
            (r#"{"v":1}"#, Reason::BadRequest, "missing key \"op\""),
            (
                r#"{"v":1,"op":"fly"}"#,
                Reason::BadRequest,
                "unknown op \"fly\"",
            ),
            (
                r#"{"v":1,"op":"ask","kind":"k","extra":1}"#,
                Reason::FieldNotShown,
                "unknown key \"extra\"",
            ),
            (
                r#"{"v":1,"op":"ask","kind":7}"#,
                Reason::BadRequest,
                "\"kind\" must be a string",
            ),
            (
                r#"{"v":1,"op":"ask","kind":"k","fields":{"a":1}}"#,
                Reason::BadRequest,
                "fields.a must be a string",
            ),
            (
                r#"{"v":1,"op":"ask","kind":"k","attachments":[{"name":"a","media_type":"b","data_b64":"","x":1}]}"#,
                Reason::FieldNotShown,
                "attachments[0]",
            ),
            (
                r#"{"v":1,"op":"ask","kind":"k","urgent":"yes"}"#,
                Reason::BadRequest,
                "\"urgent\" must be true or false",
            ),
            (
                r#"{"v":1,"op":"status"}"#,
                Reason::BadRequest,
                "missing key \"id\"",
            ),
            (
                r#"{"v":1,"op":"list","x":1}"#,
                Reason::BadRequest,
                "unknown key \"x\"",
            ),
        ];
        for (frame, reason, needle) in cases {
            let refusal = refusal_of(frame);
            assert_eq!(refusal.reason, *reason, "{frame}");
            assert!(
                refusal.message.contains(needle),
                "{frame}: {}",
                refusal.message
            );
        }
    }

    #[test]
    fn parses_a_mandate_request() {
        let frame = r#"{"v":1,"op":"mandate","kind":"publish_x","targets":["@mila_news"],"days":7,"usd_per_day":"5.00","actions_per_day":10,"reason":"news","wait":false}"#;
        let Ok(Request::Mandate(ask)) = parse_request(frame.as_bytes()) else {
            panic!("a mandate request");
        };
        assert_eq!(
            ask,
            MandateAsk {
                kind: "publish_x".into(),
                targets: vec!["@mila_news".into()],
                days: 7,
                usd_per_day: Some("5.00".into()),
                actions_per_day: 10,
                reason: Some("news".into()),
                wait: false,
                origin: None,
            }
        );
    }

    #[test]
    fn a_mandate_request_may_name_no_targets_and_no_money() {
        for frame in [
            r#"{"v":1,"op":"mandate","kind":"generate_image","days":7,"actions_per_day":10}"#,
            r#"{"v":1,"op":"mandate","kind":"generate_image","targets":[],"days":7,"actions_per_day":10}"#,
            r#"{"v":1,"op":"mandate","kind":"generate_image","targets":null,"usd_per_day":null,"days":7,"actions_per_day":10}"#,
        ] {
            let Ok(Request::Mandate(ask)) = parse_request(frame.as_bytes()) else {
                panic!("{frame}: a mandate request");
            };
            assert_eq!(
                ask,
                MandateAsk {
                    kind: "generate_image".into(),
                    targets: Vec::new(),
                    days: 7,
                    usd_per_day: None,
                    actions_per_day: 10,
                    reason: None,
                    wait: true,
                    origin: None,
                },
                "{frame}"
            );
        }
    }

    #[test]
    fn misshapen_mandate_requests_are_refused_as_asks() {
        let base = r#""v":1,"op":"mandate","kind":"publish_x""#;
        let cases = [
            (
                r#","targets":["@a"],"days":7,"usd_per_day":"5.00","actions_per_day":10,"colour":"red""#,
                Reason::FieldNotShown,
                "\"colour\"",
            ),
            (
                r#","targets":["@a"],"usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "missing key \"days\"",
            ),
            (
                r#","targets":"@a","days":7,"usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "array of strings",
            ),
            (
                r#","targets":["@a",7],"days":7,"usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "targets[1]",
            ),
            (
                r#","targets":["@a"],"days":"7","usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "\"days\" must be a number",
            ),
            (
                r#","targets":["@a"],"days":7.5,"usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "whole number",
            ),
            (
                r#","targets":["@a"],"days":-1,"usd_per_day":"5.00","actions_per_day":10"#,
                Reason::BadRequest,
                "whole number",
            ),
            (
                r#","targets":["@a"],"days":7,"usd_per_day":5,"actions_per_day":10"#,
                Reason::BadRequest,
                "usd_per_day",
            ),
            (
                r#","targets":["@a"],"days":7,"usd_per_day":"5.00""#,
                Reason::BadRequest,
                "actions_per_day",
            ),
        ];
        for (rest, reason, needle) in cases {
            let frame = format!("{{{base}{rest}}}");
            let rejection = parse_request(frame.as_bytes()).expect_err(&frame);
            assert!(
                rejection.ask,
                "{frame}: a mandate request is journaled like an ask"
            );
            assert_eq!(rejection.kind.as_deref(), Some("publish_x"), "{frame}");
            assert_eq!(rejection.refusal.reason, reason, "{frame}");
            assert!(
                rejection.refusal.message.contains(needle),
                "{frame}: {:?} lacks {needle:?}",
                rejection.refusal.message
            );
        }
    }

    #[test]
    fn parses_kinds_and_withdraw_and_nothing_more_on_them() {
        assert_eq!(
            parse_request(br#"{"v":1,"op":"kinds"}"#).unwrap(),
            Request::Kinds
        );
        assert_eq!(
            parse_request(br#"{"v":1,"op":"withdraw","id":"r_1"}"#).unwrap(),
            Request::Withdraw { id: "r_1".into() }
        );
        for (frame, needle) in [
            (r#"{"v":1,"op":"kinds","id":"r_1"}"#, "unknown key \"id\""),
            (r#"{"v":1,"op":"withdraw"}"#, "missing key \"id\""),
            (
                r#"{"v":1,"op":"withdraw","id":7}"#,
                "\"id\" must be a string",
            ),
            (
                r#"{"v":1,"op":"withdraw","id":"r_1","wait":true}"#,
                "unknown key \"wait\"",
            ),
        ] {
            let rejection = parse_request(frame.as_bytes()).expect_err(frame);
            assert!(!rejection.ask, "{frame}: not recorded like an ask");
            assert_eq!(rejection.refusal.reason, Reason::BadRequest, "{frame}");
            assert!(
                rejection.refusal.message.contains(needle),
                "{frame}: {}",
                rejection.refusal.message
            );
        }
    }

    #[test]
    fn ttl_is_a_whole_json_number_and_origin_a_string() {
        let ask = |rest: &str| {
            parse_request(format!(r#"{{"v":1,"op":"ask","kind":"k"{rest}}}"#).as_bytes())
        };
        let Ok(Request::Ask(parsed)) = ask(r#","ttl":60,"origin":"Claude Code · ~/src/blog""#)
        else {
            panic!("an ask")
        };
        assert_eq!(parsed.ttl, Some(60));
        assert_eq!(parsed.origin.as_deref(), Some("Claude Code · ~/src/blog"));
        let Ok(Request::Ask(parsed)) = ask("") else {
            panic!("an ask")
        };
        assert_eq!((parsed.ttl, parsed.origin), (None, None));
        for rest in [
            r#","ttl":1.5"#,
            r#","ttl":"60""#,
            r#","ttl":-5"#,
            r#","ttl":60.0"#,
            r#","ttl":true"#,
        ] {
            let rejection = ask(rest).expect_err(rest);
            assert!(rejection.ask, "{rest}: recorded like any refused ask");
            assert_eq!(rejection.refusal.reason, Reason::BadRequest, "{rest}");
            let message = &rejection.refusal.message;
            assert!(
                message.contains("\"ttl\"") && message.contains("from 10 to limits.card_ttl"),
                "{rest}: {message}"
            );
        }
        let rejection = ask(r#","origin":7"#).unwrap_err();
        assert!(rejection
            .refusal
            .message
            .contains("\"origin\" must be a string"));
        let Ok(Request::Mandate(mandate)) = parse_request(
            br#"{"v":1,"op":"mandate","kind":"k","days":1,"actions_per_day":1,"origin":"cli"}"#,
        ) else {
            panic!("a mandate request")
        };
        assert_eq!(mandate.origin.as_deref(), Some("cli"));
    }

    #[test]
    fn invalid_utf8_names_the_offset() {
        let refusal = parse_request(b"{\"v\":1,\xff}").unwrap_err().refusal;
        assert_eq!(refusal.reason, Reason::BadRequest);
        assert!(refusal.message.contains("offset 7"), "{}", refusal.message);
    }

    #[test]
    fn deep_nesting_is_a_refusal_not_a_crash() {
        let frame = "[".repeat(100_000);
        assert_eq!(refusal_of(&frame).reason, Reason::BadRequest);
        let frame = format!(
            "{{\"v\":1,\"op\":\"ask\",\"kind\":{}",
            "{\"a\":".repeat(100_000)
        );
        assert_eq!(refusal_of(&frame).reason, Reason::BadRequest);
    }

    #[test]
    fn quote_cuts_long_values() {
        let long = "x".repeat(1000);
        assert!(quote(&long).chars().count() < 70);
    }

    #[test]
    fn response_lines_skip_absent_members() {
        let line = Response {
            v: 1,
            id: Some("r_1".into()),
            status: "pending".into(),
            reason: None,
            message: None,
            result: None,
            waiting: None,
        }
        .to_line();
        assert_eq!(line, "{\"v\":1,\"id\":\"r_1\",\"status\":\"pending\"}\n");
    }
}

#[cfg(test)]
mod doc_tables;
#[cfg(test)]
mod doc_tests;
