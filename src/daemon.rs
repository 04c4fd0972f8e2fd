//! `consentd serve`: load the config, take the socket, open the store and the journal, and serve
//! until SIGTERM or SIGINT.

use std::path::Path;
use std::sync::{Arc, RwLock};

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::config::{self, Config};
use crate::intake::Intake;
use crate::server::{self, BoundSocket, IntakeLimits};
use crate::store::{self, Store};

/// Runs the daemon with the config at `config_path` until a signal stops it.
pub fn serve(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    raise_descriptor_limit();
    // Everything the daemon creates is its own unless a mode says otherwise (the journal 0640,
    // the socket 0660): the agent must not read the database, the key or the attachments.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    prepare_dirs(&config)?;
    // Bound before the runtime starts, while the process has one thread (see `bind_socket`).
    let socket = server::bind_socket(&config.paths.socket)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("consentd")
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(shutdown.clone()));
        run(config, &socket, Arc::new(SystemClock), shutdown).await
    });
    socket.remove();
    result
}

/// Creates the state directory (0700) and the journal's directory.
pub fn prepare_dirs(config: &Config) -> anyhow::Result<()> {
    store::create_private_dir(&config.paths.state_dir).with_context(|| {
        format!(
            "cannot create the state directory {}",
            config.paths.state_dir.display()
        )
    })?;
    if let Some(parent) = config.paths.journal.parent() {
        if !parent.exists() {
            store::create_private_dir(parent).with_context(|| {
                format!("cannot create the journal's directory {}", parent.display())
            })?;
        }
    }
    Ok(())
}

/// Serves on an already bound socket until `shutdown` is cancelled.
pub async fn run(
    config: Config,
    socket: &BoundSocket,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let listener = socket
        .listener
        .try_clone()
        .and_then(|listener| {
            listener.set_nonblocking(true)?;
            tokio::net::UnixListener::from_std(listener)
        })
        .context("cannot use the bound socket")?;
    let state_dir = config.paths.state_dir.clone();
    let journal = config.paths.journal.clone();
    let now = clock.now();
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
    let switches = store.call(|db| db.category_switches()).await?;
    let limits = IntakeLimits {
        max_frame_bytes: config.limits.max_request_bytes,
        read_timeout: server::READ_TIMEOUT,
        write_timeout: server::WRITE_TIMEOUT,
        max_connections: server::MAX_CONNECTIONS,
        allowed_uids: config.client.allowed_uids.clone(),
    };
    let intake = Intake {
        config: Arc::new(config),
        store: store.clone(),
        clock,
        switches: Arc::new(RwLock::new(switches)),
    };
    tracing::info!(socket = %socket.path.display(), "consentd is serving");
    server::run(listener, intake, limits, shutdown).await;
    store.close();
    tokio::task::spawn_blocking(move || store_thread.join())
        .await
        .context("the store's thread panicked")?;
    tracing::info!("consentd stopped");
    Ok(())
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
