//! A Codex network approval: what its Yes grants, read from the request's `description` only
//! when the whole of it is a target Codex writes (`scheme://host:port`).

use serde_json::Value;

/// What a network approval grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network<'a> {
    /// A target read whole: `scheme://host:port`, the host a name or a bracketed IPv6 address.
    Host(&'a str),
    /// A `description` that starts `network-access` but holds no such target: still a network
    /// approval wherever that is the stricter reading, and none of its words are shown.
    Unclear,
}

/// A Codex network approval's grant, read from its `description`: `network-access <target>`,
/// Codex writing the target as `{protocol}://{host}:{port}` (`format_network_target`,
/// openai/codex#17563). Called for Codex's `PermissionRequest` events only; anywhere else the
/// `description` is the model's.
pub fn network_access(tool_input: &Value) -> Option<Network<'_>> {
    let description = tool_input.get("description")?.as_str()?;
    let rest = description.strip_prefix("network-access")?;
    let target = rest
        .strip_prefix(' ')
        .filter(|target| is_network_target(target));
    Some(target.map_or(Network::Unclear, Network::Host))
}

/// `scheme://host:port`, nothing else: a scheme of lowercase letters, digits, `+`, `-` and `.`;
/// a host of letters, digits, `.` and `-`, or an IPv6 address in brackets; a port of digits.
fn is_network_target(target: &str) -> bool {
    if target.len() > 300 {
        return false;
    }
    // Codex always writes the scheme and the port; a bare word that might be a host could be
    // made to read as a sentence ("dry-run.nothing-is-pushed"), so none is taken for one.
    let Some((scheme, rest)) = target.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_lowercase())
        && scheme.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')
        });
    if !scheme_ok {
        return false;
    }
    let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return false;
        };
        if address.is_empty()
            || !address
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => (None, port),
            None => return false,
        }
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (Some(host), port),
            None => return false,
        }
    };
    let host_ok = host.is_none_or(|host| {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
    });
    let port_ok = (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
    host_ok && port_ok
}
