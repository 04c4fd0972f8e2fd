//! `consentd status`, `list`, `kinds` and `withdraw`: one socket request each, printed by
//! consentd-client's `session`.

use std::process::ExitCode;

use serde_json::json;

use super::{report, with_runtime};
use crate::cli::CommonArgs;
use consentd_client::session;

pub(super) fn status(id: String, wait: bool, common: CommonArgs) -> ExitCode {
    let request = json!({"v": 1, "op": "status", "id": id, "wait": wait});
    report(with_runtime(session::status(common.into(), request)))
}

pub(super) fn list(cursor: Option<String>, common: CommonArgs) -> ExitCode {
    let request = json!({"v": 1, "op": "list", "cursor": cursor});
    report(with_runtime(session::list(common.into(), request)))
}

pub(super) fn kinds(common: CommonArgs) -> ExitCode {
    report(with_runtime(session::kinds(common.into())))
}

pub(super) fn withdraw(id: String, common: CommonArgs) -> ExitCode {
    let request = json!({"v": 1, "op": "withdraw", "id": id});
    report(with_runtime(session::withdraw(common.into(), request)))
}
