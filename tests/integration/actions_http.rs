//! The `http` built-in action against a small HTTP server this test starts on loopback: the
//! body as docs/CONFIG.md documents it, 2xx → executed, 500 → failed, a server that reads the
//! request and never answers (or drops the connection) → outcome_unknown with the request
//! received once, a server that cannot be reached → failed, and the headers file's secret in
//! none of the daemon's outputs.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Digest as _;

use crate::attachments::PNG;
use crate::fixture::{Daemon, OWNER};

/// The secret the headers file holds; no output of the daemon may show it.
const SECRET: &str = "s3cret-hook-token-5f1d";

/// How the test's server answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// This status, and this body.
    Status(u16, &'static str),
    /// Reads the request, then holds the connection open without a word.
    Silent,
    /// Reads the request, then closes the connection without a word.
    Drop,
}

/// One request the server read.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    /// Lower-case names.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A server on 127.0.0.1 answering every request as `answer` says, keeping what it read.
struct Hook {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Hook {
    fn start(answer: Answer) -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            // Held open, unanswered, for as long as the test runs.
            let mut silent: Vec<TcpStream> = Vec::new();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&stream) else {
                    continue;
                };
                kept.lock().unwrap().push(request);
                match answer {
                    Answer::Status(code, body) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {code} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Answer::Silent => silent.push(stream),
                    Answer::Drop => drop(stream),
                }
            }
        });
        Hook { port, received }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

/// A daemon with a `notify` category sending to `hook`, its headers file holding [`SECRET`].
fn daemon_for(hook: &Hook) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("hook.headers");
    std::fs::write(
        &headers,
        format!("# the hook's key\nAuthorization: Bearer {SECRET}\nX-Team: ops\n"),
    )
    .unwrap();
    std::fs::set_permissions(&headers, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tail = format!(
        "[categories.notify]\nlabel = {{ en = \"Notify the team\" }}\nclass = \"external\"\n\
         enabled = true\ntarget = \"optional\"\ntext = \"required\"\nfields = [\"channel\"]\n\
         attachments = 2\naction = \"http\"\nurl = \"{}\"\n\
         headers_file = \"{{dir}}/hook.headers\"\ntimeout = \"1s\"\n",
        hook.url()
    );
    Daemon::builder()
        .config_tail(&tail)
        .try_start_in(dir)
        .unwrap_or_else(|failure| panic!("{failure}"))
}

/// Asks for a `notify` action with a text, a field, a target and the PNG, and presses Yes.
fn ask_and_approve(daemon: &Daemon) -> String {
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"notify","target":"#ops",
        "text":"The deploy is done.\nAll green.","fields":{"channel":"ops"},"wait":false,
        "attachments":[{"name":"chart.png","media_type":"image/png",
            "data_b64":base64::engine::general_purpose::STANDARD.encode(PNG)}]}));
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    id
}

/// The secret is in none of the daemon's outputs: each output its own assertion.
fn assert_secret_kept(daemon: &Daemon, id: &str) {
    let status = daemon
        .request(&json!({"v":1,"op":"status","id":id}))
        .to_string();
    let chat: String = daemon
        .bot
        .messages(OWNER)
        .iter()
        .flat_map(|m| {
            let history = m.history.iter().filter_map(|r| r.text.clone());
            m.body().map(str::to_owned).into_iter().chain(history)
        })
        .collect();
    let outputs = [
        ("the journal", daemon.journal_text()),
        ("the daemon's log", daemon.log()),
        ("the status answer", status),
        ("the owner's chat", chat),
    ];
    for (name, text) in outputs {
        assert!(!text.is_empty(), "{name} is empty: nothing was checked");
        assert!(
            !text.contains(SECRET),
            "{name} shows the headers file's secret"
        );
    }
}

#[test]
fn a_2xx_is_executed_and_the_body_is_the_documented_json() {
    let hook = Hook::start(Answer::Status(201, "accepted as #42\nsecond line"));
    let daemon = daemon_for(&hook);
    let id = ask_and_approve(&daemon);
    let status = daemon.wait_state(&id, "executed");
    assert_eq!(status["result"], "accepted as #42", "{status}");

    let received = hook.received();
    assert_eq!(received.len(), 1, "one request: {received:?}");
    let request = &received[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/hook")
    );
    let expected_headers = [
        ("content-type", "application/json"),
        ("idempotency-key", id.as_str()),
        ("authorization", &format!("Bearer {SECRET}")),
        ("x-team", "ops"),
    ];
    for (name, value) in expected_headers {
        assert_eq!(request.header(name), Some(value), "header {name}");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let sha256 = hex::encode(sha2::Sha256::digest(PNG));
    let expected = json!({
        "id": id, "kind": "notify", "target": "#ops", "text": "The deploy is done.\nAll green.",
        "fields": {"channel": "ops"}, "cost_usd": null,
        "attachments": [{"name": "chart.png", "media_type": "image/png", "sha256": sha256,
            "bytes": PNG.len(),
            "content_base64": base64::engine::general_purpose::STANDARD.encode(PNG)}]
    });
    assert_eq!(body, expected);
    assert_secret_kept(&daemon, &id);
}

#[test]
fn a_500_is_failed_with_the_status_and_the_first_line() {
    let hook = Hook::start(Answer::Status(500, "database is down\ntrace…"));
    let daemon = daemon_for(&hook);
    let id = ask_and_approve(&daemon);
    let status = daemon.wait_state(&id, "failed");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("HTTP 500") && message.contains("database is down"),
        "{status}"
    );
    assert!(!message.contains("trace"), "only the first line: {status}");
    assert_eq!(hook.received().len(), 1);
    assert_secret_kept(&daemon, &id);
}

#[test]
fn a_server_that_never_answers_is_outcome_unknown_after_the_timeout_and_asked_once() {
    let hook = Hook::start(Answer::Silent);
    let daemon = daemon_for(&hook);
    let id = ask_and_approve(&daemon);
    let status = daemon.wait_state(&id, "outcome_unknown");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("may or may not")),
        "{status}"
    );
    let finals: Vec<Value> = daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id.as_str() && e["ev"] == "outcome_unknown")
        .collect();
    assert_eq!(finals.len(), 1, "{finals:?}");
    assert_eq!(finals[0]["detail"], "timeout");
    assert_eq!(
        hook.received().len(),
        1,
        "the request was sent exactly once"
    );
    assert_secret_kept(&daemon, &id);
}

#[test]
fn a_connection_dropped_after_the_request_is_outcome_unknown_and_not_sent_again() {
    let hook = Hook::start(Answer::Drop);
    let daemon = daemon_for(&hook);
    let id = ask_and_approve(&daemon);
    let status = daemon.wait_state(&id, "outcome_unknown");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("connection broke")),
        "{status}"
    );
    assert_eq!(
        hook.received().len(),
        1,
        "the request was sent exactly once"
    );
    assert_secret_kept(&daemon, &id);
}

#[test]
fn a_server_that_cannot_be_reached_is_failed_since_nothing_was_sent() {
    // A port that was just free: nothing listens there, the connection is refused.
    let closed = Hook {
        port: TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port(),
        received: Arc::default(),
    };
    let daemon = daemon_for(&closed);
    let id = ask_and_approve(&daemon);
    let status = daemon.wait_state(&id, "failed");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not be sent")),
        "{status}"
    );
    assert_secret_kept(&daemon, &id);
}
