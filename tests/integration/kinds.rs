//! `kinds` over the socket of a real daemon: it lists exactly the config's categories with
//! their rules.

use serde_json::json;

use crate::withdraw::{daemon, journal_verifies};

#[test]
fn kinds_lists_exactly_the_configured_categories_with_their_rules() {
    let daemon = daemon().start();
    let answer = daemon.request(&json!({"v":1,"op":"kinds"}));
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["card_ttl_seconds"], 900);
    let kinds: Vec<&str> = answer["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["publish_x", "send_letter", "shell", "wipe_drafts"]);
    let kind = |name: &str| {
        answer["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kind"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        kind("publish_x"),
        json!({"kind":"publish_x","label":"Post to X",
            "labels":{"en":"Post to X","ru":"Пост в X","pt":"Post no X"},"class":"external",
            "mode":"run","enabled":true,"mandate_ok":true,"target":"required","text":"required",
            "fields":["reply_to"],"attachments":2,"cost":"request"})
    );
    assert_eq!(
        kind("shell"),
        json!({"kind":"shell","label":"Run a shell command",
            "labels":{"en":"Run a shell command","ru":"Выполнить команду","pt":"Executar um comando"},
            "class":"external","mode":"approve","enabled":true,"mandate_ok":true,"target":"none",
            "text":"required","fields":["cwd"],"attachments":0,"cost":"none"})
    );
    let wipe = kind("wipe_drafts");
    assert_eq!(
        (&wipe["class"], &wipe["enabled"], &wipe["mandate_ok"]),
        (&json!("destructive"), &json!(false), &json!(false))
    );
    // Only the envelope: anything more is refused, and nothing is recorded.
    let refused = daemon.request(&json!({"v":1,"op":"kinds","kind":"shell"}));
    assert_eq!(
        (&refused["status"], &refused["reason"]),
        (&json!("refused"), &json!("bad_request"))
    );
    assert!(refused.get("id").is_none(), "{refused}");
    journal_verifies(&daemon, "kinds", None);
}
