//! `consentd mcp`: the stdio MCP server, whose arguments and work are consentd-client's `mcp`.

use std::process::ExitCode;

use consentd_client::mcp::McpArgs;

use super::{report, with_runtime};

pub(super) fn mcp(args: McpArgs) -> ExitCode {
    report(with_runtime(async move {
        consentd_client::mcp::serve(args.into_options()).await?;
        Ok(0)
    }))
}
