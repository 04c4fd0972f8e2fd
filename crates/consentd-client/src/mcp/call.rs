//! One tool call: its arguments turned into one socket request, sent through a `Waiter`
//! (`waiter.rs`), and the answer turned into a tool result.

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::rpc::RpcError;
use super::tools;
use super::waiter::Waiter;
use super::{approval, guidance, Server};
use crate::client;

/// A tool's arguments, as an object, checked key by key.
pub(super) struct Arguments {
    tool: &'static str,
    map: Map<String, Value>,
}

/// What is wrong with a call's arguments: told to the model as a tool error, so it can fix it.
pub(super) struct BadArguments(pub String);

impl Arguments {
    fn new(
        tool: &'static str,
        value: Option<&Value>,
        allowed: &[&str],
    ) -> Result<Self, BadArguments> {
        let map = match value {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return Err(BadArguments(format!("{tool}: arguments must be an object"))),
        };
        if let Some(unknown) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(BadArguments(format!(
                "{tool}: unknown argument `{unknown}` (it takes {})",
                allowed.join(", ")
            )));
        }
        Ok(Arguments { tool, map })
    }

    fn wrong(&self, key: &str, what: &str) -> BadArguments {
        BadArguments(format!("{}: `{key}` must be {what}", self.tool))
    }

    /// A key of the given JSON type, copied as it is (the daemon judges its value).
    fn typed(
        &self,
        key: &str,
        is: fn(&Value) -> bool,
        what: &str,
    ) -> Result<Option<Value>, BadArguments> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) if is(value) => Ok(Some(value.clone())),
            Some(_) => Err(self.wrong(key, what)),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, BadArguments> {
        Ok(self
            .typed(key, Value::is_string, "a string")?
            .and_then(|v| v.as_str().map(str::to_owned)))
    }

    fn required_string(&self, key: &str) -> Result<String, BadArguments> {
        self.string(key)?
            .ok_or_else(|| BadArguments(format!("{}: `{key}` is required", self.tool)))
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, BadArguments> {
        Ok(self
            .typed(key, Value::is_boolean, "true or false")?
            .and_then(|v| v.as_bool()))
    }

    /// Copies the listed keys that are present into `request`, each checked for its type.
    fn copy_into(
        &self,
        request: &mut Map<String, Value>,
        keys: &[(&str, Kind)],
    ) -> Result<(), BadArguments> {
        for (key, kind) in keys {
            let (is, what): (fn(&Value) -> bool, &str) = match kind {
                Kind::String => (Value::is_string, "a string"),
                Kind::Bool => (Value::is_boolean, "true or false"),
                Kind::Integer => (|v| v.is_u64(), "a whole number"),
                Kind::Strings => (is_array_of_strings, "an array of strings"),
                Kind::StringMap => (is_object_of_strings, "an object of strings"),
            };
            if let Some(value) = self.typed(key, is, what)? {
                request.insert((*key).to_owned(), value);
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Kind {
    String,
    Bool,
    Integer,
    Strings,
    StringMap,
}

fn is_array_of_strings(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| items.iter().all(Value::is_string))
}

fn is_object_of_strings(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| map.values().all(Value::is_string))
}

/// Answers a `tools/call`.
pub(super) async fn call(server: &Server, params: &Value) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("tools/call needs the tool's `name`"))?;
    let arguments = params.get("arguments");
    let progress = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_i64() || token.is_u64())
        .cloned();
    let waiter = Waiter {
        server,
        progress,
        sent: std::sync::Mutex::new(0.0),
    };
    let result = match name {
        tools::ASK => ask(&waiter, arguments).await,
        tools::MANDATE => mandate(&waiter, arguments).await,
        tools::STATUS => status(&waiter, arguments).await,
        tools::LIST => list(&waiter, arguments).await,
        tools::KINDS => kinds(&waiter, arguments).await,
        tools::WITHDRAW => withdraw(&waiter, arguments).await,
        tools::APPROVAL_PROMPT => return Ok(approval::prompt(&waiter, arguments).await),
        _ => return Err(RpcError::invalid_params(format!("unknown tool: {name}"))),
    };
    Ok(result.unwrap_or_else(|BadArguments(message)| guidance::tool_error(&message)))
}

async fn ask(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    let args = Arguments::new(
        tools::ASK,
        arguments,
        &[
            "kind",
            "target",
            "text",
            "fields",
            "cost_usd",
            "attachments",
            "idempotency_key",
            "urgent",
            "origin",
            "ttl_seconds",
            "wait",
        ],
    )?;
    let mut request = Map::new();
    request.insert("v".into(), json!(1));
    request.insert("op".into(), json!("ask"));
    request.insert("kind".into(), json!(args.required_string("kind")?));
    args.copy_into(
        &mut request,
        &[
            ("target", Kind::String),
            ("text", Kind::String),
            ("fields", Kind::StringMap),
            ("cost_usd", Kind::String),
            ("idempotency_key", Kind::String),
            ("urgent", Kind::Bool),
        ],
    )?;
    if let Some(ttl) = args.typed("ttl_seconds", Value::is_u64, "a whole number of seconds")? {
        request.insert("ttl".into(), ttl);
    }
    let origin = args
        .string("origin")?
        .or_else(|| waiter.server.options().origin.clone());
    if let Some(origin) = origin {
        request.insert("origin".into(), json!(origin));
    }
    let paths = args
        .typed("attachments", is_array_of_strings, "an array of file paths")?
        .unwrap_or(json!([]));
    let mut attachments = Vec::new();
    for path in paths
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        attachments.push(read_attachment(Path::new(path)).await?);
    }
    if !attachments.is_empty() {
        request.insert("attachments".into(), Value::Array(attachments));
    }
    let wait = args.boolean("wait")?.unwrap_or(true);
    request.insert("wait".into(), json!(wait));
    Ok(waiter
        .answer(Value::Object(request), guidance::answer_result)
        .await)
}

/// An attachment as the daemon takes it: named by the file's name, its type guessed from the
/// extension, its bytes in base64. Read here, as the agent's user, never by the daemon.
async fn read_attachment(path: &Path) -> Result<Value, BadArguments> {
    let shown = path.display();
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| BadArguments(format!("attachment {shown}: not a file name in UTF-8")))?;
    let owned = path.to_owned();
    let bytes = tokio::task::spawn_blocking(move || client::read_named_file(&owned))
        .await
        .map_err(|error| BadArguments(format!("attachment {shown}: {error}")))?
        .map_err(|error| BadArguments(format!("attachment {shown}: {error}")))?;
    Ok(json!({
        "name": name,
        "media_type": client::guess_media_type(path),
        "data_b64": base64::engine::general_purpose::STANDARD.encode(bytes),
    }))
}

async fn mandate(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    let args = Arguments::new(
        tools::MANDATE,
        arguments,
        &[
            "kind",
            "targets",
            "days",
            "usd_per_day",
            "actions_per_day",
            "reason",
            "origin",
            "wait",
        ],
    )?;
    let mut request = Map::new();
    request.insert("v".into(), json!(1));
    request.insert("op".into(), json!("mandate"));
    request.insert("kind".into(), json!(args.required_string("kind")?));
    args.copy_into(
        &mut request,
        &[
            ("targets", Kind::Strings),
            ("days", Kind::Integer),
            ("usd_per_day", Kind::String),
            ("actions_per_day", Kind::Integer),
            ("reason", Kind::String),
            ("origin", Kind::String),
        ],
    )?;
    request.insert("wait".into(), json!(args.boolean("wait")?.unwrap_or(true)));
    Ok(waiter
        .answer(Value::Object(request), guidance::answer_result)
        .await)
}

async fn status(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    let args = Arguments::new(tools::STATUS, arguments, &["id", "wait"])?;
    let request = json!({
        "v": 1, "op": "status",
        "id": args.required_string("id")?,
        "wait": args.boolean("wait")?.unwrap_or(false),
    });
    Ok(waiter.answer(request, guidance::record_result).await)
}

async fn list(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    let args = Arguments::new(tools::LIST, arguments, &["cursor"])?;
    let mut request = json!({ "v": 1, "op": "list" });
    if let Some(cursor) = args.string("cursor")? {
        request["cursor"] = json!(cursor);
    }
    Ok(waiter.answer(request, guidance::list_result).await)
}

async fn kinds(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    Arguments::new(tools::KINDS, arguments, &[])?;
    Ok(waiter
        .answer(json!({ "v": 1, "op": "kinds" }), guidance::kinds_result)
        .await)
}

async fn withdraw(waiter: &Waiter<'_>, arguments: Option<&Value>) -> Result<Value, BadArguments> {
    let args = Arguments::new(tools::WITHDRAW, arguments, &["id"])?;
    let request = json!({ "v": 1, "op": "withdraw", "id": args.required_string("id")? });
    Ok(waiter.answer(request, guidance::answer_result).await)
}
