//! `consentd hook claude-code` and `consentd hook codex`: the permission hook, whose arguments
//! and work are consentd-client's `hook`.

use std::process::ExitCode;

use consentd_client::hook::HookCommand;

pub(super) fn hook(command: HookCommand) -> ExitCode {
    consentd_client::hook::main(command)
}
