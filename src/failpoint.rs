//! Named points where a test may make the daemon die at once, as a power cut or `kill -9` would,
//! to prove that what was durable before the point is enough.
//!
//! Set `CONSENTD_CRASH_AT` to a point's name (`before_claim`, `after_claim`, `after_exit`) and
//! the daemon aborts when it reaches it. Unset, a point costs one environment lookup. It can
//! only make the daemon stop, never make it do anything else, so it is safe to leave in.

/// Aborts the process if `CONSENTD_CRASH_AT` names this point.
pub fn hit(point: &str) {
    if std::env::var_os("CONSENTD_CRASH_AT").is_some_and(|at| at == point) {
        eprintln!("consentd: crash point {point} reached (CONSENTD_CRASH_AT)");
        std::process::abort();
    }
}
