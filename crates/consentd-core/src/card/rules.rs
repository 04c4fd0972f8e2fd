//! The exact rules' side of the chat (docs/HOOKS.md, "Exact rules"): a gate card's edit once Always
//! here saved
//! its call, the `/rules` list (each rule with Remove), and a removed rule's message. Pure
//! functions of their inputs, like the rest of [`crate::card`].

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{
    button, clamp, local_time, msg, outcome_footer, sha_prefix, Button, ButtonAction, CardBody,
    CardView, Outcome,
};
use crate::locale::{Language, Locales};
use crate::styled::Styled;

/// The most code points of a rule's command `/rules` shows; a longer one is cut with "…" and
/// its SHA-256 prefix follows. Ten rules fit a screen; the exact text stays in the daemon.
pub(crate) const SHOWN_COMMAND_CHARS: usize = 600;

/// A saved rule as `/rules` shows it.
#[derive(Debug, Clone, Copy)]
pub struct RuleView<'a> {
    pub id: &'a str,
    pub agent: &'a str,
    pub tool: &'a str,
    pub cwd: &'a str,
    /// The command (another tool's input as the card showed it), byte-exact.
    pub command: &'a str,
    /// The SHA-256 of `command`, in hex.
    pub command_sha256: &'a str,
    pub saved_at: DateTime<Utc>,
    pub uses: u64,
    /// The owner's zone.
    pub tz: Tz,
}

/// A gate card's edit once Always here approved it and saved its call as a rule: the card's
/// content, the outcome, and a line that says the call was saved, before the text (which stays
/// the card's last lines, as on every edit).
pub fn render_rule_saved(
    view: &CardView,
    locales: &Locales,
    lang: Language,
    outcome: &Outcome,
) -> Styled {
    let body = CardBody::new(view, locales, lang);
    let mut footer = outcome_footer(outcome, locales, lang);
    footer.push(Styled::plain(locales.t(lang, msg::CARD_RULE_SAVED, &[])));
    body.assemble(&footer)
}

/// The first line of the `/rules` reply: how many rules there are (or that there are none).
pub fn rules_count(locales: &Locales, lang: Language, count: usize) -> String {
    locales.t(lang, msg::RULES_COUNT, &[("count", count.into())])
}

/// One rule as `/rules` lists it, with its Remove button.
pub fn rule_item(
    view: &RuleView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> (Styled, Vec<Button>) {
    (
        rule_text(view, locales, lang, now),
        vec![button(locales, lang, ButtonAction::Remove)],
    )
}

/// A rule's message once Remove took it away: what it was, and that it is gone.
pub fn rule_removed(
    view: &RuleView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Styled {
    let mut text = rule_text(view, locales, lang, now);
    text.push_str("\n");
    text.push_str(&locales.t(lang, msg::RULE_REMOVED, &[]));
    text
}

/// The rule's lines: who and where (values: the hook chose them), when it was saved and how
/// often it was used, its id, then the command, quoted, cut when long.
fn rule_text(view: &RuleView, locales: &Locales, lang: Language, now: DateTime<Utc>) -> Styled {
    let saved = local_time(locales, lang, view.saved_at, view.tz, now);
    let mut text = locales.styled(
        lang,
        msg::RULE_ITEM,
        &[
            ("saved", saved.as_str().into()),
            ("uses", view.uses.into()),
            ("id", view.id.into()),
            ("sha", sha_prefix(view.command_sha256).into()),
        ],
        &[
            ("agent", view.agent),
            ("tool", view.tool),
            ("cwd", view.cwd),
        ],
    );
    text.push_str("\n");
    text.push(&Styled::quote(&clamp(view.command, SHOWN_COMMAND_CHARS)));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::tests::{assert_clean, locales};

    fn view(command: &str) -> RuleView<'_> {
        RuleView {
            id: "u_0123456789abcdef0123",
            agent: "claude-code",
            tool: "Bash",
            cwd: "/home/mila/src/blog",
            command,
            command_sha256: "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
            saved_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            uses: 3,
            tz: chrono_tz::UTC,
        }
    }

    #[test]
    fn a_rule_shows_who_where_when_how_often_and_its_command() {
        let locales = locales();
        let now = DateTime::from_timestamp(1_800_000_600, 0).unwrap();
        for lang in Language::ALL {
            let (text, buttons) = rule_item(&view("cargo test"), &locales, lang, now);
            assert_clean(&text.text);
            for part in [
                "claude-code",
                "Bash",
                "/home/mila/src/blog",
                "cargo test",
                "3",
            ] {
                assert!(text.text.contains(part), "{lang:?}: {}", text.text);
            }
            assert_eq!(buttons.len(), 1);
            assert_eq!(buttons[0].action, ButtonAction::Remove);
            let removed = rule_removed(&view("cargo test"), &locales, lang, now);
            assert!(removed.text.starts_with(&text.text), "{lang:?}");
            assert!(removed.text.len() > text.text.len(), "{lang:?}");
        }
    }

    #[test]
    fn a_saved_cards_edit_says_so_before_the_text_which_stays_last() {
        let locales = locales();
        let fields = std::collections::BTreeMap::new();
        let call = crate::exact::HookCall {
            agent: "codex".to_owned(),
            tool: "Bash".to_owned(),
            cwd: "/home/mila/src/blog".to_owned(),
        };
        let view = CardView {
            record_id: "r_0123456789abcdef0123",
            kind: "shell",
            label: "Run a shell command",
            class: "external",
            target: None,
            target_warnings: &[],
            fields: &fields,
            field_labels: &crate::card::NO_FIELD_LABELS,
            field_warnings: &[],
            cost_usd: None,
            attachments: &[],
            text: Some("cargo test"),
            text_sha256_hex: Some(
                "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
            ),
            expires_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            tz: chrono_tz::UTC,
            urgent: false,
            origin: None,
            agent_runs: true,
            hook: Some(crate::card::HookView {
                call: &call,
                always: true,
            }),
        };
        let outcome = Outcome {
            state: "approved",
            decided_by: Some("Mila".to_owned()),
            result: None,
            reason: None,
            reply_by: None,
        };
        for lang in Language::ALL {
            let edit = render_rule_saved(&view, &locales, lang, &outcome);
            let saved = locales.t(lang, msg::CARD_RULE_SAVED, &[]);
            let at = edit.text.find(&saved).expect("the saved line");
            assert!(at < edit.text.find("cargo test").unwrap(), "{lang:?}");
            assert!(edit.text.ends_with("cargo test"), "{lang:?}: {}", edit.text);
            assert!(edit.text.contains("/home/mila/src/blog"), "{lang:?}");
        }
    }

    #[test]
    fn a_long_command_is_cut_and_named_by_its_hash() {
        let locales = locales();
        let now = DateTime::from_timestamp(1_800_000_600, 0).unwrap();
        let long = "x".repeat(SHOWN_COMMAND_CHARS * 2);
        let (text, _) = rule_item(&view(&long), &locales, Language::En, now);
        assert!(text.text.contains('…'), "{}", text.text);
        assert!(text.text.contains("ab12cd34ef56"), "{}", text.text);
        assert!(text.text.len() < long.len(), "{}", text.text.len());
    }

    #[test]
    fn counts_have_their_plurals() {
        let locales = locales();
        for lang in Language::ALL {
            let none = rules_count(&locales, lang, 0);
            let one = rules_count(&locales, lang, 1);
            let five = rules_count(&locales, lang, 5);
            assert_ne!(none, one, "{lang:?}");
            assert_ne!(one, five, "{lang:?}");
            assert_clean(&five);
        }
    }
}
