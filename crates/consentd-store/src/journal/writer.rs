//! The journal file's own thread: it appends committed lines and fsyncs them while the store's
//! thread goes on to its next batch, so a batch's journal fsync overlaps the next batch's commit
//! instead of following it.
//!
//! Why this is safe: a line reaches the writer only after the commit that staged it
//! (`journal_staged`, in the same transaction as the change it tells of), and the store opens
//! by appending every staged line the file lacks (`Db::reconcile_journal`). A committed line is
//! therefore in the journal or will be before the daemon does anything else; the file only
//! trails the database by the lines in flight here. Lines go in the order they were handed over,
//! which is the commit order, and only the store's thread hands them over.
//!
//! Policy:
//! - Whatever is waiting when the thread turns to its queue is written in one write and made
//!   durable with one `fdatasync`; each hand-over's `then` runs after that, in order.
//! - A failed write or fsync poisons the file ([`JournalFile::append`]): every later hand-over is
//!   answered with the failure, and the database keeps the lines staged for the next start.
//!   The failure is also kept ([`JournalWriter::failed`]) so the store commits nothing more: no
//!   card, receipt or run may go out whose line could not reach the file until a restart.
//! - The head the store prunes its staged lines by ([`JournalWriter::head`]) is the last line
//!   made durable here, never one only written.

use std::sync::{mpsc, Arc, Mutex};

use consentd_core::journal::{Head, Line};

use super::JournalFile;
use crate::StoreError;

/// What runs once a hand-over's lines are durable, or could not be made so.
pub(crate) type Then = Box<dyn FnOnce(Option<&StoreError>) + Send>;

/// Lines to append, and what to do once they are durable.
struct HandOver {
    lines: Vec<Line>,
    then: Then,
}

/// The handle the store's thread holds; dropping it lets the thread finish what it was handed,
/// and waits for it.
#[derive(Debug)]
pub(crate) struct JournalWriter {
    queue: Option<mpsc::Sender<HandOver>>,
    /// The last line made durable in the file.
    durable: Arc<Mutex<Head>>,
    /// Why the file was poisoned, once it was: the first failure.
    failure: Arc<Mutex<Option<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl JournalWriter {
    /// Starts the thread that owns `file` from now on.
    pub(crate) fn start(file: JournalFile) -> Result<JournalWriter, StoreError> {
        let durable = Arc::new(Mutex::new(file.head().clone()));
        let (queue, handed) = mpsc::channel::<HandOver>();
        let head = durable.clone();
        let failure = Arc::new(Mutex::new(None));
        let failed = failure.clone();
        let thread = std::thread::Builder::new()
            .name("consentd-journal".into())
            .spawn(move || run(file, &handed, &head, &failed))
            .map_err(|error| {
                StoreError::JournalWrite(format!("cannot start the journal's thread: {error}"))
            })?;
        Ok(JournalWriter {
            queue: Some(queue),
            durable,
            failure,
            thread: Some(thread),
        })
    }

    /// Why the journal file can no longer be written, once a write or fsync failed; `None` while
    /// it can.
    pub(crate) fn failed(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The last line made durable in the file (genesis for an empty journal).
    pub(crate) fn head(&self) -> Head {
        self.durable
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Hands `lines` over (they may be none) and runs `then` on the journal's thread once they,
    /// and every line handed over before them, are durable.
    pub(crate) fn append_then(&self, lines: Vec<Line>, then: Then) {
        let handed = HandOver { lines, then };
        let sent = match &self.queue {
            Some(queue) => queue.send(handed).map_err(|error| error.0),
            None => Err(handed),
        };
        if let Err(handed) = sent {
            (handed.then)(Some(&StoreError::JournalWrite(
                "the journal's thread has stopped".to_owned(),
            )));
        }
    }

    /// Appends `lines` after everything handed over before, and returns once they are durable.
    /// With no lines it only waits for what was handed over before.
    pub(crate) fn append(&self, lines: Vec<Line>) -> Result<(), StoreError> {
        let (done, outcome) = mpsc::channel();
        self.append_then(
            lines,
            Box::new(move |failed| {
                let _ = done.send(failed.map(|error| error.to_string()));
            }),
        );
        match outcome.recv() {
            Ok(None) => Ok(()),
            Ok(Some(error)) => Err(StoreError::JournalWrite(error)),
            Err(_) => Err(StoreError::JournalWrite(
                "the journal's thread has stopped".to_owned(),
            )),
        }
    }
}

impl Drop for JournalWriter {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            // A panic on the journal's thread was already reported by the panic hook.
            let _ = thread.join();
        }
    }
}

/// The thread: each turn, everything waiting in one append and one fsync, then their `then`s.
fn run(
    mut file: JournalFile,
    handed: &mpsc::Receiver<HandOver>,
    durable: &Mutex<Head>,
    failed: &Mutex<Option<String>>,
) {
    while let Ok(first) = handed.recv() {
        let mut turn = vec![first];
        turn.extend(handed.try_iter());
        let lines: Vec<Line> = turn
            .iter_mut()
            .flat_map(|handed| std::mem::take(&mut handed.lines))
            .collect();
        // A turn of no lines writes nothing, and so cannot fail (as before the thread).
        let failure = if lines.is_empty() {
            None
        } else {
            // A test build may hold the turn here, widening the window in which the file
            // trails the database, to show that nothing reads the file as if it could not.
            crate::crash::point("journal_turn");
            file.append(&lines)
                .err()
                .map(|error| StoreError::JournalWrite(error.to_string()))
        };
        match &failure {
            None => {
                *durable
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = file.head().clone();
            }
            Some(error) => {
                failed
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .get_or_insert_with(|| error.to_string());
            }
        }
        for handed in turn {
            (handed.then)(failure.as_ref());
        }
    }
}
