//! Exact rules ("Always here", docs/HOOKS.md): what a hook's gate ask says of its call (`hook`: the
//! agent, the tool and the working directory), the checks on it, the `rule` op's request, and a
//! rule's id.
//!
//! A rule is saved by the owner's Always press on a gate card and answers only the byte-exact
//! call it was saved for: the same peer uid, agent, tool, directory and text (compared by its
//! SHA-256). The `hook` object is shown on the card, so what is saved is what the owner saw; it
//! is bound to its record (which the press's MAC names), not to the action's digest, whose shape
//! the contract fixes.

use crate::config::{Category, Class, Mode};
pub use crate::protocol::{HookCall, RuleQuery};
use crate::reason::{Reason, Refusal};
use crate::refusal::visible::{self, FieldRef};

/// The agents a hook answers, by the names their hooks are called with.
pub(crate) const AGENTS: [&str; 2] = ["claude-code", "codex"];
/// The longest tool name, in characters.
pub(crate) const MAX_TOOL_CHARS: usize = 64;
/// The longest working directory, in characters (Linux's `PATH_MAX` is 4096 bytes).
pub(crate) const MAX_CWD_CHARS: usize = 4096;

/// Whether a call of `category` may carry `hook` at all: only an approval-only category's gate
/// has a call the agent runs itself.
pub(crate) fn check_hook_category(category: &Category) -> Result<(), Refusal> {
    if category.mode == Mode::Approve {
        return Ok(());
    }
    Err(Refusal::new(
        Reason::FieldNotShown,
        format!(
            "key \"hook\" is only for a category whose mode is \"approve\" (a gate the agent runs \
             itself); category {} is not",
            category.name
        ),
    ))
}

/// Checks the `hook` object's values as the card shows them: `agent` one of [`AGENTS`], `tool`
/// and `cwd` one line each that passes every visible-text rule a field value meets, `cwd`
/// absolute.
pub fn check_hook(hook: &HookCall) -> Result<(), Refusal> {
    if !AGENTS.contains(&hook.agent.as_str()) {
        return Err(Refusal::new(
            Reason::BadRequest,
            format!(
                "hook.agent {} is not an agent consentd knows; it is one of {}",
                crate::protocol::quote(&hook.agent),
                AGENTS.join(", ")
            ),
        ));
    }
    for (place, value, most) in [
        ("hook.tool", &hook.tool, MAX_TOOL_CHARS),
        ("hook.cwd", &hook.cwd, MAX_CWD_CHARS),
    ] {
        check_one_line(place, value, most)?;
    }
    if !hook.cwd.starts_with('/') {
        return Err(Refusal::new(
            Reason::BadRequest,
            "hook.cwd must be an absolute directory (starting with /)",
        ));
    }
    Ok(())
}

fn check_one_line(place: &str, value: &str, most: usize) -> Result<(), Refusal> {
    if value.is_empty() {
        return Err(Refusal::new(
            Reason::BadRequest,
            format!("{place} is empty"),
        ));
    }
    if value.chars().nth(most).is_some() {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "{place} has {} characters; at most {most} are allowed",
                value.chars().count()
            ),
        ));
    }
    visible::check_value(value, FieldRef::Field(place), false)?;
    Ok(())
}

/// Whether a saved rule may answer a call of `category` now: an approval-only category that is
/// on and not destructive. Read at each use, so a rule saved before its category became
/// destructive (or was turned off) answers nothing.
pub fn rule_may_answer(category: &Category, enabled: bool) -> bool {
    enabled && category.mode == Mode::Approve && category.class != Class::Destructive
}

/// Whether a card of `category` for an ask with `hook` offers Always here: an approval-only,
/// non-destructive category's gate from an agent's hook.
pub fn offers_always(category: &Category, hook: Option<&HookCall>) -> bool {
    hook.is_some() && category.mode == Mode::Approve && category.class != Class::Destructive
}

/// A rule's id: "u_" and 20 lowercase hex digits (also of a kind name's shape, which callback
/// data allows for a subject that is not a record).
pub fn is_rule_id(s: &str) -> bool {
    s.len() == 22
        && s.starts_with("u_")
        && s.bytes()
            .skip(2)
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(agent: &str, tool: &str, cwd: &str) -> HookCall {
        HookCall {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            cwd: cwd.to_owned(),
        }
    }

    #[test]
    fn a_hook_is_checked_like_a_field() {
        let long_tool = "T".repeat(MAX_TOOL_CHARS + 1);
        // (the hook, the reason it is refused for, or none)
        let cases = [
            (hook("claude-code", "Bash", "/home/u/blog"), None),
            (hook("codex", "Bash", "/"), None),
            (hook("claude", "Bash", "/x"), Some("bad_request")),
            (hook("", "Bash", "/x"), Some("bad_request")),
            (hook("codex", "", "/x"), Some("bad_request")),
            (hook("codex", "Bash", ""), Some("bad_request")),
            (hook("codex", "Bash", "home/u"), Some("bad_request")),
            (hook("codex", "Bash", "~/blog"), Some("bad_request")),
            (hook("codex", &long_tool, "/x"), Some("too_large")),
            (hook("codex", "Bash", "/x\n/y"), Some("invisible_character")),
            (
                hook("codex", "Bash\u{200B}", "/x"),
                Some("invisible_character"),
            ),
            (hook("codex", "Bash", "/cafe\u{301}"), Some("not_nfc")),
            (hook("codex", "Bash", "/a  b"), Some("invisible_character")),
        ];
        for (hook, expected) in cases {
            let got = check_hook(&hook).err().map(|r| r.reason.as_str());
            assert_eq!(got, expected, "{hook:?}");
        }
    }

    #[test]
    fn rule_ids() {
        assert!(is_rule_id("u_0123456789abcdef0123"));
        for bad in [
            "r_0123456789abcdef0123",
            "u_0123456789ABCDEF0123",
            "u_0123456789abcdef012",
            "u_0123456789abcdef01234",
        ] {
            assert!(!is_rule_id(bad), "{bad}");
        }
    }
}
