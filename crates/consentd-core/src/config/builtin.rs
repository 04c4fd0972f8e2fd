//! `action = "telegram_post" | "http" | "email"`: a category run by one of consentd's built-in
//! actions instead of a command, with the keys each takes.
//!
//! A category has exactly one of `command` and `action`. The keys of one action are refused on
//! another (an `url` under `telegram_post` would look as if it mattered), and so are `run_as` and
//! `env_file`, which only a command has: a built-in action runs inside the daemon. Secrets never
//! sit in the config itself: an `http` action's headers come from its `headers_file`, an `email`
//! action's login from its `credentials_file`; the daemon checks their owners and modes.

use std::path::PathBuf;

use toml::Table;

use super::walker::{join, Walker};
use super::Presence;

/// Every key a built-in action may take, each named by the action it belongs to.
const ACTION_KEYS: &[(&str, &str)] = &[
    ("url", "http"),
    ("method", "http"),
    ("headers_file", "http"),
    ("smtp_url", "email"),
    ("credentials_file", "email"),
    ("from", "email"),
];

/// The keys a category may carry for its built-in action (the config's list of allowed keys).
pub(super) const BUILTIN_KEYS: &[&str] = &[
    "action",
    "url",
    "method",
    "headers_file",
    "smtp_url",
    "credentials_file",
    "from",
];

/// A built-in action: what consentd does itself once an action of the category is approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuiltIn {
    /// The bot posts the text and the attachments to the target channel or group.
    TelegramPost,
    /// One HTTP request with the action as a JSON body.
    Http(HttpAction),
    /// One email message to the target.
    Email(EmailAction),
}

impl BuiltIn {
    /// The name `action` gives it.
    pub fn name(&self) -> &'static str {
        match self {
            BuiltIn::TelegramPost => "telegram_post",
            BuiltIn::Http(_) => "http",
            BuiltIn::Email(_) => "email",
        }
    }
}

/// `action = "http"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAction {
    /// An `http://` or `https://` URL without spaces.
    pub url: String,
    pub method: HttpMethod,
    /// `Name: value` lines sent with the request; a secret, so the file is the daemon's, 0600.
    pub headers_file: Option<PathBuf>,
}

/// The methods that carry a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpMethod {
    #[default]
    Post,
    Put,
    Patch,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
        }
    }
}

/// `action = "email"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAction {
    pub smtp: SmtpServer,
    /// One `user:password` line; a secret, so the file is the daemon's, 0600.
    pub credentials_file: Option<PathBuf>,
    /// The sender, `name@example.org` or `Name <name@example.org>`.
    pub from: String,
}

/// Where an email action's mail goes, read from `smtp_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
}

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// `smtps://`: TLS from the first byte (port 465 by default).
    Implicit,
    /// `smtp://`: STARTTLS, required (port 587 by default).
    StartTls,
    /// `smtp://…?tls=none`: no TLS, only to a relay on this machine (loopback).
    None,
}

/// `action` and its keys, when the category has one; `None` when it has none (a command) or it
/// is wrong (reported under its key).
pub(super) fn builtin(
    w: &mut Walker,
    p: &str,
    t: &Table,
    target: Presence,
    text: Presence,
    attachments: usize,
) -> Option<BuiltIn> {
    let choices = [("telegram_post", 0), ("http", 1), ("email", 2)];
    let chosen = w.choice(t, p, "action", &choices);
    let name = chosen.map(|i| choices[i].0);
    for (key, owner) in ACTION_KEYS {
        if t.contains_key(*key) && name != Some(owner) {
            let now = match name {
                Some(name) => format!("this category's action is {name:?}"),
                None if t.contains_key("action") => "the action is not valid".to_owned(),
                None => "this category has no action".to_owned(),
            };
            w.report(
                join(p, key),
                format!("only an action = \"{owner}\" takes {key}, and {now}; remove it"),
            );
        }
    }
    if t.contains_key("action") {
        for key in ["command", "run_as", "env_file"] {
            if t.contains_key(key) {
                w.report(
                    join(p, key),
                    "a category has either a command or a built-in action, and this one has \
                     an action: a built-in action runs inside consentd, with no command, run_as \
                     or env_file; remove this key or the action",
                );
            }
        }
    }
    let builtin = match chosen? {
        0 => BuiltIn::TelegramPost,
        1 => BuiltIn::Http(http(w, p, t)?),
        _ => BuiltIn::Email(email(w, p, t)?),
    };
    fits_the_card(w, p, &builtin, target, text, attachments);
    Some(builtin)
}

/// What the action needs from an ask: a channel or a recipient is a target, and a post needs
/// something to post.
fn fits_the_card(
    w: &mut Walker,
    p: &str,
    builtin: &BuiltIn,
    target: Presence,
    text: Presence,
    attachments: usize,
) {
    let needs_target = match builtin {
        BuiltIn::TelegramPost => Some("the channel or group (@name or a numeric id)"),
        BuiltIn::Email(_) => Some("the recipient's address"),
        BuiltIn::Http(_) => None,
    };
    if let Some(what) = needs_target.filter(|_| target != Presence::Required) {
        w.report(
            join(p, "target"),
            format!(
                "an action = \"{}\" needs target = \"required\": the target is {what}",
                builtin.name()
            ),
        );
    }
    if *builtin == BuiltIn::TelegramPost && text == Presence::None && attachments == 0 {
        w.report(
            join(p, "text"),
            "an action = \"telegram_post\" with text = \"none\" and no attachments has nothing \
             to post",
        );
    }
}

fn http(w: &mut Walker, p: &str, t: &Table) -> Option<HttpAction> {
    let methods = [
        ("POST", HttpMethod::Post),
        ("PUT", HttpMethod::Put),
        ("PATCH", HttpMethod::Patch),
    ];
    let method = w.choice(t, p, "method", &methods).unwrap_or_default();
    let headers_file = w.abs_path(t, p, "headers_file");
    let key = join(p, "url");
    let expected = "a string with an http:// or https:// URL";
    let Some(url) = w.string(t, p, "url", expected) else {
        if !t.contains_key("url") {
            w.report(key, format!("required with action = \"http\"; {expected}"));
        }
        return None;
    };
    let host = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
    let problem = match host {
        None => Some(format!("{url:?} must start with http:// or https://")),
        Some("") => Some(format!("{url:?} has no host")),
        Some(_) if url.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            Some(format!("{url:?} must not contain spaces"))
        }
        Some(host) if host.contains('@') => Some(format!(
            "{url:?} holds a user or password; put secrets in headers_file (0600), never in \
             the config"
        )),
        Some(host)
            if url.starts_with("http://")
                && headers_file.is_some()
                && !is_loopback(bare_host(host)) =>
        {
            Some(format!(
                "{url:?} is plain http:// to another machine, and headers_file's secrets would \
                 cross the network in clear: use https://, or http:// only to this machine \
                 (localhost, 127.0.0.1 or ::1)"
            ))
        }
        Some(_) => None,
    };
    if let Some(problem) = problem {
        w.report(key, problem);
        return None;
    }
    Some(HttpAction {
        url: url.to_owned(),
        method,
        headers_file,
    })
}

fn email(w: &mut Walker, p: &str, t: &Table) -> Option<EmailAction> {
    let credentials_file = w.abs_path(t, p, "credentials_file");
    let smtp = smtp_url(w, p, t);
    let from_key = join(p, "from");
    let expected = "a string with the sender's address, like \"Mila <mila@example.org>\"";
    let from = match w.string(t, p, "from", expected) {
        None if !t.contains_key("from") => {
            w.report(
                from_key,
                format!("required with action = \"email\"; {expected}"),
            );
            None
        }
        None => None,
        Some(from) if !from.contains('@') || from.contains(['\r', '\n', '\0']) => {
            w.report(from_key, format!("{from:?} is not an address; {expected}"));
            None
        }
        Some(from) => Some(from.to_owned()),
    };
    Some(EmailAction {
        smtp: smtp?,
        credentials_file,
        from: from?,
    })
}

/// `smtp_url`: `smtps://HOST[:PORT]` (TLS), `smtp://HOST[:PORT]` (STARTTLS, required), or
/// `smtp://HOST[:PORT]?tls=none` for a relay on this machine only: a password or a letter never
/// crosses a network in the clear.
fn smtp_url(w: &mut Walker, p: &str, t: &Table) -> Option<SmtpServer> {
    let key = join(p, "smtp_url");
    let expected = "a string like \"smtps://smtp.example.org\" or \"smtp://smtp.example.org:587\"";
    let Some(url) = w.string(t, p, "smtp_url", expected) else {
        if !t.contains_key("smtp_url") {
            w.report(key, format!("required with action = \"email\"; {expected}"));
        }
        return None;
    };
    match parse_smtp_url(url) {
        Ok(server) => Some(server),
        Err(problem) => {
            w.report(key, format!("{url:?}: {problem}; {expected}"));
            None
        }
    }
}

/// [`smtp_url`]'s grammar, as a pure function.
pub(super) fn parse_smtp_url(url: &str) -> Result<SmtpServer, String> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("smtps://") {
        (SmtpTls::Implicit, rest)
    } else if let Some(rest) = url.strip_prefix("smtp://") {
        (SmtpTls::StartTls, rest)
    } else {
        return Err("must start with smtps:// or smtp://".to_owned());
    };
    let (authority, query) = match rest.split_once('?') {
        Some((authority, query)) => (authority.trim_end_matches('/'), Some(query)),
        None => (rest.trim_end_matches('/'), None),
    };
    let tls = match query {
        None => tls,
        Some("tls=none") if tls == SmtpTls::StartTls => SmtpTls::None,
        Some(other) => return Err(format!("unknown option {other:?} (only smtp://…?tls=none)")),
    };
    if authority.contains('@') {
        return Err("holds a user or password; put them in credentials_file (0600)".to_owned());
    }
    if authority.contains('/')
        || authority
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("is not a host and an optional port".to_owned());
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => {
            let port = port
                .parse::<u16>()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| format!("{port:?} is not a port"))?;
            (host, port)
        }
        _ => (authority, if tls == SmtpTls::Implicit { 465 } else { 587 }),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("has no host".to_owned());
    }
    if tls == SmtpTls::None && !is_loopback(host) {
        return Err(format!(
            "tls=none is only for a relay on this machine (localhost, 127.0.0.1 or ::1), not \
             {host:?}"
        ));
    }
    Ok(SmtpServer {
        host: host.to_owned(),
        port,
        tls,
    })
}

/// A URL's host without its port: `[::1]:8080` is `::1`, `localhost:80` is `localhost`.
fn bare_host(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    }
}

/// A name or an address that stays on this machine: `localhost`, or a loopback IP literal.
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
