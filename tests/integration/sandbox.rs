//! `consentd sandbox` without a browser: the config it writes, its chat page's JSON API (a press
//! there is a real callback the daemon accepts, a text there a real message), the sample kinds
//! whose runs fail and hang (`ask` exits 6 and 7), the page's refusals, a restart on a kept state
//! dir, and a clean stop on SIGTERM and SIGINT.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, noon_today, offset_to, stderr, stdout, BIN};

/// How long the sandbox may take to start, answer or stop before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `consentd sandbox`; killed when dropped.
struct Sandbox {
    child: Option<Child>,
    /// The banner's `name: value` lines.
    banner: Vec<(String, String)>,
    /// `127.0.0.1:PORT` of the page.
    page: String,
    /// `/s/TOKEN`: the page's secret path, before every path of the page.
    prefix: String,
    socket: PathBuf,
    /// The test clock's file: noon today, so the evening summary never joins the chat.
    _clock: tempfile::NamedTempFile,
    /// The sandbox's `TMPDIR`: a sandbox without `--state-dir` makes its state there, and one
    /// stopped by SIGKILL (every test's end) cannot remove it itself.
    _temp: tempfile::TempDir,
}

impl Sandbox {
    /// Starts the sandbox with `args` after `sandbox --port 0` and reads its banner.
    fn start(args: &[&str]) -> Sandbox {
        let clock = tempfile::NamedTempFile::new().unwrap();
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(clock.path(), offset_to(noon_today()).to_string()).unwrap();
        let mut child = Command::new(BIN)
            .args(["sandbox", "--port", "0"])
            .args(args)
            .env("CONSENTD_TEST_CLOCK_FILE", clock.path())
            .env("TMPDIR", temp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (lines, read) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + PATIENCE;
        let mut banner = Vec::new();
        while !banner
            .iter()
            .any(|(name, _): &(String, String)| name == "page")
        {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = read
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no banner from the sandbox; so far: {banner:?}"));
            if let Some((name, value)) = line.split_once(": ") {
                banner.push((name.to_owned(), value.to_owned()));
            }
        }
        let value = |name: &str| {
            banner
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {name}: line in {banner:?}"))
        };
        let url = value("page");
        let (page, prefix) = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix('/'))
            .and_then(|rest| rest.split_once('/'))
            .expect("page: http://HOST:PORT/s/TOKEN/");
        let token = prefix
            .strip_prefix("s/")
            .expect("page: http://HOST:PORT/s/TOKEN/");
        assert!(
            token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()),
            "the page's token is 32 random bytes in hex: {url}"
        );
        let (page, prefix) = (page.to_owned(), format!("/{prefix}"));
        let socket = PathBuf::from(value("socket"));
        Sandbox {
            child: Some(child),
            banner,
            page,
            prefix,
            socket,
            _clock: clock,
            _temp: temp,
        }
    }

    fn line(&self, name: &str) -> &str {
        &self.banner.iter().find(|(n, _)| n == name).unwrap().1
    }

    /// One HTTP/1.1 request to the page at `path` under its secret prefix; `Host` is the page's
    /// unless `headers` name one.
    fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        self.http_at(method, &format!("{}{path}", self.prefix), headers, body)
    }

    /// One HTTP/1.1 request to the page at `path` as it is (without the secret prefix).
    fn http_at(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.page).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            head.push_str(&format!("Host: {}\r\n", self.page));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, body.to_owned())
    }

    fn get_json(&self, path: &str) -> Value {
        let (status, body) = self.http("GET", path, &[], b"");
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let (status, body) = self.http(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        (
            status,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    /// Long-polls the chat until `f` holds of its messages, and returns them.
    fn wait_chat(&self, what: &str, f: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        let mut chat = self.get_json("/api/chat");
        loop {
            let messages = chat["messages"].as_array().unwrap();
            if f(messages) {
                return messages.clone();
            }
            assert!(Instant::now() < deadline, "never {what}: {chat:#}");
            chat = self.get_json(&format!("/api/chat?after={}", chat["version"]));
        }
    }

    /// Asks without waiting (`ask ARGS --no-wait`); the record's id and its card once the page
    /// shows it with its buttons.
    fn ask_card(&self, args: &[&str]) -> (String, Value) {
        let asked = self.cli(&[&["ask"], args, &["--no-wait"]].concat());
        assert_eq!(asked.status.code(), Some(8), "{}", stderr(&asked));
        let id = stdout(&asked).trim().to_owned();
        let messages = self.wait_chat("the card", |messages| {
            messages
                .iter()
                .any(|m| text_of(m).contains(&id) && has_buttons(m))
        });
        let card = messages.iter().find(|m| text_of(m).contains(&id)).unwrap();
        (id, card.clone())
    }

    /// Runs a client command against the sandbox's socket.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .args(args)
            .env("CONSENTD_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Sends `signal` and waits for the sandbox to exit.
    fn stop(&mut self, signal: Signal) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the sandbox did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn text_of(message: &Value) -> &str {
    message["text"].as_str().unwrap_or("")
}

fn has_buttons(message: &Value) -> bool {
    message["buttons"].as_array().is_some_and(|rows| {
        rows.iter()
            .any(|row| row.as_array().is_some_and(|b| !b.is_empty()))
    })
}

#[test]
fn a_press_on_the_page_is_a_callback_the_daemon_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Sandbox::start(&["--state-dir", dir.path().to_str().unwrap()]);
    assert!(sandbox.page.starts_with("127.0.0.1:"), "{}", sandbox.page);
    assert_eq!(sandbox.socket, dir.path().join("consent.sock"));
    let check = consentd(&[
        "check-config",
        // The sandbox hands its daemon the emulator's token itself: the config names none.
        "--file-only",
        dir.path().join("consentd.toml").to_str().unwrap(),
    ]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    assert!(
        stdout(&check).starts_with("ok: 6 categories (6 on)"),
        "{}",
        stdout(&check)
    );

    let chat = sandbox.get_json("/api/chat");
    assert_eq!(chat["messages"], json!([]));
    assert_eq!(chat["language"], "en");
    assert!(
        chat["try_line"]
            .as_str()
            .unwrap()
            .contains("ask --kind publish_x"),
        "{chat}"
    );

    let (id, card) = sandbox.ask_card(&[
        "--kind",
        "publish_x",
        "--target",
        "@example",
        "--text",
        "From the test",
    ]);
    let card = &card;
    assert_eq!(card["from_bot"], true);
    assert_eq!(card["card"], true);
    assert_eq!(card["silent"], false, "no quiet hours in the sandbox");
    assert_eq!(card["settled"], false);
    assert_eq!(card["class"], "external");
    let yes = &card["buttons"][0][0];
    assert_eq!(yes["text"], "Yes");
    assert_eq!(yes["action"], "yes");
    assert_eq!(card["buttons"][0][1]["action"], "no");

    // Only data the card carries can be pressed, as in Telegram.
    let (status, _) = sandbox.post(
        "/api/press",
        &json!({"message_id": card["id"], "data": "1.0000.y.forged"}),
    );
    assert_eq!(status, 404);
    let (status, pressed) = sandbox.post(
        "/api/press",
        &json!({"message_id": card["id"], "data": yes["callback_data"]}),
    );
    assert_eq!(status, 200, "{pressed}");

    let done = sandbox.cli(&["status", &id, "--wait", "--json"]);
    let done: Value = serde_json::from_str(stdout(&done).trim()).unwrap();
    assert_eq!(done["status"], "executed", "{done}");
    assert_eq!(
        done["result"],
        format!("https://example.org/sandbox/posts/{id}")
    );
    let messages = sandbox.wait_chat("the card edited with its outcome", |messages| {
        messages.iter().any(|m| {
            text_of(m).contains(&id) && text_of(m).contains("Outcome: done") && !has_buttons(m)
        })
    });
    let card = messages.iter().find(|m| text_of(m).contains(&id)).unwrap();
    assert_eq!(card["edited"], true);
    assert_eq!(card["card"], true);
    assert_eq!(card["settled"], true);
    // The outcome's lines, as UTF-16 units of the text (all ASCII here).
    let (offset, length) = (
        card["outcome"]["offset"].as_u64().unwrap() as usize,
        card["outcome"]["length"].as_u64().unwrap() as usize,
    );
    assert!(
        text_of(card)[offset..offset + length]
            .starts_with("Outcome: done. Decided by Owner.\nResult: "),
        "{card}"
    );
    assert!(!card["earlier"].as_array().unwrap().is_empty());
    let answers = sandbox.get_json("/api/chat")["answers"].clone();
    assert!(
        answers
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["query_id"] == pressed["query_id"]),
        "the press was answered: {answers}"
    );

    assert!(sandbox.stop(Signal::SIGTERM).success());
    assert!(!sandbox.socket.exists(), "the socket is removed");
    assert!(
        dir.path().join("state/decisions.jsonl").exists(),
        "--state-dir is kept"
    );
}

/// The sandbox has the reply's wait on: "No, and say why…" pressed on the page, then the
/// owner's reply to the card written on the page, reaches the session as its `message`.
#[test]
fn no_and_say_why_and_a_reply_from_the_page_reach_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Sandbox::start(&["--state-dir", dir.path().to_str().unwrap()]);
    let (id, card) = sandbox.ask_card(&[
        "--kind",
        "publish_x",
        "--target",
        "@example",
        "--text",
        "Say why",
    ]);
    let why = &card["buttons"][1][0];
    assert_eq!(why["text"], "No, and say why…", "{card}");
    assert_eq!(why["action"], "no_say_why", "{card}");
    let (status, pressed) = sandbox.post(
        "/api/press",
        &json!({"message_id": card["id"], "data": why["callback_data"]}),
    );
    assert_eq!(status, 200, "{pressed}");
    sandbox.wait_chat("the card asking for a reply", |messages| {
        messages
            .iter()
            .any(|m| text_of(m).contains(&id) && text_of(m).contains("Reply to this message by"))
    });
    let (status, _) = sandbox.post(
        "/api/send",
        &json!({"text": "because", "reply_to": 999_999}),
    );
    assert_eq!(status, 400, "a reply to a message the chat does not have");
    let (status, sent) = sandbox.post(
        "/api/send",
        &json!({"text": "Not on a Sunday", "reply_to": card["id"]}),
    );
    assert_eq!(status, 200, "{sent}");
    let done = sandbox.cli(&["status", &id, "--wait", "--json"]);
    let done: Value = serde_json::from_str(stdout(&done).trim()).unwrap();
    assert_eq!(done["status"], "declined", "{done}");
    assert_eq!(done["message"], "Not on a Sunday", "{done}");
    assert!(sandbox.stop(Signal::SIGTERM).success());
}

#[test]
fn the_kinds_that_fail_and_hang_end_ask_with_6_and_7() {
    let sandbox = Sandbox::start(&[]);
    for (kind, code, status, message, outcome) in [
        (
            "always_fails",
            6,
            "failed",
            "exit status 3",
            "Outcome: failed",
        ),
        (
            "always_hangs",
            7,
            "outcome_unknown",
            "the command did not finish in time and was killed",
            "Outcome: outcome unknown",
        ),
    ] {
        let text = format!("Trying {kind}");
        let ask = Command::new(BIN)
            .args(["ask", "--kind", kind, "--text", &text, "--json"])
            .env("CONSENTD_SOCKET", &sandbox.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let messages = sandbox.wait_chat(&format!("the card of {kind}"), |messages| {
            messages
                .iter()
                .any(|m| text_of(m).contains(&text) && has_buttons(m))
        });
        let card = messages
            .iter()
            .find(|m| text_of(m).contains(&text) && has_buttons(m))
            .unwrap();
        let (pressed, answer) = sandbox.post(
            "/api/press",
            &json!({"message_id": card["id"], "data": card["buttons"][0][0]["callback_data"]}),
        );
        assert_eq!(pressed, 200, "{kind}: {answer}");
        // The hang ends at its category's timeout (3s): the only real time this test waits for.
        let output = ask.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(code),
            "{kind}: {}",
            stderr(&output)
        );
        let last = stdout(&output)
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned();
        let answer: Value = serde_json::from_str(&last).unwrap();
        assert_eq!(answer["status"], status, "{kind}: {answer}");
        assert_eq!(answer["message"], message, "{kind}: {answer}");
        assert!(answer.get("result").is_none(), "{kind}: {answer}");
        let id = answer["id"].as_str().unwrap().to_owned();
        sandbox.wait_chat(
            &format!("the card of {kind} with its outcome"),
            |messages| {
                messages.iter().any(|m| {
                    text_of(m).contains(&id) && text_of(m).contains(outcome) && !has_buttons(m)
                })
            },
        );
        let status_of = sandbox.cli(&["status", &id]);
        assert_eq!(
            status_of.status.code(),
            Some(code),
            "{kind}: status exits as ask did"
        );
    }
}

#[test]
fn the_owner_writes_from_the_page_also_after_a_restart_on_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().to_str().unwrap();
    // The page's words follow the owner's language, which the daemon keeps across restarts.
    for (round, command, reply, before, after) in [
        (1, "/pending", "No asks are waiting.", "en", "en"),
        (2, "/help", "Commands:", "en", "en"),
        (3, "/lang pt", "Idioma: português.", "en", "pt"),
        (4, "/help", "Comandos:", "pt", "pt"),
    ] {
        let mut sandbox = Sandbox::start(&["--state-dir", state_dir]);
        let language = |sandbox: &Sandbox| sandbox.get_json("/api/chat")["language"].clone();
        assert_eq!(language(&sandbox), before, "round {round}");
        let (status, sent) = sandbox.post("/api/send", &json!({"text": command}));
        assert_eq!(status, 200, "round {round}: {sent}");
        // The restarted emulator gives ids above the offset the daemon stored, so the daemon
        // does not skip them as already handled.
        sandbox.wait_chat(
            &format!("round {round}: the reply to {command}"),
            |messages| {
                let mine = messages
                    .iter()
                    .position(|m| m["from_bot"] == false && text_of(m) == command);
                mine.is_some_and(|at| {
                    messages[at..]
                        .iter()
                        .any(|m| m["from_bot"] == true && text_of(m).starts_with(reply))
                })
            },
        );
        assert_eq!(language(&sandbox), after, "round {round}");
        assert!(sandbox.stop(Signal::SIGTERM).success());
    }
}

#[test]
fn the_page_answers_only_itself() {
    let sandbox = Sandbox::start(&[]);
    let (status, page) = sandbox.http("GET", "/", &[], b"");
    assert_eq!(status, 200);
    assert!(page.contains("<script nonce=\""), "a nonce for the CSP");
    assert!(!page.contains("__NONCE__"));

    // A page from elsewhere, by DNS rebinding or across origins, gets nothing.
    let (status, _) = sandbox.http("GET", "/api/chat", &[("Host", "attacker.example:80")], b"");
    assert_eq!(status, 421);
    let (status, _) = sandbox.http(
        "POST",
        "/api/send",
        &[
            ("Content-Type", "application/json"),
            ("Origin", "http://attacker.example"),
        ],
        br#"{"text":"/pending"}"#,
    );
    assert_eq!(status, 403);
    let (status, _) = sandbox.http(
        "POST",
        "/api/send",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"text=/pending",
    );
    assert_eq!(status, 415, "a cross-site form cannot post");
    let (status, _) = sandbox.post("/api/send", &json!({"text": "   "}));
    assert_eq!(status, 400);
    let (status, _) = sandbox.post("/api/press", &json!({"message_id": 99, "data": "x"}));
    assert_eq!(status, 404);
    let (status, _) = sandbox.http("GET", "/api/file/nothing", &[], b"");
    assert_eq!(status, 404);
    assert_eq!(sandbox.get_json("/api/chat")["messages"], json!([]));
}

#[test]
fn a_fresh_state_dir_is_removed_when_sigint_stops_the_sandbox() {
    let mut sandbox = Sandbox::start(&[]);
    let state = sandbox.line("state").split(" (").next().unwrap().to_owned();
    assert!(std::path::Path::new(&state).join("consentd.toml").exists());
    let listed = sandbox.cli(&["list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert!(sandbox.stop(Signal::SIGINT).success());
    assert!(!std::path::Path::new(&state).exists(), "{state} is left");
}

#[test]
fn a_press_without_the_pages_token_is_refused_and_the_ask_stays_pending() {
    let sandbox = Sandbox::start(&[]);
    let other = Sandbox::start(&[]);
    assert_ne!(sandbox.prefix, other.prefix, "each run has its own token");
    let (id, card) = sandbox.ask_card(&["--kind", "delete_post", "--target", "@example/1"]);
    let press = json!({"message_id": card["id"], "data": card["buttons"][0][0]["callback_data"]});
    let press = press.to_string();
    let token = sandbox.prefix.strip_prefix("/s/").unwrap();
    let status = || {
        let done = sandbox.cli(&["status", &id, "--json"]);
        serde_json::from_str::<Value>(stdout(&done).trim()).unwrap()["status"].clone()
    };
    let json = [("Content-Type", "application/json")];
    let cases = [
        ("no token", "/api/press".to_owned()),
        ("no token, at the root", "/".to_owned()),
        ("a wrong token", format!("/s/{}/api/press", "0".repeat(64))),
        ("another run's token", format!("{}/api/press", other.prefix)),
        (
            "the token cut short",
            format!("/s/{}/api/press", &token[..63]),
        ),
        ("the token and more", format!("/s/{token}0/api/press")),
        (
            "the token in upper case",
            format!("/s/{}/api/press", token.to_uppercase()),
        ),
        ("the token as a query", format!("/api/press?t={token}")),
        (
            "the token elsewhere in the path",
            format!("/api/press/s/{token}/"),
        ),
    ];
    for (name, path) in &cases {
        let (code, body) = sandbox.http_at("POST", path, &json, press.as_bytes());
        assert_eq!(code, 403, "{name}: {body}");
        assert_eq!(status(), "card_shown", "{name}: the ask is still waiting");
    }
    // Nor can the chat be read, or the page loaded, without it.
    for path in ["/api/chat", "/", "/favicon.svg", "/api/file/x"] {
        let (code, _) = sandbox.http_at("GET", path, &[], b"");
        assert_eq!(code, 403, "GET {path}");
    }
    let (code, _) = sandbox.http_at("GET", &format!("{}/api/chat", other.prefix), &[], b"");
    assert_eq!(code, 403, "another run's token reads nothing");
    // The address without its last slash leads to the page.
    let (code, _) = sandbox.http_at("GET", &sandbox.prefix, &[], b"");
    assert_eq!(code, 308);

    let (code, body) = sandbox.http("POST", "/api/press", &json, press.as_bytes());
    assert_eq!(code, 200, "with the token the press counts: {body}");
    let done = sandbox.cli(&["status", &id, "--wait", "--json"]);
    let done: Value = serde_json::from_str(stdout(&done).trim()).unwrap();
    assert_eq!(done["status"], "executed", "{done}");
}

/// The loopback ports the process `pid` listens on (from `/proc/<pid>/net/tcp` and the socket
/// inodes among its descriptors).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            let (addr, port) = local.split_once(':')?;
            (addr == "0100007F" && *state == "0A" && inodes.iter().any(|i| i == inode))
                .then(|| u16::from_str_radix(port, 16).ok())?
        })
        .collect()
}

/// The page is behind a secret token, and so is the sandbox's Bot API emulator on its other
/// loopback port: with a known bot token (the sandbox once had a fixed, published one) any local
/// process that finds the port could call `getUpdates` as the bot, which ends the daemon's long
/// poll with 409 Conflict, as Telegram does, and cut the owner off (a poller of its own would
/// take the owner's presses before the daemon saw them).
#[test]
fn a_local_process_without_the_page_token_cannot_stop_the_sandbox_through_its_bot_api() {
    let mut sandbox = Sandbox::start(&[]);
    let pid = sandbox.child.as_ref().unwrap().id();
    let page_port: u16 = sandbox.page.rsplit(':').next().unwrap().parse().unwrap();
    let ports: Vec<u16> = listening_ports(pid)
        .into_iter()
        .filter(|port| *port != page_port)
        .collect();
    assert!(!ports.is_empty(), "the emulator's port is found");
    for port in ports {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            continue;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let request = format!(
            "GET /bot1000001:sandbox-token-not-a-secret/getUpdates?timeout=0 HTTP/1.1\r\n\
             Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        );
        let _ = stream.write_all(request.as_bytes());
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
    }
    std::thread::sleep(Duration::from_secs(3));
    let running = sandbox
        .child
        .as_mut()
        .unwrap()
        .try_wait()
        .unwrap()
        .is_none();
    assert!(
        running,
        "a local process stopped the sandbox through the emulator"
    );
    let asked = sandbox.cli(&["kinds"]);
    assert!(asked.status.success(), "{}", stderr(&asked));
}
