//! The server against an in-memory client and a scripted daemon on a real Unix socket. Waits
//! run on tokio's paused clock, so `--max-wait` and progress are checked without real time.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::UnixListener;

use super::*;
use crate::client::SocketFrom;

fn options(socket: PathBuf) -> Options {
    Options {
        socket: Socket {
            path: socket,
            from: SocketFrom::Flag,
        },
        origin: Some("Tests · ~/src".to_owned()),
        max_wait: Duration::from_secs(540),
        progress_every: Duration::from_secs(30),
        approval_kind: Some("shell".to_owned()),
    }
}

/// A client speaking to a server on a duplex pipe.
struct Client {
    to_server: DuplexStream,
    from_server: tokio::io::Lines<BufReader<DuplexStream>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn start(options: Options) -> Client {
        let (to_server, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, from_server) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(serve_on(server_in, server_out, options));
        Client {
            to_server,
            from_server: BufReader::new(from_server).lines(),
            server,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        self.to_server.write_all(line.as_bytes()).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn next(&mut self) -> Value {
        let line = self.from_server.next_line().await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.next().await
    }
}

fn no_socket() -> PathBuf {
    PathBuf::from("/nonexistent/consentd-test.sock")
}

#[test]
fn malformed_messages_get_the_error_json_rpc_names() {
    let cases: [(&str, i64, Value); 8] = [
        ("{not json", -32700, Value::Null),
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            -32600,
            Value::Null,
        ),
        ("42", -32600, Value::Null),
        ("{\"id\":1,\"method\":\"ping\"}", -32600, json!(1)),
        (
            "{\"jsonrpc\":\"1.0\",\"id\":\"a\",\"method\":\"ping\"}",
            -32600,
            json!("a"),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
            -32600,
            Value::Null,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
            -32600,
            Value::Null,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":[1]}",
            -32600,
            json!(2),
        ),
    ];
    for (line, code, id) in cases {
        let (answer_id, error) = rpc::parse(line.as_bytes()).expect_err(line);
        assert_eq!(error.code, code, "{line}");
        assert_eq!(answer_id, id, "{line}");
    }
}

#[test]
fn requests_notifications_and_responses_are_told_apart() {
    let cases = [
        (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, "request"),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}"#,
            "request",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification",
        ),
        (r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "response"),
        (
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#,
            "response",
        ),
        ("   ", "blank"),
    ];
    for (line, what) in cases {
        let parsed = rpc::parse(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e:?}"));
        let got = match parsed {
            rpc::Incoming::Request { .. } => "request",
            rpc::Incoming::Notification { .. } => "notification",
            rpc::Incoming::Response => "response",
            rpc::Incoming::Blank => "blank",
        };
        assert_eq!(got, what, "{line}");
    }
}

#[tokio::test]
async fn initialize_echoes_a_revision_it_speaks_and_offers_its_own_otherwise() {
    let mut client = Client::start(options(no_socket()));
    let cases = [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ];
    for (n, (asked, answered)) in cases.into_iter().enumerate() {
        let params = json!({"protocolVersion": asked, "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}});
        let answer = client.request(n as i64, "initialize", params).await;
        assert_eq!(answer["result"]["protocolVersion"], answered, "{asked}");
        assert_eq!(
            answer["result"]["capabilities"]["tools"]["listChanged"],
            false
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "consentd");
    }
}

#[tokio::test]
async fn unknown_methods_are_method_not_found_and_notifications_get_no_answer() {
    let mut client = Client::start(options(no_socket()));
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"}))
        .await;
    for (id, method) in [
        (1, "server/discover"),
        (2, "resources/list"),
        (3, "tasks/get"),
    ] {
        let answer = client.request(id, method, json!({})).await;
        assert_eq!(
            answer["id"], id,
            "{method}: the notifications before got no answer"
        );
        assert_eq!(answer["error"]["code"], -32601, "{method}");
    }
    let pong = client.request(4, "ping", json!({})).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
}

#[tokio::test]
async fn tools_list_names_every_tool_with_a_closed_object_schema() {
    let mut client = Client::start(options(no_socket()));
    let answer = client.request(1, "tools/list", json!({})).await;
    let tools = answer["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "consent_ask",
            "consent_mandate",
            "consent_status",
            "consent_list",
            "consent_kinds",
            "consent_withdraw",
            "approval_prompt"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{}", tool["name"]);
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 20));
        if tool["name"] != "approval_prompt" {
            assert_eq!(
                tool["inputSchema"]["additionalProperties"], false,
                "{}",
                tool["name"]
            );
            assert_eq!(tool["outputSchema"]["type"], "object", "{}", tool["name"]);
        }
    }
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_that_say_what_to_fix_and_ask_nothing() {
    let mut client = Client::start(options(no_socket()));
    let cases = [
        (
            json!({"name": "consent_ask", "arguments": {}}),
            "`kind` is required",
        ),
        (
            json!({"name": "consent_ask", "arguments": {"kind": 3}}),
            "`kind` must be a string",
        ),
        (
            json!({"name": "consent_ask", "arguments": {"kind": "x", "color": "red"}}),
            "unknown argument `color`",
        ),
        (
            json!({"name": "consent_ask", "arguments": {"kind": "x", "fields": {"a": 1}}}),
            "`fields` must be an object of strings",
        ),
        (
            json!({"name": "consent_ask", "arguments": {"kind": "x", "attachments": ["/nonexistent/a.png"]}}),
            "attachment /nonexistent/a.png",
        ),
        (
            json!({"name": "consent_ask", "arguments": {"kind": "x", "ttl_seconds": -5}}),
            "`ttl_seconds` must be a whole number",
        ),
        (
            json!({"name": "consent_status", "arguments": {}}),
            "`id` is required",
        ),
        (
            json!({"name": "consent_kinds", "arguments": {"x": 1}}),
            "unknown argument `x`",
        ),
        (
            json!({"name": "consent_mandate", "arguments": "kind"}),
            "arguments must be an object",
        ),
    ];
    for (n, (params, says)) in cases.into_iter().enumerate() {
        let answer = client.request(n as i64, "tools/call", params.clone()).await;
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{params}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{params}: {text}");
        assert!(text.contains("Nothing was asked"), "{params}: {text}");
    }
    let unknown = client
        .request(99, "tools/call", json!({"name": "rm_rf", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test]
async fn a_daemon_that_cannot_be_reached_is_a_tool_error_and_approval_denies() {
    let mut client = Client::start(options(no_socket()));
    let answer = client
        .request(
            1,
            "tools/call",
            json!({"name": "consent_ask", "arguments": {"kind": "x"}}),
        )
        .await;
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(answer["result"]["structuredContent"]["status"], "error");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("no socket at /nonexistent/consentd-test.sock"),
        "{text}"
    );
    assert!(text.contains("do not do the action another way"), "{text}");

    let prompt = json!({"name": "approval_prompt",
                        "arguments": {"tool_name": "Bash", "input": {"command": "ls"}}});
    let answer = client.request(2, "tools/call", prompt).await;
    let decision: Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(decision["behavior"], "deny");
}

/// A daemon on a real socket that answers each connection with `lines` and then keeps it open
/// (or closes it, with `close`); it hands back each request it read and tells when the
/// connection was closed by the client.
struct FakeDaemon {
    _dir: tempfile::TempDir,
    path: PathBuf,
    requests: tokio::sync::mpsc::UnboundedReceiver<Value>,
    closed: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl FakeDaemon {
    fn start(lines: Vec<Value>, close: bool) -> FakeDaemon {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = UnixListener::bind(&path).unwrap();
        let (request_tx, requests) = tokio::sync::mpsc::unbounded_channel();
        let (closed_tx, closed) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let (reader, mut writer) = stream.into_split();
                let mut reader = BufReader::new(reader).lines();
                let request = reader.next_line().await.unwrap().unwrap();
                request_tx
                    .send(serde_json::from_str(&request).unwrap())
                    .unwrap();
                for line in &lines {
                    writer
                        .write_all(format!("{line}\n").as_bytes())
                        .await
                        .unwrap();
                }
                if close {
                    continue;
                }
                let closed_tx = closed_tx.clone();
                tokio::spawn(async move {
                    // The end of the client's input is the client leaving.
                    while let Ok(Some(_)) = reader.next_line().await {}
                    let _ = closed_tx.send(());
                    drop(writer);
                });
            }
        });
        FakeDaemon {
            _dir: dir,
            path,
            requests,
            closed,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_max_wait_answers_pending_with_progress_on_the_way() {
    let mut daemon = FakeDaemon::start(
        vec![json!({"v": 1, "id": "r_0123456789abcdef0123", "status": "pending"})],
        false,
    );
    let mut client = Client::start(options(daemon.path.clone()));
    let started = tokio::time::Instant::now();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "consent_ask", "_meta": {"progressToken": "tok"},
            "arguments": {"kind": "publish_x", "target": "@a", "text": "hi"}}}),
        )
        .await;
    let mut progress = Vec::new();
    let answer = loop {
        let message = client.next().await;
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "tok");
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else {
            break message;
        }
    };
    // At --max-wait, after at most the 10 s it gives a `status` read of the record.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(540) && waited <= Duration::from_secs(551),
        "{waited:?}"
    );
    assert_eq!(answer["id"], 5);
    let result = &answer["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["id"], "r_0123456789abcdef0123");
    assert_eq!(result["structuredContent"]["status"], "pending");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Do not ask again: call consent_status"),
        "{text}"
    );
    // One at the first status line, then one every 30 s until 540 s.
    assert!(progress.len() >= 18, "{progress:?}");
    assert!(progress.windows(2).all(|w| w[1] > w[0]), "{progress:?}");
    assert!(
        progress.windows(2).all(|w| w[1] - w[0] <= 60.0),
        "{progress:?}"
    );
    let request = daemon.requests.recv().await.unwrap();
    assert_eq!(
        request,
        json!({"v": 1, "op": "ask", "kind": "publish_x", "target": "@a", "text": "hi",
               "origin": "Tests · ~/src", "wait": true})
    );
    daemon
        .closed
        .recv()
        .await
        .expect("the connection is closed at --max-wait");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_closes_its_connection_and_gets_no_answer() {
    let mut daemon = FakeDaemon::start(
        vec![json!({"v": 1, "id": "r_0123456789abcdef0123", "status": "card_shown"})],
        false,
    );
    let mut client = Client::start(options(daemon.path.clone()));
    client
        .send(json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {
            "name": "consent_status", "arguments": {"id": "r_0123456789abcdef0123", "wait": true}}}))
        .await;
    assert_eq!(daemon.requests.recv().await.unwrap()["op"], "status");
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "c1", "reason": "user"}}),
        )
        .await;
    daemon
        .closed
        .recv()
        .await
        .expect("the cancelled call's connection is closed");
    // The next answer is the ping's: the cancelled call never answers.
    let pong = client.request(2, "ping", json!({})).await;
    assert_eq!(pong["id"], 2);
    tokio::time::sleep(Duration::from_secs(600)).await;
    client.to_server.shutdown().await.unwrap();
    assert!(client.from_server.next_line().await.unwrap().is_none());
    client.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn final_answers_become_results_that_say_whether_to_retry() {
    let cases = [
        (
            json!({"v":1,"id":"r_1","status":"executed","result":"https://x/1"}),
            false,
            "Do not run it again",
        ),
        (
            json!({"v":1,"id":"r_1","status":"declined","message":"not today"}),
            false,
            "who said: not today\nDo not retry it as it was; follow what they said.",
        ),
        (
            json!({"v":1,"id":"r_1","status":"declined"}),
            false,
            "Declined by the owner. Do not retry",
        ),
        (
            json!({"v":1,"id":"r_1","status":"expired"}),
            false,
            "Do not retry on your own",
        ),
        (
            json!({"v":1,"id":"r_1","status":"failed","message":"exit status 3"}),
            false,
            "Do not retry",
        ),
        (
            json!({"v":1,"id":"r_1","status":"outcome_unknown"}),
            false,
            "Never retry",
        ),
        (
            json!({"v":1,"id":"r_1","status":"approved"}),
            false,
            "You may now do it yourself",
        ),
        (
            json!({"v":1,"id":"r_1","status":"withdrawn"}),
            false,
            "nothing ran",
        ),
        (
            json!({"v":1,"id":"r_1","status":"refused","reason":"not_nfc","message":"text: not NFC"}),
            true,
            "Fix exactly that",
        ),
        (
            json!({"v":1,"id":"r_1","status":"refused","reason":"kind_silenced","message":"paused"}),
            true,
            "Do not retry",
        ),
        (
            json!({"v":1,"status":"error","message":"internal error"}),
            true,
            "internal error",
        ),
    ];
    for (line, is_error, says) in cases {
        let mut daemon = FakeDaemon::start(vec![line.clone()], true);
        let mut client = Client::start(options(daemon.path.clone()));
        let answer = client
            .request(
                1,
                "tools/call",
                json!({"name": "consent_ask", "arguments": {"kind": "k"}}),
            )
            .await;
        let result = &answer["result"];
        assert_eq!(result["isError"], is_error, "{line}");
        assert_eq!(
            result["structuredContent"]["status"], line["status"],
            "{line}"
        );
        assert!(result["structuredContent"].get("v").is_none(), "{line}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{line}: {text}");
        daemon.requests.recv().await.unwrap();
    }
}

#[test]
fn attachments_are_read_only_from_regular_files_and_never_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![0u8; (20 << 20) + 1]).unwrap();
    let exact = dir.path().join("exact.bin");
    std::fs::write(&exact, vec![7u8; 20 << 20]).unwrap();
    let cases: [(&std::path::Path, Option<&str>); 5] = [
        // A FIFO would block the read forever waiting for a writer.
        (&fifo, Some("not a regular file")),
        (
            std::path::Path::new("/dev/zero"),
            Some("not a regular file"),
        ),
        (dir.path(), Some("not a regular file")),
        (&big, Some("more than the 20971520 bytes")),
        (&exact, None),
    ];
    for (path, refused) in cases {
        let read = crate::client::read_named_file(path);
        match refused {
            Some(says) => {
                let error = read.expect_err(&path.display().to_string()).to_string();
                assert!(error.contains(says), "{}: {error}", path.display());
            }
            None => assert_eq!(read.unwrap().len(), 20 << 20),
        }
    }
}
