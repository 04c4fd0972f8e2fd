//! A cgroup per run, where the host delegates a cgroup v2 subtree to the daemon (systemd's
//! `Delegate=yes`): the command is moved into `<own cgroup>/run-<n>` before it execs, so
//! everything it starts is in there too whatever it does with sessions and parents, and the
//! run's end kills the cgroup whole (`cgroup.kill`, else each pid in `cgroup.procs`) and removes
//! it.
//!
//! Delegated means: the hierarchy is unified (`/proc/self/cgroup` is the one line `0::<path>`),
//! cgroup2 is mounted at `/sys/fs/cgroup`, and the daemon can make a directory in its own cgroup
//! and move itself into a child of it (`<own>/daemon`: a cgroup with children may hold no
//! processes once controllers are on, so the daemon leaves its own). Anything less, and runs are
//! held by their process group and the subreaper alone ([`super::reaper`]).

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Where cgroup2 is mounted on a unified host.
const MOUNT: &str = "/sys/fs/cgroup";
/// How long a killed cgroup may take to empty before it is left for the operator.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// The delegated cgroup runs are made under, when there is one.
static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
/// Numbers the runs' cgroups.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// The cgroup of this process on a unified (v2 only) hierarchy, from `/proc/self/cgroup`'s
/// text; `None` on a v1 or hybrid host (more lines than the one `0::` line).
pub(super) fn unified_path(text: &str) -> Option<&str> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let path = lines.next()?.strip_prefix("0::")?;
    (lines.next().is_none() && path.starts_with('/')).then_some(path)
}

/// The directory of the cgroup at `path` (as `/proc/self/cgroup` says it) under `mount`.
pub(super) fn directory(mount: &Path, path: &str) -> PathBuf {
    mount.join(path.trim_start_matches('/'))
}

/// Finds and takes the delegated cgroup, once, before the runtime starts (moving the daemon
/// moves only the calling thread's process; with one thread that is all of it). Returns it, or
/// why there is none.
pub(super) fn take_delegated() -> Result<PathBuf, String> {
    let found = delegated();
    let _ = BASE.set(found.as_ref().ok().cloned());
    found
}

fn delegated() -> Result<PathBuf, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let path = unified_path(&text).ok_or("the host's cgroups are not v2 only")?;
    if !Path::new(MOUNT).join("cgroup.controllers").exists() {
        return Err(format!("cgroup2 is not mounted at {MOUNT}"));
    }
    let base = directory(Path::new(MOUNT), path);
    let own = base.join("daemon");
    match std::fs::create_dir(&own) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{} is not delegated: {e}", base.display())),
    }
    std::fs::write(own.join("cgroup.procs"), "0")
        .map_err(|e| format!("cannot move into {}: {e}", own.display()))?;
    Ok(base)
}

/// A run's own cgroup.
pub(super) struct RunCgroup {
    dir: PathBuf,
    /// Open for the command to write "0" to before it execs (see [`RunCgroup::join_fd`]).
    procs: File,
    /// Whether [`RunCgroup::end`] ran; if not, dropping kills the cgroup all the same (a run
    /// abandoned halfway).
    ended: bool,
}

impl RunCgroup {
    /// A fresh cgroup for one run, if the daemon has a delegated one. A failure to make it is
    /// logged and the run goes on without (its process group and the subreaper still hold).
    pub(super) fn create() -> Option<RunCgroup> {
        let base = BASE.get()?.as_ref()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("run-{}-{n}", std::process::id()));
        let made = std::fs::create_dir(&dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
        });
        match made {
            Ok(procs) => Some(RunCgroup {
                dir,
                procs,
                ended: false,
            }),
            Err(error) => {
                tracing::warn!(%error, dir = %dir.display(), "cannot make a run's cgroup");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The descriptor the command writes "0" to, in the child before exec: writing 0 to
    /// `cgroup.procs` moves the writer, and only the writer, before it runs anything.
    pub(super) fn join_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Kills everything in the cgroup and removes it; the pids it held, for the caller to reap
    /// (the daemon is their subreaper).
    pub(super) fn end(mut self) -> Vec<i32> {
        self.ended = true;
        let pids = self.members();
        let killed = std::fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"));
        if killed.is_err() {
            // Before Linux 5.14: one by one. A process forked meanwhile is caught by the loop.
            for _ in 0..100 {
                let left = self.members();
                if left.is_empty() {
                    break;
                }
                for pid in left {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
        let deadline = std::time::Instant::now() + EMPTY_WAIT;
        while std::fs::remove_dir(&self.dir).is_err() {
            if std::time::Instant::now() > deadline {
                tracing::warn!(dir = %self.dir.display(), "a run's cgroup did not empty");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        pids
    }

    fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        if !self.ended {
            // No waiting here: the cgroup is removed once empty, or left for the operator.
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_unified_hierarchy_gives_a_cgroup() {
        let cases = [
            (
                "0::/system.slice/consentd.service\n",
                Some("/system.slice/consentd.service"),
            ),
            ("0::/\n", Some("/")),
            ("0::/user.slice/x.scope", Some("/user.slice/x.scope")),
            // Hybrid: v1 controllers beside the unified line.
            (
                "9:name=systemd:/\n4:memory:/process_api/aef9\n1:cpu:/\n0::/\n",
                None,
            ),
            // v1 only.
            ("4:memory:/a\n1:cpu,cpuacct:/a\n", None),
            ("", None),
            ("0::relative\n", None),
        ];
        for (text, expected) in cases {
            assert_eq!(unified_path(text), expected, "{text:?}");
        }
    }

    #[test]
    fn the_directory_is_under_the_mount() {
        let mount = Path::new("/sys/fs/cgroup");
        assert_eq!(
            directory(mount, "/system.slice/consentd.service"),
            Path::new("/sys/fs/cgroup/system.slice/consentd.service")
        );
        assert_eq!(directory(mount, "/"), mount);
    }
}
