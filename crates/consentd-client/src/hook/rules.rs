//! The hook's rules file: which tool calls consentd routes, gates, lets pass or blocks.
//!
//! A TOML file of `[[rule]]` tables, read in order; the first rule that matches a call decides
//! it (docs/HOOKS.md has the format). For a shell tool (`Bash` unless `shell_tools` says
//! otherwise) the command line is cut into its simple commands (`shell`), each is matched on
//! its own, and the strictest verdict wins: block, then route or gate, then unmatched, then
//! pass. A command passes only when it is a plain line (`plain`, a grammar bash provably reads
//! as written) each of whose commands a pass rule naming its program decides; any other line
//! the reader would pass is gated whole or blocked. Pure: the file's text in, a [`Decision`] out; the MCP server's
//! `approval_prompt` uses the same [`Rules::decide`].

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

pub use super::call::Call;
pub use super::network::{network_access, Network};
use super::plain;
use super::shell::{self, Segment};
use super::template::{value_text, Scope, Template};

/// The most bytes a rules file may have.
const MAX_RULES_BYTES: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read the rules file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the rules file {path}: {reason}")]
    In {
        path: String,
        reason: Box<RulesError>,
    },
    #[error("the rules file {path} is not UTF-8")]
    NotUtf8 { path: String },
    #[error("not valid TOML: {0}")]
    Syntax(String),
    #[error(
        "it holds no rules, which is taken for a mistake (an empty file, a \
         truncated one, comments only); to mean no rules at all, write `rule = []`"
    )]
    NoRules,
    #[error("`rules = [...]` is only the explicit empty list `rules = []`; write each rule as a [[rule]] table")]
    RulesKey,
    #[error("rule {rule}: {message}")]
    Rule { rule: String, message: String },
}

/// What the rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// consentd runs it (its category's command): ask, wait, and never let the agent run it.
    Route(Ask),
    /// The agent runs it only once the owner approves it (an approval-only category).
    Gate(Ask),
    /// Let it through.
    Pass { rule: String },
    /// Refuse it, with the message for the agent.
    Block { message: String },
    /// No rule speaks: the agent's own permission flow decides.
    Unmatched,
}

/// The ask a route or gate rule makes of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The rule's name, for messages.
    pub rule: String,
    pub kind: String,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    pub cost_usd: Option<String>,
}

/// A parsed rules file.
#[derive(Debug)]
pub struct Rules {
    rules: Vec<Rule>,
    shell_tools: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    shell_tools: Option<Vec<String>>,
    /// Absent (not empty) in a file with no rules at all, which is refused.
    rule: Option<Vec<RawRule>>,
    /// `rules = []`: another way to say "no rules" explicitly.
    rules: Option<Vec<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<String>,
    tool: String,
    program: Option<OneOrMany>,
    args: Option<String>,
    piped: Option<bool>,
    #[serde(default)]
    input: BTreeMap<String, String>,
    action: String,
    kind: Option<String>,
    target: Option<String>,
    text: Option<String>,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    cost_usd: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Route,
    Gate,
    Pass,
    Block,
}

#[derive(Debug)]
struct Rule {
    name: String,
    tool: String,
    programs: Vec<String>,
    args: Option<Regex>,
    piped: Option<bool>,
    input: Vec<(String, Regex)>,
    action: Action,
    kind: String,
    target: Option<Template>,
    text: Option<Template>,
    fields: BTreeMap<String, Template>,
    cost_usd: Option<Template>,
    message: String,
}

impl Rule {
    fn is_shell_only(&self) -> bool {
        !self.programs.is_empty() || self.args.is_some() || self.piped.is_some()
    }
}

/// Reads and parses the rules file at `path`: a regular file (a FIFO, a device, a directory,
/// or a symlink to one is refused at once, never waited on), at most 1 MiB, UTF-8.
pub fn load(path: &Path) -> Result<Rules, RulesError> {
    let shown = path.display().to_string();
    let bytes = crate::client::read_regular_file(path, MAX_RULES_BYTES, "a rules file").map_err(
        |source| RulesError::Read {
            path: shown.clone(),
            source,
        },
    )?;
    let text = String::from_utf8(bytes).map_err(|_| RulesError::NotUtf8 {
        path: shown.clone(),
    })?;
    parse(&text).map_err(|reason| RulesError::In {
        path: shown,
        reason: Box::new(reason),
    })
}

/// Parses a rules file's text; every rule is checked now, so a bad one is found before any call.
pub fn parse(text: &str) -> Result<Rules, RulesError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| RulesError::Syntax(e.to_string()))?;
    let rules = match (raw.rule, raw.rules) {
        (_, Some(listed)) if !listed.is_empty() => return Err(RulesError::RulesKey),
        (None, None) => return Err(RulesError::NoRules),
        (rule, _) => rule.unwrap_or_default(),
    };
    let rules = rules
        .into_iter()
        .enumerate()
        .map(|(index, rule)| check_rule(index + 1, rule))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Rules {
        rules,
        shell_tools: raw.shell_tools.unwrap_or_else(|| vec!["Bash".to_owned()]),
    })
}

fn check_rule(number: usize, raw: RawRule) -> Result<Rule, RulesError> {
    let name = raw.name.clone().unwrap_or_else(|| format!("#{number}"));
    let fail = |message: String| RulesError::Rule {
        rule: name.clone(),
        message,
    };
    let action = match raw.action.as_str() {
        "route" => Action::Route,
        "gate" => Action::Gate,
        "pass" => Action::Pass,
        "block" => Action::Block,
        other => {
            return Err(fail(format!(
                "action {other:?}: expected route, gate, pass or block"
            )))
        }
    };
    let asks = matches!(action, Action::Route | Action::Gate);
    let kind = match (&raw.kind, asks) {
        (Some(kind), true) => kind.clone(),
        (None, true) => return Err(fail("a route or gate rule needs a kind".into())),
        (Some(_), false) => return Err(fail("only route and gate rules take a kind".into())),
        (None, false) => String::new(),
    };
    let has_ask_values = raw.target.is_some()
        || raw.text.is_some()
        || !raw.fields.is_empty()
        || raw.cost_usd.is_some();
    if !asks && has_ask_values {
        return Err(fail(
            "target, text, fields and cost_usd belong to route and gate rules".into(),
        ));
    }
    if action == Action::Gate && raw.text.is_some() {
        return Err(fail(
            "a gate rule takes no text: its card shows exactly the call the agent will make".into(),
        ));
    }
    let message = match (raw.message, action) {
        (Some(message), _) if !message.trim().is_empty() => message,
        (_, Action::Block) => return Err(fail("a block rule needs a message".into())),
        _ => String::new(),
    };
    let compile = |what: &str, pattern: &str| {
        Regex::new(pattern).map_err(|e| fail(format!("{what}: not a valid regex: {e}")))
    };
    let args = raw
        .args
        .as_deref()
        .map(|p| compile("args", p))
        .transpose()?;
    let mut input = Vec::new();
    for (key, pattern) in &raw.input {
        input.push((key.clone(), compile(&format!("input.{key}"), pattern)?));
    }
    let mut captures: Vec<String> = Vec::new();
    for regex in args.iter().chain(input.iter().map(|(_, r)| r)) {
        captures.extend(regex.capture_names().flatten().map(str::to_owned));
    }
    let template = |what: &str, source: &str| {
        Template::parse(source, &captures).map_err(|e| fail(format!("{what}: {e}")))
    };
    let mut fields = BTreeMap::new();
    for (key, source) in &raw.fields {
        fields.insert(key.clone(), template(&format!("fields.{key}"), source)?);
    }
    let programs = rule_programs(raw.program, action).map_err(fail)?;
    Ok(Rule {
        target: raw
            .target
            .as_deref()
            .map(|s| template("target", s))
            .transpose()?,
        text: raw
            .text
            .as_deref()
            .map(|s| template("text", s))
            .transpose()?,
        cost_usd: raw
            .cost_usd
            .as_deref()
            .map(|s| template("cost_usd", s))
            .transpose()?,
        name,
        tool: raw.tool,
        programs,
        args,
        piped: raw.piped,
        input,
        action,
        kind,
        fields,
        message,
    })
}

/// A rule's `program`, one or many. A pass names each program it vouches for: a path may be
/// any file, and a glob (`*`) would name every program, `rm` among them.
fn rule_programs(program: Option<OneOrMany>, action: Action) -> Result<Vec<String>, String> {
    let programs = match program {
        None => Vec::new(),
        Some(OneOrMany::One(p)) => vec![p],
        Some(OneOrMany::Many(ps)) => ps,
    };
    let bare = |p: &String| !p.is_empty() && !p.contains(['/', '*', '?']);
    match programs.iter().find(|p| action == Action::Pass && !bare(p)) {
        Some(bad) => Err(format!(
            "program {bad:?}: a pass rule names each program by its bare name, found on the \
             PATH, with no `/` and no glob"
        )),
        None => Ok(programs),
    }
}

impl Rules {
    /// Decides one call.
    pub fn decide(&self, call: &Call<'_>) -> Decision {
        let command = call.tool_input.get("command").and_then(Value::as_str);
        match command {
            Some(command) if self.shell_tools.iter().any(|t| t == call.tool_name) => {
                self.decide_shell(call, command)
            }
            _ => self.decide_plain(call),
        }
    }

    fn decide_plain(&self, call: &Call<'_>) -> Decision {
        for rule in &self.rules {
            if rule.is_shell_only() || !glob(&rule.tool, call.tool_name) {
                continue;
            }
            if let Some(decision) = self.apply(rule, call, None) {
                return decision;
            }
        }
        Decision::Unmatched
    }

    fn decide_shell(&self, call: &Call<'_>, command: &str) -> Decision {
        let line = shell::parse(command);
        let mut found: Vec<(&Segment, Decision)> = Vec::new();
        let mut blocked: Option<(bool, Decision)> = None;
        for segment in &line.segments {
            let (decision, by_block_rule) = self.decide_segment(call, segment);
            if let Decision::Block { .. } = decision {
                // A block rule's own message says more than a route's missing value.
                if blocked
                    .as_ref()
                    .is_none_or(|(rule, _)| by_block_rule && !rule)
                {
                    blocked = Some((by_block_rule, decision));
                }
                continue;
            }
            found.push((segment, decision));
        }
        if let Some((_, decision)) = blocked {
            return decision;
        }
        let asks: Vec<&(&Segment, Decision)> = found
            .iter()
            .filter(|(_, d)| matches!(d, Decision::Route(_) | Decision::Gate(_)))
            .collect();
        // Gates that would each draw the same card (the whole line, the same kind and values)
        // are one card: a Yes on it approves exactly the line it shows.
        let one_card = asks.windows(2).all(|pair| match (&pair[0].1, &pair[1].1) {
            (Decision::Gate(a), Decision::Gate(b)) => {
                (&a.kind, &a.target, &a.text, &a.fields, &a.cost_usd)
                    == (&b.kind, &b.target, &b.text, &b.fields, &b.cost_usd)
            }
            _ => false,
        });
        if asks.len() > 1 && !one_card {
            return Decision::Block {
                message: format!(
                    "this command line holds {} commands that need the owner's approval; \
                     run each as a command of its own",
                    asks.len()
                ),
            };
        }
        if let Some((segment, decision)) = asks.first() {
            if let Decision::Route(ask) = decision {
                if found.len() > 1 {
                    return Decision::Block {
                        message: format!(
                            "`{}` goes through consentd (rule {}): run it alone, as a command \
                             of its own, not beside other commands",
                            segment.text, ask.rule
                        ),
                    };
                }
                if !line.opaque.is_empty() {
                    return Decision::Block {
                        message: format!(
                            "`{}` goes through consentd (rule {}), and consentd cannot read \
                             its values through {}: write them out literally",
                            segment.text,
                            ask.rule,
                            line.opaque.join(", ")
                        ),
                    };
                }
            }
            return decision.clone();
        }
        if !line.opaque.is_empty() {
            let why = format!(
                "consentd's hook cannot read this command line through {}, so it cannot tell \
                 what it would run",
                line.opaque.join(", ")
            );
            return self.decide_unreadable(call, &line, &why);
        }
        let reader_passes = !found.is_empty()
            && found
                .iter()
                .all(|(_, d)| matches!(d, Decision::Pass { .. }));
        if !reader_passes {
            return Decision::Unmatched;
        }
        // The reader's pass is only a first look: the pass itself is decided on the plain
        // grammar, which bash provably reads as written (`plain`).
        match self.plain_pass(call, command) {
            Ok(rule) => Decision::Pass { rule },
            Err(why) => {
                let why = format!("consentd's hook passes only plain command lines, and {why}");
                self.decide_unreadable(call, &line, &why)
            }
        }
    }

    /// The pass rule that passes `command`, when it is plain and a pass rule that names its
    /// program decides each of its commands; else why not, for the message.
    fn plain_pass(&self, call: &Call<'_>, command: &str) -> Result<String, String> {
        let segments =
            plain::read(command).map_err(|e| format!("this one is not: it holds {e}"))?;
        let mut passed_by = None;
        for plain in segments {
            let segment = Segment {
                words: plain.words,
                text: plain.text,
                piped: plain.piped,
            };
            let deciding = self.rules.iter().find(|rule| {
                glob(&rule.tool, call.tool_name) && self.apply(rule, call, Some(&segment)).is_some()
            });
            match deciding {
                // A pass rule with no program would pass any name at all.
                Some(rule) if rule.action == Action::Pass && !rule.programs.is_empty() => {
                    passed_by.get_or_insert_with(|| rule.name.clone());
                }
                _ => {
                    return Err(format!(
                        "`{}` is not passed by a pass rule that names its program",
                        segment.text
                    ))
                }
            }
        }
        passed_by.ok_or_else(|| "this one runs nothing".to_owned())
    }

    /// A line that cannot be passed (the reader cannot see through it, or it is not plain),
    /// with no block rule and no ask among its commands: never left to the agent (whose bypass
    /// mode would run it); `why` starts the block's message. A gate rule that applies to
    /// the call as a whole (a catch-all gate for the tool, or one whose conditions match one of
    /// its commands) gates it, the card showing the whole line; else it is blocked.
    fn decide_unreadable(&self, call: &Call<'_>, line: &shell::CommandLine, why: &str) -> Decision {
        for rule in &self.rules {
            if rule.action != Action::Gate || !glob(&rule.tool, call.tool_name) {
                continue;
            }
            let segments: Vec<Option<&Segment>> = if rule.is_shell_only() {
                line.segments.iter().map(Some).collect()
            } else {
                vec![None]
            };
            for segment in segments {
                if let Some(decision) = self.apply(rule, call, segment) {
                    return decision;
                }
            }
        }
        Decision::Block {
            message: format!(
                "{why}: split it into simple commands, each on its own, with its values \
                 written out literally, or ask the owner to add a gate rule for it"
            ),
        }
    }
    /// The decision for one command, and whether a block rule made it.
    fn decide_segment(&self, call: &Call<'_>, segment: &Segment) -> (Decision, bool) {
        for rule in &self.rules {
            if !glob(&rule.tool, call.tool_name) {
                continue;
            }
            if let Some(decision) = self.apply(rule, call, Some(segment)) {
                return (decision, rule.action == Action::Block);
            }
        }
        (Decision::Unmatched, false)
    }

    /// What `rule` says of the call (of `segment` in it, for a shell command), when its
    /// conditions match.
    fn apply(&self, rule: &Rule, call: &Call<'_>, segment: Option<&Segment>) -> Option<Decision> {
        let mut captures = BTreeMap::new();
        if let Some(segment) = segment {
            if !segment_matches(rule, segment) {
                return None;
            }
            if let Some(args) = &rule.args {
                let text = segment.args();
                let found = args.captures(&text)?;
                collect(args, &found, &mut captures);
            }
        }
        if !input_matches(rule, call.tool_input, &mut captures) {
            return None;
        }
        let scope = Scope {
            call,
            captures: &captures,
            segment,
            shell_tools: &self.shell_tools,
        };
        Some(verdict(rule, &scope))
    }
}

fn segment_matches(rule: &Rule, segment: &Segment) -> bool {
    if let Some(piped) = rule.piped {
        if piped != segment.piped {
            return false;
        }
    }
    if rule.programs.is_empty() {
        return true;
    }
    let (Some(program), Some(word)) = (segment.program(), segment.program_word()) else {
        return false;
    };
    rule.programs.iter().any(|pattern| {
        if pattern.contains('/') {
            glob(pattern, word)
        } else if rule.action == Action::Pass {
            // A pass is a promise about one program: `./ls` or `/tmp/x/cat` may be anything,
            // so a bare name lets through only a bare first word (found on the PATH).
            !word.contains('/') && glob(pattern, word)
        } else {
            // Block, route and gate rules may take more: `/usr/bin/rm` is still `rm`.
            glob(pattern, program)
        }
    })
}

fn input_matches(rule: &Rule, input: &Value, captures: &mut BTreeMap<String, String>) -> bool {
    for (key, regex) in &rule.input {
        let Some(value) = input.get(key).map(value_text) else {
            return false;
        };
        match regex.captures(&value) {
            Some(found) => collect(regex, &found, captures),
            None => return false,
        }
    }
    true
}

fn collect(regex: &Regex, found: &regex::Captures<'_>, into: &mut BTreeMap<String, String>) {
    for name in regex.capture_names().flatten() {
        if let Some(m) = found.name(name) {
            into.insert(name.to_owned(), m.as_str().to_owned());
        }
    }
}

fn verdict(rule: &Rule, scope: &Scope<'_>) -> Decision {
    match rule.action {
        Action::Pass => Decision::Pass {
            rule: rule.name.clone(),
        },
        Action::Block => Decision::Block {
            message: rule.message.clone(),
        },
        Action::Route | Action::Gate => match build_ask(rule, scope) {
            Ok(ask) if rule.action == Action::Route => Decision::Route(ask),
            Ok(ask) => Decision::Gate(ask),
            Err(message) => Decision::Block {
                message: format!("rule {}: {message}", rule.name),
            },
        },
    }
}

fn build_ask(rule: &Rule, scope: &Scope<'_>) -> Result<Ask, String> {
    let render = |t: &Option<Template>| t.as_ref().map(|t| t.render(scope)).transpose();
    let mut fields = BTreeMap::new();
    for (key, template) in &rule.fields {
        fields.insert(key.clone(), template.render(scope)?);
    }
    let text = match rule.action {
        // The card shows exactly what the agent will be let to run: the whole call.
        Action::Gate => Some(shown_call(scope.call, scope.shell_tools)),
        _ => render(&rule.text)?,
    };
    Ok(Ask {
        rule: rule.name.clone(),
        kind: rule.kind.clone(),
        target: render(&rule.target)?,
        text,
        fields,
        cost_usd: render(&rule.cost_usd)?,
    })
}

/// The whole call as a gate's card shows it: a shell tool's command as written, any other
/// tool's input as its name and pretty JSON (so a non-shell tool with a `command` argument is
/// never shown as if it were a shell command).
///
/// A `description` is the model's own words and is never shown, in either form. A network
/// approval ([`Call::network`]) shows `network-access <target>` under the command, rebuilt from
/// the target alone, since what its yes grants is the network, not the command.
///
/// Two calls never show the same text (an exact rule is matched on it): a command is shown as
/// written only when it could not be taken for the other form, that is when it neither starts
/// with the tool's name and a line break (as the JSON form does) nor holds a line starting
/// `network-access` (as a grant does); such a command is shown in the JSON form, where its line
/// breaks are escaped.
pub(crate) fn shown_call(call: &Call<'_>, shell_tools: &[String]) -> String {
    let grant = match call.network {
        Some(Network::Host(target)) => format!("\nnetwork-access {target}"),
        Some(Network::Unclear) | None => String::new(),
    };
    if shell_tools.iter().any(|t| t == call.tool_name) {
        if let Some(command) = call.tool_input.get("command").and_then(Value::as_str) {
            let only_command = call.tool_input.as_object().is_some_and(|o| {
                o.keys()
                    .all(|k| matches!(k.as_str(), "command" | "description"))
            });
            let unmistakable = !command.starts_with(&format!("{}\n", call.tool_name))
                && !command.contains("\nnetwork-access");
            if only_command && unmistakable {
                return format!("{command}{grant}");
            }
        }
    }
    let mut input = call.tool_input.clone();
    if let Some(object) = input.as_object_mut() {
        object.remove("description");
    }
    let input = serde_json::to_string_pretty(&input).unwrap_or_default();
    format!("{}\n{input}{grant}", call.tool_name)
}

/// Matches `text` against a glob with `*` (any run) and `?` (any one character).
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
