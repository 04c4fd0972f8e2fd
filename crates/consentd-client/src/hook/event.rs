//! The event an agent hands its hook on stdin, read strictly: anything unexpected is an error
//! (and the hook blocks), never a guess.
//!
//! Shapes (fixtures/hooks/README.md cites the documents): Claude Code's `PreToolUse` and
//! `PermissionRequest` carry `session_id`, `transcript_path`, `cwd`, `permission_mode`,
//! `hook_event_name`, `tool_name`, `tool_input` and (PreToolUse) `tool_use_id`; Codex's
//! `PermissionRequest` carries `session_id`, `turn_id`, `cwd`, `hook_event_name`, `model`,
//! `permission_mode`, `tool_name` and `tool_input`, and no tool-use id.

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The agent a hook answers, each in its own output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    ClaudeCode,
    Codex,
}

impl Agent {
    /// The agent's name as the card's origin line starts.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
        }
    }
}

/// The hook events the hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventName {
    PreToolUse,
    PermissionRequest,
}

/// One tool call, as the event gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub name: EventName,
    pub session_id: String,
    pub tool_use_id: Option<String>,
    pub turn_id: Option<String>,
    pub cwd: Option<String>,
    pub tool_name: String,
    /// Always a JSON object.
    pub tool_input: Value,
}

/// Why an event was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EventError {
    #[error("the event on stdin is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the event on stdin is not JSON: {0}")]
    NotJson(String),
    #[error("the event on stdin is not a JSON object")]
    NotObject,
    #[error("the event has no {0} (a string)")]
    Missing(&'static str),
    #[error("the event's tool_input is not a JSON object")]
    InputNotObject,
    #[error("{agent} hook event {name:?} is not one this hook answers (it answers {answers})")]
    UnknownEvent {
        agent: &'static str,
        name: String,
        answers: &'static str,
    },
}

/// Reads an event for `agent`.
pub(crate) fn parse(agent: Agent, bytes: &[u8]) -> Result<Event, EventError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| EventError::NotJson(e.to_string()))?;
    let object = value.as_object().ok_or(EventError::NotObject)?;
    let name = string(object, "hook_event_name")?;
    let name = match (agent, name.as_str()) {
        (Agent::ClaudeCode, "PreToolUse") => EventName::PreToolUse,
        (_, "PermissionRequest") => EventName::PermissionRequest,
        _ => {
            return Err(EventError::UnknownEvent {
                agent: agent.name(),
                name,
                answers: match agent {
                    Agent::ClaudeCode => "PreToolUse and PermissionRequest",
                    Agent::Codex => "PermissionRequest",
                },
            })
        }
    };
    let tool_name = string(object, "tool_name")?;
    if tool_name.is_empty() {
        return Err(EventError::Missing("tool_name"));
    }
    let tool_input = object
        .get("tool_input")
        .ok_or(EventError::Missing("tool_input"))?;
    if !tool_input.is_object() {
        return Err(EventError::InputNotObject);
    }
    Ok(Event {
        name,
        session_id: string(object, "session_id")?,
        tool_use_id: optional(object, "tool_use_id"),
        turn_id: optional(object, "turn_id"),
        cwd: optional(object, "cwd"),
        tool_name,
        tool_input: tool_input.clone(),
    })
}

fn string(object: &Map<String, Value>, key: &'static str) -> Result<String, EventError> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(EventError::Missing(key))
}

fn optional(object: &Map<String, Value>, key: &str) -> Option<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl Event {
    /// A route's idempotency key, so a hook run again for the same call joins its record
    /// (and is told it already ran) instead of running it twice: from the session and the
    /// tool-use id; without one (Codex), from the session, the turn and the call itself; `None`
    /// when the event has neither. A gate's ask carries no key (`super::decide` says why).
    pub(crate) fn idempotency_key(&self) -> Option<String> {
        let mut hash = Sha256::new();
        hash.update(self.session_id.as_bytes());
        hash.update([0]);
        match (&self.tool_use_id, &self.turn_id) {
            (Some(tool_use_id), _) => hash.update(tool_use_id.as_bytes()),
            (None, Some(turn_id)) => {
                hash.update(b"turn\0");
                hash.update(turn_id.as_bytes());
                hash.update([0]);
                hash.update(self.tool_name.as_bytes());
                hash.update([0]);
                let input = serde_jcs::to_string(&self.tool_input).unwrap_or_default();
                hash.update(input.as_bytes());
            }
            (None, None) => return None,
        }
        let hex = hex::encode(hash.finalize());
        Some(format!("hook:{}", &hex[..32]))
    }

    /// The card's origin line: the agent and its working directory, the home directory as `~`,
    /// at most 120 characters; a long directory loses its start, never the agent's name.
    pub(crate) fn origin(&self, agent: Agent, home: Option<&str>) -> String {
        let Some(cwd) = self.cwd.as_deref() else {
            return agent.name().to_owned();
        };
        let cwd = match home {
            Some(home) if !home.is_empty() && home != "/" => match cwd.strip_prefix(home) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
                _ => cwd.to_owned(),
            },
            _ => cwd.to_owned(),
        };
        let head = format!("{} · ", agent.name());
        let room = ORIGIN_CHARS - head.chars().count();
        let count = cwd.chars().count();
        if count <= room {
            return format!("{head}{cwd}");
        }
        let tail: String = cwd.chars().skip(count - (room - 1)).collect();
        format!("{head}…{tail}")
    }
}

/// The most characters an origin line has.
const ORIGIN_CHARS: usize = 120;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(value: Value) -> Result<Event, EventError> {
        parse(Agent::ClaudeCode, value.to_string().as_bytes())
    }

    #[test]
    fn malformed_events_are_errors() {
        assert!(matches!(
            parse(Agent::ClaudeCode, b"{"),
            Err(EventError::NotJson(_))
        ));
        assert_eq!(event(json!([1])), Err(EventError::NotObject));
        let base = json!({"hook_event_name": "PreToolUse", "session_id": "s",
            "tool_name": "Bash", "tool_input": {"command": "ls"}});
        assert!(event(base.clone()).is_ok());
        for key in ["hook_event_name", "session_id", "tool_name", "tool_input"] {
            let mut broken = base.clone();
            broken.as_object_mut().unwrap().remove(key);
            assert!(event(broken).is_err(), "{key}");
        }
        let mut input = base.clone();
        input["tool_input"] = json!("ls");
        assert_eq!(event(input), Err(EventError::InputNotObject));
        let mut other = base.clone();
        other["hook_event_name"] = json!("PostToolUse");
        assert!(matches!(event(other), Err(EventError::UnknownEvent { .. })));
        // Codex answers PermissionRequest only.
        assert!(parse(Agent::Codex, base.to_string().as_bytes()).is_err());
    }

    #[test]
    fn the_key_follows_the_call_and_the_origin_shortens_home() {
        let one = event(json!({"hook_event_name": "PreToolUse", "session_id": "s",
            "tool_use_id": "toolu_1", "cwd": "/home/mila/src/blog",
            "tool_name": "Bash", "tool_input": {"command": "ls"}}))
        .unwrap();
        let key = one.idempotency_key().unwrap();
        assert!(key.starts_with("hook:") && key.len() == 37, "{key}");
        let mut two = one.clone();
        two.tool_use_id = Some("toolu_2".into());
        assert_ne!(two.idempotency_key().unwrap(), key);
        let mut bare = one.clone();
        bare.tool_use_id = None;
        assert_eq!(bare.idempotency_key(), None);
        bare.turn_id = Some("turn-1".into());
        assert!(bare.idempotency_key().is_some());

        assert_eq!(
            one.origin(Agent::ClaudeCode, Some("/home/mila")),
            "Claude Code · ~/src/blog"
        );
        assert_eq!(
            one.origin(Agent::Codex, Some("/home/mil")),
            "Codex · /home/mila/src/blog"
        );
        let mut deep = one.clone();
        deep.cwd = Some(format!("/{}/blog", "a".repeat(300)));
        for agent in [Agent::ClaudeCode, Agent::Codex] {
            let origin = deep.origin(agent, None);
            assert_eq!(origin.chars().count(), 120, "{origin}");
            // The directory loses its start; the agent's name stays.
            assert!(
                origin.starts_with(&format!("{} · …", agent.name())),
                "{origin}"
            );
            assert!(origin.ends_with("aaa/blog"), "{origin}");
        }
        // Exactly at the limit nothing is cut.
        deep.cwd = Some(format!(
            "/{}",
            "b".repeat(120 - "Codex · /".chars().count())
        ));
        let origin = deep.origin(Agent::Codex, None);
        assert_eq!(origin.chars().count(), 120);
        assert!(!origin.contains('…'), "{origin}");
    }
}
