//! Reading back what the bot did: calls, the chat, callback answers, and waiting for a
//! condition on them without sleeping.

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::chat::{CallbackAnswer, ChatMessage};
use crate::script::{Call, Outcome};
use crate::server::{lock, Emulator};

impl Emulator {
    /// A number that grows with every call and every change of state: what a page shows is
    /// current as long as this has not moved.
    pub fn version(&self) -> u64 {
        *lock(&self.inner.generation)
    }

    /// Waits until [`Emulator::version`] differs from `seen`, at most `timeout`, and returns
    /// the version then (a long poll for the sandbox's page).
    pub async fn changed_since(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so a change between the check and the wait is seen.
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.version();
            if now != seen || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.version();
            }
        }
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    /// Time since the emulator started, on the clock of [`Call::elapsed`]: to time a call's
    /// arrival from an instant taken outside.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// The calls from position `from` on ([`Call::seq`]), copying only those.
    pub fn calls_since(&self, from: usize) -> Vec<Call> {
        self.state().calls.get(from..).unwrap_or_default().to_vec()
    }

    /// How many calls so far, without copying them.
    pub fn call_count(&self) -> usize {
        self.state().calls.len()
    }

    /// The calls to one method (any case).
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        let method = method.to_ascii_lowercase();
        self.state()
            .calls
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// The chat's messages, both directions, deleted ones included (flagged), oldest first.
    pub fn messages(&self, chat_id: i64) -> Vec<ChatMessage> {
        self.state()
            .chats
            .get(&chat_id)
            .map(|chat| chat.messages.clone())
            .unwrap_or_default()
    }

    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<ChatMessage> {
        self.state().find(chat_id, message_id).cloned()
    }

    /// The `Message` object the Bot API would return for a stored message now.
    pub fn message_json(&self, chat_id: i64, message_id: i64) -> Option<Value> {
        let state = self.state();
        let message = state.find(chat_id, message_id)?;
        Some(state.render(&self.inner.config, message))
    }

    /// The accepted `answerCallbackQuery` calls, in order.
    pub fn callback_answers(&self) -> Vec<CallbackAnswer> {
        self.state().callback_answers.clone()
    }

    /// Waits until `f` holds, re-checking after every call and state change; on timeout the
    /// error names `what` and lists the last calls.
    pub async fn wait_until<F: Fn(&Emulator) -> bool>(
        &self,
        what: &str,
        timeout: Duration,
        f: F,
    ) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so a change between the check and the wait is seen.
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if f(self) {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return if f(self) {
                    Ok(())
                } else {
                    Err(self.timeout_report(what, timeout))
                };
            }
        }
    }

    /// [`Emulator::wait_until`] for code without a runtime; the server must run elsewhere (on
    /// the thread of [`Emulator::start_in_thread`]).
    pub fn wait_until_blocking<F: Fn(&Emulator) -> bool>(
        &self,
        what: &str,
        timeout: Duration,
        f: F,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = *lock(&self.inner.generation);
            if f(self) {
                return Ok(());
            }
            let mut generation = lock(&self.inner.generation);
            while *generation == seen {
                let now = Instant::now();
                if now >= deadline {
                    drop(generation);
                    return if f(self) {
                        Ok(())
                    } else {
                        Err(self.timeout_report(what, timeout))
                    };
                }
                generation = self
                    .inner
                    .generation_changed
                    .wait_timeout(generation, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }

    fn timeout_report(&self, what: &str, timeout: Duration) -> String {
        let calls = self.calls();
        let recent: Vec<String> = calls
            .iter()
            .rev()
            .take(10)
            .rev()
            .map(|call| {
                let outcome = match &call.outcome {
                    None => "pending".to_owned(),
                    Some(Outcome::Ok(_)) => "ok".to_owned(),
                    Some(Outcome::Error {
                        code, description, ..
                    }) => format!("{code} {description}"),
                    Some(Outcome::Dropped) => "dropped".to_owned(),
                    Some(Outcome::MalformedJson) => "malformed".to_owned(),
                };
                format!("#{} {} → {}", call.seq, call.method, outcome)
            })
            .collect();
        format!(
            "timed out after {timeout:?} waiting until {what}; {} calls, last: [{}]",
            calls.len(),
            recent.join("; ")
        )
    }
}
