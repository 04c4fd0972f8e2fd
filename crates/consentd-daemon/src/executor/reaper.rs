//! No child outlives its run, where no cgroup holds the run whole: the daemon is a child
//! subreaper, so a process that leaves its run's process group (`setsid`, `setpgid`) and whose
//! parent then exits is reparented to the daemon instead of to init, and the end of each run
//! kills and reaps the adopted processes that are that run's.
//!
//! Which adopted process is whose. The daemon's direct children are the commands of the runs
//! going on (listed in [`LIVE`] from their spawn until their run's end) and the processes
//! adopted from runs' trees; anything it spawns otherwise stays in its own process group. At the
//! end of a run, an adopted process (parent: the daemon; not a live command; not in the daemon's
//! own group) is that run's leftover, and is killed with everything below it, when
//! - it is in the run's process group, or
//! - it started before every run still going started (the kernel's start time, in clock
//!   ticks): nothing a run still going started can be older than that run's command, so it
//!   belongs to a run that is over.
//!
//! Any other adopted process may be a run's still going, and waits for a later run's end, when
//! the runs older than it are over. So a concurrent run's process is never killed, and a
//! leftover is killed at the end of its own run, or at the latest when the last run that was
//! going when it started ends.
//!
//! Runs that end while a pass over `/proc` is going share the next pass, which reads every
//! process's stat once for all of them; and a run's end with no child left at all (none
//! adopted) needs no pass.
//!
//! Reaping: each process killed here is waited for by its pid (`waitpid(pid, WNOHANG)`), never
//! with `waitpid(-1)`, which would take the exit status of a command tokio is waiting for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// Whether this process is a child subreaper (set once at the daemon's start).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// The commands of the runs going on: pid and start time in clock ticks since boot (0 when it
/// could not be read, which makes every adopted process wait: nothing starts before 0).
static LIVE: Mutex<Vec<(i32, u64)>> = Mutex::new(Vec::new());

/// How often, and how long apart, a run's end looks for leftovers still to kill or reap.
const ROUNDS: u32 = 200;
const ROUND_PAUSE: Duration = Duration::from_millis(10);

/// Makes this process a child subreaper; returns whether it is one now.
pub(super) fn become_subreaper() -> bool {
    let done = nix::sys::prctl::set_child_subreaper(true).is_ok();
    SUBREAPER.store(done, Ordering::SeqCst);
    done
}

fn live() -> MutexGuard<'static, Vec<(i32, u64)>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Spawns with `spawn` and lists the command as live, under the lock a run's end takes, so an
/// end never sees the new command before it is listed.
pub(super) fn spawn_listed<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl Fn(&T) -> Option<u32>,
) -> std::io::Result<(T, Option<Listed>)> {
    let mut live = live();
    let child = spawn()?;
    let listed = pid_of(&child).map(|pid| {
        let pid = pid as i32;
        let start = read_stat(pid).map_or(0, |s| s.start);
        live.push((pid, start));
        Listed(pid, start)
    });
    Ok((child, listed))
}

/// A command on the live list, by pid and start time; off it when dropped (a run abandoned
/// halfway too).
///
/// Once tokio has reaped a command its pid is free, and a concurrent run's command may be given
/// it before this run ends: so only this entry leaves the list, never another with the same
/// pid.
#[derive(Debug)]
pub(super) struct Listed(pub(super) i32, u64);

impl Drop for Listed {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(at) = live.iter().position(|entry| *entry == (self.0, self.1)) {
            live.swap_remove(at);
        }
    }
}

/// Run ends waiting for a pass over the adopted processes, and whether a pass is going.
struct Passes {
    going: bool,
    waiting: Vec<Ended>,
    /// Tickets handed to run ends, and the last one a finished pass covered.
    issued: u64,
    covered: u64,
}

/// One run's end, as a pass needs it: its command's pid (its process group's id) and the pids
/// known to be the run's.
struct Ended {
    pid: i32,
    also: Vec<i32>,
}

static PASSES: Mutex<Passes> = Mutex::new(Passes {
    going: false,
    waiting: Vec::new(),
    issued: 0,
    covered: 0,
});
static PASSED: Condvar = Condvar::new();

fn passes() -> MutexGuard<'static, Passes> {
    PASSES.lock().unwrap_or_else(|p| p.into_inner())
}

/// At the end of the run whose command was `listed` (its process group too): takes it off the
/// live list, then kills and reaps its leftovers (and older runs') as the module says. `also`
/// are pids known to be the run's (a cgroup's members), killed and reaped the same way.
///
/// Returns only after a pass that began after this run's command was off the live list has
/// ended. Run ends that come while a pass is going share the next one: each pass reads every
/// process's stat, and runs that end together need that read once, not once each.
pub(super) fn finish(listed: Listed, also: &[i32]) {
    let pid = listed.0;
    drop(listed);
    if !SUBREAPER.load(Ordering::SeqCst) {
        // Not a subreaper (a test process): escaped processes went to init, out of reach.
        return;
    }
    if also.is_empty() && !may_have_adopted() {
        // No child but live commands, so none adopted: nothing of any run is left to kill.
        return;
    }
    let mut passes = passes();
    passes.issued += 1;
    let ticket = passes.issued;
    passes.waiting.push(Ended {
        pid,
        also: also.to_vec(),
    });
    while passes.covered < ticket {
        if passes.going {
            passes = PASSED.wait(passes).unwrap_or_else(|p| p.into_inner());
            continue;
        }
        passes.going = true;
        let ended = std::mem::take(&mut passes.waiting);
        let upto = passes.issued;
        drop(passes);
        sweep(&ended);
        passes = self::passes();
        passes.going = false;
        passes.covered = upto;
        PASSED.notify_all();
    }
}

/// Whether this process has a child, running or exited and not yet reaped (`waitid` with
/// `WNOWAIT` leaves an exited one to whoever waits for it).
fn has_children() -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(waitid(Id::All, flags), Err(Errno::ECHILD))
}

/// Whether the daemon may have a child that is not a live command: one adopted from a run's
/// tree, which a pass would find (its roots are exactly the children not listed as live).
/// Asked first of `waitid` (no child at all), then of each thread's `children` list, which is
/// far cheaper than the pass's read of every process's stat; without such lists (a kernel
/// built without `CONFIG_PROC_CHILDREN`) the answer is yes.
fn may_have_adopted() -> bool {
    if !has_children() {
        return false;
    }
    let Some(children) = children() else {
        return true;
    };
    let live = live();
    children
        .iter()
        .any(|child| !live.iter().any(|(pid, _)| pid == child))
}

/// The daemon's children, from every thread's `children` list: a process's parent is the
/// thread that started it, or the one the kernel chose when it adopted it. `None` where the
/// kernel keeps no such list.
fn children() -> Option<BTreeSet<i32>> {
    let me = nix::unistd::getpid();
    let mut buffer = vec![0u8; 64 * 1024];
    // The main thread's list exists whenever the kernel keeps lists at all.
    let main = read_whole(
        Path::new(&format!("/proc/{me}/task/{me}/children")),
        &mut buffer,
    )?;
    let mut all: BTreeSet<i32> = pids(main).collect();
    for task in std::fs::read_dir(format!("/proc/{me}/task")).ok()? {
        let path = task.ok()?.path().join("children");
        match read_whole(&path, &mut buffer) {
            Some(list) => all.extend(pids(list)),
            // A thread that ended since the listing has no children left to name.
            None if !path.parent().is_some_and(Path::exists) => {}
            None => return None,
        }
    }
    Some(all)
}

/// A `children` list in one read(2): the kernel walks the list afresh at each read, and a child
/// that exits between two reads can make the next one skip a child still there. A list too long
/// for one read is not trusted (`None`), nor one that cannot be read.
fn read_whole<'b>(path: &Path, buffer: &'b mut [u8]) -> Option<&'b str> {
    use std::io::Read;
    let read = std::fs::File::open(path).ok()?.read(buffer).ok()?;
    if read == buffer.len() {
        return None;
    }
    std::str::from_utf8(&buffer[..read]).ok()
}

fn pids(list: &str) -> impl Iterator<Item = i32> + '_ {
    list.split_ascii_whitespace()
        .filter_map(|pid| pid.parse().ok())
}

/// One pass for the runs `ended`: their adopted leftovers, and older runs', killed and reaped.
fn sweep(ended: &[Ended]) {
    let me = nix::unistd::getpid().as_raw();
    let own_group = nix::unistd::getpgrp().as_raw();
    let mut killed: BTreeSet<i32> = ended.iter().flat_map(|e| e.also.iter().copied()).collect();
    for _ in 0..ROUNDS {
        let table = scan();
        let roots = {
            let live = live();
            let oldest = live.iter().map(|(_, start)| *start).min();
            table
                .iter()
                .filter(|(p, s)| {
                    s.ppid == me
                        && !live.iter().any(|(l, _)| l == *p)
                        && (killed.contains(*p)
                            || (s.pgid != own_group
                                && (ended.iter().any(|e| in_group_of(s, e.pid, &live))
                                    || oldest.is_none_or(|o| s.start < o))))
                })
                .map(|(p, _)| *p)
                .collect::<Vec<_>>()
        };
        if roots.is_empty() {
            return;
        }
        for root in &roots {
            for victim in subtree(&table, *root) {
                // Each is in this scan, so its pid is not yet anyone else's.
                let _ = kill(Pid::from_raw(victim), Signal::SIGKILL);
                killed.insert(victim);
            }
        }
        for root in roots {
            // Exited (a zombie now) or not yet: the next round looks again.
            let _ = reap(root);
        }
        std::thread::sleep(ROUND_PAUSE);
    }
    let pids: Vec<i32> = ended.iter().map(|e| e.pid).collect();
    tracing::warn!(
        ?pids,
        "some of a run's leftover processes were not reaped in time"
    );
}

/// Whether `stat` is in the process group of an ended run's command `pid`. Not when `pid` is a
/// live command's now: the kernel gives a pid out again only once no process has it as its
/// group, so the ended run's group is empty and that group is the new command's.
fn in_group_of(stat: &Stat, pid: i32, live: &[(i32, u64)]) -> bool {
    stat.pgid == pid && !live.iter().any(|(l, _)| *l == pid)
}

/// Reaps `pid` if it has exited; whether it has.
fn reap(pid: i32) -> bool {
    !matches!(
        waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::StillAlive)
    )
}

/// `root` and every process below it in `table`.
fn subtree(table: &BTreeMap<i32, Stat>, root: i32) -> Vec<i32> {
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        let children: Vec<i32> = table
            .iter()
            .filter(|(p, s)| s.ppid == parent && !found.contains(p))
            .map(|(p, _)| *p)
            .collect();
        found.extend(children);
        next += 1;
    }
    found
}

/// What `/proc/<pid>/stat` says that matters here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub(super) ppid: i32,
    pub(super) pgid: i32,
    /// Clock ticks after boot.
    pub(super) start: u64,
}

/// Every process in `/proc` whose stat can be read.
fn scan() -> BTreeMap<i32, Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, read_stat(pid)?)))
        .collect()
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so the fields are counted from the last `)`.
pub(super) fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    // After the name: state(3) ppid(4) pgrp(5) session(6) … starttime(22).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_from_after_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 17 4242 17 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 \
                    123456 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 17,
                pgid: 4242,
                start: 123456
            })
        );
        assert_eq!(parse_stat("4242 (sh) S 17"), None);
        let own = read_stat(std::process::id() as i32).unwrap();
        assert_eq!(own.pgid, nix::unistd::getpgrp().as_raw());
    }

    /// A process's parent is the thread that started it: the daemon's children are read from
    /// every thread's list, or a run's end would miss a child another thread started.
    #[test]
    fn the_children_of_every_thread_are_found() {
        let (started, child) = std::sync::mpsc::channel();
        let (done, finish) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut sleeper = std::process::Command::new("/bin/sleep")
                .arg("30")
                .spawn()
                .unwrap();
            started.send(sleeper.id() as i32).unwrap();
            // Alive until the check is made, so the child is still this thread's.
            finish.recv().unwrap();
            sleeper.kill().unwrap();
            sleeper.wait().unwrap();
        });
        let pid = child.recv().unwrap();
        let during = children().expect("this kernel lists children");
        done.send(()).unwrap();
        thread.join().unwrap();
        let after = children().unwrap();
        assert!(during.contains(&pid), "{pid} not in {during:?}");
        assert!(!after.contains(&pid), "{pid} still in {after:?}");
    }

    /// A command's pid is free again once tokio has reaped it, while its run is still listed
    /// (its output drained, its cgroup ended): a concurrent run's command may be given that pid.
    /// The earlier run's end must leave the later command listed, or its pass kills it.
    #[test]
    fn an_ended_run_leaves_a_later_command_with_its_old_pid_listed() {
        // Above any pid_max: no real process has it.
        const PID: u32 = 99_999_999;
        let (_, earlier) = spawn_listed(|| Ok(()), |_| Some(PID)).unwrap();
        let (_, later) = spawn_listed(|| Ok(()), |_| Some(PID)).unwrap();
        drop(earlier);
        let listed = live().iter().filter(|(p, _)| *p == PID as i32).count();
        drop(later);
        assert_eq!(
            listed, 1,
            "the earlier run's end took the later command off the list"
        );
    }

    #[test]
    fn a_group_whose_leader_pid_is_a_live_command_now_is_not_an_ended_runs() {
        let stat = Stat {
            ppid: 1,
            pgid: 4242,
            start: 7,
        };
        assert!(in_group_of(&stat, 4242, &[]), "the ended run's group");
        assert!(
            !in_group_of(&stat, 4242, &[(4242, 9)]),
            "the pid is a live command's now: the group is that command's"
        );
        assert!(!in_group_of(&stat, 4243, &[]), "another group");
    }

    #[test]
    fn a_subtree_holds_the_root_and_everything_below_it_only() {
        let stat = |ppid| Stat {
            ppid,
            pgid: 1,
            start: 0,
        };
        let table: BTreeMap<i32, Stat> = [
            (10, stat(1)),
            (11, stat(10)),
            (12, stat(11)),
            (13, stat(10)),
            (20, stat(1)),
            (21, stat(20)),
        ]
        .into_iter()
        .collect();
        let mut below = subtree(&table, 10);
        below.sort();
        assert_eq!(below, [10, 11, 12, 13]);
        assert_eq!(subtree(&table, 21), [21]);
    }
}
