//! `consentd serve`: load the config, take the socket, open the store and the journal, and serve
//! until SIGTERM or SIGINT. `consentd sandbox` runs the same path with work of its own beside it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use crate::consent::{self, Consent};
use crate::intake::Intake;
use crate::preflight;
use crate::server::{self, BoundSocket, IntakeLimits};
use crate::telegram::Telegram;
use consentd_core::clock::Clock;
use consentd_core::config::{self, Config};
use consentd_core::locale::Locales;
use consentd_store::Store;

/// Runs the daemon with the config at `config_path` until a signal stops it. Refuses to start,
/// naming every key at fault, on a config whose file is wrong or which this machine cannot
/// serve (`preflight`: the token, a category's command or user). A category is judged on or off
/// as the owner last switched it in the chat, else as the config says: the switches are read
/// from the store before anything is created.
pub fn serve(config_path: &Path) -> anyhow::Result<()> {
    let mut unconfined = Vec::new();
    let config = crate::config::load_checked(config_path, &mut |telegram, categories, paths| {
        // Owners and modes first: nothing in a refused state directory is opened, not even to
        // read the switches.
        let refused = paths.map(|p| preflight::check_files(telegram, p));
        let (switches, mut problems) = match (refused, paths) {
            (Some(problems), _) if !problems.is_empty() => (Default::default(), problems),
            (_, Some(p)) => match stored_switches(&p.state_dir) {
                Err(problem) => (Default::default(), vec![problem]),
                Ok(switches) => (switches, Vec::new()),
            },
            _ => Default::default(),
        };
        let findings = preflight::check(telegram, categories, &switches);
        for note in &findings.notes {
            tracing::warn!("{note}");
        }
        unconfined = preflight::unconfined(categories, &switches)
            .map(str::to_owned)
            .collect();
        problems.extend(findings.problems);
        problems
    })?;
    for name in &unconfined {
        warn_unconfined(name);
    }
    let token = preflight::bot_token(&config.telegram).map_err(|p| anyhow::anyhow!("{p}"))?;
    if config.telegram.token_file.is_none() {
        // Still one thread: the runtime starts in `serve_with`.
        scrub_env(preflight::TOKEN_ENV);
    }
    serve_with(config, &token, |_| std::future::ready(Ok(())))
}

/// Says loudly, in the log and on stderr, that a category's command runs as the daemon's user.
fn warn_unconfined(name: &str) {
    let line = format!(
        "category {name} is on and has no run_as: its command runs as the daemon's user and can \
         read the press key, the token file and the database, and write the journal \
         (docs/OPERATOR.md, \"Least privilege\")"
    );
    tracing::warn!("{line}");
    eprintln!("consentd: warning: {line}");
}

/// Removes `name` from this process's environment, and its value from the bytes the kernel
/// shows in `/proc/<pid>/environ`, so neither a child nor a reader of that file finds it.
///
/// `/proc/<pid>/environ` reads the environment block the process was started with, which
/// `remove_var` does not touch (it edits libc's `environ` array only). While a variable was
/// never set again, `getenv` points into that block, so its value is overwritten there first.
///
/// Must be called while the process has one thread: `getenv`, the writes and `remove_var` race
/// with any other thread reading the environment. `serve` calls it before the runtime starts.
fn scrub_env(name: &str) {
    let Ok(key) = std::ffi::CString::new(name) else {
        return;
    };
    #[allow(unsafe_code)]
    // SAFETY: one thread (above), so nothing reads or changes the environment meanwhile.
    // `getenv` returns null or a pointer to the value's NUL-terminated bytes inside the
    // environment, which stay valid until the environment changes; `strlen` stops at that NUL,
    // and each byte before it is overwritten in place, never past it.
    unsafe {
        let value = nix::libc::getenv(key.as_ptr());
        if !value.is_null() {
            let len = nix::libc::strlen(value);
            for i in 0..len {
                // Volatile: a write to memory nothing reads afterwards must not be optimised
                // away.
                std::ptr::write_volatile(value.add(i), 0);
            }
        }
    }
    std::env::remove_var(name);
}

/// The owner's category switches kept in `state_dir`, or why they cannot be read (under the
/// key `paths.state_dir`).
fn stored_switches(state_dir: &Path) -> Result<BTreeMap<String, bool>, config::ConfigProblem> {
    consentd_store::settings::read_switches(state_dir).map_err(|error| config::ConfigProblem {
        key: "paths.state_dir".to_owned(),
        message: format!("cannot read the owner's category switches: {error}"),
    })
}

/// What the daemon shares with the work running beside it.
#[derive(Debug, Clone)]
pub(crate) struct Beside {
    /// Cancelled when the daemon stops; the work must end then.
    pub shutdown: CancellationToken,
    /// The owner as the daemon knows them: `None` until it has read its store (or while no one
    /// is paired); their language follows `/lang` as soon as the daemon takes it.
    pub owner: crate::owner::SharedOwner,
}

/// `serve` on a loaded config and token, with `beside` running on the daemon's runtime next to
/// it (the sandbox's Bot API emulator and chat page). `beside` gets the daemon's shutdown
/// token, which it must end on, and its owner; its error stops the daemon and is returned.
pub(crate) fn serve_with<F, Fut>(config: Config, token: &str, beside: F) -> anyhow::Result<()>
where
    F: FnOnce(Beside) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
{
    raise_descriptor_limit();
    bound_malloc_arenas();
    // Before the runtime starts, while the process has one thread: the cgroup setup moves it.
    crate::executor::contain_runs();
    // Everything the daemon creates is its own unless a mode says otherwise (the journal 0640,
    // the socket 0660): the agent must not read the database, the key or the attachments.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    prepare_dirs(&config)?;
    // Bound before the runtime starts, while the process has one thread (see `bind_socket`).
    let sockets = bind_all(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("consentd")
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(shutdown.clone()));
        let owner = crate::owner::SharedOwner::default();
        let beside = beside(Beside {
            shutdown: shutdown.clone(),
            owner: owner.clone(),
        });
        let beside = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                let result = beside.await;
                if result.is_err() {
                    shutdown.cancel();
                }
                result
            }
        });
        let result = run_sharing(
            config,
            token,
            &sockets,
            crate::clock::from_env(),
            shutdown.clone(),
            owner,
        )
        .await;
        // The daemon may also end by itself (a failed start): what runs beside it ends too.
        shutdown.cancel();
        let beside = beside
            .await
            .context("the work beside the daemon panicked")?;
        result.and(beside)
    });
    for socket in &sockets {
        socket.remove();
    }
    result
}

/// The main socket, then each `[[listen]]` socket in the config's order, bound alike (mode
/// 0660, a stale file replaced). On a failure the ones already bound are removed.
fn bind_all(config: &Config) -> anyhow::Result<Vec<BoundSocket>> {
    // Only the main socket's directory is made here: a labelled one's owner and group are the
    // operator's to choose.
    let paths = std::iter::once((&config.paths.socket, true))
        .chain(config.listen.iter().map(|listen| (&listen.socket, false)));
    let mut bound: Vec<BoundSocket> = Vec::new();
    for (path, make_directory) in paths {
        match server::bind_socket(path, make_directory) {
            Ok(socket) => bound.push(socket),
            Err(error) => {
                for socket in &bound {
                    socket.remove();
                }
                return Err(error.into());
            }
        }
    }
    Ok(bound)
}

/// How often the seal key is brought to the current epoch when nothing is written: an epoch's
/// key outlives its epoch by at most this (epochs last a minute at least).
const SEAL_TICK: std::time::Duration = std::time::Duration::from_secs(5);

/// Evolves the journal's seal key as epochs end, even when no line is written
/// (docs/adr/0004-journal-seals.md): otherwise the last line's key stays on disk until the next
/// decision, and whoever takes the machine meanwhile can rewrite that epoch.
fn spawn_seal_clock(store: Store, clock: Arc<dyn Clock>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(SEAL_TICK) => {}
            }
            let now = clock.now();
            let evolved = store
                .upkeep(consentd_store::Upkeep::EvolveSealKey, now)
                .await;
            // A store closed at shutdown is not an error worth a line.
            if let (Err(error), false) = (evolved, shutdown.is_cancelled()) {
                tracing::error!(%error, "cannot evolve the journal's seal key");
            }
        }
    });
}

/// Creates the state directory (0700) and the journal's directory.
pub(crate) fn prepare_dirs(config: &Config) -> anyhow::Result<()> {
    consentd_store::create_private_dir(&config.paths.state_dir).with_context(|| {
        format!(
            "cannot create the state directory {}",
            config.paths.state_dir.display()
        )
    })?;
    if let Some(parent) = config.paths.journal.parent() {
        if !parent.exists() {
            consentd_store::create_private_dir(parent).with_context(|| {
                format!("cannot create the journal's directory {}", parent.display())
            })?;
        }
    }
    Ok(())
}

/// The bound socket as tokio's listener (a clone of it: the caller keeps the bound one).
fn async_listener(socket: &BoundSocket) -> anyhow::Result<tokio::net::UnixListener> {
    socket
        .listener
        .try_clone()
        .and_then(|listener| {
            listener.set_nonblocking(true)?;
            tokio::net::UnixListener::from_std(listener)
        })
        .context("cannot use the bound socket")
}

/// The bound sockets as the server takes them: the main socket first, then the labelled ones,
/// each with its origin and allow-list.
fn served(config: &Config, sockets: &[BoundSocket]) -> anyhow::Result<Vec<server::Served>> {
    let labels = std::iter::once((None, config.client.allowed_uids.clone())).chain(
        config
            .listen
            .iter()
            .map(|listen| (Some(listen.origin.clone()), listen.allowed_uids.clone())),
    );
    sockets
        .iter()
        .zip(labels)
        .map(|(socket, (origin, allowed_uids))| {
            Ok(server::Served {
                listener: async_listener(socket)?,
                origin,
                allowed_uids,
            })
        })
        .collect()
}

/// Serves on already bound sockets until `shutdown` is cancelled, keeping the owner in
/// `owner`, which the caller may read while the daemon runs.
async fn run_sharing(
    config: Config,
    token: &str,
    sockets: &[BoundSocket],
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
    owner: crate::owner::SharedOwner,
) -> anyhow::Result<()> {
    let telegram = Telegram::new(token, &config.telegram.api_url).map_err(anyhow::Error::msg)?;
    let key_path = config.paths.state_dir.join("press.key");
    let key = tokio::task::spawn_blocking(move || crate::press::load_or_create_key(&key_path))
        .await
        .context("loading the press key panicked")??;
    let locales = Arc::new(Locales::new().context("the built-in locales do not load")?);
    let served = served(&config, sockets)?;
    let (store, store_thread) = open_store(&config, clock.now()).await?;
    owner.set_switches(store.category_switches().await?);
    let stored_owner = store.owner().await?;
    let owner_settings = store.owner_settings().await?;
    owner.set_owner(owner_at_start(&config, stored_owner, &owner_settings));
    let gate = consentd_core::gate::with_owner_settings(&config.gate, &owner_settings);
    owner.change_gate(|current| *current = gate);
    if owner.owner().is_none() {
        tracing::warn!("no owner yet: asks are refused `no_owner` until `consentd pair` pairs one");
    }
    let work_root = run_root(&config)?;
    let limits = IntakeLimits {
        max_frame_bytes: config.limits.max_request_bytes,
        read_timeout: server::READ_TIMEOUT,
        write_timeout: server::WRITE_TIMEOUT,
        max_connections: server::MAX_CONNECTIONS,
        max_connections_per_uid: config.limits.max_connections_per_uid,
        max_bytes_in_flight: config.limits.max_request_bytes_in_flight,
    };
    let config = Arc::new(config);
    let (handoff, handed) = tokio::sync::mpsc::unbounded_channel();
    // Telegram out of reach (refusing the bot, the owner's block, the network) is an episode the
    // daemon serves through: the consent loop's poller and sender note it, waiting sessions are
    // told of it.
    let reach = crate::unreachable::Reach::default();
    let intake = Intake {
        config: config.clone(),
        store: store.clone(),
        clock: clock.clone(),
        owner: owner.clone(),
        locales: locales.clone(),
        handoff,
        reach: reach.clone(),
    };
    let clock_at_stop = clock.clone();
    spawn_seal_clock(store.clone(), clock.clone(), shutdown.clone());
    let consent = Consent {
        config,
        store: store.clone(),
        clock,
        key: Arc::new(key),
        locales,
        owner,
        work_root,
        telegram,
        drawing: Default::default(),
        reach,
    };
    for (socket, served) in sockets.iter().zip(&served) {
        let origin = served.origin.as_deref();
        tracing::info!(socket = %socket.path.display(), origin, "consentd is serving");
    }
    // The consent loop ends the daemon too when it fails (a store it cannot read).
    let stop = shutdown.clone();
    let (recovered, recovery_done) = tokio::sync::oneshot::channel();
    let consent_loop = tokio::spawn(async move {
        let result = consent.run(stop.clone(), handed, recovered).await;
        stop.cancel();
        result
    });
    // Asks wait in the socket's backlog until the loop has settled what a crash left running:
    // a covered ask claimed meanwhile would look like one of those.
    let _ = recovery_done.await;
    server::run(served, intake, limits, shutdown).await;
    let loop_result = consent_loop.await.context("the consent loop panicked")?;
    // The refusals counted in windows still open: their lines, before the store stops.
    let stopped_at = clock_at_stop.now();
    if let Err(error) = store
        .upkeep(consentd_store::Upkeep::DrainRefusalCounts, stopped_at)
        .await
    {
        tracing::error!(%error, "cannot journal the counted refusals");
    }
    store.close();
    tokio::task::spawn_blocking(move || store_thread.join())
        .await
        .context("the store's thread panicked")?;
    tracing::info!("consentd stopped");
    loop_result
}

/// Opens the store and the journal, saying what a crash had left to repair.
async fn open_store(
    config: &Config,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<(Store, consentd_store::StoreThread)> {
    let state_dir = config.paths.state_dir.clone();
    let journal = config.paths.journal.clone();
    // A test build lets `CONSENTD_CRASH_AT` kill the daemon inside a group commit (`mid_batch`)
    // or at each step of a seal key's epoch change.
    #[cfg(feature = "test-hooks")]
    consentd_store::set_crash_hook(crate::failpoint::hit);
    // Opening verifies the whole chain, and the current epoch's seals, and refuses a break.
    let (store, store_thread, report) =
        tokio::task::spawn_blocking(move || Store::open(&state_dir, &journal, now))
            .await
            .context("the store's opening panicked")??;
    if report.torn_tail_cut_bytes > 0 {
        tracing::warn!(
            bytes = report.torn_tail_cut_bytes,
            "cut a torn last line from the journal (a crash mid-write); noted in `started`"
        );
    }
    if report.lines_recovered > 0 {
        tracing::info!(
            lines = report.lines_recovered,
            "appended journal lines a crash had held back"
        );
    }
    if report.orphans_removed > 0 {
        tracing::info!(
            files = report.orphans_removed,
            "removed attachment files no record names"
        );
    }
    let budget = consentd_core::refusal_budget::BudgetPolicy {
        per_minute: config.limits.refusals_per_minute,
        window: config.limits.refusal_window,
    };
    store
        .upkeep(
            consentd_store::Upkeep::RefusalBudget(budget),
            chrono::Utc::now(),
        )
        .await?;
    Ok((
        store.with_free_space(crate::intake::disk::probe()),
        store_thread,
    ))
}

/// The owner at start: the config's or the paired one, in the language the owner chose with
/// `/lang`, which wins over the config and their Telegram language.
fn owner_at_start(
    config: &Config,
    stored: Option<consentd_store::owner::OwnerRow>,
    settings: &std::collections::BTreeMap<String, String>,
) -> Option<crate::owner::Owner> {
    let mut owner = consent::load_owner(config, stored)?;
    if let Some(chosen) = settings
        .get("language")
        .and_then(|code| consentd_core::locale::Language::from_code(code))
    {
        owner.language = chosen;
    }
    Some(owner)
}

async fn stop_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut terminate), Ok(mut interrupt)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM and SIGINT");
        return;
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}

/// Where runs get their private directories. Without `run_as` under the state dir; with it, the
/// command's user must pass through every directory above its run directory, and the state dir
/// is 0700, so a fresh directory with a random name in the temp dir, 0711 (its runs stay 0700).
fn run_root(config: &Config) -> anyhow::Result<std::path::PathBuf> {
    if !config.categories.values().any(|c| c.run_as.is_some()) {
        let root = config.paths.state_dir.join("runs");
        consentd_store::create_private_dir(&root)
            .with_context(|| format!("cannot create {}", root.display()))?;
        return Ok(root);
    }
    fresh_temp_dir("consentd-runs", 0o711)
}

/// A new directory `PREFIX-<random hex>` in the temp dir with exactly `mode`.
pub(crate) fn fresh_temp_dir(prefix: &str, mode: u32) -> anyhow::Result<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", hex::encode(random)));
    // `create` (not `create_all`) fails if the name exists, so nobody can plant it first.
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    // The umask may have taken bits `mode` asks for.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", dir.display()))?;
    Ok(dir)
}

/// At most this many malloc arenas. glibc gives each new thread that meets a locked arena one
/// of its own, up to eight per core, and keeps them all for good: a burst of runs, each with
/// blocking work on a pool thread, left the daemon's memory a third larger than at idle.
#[cfg(target_env = "gnu")]
const MALLOC_ARENAS: nix::libc::c_int = 2;

/// Caps glibc's malloc arenas (see [`MALLOC_ARENAS`]); called while the process has one thread.
fn bound_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    {
        #[allow(unsafe_code)]
        // SAFETY: mallopt(3) only sets one of the allocator's parameters; it is called before
        // any other thread exists, and takes no pointer.
        let set = unsafe { nix::libc::mallopt(nix::libc::M_ARENA_MAX, MALLOC_ARENAS) };
        if set != 1 {
            tracing::warn!("cannot bound the number of malloc arenas");
        }
    }
}

/// Idle clients hold a descriptor each; raise the soft limit to the hard one.
fn raise_descriptor_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            if let Err(error) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!(%error, "cannot raise the open-file limit");
            }
        }
    }
}
