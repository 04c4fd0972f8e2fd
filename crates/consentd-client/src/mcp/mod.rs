//! `consentd mcp`: a stdio MCP server (revision 2025-11-25) that is a thin client of the
//! daemon's socket.
//!
//! It runs as the agent's user and holds nothing of the daemon's: no key, no token, no state but
//! the tool calls in flight. Every tool is one socket request (docs/PROTOCOL.md); what the owner
//! decides is decided in the daemon, so this process can crash, be killed or be cancelled at any
//! point without changing a record — a cancelled call only closes its connection, and the record
//! goes on (docs/adr/0003 says why the JSON-RPC loop is written here rather than taken from an
//! SDK).
//!
//! Framing is the MCP stdio transport: one JSON-RPC message per line on stdin and stdout, never
//! anything else on stdout; diagnostics go to stderr.

mod approval;
mod call;
mod guidance;
mod rpc;
mod tools;
mod waiter;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::client::Socket;
use rpc::{Incoming, RpcError};

/// The revision this server implements; an `initialize` naming one it also speaks gets that one
/// echoed, anything else gets this (the client then decides whether to go on).
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
/// Revisions whose tool calls, progress and cancellation are what this server does. Not
/// 2025-03-26, whose servers must take JSON-RPC batches.
const SPOKEN_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The longest line read from stdin. Attachments travel as file paths, never as bytes, so a
/// legitimate message is small; a longer line is answered with a parse error and skipped.
const MAX_LINE_BYTES: usize = 4 << 20;

/// `consentd mcp`'s flags.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The daemon's socket (default: $CONSENTD_SOCKET, else /run/consentd/consent.sock)
    #[arg(long, value_name = "PATH")]
    socket: Option<std::path::PathBuf>,
    /// A line shown on every card this server asks for, saying who asks (for example
    /// "Claude Code · ~/src/blog"); a call's own `origin` replaces it
    #[arg(long, value_name = "S")]
    origin: Option<String>,
    /// How long a call waits for the owner before it answers pending with the record's id;
    /// keep it under the client's tool timeout
    #[arg(long, value_name = "DURATION", default_value = "540s", value_parser = duration)]
    max_wait: Duration,
    /// How often a waiting call reports progress, when the client asked for progress
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    progress_every: Duration,
    /// The approval-only kind `approval_prompt` asks with (Claude Code's
    /// --permission-prompt-tool); without it, that tool denies every call
    #[arg(long, value_name = "K")]
    approval_kind: Option<String>,
}

/// A duration flag: `90s`, `15m`, `1h`, at least one second.
fn duration(text: &str) -> Result<Duration, String> {
    let duration = consentd_core::config::parse_duration(text)?;
    if duration < Duration::from_secs(1) {
        return Err("at least 1s".to_owned());
    }
    Ok(duration)
}

impl McpArgs {
    pub fn into_options(self) -> Options {
        Options {
            socket: crate::client::socket_path(self.socket),
            origin: self.origin,
            max_wait: self.max_wait,
            progress_every: self.progress_every,
            approval_kind: self.approval_kind,
        }
    }
}

/// How the server is set up from its command line.
#[derive(Debug, Clone)]
pub struct Options {
    pub socket: Socket,
    /// The origin line sent with asks whose call names none (e.g. `Claude Code · ~/src/blog`).
    pub origin: Option<String>,
    /// How long a call waits for the owner before it answers `pending` with the id.
    pub max_wait: Duration,
    /// How often a waiting call with a progress token reports progress.
    pub progress_every: Duration,
    /// The approval-only kind `approval_prompt` asks with.
    pub approval_kind: Option<String>,
}

/// Serves MCP on stdin/stdout until stdin ends.
pub async fn serve(options: Options) -> std::io::Result<()> {
    serve_on(tokio::io::stdin(), tokio::io::stdout(), options).await
}

/// Serves MCP on `input`/`output` until `input` ends, then waits for the calls in flight.
pub(crate) async fn serve_on(
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
    options: Options,
) -> std::io::Result<()> {
    let (out, outgoing) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(write_messages(output, outgoing));
    let server = Server {
        options: Arc::new(options),
        out,
        in_flight: Arc::new(Mutex::new(HashMap::new())),
    };
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
            server.send(rpc::error_response(
                Value::Null,
                &RpcError::parse(format!("a message longer than {MAX_LINE_BYTES} bytes")),
            ));
            skip_rest_of_line(&mut input).await?;
            continue;
        }
        server.handle_line(&line);
    }
    let tasks: Vec<AbortHandle> = server.lock_in_flight().drain().map(|(_, h)| h).collect();
    // Stdin closed: the client is gone, so nobody can read an answer. Closing the calls'
    // connections leaves their records to go on in the daemon.
    for task in tasks {
        task.abort();
    }
    drop(server);
    writer.await.unwrap_or(Ok(()))
}

async fn skip_rest_of_line(input: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<()> {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        let read = input
            .take(MAX_LINE_BYTES as u64)
            .read_until(b'\n', &mut sink)
            .await?;
        if read == 0 || sink.ends_with(b"\n") {
            return Ok(());
        }
    }
}

/// Writes each message as one line, in the order they were sent.
async fn write_messages(
    mut output: impl AsyncWrite + Unpin,
    mut outgoing: mpsc::UnboundedReceiver<Value>,
) -> std::io::Result<()> {
    while let Some(message) = outgoing.recv().await {
        let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
        line.push(b'\n');
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

/// The server's shared state: where answers go and the tool calls in flight, by request id.
#[derive(Clone)]
pub(crate) struct Server {
    options: Arc<Options>,
    out: mpsc::UnboundedSender<Value>,
    in_flight: Arc<Mutex<HashMap<String, AbortHandle>>>,
}

impl Server {
    fn send(&self, message: Value) {
        // The writer ends only when stdout is gone; then there is nobody to tell.
        let _ = self.out.send(message);
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, AbortHandle>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn handle_line(&self, line: &[u8]) {
        match rpc::parse(line) {
            Ok(Incoming::Request { id, method, params }) => self.request(id, &method, params),
            Ok(Incoming::Notification { method, params }) => self.notification(&method, &params),
            // Answers to requests this server never sends: nothing to do.
            Ok(Incoming::Response) | Ok(Incoming::Blank) => {}
            Err((id, error)) => self.send(rpc::error_response(id, &error)),
        }
    }

    fn request(&self, id: Value, method: &str, params: Value) {
        let answer = match method {
            "initialize" => Ok(initialize_result(&params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({ "tools": tools::list() })),
            "tools/call" => return self.start_call(id, params),
            _ => Err(RpcError::method_not_found(method)),
        };
        self.send(match answer {
            Ok(result) => rpc::result_response(id, result),
            Err(error) => rpc::error_response(id, &error),
        });
    }

    fn notification(&self, method: &str, params: &Value) {
        if method == "notifications/cancelled" {
            let Some(request_id) = params.get("requestId") else {
                return;
            };
            // Aborting the call drops its socket connection; the daemon keeps the record.
            if let Some(task) = self.lock_in_flight().remove(&rpc::id_key(request_id)) {
                task.abort();
            }
        }
        // `notifications/initialized` and any other notification need no answer.
    }

    /// Runs a tool call on its own task, so a long wait for the owner never holds up `ping`,
    /// other calls or a cancellation.
    fn start_call(&self, id: Value, params: Value) {
        let key = rpc::id_key(&id);
        let server = self.clone();
        let mut in_flight = self.lock_in_flight();
        if in_flight.contains_key(&key) {
            drop(in_flight);
            let error = RpcError::invalid_request("a request with this id is still in flight");
            return self.send(rpc::error_response(id, &error));
        }
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let answer = call::call(&server, &params).await;
            // Removed before answering: a cancellation that comes after this finds nothing,
            // and one that came before aborted this task, so no answer follows it.
            if server.lock_in_flight().remove(&task_key).is_some() {
                server.send(match answer {
                    Ok(result) => rpc::result_response(id, result),
                    Err(error) => rpc::error_response(id, &error),
                });
            }
        });
        in_flight.insert(key, task.abort_handle());
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    /// Sends a progress notification for `token`.
    pub(crate) fn progress(&self, token: &Value, progress: f64, message: &str) {
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": { "progressToken": token, "progress": progress, "message": message },
        }));
    }
}

fn initialize_result(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|asked| SPOKEN_VERSIONS.contains(asked))
        .unwrap_or(PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": {
            "name": "consentd",
            "title": "consentd: the owner's consent",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "instructions": INSTRUCTIONS,
    })
}

/// What the model is told about these tools once, at the start.
const INSTRUCTIONS: &str = "\
Actions that leave this machine in the owner's name (posts, messages, paid generations) are \
done by consentd, never by you: ask with consent_ask, and the owner approves or declines on \
their phone. Call consent_kinds first to learn which kinds exist and what each needs. A \
declined, expired, failed or outcome_unknown ask must not be retried; a refused one says what \
to fix. When a call answers pending, use consent_status with its id later instead of asking \
again.";

#[cfg(test)]
mod tests;
