//! Sessions that share one daemon, each under its own real uid: one cannot starve, silence or
//! crowd out another. The test process is root (uid 0); the other session is a `consentd`
//! child that runs as `nobody` (65534).

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::budgets::open_socket_to_others;
use super::fixture::{current_uid, good_ask, Daemon, BIN};

/// The other session's uid.
pub(super) const OTHER_UID: u32 = 65534;

/// A daemon both uids may ask, its socket open to the other one.
pub(super) fn shared_daemon(builder: super::fixture::DaemonBuilder) -> Daemon {
    assert_eq!(
        current_uid(),
        0,
        "this test switches uid, so it runs as root"
    );
    let daemon = builder.allowed_uids(vec![0, OTHER_UID]).start();
    open_socket_to_others(&daemon);
    daemon
}

/// `consentd args…` run as the other uid against `daemon`.
pub(super) fn as_other(daemon: &Daemon, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CONSENTD_SOCKET", &daemon.socket)
        .current_dir("/")
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The other uid's ask for `publish_x` with `text`, not waiting: its final JSON line.
pub(super) fn other_asks(daemon: &Daemon, text: &str) -> Value {
    let output = as_other(
        daemon,
        &[
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@mila_news",
            "--text",
            text,
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--no-wait",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "no answer for the other uid: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    serde_json::from_str(last).unwrap()
}

/// Uid 0 at its share of the open asks is refused and told its share; uid 65534 still has room.
#[test]
fn a_uid_at_its_pending_share_leaves_room_for_another() {
    let daemon = shared_daemon(
        Daemon::builder()
            .max_pending(20)
            .limit("max_pending_per_uid", "2"),
    );
    for n in 0..2 {
        let answer = daemon.request(&good_ask(&format!("mine {n}")));
        assert_eq!(answer["status"], "pending", "{answer}");
    }
    let over = daemon.request(&good_ask("mine 2"));
    assert_eq!(over["reason"], "too_many_pending", "{over}");
    let message = over["message"].as_str().unwrap();
    assert!(
        message.contains("uid 0 already has 2 asks") && message.contains("its share is 2"),
        "{over}"
    );
    for n in 0..2 {
        let answer = other_asks(&daemon, &format!("theirs {n}"));
        assert_eq!(answer["status"], "pending", "{answer}");
    }
}

/// The owner's messages with a Resume button: the notices of silences still in force.
fn resume_notices(daemon: &Daemon) -> Vec<consentd_emulator::ChatMessage> {
    daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.buttons().iter().any(|b| b.text == "Resume"))
        .collect()
}

/// The owner presses No on the card of record `id`.
fn decline_card(daemon: &Daemon, id: &str) {
    let card = daemon.card_of(id);
    daemon.tap(&card, 1);
    daemon.wait_for("the card's buttons to go", |bot| {
        bot.message(super::fixture::OWNER, card.message_id)
            .is_some_and(|m| m.buttons().is_empty())
    });
}

/// Uid 0's three declined cards silence `publish_x` for uid 0 alone, and the notice names it;
/// uid 65534's ask of that kind still draws a card. Once both are silenced, uid 0's Resume
/// lifts uid 0's silence only.
#[test]
fn one_uids_declines_silence_its_kind_alone_and_its_resume_lifts_its_own() {
    let daemon = shared_daemon(Daemon::builder().decline_streak(3));
    for n in 0..3 {
        let answer = daemon.request(&good_ask(&format!("junk {n}")));
        decline_card(&daemon, answer["id"].as_str().unwrap());
    }
    daemon.wait_for("uid 0's silence notice", |_| {
        resume_notices(&daemon).len() == 1
    });
    let notice = resume_notices(&daemon).remove(0);
    let text = notice.text.clone().unwrap_or_default();
    assert!(text.contains("root (uid 0)"), "{text}");
    let refused = daemon.request(&good_ask("junk 3"));
    assert_eq!(refused["reason"], "kind_silenced", "{refused}");
    // Uid 65534's ask of that kind, even of a text uid 0 had declined, draws a card.
    let theirs = other_asks(&daemon, "junk 0");
    assert_eq!(theirs["status"], "pending", "{theirs}");
    for n in 0..3 {
        let answer = if n == 0 {
            theirs.clone()
        } else {
            other_asks(&daemon, &format!("their junk {n}"))
        };
        decline_card(&daemon, answer["id"].as_str().unwrap());
    }
    daemon.wait_for("uid 65534's silence notice", |_| {
        resume_notices(&daemon).len() == 2
    });
    let refused = other_asks(&daemon, "their junk 3");
    assert_eq!(refused["reason"], "kind_silenced", "{refused}");
    // Uid 0's Resume: uid 0 may ask again, uid 65534 is still silenced.
    daemon.tap(&notice, 0);
    daemon.wait_for("uid 0's Resume taken away", |_| {
        resume_notices(&daemon).len() == 1
    });
    let mine = daemon.request(&good_ask("after my resume"));
    assert_eq!(mine["status"], "pending", "{mine}");
    let refused = other_asks(&daemon, "their junk 4");
    assert_eq!(refused["reason"], "kind_silenced", "{refused}");
    let uids: Vec<Value> = daemon
        .journal_events()
        .into_iter()
        .filter(|event| event["ev"] == "silenced")
        .map(|event| event["uid"].clone())
        .collect();
    assert_eq!(uids, [Value::from(0), Value::from(OTHER_UID)]);
}

/// `attachment_bytes_per_uid` is each uid's own: uid 0 over it is refused `too_large` naming the
/// limit, while uid 65534's ask with the same attachment is taken.
#[test]
fn a_uid_over_its_attachment_bytes_leaves_room_for_another() {
    use base64::Engine as _;
    use std::os::unix::fs::PermissionsExt;
    let daemon = shared_daemon(Daemon::builder().limit("attachment_bytes_per_uid", "100000"));
    let mut cover = super::attachments::PNG.to_vec();
    cover.resize(60_000, 0);
    let with_cover = |text: &str| {
        let mut ask = good_ask(text);
        ask["attachments"] = serde_json::json!([{"name":"cover.png","media_type":"image/png",
            "data_b64":base64::engine::general_purpose::STANDARD.encode(&cover)}]);
        ask
    };
    let first = daemon.request(&with_cover("mine 1"));
    assert_eq!(first["status"], "pending", "{first}");
    let over = daemon.request(&with_cover("mine 2"));
    assert_eq!(over["reason"], "too_large", "{over}");
    assert!(
        over["message"]
            .as_str()
            .unwrap()
            .contains("would pass limits.attachment_bytes_per_uid (100000)"),
        "{over}"
    );
    let path = daemon.dir.path().join("cover.png");
    std::fs::write(&path, &cover).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = path.display().to_string();
    let output = as_other(
        &daemon,
        &[
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@mila_news",
            "--text",
            "theirs",
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--attach",
            &path,
            "--no-wait",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(
        last["status"],
        "pending",
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `consentd mcp` run as the other uid: `calls` (tool name, arguments) sent after the
/// handshake, stdin then closed; the answers to the calls, by their ids 1…
fn mcp_as_other(daemon: &Daemon, calls: &[(&str, Value)]) -> Vec<Value> {
    use std::io::Write as _;
    let mut child = Command::new(BIN)
        .args(["mcp", "--socket"])
        .arg(&daemon.socket)
        .current_dir("/")
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (n, (name, arguments)) in calls.iter().enumerate() {
        lines.push(
            serde_json::json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}),
        );
    }
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    // Read until every call is answered (30 s at most), then close stdin: an MCP server may end
    // at end of input before answering what it read.
    let stdout = child.stdout.take().unwrap();
    let (sender, received) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = sender.send(serde_json::from_str(&line).unwrap());
        }
    });
    let mut answers = Vec::new();
    while answers.len() < calls.len() {
        let answer = received
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer to every call: {answers:?}"));
        if answer["id"].as_u64().is_some_and(|id| id >= 1) {
            answers.push(answer);
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answers.sort_by_key(|answer| answer["id"].as_u64());
    answers
}

/// What one session can see of another stays nothing: through the command line and through the
/// MCP tools, uid 65534 can neither read, list nor withdraw uid 0's open record, which is still
/// open and unchanged after every attempt. One case a row, one assertion each.
#[test]
fn another_uids_record_is_never_read_listed_or_withdrawn() {
    let daemon = shared_daemon(Daemon::builder());
    let mine = daemon.request(&good_ask("mine alone"));
    let id = mine["id"].as_str().unwrap().to_owned();
    daemon.card_of(&id);
    let theirs = other_asks(&daemon, "their own");
    let their_id = theirs["id"].as_str().unwrap().to_owned();
    let text_of = |output: &Output| String::from_utf8_lossy(&output.stdout).into_owned();
    type Case<'a> = (&'static str, Box<dyn Fn() -> bool + 'a>);
    let (d, i) = (&daemon, id.clone());
    let cases: Vec<Case> = vec![
        ("cli status", {
            let i = i.clone();
            Box::new(move || {
                let output = as_other(d, &["status", &i, "--json"]);
                !output.status.success() && !text_of(&output).contains("mine alone")
            })
        }),
        ("cli withdraw", {
            let i = i.clone();
            Box::new(move || !as_other(d, &["withdraw", &i]).status.success())
        }),
        ("cli list", {
            let (i, their_id) = (i.clone(), their_id.clone());
            Box::new(move || {
                let listed = text_of(&as_other(d, &["list", "--json"]));
                !listed.contains(&i) && listed.contains(&their_id)
            })
        }),
        ("mcp consent_status", {
            let i = i.clone();
            Box::new(move || {
                let answer = mcp_as_other(d, &[("consent_status", serde_json::json!({"id": i}))]);
                answer[0]["result"]["isError"] == true
                    && !answer[0].to_string().contains("mine alone")
            })
        }),
        ("mcp consent_withdraw", {
            let i = i.clone();
            Box::new(move || {
                let answer = mcp_as_other(d, &[("consent_withdraw", serde_json::json!({"id": i}))]);
                answer[0]["result"]["structuredContent"]["status"] != "withdrawn"
            })
        }),
        ("mcp consent_list", {
            let i = i.clone();
            Box::new(move || {
                let answer = mcp_as_other(d, &[("consent_list", serde_json::json!({}))]);
                let text = answer[0].to_string();
                !text.contains(&i) && text.contains(&their_id)
            })
        }),
    ];
    for (case, holds) in cases {
        assert!(holds(), "{case}: acted on another uid's record");
        let status = daemon.request(&serde_json::json!({"v":1,"op":"status","id":id}));
        assert_eq!(status["status"], "card_shown", "{case}: {status}");
    }
}
