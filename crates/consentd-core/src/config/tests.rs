//! The walk's cases: each config problem under its key and in its words.

use super::*;

/// The smallest valid config; every case starts from it.
const BASE: &str = r#"
[paths]
state_dir = "/var/lib/consentd"
"#;

/// A valid category that category cases override key by key.
const CATEGORY: &str = r#"
[categories.publish_x]
label = { en = "Post to X" }
class = "external"
command = ["/usr/lib/consentd/publish-x"]
"#;

/// Merges `over` into `base`: sections and categories merge key by key,
/// anything deeper is replaced whole (so a case can replace a label table).
fn merge(base: &mut Table, over: Table, depth: usize) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) if depth < 2 => merge(b, o, depth + 1),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn table_of(parts: &[&str]) -> Table {
    let mut table = Table::new();
    for part in parts {
        let t: Table = part.parse().expect("test snippet is valid TOML");
        merge(&mut table, t, 0);
    }
    table
}

fn problems_of(parts: &[&str]) -> Vec<ConfigProblem> {
    match validate(&table_of(parts), &mut no_more_checks) {
        Ok(c) => panic!("expected problems, got a valid config: {c:?}"),
        Err(p) => p,
    }
}

fn assert_problem(problems: &[ConfigProblem], key: &str, substring: &str) {
    assert!(
        problems
            .iter()
            .any(|p| p.key == key && p.message.contains(substring)),
        "no problem at {key:?} containing {substring:?}; got:\n{}",
        render_problems(problems)
    );
}

/// BASE plus `snippet` must fail with a problem at exactly `key` whose
/// message contains `substring`.
fn check_problem(snippet: &str, key: &str, substring: &str) {
    assert_problem(&problems_of(&[BASE, snippet]), key, substring);
}

/// Like `check_problem`, but `overrides` are keys of the valid category.
fn check_category_problem(overrides: &str, key: &str, substring: &str) {
    let snippet = format!("[categories.publish_x]\n{overrides}");
    assert_problem(&problems_of(&[BASE, CATEGORY, &snippet]), key, substring);
}

fn check_ok(snippet: &str) -> Config {
    validate(&table_of(&[BASE, snippet]), &mut no_more_checks)
        .unwrap_or_else(|p| panic!("expected valid, got:\n{}", render_problems(&p)))
}

fn category_ok(overrides: &str) -> Category {
    let snippet = format!("[categories.publish_x]\n{overrides}");
    let config = validate(&table_of(&[BASE, CATEGORY, &snippet]), &mut no_more_checks)
        .unwrap_or_else(|p| panic!("expected valid, got:\n{}", render_problems(&p)));
    config.categories["publish_x"].clone()
}

fn parse_err(text: &str) -> Vec<ConfigProblem> {
    match parse(text, "test.toml") {
        Err(ConfigError::Invalid { origin, problems }) => {
            assert_eq!(origin, "test.toml");
            problems
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

// --- the example file, defaults, and the error shape ---

#[test]
fn example_config_parses_and_summarizes() {
    let config =
        parse(include_str!("../../../../config.toml"), "config.toml").expect("example is valid");
    // A real action out of the box: the bot posts to the owner's channel itself.
    let post = &config.categories["channel_post"];
    assert!(post.enabled);
    assert!(post.mandate_ok);
    assert_eq!(post.class, Class::External);
    assert_eq!(post.cost, Cost::None);
    assert_eq!(post.action, Some(BuiltIn::TelegramPost));
    assert_eq!(post.target, Presence::Required);
    assert_eq!(post.label(Language::Ru), "Пост в канал");
    let hook = &config.categories["notify_team"];
    assert!(!hook.enabled);
    assert_eq!(hook.fields, ["channel"]);
    assert_eq!(hook.field_label("channel", Language::En), "Channel");
    assert_eq!(
        hook.action,
        Some(BuiltIn::Http(HttpAction {
            url: "https://hooks.example.org/consentd".into(),
            method: HttpMethod::Post,
            headers_file: Some("/etc/consentd/notify-team.headers".into()),
        }))
    );
    assert_eq!(config.paths.state_dir, Path::new("/var/lib/consentd"));
    assert_eq!(config.paths.socket, Path::new("/run/consentd/consent.sock"));
    let zernio = &config.categories["publish_zernio"];
    assert!(!zernio.enabled);
    assert_eq!(
        zernio.env_file.as_deref(),
        Some(Path::new("/etc/consentd/publish-zernio.env"))
    );
    assert_eq!(
        config.summary(),
        "ok: 3 categories (1 on), owner not paired yet, timezone UTC, quiet hours 23:00-08:00"
    );
}

#[test]
fn example_limits_equal_the_defaults() {
    let config =
        parse(include_str!("../../../../config.toml"), "config.toml").expect("example is valid");
    let (a, b) = (config.limits, Limits::default());
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn defaults_fill_every_optional_key() {
    let c = check_ok("");
    assert_eq!(c.owner.telegram_id, None);
    assert_eq!(c.owner.language, None);
    assert_eq!(c.owner.timezone, Tz::UTC);
    assert_eq!(c.telegram.token_file, None);
    assert_eq!(c.telegram.api_url, "https://api.telegram.org");
    assert_eq!(
        c.paths.journal,
        Path::new("/var/lib/consentd/decisions.jsonl")
    );
    assert_eq!(c.paths.socket, Path::new("/run/consentd/consent.sock"));
    assert!(c.client.allowed_uids.is_empty());
    let l = c.limits;
    assert_eq!(l.card_ttl, secs(900));
    assert_eq!(l.decline_memory, secs(86_400));
    assert_eq!(l.decline_streak, 3);
    assert_eq!(l.mandate_max_days, 7);
    assert_eq!(l.mandate_max_usd_per_day, Decimal::new(10, 0));
    assert_eq!(l.mandate_max_actions_per_day, 100);
    assert_eq!(l.max_pending, 20);
    assert_eq!(l.max_text_chars, 20_000);
    assert_eq!(l.max_attachments, 4);
    assert_eq!(l.max_attachment_bytes, 20_971_520);
    assert_eq!(l.max_request_bytes, 33_554_432);
    assert_eq!(l.decline_reason_wait, secs(60));
    assert_eq!(c.gate.quiet_hours, Some((hm(23, 0), hm(8, 0))));
    assert_eq!(c.gate.night_card_limit, 2);
    assert_eq!(c.gate.summary_at, hm(21, 0));
    assert_eq!(c.gate.receipts, Receipts::Each);
    assert!(c.categories.is_empty());
}

#[test]
fn category_defaults() {
    let cat = category_ok("");
    assert_eq!(cat.name, "publish_x");
    assert!(!cat.enabled);
    assert!(!cat.mandate_ok);
    assert_eq!(cat.target, Presence::None);
    assert_eq!(cat.text, Presence::None);
    assert!(cat.fields.is_empty());
    assert!(cat.field_labels.is_empty());
    assert_eq!(cat.attachments, 0);
    assert_eq!(cat.cost, Cost::None);
    assert_eq!(cat.run_as, None);
    assert_eq!(cat.env_file, None);
    assert_eq!(cat.timeout, secs(60));
}

#[test]
fn no_categories_is_valid_and_summary_says_zero() {
    let c = parse(BASE, "x").expect("valid");
    assert_eq!(
        c.summary(),
        "ok: 0 categories (0 on), owner not paired yet, timezone UTC, quiet hours 23:00-08:00"
    );
}

#[test]
fn summary_counts_enabled_and_names_owner() {
    let c = check_ok(
        r#"
[owner]
telegram_id = 123456789
timezone = "Europe/Moscow"
[gate]
quiet_hours = "off"
[categories.a]
label = { en = "A" }
class = "external"
enabled = true
command = ["/bin/true"]
[categories.b]
label = { en = "B" }
class = "spend"
command = ["/bin/true"]
[categories.c]
label = { en = "C" }
class = "destructive"
command = ["/bin/true"]
"#,
    );
    assert_eq!(
        c.summary(),
        "ok: 3 categories (1 on), owner 123456789, timezone Europe/Moscow, quiet hours off"
    );
}

#[test]
fn several_problems_are_all_reported() {
    let problems = parse_err(
        r#"
[owner]
tiemzone = "UTC"
[paths]
state_dir = "relative/dir"
[limits]
card_ttl = "20m"
"#,
    );
    assert_eq!(problems.len(), 3, "{}", render_problems(&problems));
    assert_problem(&problems, "owner.tiemzone", "unknown key");
    assert_problem(
        &problems,
        "paths.state_dir",
        "must be an absolute path, got \"relative/dir\"",
    );
    assert_problem(
        &problems,
        "limits.card_ttl",
        "20m is over the ceiling of 15m",
    );
}

#[test]
fn invalid_error_lists_every_problem_under_origin() {
    let err = parse(
        "[owner]\nlanguage = \"de\"\nbogus = 1\n[paths]\nstate_dir = \"/s\"\n",
        "/etc/c.toml",
    )
    .expect_err("invalid");
    let text = err.to_string();
    assert!(text.starts_with("2 problem(s) in /etc/c.toml:\n"), "{text}");
    assert!(
        text.contains("\n  owner.bogus: unknown key (allowed: telegram_id, language, timezone)"),
        "{text}"
    );
    assert!(
        text.contains("\n  owner.language: \"de\" is not a supported language; use en, ru or pt"),
        "{text}"
    );
}

#[test]
fn problem_display_is_key_colon_message() {
    let p = ConfigProblem {
        key: "limits.card_ttl".into(),
        message: "20m is over the ceiling of 15m".into(),
    };
    assert_eq!(
        p.to_string(),
        "limits.card_ttl: 20m is over the ceiling of 15m"
    );
}

#[test]
fn messages_have_no_trailing_period() {
    let problems = parse_err(
        r#"
bogus = 1
[owner]
telegram_id = 0
language = "de"
timezone = "Mars/Base"
[paths]
state_dir = "x"
[limits]
card_ttl = "15"
mandate_max_usd_per_day = "10.001"
[categories.wipe]
label = { ru = "" }
class = "destructive"
mandate_ok = true
command = ["rm"]
"#,
    );
    assert!(problems.len() >= 9, "{}", render_problems(&problems));
    for p in &problems {
        assert!(!p.message.ends_with('.'), "{p}");
    }
}

// --- syntax ---

#[test]
fn syntax_error_is_one_problem_with_line_column_and_key() {
    let problems = parse_err("[paths]\nstate_dir = \"/s\"\n[owner]\ntimezone = Europe/Moscow\n");
    assert_eq!(problems.len(), 1, "{}", render_problems(&problems));
    assert_eq!(problems[0].key, "owner.timezone");
    assert!(
        problems[0]
            .message
            .starts_with("invalid TOML at line 4, column 12: "),
        "{}",
        problems[0]
    );
}

#[test]
fn syntax_error_duplicate_key_names_the_key() {
    let problems = parse_err("[limits]\ncard_ttl = \"1m\"\ncard_ttl = \"2m\"\n");
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].key, "limits.card_ttl");
    assert!(
        problems[0].message.contains("line 3, column 1"),
        "{}",
        problems[0]
    );
    assert!(
        problems[0].message.contains("duplicate key"),
        "{}",
        problems[0]
    );
}

#[test]
fn syntax_error_without_a_key_line_has_an_empty_key() {
    let problems = parse_err("[client]\nallowed_uids = [1,\n2,\n");
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].key, "");
    assert!(
        problems[0]
            .to_string()
            .starts_with("invalid TOML at line 3"),
        "{}",
        problems[0]
    );
}

#[test]
fn line_column_counts_characters() {
    assert_eq!(line_column("ab\nпр x", 8), (2, 4));
    assert_eq!(line_column("", 0), (1, 1));
}

// --- top level and types ---

#[test]
fn unknown_top_level_key() {
    check_problem("[ownr]\ntelegram_id = 1\n", "ownr", "unknown key");
}

#[test]
fn section_of_the_wrong_type() {
    check_problem("owner = 5\n", "owner", "expected a table, got an integer");
}

#[test]
fn unquoted_time_is_a_type_error_with_a_hint() {
    check_problem(
        "[gate]\nsummary_at = 21:00:00\n",
        "gate.summary_at",
        "put it in quotes",
    );
}

// --- owner ---

#[test]
fn owner_unknown_key() {
    check_problem(
        "[owner]\ntiemzone = \"UTC\"\n",
        "owner.tiemzone",
        "unknown key",
    );
}

#[test]
fn owner_telegram_id_must_be_positive() {
    check_problem(
        "[owner]\ntelegram_id = 0\n",
        "owner.telegram_id",
        "positive integer",
    );
    check_problem(
        "[owner]\ntelegram_id = -5\n",
        "owner.telegram_id",
        "positive integer",
    );
    check_problem(
        "[owner]\ntelegram_id = \"123\"\n",
        "owner.telegram_id",
        "expected a positive integer",
    );
    assert_eq!(
        check_ok("[owner]\ntelegram_id = 123456789\n")
            .owner
            .telegram_id,
        Some(123_456_789)
    );
}

#[test]
fn owner_language_is_en_ru_or_pt() {
    check_problem(
        "[owner]\nlanguage = \"de\"\n",
        "owner.language",
        "use en, ru or pt",
    );
    check_problem(
        "[owner]\nlanguage = \"EN\"\n",
        "owner.language",
        "use en, ru or pt",
    );
    assert_eq!(
        check_ok("[owner]\nlanguage = \"pt\"\n").owner.language,
        Some(Language::Pt)
    );
}

#[test]
fn owner_timezone_is_iana() {
    check_problem(
        "[owner]\ntimezone = \"Mars/Base\"\n",
        "owner.timezone",
        "\"Mars/Base\" is not an IANA time zone",
    );
    check_problem("[owner]\ntimezone = \"+03:00\"\n", "owner.timezone", "IANA");
    let tz = check_ok("[owner]\ntimezone = \"America/Sao_Paulo\"\n")
        .owner
        .timezone;
    assert_eq!(tz.name(), "America/Sao_Paulo");
}

// --- telegram ---

#[test]
fn telegram_unknown_key() {
    check_problem(
        "[telegram]\ntoken = \"x\"\n",
        "telegram.token",
        "unknown key",
    );
}

#[test]
fn telegram_token_file_is_absolute() {
    check_problem(
        "[telegram]\ntoken_file = \"bot-token\"\n",
        "telegram.token_file",
        "must be an absolute path, got \"bot-token\"",
    );
    let c = check_ok("[telegram]\ntoken_file = \"/etc/consentd/bot-token\"\n");
    assert_eq!(
        c.telegram.token_file.as_deref(),
        Some(Path::new("/etc/consentd/bot-token"))
    );
}

#[test]
fn telegram_api_url_is_http_or_https() {
    check_problem(
        "[telegram]\napi_url = \"ftp://x\"\n",
        "telegram.api_url",
        "http:// or https://",
    );
    check_problem(
        "[telegram]\napi_url = \"api.telegram.org\"\n",
        "telegram.api_url",
        "http:// or https://",
    );
    check_problem(
        "[telegram]\napi_url = \"https://\"\n",
        "telegram.api_url",
        "has no host",
    );
    check_problem(
        "[telegram]\napi_url = \"http://a b\"\n",
        "telegram.api_url",
        "spaces",
    );
    let c = check_ok("[telegram]\napi_url = \"http://127.0.0.1:8081/\"\n");
    assert_eq!(c.telegram.api_url, "http://127.0.0.1:8081");
}

// --- paths ---

#[test]
fn paths_unknown_key() {
    check_problem(
        "[paths]\ndatabase = \"/x\"\n",
        "paths.database",
        "unknown key",
    );
}

#[test]
fn paths_state_dir_is_required() {
    assert_problem(&parse_err(""), "paths.state_dir", "required");
    assert_problem(
        &parse_err("[paths]\nsocket = \"/s\"\n"),
        "paths.state_dir",
        "required",
    );
}

#[test]
fn paths_are_absolute() {
    check_problem(
        "[paths]\nstate_dir = \"state\"\n",
        "paths.state_dir",
        "absolute path",
    );
    check_problem(
        "[paths]\njournal = \"d.jsonl\"\n",
        "paths.journal",
        "absolute path",
    );
    check_problem(
        "[paths]\nsocket = \"./c.sock\"\n",
        "paths.socket",
        "absolute path",
    );
    check_problem(
        "[paths]\nsocket = 5\n",
        "paths.socket",
        "expected a string with an absolute path",
    );
}

#[test]
fn journal_defaults_under_state_dir_and_paths_can_be_set() {
    let c = check_ok("[paths]\nstate_dir = \"/srv/c\"\n");
    assert_eq!(c.paths.journal, Path::new("/srv/c/decisions.jsonl"));
    let c = check_ok("[paths]\njournal = \"/log/j.jsonl\"\nsocket = \"/tmp/s.sock\"\n");
    assert_eq!(c.paths.journal, Path::new("/log/j.jsonl"));
    assert_eq!(c.paths.socket, Path::new("/tmp/s.sock"));
}

// --- client ---

#[test]
fn client_unknown_key() {
    check_problem(
        "[client]\nallowed_gids = [1]\n",
        "client.allowed_gids",
        "unknown key",
    );
}

#[test]
fn client_uids_fit_u32() {
    check_problem(
        "[client]\nallowed_uids = [1000, -1]\n",
        "client.allowed_uids",
        "allowed_uids[1] is -1",
    );
    check_problem(
        "[client]\nallowed_uids = [4294967296]\n",
        "client.allowed_uids",
        "from 0 to 4294967295",
    );
    check_problem(
        "[client]\nallowed_uids = [\"1000\"]\n",
        "client.allowed_uids",
        "expected an integer uid",
    );
    check_problem(
        "[client]\nallowed_uids = 1000\n",
        "client.allowed_uids",
        "expected an array",
    );
    let c = check_ok("[client]\nallowed_uids = [0, 1000, 4294967295]\n");
    assert_eq!(c.client.allowed_uids, [0, 1000, u32::MAX]);
}

#[test]
fn client_uids_have_no_duplicates() {
    check_problem(
        "[client]\nallowed_uids = [1000, 1001, 1000]\n",
        "client.allowed_uids",
        "uid 1000 is listed more than once",
    );
}

// --- durations and money ---

#[test]
fn parse_duration_accepts_strict_forms() {
    assert_eq!(parse_duration("1s"), Ok(secs(1)));
    assert_eq!(parse_duration("90s"), Ok(secs(90)));
    assert_eq!(parse_duration("15m"), Ok(secs(900)));
    assert_eq!(parse_duration("24h"), Ok(secs(86_400)));
}

#[test]
fn parse_duration_refuses_everything_else() {
    let cases = [
        ("", "empty"),
        ("0m", "is zero"),
        ("0", "needs a unit"),
        ("-5m", "negative"),
        ("1.5h", "whole number"),
        ("15 m", "spaces"),
        (" 15m", "spaces"),
        ("15", "\"15\" needs a unit (s, m or h), like \"15m\""),
        ("15d", "unknown unit \"d\""),
        ("15ms", "unknown unit \"ms\""),
        ("15M", "unknown unit \"M\""),
        ("1m30s", "unknown unit"),
        ("m", "not a duration"),
        ("015m", "leading zero"),
        ("99999999999999999999h", "too long"),
        ("9999999999999999999h", "too long"),
    ];
    for (input, expected) in cases {
        let err = parse_duration(input).expect_err(input);
        assert!(err.contains(expected), "{input:?}: {err}");
        assert!(!err.ends_with('.'), "{err}");
    }
}

#[test]
fn parse_money_accepts_strict_forms() {
    assert_eq!(parse_money("0"), Ok(Decimal::ZERO));
    assert_eq!(parse_money("0.04"), Ok(Decimal::new(4, 2)));
    assert_eq!(parse_money("1.5"), Ok(Decimal::new(15, 1)));
    assert_eq!(parse_money("10"), Ok(Decimal::new(10, 0)));
    assert_eq!(parse_money("10.00"), Ok(Decimal::new(1000, 2)));
}

#[test]
fn parse_money_refuses_everything_else() {
    let cases = [
        ("", "empty"),
        ("10.001", "\"10.001\" has more than 2 decimal places"),
        ("-1", "negative"),
        ("01", "leading zero"),
        ("00.5", "leading zero"),
        ("1.", "digits after the point"),
        (".5", "digit before the point"),
        ("$5", "not an amount"),
        ("1e3", "not an amount"),
        ("1,00", "not an amount"),
        (" 1", "not an amount"),
        ("1.2.3", "not an amount"),
        ("99999999999999999999999999999999", "too large"),
    ];
    for (input, expected) in cases {
        let err = parse_money(input).expect_err(input);
        assert!(err.contains(expected), "{input:?}: {err}");
    }
}

// --- limits ---

#[test]
fn limits_unknown_key() {
    check_problem(
        "[limits]\nmax_pendng = 5\n",
        "limits.max_pendng",
        "unknown key",
    );
}

#[test]
fn limits_card_ttl_ceiling_and_minimum() {
    check_problem(
        "[limits]\ncard_ttl = \"20m\"\n",
        "limits.card_ttl",
        "20m is over the ceiling of 15m",
    );
    check_problem(
        "[limits]\ncard_ttl = \"901s\"\n",
        "limits.card_ttl",
        "901s is over the ceiling of 15m",
    );
    check_problem(
        "[limits]\ncard_ttl = \"59s\"\n",
        "limits.card_ttl",
        "59s is under the minimum of 1m",
    );
    assert_eq!(
        check_ok("[limits]\ncard_ttl = \"15m\"\n").limits.card_ttl,
        secs(900)
    );
    assert_eq!(
        check_ok("[limits]\ncard_ttl = \"900s\"\n").limits.card_ttl,
        secs(900)
    );
    assert_eq!(
        check_ok("[limits]\ncard_ttl = \"1m\"\n").limits.card_ttl,
        secs(60)
    );
}

#[test]
fn limits_card_ttl_syntax_and_type() {
    check_problem(
        "[limits]\ncard_ttl = \"15\"\n",
        "limits.card_ttl",
        "\"15\" needs a unit (s, m or h), like \"15m\"",
    );
    check_problem(
        "[limits]\ncard_ttl = 15\n",
        "limits.card_ttl",
        "expected a string with a unit",
    );
}

#[test]
fn limits_decline_memory_floor() {
    check_problem(
        "[limits]\ndecline_memory = \"12h\"\n",
        "limits.decline_memory",
        "12h is under the floor of 24h",
    );
    check_problem(
        "[limits]\ndecline_memory = \"86399s\"\n",
        "limits.decline_memory",
        "under the floor of 24h",
    );
    assert_eq!(
        check_ok("[limits]\ndecline_memory = \"24h\"\n")
            .limits
            .decline_memory,
        secs(86_400)
    );
    assert_eq!(
        check_ok("[limits]\ndecline_memory = \"72h\"\n")
            .limits
            .decline_memory,
        secs(259_200)
    );
}

#[test]
fn limits_decline_streak_bounds() {
    check_problem(
        "[limits]\ndecline_streak = 4\n",
        "limits.decline_streak",
        "4 is over the ceiling of 3",
    );
    check_problem(
        "[limits]\ndecline_streak = 0\n",
        "limits.decline_streak",
        "0 is under the minimum of 1",
    );
    check_problem(
        "[limits]\ndecline_streak = \"3\"\n",
        "limits.decline_streak",
        "expected an integer",
    );
    assert_eq!(
        check_ok("[limits]\ndecline_streak = 1\n")
            .limits
            .decline_streak,
        1
    );
}

#[test]
fn limits_mandate_max_days_bounds() {
    check_problem(
        "[limits]\nmandate_max_days = 8\n",
        "limits.mandate_max_days",
        "over the ceiling of 7",
    );
    check_problem(
        "[limits]\nmandate_max_days = 0\n",
        "limits.mandate_max_days",
        "under the minimum of 1",
    );
    assert_eq!(
        check_ok("[limits]\nmandate_max_days = 7\n")
            .limits
            .mandate_max_days,
        7
    );
}

#[test]
fn limits_mandate_max_usd_per_day_ceiling_and_syntax() {
    let key = "limits.mandate_max_usd_per_day";
    check_problem(
        "[limits]\nmandate_max_usd_per_day = \"10.01\"\n",
        key,
        "10.01 is over the ceiling of 10.00",
    );
    check_problem(
        "[limits]\nmandate_max_usd_per_day = \"11\"\n",
        key,
        "over the ceiling of 10.00",
    );
    check_problem(
        "[limits]\nmandate_max_usd_per_day = \"10.001\"\n",
        key,
        "\"10.001\" has more than 2 decimal places",
    );
    check_problem(
        "[limits]\nmandate_max_usd_per_day = 10.0\n",
        key,
        "expected a string amount",
    );
    let l = check_ok("[limits]\nmandate_max_usd_per_day = \"10.00\"\n").limits;
    assert_eq!(l.mandate_max_usd_per_day, Decimal::new(10, 0));
    let l = check_ok("[limits]\nmandate_max_usd_per_day = \"0\"\n").limits;
    assert_eq!(l.mandate_max_usd_per_day, Decimal::ZERO);
}

#[test]
fn limits_mandate_max_actions_per_day_bounds() {
    let key = "limits.mandate_max_actions_per_day";
    check_problem(
        "[limits]\nmandate_max_actions_per_day = 101\n",
        key,
        "over the ceiling of 100",
    );
    check_problem(
        "[limits]\nmandate_max_actions_per_day = 0\n",
        key,
        "under the minimum of 1",
    );
    let l = check_ok("[limits]\nmandate_max_actions_per_day = 100\n").limits;
    assert_eq!(l.mandate_max_actions_per_day, 100);
}

#[test]
fn limits_max_pending_bounds() {
    check_problem(
        "[limits]\nmax_pending = 101\n",
        "limits.max_pending",
        "101 is over the ceiling of 100",
    );
    check_problem(
        "[limits]\nmax_pending = 0\n",
        "limits.max_pending",
        "under the minimum of 1",
    );
    check_problem(
        "[limits]\nmax_pending = -3\n",
        "limits.max_pending",
        "-3 is under the minimum of 1",
    );
    assert_eq!(
        check_ok("[limits]\nmax_pending = 100\n").limits.max_pending,
        100
    );
}

#[test]
fn limits_max_pending_per_uid_is_a_share_of_max_pending() {
    check_problem(
        "[limits]\nmax_pending = 8\nmax_pending_per_uid = 9\n",
        "limits.max_pending_per_uid",
        "9 is above max_pending (8): one uid's share cannot be more than all the open asks",
    );
    check_problem(
        "[limits]\nmax_pending_per_uid = 0\n",
        "limits.max_pending_per_uid",
        "0 is under the minimum of 1",
    );
    check_problem(
        "[limits]\nmax_pending_per_uid = 101\n",
        "limits.max_pending_per_uid",
        "101 is over the ceiling of 100",
    );
    let cases = [
        ("", 20, 10),
        ("max_pending = 4\n", 4, 4),
        ("max_pending = 8\nmax_pending_per_uid = 8\n", 8, 8),
        ("max_pending = 100\nmax_pending_per_uid = 30\n", 100, 30),
    ];
    for (snippet, all, share) in cases {
        let limits = check_ok(&format!("[limits]\n{snippet}")).limits;
        assert_eq!(
            (limits.max_pending, limits.max_pending_per_uid),
            (all, share),
            "{snippet}"
        );
    }
}

#[test]
fn limits_attachment_retention_in_days_or_off() {
    let cases: [(&str, u64); 6] = [
        ("", 7 * 86_400),
        ("attachment_retention = \"30d\"\n", 30 * 86_400),
        ("attachment_retention = \"1d\"\n", 86_400),
        ("attachment_retention = \"36h\"\n", 36 * 3600),
        ("attachment_retention = \"0s\"\n", 0),
        ("attachment_retention = \"0d\"\n", 0),
    ];
    for (snippet, secs) in cases {
        let limits = check_ok(&format!("[limits]\n{snippet}")).limits;
        assert_eq!(limits.attachment_retention.as_secs(), secs, "{snippet}");
    }
    let key = "limits.attachment_retention";
    check_problem(
        "[limits]\nattachment_retention = \"31d\"\n",
        key,
        "31d is over the ceiling of 30d",
    );
    check_problem(
        "[limits]\nattachment_retention = 7\n",
        key,
        "a string with a unit, like \"7d\", or \"0s\" for none",
    );
    check_problem(
        "[limits]\nattachment_retention = \"7w\"\n",
        key,
        "unknown unit \"w\"",
    );
}

#[test]
fn limits_max_text_chars_bounds() {
    check_problem(
        "[limits]\nmax_text_chars = 20001\n",
        "limits.max_text_chars",
        "over the ceiling of 20000",
    );
    check_problem(
        "[limits]\nmax_text_chars = 0\n",
        "limits.max_text_chars",
        "under the minimum of 1",
    );
    assert_eq!(
        check_ok("[limits]\nmax_text_chars = 20000\n")
            .limits
            .max_text_chars,
        20_000
    );
}

#[test]
fn limits_max_attachments_bounds() {
    check_problem(
        "[limits]\nmax_attachments = 5\n",
        "limits.max_attachments",
        "over the ceiling of 4",
    );
    check_problem(
        "[limits]\nmax_attachments = -1\n",
        "limits.max_attachments",
        "under the minimum of 0",
    );
    assert_eq!(
        check_ok("[limits]\nmax_attachments = 0\n")
            .limits
            .max_attachments,
        0
    );
}

#[test]
fn limits_max_attachment_bytes_bounds() {
    let key = "limits.max_attachment_bytes";
    check_problem(
        "[limits]\nmax_attachment_bytes = 20971521\n",
        key,
        "20971521 is over the ceiling of 20971520 (20 MiB)",
    );
    check_problem(
        "[limits]\nmax_attachment_bytes = 0\n",
        key,
        "under the minimum of 1",
    );
    assert_eq!(
        check_ok("[limits]\nmax_attachment_bytes = 1\n")
            .limits
            .max_attachment_bytes,
        1
    );
}

#[test]
fn limits_max_request_bytes_bounds() {
    let key = "limits.max_request_bytes";
    check_problem(
        "[limits]\nmax_request_bytes = 33554433\n",
        key,
        "over the ceiling of 33554432 (32 MiB)",
    );
    check_problem(
        "[limits]\nmax_request_bytes = 1023\n",
        key,
        "1023 is under the minimum of 1024 (1 KiB)",
    );
    assert_eq!(
        check_ok("[limits]\nmax_request_bytes = 1024\n")
            .limits
            .max_request_bytes,
        1024
    );
    assert_eq!(
        check_ok("[limits]\nmax_request_bytes = 33554432\n")
            .limits
            .max_request_bytes,
        32 * MIB
    );
}

#[test]
fn limits_bytes_in_flight_bounds_and_room_for_one_largest_request() {
    let key = "limits.max_request_bytes_in_flight";
    check_problem(
        "[limits]\nmax_request_bytes_in_flight = 268435457\n",
        key,
        "over the ceiling of 268435456 (256 MiB)",
    );
    // Below the largest request at the defaults (32 MiB), and below a lowered one.
    check_problem(
        "[limits]\nmax_request_bytes_in_flight = 33554431\n",
        key,
        "33554431 is below max_request_bytes (33554432 (32 MiB))",
    );
    check_problem(
        "[limits]\nmax_request_bytes = 4096\nmax_request_bytes_in_flight = 4095\n",
        key,
        "4095 is below max_request_bytes (4096 (4 KiB))",
    );
    let limits =
        check_ok("[limits]\nmax_request_bytes = 4096\nmax_request_bytes_in_flight = 4096\n").limits;
    assert_eq!(limits.max_request_bytes_in_flight, 4096);
    assert_eq!(
        check_ok("").limits.max_request_bytes_in_flight,
        64 * MIB,
        "the default holds two requests of the largest size"
    );
}

#[test]
fn limits_connections_per_uid_bounds() {
    let key = "limits.max_connections_per_uid";
    check_problem(
        "[limits]\nmax_connections_per_uid = 1025\n",
        key,
        "1025 is over the ceiling of 1024",
    );
    check_problem(
        "[limits]\nmax_connections_per_uid = 0\n",
        key,
        "0 is under the minimum of 1",
    );
    assert_eq!(check_ok("").limits.max_connections_per_uid, 64);
    assert_eq!(
        check_ok("[limits]\nmax_connections_per_uid = 1024\n")
            .limits
            .max_connections_per_uid,
        1024
    );
}

#[test]
fn limits_decline_reason_wait_ceiling_zero_and_syntax() {
    let key = "limits.decline_reason_wait";
    check_problem(
        "[limits]\ndecline_reason_wait = \"11m\"\n",
        key,
        "11m is over the ceiling of 10m",
    );
    check_problem(
        "[limits]\ndecline_reason_wait = \"601s\"\n",
        key,
        "601s is over the ceiling of 10m",
    );
    check_problem(
        "[limits]\ndecline_reason_wait = \"60\"\n",
        key,
        "needs a unit (s, m or h), like \"60m\", or \"0s\" for no wait",
    );
    check_problem(
        "[limits]\ndecline_reason_wait = 60\n",
        key,
        "expected a string with a unit, like \"60s\", or \"0s\" for none",
    );
    check_problem("[limits]\ndecline_reason_wait = \"00s\"\n", key, "is zero");
    for zero in ["0", "0s", "0m", "0h"] {
        let snippet = format!("[limits]\ndecline_reason_wait = \"{zero}\"\n");
        assert_eq!(check_ok(&snippet).limits.decline_reason_wait, secs(0));
    }
    let lowered = check_ok("[limits]\ndecline_reason_wait = \"90s\"\n");
    assert_eq!(lowered.limits.decline_reason_wait, secs(90));
    let ceiling = check_ok("[limits]\ndecline_reason_wait = \"10m\"\n");
    assert_eq!(ceiling.limits.decline_reason_wait, secs(600));
}

// --- gate ---

#[test]
fn gate_unknown_key() {
    check_problem("[gate]\nquiet = \"off\"\n", "gate.quiet", "unknown key");
}

#[test]
fn gate_quiet_hours_format() {
    let key = "gate.quiet_hours";
    check_problem("[gate]\nquiet_hours = \"23:00\"\n", key, "not a time range");
    check_problem(
        "[gate]\nquiet_hours = \"23:00-8:00\"\n",
        key,
        "\"8:00\" is not a time of day",
    );
    check_problem(
        "[gate]\nquiet_hours = \"24:00-08:00\"\n",
        key,
        "\"24:00\" is not a time of day",
    );
    check_problem(
        "[gate]\nquiet_hours = \"23:60-08:00\"\n",
        key,
        "not a time of day",
    );
    check_problem(
        "[gate]\nquiet_hours = \"23:00 - 08:00\"\n",
        key,
        "not a time of day",
    );
    check_problem("[gate]\nquiet_hours = \"none\"\n", key, "or \"off\"");
    check_problem(
        "[gate]\nquiet_hours = \"08:00-08:00\"\n",
        key,
        "starts and ends at the same time",
    );
    check_problem("[gate]\nquiet_hours = false\n", key, "expected a string");
}

#[test]
fn gate_quiet_hours_accepts_off_and_both_directions() {
    assert_eq!(
        check_ok("[gate]\nquiet_hours = \"off\"\n").gate.quiet_hours,
        None
    );
    assert_eq!(
        check_ok("[gate]\nquiet_hours = \"22:30-07:15\"\n")
            .gate
            .quiet_hours,
        Some((hm(22, 30), hm(7, 15)))
    );
    assert_eq!(
        check_ok("[gate]\nquiet_hours = \"00:00-06:00\"\n")
            .gate
            .quiet_hours,
        Some((hm(0, 0), hm(6, 0)))
    );
}

#[test]
fn gate_summary_at_is_hh_mm() {
    check_problem(
        "[gate]\nsummary_at = \"9pm\"\n",
        "gate.summary_at",
        "use HH:MM",
    );
    check_problem(
        "[gate]\nsummary_at = \"21:00:00\"\n",
        "gate.summary_at",
        "use HH:MM",
    );
    assert_eq!(
        check_ok("[gate]\nsummary_at = \"23:59\"\n").gate.summary_at,
        hm(23, 59)
    );
}

#[test]
fn gate_night_card_limit_range() {
    check_problem(
        "[gate]\nnight_card_limit = 101\n",
        "gate.night_card_limit",
        "use 0 to 100",
    );
    check_problem(
        "[gate]\nnight_card_limit = -1\n",
        "gate.night_card_limit",
        "use 0 to 100",
    );
    assert_eq!(
        check_ok("[gate]\nnight_card_limit = 0\n")
            .gate
            .night_card_limit,
        0
    );
    assert_eq!(
        check_ok("[gate]\nnight_card_limit = 100\n")
            .gate
            .night_card_limit,
        100
    );
}

#[test]
fn gate_receipts_each_or_summary() {
    check_problem(
        "[gate]\nreceipts = \"never\"\n",
        "gate.receipts",
        "\"never\" is not one of each or summary",
    );
    assert_eq!(
        check_ok("[gate]\nreceipts = \"summary\"\n").gate.receipts,
        Receipts::Summary
    );
}

// --- categories ---

#[test]
fn category_names_match_the_kind_rule() {
    let body = "label = { en = \"A\" }\nclass = \"external\"\ncommand = [\"/bin/true\"]\n";
    check_problem(
        &format!("[categories.Publish]\n{body}"),
        "categories.Publish",
        "not a valid category name",
    );
    check_problem(
        &format!("[categories.9lives]\n{body}"),
        "categories.9lives",
        "[a-z][a-z0-9_]{0,31}",
    );
    check_problem(
        &format!("[categories.publish-x]\n{body}"),
        "categories.publish-x",
        "not a valid",
    );
    check_problem(
        &format!("[categories.\"publish x\"]\n{body}"),
        "categories.\"publish x\"",
        "not a valid",
    );
    let long = "a".repeat(33);
    check_problem(
        &format!("[categories.{long}]\n{body}"),
        &format!("categories.{long}"),
        "not a valid",
    );
    let max = "a".repeat(32);
    assert!(check_ok(&format!("[categories.{max}]\n{body}"))
        .categories
        .contains_key(&max));
}

#[test]
fn is_valid_kind_rule() {
    for ok in ["a", "publish_x", "x9", "a_b_c", &"z".repeat(32)] {
        assert!(is_valid_kind(ok), "{ok}");
    }
    for bad in ["", "_a", "9a", "A", "a-b", "a b", "é", &"z".repeat(33)] {
        assert!(!is_valid_kind(bad), "{bad}");
    }
}

#[test]
fn categories_and_category_must_be_tables() {
    check_problem("categories = [1]\n", "categories", "expected a table");
    check_problem(
        "[categories]\npublish_x = \"on\"\n",
        "categories.publish_x",
        "expected a table",
    );
}

#[test]
fn category_unknown_key() {
    check_category_problem(
        "shell = true\n",
        "categories.publish_x.shell",
        "unknown key",
    );
}

#[test]
fn category_label_unknown_key() {
    check_category_problem(
        "label = { en = \"Post\", de = \"Posten\" }\n",
        "categories.publish_x.label.de",
        "unknown key (allowed: en, ru, pt)",
    );
}

#[test]
fn category_label_en_is_required() {
    check_category_problem(
        "label = { ru = \"Пост в X\" }\n",
        "categories.publish_x.label",
        "an \"en\" label is required",
    );
    assert_problem(
        &problems_of(&[
            BASE,
            "[categories.x]\nclass = \"spend\"\ncommand = [\"/bin/true\"]\n",
        ]),
        "categories.x.label",
        "required",
    );
    check_category_problem(
        "label = \"Post to X\"\n",
        "categories.publish_x.label",
        "expected a table",
    );
}

#[test]
fn category_labels_are_non_empty_single_lines() {
    check_category_problem(
        "label = { en = \"  \" }\n",
        "categories.publish_x.label.en",
        "must not be empty",
    );
    check_category_problem(
        "label = { en = \"Post\", pt = \"\" }\n",
        "categories.publish_x.label.pt",
        "must not be empty",
    );
    check_category_problem(
        "label = { en = \"Post\\nto X\" }\n",
        "categories.publish_x.label.en",
        "single line",
    );
    check_category_problem(
        "label = { en = 1 }\n",
        "categories.publish_x.label.en",
        "expected a string",
    );
}

#[test]
fn category_label_falls_back_to_english() {
    let cat = category_ok("label = { en = \"Post to X\", pt = \"Post no X\" }\n");
    assert_eq!(cat.label(Language::Pt), "Post no X");
    assert_eq!(cat.label(Language::Ru), "Post to X");
    assert_eq!(cat.label(Language::En), "Post to X");
}

#[test]
fn category_class_values_and_required() {
    check_category_problem(
        "class = \"risky\"\n",
        "categories.publish_x.class",
        "\"risky\" is not one of external, spend or destructive",
    );
    assert_problem(
        &problems_of(&[
            BASE,
            "[categories.x]\nlabel = { en = \"X\" }\ncommand = [\"/bin/true\"]\n",
        ]),
        "categories.x.class",
        "required",
    );
    assert_eq!(category_ok("class = \"spend\"\n").class, Class::Spend);
    assert_eq!(
        category_ok("class = \"destructive\"\n").class,
        Class::Destructive
    );
}

#[test]
fn category_enabled_and_mandate_ok_are_booleans() {
    check_category_problem(
        "enabled = \"yes\"\n",
        "categories.publish_x.enabled",
        "expected a boolean",
    );
    check_category_problem(
        "mandate_ok = 1\n",
        "categories.publish_x.mandate_ok",
        "expected a boolean",
    );
    let cat = category_ok("enabled = true\nmandate_ok = true\n");
    assert!(cat.enabled && cat.mandate_ok);
}

#[test]
fn destructive_category_can_never_be_mandate_ok() {
    let problems = problems_of(&[
            BASE,
            "[categories.wipe]\nlabel = { en = \"Wipe\" }\nclass = \"destructive\"\nmandate_ok = true\ncommand = [\"/bin/wipe\"]\n",
        ]);
    assert_problem(
        &problems,
        "categories.wipe.mandate_ok",
        "a destructive category can never be mandate_ok",
    );
    assert!(!category_ok("class = \"destructive\"\nmandate_ok = false\n").mandate_ok);
}

#[test]
fn category_target_and_text_presence() {
    check_category_problem(
        "target = \"maybe\"\n",
        "categories.publish_x.target",
        "not one of required, optional or none",
    );
    check_category_problem(
        "text = true\n",
        "categories.publish_x.text",
        "expected a string",
    );
    let cat = category_ok("target = \"optional\"\ntext = \"required\"\n");
    assert_eq!(
        (cat.target, cat.text),
        (Presence::Optional, Presence::Required)
    );
}

#[test]
fn category_field_labels_are_optional_and_per_language() {
    let cat = category_ok("fields = [\"reply_to\", \"lang\"]\n");
    assert_eq!(cat.field_label("reply_to", Language::Ru), "reply_to");
    let cat = category_ok(
        "fields = [\"reply_to\", \"lang\"]\n\
             [categories.publish_x.field_labels]\n\
             reply_to = { en = \"Reply to\", ru = \"Ответ на\", pt = \"Resposta a\" }\n\
             lang = { en = \"Language\" }\n",
    );
    assert_eq!(cat.field_label("reply_to", Language::En), "Reply to");
    assert_eq!(cat.field_label("reply_to", Language::Ru), "Ответ на");
    assert_eq!(cat.field_label("reply_to", Language::Pt), "Resposta a");
    // English when the language has none; the name when the field has none.
    assert_eq!(cat.field_label("lang", Language::Pt), "Language");
    assert_eq!(cat.field_label("other", Language::En), "other");
    assert_eq!(
        cat.field_labels_in(Language::Ru),
        BTreeMap::from([
            ("lang".to_owned(), "Language".to_owned()),
            ("reply_to".to_owned(), "Ответ на".to_owned()),
        ])
    );
}

#[test]
fn category_field_labels_rules() {
    let fields = "fields = [\"reply_to\"]\n[categories.publish_x.field_labels]\n";
    check_category_problem(
        &format!("{fields}reply = {{ en = \"Reply\" }}\n"),
        "categories.publish_x.field_labels.reply",
        "\"reply\" is not one of this category's fields; the category's fields are reply_to",
    );
    check_category_problem(
        "[categories.publish_x.field_labels]\nreply_to = { en = \"Reply\" }\n",
        "categories.publish_x.field_labels.reply_to",
        "the category lists no fields",
    );
    check_category_problem(
        &format!("{fields}reply_to = {{ ru = \"Ответ\" }}\n"),
        "categories.publish_x.field_labels.reply_to",
        "an \"en\" label is required",
    );
    check_category_problem(
        &format!("{fields}reply_to = {{ en = \"Reply\", de = \"Antwort\" }}\n"),
        "categories.publish_x.field_labels.reply_to.de",
        "unknown key",
    );
    check_category_problem(
        &format!("{fields}reply_to = {{ en = \"Reply\\nto\" }}\n"),
        "categories.publish_x.field_labels.reply_to.en",
        "must be a single line",
    );
    check_category_problem(
        &format!("{fields}reply_to = \"Reply to\"\n"),
        "categories.publish_x.field_labels.reply_to",
        "expected a table",
    );
    check_category_problem(
        "fields = [\"reply_to\"]\nfield_labels = [\"Reply to\"]\n",
        "categories.publish_x.field_labels",
        "expected a table",
    );
}

#[test]
fn category_fields_rules() {
    let key = "categories.publish_x.fields";
    check_category_problem(
        "fields = [\"Reply\"]\n",
        key,
        "fields[0] \"Reply\" is not a valid field name",
    );
    check_category_problem(
        "fields = [\"a\", \"a\"]\n",
        key,
        "\"a\" is listed more than once",
    );
    check_category_problem("fields = [\"cost_usd\"]\n", key, "envelope's own keys");
    check_category_problem("fields = [\"ok\", \"text\"]\n", key, "fields[1] \"text\"");
    check_category_problem(
        "fields = [1]\n",
        key,
        "fields[0]: expected a string, got an integer",
    );
    check_category_problem("fields = \"reply_to\"\n", key, "expected an array");
    assert_eq!(
        category_ok("fields = [\"reply_to\", \"quote_of\"]\n").fields,
        ["reply_to", "quote_of"]
    );
}

#[test]
fn every_envelope_key_is_refused_as_a_field() {
    for k in ASK_KEYS {
        check_category_problem(
            &format!("fields = [\"{k}\"]\n"),
            "categories.publish_x.fields",
            "envelope",
        );
    }
}

#[test]
fn category_attachments_up_to_the_limit() {
    let key = "categories.publish_x.attachments";
    check_category_problem(
        "attachments = 5\n",
        key,
        "5 is over limits.max_attachments (4)",
    );
    check_category_problem("attachments = -1\n", key, "negative");
    assert_problem(
        &problems_of(&[
            BASE,
            "[limits]\nmax_attachments = 2\n",
            CATEGORY,
            "[categories.publish_x]\nattachments = 3\n",
        ]),
        key,
        "3 is over limits.max_attachments (2)",
    );
    assert_eq!(category_ok("attachments = 4\n").attachments, 4);
}

#[test]
fn category_cost_values() {
    let key = "categories.publish_x.cost";
    assert_eq!(category_ok("cost = \"none\"\n").cost, Cost::None);
    assert_eq!(category_ok("cost = \"request\"\n").cost, Cost::Request);
    assert_eq!(
        category_ok("cost = \"0.04\"\n").cost,
        Cost::Fixed(Decimal::new(4, 2))
    );
    check_category_problem(
        "cost = \"0.041\"\n",
        key,
        "\"0.041\" has more than 2 decimal places",
    );
    check_category_problem("cost = \"-1\"\n", key, "negative");
    for zero in ["0", "0.0", "0.00"] {
        check_category_problem(
            &format!("cost = \"{zero}\"\n"),
            key,
            &format!(
                "\"{zero}\" is a fixed cost of zero; write cost = \"none\" for a kind that \
                     never costs"
            ),
        );
    }
    check_category_problem(
        "cost = \"free\"\n",
        key,
        "\"free\" is not none, request or an amount",
    );
    check_category_problem(
        "cost = 0.04\n",
        key,
        "expected a string: none, request or a fixed amount",
    );
}

#[test]
fn category_command_rules() {
    let key = "categories.publish_x.command";
    check_category_problem(
        "command = [\"publish-x\"]\n",
        key,
        "command[0] must be an absolute path, got \"publish-x\"",
    );
    check_category_problem("command = []\n", key, "must not be empty");
    check_category_problem(
        "command = [\"/bin/x\", \"\"]\n",
        key,
        "command[1] must not be empty",
    );
    check_category_problem(
        "command = [\"/bin/x\", 3]\n",
        key,
        "command[1]: expected a string, got an integer",
    );
    check_category_problem("command = \"/bin/x --y\"\n", key, "expected an argv list");
    check_category_problem("command = [\"/bin/x\", \"a\\u0000b\"]\n", key, "NUL");
    assert_problem(
        &problems_of(&[
            BASE,
            "[categories.x]\nlabel = { en = \"X\" }\nclass = \"spend\"\n",
        ]),
        "categories.x.command",
        "required",
    );
    let cat = category_ok("command = [\"/usr/bin/env\", \"FOO=1\", \"x\"]\n");
    assert_eq!(cat.command, ["/usr/bin/env", "FOO=1", "x"]);
}

#[test]
fn category_run_as_is_a_user_name() {
    let key = "categories.publish_x.run_as";
    check_category_problem("run_as = \"Consent IO\"\n", key, "not a valid user name");
    check_category_problem("run_as = \"1user\"\n", key, "not a valid user name");
    check_category_problem("run_as = \"\"\n", key, "not a valid user name");
    check_category_problem(
        &format!("run_as = \"{}\"\n", "u".repeat(33)),
        key,
        "not a valid user name",
    );
    check_category_problem("run_as = 1000\n", key, "expected a string");
    assert_eq!(
        category_ok("run_as = \"consent-io\"\n").run_as.as_deref(),
        Some("consent-io")
    );
    assert_eq!(
        category_ok("run_as = \"_svc\"\n").run_as.as_deref(),
        Some("_svc")
    );
}

#[test]
fn category_env_file_is_absolute() {
    check_category_problem(
        "env_file = \"x.env\"\n",
        "categories.publish_x.env_file",
        "absolute path",
    );
    let cat = category_ok("env_file = \"/etc/consentd/x.env\"\n");
    assert_eq!(
        cat.env_file.as_deref(),
        Some(Path::new("/etc/consentd/x.env"))
    );
}

#[test]
fn category_timeout_range() {
    let key = "categories.publish_x.timeout";
    check_category_problem("timeout = \"61m\"\n", key, "61m is over the maximum of 1h");
    check_category_problem("timeout = \"3601s\"\n", key, "over the maximum of 1h");
    check_category_problem("timeout = \"0s\"\n", key, "is zero");
    check_category_problem("timeout = \"60\"\n", key, "needs a unit");
    check_category_problem("timeout = 60\n", key, "expected a string with a unit");
    assert_eq!(category_ok("timeout = \"1h\"\n").timeout, secs(3600));
    assert_eq!(category_ok("timeout = \"1s\"\n").timeout, secs(1));
}

#[test]
fn problems_in_two_categories_are_both_reported() {
    let problems = problems_of(&[
        BASE,
        "[categories.a]\nlabel = { en = \"A\" }\nclass = \"x\"\ncommand = [\"/a\"]\n\
             [categories.b]\nlabel = { en = \"B\" }\nclass = \"spend\"\ncommand = [\"b\"]\n",
    ]);
    assert_eq!(problems.len(), 2, "{}", render_problems(&problems));
    assert_problem(&problems, "categories.a.class", "not one of");
    assert_problem(&problems, "categories.b.command", "absolute path");
}

// --- enums and loading ---

#[test]
fn language_round_trips() {
    for lang in Language::ALL {
        assert_eq!(lang.as_str().parse::<Language>(), Ok(lang));
    }
    assert!("english".parse::<Language>().is_err());
    assert!(Language::En < Language::Ru && Language::Ru < Language::Pt);
    assert_eq!(Class::Destructive.as_str(), "destructive");
}

// --- mode: consentd runs the action, or the agent does once approved ---

#[test]
fn a_category_runs_its_command_by_default() {
    let category = category_ok("");
    assert_eq!(category.mode, Mode::Run);
    assert_eq!(category.command, ["/usr/lib/consentd/publish-x"]);
}

#[test]
fn an_approve_category_has_no_command() {
    let config = check_ok(
        r#"
[categories.shell]
label = { en = "Run a shell command" }
class = "external"
mode = "approve"
text = "required"
"#,
    );
    let shell = &config.categories["shell"];
    assert_eq!(shell.mode, Mode::Approve);
    assert!(shell.command.is_empty());
    assert_eq!(shell.run_as, None);
}

#[test]
fn an_approve_category_refuses_every_key_that_runs_something() {
    for (key, line) in [
        ("command", r#"command = ["/bin/true"]"#),
        ("run_as", r#"run_as = "nobody""#),
        ("env_file", r#"env_file = "/etc/env""#),
        ("timeout", r#"timeout = "10s""#),
    ] {
        let snippet = format!(
            "[categories.shell]\nlabel = {{ en = \"Shell\" }}\nclass = \"external\"\nmode = \"approve\"\n{line}\n"
        );
        check_problem(
            &snippet,
            &format!("categories.shell.{key}"),
            "mode = \"approve\"",
        );
    }
}

#[test]
fn a_run_category_still_requires_its_command_and_mode_is_one_of_two() {
    check_problem(
        "[categories.shell]\nlabel = { en = \"Shell\" }\nclass = \"external\"\nmode = \"run\"\n",
        "categories.shell.command",
        "required",
    );
    check_category_problem("mode = \"later\"", "categories.publish_x.mode", "\"later\"");
}

#[test]
fn seal_epoch_is_whole_minutes_from_one_minute_to_a_day() {
    assert_eq!(check_ok("").journal.seal_epoch, Duration::from_secs(900));
    for (text, secs) in [("\"1m\"", 60), ("\"90m\"", 5400), ("\"24h\"", 86_400)] {
        let c = check_ok(&format!("[journal]\nseal_epoch = {text}\n"));
        assert_eq!(c.journal.seal_epoch, Duration::from_secs(secs), "{text}");
    }
    for text in ["\"59s\"", "\"90s\"", "\"25h\""] {
        check_problem(
            &format!("[journal]\nseal_epoch = {text}\n"),
            "journal.seal_epoch",
            "whole minutes from 1m to 24h",
        );
    }
    check_problem(
        "[journal]\nseal_epoch = \"0s\"\n",
        "journal.seal_epoch",
        "zero",
    );
    check_problem("[journal]\nepoch = \"1m\"\n", "journal.epoch", "");
}

/// One rule says whether a kind is on, for the intake, the consent loop and the preflight: a
/// stored switch decides for a configured kind, the config's `enabled` when there is none, and
/// nothing turns on a kind the config does not have.
#[test]
fn a_kind_is_on_only_when_configured_and_then_as_switched() {
    let on = category_ok("enabled = true");
    let off = category_ok("enabled = false");
    let cases: [(&str, Option<&Category>, Option<bool>, bool); 8] = [
        ("configured on, no switch", Some(&on), None, true),
        ("configured off, no switch", Some(&off), None, false),
        ("configured on, switched off", Some(&on), Some(false), false),
        ("configured off, switched on", Some(&off), Some(true), true),
        ("configured on, switched on", Some(&on), Some(true), true),
        (
            "configured off, switched off",
            Some(&off),
            Some(false),
            false,
        ),
        ("not configured, switched on", None, Some(true), false),
        ("not configured, no switch", None, None, false),
    ];
    for (case, category, switch, expected) in cases {
        assert_eq!(category_enabled(category, switch), expected, "{case}");
    }
}

/// Two labelled sockets that are fine side by side: `[[listen]]` cases add a third.
const LISTENERS: &str = r#"
[[listen]]
socket = "/run/consentd/devbox.sock"
origin = "devbox"
allowed_uids = [1001]

[[listen]]
socket = "/run/consentd/ci.sock"
origin = "ci runner"
"#;

#[test]
fn labelled_sockets_are_read_in_order_with_their_own_allow_lists() {
    let config = check_ok(LISTENERS);
    let read: Vec<(&str, &str, &[u32])> = config
        .listen
        .iter()
        .map(|l| {
            (
                l.socket.to_str().unwrap(),
                l.origin.as_str(),
                l.allowed_uids.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            ("/run/consentd/devbox.sock", "devbox", &[1001][..]),
            ("/run/consentd/ci.sock", "ci runner", &[][..]),
        ]
    );
    assert!(check_ok("").listen.is_empty());
}

#[test]
fn a_bad_listener_is_refused_with_its_key_named() {
    let third = |body: &str| format!("{LISTENERS}\n[[listen]]\n{body}");
    // (what the third listener says, the key named, words of the message)
    let cases: &[(&str, &str, &str)] = &[
        (
            "socket = \"/run/consentd/devbox.sock\"\norigin = \"laptop\"",
            "listen[2].socket",
            "listen[0] listens on the same path",
        ),
        (
            "socket = \"/run/consentd//./ci.sock\"\norigin = \"laptop\"",
            "listen[2].socket",
            "listen[1] listens on the same path",
        ),
        (
            "socket = \"/run/consentd/consent.sock\"\norigin = \"laptop\"",
            "listen[2].socket",
            "main socket's path",
        ),
        (
            "socket = \"relative.sock\"\norigin = \"laptop\"",
            "listen[2].socket",
            "absolute",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"dev\u{200B}box2\"",
            "listen[2].origin",
            "U+200B ZERO WIDTH SPACE",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"lap\u{00AD}top\"",
            "listen[2].origin",
            "U+00AD SOFT HYPHEN",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"cafe\u{0301}\"",
            "listen[2].origin",
            "not in NFC",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \" laptop\"",
            "listen[2].origin",
            "origin",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"\"",
            "listen[2].origin",
            "is empty",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"a-very-long-machine-name-for-ci-01x\"",
            "listen[2].origin",
            "has 35 characters; an origin has at most 32",
        ),
        (
            // Cyrillic е in place of the Latin e.
            "socket = \"/run/l.sock\"\norigin = \"d\u{0435}vbox\"",
            "listen[2].origin",
            "looks like listen[0]'s origin \"devbox\"",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"ci runn\u{0435}r\"",
            "listen[2].origin",
            "looks like listen[1]'s origin",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"devbox\"",
            "listen[2].origin",
            "is listen[0]'s origin too",
        ),
        ("origin = \"laptop\"", "listen[2].socket", "required"),
        ("socket = \"/run/l.sock\"", "listen[2].origin", "required"),
        (
            "socket = \"/run/l.sock\"\norigin = \"laptop\"\nallowed_uids = [-1]",
            "listen[2].allowed_uids",
            "a uid is from 0",
        ),
        (
            "socket = \"/run/l.sock\"\norigin = \"laptop\"\nallowd_uids = [1]",
            "listen[2].allowd_uids",
            "unknown key",
        ),
    ];
    for (body, key, words) in cases {
        assert_problem(&problems_of(&[BASE, &third(body)]), key, words);
    }
    check_problem("listen = 3", "listen", "an array of tables");
}

// --- built-in actions ---

/// A category for a built-in action, without one; each case adds its keys, or replaces these.
const BUILTIN: &str = r#"
[categories.post]
label = { en = "Post" }
class = "external"
target = "required"
text = "required"
"#;

/// The problems of [`BUILTIN`] with `body`'s keys.
fn builtin_problems(body: &str) -> Vec<ConfigProblem> {
    let body = format!("[categories.post]\n{body}");
    match validate(&table_of(&[BASE, BUILTIN, &body]), &mut no_more_checks) {
        Ok(config) => panic!("expected problems, got {:?}", config.categories["post"]),
        Err(problems) => problems,
    }
}

fn builtin_ok(body: &str) -> Category {
    let body = format!("[categories.post]\n{body}");
    let config = validate(&table_of(&[BASE, BUILTIN, &body]), &mut no_more_checks)
        .unwrap_or_else(|p| panic!("{body}: expected valid, got:\n{}", render_problems(&p)));
    config.categories["post"].clone()
}

#[test]
fn each_wrong_combination_of_command_and_action_is_named_by_its_key() {
    let http = "action = \"http\"\nurl = \"https://hooks.example.org/x\"\n";
    let email = "action = \"email\"\nsmtp_url = \"smtps://smtp.example.org\"\n\
                 from = \"bot@example.org\"\n";
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("neither", String::new(), "command", "or a built-in action"),
        (
            "both",
            "action = \"telegram_post\"\ncommand = [\"/bin/true\"]\n".into(),
            "command",
            "either a command or a built-in action",
        ),
        (
            "run_as with an action",
            "action = \"telegram_post\"\nrun_as = \"nobody\"\n".into(),
            "run_as",
            "runs inside consentd",
        ),
        (
            "env_file with an action",
            format!("{http}env_file = \"/etc/consentd/x.env\"\n"),
            "env_file",
            "runs inside consentd",
        ),
        (
            "an unknown action",
            "action = \"ftp\"\n".into(),
            "action",
            "is not one of",
        ),
        (
            "http without url",
            "action = \"http\"\n".into(),
            "url",
            "required",
        ),
        (
            "a url that is not http",
            "action = \"http\"\nurl = \"ftp://x.example.org\"\n".into(),
            "url",
            "http:// or https://",
        ),
        (
            "secrets over plain http to another machine",
            "action = \"http\"\nurl = \"http://hooks.example.org/x\"\nheaders_file = \"/etc/consentd/h\"\n"
                .into(),
            "url",
            "in clear",
        ),
        (
            "secrets over plain http to a look-alike of localhost",
            "action = \"http\"\nurl = \"http://localhost.example.org:80/\"\nheaders_file = \"/etc/consentd/h\"\n"
                .into(),
            "url",
            "in clear",
        ),
        (
            "a password in the url",
            "action = \"http\"\nurl = \"https://u:secret@x.example.org/\"\n".into(),
            "url",
            "headers_file",
        ),
        (
            "a method without a body",
            format!("{http}method = \"GET\"\n"),
            "method",
            "is not one of",
        ),
        (
            "a relative headers_file",
            format!("{http}headers_file = \"headers\"\n"),
            "headers_file",
            "absolute path",
        ),
        (
            "url on telegram_post",
            "action = \"telegram_post\"\nurl = \"https://x.example.org\"\n".into(),
            "url",
            "only an action = \"http\" takes url",
        ),
        (
            "smtp_url on http",
            format!("{http}smtp_url = \"smtps://smtp.example.org\"\n"),
            "smtp_url",
            "only an action = \"email\" takes smtp_url",
        ),
        (
            "headers_file with a command",
            "command = [\"/bin/true\"]\nheaders_file = \"/etc/consentd/h\"\n".into(),
            "headers_file",
            "has no action",
        ),
        (
            "email without smtp_url",
            "action = \"email\"\nfrom = \"bot@example.org\"\n".into(),
            "smtp_url",
            "required",
        ),
        (
            "email without from",
            "action = \"email\"\nsmtp_url = \"smtps://smtp.example.org\"\n".into(),
            "from",
            "required",
        ),
        (
            "a from that is no address",
            "action = \"email\"\nsmtp_url = \"smtps://smtp.example.org\"\nfrom = \"bot\"\n".into(),
            "from",
            "not an address",
        ),
        (
            "plain SMTP to another machine",
            "action = \"email\"\nsmtp_url = \"smtp://smtp.example.org?tls=none\"\n\
             from = \"bot@example.org\"\n"
                .into(),
            "smtp_url",
            "only for a relay on this machine",
        ),
        (
            "a look-alike of loopback",
            "action = \"email\"\nsmtp_url = \"smtp://127.example.org?tls=none\"\n\
             from = \"bot@example.org\"\n"
                .into(),
            "smtp_url",
            "only for a relay on this machine",
        ),
        (
            "a password in smtp_url",
            "action = \"email\"\nsmtp_url = \"smtps://u:p@smtp.example.org\"\n\
             from = \"bot@example.org\"\n"
                .into(),
            "smtp_url",
            "credentials_file",
        ),
        (
            "a relative credentials_file",
            format!("{email}credentials_file = \"creds\"\n"),
            "credentials_file",
            "absolute path",
        ),
        (
            "a post without a required target",
            "action = \"telegram_post\"\ntarget = \"optional\"\n".into(),
            "target",
            "needs target = \"required\"",
        ),
        (
            "an email without a required target",
            format!("{email}target = \"none\"\n"),
            "target",
            "needs target = \"required\"",
        ),
        (
            "a post with nothing to post",
            "action = \"telegram_post\"\ntext = \"none\"\n".into(),
            "text",
            "nothing to post",
        ),
    ];
    for (name, body, leaf, words) in cases {
        let problems = builtin_problems(&body);
        let key = format!("categories.post.{leaf}");
        assert!(
            problems
                .iter()
                .any(|p| p.key == key && p.message.contains(words)),
            "{name}: no problem at {key} with {words:?}; got:\n{}",
            render_problems(&problems)
        );
    }
}

#[test]
fn an_approve_category_takes_no_action() {
    for key in [
        "action = \"telegram_post\"",
        "url = \"https://x.example.org\"",
    ] {
        let leaf = key.split(' ').next().unwrap();
        let snippet = format!(
            "[categories.x]\nlabel = {{ en = \"X\" }}\nclass = \"external\"\n\
             mode = \"approve\"\n{key}\n"
        );
        assert_problem(
            &problems_of(&[BASE, &snippet]),
            &format!("categories.x.{leaf}"),
            "runs nothing in consentd",
        );
    }
}

#[test]
fn each_builtin_action_reads_its_keys() {
    let post = builtin_ok("action = \"telegram_post\"\n");
    assert_eq!(post.action, Some(BuiltIn::TelegramPost));
    assert!(post.command.is_empty());

    let http = builtin_ok(
        "action = \"http\"\nurl = \"https://hooks.example.org/x?y=1\"\n\
         headers_file = \"/etc/consentd/hook.headers\"\ntimeout = \"5s\"\n",
    );
    assert_eq!(
        http.action,
        Some(BuiltIn::Http(HttpAction {
            url: "https://hooks.example.org/x?y=1".into(),
            method: HttpMethod::Post,
            headers_file: Some("/etc/consentd/hook.headers".into()),
        }))
    );
    assert_eq!(http.timeout, secs(5));
    let put = builtin_ok("action = \"http\"\nurl = \"http://127.0.0.1:9/\"\nmethod = \"PUT\"\n");
    // Secrets over plain http stay on this machine; without secrets any host will do.
    for url in [
        "http://127.0.0.1:9/",
        "http://[::1]:8080/x",
        "http://localhost/x",
    ] {
        builtin_ok(&format!(
            "action = \"http\"\nurl = \"{url}\"\nheaders_file = \"/etc/consentd/h\"\n"
        ));
    }
    builtin_ok("action = \"http\"\nurl = \"http://hooks.example.org/x\"\n");
    assert!(matches!(
        put.action,
        Some(BuiltIn::Http(HttpAction {
            method: HttpMethod::Put,
            ..
        }))
    ));

    let smtp = |url: &str| match builtin_ok(&format!(
        "action = \"email\"\nsmtp_url = \"{url}\"\nfrom = \"Bot <bot@example.org>\"\n\
         credentials_file = \"/etc/consentd/smtp\"\n"
    ))
    .action
    {
        Some(BuiltIn::Email(email)) => (email.smtp.host, email.smtp.port, email.smtp.tls),
        other => panic!("{other:?}"),
    };
    let cases = [
        (
            "smtps://smtp.example.org",
            ("smtp.example.org", 465, SmtpTls::Implicit),
        ),
        (
            "smtp://smtp.example.org",
            ("smtp.example.org", 587, SmtpTls::StartTls),
        ),
        (
            "smtp://smtp.example.org:2525",
            ("smtp.example.org", 2525, SmtpTls::StartTls),
        ),
        (
            "smtp://127.0.0.1:2525?tls=none",
            ("127.0.0.1", 2525, SmtpTls::None),
        ),
        (
            "smtp://localhost?tls=none",
            ("localhost", 587, SmtpTls::None),
        ),
        ("smtp://[::1]:25?tls=none", ("::1", 25, SmtpTls::None)),
    ];
    for (url, (host, port, tls)) in cases {
        assert_eq!(smtp(url), (host.to_owned(), port, tls), "{url}");
    }
}
