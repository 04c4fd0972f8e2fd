//! Named points where a test may make the daemon die at once, as a power cut or `kill -9` would,
//! to prove that what was durable before the point is enough.
//!
//! Built with the `test-hooks` feature (only tests and benches turn it on), setting
//! `CONSENTD_CRASH_AT` to a point's name (`before_claim`, `after_claim`, `after_exit`,
//! `card_sent`: the owner has a card, its `card_shown` line perhaps not yet in the journal file,
//! and the store's `mid_batch`: two requests of a group commit applied, none committed,
//! `<ev>_committed`: a batch holding an `<ev>` line committed, its lines not yet in the journal
//! file, and `before_copies_removed`: a commit that released attachment copies, before their
//! files go) makes the daemon abort when it reaches it. A build without the feature has no such variable: a point is
//! an empty function and the name is not in the binary.

/// Aborts the process if `CONSENTD_CRASH_AT` names this point. At `journal_turn` (the journal's
/// thread about to append a turn's lines) it instead sleeps `CONSENTD_TEST_JOURNAL_DELAY_MS`, if
/// set: the journal file then trails what the daemon has answered and sent by that much, so a
/// test run with it shows whether anything (a test included) reads the file as if it could not.
#[cfg(feature = "test-hooks")]
pub fn hit(point: &str) {
    if point == "journal_turn" {
        // Read once: the point is on every journal turn, benchmarks' included.
        static DELAY: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
        let delay = DELAY.get_or_init(|| {
            let ms = std::env::var("CONSENTD_TEST_JOURNAL_DELAY_MS").ok()?;
            ms.parse().ok().map(std::time::Duration::from_millis)
        });
        if let Some(delay) = delay {
            std::thread::sleep(*delay);
        }
        return;
    }
    if std::env::var_os("CONSENTD_CRASH_AT").is_some_and(|at| at == point) {
        eprintln!("consentd: crash point {point} reached (CONSENTD_CRASH_AT)");
        std::process::abort();
    }
}

/// Without the `test-hooks` feature a crash point does nothing.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) fn hit(_point: &str) {}
