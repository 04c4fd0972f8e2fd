//! Asking consentd for a routed or gated call, waiting at most `--max-wait`, and what its
//! answer tells the agent: every outcome but a gate's `approved` is a deny whose message says
//! what happened and whether to try again.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::client::{self, ClientError, Socket};

use super::answer::Verdict;
use super::rules::Ask;

/// How long a withdraw may take after the wait is over.
const WITHDRAW_PATIENCE: Duration = Duration::from_secs(5);

/// How long the daemon may take to say whether a saved rule answers a gated call; past it the
/// call is blocked, never allowed.
const RULE_PATIENCE: Duration = Duration::from_secs(10);

/// How long past `--max-wait` the hook still waits for the daemon's first line (the record's
/// id) when it has not come yet, so the ask can be withdrawn.
const FIRST_LINE_GRACE: Duration = Duration::from_secs(5);

/// How often the grace looks for the id.
const GRACE_STEP: Duration = Duration::from_millis(50);

/// How the ask is made: where, for how long, and what it carries beside the rule's values.
#[derive(Debug, Clone)]
pub(crate) struct Asking {
    pub socket: Socket,
    pub max_wait: Duration,
    pub idempotency_key: Option<String>,
    pub origin: Option<String>,
    /// The agent's call, for a gate from an event with a working directory: a saved exact rule
    /// is looked for first (op `rule`), and the ask carries it so its card offers Always here.
    pub hook: Option<HookCall>,
}

/// The call a gate is for, as the daemon's `rule` op and the ask's `hook` name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookCall {
    /// `claude-code` or `codex`.
    pub agent: &'static str,
    pub tool: String,
    pub cwd: String,
}

/// Whether consentd runs the action (route) or the agent does once approved (gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Route,
    Gate,
}

/// The socket request for `ask`.
pub(crate) fn request(ask: &Ask, asking: &Asking) -> Value {
    let mut request = Map::new();
    request.insert("v".into(), json!(1));
    request.insert("op".into(), json!("ask"));
    request.insert("kind".into(), json!(ask.kind));
    if let Some(target) = &ask.target {
        request.insert("target".into(), json!(target));
    }
    if let Some(text) = &ask.text {
        request.insert("text".into(), json!(text));
    }
    if !ask.fields.is_empty() {
        request.insert("fields".into(), json!(ask.fields));
    }
    if let Some(cost) = &ask.cost_usd {
        request.insert("cost_usd".into(), json!(cost));
    }
    if let Some(key) = &asking.idempotency_key {
        request.insert("idempotency_key".into(), json!(key));
    }
    if let Some(origin) = &asking.origin {
        request.insert("origin".into(), json!(origin));
    }
    if let Some(hook) = &asking.hook {
        request.insert(
            "hook".into(),
            json!({"agent": hook.agent, "tool": hook.tool, "cwd": hook.cwd}),
        );
    }
    request.insert("wait".into(), json!(true));
    Value::Object(request)
}

/// The socket request for `rule`: does a saved rule answer this exact call?
pub(crate) fn rule_request(ask: &Ask, hook: &HookCall, text: &str) -> Value {
    json!({"v": 1, "op": "rule", "kind": ask.kind, "agent": hook.agent, "tool": hook.tool,
        "cwd": hook.cwd, "text": text})
}

/// Asks the daemon whether a saved exact rule answers this call: `Ok(Some(rule))` when one
/// does, `Ok(None)` when none does, and why not in words when the daemon could not say (which
/// blocks the call: a rule is learnt from the daemon alone, never assumed).
async fn saved_rule(ask: &Ask, hook: &HookCall, socket: &Socket) -> Result<Option<String>, String> {
    let Some(text) = ask.text.as_deref() else {
        return Ok(None);
    };
    let frame = rule_request(ask, hook, text);
    let answer = tokio::time::timeout(RULE_PATIENCE, client::request(socket, &frame, |_| {}))
        .await
        .map_err(|_| "consentd did not say in time whether a saved rule allows this".to_owned())?
        .map_err(|error| error.to_string())?;
    rule_answer(&answer)
}

/// What the daemon's answer to `rule` says: a rule's id, none, or a failure in words.
pub(crate) fn rule_answer(answer: &Value) -> Result<Option<String>, String> {
    match (
        text(answer, "status"),
        answer.get("rule").and_then(Value::as_str),
    ) {
        ("allowed", Some(rule)) if consentd_core::exact::is_rule_id(rule) => {
            Ok(Some(rule.to_owned()))
        }
        ("none", None) => Ok(None),
        ("refused", _) => Err(format!(
            "consentd refused to look for a saved rule ({}): {}",
            text(answer, "reason"),
            answer
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
        )),
        _ => Err(format!("consentd answered {answer} to a rule question")),
    }
}

/// Asks, waits, and turns the outcome into a verdict; `tool_input` is what a gate's allow pins.
/// A gate with the agent's call first asks whether a saved exact rule answers it: then the call
/// is allowed with exactly its input and no card.
pub(crate) async fn ask(mode: Mode, ask: &Ask, asking: &Asking, tool_input: &Value) -> Verdict {
    if let (Mode::Gate, Some(hook)) = (mode, &asking.hook) {
        match saved_rule(ask, hook, &asking.socket).await {
            Ok(Some(rule)) => {
                return Verdict::Allow {
                    reason: format!(
                        "allowed by the owner's saved rule {rule} (Always here) through consentd"
                    ),
                    updated_input: Some(tool_input.clone()),
                }
            }
            Ok(None) => {}
            Err(why) => {
                return Verdict::Fail {
                    message: format!("{why}; the call is blocked until consentd answers"),
                }
            }
        }
    }
    let frame = request(ask, asking);
    let id = RefCell::new(None::<String>);
    let asked = client::request(&asking.socket, &frame, |line| {
        if let Some(seen) = line.get("id").and_then(Value::as_str) {
            *id.borrow_mut() = Some(seen.to_owned());
        }
    });
    tokio::pin!(asked);
    let mut waited = tokio::time::timeout(asking.max_wait, &mut asked).await;
    // A loaded machine may be slow to number the record; without its id a gate's ask could
    // not be withdrawn and its card would stay for an approval nobody waits for.
    let grace = tokio::time::Instant::now() + FIRST_LINE_GRACE;
    while waited.is_err() && id.borrow().is_none() && tokio::time::Instant::now() < grace {
        waited = tokio::time::timeout(GRACE_STEP, &mut asked).await;
    }
    let id = id.borrow().clone();
    match waited {
        Ok(Ok(answer)) => outcome(mode, &answer, tool_input),
        Ok(Err(error)) => failed(&error),
        Err(_) => timed_out(mode, id.as_deref(), asking).await,
    }
}

fn failed(error: &ClientError) -> Verdict {
    Verdict::Fail {
        message: format!("{error}; the call is blocked until consentd answers"),
    }
}

fn text<'a>(answer: &'a Value, key: &str) -> &'a str {
    answer.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The verdict for consentd's final answer.
pub(crate) fn outcome(mode: Mode, answer: &Value, tool_input: &Value) -> Verdict {
    let id = text(answer, "id");
    let message = answer.get("message").and_then(Value::as_str);
    let deny = |message: String| Verdict::Deny { message };
    match (mode, text(answer, "status")) {
        (Mode::Gate, "approved") => Verdict::Allow {
            reason: format!("approved by the owner through consentd (record {id})"),
            updated_input: Some(tool_input.clone()),
        },
        (Mode::Route, "executed") => deny(format!(
            "done through consentd (record {id}): the owner approved it and consentd ran it{}; \
             do not run it again",
            answer
                .get("result")
                .and_then(Value::as_str)
                .map(|r| format!("; result: {r}"))
                .unwrap_or_default()
        )),
        (Mode::Gate, "executed") => deny(format!(
            "consentd ran this itself (record {id}), as its category runs a command: do not \
             run it again; the rules file should route this call, not gate it"
        )),
        (Mode::Route, "approved") => deny(format!(
            "the owner approved it (record {id}), but its category is approval-only, so \
             nothing ran; the rules file should gate this call, not route it; do not run it"
        )),
        (_, "refused") => deny(format!(
            "consentd refused to ask the owner ({}): {}; the call is blocked: fix what this \
             names, or leave it",
            text(answer, "reason"),
            message.unwrap_or("no message")
        )),
        (_, "declined") => deny(match message {
            Some(reason) => format!(
                "declined by the owner (record {id}), who said: {reason}\nDo not retry it as \
                 it was; follow what they said"
            ),
            None => format!(
                "declined by the owner (record {id}); do not retry it, and do not do it \
                 another way"
            ),
        }),
        (_, "expired") => deny(format!(
            "the owner did not answer in time (record {id}); it did not run; do not retry it now"
        )),
        (_, "withdrawn") => deny(format!(
            "the ask was withdrawn (record {id}); it did not run"
        )),
        (_, "failed") => deny(format!(
            "the owner approved it and its run failed (record {id}){}; do not retry it \
             yourself: tell the owner",
            message.map(|m| format!(": {m}")).unwrap_or_default()
        )),
        (_, "outcome_unknown") => deny(format!(
            "the owner approved it and whether it ran is unknown (record {id}); it will not \
             be run again; do not retry it: tell the owner"
        )),
        (_, status @ ("pending" | "card_shown" | "granted" | "running")) => Verdict::Fail {
            message: format!(
                "consentd stopped answering before the owner's decision (record {id}, \
                 {status}); the call is blocked; `consentd status {id}` tells the outcome"
            ),
        },
        _ => Verdict::Fail {
            message: format!("consentd answered {answer}; the call is blocked"),
        },
    }
}

/// The wait reached `--max-wait`: a route goes on in consentd; a gate's ask is withdrawn,
/// so no card is left for an approval nobody waits for.
async fn timed_out(mode: Mode, id: Option<&str>, asking: &Asking) -> Verdict {
    let waited = asking.max_wait.as_secs();
    let record = id.unwrap_or("not yet numbered");
    let message = match (mode, id) {
        (Mode::Route, _) => format!(
            "still waiting for the owner after {waited} s (record {record}): if they say yes, \
             consentd runs it; do not run it yourself and do not ask again; `consentd status \
             {record}` tells the outcome"
        ),
        (Mode::Gate, Some(id)) => match withdraw(&asking.socket, id).await {
            Ok(()) => format!(
                "still waiting for the owner after {waited} s; the ask was withdrawn (record \
                 {id}) and the command did not run; ask again later if it is still needed"
            ),
            Err(why) => format!(
                "still waiting for the owner after {waited} s (record {id}), and the ask could \
                 not be withdrawn ({why}); the call is denied: do not run the command"
            ),
        },
        (Mode::Gate, None) => format!(
            "still waiting for consentd after {waited} s; the call is denied: do not run the \
             command"
        ),
    };
    Verdict::Deny { message }
}

/// Takes back an open ask (op `withdraw`); why not, in words, when it could not.
pub(crate) async fn withdraw(socket: &Socket, id: &str) -> Result<(), String> {
    let frame = json!({"v": 1, "op": "withdraw", "id": id});
    let answer = tokio::time::timeout(WITHDRAW_PATIENCE, client::request(socket, &frame, |_| {}))
        .await
        .map_err(|_| "consentd did not answer the withdraw".to_owned())?
        .map_err(|error| error.to_string())?;
    match text(&answer, "status") {
        "withdrawn" => Ok(()),
        _ => Err(answer
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| answer.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn only_a_gates_approval_allows() {
        let input = json!({"command": "make"});
        for status in [
            "executed",
            "approved",
            "refused",
            "declined",
            "expired",
            "withdrawn",
            "failed",
            "outcome_unknown",
            "pending",
            "granted",
            "nonsense",
        ] {
            let answer = json!({"v": 1, "id": "r_1", "status": status});
            for mode in [Mode::Route, Mode::Gate] {
                let verdict = outcome(mode, &answer, &input);
                let allows = matches!(verdict, Verdict::Allow { .. });
                assert_eq!(
                    allows,
                    mode == Mode::Gate && status == "approved",
                    "{mode:?} {status}: {verdict:?}"
                );
            }
        }
        let Verdict::Allow { updated_input, .. } = outcome(
            Mode::Gate,
            &json!({"id": "r_1", "status": "approved"}),
            &input,
        ) else {
            panic!()
        };
        assert_eq!(updated_input, Some(input));
    }

    /// A daemon that sends its first line (the id) only after `delay`, never decides, and
    /// withdraws on request; what the gate's hook answers with `--max-wait 1`.
    fn gate_past_max_wait(delay: Duration) -> String {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = tokio::net::UnixListener::bind(&path).unwrap();
            let daemon = tokio::spawn(async move {
                let mut held = Vec::new();
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let (reader, mut writer) = stream.into_split();
                    let mut line = String::new();
                    BufReader::new(reader).read_line(&mut line).await.unwrap();
                    if line.contains("\"withdraw\"") {
                        let answer = b"{\"v\":1,\"id\":\"r_1\",\"status\":\"withdrawn\"}\n";
                        writer.write_all(answer).await.unwrap();
                        continue;
                    }
                    tokio::time::sleep(delay).await;
                    let first = b"{\"v\":1,\"id\":\"r_1\",\"status\":\"pending\"}\n";
                    writer.write_all(first).await.unwrap();
                    held.push(writer);
                }
            });
            let asking = Asking {
                socket: client::socket_path(Some(path.clone())),
                max_wait: Duration::from_secs(1),
                idempotency_key: None,
                origin: None,
                hook: None,
            };
            let gate = Ask {
                rule: "any".into(),
                kind: "shell".into(),
                target: None,
                text: Some("make".into()),
                fields: BTreeMap::new(),
                cost_usd: None,
            };
            let verdict = super::ask(Mode::Gate, &gate, &asking, &json!({})).await;
            daemon.abort();
            match verdict {
                Verdict::Deny { message } => message,
                other => panic!("{other:?}"),
            }
        })
    }

    #[test]
    fn a_slow_first_line_still_lets_a_gate_be_withdrawn() {
        // (delay of the first line, what the deny says)
        let table = [
            (
                Duration::from_millis(0),
                "the ask was withdrawn (record r_1)",
            ),
            (
                Duration::from_millis(1800),
                "the ask was withdrawn (record r_1)",
            ),
            (
                FIRST_LINE_GRACE + Duration::from_secs(2),
                "still waiting for consentd",
            ),
        ];
        for (delay, said) in table {
            let message = gate_past_max_wait(delay);
            assert!(message.contains(said), "{delay:?}: {message}");
        }
    }

    #[test]
    fn only_a_well_formed_allowed_answer_passes_by_a_rule() {
        let rule = "u_0123456789abcdef0123";
        // (the daemon's answer, what it says)
        let cases = [
            (
                json!({"v": 1, "status": "allowed", "rule": rule}),
                Ok(Some(rule.to_owned())),
            ),
            (json!({"v": 1, "status": "none"}), Ok(None)),
            (json!({"v": 1, "status": "allowed"}), Err(())),
            (json!({"v": 1, "status": "allowed", "rule": "r_1"}), Err(())),
            (json!({"v": 1, "status": "none", "rule": rule}), Err(())),
            (
                json!({"v": 1, "status": "refused", "reason": "bad_request"}),
                Err(()),
            ),
            (json!({"v": 1, "status": "approved", "id": "r_1"}), Err(())),
            (json!({}), Err(())),
        ];
        for (answer, expected) in cases {
            assert_eq!(rule_answer(&answer).map_err(|_| ()), expected, "{answer}");
        }
    }

    #[test]
    fn a_gate_with_its_call_carries_it_and_asks_for_a_rule_with_the_same_text() {
        let ask = Ask {
            rule: "build".into(),
            kind: "shell".into(),
            target: None,
            text: Some("cargo test".into()),
            fields: BTreeMap::new(),
            cost_usd: None,
        };
        let hook = HookCall {
            agent: "codex",
            tool: "Bash".into(),
            cwd: "/home/u/blog".into(),
        };
        let asking = Asking {
            socket: client::socket_path(Some("/x".into())),
            max_wait: Duration::from_secs(1),
            idempotency_key: None,
            origin: None,
            hook: Some(hook.clone()),
        };
        assert_eq!(
            request(&ask, &asking)["hook"],
            json!({"agent": "codex", "tool": "Bash", "cwd": "/home/u/blog"})
        );
        assert_eq!(
            rule_request(&ask, &hook, "cargo test"),
            json!({"v": 1, "op": "rule", "kind": "shell", "agent": "codex", "tool": "Bash",
                "cwd": "/home/u/blog", "text": "cargo test"})
        );
    }

    #[test]
    fn the_request_carries_the_rule_values_and_the_key() {
        let ask = Ask {
            rule: "post".into(),
            kind: "publish_x".into(),
            target: Some("@mila".into()),
            text: Some("Hi".into()),
            fields: [("reply_to".to_owned(), "1".to_owned())].into(),
            cost_usd: None,
        };
        let asking = Asking {
            socket: client::socket_path(Some("/x".into())),
            max_wait: Duration::from_secs(1),
            idempotency_key: Some("hook:k".into()),
            origin: None,
            hook: None,
        };
        assert_eq!(
            request(&ask, &asking),
            json!({"v": 1, "op": "ask", "kind": "publish_x", "target": "@mila", "text": "Hi",
                "fields": {"reply_to": "1"}, "idempotency_key": "hook:k", "wait": true})
        );
    }
}
