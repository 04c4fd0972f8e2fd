//! The envelope and field checks of the refusal gate, one case per rule. The Unicode policy's
//! own table and its exhaustive test are in `visible.rs`.

use base64::Engine as _;

use super::visible::{tags, SMUGGLED};
use super::*;
use crate::config::{self, Config};
use crate::protocol::{AskRequest, AttachmentRequest, MandateAsk};

const CONFIG: &str = r#"
[paths]
state_dir = "/var/lib/consentd"

[limits]
max_text_chars = 50
max_attachments = 2
max_attachment_bytes = 16
mandate_max_days = 5
mandate_max_usd_per_day = "6.00"
mandate_max_actions_per_day = 20

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

[categories.post_ok]
label = { en = "Post" }
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
cost = "request"
command = ["/bin/true"]

[categories.untargeted]
label = { en = "Generate" }
class = "spend"
enabled = true
mandate_ok = true
cost = "request"
command = ["/bin/true"]

[categories.post_off]
label = { en = "Post elsewhere" }
class = "external"
enabled = false
mandate_ok = true
target = "required"
command = ["/bin/true"]

[categories.wipe]
label = { en = "Wipe" }
class = "destructive"
enabled = true
target = "required"
command = ["/bin/true"]

[categories.bare]
label = { en = "Ping" }
class = "external"
enabled = true
mandate_ok = true
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
            data_b64: base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n"),
        }],
        idempotency_key: Some("k-1".into()),
        urgent: false,
        wait: true,
        origin: None,
        ttl: None,
        hook: None,
    }
}

fn check(ask: &AskRequest) -> Result<Action, Refusal> {
    let config = config();
    check_ask(ask, &config.categories, true, &config.limits)
}

#[test]
fn a_good_ask_becomes_its_action() {
    let action = check(&good()).unwrap();
    assert_eq!(action.kind, "publish_x");
    assert_eq!(action.cost_string().as_deref(), Some("0.40"));
    assert_eq!(action.attachments[0].data, b"\x89PNG\r\n\x1a\n");
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
fn an_unknown_kind_is_told_the_configured_kinds() {
    let config = config();
    let ask = AskRequest {
        kind: "publish_y".into(),
        ..good()
    };
    let refusal = check_ask(&ask, &config.categories, true, &config.limits).unwrap_err();
    assert_eq!(refusal.reason, Reason::UnknownKind);
    assert_eq!(
        refusal.message,
        "no category \"publish_y\" is configured; the kinds are: bare, fixed, post_off, post_ok, \
         publish_x, untargeted, wipe"
    );
    let mandate = MandateAsk {
        kind: "publish_y".into(),
        ..good_mandate()
    };
    let refusal = check_mandate(&mandate, &config.categories, true, &config.limits).unwrap_err();
    assert_eq!(refusal.reason, Reason::UnknownKind);
    assert!(refusal.message.ends_with("publish_x, untargeted, wipe"));

    let none = std::collections::BTreeMap::new();
    let refusal = check_ask(&ask, &none, true, &config.limits).unwrap_err();
    assert_eq!(
        refusal.message,
        "no category \"publish_y\" is configured; the config has no categories"
    );
}

#[test]
fn a_category_that_is_off_refuses() {
    let config = config();
    let refusal = check_ask(&good(), &config.categories, false, &config.limits).unwrap_err();
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
            "mandate_terms",
            "not_withdrawable",
            "disk_full"
        ]
    );
    for reason in Reason::ALL {
        assert_eq!(Reason::parse(reason.as_str()), Some(reason));
    }
}

fn good_mandate() -> MandateAsk {
    MandateAsk {
        kind: "post_ok".into(),
        targets: vec!["@mila_news".into(), "@mila_shop".into()],
        days: 5,
        usd_per_day: Some("6.00".into()),
        actions_per_day: 20,
        reason: Some("Daily news while I am away".into()),
        wait: true,
        origin: None,
    }
}

fn check_mandate_ask(ask: &MandateAsk) -> Result<MandateRequest, Refusal> {
    let config = config();
    let enabled = config.categories.get(&ask.kind).is_some_and(|c| c.enabled);
    check_mandate(ask, &config.categories, enabled, &config.limits)
}

#[test]
fn a_good_mandate_request_becomes_its_terms() {
    let request = check_mandate_ask(&good_mandate()).expect("within every ceiling");
    assert_eq!(request.kind, "post_ok");
    assert_eq!(request.targets, ["@mila_news", "@mila_shop"]);
    assert_eq!((request.days, request.actions_per_day), (5, 20));
    assert_eq!(
        request.usd_per_day,
        Some(rust_decimal::Decimal::new(600, 2))
    );
}

#[test]
fn a_kind_with_no_target_or_no_cost_takes_a_mandate_without_them() {
    // A paid generation: no targets, bounded by the day's money and count.
    let mut any_use = good_mandate();
    any_use.kind = "untargeted".into();
    any_use.targets.clear();
    let request = check_mandate_ask(&any_use).expect("no targets for a kind with none");
    assert!(request.targets.is_empty());
    assert_eq!(
        request.usd_per_day,
        Some(rust_decimal::Decimal::new(600, 2))
    );
    // A kind that never costs: no money term, whether left out or given as zero.
    let mut free = good_mandate();
    free.kind = "bare".into();
    free.usd_per_day = None;
    let absent = check_mandate_ask(&free).expect("no money for a kind that never costs");
    assert_eq!(absent.usd_per_day, None);
    free.usd_per_day = Some("0.00".into());
    let zero = check_mandate_ask(&free).expect("zero is no money term");
    assert_eq!(zero, absent);
    assert_eq!(zero.digest(), absent.digest());
}

#[test]
fn each_mandate_rule_refuses_with_its_reason_and_names_the_term() {
    type Change = fn(&mut MandateAsk);
    let cases: &[(&str, Change, Reason, &str)] = &[
        (
            "unknown kind",
            |a| a.kind = "nope".into(),
            Reason::UnknownKind,
            "nope",
        ),
        (
            "category off",
            |a| a.kind = "post_off".into(),
            Reason::CategoryOff,
            "is off",
        ),
        (
            "kind not mandate_ok",
            |a| a.kind = "publish_x".into(),
            Reason::MandateTerms,
            "does not allow mandates",
        ),
        (
            "targets for a kind without a target",
            |a| a.kind = "untargeted".into(),
            Reason::MandateTerms,
            "targets: \"untargeted\" takes no target, so its mandate names none",
        ),
        (
            "money for a kind that never costs",
            |a| a.kind = "bare".into(),
            Reason::MandateTerms,
            "usd_per_day: 6.00 is given, but \"bare\" never costs money; \
             leave usd_per_day out or give \"0.00\"",
        ),
        (
            "no money for a kind that costs",
            |a| a.usd_per_day = None,
            Reason::MandateTerms,
            "usd_per_day: missing, and \"post_ok\" costs money, so a positive amount is required",
        ),
        (
            "destructive kind",
            |a| a.kind = "wipe".into(),
            Reason::MandateTerms,
            "destructive",
        ),
        (
            "no targets",
            |a| a.targets.clear(),
            Reason::MandateTerms,
            "targets: at least one named target is required, as \"post_ok\" takes a target",
        ),
        (
            "empty target",
            |a| a.targets[1] = String::new(),
            Reason::MandateTerms,
            "target 2 is empty",
        ),
        (
            "blank target",
            |a| a.targets[0] = "   ".into(),
            Reason::InvisibleCharacter,
            "field targets[0] is only spaces",
        ),
        (
            "star wildcard",
            |a| a.targets[0] = "@mila_*".into(),
            Reason::MandateTerms,
            "wildcard",
        ),
        (
            "percent wildcard",
            |a| a.targets[0] = "%".into(),
            Reason::MandateTerms,
            "wildcard",
        ),
        (
            "duplicate target",
            |a| a.targets[1] = "@mila_news".into(),
            Reason::MandateTerms,
            "named twice",
        ),
        (
            "zero days",
            |a| a.days = 0,
            Reason::MandateTerms,
            "days: 0 is under the minimum",
        ),
        (
            "days over the config's ceiling",
            |a| a.days = 6,
            Reason::MandateTerms,
            "days: 6 is over the ceiling of 5",
        ),
        (
            "days beyond u32",
            |a| a.days = u64::MAX,
            Reason::MandateTerms,
            "over the ceiling of 5",
        ),
        (
            "money over the ceiling",
            |a| a.usd_per_day = Some("6.01".into()),
            Reason::MandateTerms,
            "usd_per_day: 6.01 is over the ceiling of 6.00",
        ),
        (
            "zero money",
            |a| a.usd_per_day = Some("0.00".into()),
            Reason::MandateTerms,
            "must be more than 0",
        ),
        (
            "three decimals",
            |a| a.usd_per_day = Some("1.005".into()),
            Reason::BadRequest,
            "more than 2 decimal places",
        ),
        (
            "not an amount",
            |a| a.usd_per_day = Some("five".into()),
            Reason::BadRequest,
            "usd_per_day",
        ),
        (
            "negative amount",
            |a| a.usd_per_day = Some("-1.00".into()),
            Reason::BadRequest,
            "negative",
        ),
        (
            "zero actions",
            |a| a.actions_per_day = 0,
            Reason::MandateTerms,
            "actions_per_day: 0 is under the minimum",
        ),
        (
            "actions over the ceiling",
            |a| a.actions_per_day = 21,
            Reason::MandateTerms,
            "actions_per_day: 21 is over the ceiling of 20",
        ),
        (
            "invisible in a target",
            |a| a.targets[0] = "@mila\u{200B}news".into(),
            Reason::InvisibleCharacter,
            "targets[0]",
        ),
        (
            "line break in a target",
            |a| a.targets[1] = "@a\n@b".into(),
            Reason::InvisibleCharacter,
            "targets[1]",
        ),
        (
            "not NFC in a target",
            |a| a.targets[0] = "@cafe\u{301}".into(),
            Reason::NotNfc,
            "targets[0]",
        ),
        (
            "invisible in the reason",
            |a| a.reason = Some("why\u{2060}".into()),
            Reason::InvisibleCharacter,
            "reason",
        ),
        (
            "a target too long",
            |a| a.targets[0] = "x".repeat(MAX_TARGET_CHARS + 1),
            Reason::TooLarge,
            "targets[0]",
        ),
        (
            "too many targets",
            |a| {
                a.targets = (0..=MAX_MANDATE_TARGETS)
                    .map(|i| format!("@t{i}"))
                    .collect()
            },
            Reason::TooLarge,
            "targets",
        ),
    ];
    for (name, change, reason, needle) in cases {
        let mut ask = good_mandate();
        change(&mut ask);
        let refusal = check_mandate_ask(&ask).expect_err(name);
        assert_eq!(refusal.reason, *reason, "{name}: {}", refusal.message);
        assert!(
            refusal.message.contains(needle),
            "{name}: {:?} does not say {needle:?}",
            refusal.message
        );
    }
}

#[test]
fn the_mandate_digest_covers_every_term_and_only_the_terms() {
    let base = check_mandate_ask(&good_mandate()).unwrap();
    let digest = base.digest();
    // The same terms written another way are the same request.
    let mut same = good_mandate();
    same.usd_per_day = Some("6".into());
    same.wait = false;
    assert_eq!(check_mandate_ask(&same).unwrap().digest(), digest);
    type Change = fn(&mut MandateAsk);
    let changes: &[(&str, Change)] = &[
        ("kind", |a| a.kind = "bare".into()),
        ("a target", |a| a.targets[1] = "@mila_shop2".into()),
        ("the target order", |a| a.targets.reverse()),
        ("days", |a| a.days = 4),
        ("money", |a| a.usd_per_day = Some("5.99".into())),
        ("no money", |a| a.usd_per_day = None),
        ("no targets", |a| a.targets.clear()),
        ("actions", |a| a.actions_per_day = 19),
        ("the reason", |a| a.reason = Some("Another reason".into())),
        ("no reason", |a| a.reason = None),
    ];
    for (name, change) in changes {
        let mut ask = good_mandate();
        change(&mut ask);
        let request = MandateRequest {
            kind: ask.kind.clone(),
            targets: ask.targets.clone(),
            days: ask.days as u32,
            usd_per_day: ask
                .usd_per_day
                .as_deref()
                .map(|usd| config::parse_money(usd).unwrap()),
            actions_per_day: ask.actions_per_day as u32,
            reason: ask.reason.clone(),
            origin: None,
        };
        assert_ne!(
            request.digest(),
            digest,
            "changing {name} must change the digest"
        );
    }
}

/// `visible`, then an emoji whose tags hide [`SMUGGLED`].
fn smuggling(visible: &str) -> String {
    format!("{visible}😀{}\u{E007F}", tags(SMUGGLED))
}

/// What the refusal of [`smuggling`] says, for the first tag at `position` in `field`.
fn smuggled_message(field: &str, position: usize) -> String {
    format!(
        "U+E0049 TAG LATIN CAPITAL LETTER I in {field} at char {position}: tag characters after \
         U+1F600 spell \"{SMUGGLED}\""
    )
}

/// Checks an ask with room for a long text, so that the Unicode rules are what decides.
fn check_roomy(ask: &AskRequest) -> Result<Action, Refusal> {
    let mut config = config();
    config.limits.max_text_chars = 20_000;
    check_ask(ask, &config.categories, true, &config.limits)
}

#[test]
fn hidden_tags_are_refused_with_their_text_in_every_value_of_an_ask() {
    type Edit = fn(&mut AskRequest);
    let cases: &[(&str, Edit, String)] = &[
        (
            "text",
            |a| a.text = Some(smuggling("Great launch today ")),
            smuggled_message("text", 21),
        ),
        (
            "target",
            |a| a.target = Some(smuggling("@mila_news ")),
            smuggled_message("target", 13),
        ),
        (
            "field",
            |a| {
                a.fields
                    .insert("reply_to".into(), smuggling("https://example.org/1 "));
            },
            smuggled_message("field reply_to", 24),
        ),
        (
            "attachment name",
            |a| a.attachments[0].name = smuggling("cover.png "),
            smuggled_message("field attachments[0].name", 12),
        ),
        (
            "idempotency key",
            |a| a.idempotency_key = Some(smuggling("k-1 ")),
            smuggled_message("field idempotency_key", 6),
        ),
    ];
    for (label, edit, message) in cases {
        let mut ask = good();
        edit(&mut ask);
        let refusal = check_roomy(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(&refusal.message, message, "{label}");
    }
}

#[test]
fn hidden_tags_are_refused_with_their_text_in_a_mandates_targets_and_reason() {
    type Change = fn(&mut MandateAsk);
    let cases: &[(&str, Change, String)] = &[
        (
            "a target",
            |a| a.targets[1] = smuggling("@mila_shop "),
            smuggled_message("field targets[1]", 13),
        ),
        (
            "the reason",
            |a| a.reason = Some(smuggling("Daily news ")),
            smuggled_message("field reason", 13),
        ),
    ];
    for (label, change, message) in cases {
        let mut ask = good_mandate();
        change(&mut ask);
        let refusal = check_mandate_ask(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(&refusal.message, message, "{label}");
    }
}

#[test]
fn flags_joiners_and_variation_sequences_pass_in_every_value() {
    let scotland = "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
    let mut ask = good();
    ask.text = Some(format!("Go {scotland}!\nمی\u{200C}خواهم ශ\u{DCA}\u{200D}රී"));
    check(&ask).expect("a flag and joiners in the text");
    ask.text = Some("উদ\u{9CD}\u{200C}যাপন അവന\u{D4D}\u{200D} വന്നു".into());
    check(&ask).expect("Bengali and a Malayalam chillu in the text");
    ask.text = Some("Nguy\u{1EC5}n \u{5E9}\u{5B8}\u{5BC}\u{5C1}\u{5A3}".into());
    check(&ask).expect("Vietnamese and pointed Hebrew in the text");
    ask.target = Some(format!("@\u{845B}\u{E0100}飾 {scotland}"));
    ask.fields.insert(
        "reply_to".into(),
        "ക\u{D4D}\u{200C}ക \u{2229}\u{FE00}".into(),
    );
    ask.attachments[0].name = format!("{scotland} ಕ\u{CCD}\u{200D}ಷ.png");
    let action = check(&ask).expect("visible in every value");
    assert_eq!(action.target, ask.target);

    let mut mandate = good_mandate();
    mandate.targets[1] = format!("@{scotland}");
    mandate.reason = Some("र\u{94D}\u{200D}य while I am away".into());
    check_mandate_ask(&mandate).expect("visible targets and reason");
}

/// A flag-shaped tag run with `code`, which draws as a plain black flag unless Unicode
/// recommends it.
fn flag(code: &str) -> String {
    format!("🏴{}\u{E007F}", tags(code))
}

/// What the refusal of a [`flag`] Unicode does not recommend says.
fn unrecommended(field: &str, position: usize, first_tag: &str, code: &str) -> String {
    format!(
        "{first_tag} in {field} at char {position}: tag characters after U+1F3F4 spell \"{code}\", \
         which is not one of the recommended flags (gbeng, gbsct, gbwls: England, Scotland, Wales)"
    )
}

type Edit = fn(&mut AskRequest);
type Change = fn(&mut MandateAsk);

/// Each ask, `good()` changed by its edit, is refused `invisible_character` with its message.
#[track_caller]
fn assert_invisible(cases: &[(&str, Edit, String)]) {
    for (label, edit, message) in cases {
        let mut ask = good();
        edit(&mut ask);
        let refusal = check(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(&refusal.message, message, "{label}");
    }
}

/// Each mandate request, `good_mandate()` changed, is refused `invisible_character` with its
/// message.
#[track_caller]
fn assert_invisible_in_mandate(cases: &[(&str, Change, String)]) {
    for (label, change, message) in cases {
        let mut ask = good_mandate();
        change(&mut ask);
        let refusal = check_mandate_ask(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(&refusal.message, message, "{label}");
    }
}

#[test]
fn flags_unicode_does_not_recommend_are_refused_in_every_value() {
    assert_invisible(&[
        (
            "in the text",
            |a| a.text = Some(format!("Go {}", flag("ustx"))),
            unrecommended("text", 5, "U+E0075 TAG LATIN SMALL LETTER U", "ustx"),
        ),
        (
            "in the target",
            |a| a.target = Some(format!("@mila_news {}", flag("evil1"))),
            unrecommended("target", 13, "U+E0065 TAG LATIN SMALL LETTER E", "evil1"),
        ),
        (
            "in an attachment name",
            |a| a.attachments[0].name = format!("{}.png", flag("fr75")),
            unrecommended(
                "field attachments[0].name",
                2,
                "U+E0066 TAG LATIN SMALL LETTER F",
                "fr75",
            ),
        ),
        (
            "in the idempotency key",
            |a| a.idempotency_key = Some(format!("k-1{}", flag("ab1"))),
            unrecommended(
                "field idempotency_key",
                5,
                "U+E0061 TAG LATIN SMALL LETTER A",
                "ab1",
            ),
        ),
    ]);
    assert_invisible_in_mandate(&[(
        "in a mandate target",
        |a| a.targets[1] = format!("@mila_shop{}", flag("evil1")),
        unrecommended(
            "field targets[1]",
            12,
            "U+E0065 TAG LATIN SMALL LETTER E",
            "evil1",
        ),
    )]);
}

#[test]
fn blank_hieroglyphs_are_refused_in_every_value() {
    assert_invisible(&[
        (
            "at the end of the target",
            |a| a.target = Some("@mila_news\u{13441}".into()),
            "U+13441 EGYPTIAN HIEROGLYPH FULL BLANK in target at char 11".into(),
        ),
        (
            "as a line of the text",
            |a| a.text = Some("Hi\n\u{13442}\nthere".into()),
            "U+13442 EGYPTIAN HIEROGLYPH HALF BLANK in text at char 4".into(),
        ),
        (
            "at the start of a field",
            |a| {
                a.fields
                    .insert("reply_to".into(), "\u{13442}https://example.org/1".into());
            },
            "U+13442 EGYPTIAN HIEROGLYPH HALF BLANK in field reply_to at char 1".into(),
        ),
    ]);
    assert_invisible_in_mandate(&[(
        "as a mandate target",
        |a| a.targets[1] = "\u{13441}".into(),
        "U+13441 EGYPTIAN HIEROGLYPH FULL BLANK in field targets[1] at char 1".into(),
    )]);
}

#[test]
fn stacked_and_repeated_marks_are_refused_in_every_shown_value() {
    assert_invisible(&[
        (
            "six marks on a field's letter",
            |a| {
                a.fields.insert(
                    "reply_to".into(),
                    format!("x{}", "\u{301}\u{302}".repeat(3)),
                );
            },
            "field reply_to has 6 combining marks on one character at char 1; at most 4 are \
             allowed"
                .into(),
        ),
        (
            "seven marks on a text's letter",
            |a| a.text = Some("Hi\nx\u{300}\u{301}\u{302}\u{303}\u{304}\u{306}\u{30B}".into()),
            "text has 7 combining marks on one character at char 4; at most 6 are allowed".into(),
        ),
        (
            "the same mark twice in an attachment name",
            |a| a.attachments[0].name = "cafe\u{301}\u{301}.png".into(),
            "field attachments[0].name has U+0301 COMBINING ACUTE ACCENT twice in a row on one \
             character at char 4"
                .into(),
        ),
    ]);
    assert_invisible_in_mandate(&[(
        "in a mandate's reason",
        |a| a.reason = Some("Daily x\u{300}\u{301}\u{302}\u{303}\u{304}".into()),
        "field reason has 5 combining marks on one character at char 7; at most 4 are allowed"
            .into(),
    )]);
    // The key is never drawn: marks on it stack over nothing.
    let mut ask = good();
    ask.idempotency_key = Some("x\u{301}\u{301}".into());
    check(&ask).expect("an unshown key's marks are its own business");
}

#[test]
fn joiners_that_join_nothing_are_refused_in_every_value() {
    assert_invisible(&[
        (
            "after a virama, then a Latin letter",
            |a| a.text = Some("क\u{94D}\u{200D}a".into()),
            "U+200D ZERO WIDTH JOINER in text at char 3".into(),
        ),
        (
            "at the end of the target",
            |a| a.target = Some("नमस\u{94D}\u{200C}".into()),
            "U+200C ZERO WIDTH NON-JOINER in target at char 5".into(),
        ),
        (
            "between an Arabic and a Syriac letter in a field",
            |a| {
                a.fields
                    .insert("reply_to".into(), "ب\u{200C}\u{710}".into());
            },
            "U+200C ZERO WIDTH NON-JOINER in field reply_to at char 2".into(),
        ),
    ]);
    assert_invisible_in_mandate(&[(
        "on a Latin letter in a mandate's reason",
        |a| a.reason = Some("Daily a\u{94D}\u{200C}b".into()),
        "U+200C ZERO WIDTH NON-JOINER in field reason at char 9".into(),
    )]);
}

/// Telegram deletes three combining marks from the text of every message it is sent (TDLib's
/// `clean_input_string`, which the Bot API runs on a message's text and caption: U+030A COMBINING
/// RING ABOVE, U+0333 COMBINING DOUBLE LOW LINE, U+033F COMBINING DOUBLE OVERLINE). A value
/// holding one would reach the owner without it while the command gets it, so each is refused like
/// a scalar that does not show, in every value a card or a caption draws. A letter that holds its
/// ring precomposed (å, ů) is a letter Telegram keeps.
#[test]
fn marks_telegram_deletes_from_a_message_are_refused_in_every_shown_value() {
    assert_invisible(&[
        (
            "a double low line in the text",
            |a| a.text = Some("Great launch to\u{333}day".into()),
            "U+0333 COMBINING DOUBLE LOW LINE in text at char 16".into(),
        ),
        (
            "a double overline at the end of the target",
            |a| a.target = Some("@mila_news\u{33F}".into()),
            "U+033F COMBINING DOUBLE OVERLINE in target at char 11".into(),
        ),
        (
            "a ring above in a field",
            |a| {
                a.fields
                    .insert("reply_to".into(), "https://example.org/x\u{30A}".into());
            },
            "U+030A COMBINING RING ABOVE in field reply_to at char 22".into(),
        ),
        (
            "a double low line in an attachment name",
            |a| a.attachments[0].name = "cover\u{333}.png".into(),
            "U+0333 COMBINING DOUBLE LOW LINE in field attachments[0].name at char 6".into(),
        ),
    ]);
    assert_invisible_in_mandate(&[(
        "a double overline in a mandate target",
        |a| a.targets[1] = "@mila_shop\u{33F}".into(),
        "U+033F COMBINING DOUBLE OVERLINE in field targets[1] at char 11".into(),
    )]);
    let mut ask = good();
    ask.text = Some("\u{C5}ngstr\u{F6}m and \u{16F}".into());
    check(&ask).expect("letters with a precomposed ring are kept by Telegram");
}

/// Khmer writes a consonant below another with U+17D2 KHMER SIGN COENG; every coeng and
/// consonant after the first letter is drawn one step further down (Noto Sans Khmer through
/// HarfBuzz: 0.27 em a step), so a letter with twenty subscripts is a tower through the four
/// card lines under the value (the look-alike warning, the cost, the record id), as 240 marks
/// on one letter are. Each coeng is one mark on its own consonant, so the cap on stacked marks
/// never counts them. Khmer words stack at most two ("ស្ត្រី", "woman"); a stack far beyond that
/// draws over the card and is refused like stacked marks, in the target and in the text.
#[test]
fn subscript_consonants_stacked_far_below_a_letter_are_refused() {
    let tower = format!("\u{1780}{}", "\u{17D2}\u{1780}".repeat(20));
    let mut words = good();
    words.target = Some("@\u{179F}\u{17D2}\u{178F}\u{17D2}\u{179A}\u{17B8}".into());
    words.text = Some("\u{1780}\u{1798}\u{17D2}\u{1796}\u{17BB}\u{1787}\u{17B6}".into());
    check(&words).expect("Khmer words with two subscripts on a letter");
    let cases: &[(&str, AskRequest)] = &[
        (
            "a tower in the target",
            AskRequest {
                target: Some(format!("@{tower}")),
                ..good()
            },
        ),
        (
            "a tower in the text",
            AskRequest {
                text: Some(format!("Hi {tower}")),
                ..good()
            },
        ),
    ];
    for (label, ask) in cases {
        match check(ask) {
            Ok(_) => panic!("{label}: accepted, drawn over the card's lines below it"),
            Err(refusal) => {
                assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
            }
        }
    }
}

/// A long text is split on grapheme cluster boundaries, never inside one. A cluster can
/// be longer than a part message holds without a single mark stacked on a letter: pictographs
/// chained by ZWJ, skin tones after one pictograph, conjoining jamo, spacing vowel signs, prepended
/// letters. A text the gate lets through is one whose parts fall on cluster boundaries.
#[test]
fn a_text_the_gate_accepts_is_never_split_inside_a_grapheme_cluster() {
    use unicode_segmentation::UnicodeSegmentation;
    let cases: &[(&str, String)] = &[
        (
            "pictographs chained by zero width joiners",
            format!("Look {}", "\u{1F44D}\u{200D}".repeat(1400) + "\u{1F44D}"),
        ),
        (
            "skin tones after one pictograph",
            format!("Look \u{1F44D}{}", "\u{1F3FB}".repeat(2100)),
        ),
        (
            "conjoining jamo",
            format!("Note {}", "\u{1100}".repeat(4200)),
        ),
        (
            "spacing vowel signs",
            format!("Note \u{915}{}", "\u{93E}".repeat(4200)),
        ),
        (
            "prepended dot rephs",
            format!("Note {}\u{D15}", "\u{D4E}".repeat(4200)),
        ),
    ];
    let mut cut_inside = Vec::new();
    for (label, text) in cases {
        let ask = AskRequest {
            text: Some(text.clone()),
            ..good()
        };
        let Ok(action) = check_roomy(&ask) else {
            continue;
        };
        let text = action.text.expect("the text");
        let bounds: std::collections::BTreeSet<usize> = text
            .grapheme_indices(true)
            .map(|(at, _)| at)
            .chain([text.len()])
            .collect();
        let mut at = 0;
        for (index, piece) in crate::split::pieces(&text).iter().enumerate() {
            at += piece.len();
            if !bounds.contains(&at) {
                cut_inside.push(format!("{label} (part {})", index + 1));
                break;
            }
        }
    }
    assert!(
        cut_inside.is_empty(),
        "accepted, then split inside a grapheme cluster: {cut_inside:?}"
    );
}

#[test]
fn padded_values_and_blank_lines_are_refused_saying_where() {
    type Edit = fn(&mut AskRequest);
    let cases: &[(&str, Edit, &str)] = &[
        (
            "a text ending in a line break",
            |a| a.text = Some("Hello\n".into()),
            "text ends with a blank line (line 2); remove what follows line 1",
        ),
        (
            "a text of spaces and line breaks",
            |a| a.text = Some(" \n \n".into()),
            "text is only spaces and line breaks",
        ),
        (
            "a text starting with a blank line",
            |a| a.text = Some("\nHello".into()),
            "text starts with a blank line (line 1); remove what comes before line 2",
        ),
        (
            "three blank lines in a row",
            |a| a.text = Some("Hello\n\n\n\nworld".into()),
            "text has 3 blank lines in a row (lines 2 to 4); at most 2 are allowed",
        ),
        (
            "a target with a trailing space",
            |a| a.target = Some("@mila_news ".into()),
            "target has a trailing space",
        ),
        (
            "a target of spaces",
            |a| a.target = Some("  ".into()),
            "target is only spaces",
        ),
        (
            "a field with two spaces in a row",
            |a| {
                a.fields.insert("reply_to".into(), "Re:  launch".into());
            },
            "field reply_to has two spaces in a row at char 4",
        ),
        (
            "an attachment name with a leading space",
            |a| a.attachments[0].name = " cover.png".into(),
            "field attachments[0].name has a leading space",
        ),
    ];
    for (label, edit, message) in cases {
        let mut ask = good();
        edit(&mut ask);
        let refusal = check(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(refusal.message, *message, "{label}");
    }

    // The card never shows the key: its spaces are its own business.
    let mut ask = good();
    ask.idempotency_key = Some(" k  1 ".into());
    check(&ask).expect("an unshown key keeps its spaces");

    type Change = fn(&mut MandateAsk);
    let cases: &[(&str, Change, &str)] = &[
        (
            "a doubled space in a target",
            |a| a.targets[1] = "@mila  shop".into(),
            "field targets[1] has two spaces in a row at char 6",
        ),
        (
            "a reason with a trailing space",
            |a| a.reason = Some("Daily news ".into()),
            "field reason has a trailing space",
        ),
    ];
    for (label, change, message) in cases {
        let mut ask = good_mandate();
        change(&mut ask);
        let refusal = check_mandate_ask(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert_eq!(refusal.message, *message, "{label}");
    }
}

#[test]
fn a_mandate_naming_two_look_alike_targets_is_refused() {
    let with = |targets: &[&str]| {
        let mut ask = good_mandate();
        ask.targets = targets.iter().map(|t| (*t).to_owned()).collect();
        check_mandate_ask(&ask)
    };
    let refused = |targets: &[&str]| with(targets).expect_err("look-alike targets");
    let cyrillic_i = refused(&["@mila_news", "@m\u{456}la_news"]);
    assert_eq!(cyrillic_i.reason, Reason::MandateTerms);
    assert_eq!(
        cyrillic_i.message,
        "targets[0] \"@mila_news\" and targets[1] \"@m\u{456}la_news\" look alike (one UTS #39 \
         skeleton) but differ at char 3: U+0069 LATIN SMALL LETTER I in the first, U+0456 \
         CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I in the second"
    );
    let rn = refused(&["@a", "@rnila_news", "@b", "@mila_news"]);
    assert_eq!(rn.reason, Reason::MandateTerms);
    assert!(
        rn.message
            .starts_with("targets[1] \"@rnila_news\" and targets[3] \"@mila_news\" look alike"),
        "{}",
        rn.message
    );
    let all_cyrillic = refused(&["@scope", "@\u{455}\u{441}\u{43E}\u{440}\u{435}"]);
    assert_eq!(all_cyrillic.reason, Reason::MandateTerms);
    assert!(with(&["@mila_news", "@mila_shop"]).is_ok());
    // A target that mixes scripts alone is for its card to mark, not a refusal.
    assert!(with(&["@m\u{456}la_news"]).is_ok());
}

#[test]
fn an_asks_ttl_is_bounded_by_ten_seconds_and_the_cards_ttl() {
    let config = config();
    let most = config.limits.card_ttl.as_secs();
    for (ttl, ok) in [
        (10, true),
        (60, true),
        (most, true),
        (9, false),
        (0, false),
        (most + 1, false),
    ] {
        let ask = AskRequest {
            ttl: Some(ttl),
            ..good()
        };
        match check(&ask) {
            Ok(_) => assert!(ok, "ttl {ttl} passed"),
            Err(refusal) => {
                assert!(!ok, "ttl {ttl}: {refusal:?}");
                assert_eq!(refusal.reason, Reason::BadRequest);
                assert!(
                    refusal.message.contains(&format!("ttl {ttl}"))
                        && refusal
                            .message
                            .contains(&format!("from 10 to {most} seconds")),
                    "{}",
                    refusal.message
                );
            }
        }
    }
}

#[test]
fn an_origin_meets_every_visible_text_rule_naming_origin() {
    let with = |origin: &str| AskRequest {
        origin: Some(origin.to_owned()),
        ..good()
    };
    let action = check(&with("Claude Code · ~/src/blog")).unwrap();
    assert_eq!(action.origin.as_deref(), Some("Claude Code · ~/src/blog"));
    assert_ne!(action.digest(), check(&good()).unwrap().digest());
    let cases: &[(&str, Reason, &str)] = &[
        ("", Reason::BadRequest, "origin is empty"),
        ("a\u{200B}b", Reason::InvisibleCharacter, "field origin"),
        ("two\nlines", Reason::InvisibleCharacter, "field origin"),
        ("e\u{301}", Reason::NotNfc, "origin"),
        (" padded", Reason::InvisibleCharacter, "origin"),
        ("tag\u{E0041}", Reason::InvisibleCharacter, "field origin"),
    ];
    for (origin, reason, needle) in cases {
        let refusal = check(&with(origin)).expect_err(origin);
        assert_eq!(refusal.reason, *reason, "{origin:?}: {}", refusal.message);
        assert!(
            refusal.message.contains(needle),
            "{origin:?}: {}",
            refusal.message
        );
    }
    let long = "x".repeat(MAX_ORIGIN_CHARS + 1);
    let refusal = check(&with(&long)).unwrap_err();
    assert_eq!(refusal.reason, Reason::TooLarge);
    assert!(refusal.message.contains("origin"), "{}", refusal.message);
    assert!(check(&with(&"x".repeat(MAX_ORIGIN_CHARS))).is_ok());
}

/// A refusal names the character it is about (docs/PROTOCOL.md, "Refusals": the message says "what
/// is wrong and
/// where"). The marks new in Unicode 18.0, which the gate judges by `icu_properties` 2.4, have
/// names, but not in `unicode_names2` 4.0 (Unicode 17.0): the repeated-mark message then calls
/// the mark `<unnamed>`, a label the gate keeps for code points with no name (controls, private
/// use). The look-alike lines show such a character by its number alone (`lookalike::describe`).
#[test]
fn a_repeated_mark_new_in_unicode_18_is_not_called_unnamed() {
    let cases = [
        ("a Hebrew mark on alef", "\u{5D0}\u{5C8}\u{5C8}", '\u{5C8}'),
        ("an Oriya sign on ka", "\u{B15}\u{B53}\u{B53}", '\u{B53}'),
        ("a combining mark on e", "e\u{1ADE}\u{1ADE}", '\u{1ADE}'),
    ];
    for (label, word, mark) in cases {
        let mut ask = good();
        ask.text = Some(format!("Hi {word}"));
        let refusal = check(&ask).expect_err(label);
        assert_eq!(refusal.reason, Reason::InvisibleCharacter, "{label}");
        assert!(
            refusal
                .message
                .starts_with(&format!("text has U+{:04X} ", u32::from(mark)))
                && refusal
                    .message
                    .ends_with("twice in a row on one character at char 4"),
            "{label}: {}",
            refusal.message
        );
        assert!(
            !refusal.message.contains("<unnamed>"),
            "{label}: a named Unicode 18.0 mark is called unnamed: {}",
            refusal.message
        );
    }
}

#[test]
fn a_hook_is_refused_for_a_category_that_runs_its_command() {
    let ask = AskRequest {
        hook: Some(crate::exact::HookCall {
            agent: "codex".into(),
            tool: "Bash".into(),
            cwd: "/home/u".into(),
        }),
        ..good()
    };
    let refusal = check(&ask).unwrap_err();
    assert_eq!(refusal.reason, Reason::FieldNotShown, "{}", refusal.message);
    assert!(
        refusal.message.contains("category publish_x"),
        "{}",
        refusal.message
    );
}

/// A request's own origin may not pass for a labelled socket's: not the label itself, a
/// look-alike of it, nor the label at its start (where a card shows the label). Each case on its
/// own.
#[test]
fn an_origin_that_could_pass_for_a_sockets_label_is_refused() {
    let labels = ["devbox", "ci runner"];
    // (case, origin, refused)
    let cases: [(&str, &str, bool); 11] = [
        ("the label itself", "devbox", true),
        ("the label in capitals", "DevBox", true),
        ("a Cyrillic е in the label", "d\u{0435}vbox", true),
        ("a combining mark on the label", "devbo\u{0301}x", true),
        ("the label, then more", "devbox CI", true),
        ("the label and the card's separator", "devbox · CI", true),
        (
            "a client's own separator",
            "Claude Code · ~/src/blog",
            false,
        ),
        ("another label's look-alike", "ci runn\u{0435}r", true),
        ("a name of its own", "Claude Code", false),
        ("the label inside, not first", "my devbox", false),
        ("a path with dots", "~/src/blog.example.org", false),
    ];
    for (case, origin, refused) in cases {
        let verdict = check_origin_against_labels(Some(origin), labels);
        assert_eq!(
            verdict.is_err(),
            refused,
            "{case}: {origin:?} gave {verdict:?}"
        );
        if let Err(refusal) = verdict {
            assert_eq!(refusal.reason, Reason::BadRequest, "{case}");
        }
    }
    assert!(check_origin_against_labels(None, labels).is_ok());
    // With no labelled socket, nothing is refused.
    assert!(check_origin_against_labels(Some("devbox"), []).is_ok());
}
