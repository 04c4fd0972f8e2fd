//! `consentd serve`: the daemon, with its log on stderr.

use std::path::Path;
use std::process::ExitCode;

use super::{init_logging, report};

pub(super) fn serve(config: &Path) -> ExitCode {
    init_logging("info");
    report(consentd_daemon::daemon::serve(config).map(|()| 0))
}
