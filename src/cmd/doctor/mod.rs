//! `consentd doctor`: whether a whole setup works, one line per check, each OK or what is wrong
//! and what to do about it (docs/OPERATOR.md, "consentd doctor").
//!
//! It reads and asks, and never changes anything: the config is read as `check-config` reads it,
//! the bot token is tried with `getMe` and `getWebhookInfo`, the daemon's database is opened
//! read-only (never migrated, so a running daemon is no obstacle), the journal is verified as
//! `journal verify` does, the socket is asked for `kinds`, and the agents' settings are read
//! where Claude Code and Codex keep them. The parts: `setup` checks the daemon's side,
//! `agents` the hooks and MCP entries, with `invocation` reading a command they run.
//!
//! Which findings are errors: anything that stops the daemon from getting or answering the
//! owner's presses, a journal that does not verify, a file others could change, a socket the
//! caller cannot use, and any consentd hook or MCP entry that would not run consentd, or that
//! would let a call through without it (fail open). An agent with no consentd entry at all is
//! no error: it is said, as optional.

mod agents;
mod invocation;
mod setup;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use consentd_client::{errln, outln};

use crate::cli::DoctorArgs;

/// The config read when `--config` is not given: the packaged setup's (docs/OPERATOR.md).
const DEFAULT_CONFIG: &str = "/etc/consentd/config.toml";

/// Exit code: something is not OK.
const EXIT_PROBLEM: u8 = 1;
/// Exit code: a usage error (a `--key` that is not a key).
const EXIT_USAGE: u8 = 2;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub name: String,
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// What to do about it; `None` when it is OK.
    pub fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// The line printed for it: `OK   name: detail`, or `FAIL name: detail. Fix: …`.
    pub(crate) fn line(&self) -> String {
        match &self.fix {
            Some(fix) if !self.ok => format!("FAIL {}: {}. Fix: {fix}", self.name, self.detail),
            _ => format!("OK   {}: {}", self.name, self.detail),
        }
    }
}

/// Runs every check and prints the report; exit 0 only when every line is OK.
pub(crate) fn doctor(args: DoctorArgs) -> ExitCode {
    let mut keys = Vec::new();
    for key in &args.key {
        match consentd_core::journal::parse_key(key) {
            Some(k) => keys.push(k),
            None => {
                errln!("consentd doctor: --key: not 64 hex digits");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let config = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let checks = match runtime {
        Ok(runtime) => runtime.block_on(run(&config, &keys)),
        Err(error) => {
            errln!("consentd doctor: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_PROBLEM);
        }
    };
    report(&checks, args.json)
}

/// Every check, in the order of the report.
async fn run(config: &std::path::Path, keys: &[consentd_core::journal::Key]) -> Vec<Check> {
    let mut checks = setup::checks(config, keys).await;
    checks.extend(agents::checks(&agents::Places::from_env()));
    checks
}

fn report(checks: &[Check], json: bool) -> ExitCode {
    let all_ok = checks.iter().all(|check| check.ok);
    if json {
        outln!("{}", serde_json::json!({"ok": all_ok, "checks": checks}));
    } else {
        for check in checks {
            outln!("{}", check.line());
        }
    }
    let problems = checks.iter().filter(|check| !check.ok).count();
    if problems == 0 {
        ExitCode::SUCCESS
    } else {
        errln!(
            "consentd doctor: {problems} problem{} of {} checks",
            if problems == 1 { "" } else { "s" },
            checks.len()
        );
        ExitCode::from(EXIT_PROBLEM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_ok_or_what_to_do() {
        assert_eq!(
            Check::ok("socket", "answers").line(),
            "OK   socket: answers"
        );
        assert_eq!(
            Check::fail("webhook", "a webhook is set", "call deleteWebhook").line(),
            "FAIL webhook: a webhook is set. Fix: call deleteWebhook"
        );
    }
}
