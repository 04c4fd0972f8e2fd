//! What the load benchmarks share: a release `consentd serve` on a temp dir against the Bot API
//! emulator, one-shot socket requests, the daemon's memory from `/proc`, the disk's raw fsync
//! rate (the baseline for anything that commits) and percentiles.

// Each benchmark is its own crate and uses only part of this module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use consentd_emulator::Emulator;

pub const TOKEN: &str = "123456:BENCH";
pub const OWNER: i64 = 42;

/// A category whose command is `/bin/true`, open to mandates, with no cost.
pub const PUBLISH_X: &str = r#"
[categories.publish_x]
label = { en = "Post" }
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
fields = ["reply_to"]
cost = "none"
command = ["/bin/true"]
"#;

/// A release daemon on a fresh state directory, talking to an emulator; killed when dropped.
#[derive(Debug)]
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    child: Child,
}

/// What a benchmark may change in how the daemon is started.
#[derive(Debug, Default, Clone, Copy)]
pub struct Options<'a> {
    /// `CONSENTD_TEST_CLOCK_FILE`: the daemon reads its wall clock from this file (seconds since
    /// the epoch), so a benchmark can move it, e.g. past a card's ttl.
    pub clock_file: Option<&'a Path>,
    /// Where the daemon's warnings and errors go (`CONSENTD_BENCH_LOG`'s debug log wins).
    pub log_file: Option<&'a Path>,
    /// The daemon's binary, over `CONSENTD_BENCH_BIN` and this build's: a benchmark that runs
    /// two builds side by side.
    pub binary: Option<&'a Path>,
}

impl Daemon {
    /// Starts `serve` with the owner known, quiet hours off, `limits` as the `[limits]` table's
    /// lines and `categories` as the config's categories; returns once the socket answers.
    pub fn start(bot: &Emulator, limits: &str, categories: &str) -> Daemon {
        Daemon::start_with(bot, limits, categories, Options::default())
    }

    /// [`Daemon::start`] with `options`.
    pub fn start_with(
        bot: &Emulator,
        limits: &str,
        categories: &str,
        options: Options<'_>,
    ) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("consentd.toml");
        std::fs::write(
            &config,
            format!(
                r#"
[owner]
telegram_id = {OWNER}
[telegram]
api_url = "{url}"
[paths]
state_dir = "{dir}/state"
socket = "{dir}/consent.sock"
[client]
allowed_uids = []
[limits]
{limits}
[gate]
quiet_hours = "off"
{categories}
"#,
                url = bot.api_url(),
                dir = dir.path().display()
            ),
        )
        .unwrap();
        // CONSENTD_BENCH_LOG=FILE keeps the daemon's debug log, to see where a figure's time goes.
        let append = |path: &Path| {
            Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap(),
            )
        };
        let (level, log) = match (std::env::var_os("CONSENTD_BENCH_LOG"), options.log_file) {
            (Some(path), _) => ("debug", append(Path::new(&path))),
            (None, Some(path)) => ("warn", append(path)),
            (None, None) => ("warn", Stdio::null()),
        };
        // CONSENTD_BENCH_BIN=PATH runs another build of the daemon (e.g. one from before a
        // change), so a before and an after can be taken back to back on the same machine.
        let binary = match options.binary {
            Some(binary) => binary.as_os_str().to_owned(),
            None => std::env::var_os("CONSENTD_BENCH_BIN")
                .unwrap_or_else(|| env!("CARGO_BIN_EXE_consentd").into()),
        };
        let mut command = Command::new(binary);
        command
            .args(["serve", "--config"])
            .arg(&config)
            .env("CONSENTD_BOT_TOKEN", TOKEN)
            .env("CONSENTD_LOG", level)
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(clock) = options.clock_file {
            command.env("CONSENTD_TEST_CLOCK_FILE", clock);
        }
        let child = command.spawn().unwrap();
        let socket = dir.path().join("consent.sock");
        let daemon = Daemon { dir, socket, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while request(&daemon.socket, b"{\"v\":1,\"op\":\"list\"}\n").is_none() {
            assert!(Instant::now() < deadline, "consentd did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    /// Kills the daemon and waits for it, keeping its directory to be read.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `VmHWM` (the peak) and `VmRSS`, in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        };
        (field("VmHWM:"), field("VmRSS:"))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends one frame and reads every answer line until the daemon closes; `None` if it could not
/// connect or answered nothing.
pub fn request(socket: &Path, frame: &[u8]) -> Option<Vec<serde_json::Value>> {
    let mut stream = UnixStream::connect(socket).ok()?;
    let _ = stream.write_all(frame);
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let lines: Vec<serde_json::Value> = answer
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// Appends 512-byte records to a file in `dir` with an `fdatasync` after each, as the journal
/// does, for `seconds`: the disk's raw durable-write rate.
pub fn fsyncs_per_second(dir: &Path, seconds: f64) -> f64 {
    let mut file = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    let record = [b'x'; 512];
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        file.write_all(&record).unwrap();
        file.sync_data().unwrap();
        count += 1;
    }
    count as f64 / started.elapsed().as_secs_f64()
}

/// The disk's raw fsync rate measured on both sides of a load: the disk is shared, so the
/// baseline is taken just before and just after what it is compared with.
#[derive(Debug, Clone, Copy)]
pub struct FsyncBaseline {
    pub before: f64,
    pub after: f64,
}

impl FsyncBaseline {
    /// The mean of the two rates, per second.
    pub fn rate(&self) -> f64 {
        (self.before + self.after) / 2.0
    }
}

impl std::fmt::Display for FsyncBaseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "raw fsync (512 B append + fdatasync): {:.0}/s (before {:.0}, after {:.0})",
            self.rate(),
            self.before,
            self.after
        )
    }
}

/// Runs `load` between two [`fsyncs_per_second`] measurements in `dir`.
pub fn with_fsync_baseline<T>(dir: &Path, load: impl FnOnce() -> T) -> (FsyncBaseline, T) {
    let before = fsyncs_per_second(dir, 3.0);
    let value = load();
    let after = fsyncs_per_second(dir, 3.0);
    (FsyncBaseline { before, after }, value)
}

/// The `p` quantile (0..=1) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The first argument that is not a flag (cargo bench passes `--bench`), parsed.
pub fn argument<T: std::str::FromStr>() -> Option<T> {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
}
