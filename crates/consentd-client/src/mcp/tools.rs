//! The tools `consentd mcp` offers: their names, descriptions and JSON Schemas.
//!
//! Each input schema is what the daemon takes (docs/PROTOCOL.md), so a client that validates
//! before calling catches what the daemon would refuse for its shape; the daemon still judges
//! everything. `additionalProperties: false` everywhere: a key the card would not show is never
//! sent.

use serde_json::{json, Value};

pub(super) const ASK: &str = "consent_ask";
pub(super) const MANDATE: &str = "consent_mandate";
pub(super) const STATUS: &str = "consent_status";
pub(super) const LIST: &str = "consent_list";
pub(super) const KINDS: &str = "consent_kinds";
pub(super) const WITHDRAW: &str = "consent_withdraw";
pub(super) const APPROVAL_PROMPT: &str = "approval_prompt";

/// The result every ask-like tool gives in `structuredContent`.
fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "description": "the record's id (r_…), when there is one" },
            "status": { "type": "string", "description": "the record's status, or refused" },
            "result": { "type": "string", "description": "what the action printed, when it ran" },
            "reason": { "type": "string", "description": "the reason code of a refusal" },
            "message": { "type": "string", "description": "words for a person" },
        },
        "required": ["status"],
    })
}

fn record_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string" },
            "kind": { "type": ["string", "null"] },
            "status": { "type": "string" },
            "final": { "type": "boolean" },
            "reason": { "type": "string" },
            "message": { "type": "string" },
            "result": { "type": "string" },
            "created_at": { "type": "string" },
            "decided_at": { "type": "string" },
            "finished_at": { "type": "string" },
        },
        "required": ["id", "status", "final"],
    })
}

const KIND_PATTERN: &str = "^[a-z][a-z0-9_]{0,31}$";
const MONEY_PATTERN: &str = "^(0|[1-9][0-9]*)(\\.[0-9]{1,2})?$";

fn ask_tool() -> Value {
    json!({
        "name": ASK,
        "title": "Ask the owner to approve an action",
        "description": "Ask the owner, on their phone, to approve one action that leaves this \
            machine in their name; consentd runs it after their yes (or, for an approval-only \
            kind, tells you that you may run it yourself). The owner sees exactly what you send: \
            the text, target, fields, attachments and cost. Call consent_kinds first to see which \
            kinds exist and what each needs.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "kind": { "type": "string", "pattern": KIND_PATTERN,
                          "description": "the kind of action, as consent_kinds lists it" },
                "target": { "type": "string", "maxLength": 256,
                            "description": "where it goes (an account, an address), one line" },
                "text": { "type": "string",
                          "description": "exactly what is said or run; line feeds allowed" },
                "fields": { "type": "object", "additionalProperties": { "type": "string" },
                            "description": "the kind's extra one-line fields, by name" },
                "cost_usd": { "type": "string", "pattern": MONEY_PATTERN,
                              "description": "what it costs in US dollars, for a kind that asks" },
                "attachments": { "type": "array", "maxItems": 4,
                                 "items": { "type": "string" },
                                 "description": "paths of files to attach, read by this server" },
                "idempotency_key": { "type": "string", "maxLength": 128,
                                     "description": "your name for this action: asking again \
                                        with it joins the same record" },
                "urgent": { "type": "boolean",
                            "description": "the card makes a sound even in quiet hours" },
                "origin": { "type": "string", "maxLength": 120,
                            "description": "one short line saying who asks, shown on the card" },
                "ttl_seconds": { "type": "integer", "minimum": 10,
                                 "description": "give up after this many seconds (at most the \
                                    owner's card time)" },
                "wait": { "type": "boolean", "default": true,
                          "description": "wait for the outcome (up to the server's limit)" },
            },
            "required": ["kind"],
            "additionalProperties": false,
        },
        "outputSchema": answer_schema(),
    })
}

fn mandate_tool() -> Value {
    json!({
        "name": MANDATE,
        "title": "Ask the owner for a standing permission",
        "description": "Ask the owner for a mandate: for a few days, asks of one kind (to the \
            named targets) run without a card, within a number a day and, for a kind that costs, \
            dollars a day. The owner gets a receipt with Stop after each. Ask for the least you \
            need.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "kind": { "type": "string", "pattern": KIND_PATTERN },
                "targets": { "type": "array", "items": { "type": "string" },
                             "description": "the targets it covers; none for a kind with none" },
                "days": { "type": "integer", "minimum": 1, "maximum": 7 },
                "usd_per_day": { "type": "string", "pattern": MONEY_PATTERN,
                                 "description": "most it may spend a day; leave out for a kind \
                                    that never costs" },
                "actions_per_day": { "type": "integer", "minimum": 1, "maximum": 100 },
                "reason": { "type": "string", "description": "why, in one line, for the owner" },
                "origin": { "type": "string", "maxLength": 120 },
                "wait": { "type": "boolean", "default": true },
            },
            "required": ["kind", "days", "actions_per_day"],
            "additionalProperties": false,
        },
        "outputSchema": answer_schema(),
    })
}

fn status_tool() -> Value {
    json!({
        "name": STATUS,
        "title": "Read one of your asks",
        "description": "Read one of your records by its id; with wait, until it is settled (up \
            to the server's limit). Use this, never a new ask, when an earlier call said \
            pending.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": { "type": "string", "pattern": "^r_[0-9a-f]{20}$" },
                "wait": { "type": "boolean", "default": false },
            },
            "required": ["id"],
            "additionalProperties": false,
        },
        "outputSchema": record_schema(),
    })
}

fn list_tool() -> Value {
    json!({
        "name": LIST,
        "title": "List your asks",
        "description": "List your records, newest first, 100 to a page.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "cursor": { "type": "string", "description": "next_cursor of the page before" },
            },
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "records": { "type": "array", "items": record_schema() },
                "next_cursor": { "type": ["string", "null"] },
            },
            "required": ["records"],
        },
    })
}

fn kinds_tool() -> Value {
    json!({
        "name": KINDS,
        "title": "The kinds of action you may ask for",
        "description": "Every kind of action the owner set up: its label, whether it is on, \
            whether a mandate may cover it, whether consentd runs it (mode run) or you run it \
            after an approval (mode approve), and exactly which of target, text, fields, \
            attachments and cost it requires or allows.",
        "inputSchema": { "type": "object", "properties": {}, "additionalProperties": false },
        "outputSchema": {
            "type": "object",
            "properties": {
                "card_ttl_seconds": { "type": "integer" },
                "kinds": { "type": "array", "items": { "type": "object" } },
            },
            "required": ["kinds"],
        },
    })
}

fn withdraw_tool() -> Value {
    json!({
        "name": WITHDRAW,
        "title": "Take back one of your open asks",
        "description": "Withdraw an ask of yours that the owner has not answered: its card says \
            you withdrew it. A granted or running action cannot be withdrawn.",
        "inputSchema": {
            "type": "object",
            "properties": { "id": { "type": "string", "pattern": "^r_[0-9a-f]{20}$" } },
            "required": ["id"],
            "additionalProperties": false,
        },
        "outputSchema": answer_schema(),
    })
}

fn approval_prompt_tool() -> Value {
    json!({
        "name": APPROVAL_PROMPT,
        "title": "Ask the owner to approve a tool call",
        "description": "For `claude -p --permission-prompt-tool`: asks the owner to approve the \
            tool call on their phone and answers allow (with exactly the input they saw) or \
            deny.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": { "type": "string" },
                "input": { "type": "object" },
                "tool_use_id": { "type": "string" },
            },
            "required": ["tool_name", "input"],
        },
    })
}

/// Every tool, in the order `tools/list` gives them.
pub(super) fn list() -> Vec<Value> {
    vec![
        ask_tool(),
        mandate_tool(),
        status_tool(),
        list_tool(),
        kinds_tool(),
        withdraw_tool(),
        approval_prompt_tool(),
    ]
}
