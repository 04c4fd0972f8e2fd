//! `consentd journal …`: verify (with anchors and verification keys), head, and the sealing key's
//! `seal-init` and `rotate` (docs/OPERATOR.md, "The journal, and its anchor" and "Seals"), whose
//! work is consentd-daemon's `seal_key`.

use std::path::Path;
use std::process::ExitCode;

use super::EXIT_USAGE;
use consentd_client::session::EXIT_ERROR;
use consentd_client::{errln, outln};
use consentd_store::journal;

use crate::cli::JournalCommand;

pub(super) fn journal(command: JournalCommand) -> ExitCode {
    match command {
        JournalCommand::Verify { file, anchor, key } => verify(&file, anchor.as_deref(), &key),
        JournalCommand::Head { file } => head(&file),
        JournalCommand::SealInit { config } => new_key(&config, false),
        JournalCommand::Rotate { config } => new_key(&config, true),
    }
}

fn verify(file: &Path, anchor: Option<&str>, keys: &[String]) -> ExitCode {
    let anchor = match anchor
        .map(str::parse::<consentd_core::journal::Anchor>)
        .transpose()
    {
        Ok(anchor) => anchor,
        Err(error) => {
            errln!("consentd journal verify: --anchor: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut k0s = Vec::new();
    for key in keys {
        match consentd_core::journal::parse_key(key) {
            Some(k) => k0s.push(k),
            None => {
                errln!("consentd journal verify: --key: not 64 hex digits");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let now = consentd_daemon::clock::from_env().now().timestamp_millis();
    match journal::verify_file_with_keys(file, anchor.as_ref(), &k0s, now) {
        Ok(Ok(verified)) => {
            outln!("{}", verified.summary());
            for line in verified.seals.lines() {
                outln!("{line}");
            }
            ExitCode::SUCCESS
        }
        Ok(Err(problem)) => {
            outln!("{problem}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd journal verify: {}: {error}", file.display());
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn head(file: &Path) -> ExitCode {
    match journal::head(file) {
        Ok(Ok(head)) => {
            outln!("{}", head.anchor());
            ExitCode::SUCCESS
        }
        Ok(Err(problem)) => {
            outln!("{problem}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd journal head: {}: {error}", file.display());
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn new_key(config: &Path, rotate: bool) -> ExitCode {
    let name = if rotate { "rotate" } else { "seal-init" };
    match consentd_daemon::seal_key::make_key(config, rotate) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("consentd journal {name}: {error:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
