//! A tool call as the rules see it.

use serde_json::Value;

use super::network::Network;

/// A tool call as the agent asks for it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool_name: &'a str,
    pub tool_input: &'a Value,
    /// The agent's working directory, when it said (for `{cwd}`).
    pub cwd: Option<&'a str>,
    /// What a network approval grants, when the call is one: only the agent's own request can
    /// say so (Codex's `PermissionRequest`, [`network_access`]), never a `description` the model
    /// wrote on another call.
    pub network: Option<Network<'a>>,
}
