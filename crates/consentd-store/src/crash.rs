//! The crash hook a test build of the daemon sets, for the store's own steps: `mid_batch` (two
//! requests of a group commit applied, none committed), `<ev>_committed` (a batch holding an
//! `<ev>` line committed, its lines not yet handed to the journal's thread: `asked_committed`,
//! `card_shown_committed`, …), each step of a seal key's epoch change (`journal::seal_key`), and
//! `journal_turn` (the journal's thread about to append a turn's lines; a test build may hold it
//! there, not crash).

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

/// After a batch's commit, before anything is answered or rung and before its lines go to the
/// journal file: the point `<ev>_committed` for each line's event. Reads the lines only when a
/// test build set the hook.
pub(crate) fn committed(lines: &[consentd_core::journal::Line]) {
    let Some(hook) = CRASH_HOOK.get() else {
        return;
    };
    for line in lines {
        let ev = line
            .text
            .split_once("\"ev\":\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(ev, _)| ev);
        if let Some(ev) = ev {
            hook(&format!("{ev}_committed"));
        }
    }
}
