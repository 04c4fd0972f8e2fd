//! The server: starting and stopping it, the one HTTP handler that records each call, plays
//! what was scripted for it and answers in the Bot API's envelope.

use std::fmt;
use std::future::IntoFuture;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

use crate::config::Config;
use crate::connection::{Connection, KillableListener};
use crate::description;
use crate::description::ApiFail;
use crate::params::{percent_decode, read_params, BODY_LIMIT};
use crate::script::{Call, Outcome, Scripted};
use crate::state::EmuState;

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) addr: SocketAddr,
    pub(crate) started: Instant,
    pub(crate) state: Mutex<EmuState>,
    /// Signalled after every call and state change, for [`Emulator::wait_until`].
    pub(crate) changed: Notify,
    /// Counts the same events, for [`Emulator::wait_until_blocking`].
    pub(crate) generation: Mutex<u64>,
    pub(crate) generation_changed: Condvar,
    /// Wakes long polls: an update was pushed, a newer poll started, or shutdown.
    pub(crate) updates_changed: Notify,
    pub(crate) shutdown: watch::Sender<bool>,
}

/// The fake Bot API server. Cheap to clone; all clones share one server and one state.
#[derive(Clone)]
pub struct Emulator {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Emulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emulator")
            .field("api_url", &self.api_url())
            .field("bot_username", &self.inner.config.bot_username)
            .finish_non_exhaustive()
    }
}

/// The emulator's own runtime thread, from [`Emulator::start_in_thread`]; dropping it stops the
/// server and joins the thread.
#[derive(Debug)]
pub struct EmulatorThread {
    emulator: Emulator,
    thread: Option<JoinHandle<()>>,
}

impl EmulatorThread {
    /// Stops the server and waits for its thread to end.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.emulator.shutdown();
        if let Some(thread) = self.thread.take() {
            // A panic on the server thread was already reported there; the test result is
            // decided by what the test observed.
            let _ = thread.join();
        }
    }
}

impl Drop for EmulatorThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test thread must not turn every later query into a second panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Emulator {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio runtime.
    pub async fn start(token: &str) -> io::Result<Emulator> {
        Emulator::start_with(Config::new(token)).await
    }

    /// Like [`Emulator::start`], with the bot's identity chosen.
    pub async fn start_with(config: Config) -> io::Result<Emulator> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Emulator::serve(listener, config)
    }

    /// Serves on a listener bound beforehand (the sandbox binds it before the daemon's runtime
    /// starts, so that the daemon's config can name its address). Call it on a tokio runtime.
    pub fn start_on(listener: std::net::TcpListener, config: Config) -> io::Result<Emulator> {
        listener.set_nonblocking(true)?;
        Emulator::serve(TcpListener::from_std(listener)?, config)
    }

    fn serve(listener: TcpListener, config: Config) -> io::Result<Emulator> {
        let addr = listener.local_addr()?;
        let (shutdown, _) = watch::channel(false);
        let emulator = Emulator {
            inner: Arc::new(Inner {
                config,
                addr,
                started: Instant::now(),
                state: Mutex::new(EmuState::new()),
                changed: Notify::new(),
                generation: Mutex::new(0),
                generation_changed: Condvar::new(),
                updates_changed: Notify::new(),
                shutdown,
            }),
        };
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(emulator.clone());
        let mut stopped = emulator.inner.shutdown.subscribe();
        let server = axum::serve(
            KillableListener(listener),
            app.into_make_service_with_connect_info::<Connection>(),
        )
        .with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
        tokio::spawn(server.into_future());
        Ok(emulator)
    }

    /// Starts the server on a runtime of its own, on a new thread, for tests without a runtime
    /// (for example one that drives the daemon as a separate process).
    pub fn start_in_thread(token: &str) -> io::Result<(Emulator, EmulatorThread)> {
        Emulator::start_in_thread_with(Config::new(token))
    }

    /// Like [`Emulator::start_in_thread`], with the bot's identity chosen.
    pub fn start_in_thread_with(config: Config) -> io::Result<(Emulator, EmulatorThread)> {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("telegram-emulator".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = started_tx.send(Err(error));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match Emulator::start_with(config).await {
                        Ok(emulator) => {
                            let mut stopped = emulator.inner.shutdown.subscribe();
                            let _ = started_tx.send(Ok(emulator));
                            let _ = stopped.wait_for(|stop| *stop).await;
                        }
                        Err(error) => {
                            let _ = started_tx.send(Err(error));
                        }
                    }
                });
                // Dropping the runtime here ends the connections still open.
            })?;
        let emulator = started_rx.recv().map_err(|_| {
            io::Error::other("the emulator thread ended before it started serving")
        })??;
        let handle = EmulatorThread {
            emulator: emulator.clone(),
            thread: Some(thread),
        };
        Ok((emulator, handle))
    }

    /// Stops accepting connections and ends waiting long polls (they answer an empty list).
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        self.inner.updates_changed.notify_waiters();
        self.signal();
    }

    /// `http://127.0.0.1:PORT`, what `Bot::set_api_url` takes.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn bot_username(&self) -> String {
        self.inner.config.bot_username.clone()
    }

    pub fn bot_id(&self) -> i64 {
        self.inner.config.bot_id
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, EmuState> {
        lock(&self.inner.state)
    }

    /// Wakes everything waiting on a change.
    pub(crate) fn signal(&self) {
        // The count moves before anyone is woken, so a waiter woken here sees it moved.
        *lock(&self.inner.generation) += 1;
        self.inner.changed.notify_waiters();
        self.inner.generation_changed.notify_all();
    }

    pub(crate) fn record(&self, method: String, params: Value, authorized: bool) -> u64 {
        let mut state = self.state();
        let seq = state.calls.len() as u64;
        state.calls.push(Call {
            seq,
            method,
            params,
            at: SystemTime::now(),
            elapsed: self.inner.started.elapsed(),
            authorized,
            outcome: None,
        });
        drop(state);
        self.signal();
        seq
    }

    pub(crate) fn finish(&self, seq: u64, outcome: Outcome) {
        if let Some(call) = self.state().calls.get_mut(seq as usize) {
            call.outcome = Some(outcome);
        }
        self.signal();
    }

    /// The answer scripted for this call: a standing outage's, else the next queued one.
    pub(crate) fn next_script(&self, method: &str) -> Option<Scripted> {
        let mut state = self.state();
        if let Some(answer) = state.outages.get(method) {
            return Some(answer.clone());
        }
        state.scripts.get_mut(method)?.pop_front()
    }
}

/// The one HTTP handler: every path, every method.
async fn handle(
    State(emulator): State<Emulator>,
    ConnectInfo(connection): ConnectInfo<Connection>,
    request: Request,
) -> Response {
    let Some((token, method)) = split_path(request.uri().path()) else {
        return envelope_error(404, description::NOT_FOUND, None);
    };
    let method = method.to_ascii_lowercase();
    if token != emulator.inner.config.token {
        let seq = emulator.record(method, json!({}), false);
        emulator.finish(
            seq,
            Outcome::Error {
                code: 401,
                description: description::UNAUTHORIZED.to_owned(),
                retry_after: None,
            },
        );
        return envelope_error(401, description::UNAUTHORIZED, None);
    }
    let params = match read_params(request).await {
        Ok(params) => params,
        Err(fail) => {
            let seq = emulator.record(method, json!({}), true);
            return answer(&emulator, seq, Err(fail));
        }
    };
    let seq = emulator.record(method.clone(), Value::Object(params.values.clone()), true);
    match emulator.next_script(&method) {
        Some(Scripted::Error {
            code,
            description,
            retry_after,
        }) => {
            return answer(
                &emulator,
                seq,
                Err(ApiFail {
                    code,
                    description,
                    retry_after,
                }),
            )
        }
        Some(Scripted::Drop) => {
            connection.kill();
            emulator.finish(seq, Outcome::Dropped);
            // Never written: the connection fails on the first write and is closed.
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        Some(Scripted::MalformedJson) => {
            emulator.finish(seq, Outcome::MalformedJson);
            return Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(r#"{"ok":true,"result":{"message_id":"#))
                .unwrap_or_else(|_| StatusCode::OK.into_response());
        }
        Some(Scripted::Delay(delay)) => wait_or_stop(&emulator, delay).await,
        Some(Scripted::AnswerLate(delay)) => {
            let result = emulator.dispatch(&method, &params);
            // What the call changed is visible now, not only when it is answered.
            emulator.signal();
            wait_or_stop(&emulator, delay).await;
            return answer(&emulator, seq, result);
        }
        None => {}
    }
    let result = if method == "getupdates" {
        emulator.get_updates(&params.values).await
    } else {
        emulator.dispatch(&method, &params)
    };
    answer(&emulator, seq, result)
}

/// Waits `delay`, or less when the emulator shuts down.
async fn wait_or_stop(emulator: &Emulator, delay: Duration) {
    let mut stopped = emulator.inner.shutdown.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = stopped.wait_for(|stop| *stop) => {}
    }
}

/// Records the outcome and writes the envelope.
fn answer(emulator: &Emulator, seq: u64, result: Result<Value, ApiFail>) -> Response {
    match result {
        Ok(value) => {
            emulator.finish(seq, Outcome::Ok(value.clone()));
            json_response(StatusCode::OK, &json!({"ok": true, "result": value}))
        }
        Err(fail) => {
            emulator.finish(
                seq,
                Outcome::Error {
                    code: fail.code,
                    description: fail.description.clone(),
                    retry_after: fail.retry_after,
                },
            );
            envelope_error(fail.code, &fail.description, fail.retry_after)
        }
    }
}

fn envelope_error(code: u16, description: &str, retry_after: Option<u32>) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({ "retry_after": seconds });
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `/bot{token}/{method}` → (token, method).
fn split_path(path: &str) -> Option<(String, String)> {
    let (first, method) = path.strip_prefix('/')?.split_once('/')?;
    let method = method.strip_suffix('/').unwrap_or(method);
    if method.is_empty() || method.contains('/') {
        return None;
    }
    let token = percent_decode(first, false).strip_prefix("bot")?.to_owned();
    Some((token, percent_decode(method, false)))
}
