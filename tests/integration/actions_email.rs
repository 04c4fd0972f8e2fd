//! The `email` built-in action against a minimal SMTP server this test starts on loopback: one
//! message to the right recipient with the subject, body and attachment the card showed, the
//! credentials file's login used and never shown, and a recipient the server refuses (5xx at
//! RCPT) → failed with nothing handed over.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::json;

use crate::attachments::PNG;
use crate::fixture::Daemon;

/// The password in the credentials file; no output of the daemon may show it.
const PASSWORD: &str = "pa55-smtp-9c1e";

/// One SMTP session as the server saw it.
#[derive(Debug, Clone, Default)]
struct Session {
    /// The decoded `AUTH PLAIN` argument, `\0user\0password`.
    auth: Option<String>,
    from: String,
    recipients: Vec<String>,
    /// The message as sent after DATA, dot-unstuffed; empty when no DATA was accepted.
    data: String,
}

/// A server taking every recipient but `nobody@…`, keeping each session.
fn smtp_server() -> (u16, Arc<Mutex<Vec<Session>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let kept = sessions.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut session = Session::default();
            // Kept as it goes, each change before its reply: what the daemon was told, the
            // test can read.
            let index = {
                let mut kept = kept.lock().unwrap();
                kept.push(Session::default());
                kept.len() - 1
            };
            let _ = stream.write_all(b"220 test.local ESMTP\r\n");
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                let command = line.trim_end().to_owned();
                line.clear();
                let upper = command.to_ascii_uppercase();
                let reply: String = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
                    "250-test.local\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n".into()
                } else if let Some(plain) = command.strip_prefix("AUTH PLAIN ") {
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(plain)
                        .unwrap_or_default();
                    session.auth = Some(String::from_utf8_lossy(&decoded).into_owned());
                    "235 2.7.0 Authentication successful\r\n".into()
                } else if upper.starts_with("MAIL FROM:") {
                    session.from = command[10..].to_owned();
                    "250 2.1.0 Ok\r\n".into()
                } else if upper.starts_with("RCPT TO:") {
                    let to = command[8..].to_owned();
                    if to.contains("nobody@") {
                        format!("550 5.1.1 {to}: Recipient address rejected\r\n")
                    } else {
                        session.recipients.push(to);
                        "250 2.1.5 Ok\r\n".into()
                    }
                } else if upper == "DATA" {
                    let _ = stream.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n");
                    let mut data = String::new();
                    let mut body = String::new();
                    while reader.read_line(&mut body).is_ok_and(|n| n > 0) {
                        if body == ".\r\n" {
                            break;
                        }
                        data.push_str(body.strip_prefix('.').unwrap_or(&body));
                        body.clear();
                    }
                    session.data = data;
                    "250 2.0.0 Ok: queued as 7F3A\r\n".into()
                } else if upper == "QUIT" {
                    let _ = stream.write_all(b"221 2.0.0 Bye\r\n");
                    break;
                } else {
                    "250 Ok\r\n".into()
                };
                kept.lock().unwrap()[index] = session.clone();
                let _ = stream.write_all(reply.as_bytes());
            }
        }
    });
    (port, sessions)
}

fn daemon_for(port: u16) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("smtp-credentials");
    std::fs::write(&credentials, format!("agent-login:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tail = format!(
        "[categories.send_email]\nlabel = {{ en = \"Send an email\" }}\nclass = \"external\"\n\
         enabled = true\ntarget = \"required\"\ntext = \"required\"\nfields = [\"subject\"]\n\
         attachments = 1\naction = \"email\"\nsmtp_url = \"smtp://127.0.0.1:{port}?tls=none\"\n\
         credentials_file = \"{{dir}}/smtp-credentials\"\nfrom = \"Agent <agent@example.org>\"\n\
         timeout = \"10s\"\n"
    );
    Daemon::builder()
        .config_tail(&tail)
        .try_start_in(dir)
        .unwrap_or_else(|failure| panic!("{failure}"))
}

fn ask_and_approve(daemon: &Daemon, to: &str) -> String {
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"send_email","target":to,
        "text":"The weekly report is attached.\nMila's agent","fields":{"subject":"Weekly report"},
        "wait":false,"attachments":[{"name":"chart.png","media_type":"image/png",
            "data_b64":base64::engine::general_purpose::STANDARD.encode(PNG)}]}));
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    id
}

/// The base64 body of the MIME part that carries `filename`, decoded.
fn attached(data: &str, filename: &str) -> Vec<u8> {
    let start = data
        .find(&format!("filename=\"{filename}\""))
        .unwrap_or_else(|| panic!("no part for {filename}:\n{data}"));
    let part = &data[start..];
    let body = &part[part.find("\r\n\r\n").unwrap() + 4..];
    let body = &body[..body.find("\r\n--").unwrap()];
    let compact: String = body.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .unwrap()
}

#[test]
fn one_message_reaches_the_recipient_with_its_subject_body_and_attachment() {
    let (port, sessions) = smtp_server();
    let daemon = daemon_for(port);
    let id = ask_and_approve(&daemon, "mila@example.org");
    let status = daemon.wait_state(&id, "executed");
    assert!(
        status["result"]
            .as_str()
            .is_some_and(|r| r.contains("queued as 7F3A")),
        "{status}"
    );
    let sessions = sessions.lock().unwrap().clone();
    let sent: Vec<&Session> = sessions.iter().filter(|s| !s.data.is_empty()).collect();
    assert_eq!(sent.len(), 1, "one message: {sessions:?}");
    let mail = sent[0];
    assert_eq!(mail.from, "<agent@example.org>");
    assert_eq!(mail.recipients, ["<mila@example.org>"]);
    assert_eq!(
        mail.auth.as_deref(),
        Some(format!("\0agent-login\0{PASSWORD}").as_str()),
        "the credentials file's login"
    );
    let headers = &mail.data[..mail.data.find("\r\n\r\n").unwrap()];
    for line in [
        "Subject: Weekly report",
        "To: mila@example.org",
        "From: Agent <agent@example.org>",
    ] {
        assert!(headers.contains(line), "{line:?} in\n{headers}");
    }
    assert!(
        mail.data
            .contains("The weekly report is attached.\r\nMila's agent"),
        "the text is the body:\n{}",
        mail.data
    );
    assert_eq!(attached(&mail.data, "chart.png"), PNG);

    let outputs = [
        ("the journal", daemon.journal_text()),
        ("the daemon's log", daemon.log()),
        (
            "the status answer",
            daemon
                .request(&json!({"v":1,"op":"status","id":id}))
                .to_string(),
        ),
    ];
    for (name, text) in outputs {
        assert!(!text.is_empty(), "{name} is empty: nothing was checked");
        assert!(!text.contains(PASSWORD), "{name} shows the SMTP password");
    }
}

#[test]
fn a_recipient_the_server_refuses_is_failed_and_nothing_is_handed_over() {
    let (port, sessions) = smtp_server();
    let daemon = daemon_for(port);
    let id = ask_and_approve(&daemon, "nobody@example.org");
    let status = daemon.wait_state(&id, "failed");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("550") || message.contains("Recipient address rejected"),
        "{status}"
    );
    let sessions = sessions.lock().unwrap().clone();
    assert_eq!(sessions.len(), 1, "one connection: {sessions:?}");
    assert_eq!(sessions[0].from, "<agent@example.org>", "{sessions:?}");
    assert!(
        sessions[0].recipients.is_empty() && sessions[0].data.is_empty(),
        "no recipient taken, no message handed over: {sessions:?}"
    );
    let finals: Vec<serde_json::Value> = daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id.as_str() && e["ev"] == "failed")
        .collect();
    assert_eq!(finals.len(), 1, "{finals:?}");
}
