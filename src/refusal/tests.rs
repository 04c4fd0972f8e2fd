//! The envelope and field checks of the refusal gate, one case per rule. The Unicode policy's
//! own table and its exhaustive test are in `visible.rs`.

use base64::Engine as _;

use super::*;
use crate::config::{self, Config};
use crate::protocol::{AskRequest, AttachmentRequest};

const CONFIG: &str = r#"
[paths]
state_dir = "/var/lib/consentd"

[limits]
max_text_chars = 50
max_attachments = 2
max_attachment_bytes = 16

[categories.publish_x]
label = { en = "Post to X" }
class = "external"
enabled = true
target = "required"
text = "required"
fields = ["reply_to"]
attachments = 2
cost = "request"
command = ["/bin/true"]

[categories.fixed]
label = { en = "Generate" }
class = "spend"
enabled = true
cost = "0.04"
command = ["/bin/true"]

[categories.bare]
label = { en = "Ping" }
class = "external"
enabled = true
target = "optional"
text = "optional"
command = ["/bin/true"]
"#;

fn config() -> Config {
    config::parse(CONFIG, "test").unwrap()
}

fn good() -> AskRequest {
    AskRequest {
        kind: "publish_x".into(),
        target: Some("@mila_news".into()),
        text: Some("Hello, world\nsecond line 👨‍👩‍👧".into()),
        fields: [("reply_to".to_owned(), "https://example.org/1".to_owned())].into(),
        cost_usd: Some("0.4".into()),
        attachments: vec![AttachmentRequest {
            name: "cover.png".into(),
            media_type: "image/png".into(),
            data_b64: base64::engine::general_purpose::STANDARD.encode(b"12345678"),
        }],
        idempotency_key: Some("k-1".into()),
        urgent: false,
        wait: true,
    }
}

fn check(ask: &AskRequest) -> Result<Action, Refusal> {
    let config = config();
    check_ask(ask, config.categories.get(&ask.kind), true, &config.limits)
}

#[test]
fn a_good_ask_becomes_its_action() {
    let action = check(&good()).unwrap();
    assert_eq!(action.kind, "publish_x");
    assert_eq!(action.cost_string().as_deref(), Some("0.40"));
    assert_eq!(action.attachments[0].data, b"12345678");
}

#[test]
fn a_fixed_cost_is_the_actions_cost() {
    let ask = AskRequest {
        kind: "fixed".into(),
        ..AskRequest::default()
    };
    assert_eq!(check(&ask).unwrap().cost_string().as_deref(), Some("0.04"));
}

#[test]
fn each_envelope_rule_refuses_with_its_reason_and_says_where() {
    type Edit = fn(&mut AskRequest);
    let cases: &[(&str, Edit, Reason, &str)] = &[
        (
            "unknown kind",
            |a| a.kind = "nope".into(),
            Reason::UnknownKind,
            "no category \"nope\"",
        ),
        (
            "malformed kind",
            |a| a.kind = "Publish X".into(),
            Reason::UnknownKind,
            "no category",
        ),
        (
            "missing target",
            |a| a.target = None,
            Reason::FieldNotShown,
            "requires a target",
        ),
        (
            "missing text",
            |a| a.text = None,
            Reason::FieldNotShown,
            "requires a text",
        ),
        (
            "empty target",
            |a| a.target = Some(String::new()),
            Reason::BadRequest,
            "target is empty",
        ),
        (
            "unlisted field",
            |a| {
                a.fields.insert("tags".into(), "x".into());
            },
            Reason::FieldNotShown,
            "field \"tags\" is not shown by category publish_x",
        ),
        (
            "empty field",
            |a| {
                a.fields.insert("reply_to".into(), String::new());
            },
            Reason::BadRequest,
            "field reply_to is empty",
        ),
        (
            "missing cost",
            |a| a.cost_usd = None,
            Reason::FieldNotShown,
            "requires cost_usd",
        ),
        (
            "bad money",
            |a| a.cost_usd = Some("0.001".into()),
            Reason::BadRequest,
            "cost_usd:",
        ),
        (
            "float money",
            |a| a.cost_usd = Some("1e3".into()),
            Reason::BadRequest,
            "cost_usd:",
        ),
        (
            "too many attachments",
            |a| {
                let one = a.attachments[0].clone();
                a.attachments = vec![one.clone(), one.clone(), one];
            },
            Reason::TooLarge,
            "3 attachments; category publish_x takes at most 2",
        ),
        (
            "attachment too big",
            |a| {
                a.attachments[0].data_b64 =
                    base64::engine::general_purpose::STANDARD.encode([0u8; 17]);
            },
            Reason::TooLarge,
            "attachments[0] is about 17 bytes; at most 16",
        ),
        (
            "attachment far too big, not decoded",
            |a| {
                a.attachments[0].data_b64 = "A".repeat(4_000_000);
            },
            Reason::TooLarge,
            "attachments[0] is about 3000000 bytes",
        ),
        (
            "bad base64",
            |a| a.attachments[0].data_b64 = "!!!!".into(),
            Reason::BadRequest,
            "attachments[0].data_b64 is not valid base64",
        ),
        (
            "empty attachment",
            |a| a.attachments[0].data_b64 = String::new(),
            Reason::BadRequest,
            "attachments[0] is empty",
        ),
        (
            "two attachments with one name",
            |a| {
                let one = a.attachments[0].clone();
                a.attachments.push(one);
            },
            Reason::BadRequest,
            "attachments[1].name \"cover.png\" is also the name of attachments[0]",
        ),
        (
            "attachment path name",
            |a| a.attachments[0].name = "../etc/passwd".into(),
            Reason::BadRequest,
            "attachments[0].name must be a plain file name",
        ),
        (
            "attachment empty name",
            |a| a.attachments[0].name = String::new(),
            Reason::BadRequest,
            "attachments[0].name is empty",
        ),
        (
            "attachment invisible name",
            |a| a.attachments[0].name = "cover\u{202E}gnp.exe".into(),
            Reason::InvisibleCharacter,
            "U+202E",
        ),
        (
            "bad media type",
            |a| a.attachments[0].media_type = "png".into(),
            Reason::BadRequest,
            "attachments[0].media_type \"png\"",
        ),
        (
            "text too long",
            |a| a.text = Some("x".repeat(51)),
            Reason::TooLarge,
            "text has 51 characters; at most 50",
        ),
        (
            "target too long",
            |a| a.target = Some("x".repeat(257)),
            Reason::TooLarge,
            "target has 257 characters; at most 256",
        ),
        (
            "field too long",
            |a| {
                a.fields.insert("reply_to".into(), "x".repeat(1025));
            },
            Reason::TooLarge,
            "field reply_to has 1025 characters",
        ),
        (
            "key too long",
            |a| a.idempotency_key = Some("k".repeat(129)),
            Reason::TooLarge,
            "idempotency_key has 129",
        ),
        (
            "invisible in text",
            |a| a.text = Some("Hello\u{200B}".into()),
            Reason::InvisibleCharacter,
            "U+200B ZERO WIDTH SPACE in text at char 6",
        ),
        (
            "invisible in target",
            |a| a.target = Some("@mila\u{2066}".into()),
            Reason::InvisibleCharacter,
            "in target at char 6",
        ),
        (
            "newline in target",
            |a| a.target = Some("@mi\nla".into()),
            Reason::InvisibleCharacter,
            "U+000A",
        ),
        (
            "newline in field",
            |a| {
                a.fields.insert("reply_to".into(), "a\nb".into());
            },
            Reason::InvisibleCharacter,
            "in field reply_to at char 2",
        ),
        (
            "invisible in key",
            |a| a.idempotency_key = Some("k\u{00A0}1".into()),
            Reason::InvisibleCharacter,
            "idempotency_key",
        ),
        (
            "nfd text",
            |a| a.text = Some("cafe\u{0301}".into()),
            Reason::NotNfc,
            "text",
        ),
    ];
    for (name, edit, reason, needle) in cases {
        let mut ask = good();
        edit(&mut ask);
        let refusal = check(&ask).expect_err(name);
        assert_eq!(refusal.reason, *reason, "{name}: {}", refusal.message);
        assert!(
            refusal.message.contains(needle),
            "{name}: {:?} lacks {needle:?}",
            refusal.message
        );
    }
}

#[test]
fn presence_rules_of_other_categories() {
    type Edit = fn(&mut AskRequest);
    let cases: &[(&str, Edit, Reason, &str)] = &[
        (
            "cost on a fixed-cost category",
            |a| a.cost_usd = Some("0.04".into()),
            Reason::FieldNotShown,
            "fixed cost of $0.04",
        ),
        (
            "target where none is taken",
            |a| a.target = Some("@x".into()),
            Reason::FieldNotShown,
            "takes no target",
        ),
        (
            "text where none is taken",
            |a| a.text = Some("x".into()),
            Reason::FieldNotShown,
            "takes no text",
        ),
        (
            "attachment where none is taken",
            |a| {
                a.attachments = good().attachments;
            },
            Reason::FieldNotShown,
            "takes no attachments",
        ),
    ];
    for (name, edit, reason, needle) in cases {
        let mut ask = AskRequest {
            kind: "fixed".into(),
            ..AskRequest::default()
        };
        edit(&mut ask);
        let refusal = check(&ask).expect_err(name);
        assert_eq!(refusal.reason, *reason, "{name}: {}", refusal.message);
        assert!(
            refusal.message.contains(needle),
            "{name}: {:?}",
            refusal.message
        );
    }
    let bare = AskRequest {
        kind: "bare".into(),
        cost_usd: Some("1.00".into()),
        ..AskRequest::default()
    };
    let refusal = check(&bare).unwrap_err();
    assert_eq!(refusal.reason, Reason::FieldNotShown);
    assert!(
        refusal.message.contains("has no cost"),
        "{}",
        refusal.message
    );
}

#[test]
fn a_category_that_is_off_refuses() {
    let config = config();
    let refusal = check_ask(
        &good(),
        config.categories.get("publish_x"),
        false,
        &config.limits,
    )
    .unwrap_err();
    assert_eq!(refusal.reason, Reason::CategoryOff);
    assert!(
        refusal.message.contains("publish_x is off"),
        "{}",
        refusal.message
    );
}

#[test]
fn reason_codes_are_stable() {
    let codes: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        codes,
        [
            "bad_request",
            "unknown_kind",
            "category_off",
            "field_not_shown",
            "invisible_character",
            "not_nfc",
            "too_large",
            "declined_recently",
            "kind_silenced",
            "too_many_pending",
            "no_owner",
            "identity_conflict",
            "peer_not_allowed",
            "mandate_terms"
        ]
    );
    for reason in Reason::ALL {
        assert_eq!(Reason::parse(reason.as_str()), Some(reason));
    }
}
