//! The built-in actions (docs/CONFIG.md, "Built-in actions"): what consentd does itself for a
//! category with `action = "telegram_post" | "http" | "email"` instead of running a command.
//!
//! Each runs once, after the same durable claim as a command, and is never retried: a request
//! that went out and got no answer is `outcome_unknown`, as a command killed at its timeout is.
//! The whole action runs under the category's `timeout`. What it sends is what the card showed:
//! the record's target, text, fields and cost, and each attachment's stored copy re-hashed
//! against the record's SHA-256 on the way (`consentd_store::stored`), as a command's copies are.
//!
//! Secrets (an `http` action's headers, an `email` action's login) come from files only the
//! daemon may read (`secrets`), read at each run; their contents are never in an outcome, the
//! journal or a log line.

pub(crate) mod secrets;

use consentd_core::config::{BuiltIn, Category};

/// Why a category's built-in action could not run here, each with the key's last part: its
/// secret files, read and parsed as a run reads them. Nothing for a category with a command.
pub(crate) fn problems(category: &Category) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    match &category.action {
        Some(BuiltIn::Http(http)) => {
            if let Some(path) = &http.headers_file {
                let parsed = secrets::read(path).and_then(|text| secrets::headers(path, &text));
                if let Err(error) = parsed {
                    found.push(("headers_file", error.to_string()));
                }
            }
        }
        Some(BuiltIn::Email(email)) => {
            if let Some(path) = &email.credentials_file {
                let parsed = secrets::read(path).and_then(|text| secrets::credentials(path, &text));
                if let Err(error) = parsed {
                    found.push(("credentials_file", error.to_string()));
                }
            }
        }
        Some(BuiltIn::TelegramPost) | None => {}
    }
    found
}
