//! The hook's answer in each agent's own output format (fixtures/hooks/README.md cites them).
//!
//! - Claude Code `PreToolUse`: `{"hookSpecificOutput":{"hookEventName":"PreToolUse",
//!   "permissionDecision":"allow"|"deny","permissionDecisionReason":…,"updatedInput":…}}`;
//!   no decision is no output and exit 0.
//! - Claude Code `PermissionRequest`: `{"hookSpecificOutput":{"hookEventName":
//!   "PermissionRequest","decision":{"behavior":"allow","updatedInput":…}}}` or
//!   `{"behavior":"deny","message":…}`.
//! - Codex `PermissionRequest`: the same envelope with only `behavior` and `message` in the
//!   decision: Codex treats `updatedInput`, `updatedPermissions` or `interrupt` as invalid.
//! - A failure (the event unreadable, the rules, the daemon): for Claude Code exit 2 with the
//!   message on stderr, which blocks the call and shows the message to the model; for Codex a
//!   deny when the event is a `PermissionRequest`, else exit 2 with stderr, which Codex reads
//!   as a deny too. Never exit 1, which both agents read as a non-blocking error.

use serde_json::{json, Value};

use super::event::{Agent, EventName};

/// Exit code: the call is blocked, stderr says why (both agents).
pub(crate) const EXIT_BLOCK: u8 = 2;

/// What the hook decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Let it run; with `updated_input`, exactly that input (what the owner saw).
    Allow {
        reason: String,
        updated_input: Option<Value>,
    },
    /// Refuse it; the message tells the model what happened and what to do.
    Deny { message: String },
    /// Say nothing: the agent's own permission flow decides.
    NoDecision,
    /// The hook could not decide: refuse, the loudest way the agent has.
    Fail { message: String },
}

/// What the process prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

impl Reply {
    fn json(value: Value) -> Self {
        Self {
            stdout: value.to_string(),
            stderr: String::new(),
            code: 0,
        }
    }

    pub(crate) fn block(message: &str) -> Self {
        Self {
            stdout: String::new(),
            stderr: format!("consentd hook: {message}"),
            code: EXIT_BLOCK,
        }
    }
}

/// The reply for `verdict` on an event `name` (`None`: the event could not be read).
pub(crate) fn render(agent: Agent, name: Option<EventName>, verdict: &Verdict) -> Reply {
    let Some(name) = name else {
        return match verdict {
            Verdict::Fail { message } | Verdict::Deny { message } => Reply::block(message),
            // Nothing is allowed without knowing the event.
            _ => Reply::block("the hook could not read the event"),
        };
    };
    match (agent, name, verdict) {
        (_, _, Verdict::NoDecision) => Reply {
            stdout: String::new(),
            stderr: String::new(),
            code: 0,
        },
        (Agent::ClaudeCode, _, Verdict::Fail { message }) => Reply::block(message),
        (Agent::Codex, EventName::PermissionRequest, Verdict::Fail { message }) => {
            permission_request(agent, "deny", Some(message), None)
        }
        (Agent::Codex, EventName::PreToolUse, Verdict::Fail { message }) => Reply::block(message),
        (
            Agent::ClaudeCode,
            EventName::PreToolUse,
            Verdict::Allow {
                reason,
                updated_input,
            },
        ) => {
            let mut output = json!({
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": reason,
            });
            if let Some(input) = updated_input {
                output["updatedInput"] = input.clone();
            }
            Reply::json(json!({ "hookSpecificOutput": output }))
        }
        (_, EventName::PreToolUse, Verdict::Deny { message }) => {
            Reply::json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": message,
            }}))
        }
        (_, EventName::PermissionRequest, Verdict::Allow { updated_input, .. }) => {
            permission_request(agent, "allow", None, updated_input.as_ref())
        }
        (_, EventName::PermissionRequest, Verdict::Deny { message }) => {
            permission_request(agent, "deny", Some(message), None)
        }
        // Codex's PreToolUse is not answered (the event parser refuses it); never allow.
        (Agent::Codex, EventName::PreToolUse, Verdict::Allow { .. }) => {
            Reply::block("consentd hook codex answers PermissionRequest only")
        }
    }
}

fn permission_request(
    agent: Agent,
    behavior: &str,
    message: Option<&String>,
    updated_input: Option<&Value>,
) -> Reply {
    let mut decision = json!({ "behavior": behavior });
    if let Some(message) = message {
        decision["message"] = json!(message);
    }
    // Codex fails closed on updatedInput: only Claude Code gets the pinned input.
    if let (Agent::ClaudeCode, Some(input)) = (agent, updated_input) {
        decision["updatedInput"] = input.clone();
    }
    Reply::json(json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": decision,
    }}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> Verdict {
        Verdict::Allow {
            reason: "approved".into(),
            updated_input: Some(json!({"command": "make"})),
        }
    }

    fn deny() -> Verdict {
        Verdict::Deny {
            message: "declined".into(),
        }
    }

    fn parsed(reply: &Reply) -> Value {
        serde_json::from_str(&reply.stdout).unwrap()
    }

    #[test]
    fn claude_code_formats() {
        let pre = Some(EventName::PreToolUse);
        let reply = render(Agent::ClaudeCode, pre, &allow());
        assert_eq!(
            parsed(&reply),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "allow", "permissionDecisionReason": "approved",
                "updatedInput": {"command": "make"}}})
        );
        let reply = render(Agent::ClaudeCode, pre, &deny());
        assert_eq!(
            parsed(&reply)["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        let request = Some(EventName::PermissionRequest);
        assert_eq!(
            parsed(&render(Agent::ClaudeCode, request, &allow())),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": {"command": "make"}}}})
        );
        assert_eq!(
            parsed(&render(Agent::ClaudeCode, request, &deny())),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "declined"}}})
        );
        for name in [pre, request, None] {
            let failed = render(
                Agent::ClaudeCode,
                name,
                &Verdict::Fail {
                    message: "no daemon".into(),
                },
            );
            assert_eq!((failed.code, failed.stdout.as_str()), (2, ""));
            assert!(failed.stderr.contains("no daemon"));
        }
        let quiet = render(Agent::ClaudeCode, pre, &Verdict::NoDecision);
        assert_eq!((quiet.code, quiet.stdout.as_str()), (0, ""));
    }

    #[test]
    fn codex_carries_only_behavior_and_message() {
        let request = Some(EventName::PermissionRequest);
        assert_eq!(
            parsed(&render(Agent::Codex, request, &allow())),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"}}})
        );
        assert_eq!(
            parsed(&render(Agent::Codex, request, &deny())),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "declined"}}})
        );
        let failed = render(
            Agent::Codex,
            request,
            &Verdict::Fail {
                message: "no daemon".into(),
            },
        );
        assert_eq!(failed.code, 0);
        assert_eq!(
            parsed(&failed)["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "no daemon"})
        );
        let unread = render(Agent::Codex, None, &allow());
        assert_eq!((unread.code, unread.stdout.as_str()), (2, ""));
    }
}
