//! The crash hook a test build of the daemon sets, for the store's own steps: `mid_batch` (two
//! requests of a group commit applied, none committed) and each step of a seal key's epoch
//! change (`journal::seal_key`).

/// A crash point a test build may set (the daemon's `CONSENTD_CRASH_AT`), called by name where
/// a batch is half applied.
static CRASH_HOOK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Sets the crash hook; the daemon's test build calls it once at start.
pub fn set_crash_hook(hook: fn(&str)) {
    let _ = CRASH_HOOK.set(hook);
}

pub(crate) fn point(name: &str) {
    if let Some(hook) = CRASH_HOOK.get() {
        hook(name);
    }
}
