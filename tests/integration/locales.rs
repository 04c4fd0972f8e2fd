//! The locales: every language has every message, and every state and class has its words.

use std::collections::BTreeSet;

use consentd_core::config::Class;
use consentd_store::RecordState;

const LANGUAGES: [&str; 3] = ["en", "ru", "pt"];

fn message_ids(language: &str) -> BTreeSet<String> {
    let path = format!(
        "{}/locales/{language}/consentd.ftl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with(' '))
        .filter_map(|line| line.split_once(" = ").map(|(id, _)| id.trim().to_owned()))
        .collect()
}

#[test]
fn every_locale_has_the_same_messages() {
    let english = message_ids("en");
    assert!(!english.is_empty());
    for language in LANGUAGES {
        assert_eq!(message_ids(language), english, "{language}");
    }
}

#[test]
fn every_state_and_class_has_a_message() {
    let english = message_ids("en");
    for state in RecordState::ALL {
        assert!(english.contains(&format!("state-{state}")), "state-{state}");
    }
    for class in [Class::External, Class::Spend, Class::Destructive] {
        assert!(
            english.contains(&format!("class-{}", class.as_str())),
            "class-{}",
            class.as_str()
        );
    }
}
