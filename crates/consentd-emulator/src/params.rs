//! A request's parameters, whatever the encoding (query string, JSON, form, multipart with
//! uploads), as one JSON object.

use std::collections::{HashMap, HashSet};

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{header, StatusCode};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::description;
use crate::description::{bad, ApiFail};

/// Telegram's largest upload for bots; also bounds any request body.
pub(crate) const BODY_LIMIT: usize = 50 * 1024 * 1024;

/// A file part of a multipart request.
#[derive(Clone, Debug)]
pub(crate) struct Upload {
    pub(crate) name: String,
    pub(crate) media_type: Option<String>,
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
    /// The content; kept by the emulator only when asked to ([`Config::keep_file_bytes`]).
    pub(crate) data: axum::body::Bytes,
}

impl Upload {
    pub(crate) fn descriptor(&self) -> Value {
        json!({"name": self.name, "bytes": self.bytes, "sha256": self.sha256})
    }
}

/// A request's parameters, whatever the encoding, and its uploads by parameter name.
#[derive(Debug, Default)]
pub(crate) struct Params {
    pub(crate) values: Map<String, Value>,
    pub(crate) uploads: HashMap<String, Upload>,
}

/// Parameters that are always free text: never parsed as numbers or JSON.
const TEXT_PARAMS: &[&str] = &[
    "text",
    "caption",
    "callback_query_id",
    "inline_message_id",
    "parse_mode",
    "url",
    "photo",
    "document",
    "language_code",
    "description",
    "short_description",
    "name",
    "title",
    "file_name",
    "business_connection_id",
    "message_effect_id",
    "secret_token",
];

/// Parameters the Bot API takes as JSON-serialized strings; stored parsed.
const JSON_PARAMS: &[&str] = &[
    "reply_markup",
    "commands",
    "scope",
    "allowed_updates",
    "entities",
    "caption_entities",
    "link_preview_options",
    "reply_parameters",
];

/// A form or multipart value: numbers, booleans and JSON arrive as strings.
fn coerce(name: &str, raw: String) -> Value {
    if TEXT_PARAMS.contains(&name) || raw.starts_with("attach://") {
        return Value::String(raw);
    }
    match serde_json::from_str::<Value>(&raw) {
        Ok(value) if !value.is_string() && !value.is_null() => value,
        _ => Value::String(raw),
    }
}

pub(crate) async fn read_params(request: Request) -> Result<Params, ApiFail> {
    let mut params = Params::default();
    if let Some(query) = request.uri().query() {
        for (name, value) in parse_urlencoded(query) {
            let value = coerce(&name, value);
            params.values.insert(name, value);
        }
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        read_multipart(request, &mut params).await?;
    } else {
        let body = axum::body::to_bytes(request.into_body(), BODY_LIMIT)
            .await
            .map_err(|_| ApiFail {
                code: 413,
                description: description::TOO_LARGE.to_owned(),
                retry_after: None,
            })?;
        if content_type.starts_with("application/json") {
            if !body.is_empty() {
                match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Object(object)) => params.values.extend(object),
                    _ => return Err(bad("Bad Request: can't parse JSON object")),
                }
            }
        } else if !body.is_empty() {
            // Form-encoded, or no content type at all (curl without -H).
            let text = String::from_utf8_lossy(&body);
            for (name, value) in parse_urlencoded(&text) {
                let value = coerce(&name, value);
                params.values.insert(name, value);
            }
        }
    }
    for name in JSON_PARAMS {
        if let Some(Value::String(raw)) = params.values.get(*name) {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(raw)
            {
                params.values.insert((*name).to_owned(), parsed);
            }
        }
    }
    Ok(params)
}

/// Multipart: text parts become parameters, file parts uploads. A file is referred to either by
/// a text parameter `attach://PART` (teloxide's way) or by a part named like the parameter.
async fn read_multipart(request: Request, params: &mut Params) -> Result<(), ApiFail> {
    let too_large = |status: StatusCode| {
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiFail {
                code: 413,
                description: description::TOO_LARGE.to_owned(),
                retry_after: None,
            }
        } else {
            bad("Bad Request: can't parse multipart/form-data")
        }
    };
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|rejection| too_large(rejection.status()))?;
    let mut parts = Vec::new();
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|error| too_large(error.status()))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let media_type = field.content_type().map(str::to_owned);
        let data = field
            .bytes()
            .await
            .map_err(|error| too_large(error.status()))?;
        parts.push((name, file_name, media_type, data));
    }
    let referenced: HashSet<String> = parts
        .iter()
        .filter(|(_, file_name, _, _)| file_name.is_none())
        .filter_map(|(_, _, _, data)| {
            std::str::from_utf8(data)
                .ok()?
                .strip_prefix("attach://")
                .map(str::to_owned)
        })
        .collect();
    let mut files = HashMap::new();
    for (name, file_name, media_type, data) in parts {
        if file_name.is_some() || referenced.contains(&name) {
            let upload = Upload {
                name: file_name.unwrap_or_default(),
                media_type,
                bytes: data.len() as u64,
                sha256: hex::encode(Sha256::digest(&data)),
                data,
            };
            files.insert(name, upload);
        } else {
            let value = coerce(&name, String::from_utf8_lossy(&data).into_owned());
            params.values.insert(name, value);
        }
    }
    let mut used = HashSet::new();
    for (name, value) in params.values.iter_mut() {
        let part = value.as_str().and_then(|s| s.strip_prefix("attach://"));
        if let Some(upload) = part.and_then(|part| files.get_key_value(part)) {
            used.insert(upload.0.clone());
            *value = upload.1.descriptor();
            params.uploads.insert(name.clone(), upload.1.clone());
        }
    }
    for (name, upload) in files {
        if !used.contains(&name) && !params.values.contains_key(&name) {
            params.values.insert(name.clone(), upload.descriptor());
            params.uploads.insert(name, upload);
        }
    }
    Ok(())
}

fn parse_urlencoded(input: &str) -> Vec<(String, String)> {
    input
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name, true), percent_decode(value, true))
        })
        .collect()
}

pub(crate) fn percent_decode(input: &str, plus_is_space: bool) -> String {
    fn hex_digit(byte: u8) -> Option<u8> {
        (byte as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(high * 16 + low);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn as_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        Value::String(s) => match s.as_str() {
            "true" | "True" | "1" => Some(true),
            "false" | "False" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn str_param(params: &Map<String, Value>, name: &str) -> Option<String> {
    match params.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

pub(crate) fn update_id(update: &Value) -> Option<i64> {
    update.get("update_id").and_then(as_i64)
}
