//! Crash consistency on a disk that keeps only what was synced: the daemon runs under the
//! `tests/crashfs/shim.c` preload, which keeps the image of what such a disk would hold, and is
//! killed at a random moment while sessions ask, the owner presses and commands run. Its state
//! directory is then replaced by the image (everything never fsync'd is gone) and it restarts
//! without the shim. What a session or the owner was told must still be there, the journal must
//! verify and agree with the store (or the daemon would refuse to start), and no record's command
//! may run twice. docs/CRASH-TESTING.md describes the model and what it leaves out.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use consentd_emulator::{ChatSpec, Emulator, UserSpec};
use consentd_store::inspect::{Inspect, KeptAttachment};
use consentd_store::state::RecordState;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::fixture::{Daemon, OWNER};

/// Kills, each with its own seed (`SEED + round`), so a failure names the round to look at.
const ROUNDS: u64 = 40;
const SEED: u64 = 0x00c0_75e7;
/// Seeds that once found a bug, replayed first.
const REGRESSIONS: &[u64] = &[];

/// splitmix64: enough randomness for a schedule, and the same schedule for the same seed.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Compiles `tests/crashfs/<name>.c` into the target dir with `cc` (`extra`: its flags). No C
/// compiler is a failure, not a skip: without the shim these tests would prove nothing.
pub(crate) fn build(name: &str, output: &str, extra: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/crashfs")
        .join(format!("{name}.c"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(output);
    let built = std::process::Command::new("cc")
        .args(extra)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .output();
    match built {
        Ok(result) if result.status.success() => out,
        Ok(result) => panic!(
            "{} does not build: {}",
            source.display(),
            String::from_utf8_lossy(&result.stderr)
        ),
        Err(error) => panic!(
            "the crash-consistency tests need a C compiler as `cc` (gcc or clang) to build {}: \
             {error}",
            source.display()
        ),
    }
}

/// The shim (each test builds its own copy: tests run in parallel).
pub(crate) fn build_shim(output: &str) -> PathBuf {
    build("shim", output, &["-shared", "-fPIC"])
}

/// The daemon's environment under the shim, watching `state` and keeping its image in `image`.
pub(crate) fn shim_env(shim: &Path, state: &Path, image: &Path) -> Vec<(String, String)> {
    vec![
        ("LD_PRELOAD".into(), shim.display().to_string()),
        ("CRASHFS_ROOT".into(), state.display().to_string()),
        ("CRASHFS_IMAGE".into(), image.display().to_string()),
    ]
}

/// Turns the shim's image back into a directory at `to`: the names its directories' last syncs
/// saw, each file with the content of its last sync (empty when it never had one).
pub(crate) fn materialize(image: &Path, to: &Path) {
    fn directory(image: &Path, id: &str, to: &Path, mode: u32) {
        std::fs::create_dir(to).unwrap();
        let listing = std::fs::read_to_string(image.join("dirs").join(id)).unwrap_or_default();
        for line in listing.lines() {
            let mut parts = line.splitn(4, ' ');
            let (kind, entry_mode, entry_id, name) = (
                parts.next().unwrap(),
                u32::from_str_radix(parts.next().unwrap(), 8).unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let path = to.join(name);
            if kind == "d" {
                directory(image, entry_id, &path, entry_mode);
                continue;
            }
            // SQLite's shared-memory index is never synced, and is rebuilt from the WAL by the
            // first connection to open the database.
            if name.ends_with("-shm") {
                continue;
            }
            match std::fs::read(image.join("inodes").join(entry_id)) {
                Ok(bytes) => std::fs::write(&path, bytes).unwrap(),
                Err(_) => std::fs::write(&path, b"").unwrap(),
            }
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(entry_mode)).unwrap();
        }
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    directory(image, "0", to, 0o700);
}

/// What the sessions and the owner were told, across every round: none of it may be undone.
#[derive(Debug, Default)]
struct Told {
    /// Each acknowledged record and the latest state a session saw it in.
    states: BTreeMap<String, RecordState>,
    /// Records whose card the owner saw edited after a press: decided, yes or no.
    decided: BTreeMap<String, bool>,
    /// Records whose card reached the owner's chat (with its buttons).
    shown: BTreeSet<String>,
    /// The owner's choice for each record pressed (by record), and the cards pressed.
    choices: BTreeMap<String, bool>,
    pressed: BTreeMap<i64, String>,
}

impl Told {
    fn saw(&mut self, id: &str, status: &str) {
        let Some(state) = RecordState::parse(status) else {
            return;
        };
        let entry = self.states.entry(id.to_owned()).or_insert(state);
        if reachable(*entry, state) {
            *entry = state;
        }
    }
}

/// Whether `to` is `from` or a state `from` can reach through legal transitions.
fn reachable(from: RecordState, to: RecordState) -> bool {
    let mut seen = BTreeSet::from([from.as_str()]);
    let mut frontier = vec![from];
    while let Some(state) = frontier.pop() {
        if state == to {
            return true;
        }
        for next in RecordState::ALL {
            if state.can_become(next) && seen.insert(next.as_str()) {
                frontier.push(next);
            }
        }
    }
    false
}

/// One request over the socket; its last answer line, or None when the daemon was cut off.
fn request(socket: &Path, request: &Value) -> Option<Value> {
    let mut stream = UnixStream::connect(socket).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    stream.write_all(&frame).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    serde_json::from_str(answer.lines().last()?).ok()
}

/// A session asking until the daemon dies, now and then: plain asks, some with an attachment (a file the store
/// writes and renames before the record commits), some refused (an invisible character).
fn asker(socket: PathBuf, seed: u64, client: u64, stop: Arc<AtomicBool>, told: Arc<Mutex<Told>>) {
    let mut rng = Rng(seed ^ (client << 32));
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut text = format!("crashfs s{seed} c{client} n{n}");
        if rng.below(7) == 0 {
            text.push('\u{200B}');
        }
        let mut ask = json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news",
            "text": text, "cost_usd":"0.01", "wait": false});
        if rng.below(4) == 0 {
            let bytes = format!("attachment s{seed} c{client} n{n}");
            ask["attachments"] = json!([{"name":"note.txt","media_type":"text/plain",
                "data_b64": STANDARD.encode(bytes)}]);
        }
        let Some(answer) = request(&socket, &ask) else {
            return;
        };
        let (Some(id), Some(status)) = (answer["id"].as_str(), answer["status"].as_str()) else {
            panic!("seed {seed}: an ask answered without an id: {answer}");
        };
        told.lock().unwrap().saw(id, status);
        // About as fast as the sender draws cards (one message a second after a burst of three):
        // faster, and the cards and their edits queue behind each other past the kill.
        std::thread::sleep(Duration::from_millis(100 + rng.below(300)));
    }
}

/// A session asking for the status of records it was told about, now and then: each state it
/// sees is acknowledged too.
fn watcher(socket: PathBuf, seed: u64, stop: Arc<AtomicBool>, told: Arc<Mutex<Told>>) {
    let mut rng = Rng(seed ^ 0x5747);
    while !stop.load(Ordering::Relaxed) {
        let id = {
            let told = told.lock().unwrap();
            if told.states.is_empty() {
                None
            } else {
                let nth = rng.below(told.states.len() as u64) as usize;
                told.states.keys().nth(nth).cloned()
            }
        };
        if let Some(id) = id {
            match request(&socket, &json!({"v":1,"op":"status","id":id,"wait":false})) {
                Some(answer) => {
                    if let Some(status) = answer["status"].as_str() {
                        told.lock().unwrap().saw(&id, status);
                    }
                }
                None => return,
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The owner: presses Yes on each new card, No on about one in eight (never two in a row, so the
/// kind is not silenced for the rest of the run).
fn owner(bot: Emulator, seed: u64, stop: Arc<AtomicBool>, told: Arc<Mutex<Told>>) {
    let mut rng = Rng(seed ^ 0x0a11);
    let mut last_no = false;
    while !stop.load(Ordering::Relaxed) {
        for card in bot.messages(OWNER) {
            let buttons = card.buttons();
            if !card.outgoing || buttons.len() < 2 {
                continue;
            }
            let mut told = told.lock().unwrap();
            if told.pressed.contains_key(&card.message_id) {
                continue;
            }
            let data = buttons[0].callback_data.clone().unwrap();
            // `1.<kid>.<action>.<record id>.<tag>`
            let id = data.split('.').nth(3).unwrap().to_owned();
            let yes = *told.choices.entry(id.clone()).or_insert_with(|| {
                let no = !last_no && rng.below(8) == 0;
                last_no = no;
                !no
            });
            told.pressed.insert(card.message_id, id);
            let button = if yes { &buttons[0] } else { &buttons[1] };
            bot.push_press(
                &UserSpec::new(OWNER, "Mila"),
                ChatSpec::private(OWNER),
                card.message_id,
                button.callback_data.as_deref().unwrap(),
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn journal_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn records(state_dir: &Path) -> BTreeMap<String, RecordState> {
    Inspect::open_read_only(state_dir)
        .unwrap()
        .records()
        .unwrap()
        .into_iter()
        .map(|record| (record.id, record.state))
        .collect()
}

/// Waits until no record is granted or running: recovery has claimed and run what it must.
fn wait_for_recovery(daemon: &Daemon, seed: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let busy: Vec<_> = records(&daemon.state_dir)
            .into_iter()
            .filter(|(_, state)| matches!(state, RecordState::Granted | RecordState::Running))
            .collect();
        if busy.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: records never left granted/running after the restart: {busy:?}\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything that must hold after a restart from the image, on the stopped daemon's files.
fn check(daemon: &Daemon, told: &Told, seed: u64) {
    let verified = consentd_store::journal::verify_file(&daemon.journal, None)
        .unwrap()
        .unwrap_or_else(|problem| panic!("seed {seed}: the journal does not verify: {problem}"));
    let lines = journal_lines(&daemon.journal);
    let stored = records(&daemon.state_dir);
    let db = Inspect::open_read_only(&daemon.state_dir).unwrap();
    let stored_head = db.journal_head().unwrap();
    assert_eq!(
        (stored_head.n, stored_head.h),
        (verified.head.n, verified.head.h.clone()),
        "seed {seed}: the store's journal head is not the file's"
    );

    let mut events: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for line in &lines {
        if let (Some(ev), Some(id)) = (line["ev"].as_str(), line["id"].as_str()) {
            events.entry(id).or_default().insert(ev);
        }
    }
    let has = |id: &str, evs: &[&str]| {
        events
            .get(id)
            .is_some_and(|have| evs.iter().any(|ev| have.contains(ev)))
    };
    let journaled: BTreeSet<&str> = events
        .iter()
        .filter(|(_, evs)| evs.contains("asked") || evs.contains("denied"))
        .map(|(id, _)| *id)
        .collect();
    let kept: BTreeSet<&str> = stored.keys().map(String::as_str).collect();
    assert_eq!(
        kept, journaled,
        "seed {seed}: every record has its line and every line its record"
    );

    for (id, seen) in &told.states {
        let now = stored
            .get(id)
            .unwrap_or_else(|| panic!("seed {seed}: {id} was acknowledged ({seen:?}) and is gone"));
        assert!(
            reachable(*seen, *now),
            "seed {seed}: {id} was seen {seen:?} and is now {now:?}"
        );
        assert!(
            has(id, &["asked", "denied"]),
            "seed {seed}: {id} was acknowledged and its journal line is gone"
        );
    }
    for (id, yes) in &told.decided {
        let now = *stored
            .get(id)
            .unwrap_or_else(|| panic!("seed {seed}: the owner saw {id} decided and it is gone"));
        let (ok, evs) = if *yes {
            (
                now == RecordState::Granted || reachable(RecordState::Running, now),
                ["granted"],
            )
        } else {
            (now == RecordState::Declined, ["declined"])
        };
        assert!(
            ok,
            "seed {seed}: the owner saw {id} decided (yes: {yes}) and it is now {now:?}; its \
             lines: {:?}",
            lines
                .iter()
                .filter(|line| line["id"] == id.as_str())
                .collect::<Vec<_>>()
        );
        assert!(
            has(id, &evs),
            "seed {seed}: the owner saw {id} decided and its {evs:?} line is gone"
        );
    }
    // A card leaves once its opening is committed, its `card_shown` line staged there: the
    // journal may receive the line after the card, but must never lose it.
    for id in told.shown.iter().chain(told.decided.keys()) {
        assert!(
            has(id, &["card_shown"]),
            "seed {seed}: the owner saw {id}'s card and its card_shown line is gone"
        );
    }
    for (id, runs) in daemon.runs_by_record() {
        assert_eq!(runs, 1, "seed {seed}: {id} ran {runs} times");
        let now = stored
            .get(&id)
            .unwrap_or_else(|| panic!("seed {seed}: {id} ran and its record is gone"));
        assert!(
            reachable(RecordState::Running, *now),
            "seed {seed}: {id} ran and its claim is gone: {now:?}"
        );
        assert!(
            has(&id, &["used"]),
            "seed {seed}: {id} ran and its used line is gone"
        );
    }
    for line in lines.iter().filter(|l| l["ev"] == "used") {
        let id = line["id"].as_str().unwrap();
        assert!(
            stored
                .get(id)
                .is_some_and(|now| reachable(RecordState::Running, *now)),
            "seed {seed}: a used line for {id}, which is {:?}",
            stored.get(id)
        );
    }
    // An attachment is durable before the record naming it commits: a card or a run of a kept
    // record must never find its file gone. (A record that ended without running keeps none.)
    for KeptAttachment {
        record_id: id,
        bytes,
        sha256,
    } in db.kept_attachments().unwrap()
    {
        let path = daemon.state_dir.join("attachments").join(&sha256);
        let data = std::fs::read(&path).unwrap_or_else(|error| {
            panic!("seed {seed}: {id}'s attachment {sha256} is gone: {error}")
        });
        assert!(
            data.len() as i64 == bytes && hex::encode(Sha256::digest(&data)) == sha256,
            "seed {seed}: {id}'s attachment {sha256} is not what was stored"
        );
    }
    // The command always exits 0: a failure is a run that lost something (an attachment).
    let failed: Vec<_> = stored
        .iter()
        .filter(|(_, state)| **state == RecordState::Failed)
        .collect();
    assert!(failed.is_empty(), "seed {seed}: runs failed: {failed:?}");
}

/// The model itself, on a fixed script (`tests/crashfs/probe.c`) with one case of each rule.
#[test]
fn the_shim_keeps_only_what_was_synced() {
    let shim = build_shim("crashfs-shim-probe.so");
    let probe = build("probe", "crashfs-probe", &[]);
    let dir = tempfile::tempdir().unwrap();
    let (root, image, after) = (
        dir.path().join("root"),
        dir.path().join("image"),
        dir.path().join("after"),
    );
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("kept"), "old\n").unwrap();
    let status = std::process::Command::new(&probe)
        .arg(&root)
        .envs(shim_env(&shim, &root, &image))
        .status()
        .unwrap();
    assert!(status.success(), "the probe failed: {status}");
    materialize(&image, &after);
    let mut found = BTreeMap::new();
    for entry in walk(&after) {
        let text = std::fs::read_to_string(after.join(&entry)).unwrap();
        found.insert(entry, text);
    }
    let expected: BTreeMap<String, String> = [
        // durable at start, unlinked and appended to since: as it was
        ("kept", "old\n"),
        // renamed into place and the directory synced: the synced content, not the late write
        ("renamed", "first\n"),
        // a new directory, its entry synced in it
        ("sub/inner", "inner\n"),
        // the name synced, the content never
        ("empty", ""),
        // not here: `orphan` (content synced, name never) and `.renamed.tmp` (renamed away)
    ]
    .into_iter()
    .map(|(name, text)| (name.to_owned(), text.to_owned()))
    .collect();
    assert_eq!(found, expected);
}

/// The regular files under `dir`, by relative path.
fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.file_type().unwrap().is_dir() {
            files.extend(
                walk(&entry.path())
                    .into_iter()
                    .map(|f| format!("{name}/{f}")),
            );
        } else {
            files.push(name);
        }
    }
    files
}

#[test]
fn only_synced_state_survives_and_nothing_acknowledged_is_lost() {
    let started = Instant::now();
    let shim = build_shim("crashfs-shim.so");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let state = root.join("state");
    // The watched directory must exist before the shim loads; the daemon creates everything in it.
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();

    let seeds: Vec<u64> = REGRESSIONS
        .iter()
        .copied()
        .chain((0..ROUNDS).map(|round| SEED + round))
        .collect();
    let image_of = |round: usize| root.join(format!("image-{round}"));
    let mut daemon = Daemon::builder()
        .max_pending(100)
        .env("LD_PRELOAD", shim.display().to_string())
        .env("CRASHFS_ROOT", state.display().to_string())
        .env("CRASHFS_IMAGE", image_of(0).display().to_string())
        .try_start_in(dir)
        .unwrap_or_else(|failure| panic!("{failure}"));
    let told = Arc::new(Mutex::new(Told::default()));
    let mut starts = 0;
    for (round, &seed) in seeds.iter().enumerate() {
        let image = image_of(round);
        assert!(
            image.join("ready").exists(),
            "seed {seed}: the shim did not load into consentd (LD_PRELOAD ignored: a static \
             binary?), so nothing here would be tested"
        );
        starts += 1;
        let mut rng = Rng(seed);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for client in 0..2 {
            let (socket, stop, told) = (daemon.socket.clone(), stop.clone(), told.clone());
            threads.push(std::thread::spawn(move || {
                asker(socket, seed, client, stop, told)
            }));
        }
        {
            let (socket, stop, told) = (daemon.socket.clone(), stop.clone(), told.clone());
            threads.push(std::thread::spawn(move || {
                watcher(socket, seed, stop, told)
            }));
        }
        {
            let (bot, stop, told) = (daemon.bot.clone(), stop.clone(), told.clone());
            threads.push(std::thread::spawn(move || owner(bot, seed, stop, told)));
        }
        std::thread::sleep(Duration::from_millis(30 + rng.below(500)));
        daemon.stop_with(Signal::SIGKILL);
        stop.store(true, Ordering::Relaxed);
        for thread in threads {
            if thread.join().is_err() {
                panic!("seed {seed}: a client thread failed");
            }
        }
        // The cards the owner saw edited after a press: decided, durably.
        {
            let mut told = told.lock().unwrap();
            for message in daemon.bot.messages(OWNER) {
                // `1.<kid>.<action>.<record id>.<tag>`
                let carries = message.buttons().into_iter().filter_map(|button| {
                    let data = button.callback_data?;
                    let id = data.split('.').nth(3)?;
                    id.starts_with("r_").then(|| id.to_owned())
                });
                let carries: Vec<String> = carries.collect();
                if message.outgoing {
                    told.shown.extend(carries);
                }
                if message.history.is_empty() || !message.buttons().is_empty() {
                    continue;
                }
                if let Some(id) = told.pressed.get(&message.message_id).cloned() {
                    let yes = told.choices[&id];
                    told.decided.insert(id, yes);
                }
            }
        }

        // The power goes out: only the image is left.
        std::fs::remove_dir_all(&daemon.state_dir).unwrap();
        materialize(&image, &daemon.state_dir);
        let started_lines = journal_lines(&daemon.journal)
            .iter()
            .filter(|line| line["ev"] == "started")
            .count();
        assert!(
            started_lines >= starts,
            "seed {seed}: the image lost a start's journal line, which was synced before the \
             socket answered: the shim is not seeing the daemon's syncs"
        );

        // It refuses to start if the journal and the store disagree.
        daemon = daemon
            .try_restart_with(Vec::new())
            .unwrap_or_else(|failure| panic!("seed {seed}: no restart from the image: {failure}"));
        starts += 1;
        wait_for_recovery(&daemon, seed);
        assert!(
            daemon.stop_with(Signal::SIGTERM).success(),
            "seed {seed}: {}",
            daemon.log()
        );
        check(&daemon, &told.lock().unwrap(), seed);

        if round + 1 < seeds.len() {
            let state = daemon.state_dir.clone();
            daemon = daemon.restart_with(shim_env(&shim, &state, &image_of(round + 1)));
        }
    }
    let told = told.lock().unwrap();
    eprintln!(
        "crashfs: {} kills in {:?}; {} records acknowledged, {} decisions seen, {} runs",
        seeds.len(),
        started.elapsed(),
        told.states.len(),
        told.decided.len(),
        daemon.runs_by_record().len()
    );
    // Enough happened for the rounds to mean something.
    assert!(told.states.len() > seeds.len(), "too few asks acknowledged");
    assert!(!told.decided.is_empty(), "no decision was ever seen");
}
