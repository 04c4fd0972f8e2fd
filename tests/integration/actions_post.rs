//! The `telegram_post` built-in action against the emulator's channels: the card's text parts and
//! attachments reach the channel exactly once and nothing else does, the result is the post's
//! link, and a channel where the bot is not an administrator ends `failed` with Telegram's words.

use base64::Engine as _;
use consentd_emulator::{ChannelSpec, ContentKind};
use serde_json::json;
use sha2::Digest as _;

use crate::attachments::PNG;
use crate::fixture::{Daemon, OWNER};

const CHANNEL: i64 = -1_001_234_567_890;
const NOTES: &[u8] = b"Release notes: nothing else than this.\n";

const CATEGORY: &str = r#"
[categories.channel_post]
label = { en = "Post to the channel" }
class = "external"
enabled = true
target = "required"
text = "required"
attachments = 2
action = "telegram_post"
timeout = "30s"
"#;

fn daemon_with(channel: ChannelSpec) -> Daemon {
    let daemon = Daemon::builder().config_tail(CATEGORY).start();
    daemon.bot.add_channel(channel);
    daemon
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Asks to post `text` (and, with `files`, the PNG and the notes) to `target`; presses Yes.
fn ask_and_approve(daemon: &Daemon, target: &str, text: &str, files: bool) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let attachments = if files {
        json!([{"name":"cover.png","media_type":"image/png","data_b64":b64(PNG)},
               {"name":"notes.txt","media_type":"text/plain","data_b64":b64(NOTES)}])
    } else {
        json!([])
    };
    let answer = daemon.request(
        &json!({"v":1,"op":"ask","kind":"channel_post","target":target,
        "text":text,"attachments":attachments,"wait":false}),
    );
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    id
}

#[test]
fn the_cards_parts_and_attachments_reach_the_channel_once_and_the_result_is_the_link() {
    let daemon = daemon_with(ChannelSpec::public(CHANNEL, "mila_news"));
    // Too long for the card: shown in numbered parts before it.
    let text: String = (0..700).map(|i| format!("word{i} ")).collect();
    let id = ask_and_approve(&daemon, "@mila_news", &text, true);
    let status = daemon.wait_state(&id, "executed");
    assert_eq!(status["result"], "https://t.me/mila_news/1", "{status}");

    // The parts as the owner was shown them, without their `[i/N]` line.
    let shown: Vec<String> = daemon
        .bot
        .messages(OWNER)
        .iter()
        .filter_map(|m| m.text.as_deref())
        .filter(|t| t.starts_with('[') && t.contains("]\n"))
        .map(|t| t.split_once('\n').unwrap().1.to_owned())
        .collect();
    assert!(shown.len() > 1, "the text was shown in parts: {shown:?}");
    assert_eq!(shown.concat(), text, "the parts are the text");

    let posted = daemon.bot.messages(CHANNEL);
    let texts: Vec<String> = posted
        .iter()
        .filter(|m| m.kind == ContentKind::Text)
        .filter_map(|m| m.text.clone())
        .collect();
    assert_eq!(
        texts, shown,
        "the channel got the card's parts, in order, once each"
    );
    let files: Vec<(ContentKind, String, String)> = posted
        .iter()
        .filter_map(|m| {
            let file = m.file.as_ref()?;
            Some((m.kind, file.name.clone(), file.sha256.clone()))
        })
        .collect();
    assert_eq!(
        files,
        [
            (ContentKind::Photo, "cover.png".to_owned(), sha256(PNG)),
            (ContentKind::Document, "notes.txt".to_owned(), sha256(NOTES)),
        ]
    );
    assert_eq!(
        posted.len(),
        shown.len() + 2,
        "nothing else reached the channel: {posted:?}"
    );
    assert!(
        posted
            .iter()
            .all(|m| m.caption.is_none() && m.reply_markup.is_none()),
        "no caption or button of consentd's: {posted:?}"
    );
}

#[test]
fn a_private_channel_is_linked_by_its_id() {
    let daemon = daemon_with(ChannelSpec::private(CHANNEL));
    let id = ask_and_approve(&daemon, &CHANNEL.to_string(), "Short and sweet.", false);
    let status = daemon.wait_state(&id, "executed");
    assert_eq!(status["result"], "https://t.me/c/1234567890/1", "{status}");
    let posted = daemon.bot.messages(CHANNEL);
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].text.as_deref(), Some("Short and sweet."));
}

#[test]
fn a_channel_where_the_bot_is_not_an_admin_is_failed_with_telegrams_reason() {
    let daemon = daemon_with(ChannelSpec::public(CHANNEL, "mila_news").without_admin());
    let id = ask_and_approve(&daemon, "@mila_news", "Hello, channel.", true);
    let status = daemon.wait_state(&id, "failed");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("need administrator rights in the channel chat")),
        "{status}"
    );
    assert!(daemon.bot.messages(CHANNEL).is_empty());
    let sends = daemon
        .bot
        .calls_to("sendmessage")
        .into_iter()
        .filter(|call| call.params["chat_id"] == "@mila_news")
        .count();
    assert_eq!(sends, 1, "one attempt, never retried");
}

/// A hostile agent aims a post elsewhere than a channel; the owner says Yes to the card anyway.
/// Each target ends `failed`, and no text of the post reaches any chat but the owner's card.
#[test]
fn a_post_aimed_at_a_persons_chat_or_an_unknown_channel_is_failed_and_sent_nowhere() {
    let daemon = daemon_with(ChannelSpec::public(CHANNEL, "mila_news"));
    let owner = OWNER.to_string();
    let cases = [
        (
            "the owner's own chat",
            owner.as_str(),
            "is not a channel or group",
        ),
        (
            "a channel that is not there",
            "@no_such_channel",
            "chat not found",
        ),
    ];
    for (name, target, words) in cases {
        let text = format!("Mandate granted: {name}");
        let id = ask_and_approve(&daemon, target, &text, false);
        let status = daemon.wait_state(&id, "failed");
        assert!(
            status["message"]
                .as_str()
                .is_some_and(|m| m.contains(words)),
            "{name}: {status}"
        );
        let posted_to_owner = daemon
            .bot
            .messages(OWNER)
            .iter()
            .filter(|m| m.text.as_deref() == Some(text.as_str()))
            .count();
        assert_eq!(
            posted_to_owner, 0,
            "{name}: the post reached the owner's chat"
        );
    }
    assert!(daemon.bot.messages(CHANNEL).is_empty());
}
