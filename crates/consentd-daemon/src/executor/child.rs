//! A run's command as a process: started, waited for, killed.
//!
//! Most runs start through `posix_spawn` with `POSIX_SPAWN_SETSID`: glibc clones the daemon
//! sharing its memory (`CLONE_VM | CLONE_VFORK`) and execs at once, so nothing of the daemon is
//! copied. std's `Command` can only make the new session in a `pre_exec` closure, and any such
//! closure makes it `fork` the whole daemon: its page tables copied, every write of its other
//! threads a copy-on-write fault until the exec, and the copy torn down by the exec — most of
//! the daemon's own cost of a decision under a mandate (docs/BENCHMARKS.md, "Decisions").
//!
//! A run with a `run_as` user or its own cgroup does need work in the child between fork and
//! exec (switching user, joining the cgroup), so it still forks through std's `Command`. So
//! does every run on a kernel without `pidfd_open` (Linux < 5.3), or when the daemon was
//! started with a standard descriptor closed: both are found once, at the first run. (The
//! glibc the daemon needs anyway, 2.34, has `POSIX_SPAWN_SETSID` and `addchdir_np`.)
//!
//! Either way the command gets the same start: its own session and process group, the given
//! argv and environment only, the run's directory as working directory, three pipes as stdin,
//! stdout and stderr and no other descriptor, an empty signal mask and SIGPIPE at its default
//! (the Rust runtime ignores it in the daemon, and an ignored signal would stay ignored across
//! the exec). `executor::tests` checks each of these on both paths. Either way every signal is
//! at its default, also one the daemon was started with ignored (`nohup`, a background job).

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use super::{cgroup, reaper, Identity, NotStarted, RunSpec};

/// A started command, its pipes, and how to learn its end.
pub(super) struct RunChild {
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
    exit: Exit,
}

enum Exit {
    /// Forked by std's `Command`; tokio waits for it.
    Forked(tokio::process::Child),
    /// Started by `posix_spawn`; waited for through its pidfd, which names this one process
    /// even once its pid is free, so a wait can never take another child's status.
    Spawned {
        pid: Pid,
        /// `None` only while being dropped.
        pidfd: Option<AsyncFd<OwnedFd>>,
        status: Option<ExitStatus>,
    },
    /// Started by `posix_spawn`, but no pidfd could be had (no descriptor left): a blocking
    /// thread watches for its end without reaping it (`WNOWAIT`), so its pid stays its own
    /// until `wait` reaps it, and may be signalled until then.
    Watched {
        pid: Pid,
        ended: Option<tokio::task::JoinHandle<()>>,
        status: Option<ExitStatus>,
    },
}

impl RunChild {
    /// A command forked by std's `Command`, its pipes taken.
    pub(super) fn forked(mut child: tokio::process::Child) -> RunChild {
        RunChild {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            exit: Exit::Forked(child),
        }
    }

    /// The command's pid (and so its process group's id) until it is reaped, as tokio's.
    pub(super) fn id(&self) -> Option<u32> {
        match &self.exit {
            Exit::Forked(child) => child.id(),
            Exit::Spawned {
                pid, status: None, ..
            } => u32::try_from(pid.as_raw()).ok(),
            Exit::Watched {
                pid, status: None, ..
            } => u32::try_from(pid.as_raw()).ok(),
            Exit::Spawned { .. } | Exit::Watched { .. } => None,
        }
    }

    /// Waits for the command to end and reaps it. Cancel-safe: the status is kept the moment
    /// it is taken, with no await between.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        match &mut self.exit {
            Exit::Forked(child) => child.wait().await,
            Exit::Spawned { pidfd, status, .. } => {
                let Some(pidfd) = pidfd.as_ref() else {
                    return Err(io::Error::other("the command's pidfd is gone"));
                };
                loop {
                    if let Some(status) = status {
                        return Ok(*status);
                    }
                    let mut ready = pidfd.readable().await?;
                    match reap(pidfd.get_ref()) {
                        Ok(Some(ended)) => *status = Some(ended),
                        Ok(None) | Err(Errno::EINTR) => ready.clear_ready(),
                        Err(error) => return Err(error.into()),
                    }
                }
            }
            Exit::Watched { pid, ended, status } => {
                if let Some(status) = status {
                    return Ok(*status);
                }
                if let Some(watch) = ended.as_mut() {
                    watch.await.map_err(io::Error::other)?;
                    *ended = None;
                }
                let pid = libc::id_t::try_from(pid.as_raw()).map_err(io::Error::other)?;
                let reaped = waitid(libc::P_PID, pid, libc::WNOHANG)?;
                *status = reaped;
                reaped.ok_or_else(|| io::Error::other("the command's end was seen but not found"))
            }
        }
    }

    /// Sends SIGKILL to the command itself (not its group), if it is not reaped yet.
    pub(super) fn start_kill(&mut self) -> io::Result<()> {
        match &mut self.exit {
            Exit::Forked(child) => child.start_kill(),
            Exit::Spawned {
                pidfd: Some(pidfd),
                status: None,
                ..
            } => kill_through(pidfd.get_ref()),
            // Unreaped, so the pid is still this command's.
            Exit::Watched {
                pid, status: None, ..
            } => Ok(kill(*pid, Signal::SIGKILL)?),
            Exit::Spawned { .. } | Exit::Watched { .. } => Ok(()),
        }
    }
}

impl Drop for RunChild {
    /// A run abandoned before its command was reaped (its future dropped): the command is
    /// killed, as the run's group guard kills its group, and reaped once it is gone, so no
    /// zombie is left. A forked command is tokio's to reap, as before.
    fn drop(&mut self) {
        if let Exit::Watched {
            pid,
            ended,
            status: None,
        } = &mut self.exit
        {
            let _ = kill(*pid, Signal::SIGKILL);
            let (pid, ended) = (*pid, ended.take());
            if let (Ok(runtime), Some(ended)) = (tokio::runtime::Handle::try_current(), ended) {
                runtime.spawn(async move {
                    let _ = ended.await;
                    if let Ok(pid) = libc::id_t::try_from(pid.as_raw()) {
                        let _ = waitid(libc::P_PID, pid, libc::WNOHANG);
                    }
                });
            }
            return;
        }
        let Exit::Spawned {
            pidfd,
            status: None,
            ..
        } = &mut self.exit
        else {
            return;
        };
        let Some(pidfd) = pidfd.take() else { return };
        let _ = kill_through(pidfd.get_ref());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                while let Ok(mut ready) = pidfd.readable().await {
                    match reap(pidfd.get_ref()) {
                        Ok(None) | Err(Errno::EINTR) => ready.clear_ready(),
                        Ok(Some(_)) | Err(_) => break,
                    }
                }
            });
        }
    }
}

/// Starts a run's command, listed live with the reaper: spawned where it can be, else forked.
pub(super) fn spawn(
    spec: &RunSpec,
    dir: &Path,
    identity: Option<&Identity>,
    env: &[(String, String)],
    cgroup: &Option<cgroup::RunCgroup>,
) -> Result<(RunChild, Option<reaper::Listed>), NotStarted> {
    let not_started = |error| NotStarted::Spawn {
        command: spec.command[0].clone(),
        error,
    };
    // Nothing to do between fork and exec: no copy of the daemon is made (`child`).
    if identity.is_none() && cgroup.is_none() && spawn_supported() {
        let program = Program {
            argv: &spec.command,
            env,
            dir,
        };
        return reaper::spawn_listed(|| spawn_in_session(&program), RunChild::id)
            .map_err(not_started);
    }
    let mut cmd = forked_command(spec, dir, identity, env, cgroup);
    // Spawn returns only once exec has succeeded or failed (std reports pre-exec and exec
    // errors back through a close-on-exec pipe), so an error means the command never ran.
    reaper::spawn_listed(|| cmd.spawn().map(RunChild::forked), RunChild::id).map_err(not_started)
}

/// The command as std's `Command` starts it, by a fork: for a `run_as` user or a run's cgroup,
/// which need work between the fork and the exec, or where `posix_spawn` cannot be used.
pub(super) fn forked_command(
    spec: &RunSpec,
    dir: &Path,
    identity: Option<&Identity>,
    env: &[(String, String)],
    cgroup: &Option<cgroup::RunCgroup>,
) -> Command {
    let mut cmd = Command::new(&spec.command[0]);
    cmd.args(&spec.command[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own session and group, so a timeout reaches all it started (in the daemon's session
    // `setpgid` could move a child into the daemon's group, which the subreaper spares).
    #[allow(unsafe_code)]
    // SAFETY: in the forked child before exec; setsid(2) is async-signal-safe, allocates nothing.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(io::Error::from))
    };
    #[allow(unsafe_code)]
    // SAFETY: in the forked child before exec; sigaction(2) is async-signal-safe, and the
    // closure allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            every_signal_at_its_default();
            Ok(())
        })
    };
    if let Some(cgroup) = cgroup {
        let fd = cgroup.join_fd();
        #[allow(unsafe_code)]
        // SAFETY: runs in the forked child before exec (and before the user switch below,
        // which would take the right to move). It makes one write(2) of a static byte to a
        // descriptor the parent opened and keeps open until spawn returns; write(2) is
        // async-signal-safe, and nothing is allocated or locked.
        unsafe {
            cmd.pre_exec(move || {
                if nix::libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
    if let Some(id) = identity {
        // Moved into the closure whole, so the child only reads them.
        let groups = id.groups.clone();
        let (uid, gid) = (id.uid, id.gid);
        // std's own uid()/gid() would drop all supplementary groups; the command gets the
        // user's real group list instead, set here in the required order: groups and gid
        // while still privileged, uid last.
        #[allow(unsafe_code)]
        // SAFETY: the closure runs in the forked child before exec, where only
        // async-signal-safe work is allowed. It performs exactly three syscall wrappers
        // (setgroups(2), setgid(2), setuid(2) via nix, which pass the borrowed slice / plain
        // integers straight to libc and read errno on failure). It does not allocate: the
        // group list was built by getgrouplist in the parent and is only borrowed, and the
        // io::Error made from an errno is a tagged integer, not a heap value. It takes no
        // locks and touches no state shared with other threads (the child has one thread).
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setgroups(&groups)?;
                nix::unistd::setgid(gid)?;
                nix::unistd::setuid(uid)?;
                Ok(())
            });
        }
    }
    cmd
}

/// Reaps the process `pidfd` names if it has ended; `None` while it runs.
///
/// Through libc's `waitid`, not nix's: nix turns the status into its `Signal`, which has no
/// real-time signals, and fails on a command killed by one — after the kernel has reaped it.
fn reap(pidfd: &OwnedFd) -> Result<Option<ExitStatus>, Errno> {
    waitid(
        libc::P_PIDFD,
        pidfd.as_raw_fd() as libc::id_t,
        libc::WNOHANG,
    )
}

/// `waitid` for the one process `id` names (its pidfd, or its pid while it is unreaped, so no
/// other process can have that pid), with `flags` besides `WEXITED`; `None` if nothing ended.
fn waitid(
    kind: libc::idtype_t,
    id: libc::id_t,
    flags: libc::c_int,
) -> Result<Option<ExitStatus>, Errno> {
    #[allow(unsafe_code)]
    // SAFETY: an all-zero siginfo_t is a valid value (its pid 0 means "nothing ended"), and
    // waitid(2) writes only into it.
    let (code, info) = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let code = libc::waitid(kind, id, &mut info, libc::WEXITED | flags);
        (code, info)
    };
    if code < 0 {
        return Err(Errno::last());
    }
    #[allow(unsafe_code)]
    // SAFETY: after a successful waitid the pid and status members are the ones it filled in
    // (a SIGCHLD-style siginfo), or still zero.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    Ok(Some(wait_status(info.si_code, status)))
}

/// The raw wait status (as waitpid(2) gives it, what `ExitStatus` holds) for a waitid end.
fn wait_status(code: libc::c_int, status: libc::c_int) -> ExitStatus {
    ExitStatus::from_raw(match code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        // CLD_KILLED; waitid with only WEXITED reports nothing else.
        _ => status & 0x7f,
    })
}

/// SIGKILL through the pidfd: it reaches this one process or, once it is reaped, nobody,
/// whoever has its pid by then.
fn kill_through(pidfd: &OwnedFd) -> io::Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: pidfd_send_signal(2) takes a descriptor, a signal number, a null siginfo and no
    // flags; no memory is passed.
    let code = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    match code {
        0 => Ok(()),
        _ => match Errno::last() {
            // Gone already: nothing to kill.
            Errno::ESRCH => Ok(()),
            errno => Err(errno.into()),
        },
    }
}

/// Whether runs here can start through `posix_spawn` at all: the daemon's standard descriptors
/// are open (so no pipe can be given 0, 1 or 2), pidfds work, and the attributes are taken.
/// Found once.
pub(super) fn spawn_supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        use nix::fcntl::{fcntl, FcntlArg::F_GETFD};
        let stdio_open = fcntl(io::stdin(), F_GETFD).is_ok()
            && fcntl(io::stdout(), F_GETFD).is_ok()
            && fcntl(io::stderr(), F_GETFD).is_ok();
        stdio_open && pidfd_open(Pid::this()).is_ok() && Attributes::new().is_ok()
    })
}

/// What a spawned command runs, where, with what.
pub(super) struct Program<'a> {
    pub(super) argv: &'a [String],
    pub(super) env: &'a [(String, String)],
    pub(super) dir: &'a Path,
}

/// Starts `program` through `posix_spawn` in a session of its own, its stdio three new pipes.
/// Returns only once the exec has succeeded or failed (glibc reports an exec error as
/// `posix_spawn`'s), so an error means the command never ran.
pub(super) fn spawn_in_session(program: &Program<'_>) -> io::Result<RunChild> {
    let argv = c_strings(program.argv.iter().map(String::as_str))?;
    let envp = c_strings(program.env.iter().map(|(k, v)| format!("{k}={v}")))?;
    let dir = CString::new(program.dir.as_os_str().as_bytes())
        .map_err(|_| invalid("the working directory contains a NUL byte"))?;
    let (stdin_read, stdin_write) = pipe()?;
    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let mut actions = FileActions::new()?;
    for (end, target) in [(&stdin_read, 0), (&stdout_write, 1), (&stderr_write, 2)] {
        actions.dup2(end, target)?;
    }
    actions.chdir(&dir)?;
    let attributes = Attributes::new()?;
    let pid = attributes.spawn(&actions, &argv, &envp)?;
    // The child's ends are its own now; the parent's copies must go, or the command would
    // never see end of file on stdin and the daemon never on stdout.
    drop((stdin_read, stdout_write, stderr_write));
    // The command has been exec'd: from here it is supervised whatever fails, never reported
    // as not started.
    let exit = match pidfd_open(pid).and_then(watch) {
        Ok(pidfd) => Exit::Spawned {
            pid,
            pidfd: Some(pidfd),
            status: None,
        },
        Err(error) => {
            tracing::warn!(%error, %pid, "no pidfd for a run's command: a thread waits for it");
            watched(pid)
        }
    };
    let mut child = RunChild {
        stdin: None,
        stdout: None,
        stderr: None,
        exit,
    };
    // Registering a pipe fails only without memory. The command is then killed (and reaped)
    // by `child`'s drop before the error goes up, and, as with std's own spawn, that rare error
    // is reported as a failed start, although the command was exec'd.
    child.stdin = Some(ChildStdin::from_std(stdin_write.into())?);
    child.stdout = Some(ChildStdout::from_std(stdout_read.into())?);
    child.stderr = Some(ChildStderr::from_std(stderr_read.into())?);
    Ok(child)
}

/// The end of `pid`, a child of this process, watched by a blocking thread.
fn watched(pid: Pid) -> Exit {
    Exit::Watched {
        pid,
        ended: Some(tokio::task::spawn_blocking(move || watch_blocking(pid))),
        status: None,
    }
}

/// Blocks until `pid` has ended, leaving it unreaped (`WNOWAIT`).
fn watch_blocking(pid: Pid) {
    let Ok(id) = libc::id_t::try_from(pid.as_raw()) else {
        return;
    };
    while let Err(Errno::EINTR) = waitid(libc::P_PID, id, libc::WNOWAIT) {}
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_owned())
}

fn c_strings<S: Into<Vec<u8>>>(items: impl Iterator<Item = S>) -> io::Result<Vec<CString>> {
    items
        .map(|item| CString::new(item).map_err(|_| invalid("an argument contains a NUL byte")))
        .collect()
}

/// A pipe, both ends close-on-exec: only the copies `posix_spawn` puts on 0, 1 and 2 survive
/// into the command.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // dup2 onto the same number would keep close-on-exec on older glibc; a daemon started
    // with a standard descriptor closed could be given 0, 1 or 2 here.
    if read.as_raw_fd() <= 2 || write.as_raw_fd() <= 2 {
        return Err(invalid(
            "a standard descriptor of the daemon is closed; runs need 0, 1 and 2 open",
        ));
    }
    Ok((read, write))
}

fn pidfd_open(pid: Pid) -> io::Result<OwnedFd> {
    #[allow(unsafe_code)]
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1; no
    // memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| invalid("pidfd_open returned no descriptor"))?;
    #[allow(unsafe_code)]
    // SAFETY: `fd` was just returned by the kernel as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A pidfd on the runtime's reactor: readable once its process has ended.
fn watch(pidfd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    #[allow(unsafe_code)]
    // SAFETY: the `OwnedFd` moves into the `AsyncFd` and owns its descriptor until the
    // `AsyncFd` is dropped, so it stays open and names the same pidfd throughout.
    Ok(unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }?)
}

/// `posix_spawn_file_actions_t`, destroyed when dropped. Boxed: its address is kept stable
/// from init to destroy, as POSIX leaves moving it unspecified.
struct FileActions(Box<MaybeUninit<libc::posix_spawn_file_actions_t>>);

impl FileActions {
    fn new() -> io::Result<FileActions> {
        let mut actions = Box::new(MaybeUninit::uninit());
        #[allow(unsafe_code)]
        // SAFETY: init writes the object behind a valid pointer to uninitialised storage.
        errno(unsafe { libc::posix_spawn_file_actions_init(actions.as_mut_ptr()) })?;
        Ok(FileActions(actions))
    }

    fn dup2(&mut self, fd: &OwnedFd, target: i32) -> io::Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: the object was initialised in `new`; the call records two integers.
        errno(unsafe {
            libc::posix_spawn_file_actions_adddup2(self.0.as_mut_ptr(), fd.as_raw_fd(), target)
        })
    }

    fn chdir(&mut self, dir: &CString) -> io::Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: the object was initialised in `new`; glibc copies the path (glibc 2.29).
        errno(unsafe {
            libc::posix_spawn_file_actions_addchdir_np(self.0.as_mut_ptr(), dir.as_ptr())
        })
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: initialised in `new`, destroyed once here.
        unsafe {
            libc::posix_spawn_file_actions_destroy(self.0.as_mut_ptr());
        }
    }
}

/// `posix_spawnattr_t` for a run: a new session, an empty signal mask, every signal at its
/// default action.
struct Attributes(Box<MaybeUninit<libc::posix_spawnattr_t>>);

impl Attributes {
    fn new() -> io::Result<Attributes> {
        let mut attributes = Box::new(MaybeUninit::uninit());
        #[allow(unsafe_code)]
        // SAFETY: init writes the object behind a valid pointer to uninitialised storage.
        errno(unsafe { libc::posix_spawnattr_init(attributes.as_mut_ptr()) })?;
        let mut made = Attributes(attributes);
        let all_default = every_signal();
        let flags = libc::POSIX_SPAWN_SETSID
            | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short
            | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short;
        let attributes = made.0.as_mut_ptr();
        #[allow(unsafe_code)]
        // SAFETY: the object was initialised above; the sets are read during each call only.
        unsafe {
            // glibc before 2.26 refuses the flag it does not know with EINVAL.
            errno(libc::posix_spawnattr_setflags(attributes, flags))?;
            errno(libc::posix_spawnattr_setsigmask(
                attributes,
                SigSet::empty().as_ref(),
            ))?;
            errno(libc::posix_spawnattr_setsigdefault(
                attributes,
                &all_default,
            ))?;
        }
        Ok(made)
    }

    fn spawn(&self, actions: &FileActions, argv: &[CString], envp: &[CString]) -> io::Result<Pid> {
        let program = argv.first().ok_or_else(|| invalid("no command"))?;
        let argv = null_terminated(argv);
        let envp = null_terminated(envp);
        let mut pid: libc::pid_t = 0;
        #[allow(unsafe_code)]
        // SAFETY: both objects were initialised in their `new`; `argv` and `envp` are
        // NULL-terminated arrays of pointers into CStrings that outlive the call, which
        // posix_spawn only reads (the `*mut` in its signature is historical).
        errno(unsafe {
            libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                actions.0.as_ptr(),
                self.0.as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
            )
        })?;
        Ok(Pid::from_raw(pid))
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: initialised in `new` (a failed init returns before the value exists),
        // destroyed once here.
        unsafe {
            libc::posix_spawnattr_destroy(self.0.as_mut_ptr());
        }
    }
}

/// Sets every signal the process may handle back to its default disposition, in a forked child
/// before its exec: one the daemon was started with ignored (`nohup`, a shell's background job)
/// would otherwise stay ignored across the exec, for the command's whole tree, where a spawned
/// command gets every signal at its default (`POSIX_SPAWN_SETSIGDEF`). Signals that cannot be
/// changed (SIGKILL, SIGSTOP, glibc's own two) are refused by sigaction and left as they are.
fn every_signal_at_its_default() {
    #[allow(unsafe_code)]
    // SAFETY: sigaction(2) with a zeroed action (SIG_DFL, no flags, an empty mask) and no old
    // action to fill; async-signal-safe, touching nothing but the kernel's table.
    unsafe {
        let default: libc::sigaction = std::mem::zeroed();
        // Linux's signals are 1 to 64 (`_NSIG` - 1).
        for signal in 1..=64 {
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
    }
}

/// Every signal, glibc's own two (32 and 33) included. `sigfillset` leaves those out and
/// `sigaddset` refuses them, but without them glibc's posix_spawn sets both to "ignore" in the
/// child, and an ignored signal stays ignored across the exec, for the command's whole tree.
fn every_signal() -> libc::sigset_t {
    let mut set = *SigSet::all().as_ref();
    #[allow(unsafe_code)]
    // SAFETY: glibc's sigset_t is an array of unsigned longs holding signal n at bit n - 1 of
    // the array (bits/sigset.h, `__sigmask`); the first long holds signals 1 to 64 on this
    // 64-bit target, and writing it as a u64 stays inside the value.
    unsafe {
        let first = std::ptr::addr_of_mut!(set).cast::<u64>();
        *first |= (1 << 31) | (1 << 32);
    }
    set
}

fn null_terminated(strings: &[CString]) -> Vec<*mut libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

/// posix_spawn's functions return an error number rather than set errno.
fn errno(code: libc::c_int) -> io::Result<()> {
    match code {
        0 => Ok(()),
        code => Err(io::Error::from_raw_os_error(code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether an end is the one a case expects.
    type EndCheck = fn(ExitStatus) -> bool;

    /// Both ways a spawned command's end is learnt — its pidfd, or a thread when no pidfd can be
    /// had — report the same ends, a real-time signal's included, and kill only while it is
    /// unreaped.
    #[tokio::test]
    async fn a_spawned_commands_end_is_read_alike_through_its_pidfd_or_a_thread() {
        let dir = std::env::temp_dir();
        let cases: [(&str, &str, EndCheck); 3] = [
            ("exit 7", "exit code 7", |s| s.code() == Some(7)),
            ("kill -40 $$", "real-time signal 40", |s| {
                s.signal() == Some(40)
            }),
            ("exec /bin/sleep 30", "killed", |s| s.signal() == Some(9)),
        ];
        for (script, what, ended_so) in cases {
            for by_thread in [false, true] {
                let argv = ["/bin/sh", "-c", script].map(str::to_owned);
                let mut child = spawn_in_session(&Program {
                    argv: &argv,
                    env: &[],
                    dir: &dir,
                })
                .unwrap();
                if by_thread {
                    let pid = Pid::from_raw(child.id().unwrap() as i32);
                    // Its pidfd closed (an `Exit` alone kills nothing when dropped): the
                    // thread alone learns the end.
                    drop(std::mem::replace(&mut child.exit, watched(pid)));
                }
                let how = if by_thread { "a thread" } else { "its pidfd" };
                if what == "killed" {
                    child.start_kill().unwrap();
                }
                let status = child.wait().await.unwrap();
                assert!(ended_so(status), "{what} through {how}: {status:?}");
                assert_eq!(child.id(), None, "{what} through {how}: reaped, no pid");
                // Reaped: a kill reaches nobody and says so by doing nothing.
                child.start_kill().unwrap();
            }
        }
    }
}
