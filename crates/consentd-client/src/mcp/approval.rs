//! `approval_prompt`: Claude Code's `--permission-prompt-tool`, answered by the owner.
//!
//! The tool call becomes one ask of the approval-only kind named by `--approval-kind`, whose
//! text is exactly what will run (a Bash command as it is; any other tool as its name and its
//! input as JSON). Only `approved` allows, and then with `updatedInput` equal to the input the
//! card was made from, so what runs is what the owner saw. Everything else — a No, silence, a
//! refusal, an unreachable daemon, a malformed call, a wait cut short — denies: this tool never
//! fails open.

use serde_json::{json, Value};

use super::waiter::{Exchange, Waiter};

/// The answer Claude Code reads: a text block holding the decision as JSON.
fn decision(decision: Value) -> Value {
    json!({ "content": [{ "type": "text", "text": decision.to_string() }] })
}

fn deny(message: impl Into<String>) -> Value {
    decision(json!({ "behavior": "deny", "message": message.into() }))
}

/// Answers one permission prompt.
pub(super) async fn prompt(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Value {
    let Some(arguments) = arguments.and_then(Value::as_object) else {
        return deny("approval_prompt: the call has no arguments; nothing was asked");
    };
    let Some(tool) = arguments.get("tool_name").and_then(Value::as_str) else {
        return deny("approval_prompt: the call names no tool_name; nothing was asked");
    };
    let Some(input) = arguments.get("input").filter(|input| input.is_object()) else {
        return deny("approval_prompt: the call has no input object; nothing was asked");
    };
    let Some(kind) = waiter.server.options().approval_kind.clone() else {
        return deny(
            "consentd mcp was started without --approval-kind, so no tool call can be approved",
        );
    };
    let shown = shown_input(tool, input);
    let request = ask_for(
        &kind,
        tool,
        &shown,
        waiter.server.options().origin.as_deref(),
    );
    match waiter.exchange(&request).await {
        Ok(Exchange::Final(answer)) => verdict(&answer, &shown),
        Ok(Exchange::StillOpen(last)) => {
            let withdrawn = match last.get("id").and_then(Value::as_str) {
                Some(id) => waiter.withdraw(id).await,
                None => false,
            };
            deny(format!(
                "the owner did not answer within {} s{}; do not run it",
                waiter.server.options().max_wait.as_secs(),
                if withdrawn {
                    ", and the ask was withdrawn"
                } else {
                    ""
                }
            ))
        }
        Err(error) => deny(format!(
            "consentd could not be asked ({error}); do not run it"
        )),
    }
}

/// The part of a tool call's input the card shows, and so the only input an allow passes on: a
/// Bash call's command alone (its description, timeout and background flag are left to their
/// defaults, since the owner did not see them), any other call's whole input.
fn shown_input(tool: &str, input: &Value) -> Value {
    match (tool, input.get("command").and_then(Value::as_str)) {
        ("Bash", Some(command)) => json!({ "command": command }),
        _ => input.clone(),
    }
}

/// The ask a tool call becomes: its text is what runs. It carries no idempotency key (not even
/// one made of the tool-use id): a key finds its record after it is answered too, and a prompt
/// replayed with the same id would then be allowed again on the first one's Yes. One Yes allows
/// one prompt; a prompt asked again gets a card of its own, as a gate hook's does.
fn ask_for(kind: &str, tool: &str, input: &Value, origin: Option<&str>) -> Value {
    let text = match (tool, input.get("command").and_then(Value::as_str)) {
        ("Bash", Some(command)) => command.to_owned(),
        _ => format!(
            "{tool}\n{}",
            serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string())
        ),
    };
    let mut request = json!({ "v": 1, "op": "ask", "kind": kind, "text": text, "wait": true });
    if let Some(origin) = origin {
        request["origin"] = json!(origin);
    }
    request
}

/// Allow only what the owner approved, with exactly the input the card was made from.
fn verdict(answer: &Value, input: &Value) -> Value {
    let status = answer
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = answer.get("message").and_then(Value::as_str);
    match status {
        "approved" => decision(json!({ "behavior": "allow", "updatedInput": input })),
        "executed" => deny(format!(
            "consentd already did this with its own keys{}; do not run it again",
            answer
                .get("result")
                .and_then(Value::as_str)
                .map_or(String::new(), |r| format!(" (result: {r})"))
        )),
        "declined" => deny(match message {
            Some(reason) => format!(
                "the owner declined it, and said: {reason}\nDo not retry it as it was; follow \
                 what they said"
            ),
            None => "the owner declined it; do not retry".to_owned(),
        }),
        _ => deny(format!(
            "not approved: {status}{}; do not run it",
            message.map_or(String::new(), |m| format!(" ({m})"))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(result: &Value) -> Value {
        let text = result["content"][0]["text"].as_str().unwrap();
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn only_approved_allows_and_pins_the_input() {
        let input = json!({"command": "ls -la"});
        let cases = [
            ("approved", true),
            ("executed", false),
            ("declined", false),
            ("expired", false),
            ("refused", false),
            ("withdrawn", false),
            ("failed", false),
            ("outcome_unknown", false),
            ("pending", false),
            ("card_shown", false),
            ("granted", false),
            ("error", false),
            ("something new", false),
        ];
        for (status, allows) in cases {
            let answer = text_of(&verdict(&json!({"status": status}), &input));
            assert_eq!(answer["behavior"] == "allow", allows, "{status}: {answer}");
            if allows {
                assert_eq!(answer["updatedInput"], input, "{status}");
            } else {
                assert!(
                    answer["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "{status}"
                );
                assert!(answer.get("updatedInput").is_none(), "{status}");
            }
        }
    }

    /// The owner's reason for a No is the deny's message, with what to do about it.
    #[test]
    fn a_decline_passes_the_owners_reason_on() {
        let input = json!({"command": "ls"});
        let answer = json!({"status": "declined", "message": "Use make check"});
        let denied = text_of(&verdict(&answer, &input));
        assert_eq!(denied["behavior"], "deny");
        let message = denied["message"].as_str().unwrap();
        assert!(message.contains("said: Use make check"), "{message}");
        let plain = text_of(&verdict(&json!({"status": "declined"}), &input));
        assert_eq!(plain["message"], "the owner declined it; do not retry");
    }

    #[test]
    fn a_bash_call_passes_on_only_the_command_the_card_showed() {
        let input = json!({"command": "ls", "description": "list", "run_in_background": true});
        assert_eq!(shown_input("Bash", &input), json!({"command": "ls"}));
        assert_eq!(shown_input("Write", &input), input);
        assert_eq!(
            shown_input("Bash", &json!({"cmd": "ls"})),
            json!({"cmd": "ls"})
        );
    }

    #[test]
    fn a_bash_command_is_asked_as_itself_and_other_tools_as_json() {
        let bash = ask_for("shell", "Bash", &json!({"command": "rm -rf build"}), None);
        assert_eq!(bash["text"], "rm -rf build");
        let write = ask_for(
            "shell",
            "Write",
            &json!({"file_path": "/a", "content": "x"}),
            Some("CC"),
        );
        assert_eq!(
            write["text"],
            "Write\n{\n  \"content\": \"x\",\n  \"file_path\": \"/a\"\n}"
        );
        assert_eq!(write["origin"], "CC");
        for ask in [&bash, &write] {
            assert!(ask.get("idempotency_key").is_none(), "{ask}");
        }
    }
}
