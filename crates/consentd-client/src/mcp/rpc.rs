//! JSON-RPC 2.0 as MCP uses it: parsing one incoming message and shaping answers.
//!
//! MCP since 2025-06-18 has no batches, ids are strings or integers (never null), and a message
//! with an `id` and a `method` is a request, one with a `method` alone a notification.

use serde_json::{json, Map, Value};

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub(super) enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to a request (this server sends none, so it is dropped).
    Response,
    /// An empty line.
    Blank,
}

/// A JSON-RPC error: its code and message, and optional data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(super) fn parse(message: impl Into<String>) -> Self {
        RpcError {
            code: -32700,
            message: format!("parse error: {}", message.into()),
        }
    }

    pub(super) fn invalid_request(message: impl Into<String>) -> Self {
        RpcError {
            code: -32600,
            message: format!("invalid request: {}", message.into()),
        }
    }

    pub(super) fn method_not_found(method: &str) -> Self {
        RpcError {
            code: -32601,
            message: format!("method not found: {method}"),
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError {
            code: -32602,
            message: message.into(),
        }
    }
}

/// Parses one line. An error carries the id to answer with (`null` when none could be read).
pub(super) fn parse(line: &[u8]) -> Result<Incoming, (Value, RpcError)> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Incoming::Blank);
    }
    let value: Value = serde_json::from_slice(line)
        .map_err(|error| (Value::Null, RpcError::parse(error.to_string())))?;
    let Value::Object(message) = value else {
        let what = if value.is_array() {
            "batches are not part of MCP since 2025-06-18; send one message per line"
        } else {
            "a message must be a JSON object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    let id = message.get("id").cloned();
    if let Some(id) = &id {
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return Err((
                Value::Null,
                RpcError::invalid_request("an id must be a string or an integer"),
            ));
        }
    }
    let answer_id = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            answer_id,
            RpcError::invalid_request("jsonrpc must be \"2.0\""),
        ));
    }
    let Some(method) = message.get("method") else {
        return if id.is_some() && (message.contains_key("result") || message.contains_key("error"))
        {
            Ok(Incoming::Response)
        } else {
            Err((answer_id, RpcError::invalid_request("no method")))
        };
    };
    let Some(method) = method.as_str() else {
        return Err((
            answer_id,
            RpcError::invalid_request("method must be a string"),
        ));
    };
    let params = params_of(&message).map_err(|error| (answer_id.clone(), error))?;
    Ok(match id {
        Some(id) => Incoming::Request {
            id,
            method: method.to_owned(),
            params,
        },
        None => Incoming::Notification {
            method: method.to_owned(),
            params,
        },
    })
}

fn params_of(message: &Map<String, Value>) -> Result<Value, RpcError> {
    match message.get("params") {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(params @ Value::Object(_)) => Ok(params.clone()),
        Some(_) => Err(RpcError::invalid_request("params must be an object")),
    }
}

/// A request id as a map key: `1` and `"1"` are different ids.
pub(super) fn id_key(id: &Value) -> String {
    id.to_string()
}

pub(super) fn result_response(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

pub(super) fn error_response(id: Value, error: &RpcError) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": error.code, "message": error.message },
    })
}
