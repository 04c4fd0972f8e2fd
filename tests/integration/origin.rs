//! An ask's `origin` through a real daemon: shown on its own line, checked like every shown
//! value, and part of the digest.

use serde_json::json;

use crate::withdraw::{daemon, id_of, journal_verifies, shell_ask};

#[test]
fn origin_is_shown_apart_checked_naming_origin_and_part_of_the_digest() {
    let daemon = daemon().start();
    let plain = id_of(&daemon.request(&shell_ask("git push")));
    let mut ask = shell_ask("git push");
    ask["origin"] = json!("Claude Code · ~/src/blog");
    let with_origin = id_of(&daemon.request(&ask));
    assert_ne!(
        plain, with_origin,
        "another digest: not joined to the first card"
    );
    let card = daemon.card_of(&with_origin);
    let text = card.text.clone().unwrap();
    assert!(text.contains("From: Claude Code · ~/src/blog"), "{text}");
    // Set apart like the target: the value is its own entity.
    let entities = card.entities.clone().unwrap_or_default();
    let start = text.encode_utf16().count()
        - text[text.find("Claude Code").unwrap()..]
            .encode_utf16()
            .count();
    assert!(
        entities
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["offset"] == start
                && e["length"] == "Claude Code · ~/src/blog".encode_utf16().count()),
        "{entities}"
    );
    let digest = |id: &str| {
        daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "asked" && e["id"] == id)
            .unwrap()["digest"]
            .clone()
    };
    assert_ne!(digest(&plain), digest(&with_origin));
    journal_verifies(&daemon, "origin", Some(&with_origin));
    // A mandate request's origin is on its card too.
    let mandate = id_of(
        &daemon.request(&json!({"v":1,"op":"mandate","kind":"shell","days":1,
        "actions_per_day":3,"origin":"Codex · ~/src/site","wait":false})),
    );
    let card = daemon.card_of(&mandate).text.unwrap();
    assert!(card.contains("From: Codex · ~/src/site"), "{card}");
    journal_verifies(&daemon, "mandate origin", Some(&mandate));
    for (origin, reason, words) in [
        (
            "Claude\u{200B}Code",
            "invisible_character",
            "U+200B ZERO WIDTH SPACE in field origin at char 7",
        ),
        ("two\nlines", "invisible_character", "in field origin"),
        ("", "bad_request", "origin is empty"),
    ] {
        let mut ask = shell_ask("git push");
        ask["origin"] = json!(origin);
        let answer = daemon.request(&ask);
        assert_eq!(answer["reason"], reason, "{origin:?}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(words),
            "{origin:?}: {answer}"
        );
        journal_verifies(&daemon, origin, Some(&id_of(&answer)));
    }
}
