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
//! the exec). `executor::tests` checks each of these on both paths.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
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
            Exit::Spawned { .. } => None,
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
        }
    }

    /// Sends SIGKILL to the command itself (not its group), if it is not reaped yet.
    pub(super) fn start_kill(&mut self) -> io::Result<()> {
        match &mut self.exit {
            Exit::Forked(child) => child.start_kill(),
            Exit::Spawned {
                pid, status: None, ..
            } => Ok(kill(*pid, Signal::SIGKILL)?),
            Exit::Spawned { .. } => Ok(()),
        }
    }
}

impl Drop for RunChild {
    /// A run abandoned before its command was reaped (its future dropped): the command is
    /// killed, as the run's group guard kills its group, and reaped once it is gone, so no
    /// zombie is left. A forked command is tokio's to reap, as before.
    fn drop(&mut self) {
        let Exit::Spawned {
            pid,
            pidfd,
            status: None,
        } = &mut self.exit
        else {
            return;
        };
        let _ = kill(*pid, Signal::SIGKILL);
        let Some(pidfd) = pidfd.take() else { return };
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
fn reap(pidfd: &OwnedFd) -> Result<Option<ExitStatus>, Errno> {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
    Ok(match waitid(Id::PIDFd(pidfd.as_fd()), flags)? {
        // The raw wait status, as waitpid(2) would give it.
        WaitStatus::Exited(_, code) => Some(ExitStatus::from_raw((code & 0xff) << 8)),
        WaitStatus::Signaled(_, signal, core) => Some(ExitStatus::from_raw(
            signal as i32 | if core { 0x80 } else { 0 },
        )),
        _ => None,
    })
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
    let pidfd = match pidfd_open(pid).and_then(watch) {
        Ok(pidfd) => pidfd,
        Err(error) => {
            // The command runs and cannot be waited for here: it must not act unwatched.
            let _ = kill(pid, Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
            return Err(error);
        }
    };
    Ok(RunChild {
        stdin: Some(ChildStdin::from_std(stdin_write.into())?),
        stdout: Some(ChildStdout::from_std(stdout_read.into())?),
        stderr: Some(ChildStderr::from_std(stderr_read.into())?),
        exit: Exit::Spawned {
            pid,
            pidfd: Some(pidfd),
            status: None,
        },
    })
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

/// `posix_spawnattr_t` for a run: a new session, an empty signal mask, SIGPIPE at default.
struct Attributes(Box<MaybeUninit<libc::posix_spawnattr_t>>);

impl Attributes {
    fn new() -> io::Result<Attributes> {
        let mut attributes = Box::new(MaybeUninit::uninit());
        #[allow(unsafe_code)]
        // SAFETY: init writes the object behind a valid pointer to uninitialised storage.
        errno(unsafe { libc::posix_spawnattr_init(attributes.as_mut_ptr()) })?;
        let mut made = Attributes(attributes);
        let pipe_default = {
            let mut set = SigSet::empty();
            set.add(Signal::SIGPIPE);
            set
        };
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
                pipe_default.as_ref(),
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
