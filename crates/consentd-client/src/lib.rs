//! consentd-client: what runs in the agent's process, the daemon's socket seen from outside.
//!
//! It holds nothing of the daemon's (no key, no token, no store) and depends on consentd-core
//! only, never on consentd-store (`.ci/run` checks it): the rules it shares with the daemon (the
//! protocol, the exact rules' ids, durations) are the core's. Its parts:
//! - [`client`]: one socket request and its answer, the wait with Ctrl-C, the exit codes
//!   docs/PROTOCOL.md gives each state, and reading a file an ask names.
//! - [`session`]: `ask`, `mandate`, `status`, `list`, `kinds` and `withdraw` as the command line
//!   prints them.
//! - [`hook`]: the agents' permission hooks (`consentd hook claude-code`, `consentd hook codex`)
//!   and their rules file.
//! - [`mcp`]: `consentd mcp`, the stdio MCP server that is a thin client of the socket.
//! - [`output`]: the command line's lines, which a closed pipe does not crash.

pub mod bridge;
pub mod client;
pub mod hook;
pub mod mcp;
pub mod output;
pub mod session;
pub(crate) mod waiting;
