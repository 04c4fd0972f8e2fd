//! `consentd sandbox`: the daemon against a local Telegram emulator, the chat as a web page.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{init_logging, report};

pub(super) fn sandbox(port: Option<u16>, state_dir: Option<PathBuf>) -> ExitCode {
    // The sandbox's terminal is for its own lines; the daemon's log shows only trouble.
    init_logging("warn");
    report(consentd_daemon::sandbox::run(port, state_dir).map(|()| 0))
}
