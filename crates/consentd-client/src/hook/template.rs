//! A rule's templates: text with `{name}` placeholders, rendered from what the rule matched.

use std::collections::BTreeMap;

use serde_json::Value;

use super::call::Call;
use super::shell::Segment;

/// What a template may name.
pub(super) struct Scope<'a> {
    pub(super) call: &'a Call<'a>,
    pub(super) captures: &'a BTreeMap<String, String>,
    pub(super) segment: Option<&'a Segment>,
    /// The tools whose `command` is a shell command line (for how a gate's card shows it).
    pub(super) shell_tools: &'a [String],
}

/// A JSON value as text: a string as it is, anything else as compact JSON.
pub(super) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value built from text and `{name}` placeholders (`{{` and `}}` for braces).
#[derive(Debug, Clone)]
pub(super) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Name(String),
}

/// The names every template may use besides the rule's own captures.
const BUILTIN_NAMES: &[&str] = &["command", "segment", "program", "args", "tool", "cwd"];

impl Template {
    pub(super) fn parse(source: &str, captures: &[String]) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    let known = BUILTIN_NAMES.contains(&name.as_str())
                        || captures.contains(&name)
                        || name.strip_prefix("input.").is_some_and(|k| !k.is_empty());
                    if !known {
                        return Err(format!(
                            "{{{name}}} names nothing: use a capture of this rule's regexes, \
                             input.NAME, or one of {}",
                            BUILTIN_NAMES.join(", ")
                        ));
                    }
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Name(name));
                }
                '}' => return Err("a lone `}`: write `}}` for a brace".into()),
                _ => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Self { parts })
    }

    pub(super) fn render(&self, scope: &Scope<'_>) -> Result<String, String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Name(name) => out.push_str(&lookup(name, scope)?),
            }
        }
        Ok(out)
    }
}

fn lookup(name: &str, scope: &Scope<'_>) -> Result<String, String> {
    if let Some(value) = scope.captures.get(name) {
        return Ok(value.clone());
    }
    let missing = || format!("the call has no {name} for {{{name}}}");
    if let Some(key) = name.strip_prefix("input.") {
        return scope
            .call
            .tool_input
            .get(key)
            .map(value_text)
            .ok_or_else(|| format!("the tool input has no argument {key:?} for {{{name}}}"));
    }
    let segment = scope.segment;
    match name {
        "command" => scope
            .call
            .tool_input
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(missing),
        "segment" => segment.map(|s| s.text.clone()).ok_or_else(missing),
        "program" => segment
            .and_then(|s| s.program().map(str::to_owned))
            .ok_or_else(missing),
        "args" => segment.map(Segment::args).ok_or_else(missing),
        "tool" => Ok(scope.call.tool_name.to_owned()),
        "cwd" => scope.call.cwd.map(str::to_owned).ok_or_else(missing),
        // A capture group that did not take part in the match.
        _ => Err(format!("the capture {name} matched nothing")),
    }
}
