//! The answer to `op:"kinds"` (docs/PROTOCOL.md, "kinds"): every configured category with
//! exactly what an ask of it must, may and must not carry, so an agent or a tool schema is built
//! from it and never guessed. Pure: the caller passes the categories, each one's switch as it
//! stands now, and the limits.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::action::format_usd;
use crate::config::{Category, Class, Cost, Limits};
use crate::protocol::VERSION;

/// The whole answer, one final line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindsResponse {
    pub v: u64,
    /// Always `ok`: the request has no refusal but its shape's.
    pub status: &'static str,
    /// The card's ttl, the most an ask's `ttl` may be.
    pub card_ttl_seconds: u64,
    pub kinds: Vec<KindEntry>,
}

/// One category as an agent needs to know it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindEntry {
    pub kind: String,
    /// The English label.
    pub label: String,
    /// Every language the config gives a label in.
    pub labels: BTreeMap<&'static str, String>,
    pub class: &'static str,
    /// `run` (consentd runs it) or `approve` (the agent runs it itself once approved).
    pub mode: &'static str,
    /// The owner's switch as it stands now (the chat's On/Off, else the config).
    pub enabled: bool,
    /// Whether a mandate may cover it: `mandate_ok`, and never for a destructive class.
    pub mandate_ok: bool,
    pub target: &'static str,
    pub text: &'static str,
    /// The field names an ask may carry, each optional.
    pub fields: Vec<String>,
    /// How many attachments at most.
    pub attachments: usize,
    /// `none`, `request` (the ask carries `cost_usd`) or `fixed` (with `cost_usd`).
    pub cost: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<String>,
}

impl KindEntry {
    pub fn of(category: &Category, enabled: bool, limits: &Limits) -> Self {
        let (cost, cost_usd) = match category.cost {
            Cost::None => ("none", None),
            Cost::Request => ("request", None),
            Cost::Fixed(amount) => ("fixed", Some(format_usd(amount))),
        };
        KindEntry {
            kind: category.name.clone(),
            label: category.label(crate::config::Language::En).to_owned(),
            labels: category
                .label
                .iter()
                .map(|(lang, label)| (lang.as_str(), label.clone()))
                .collect(),
            class: category.class.as_str(),
            mode: category.mode.as_str(),
            enabled,
            mandate_ok: category.mandate_ok && category.class != Class::Destructive,
            target: category.target.as_str(),
            text: category.text.as_str(),
            fields: category.fields.clone(),
            attachments: category.attachments.min(limits.max_attachments),
            cost,
            cost_usd,
        }
    }
}

/// Every configured category, on or off, sorted by kind; `enabled` says each one's switch.
pub fn kinds_response(
    categories: &BTreeMap<String, Category>,
    enabled: impl Fn(&str) -> bool,
    limits: &Limits,
) -> KindsResponse {
    KindsResponse {
        v: VERSION,
        status: "ok",
        card_ttl_seconds: limits.card_ttl.as_secs(),
        // A BTreeMap is already in the kinds' order.
        kinds: categories
            .values()
            .map(|category| KindEntry::of(category, enabled(&category.name), limits))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Config};

    fn config(categories: &str) -> Config {
        let text = format!("[paths]\nstate_dir = \"/s\"\n{categories}");
        config::parse(&text, "test.toml").expect("a valid config")
    }

    #[test]
    fn every_category_is_listed_in_order_with_its_rules() {
        let config = config(
            r#"
[categories.publish_x]
label = { en = "Post to X", ru = "Пост в X" }
class = "external"
mandate_ok = true
target = "required"
text = "required"
fields = ["reply_to"]
attachments = 4
cost = "none"
command = ["/bin/true"]

[categories.shell]
label = { en = "Run a shell command" }
class = "external"
mode = "approve"
enabled = true
text = "required"
fields = ["cwd"]
cost = "0.04"

[categories.generate_image]
label = { en = "Generate an image" }
class = "spend"
enabled = true
mandate_ok = true
text = "required"
cost = "request"
command = ["/bin/true"]
"#,
        );
        let answer = kinds_response(
            &config.categories,
            |kind| kind != "publish_x",
            &config.limits,
        );
        let line = serde_json::to_value(&answer).unwrap();
        assert_eq!(line["status"], "ok");
        assert_eq!(line["card_ttl_seconds"], 900);
        let kinds: Vec<&str> = answer.kinds.iter().map(|k| k.kind.as_str()).collect();
        assert_eq!(kinds, ["generate_image", "publish_x", "shell"]);
        assert_eq!(
            line["kinds"][1],
            serde_json::json!({"kind":"publish_x","label":"Post to X",
                "labels":{"en":"Post to X","ru":"Пост в X"},"class":"external","mode":"run",
                "enabled":false,"mandate_ok":true,"target":"required","text":"required",
                "fields":["reply_to"],"attachments":4,"cost":"none"})
        );
        assert_eq!(
            line["kinds"][2],
            serde_json::json!({"kind":"shell","label":"Run a shell command",
                "labels":{"en":"Run a shell command"},"class":"external","mode":"approve",
                "enabled":true,"mandate_ok":false,"target":"none","text":"required",
                "fields":["cwd"],"attachments":0,"cost":"fixed","cost_usd":"0.04"})
        );
        assert_eq!(line["kinds"][0]["cost"], "request");
        assert!(line["kinds"][0].get("cost_usd").is_none());
    }
}
