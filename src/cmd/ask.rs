//! `consentd ask` and `consentd mandate`: the request built from the arguments (the text and
//! attachment files read here), sent and waited on by consentd-client's `session`.

use std::process::ExitCode;

use anyhow::Context as _;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{report, with_runtime, EXIT_USAGE};
use crate::cli::{AskArgs, MandateArgs};
use consentd_client::client::{self, OnInterrupt};
use consentd_client::errln;
use consentd_client::session;

impl MandateArgs {
    fn request(&self) -> Value {
        let mut request = json!({
            "v": 1,
            "op": "mandate",
            "kind": self.kind,
            "targets": self.targets,
            "days": self.days,
            "actions_per_day": self.actions_per_day,
            "wait": !self.no_wait,
        });
        if let Some(usd) = &self.usd_per_day {
            request["usd_per_day"] = json!(usd);
        }
        if let Some(reason) = &self.reason {
            request["reason"] = json!(reason);
        }
        request
    }
}

pub(super) fn ask(args: AskArgs) -> ExitCode {
    match ask_request(&args) {
        Ok(request) => {
            let on_interrupt = if args.keep_open {
                OnInterrupt::KeepOpen
            } else {
                OnInterrupt::Withdraw
            };
            report(with_runtime(session::ask(
                args.common.into(),
                request,
                on_interrupt,
            )))
        }
        Err(error) => {
            errln!("consentd ask: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

pub(super) fn mandate(args: MandateArgs) -> ExitCode {
    let request = args.request();
    report(with_runtime(session::ask(
        args.common.into(),
        request,
        OnInterrupt::KeepOpen,
    )))
}

/// Builds the ask's request object from the arguments, reading the text and attachment files.
fn ask_request(args: &AskArgs) -> anyhow::Result<Value> {
    let mut request = Map::new();
    request.insert("v".into(), json!(1));
    request.insert("op".into(), json!("ask"));
    request.insert("kind".into(), json!(args.kind));
    if let Some(target) = &args.target {
        request.insert("target".into(), json!(target));
    }
    let text = match (&args.text, &args.text_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(path)) => {
            let bytes = client::read_named_file(path)
                .with_context(|| format!("--text-file {}", path.display()))?;
            Some(String::from_utf8(bytes).map_err(|error| {
                anyhow::anyhow!(
                    "--text-file {}: not UTF-8 (invalid byte at offset {})",
                    path.display(),
                    error.utf8_error().valid_up_to()
                )
            })?)
        }
        (None, None) => None,
    };
    if let Some(text) = text {
        request.insert("text".into(), json!(text));
    }
    let mut fields = Map::new();
    for field in &args.fields {
        let Some((name, value)) = field.split_once('=') else {
            anyhow::bail!("--field {field:?}: expected NAME=VALUE");
        };
        if fields.insert(name.to_owned(), json!(value)).is_some() {
            anyhow::bail!("--field {name}: given twice");
        }
    }
    if !fields.is_empty() {
        request.insert("fields".into(), Value::Object(fields));
    }
    if let Some(cost) = &args.cost_usd {
        request.insert("cost_usd".into(), json!(cost));
    }
    if let Some(origin) = &args.origin {
        request.insert("origin".into(), json!(origin));
    }
    if let Some(ttl) = args.ttl {
        request.insert("ttl".into(), json!(ttl));
    }
    let mut attachments = Vec::new();
    for path in &args.attachments {
        let data = client::read_named_file(path)
            .with_context(|| format!("--attach {}", path.display()))?;
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .with_context(|| format!("--attach {}: the file name is not UTF-8", path.display()))?;
        attachments.push(json!({
            "name": name,
            "media_type": client::guess_media_type(path),
            "data_b64": base64::engine::general_purpose::STANDARD.encode(data),
        }));
    }
    if !attachments.is_empty() {
        request.insert("attachments".into(), Value::Array(attachments));
    }
    if let Some(key) = &args.idempotency_key {
        request.insert("idempotency_key".into(), json!(key));
    }
    request.insert("urgent".into(), json!(args.urgent));
    request.insert("wait".into(), json!(!args.no_wait));
    Ok(Value::Object(request))
}
