//! One tool call's exchange with the daemon: its requests sent, progress reported to the MCP
//! client while the owner decides, and the wait cut at `--max-wait`.

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::time::{Duration, Instant};

use super::{guidance, Server};
use crate::client::{self, ClientError};

/// How an exchange with the daemon ended.
pub(super) enum Exchange {
    /// The daemon's final line.
    Final(Value),
    /// `--max-wait` passed first: the last line seen (it names the record and its status).
    StillOpen(Value),
}

/// Sends requests for one tool call, reporting progress while the owner decides.
pub(super) struct Waiter<'s> {
    pub server: &'s Server,
    /// The call's progress token, when the client asked for progress.
    pub progress: Option<Value>,
    /// The last progress value sent: each must be greater than the one before.
    pub sent: std::sync::Mutex<f64>,
}

impl Waiter<'_> {
    /// One request, its outcome shaped by `shape`; a daemon that cannot be reached is a tool
    /// error that says nothing was asked.
    pub(super) async fn answer(&self, request: Value, shape: fn(&Value) -> Value) -> Value {
        match self.exchange(&request).await {
            Ok(Exchange::Final(answer)) => shape(&answer),
            Ok(Exchange::StillOpen(last)) => {
                let now = self.current(&last).await;
                guidance::still_open(&now, self.server.options().max_wait)
            }
            Err(error) => guidance::unreachable(&error),
        }
    }

    /// Sends `request` and waits for the final line, at most `--max-wait`; meanwhile, when the
    /// client gave a progress token, a progress notification every `--progress-every` and at
    /// each new status.
    pub(super) async fn exchange(&self, request: &Value) -> Result<Exchange, ClientError> {
        let options = self.server.options();
        let (seen, mut latest) = watch::channel(None::<Value>);
        let exchange = client::request(&options.socket, request, move |line| {
            seen.send_replace(Some(line.clone()));
        });
        tokio::pin!(exchange);
        let started = Instant::now();
        let deadline = tokio::time::sleep(options.max_wait);
        tokio::pin!(deadline);
        let mut ticks =
            tokio::time::interval_at(started + options.progress_every, options.progress_every);
        loop {
            tokio::select! {
                answer = &mut exchange => return answer.map(Exchange::Final),
                () = &mut deadline => {
                    let last = latest.borrow().clone();
                    // Dropping the exchange closes the connection; the record goes on.
                    return last.map(Exchange::StillOpen).ok_or(ClientError::NoAnswer);
                }
                _ = ticks.tick() => self.report(started, latest.borrow().as_ref()),
                Ok(()) = latest.changed() => self.report(started, latest.borrow().as_ref()),
            }
        }
    }

    fn report(&self, started: Instant, last: Option<&Value>) {
        let Some(token) = &self.progress else { return };
        let waited = started.elapsed();
        let status = last
            .and_then(|line| line.get("status"))
            .and_then(Value::as_str);
        let message = match (status, last.and_then(crate::waiting::of)) {
            (Some(_), Some(waiting)) => format!(
                "{}; {} s so far",
                crate::waiting::for_model(&waiting),
                waited.as_secs()
            ),
            (Some(status), None) => format!(
                "waiting for the owner ({status}), {} s so far",
                waited.as_secs()
            ),
            (None, _) => format!("waiting for consentd, {} s so far", waited.as_secs()),
        };
        // Progress must grow with each notification, even two sent at the same instant.
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        *sent = waited.as_secs_f64().max(*sent + 0.001);
        self.server.progress(token, *sent, &message);
    }

    /// The record a wait gave up on, as it stands now: the last line may be up to a second
    /// old. The last line when it cannot be read.
    async fn current(&self, last: &Value) -> Value {
        let Some(id) = last.get("id").and_then(Value::as_str) else {
            return last.clone();
        };
        let request = json!({ "v": 1, "op": "status", "id": id });
        let read = tokio::time::timeout(
            Duration::from_secs(10),
            client::request(&self.server.options().socket, &request, |_| {}),
        )
        .await;
        match read {
            Ok(Ok(record)) if record.get("final") == Some(&json!(false)) => record,
            _ => last.clone(),
        }
    }

    /// Withdraws `id`, best effort: whether the daemon took it back.
    pub(super) async fn withdraw(&self, id: &str) -> bool {
        let request = json!({ "v": 1, "op": "withdraw", "id": id });
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            client::request(&self.server.options().socket, &request, |_| {}),
        )
        .await;
        matches!(answer, Ok(Ok(line)) if line.get("status").and_then(Value::as_str) == Some("withdrawn"))
    }
}
