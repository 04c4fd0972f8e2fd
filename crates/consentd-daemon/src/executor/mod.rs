//! Runs one approved action's command, once, and reports what happened (docs/OPERATOR.md, "Writing
//! an action command").
//!
//! This module owns everything between "the claim is durable" and "here is the outcome":
//! reading the category's `env_file`, switching to `run_as`, preparing the private working
//! directory with the attachment copies, writing the action as JSON on stdin, collecting the
//! first stdout line and a bounded stderr tail, enforcing the timeout on the whole process
//! group, and removing the working directory afterwards. It never retries and never decides
//! whether an action may run; the caller has already claimed the run before calling [`run`].
//!
//! What the command gets:
//! - argv exactly as configured; `command[0]` must be absolute and no shell is ever involved;
//! - an empty environment plus the `env_file`'s variables and nothing else: no `PATH`, `HOME`,
//!   `LANG`, … — a command that needs one sets it in its `env_file`, and scripts should call
//!   programs by absolute path;
//! - as working directory a fresh directory `<work_root>/run-<record id>-<unique>`, mode 0700,
//!   owned by the `run_as` user when set, holding a copy (mode 0600) of each attachment under
//!   its name; it is removed once the run is over, whatever the outcome. Each copy is hashed
//!   while it is made and must have the record's SHA-256 and size, the ones the card showed:
//!   a stored copy that changed since (other bytes, cut short, a symlink, gone) means the
//!   command never starts ([`RunOutcome::NotStarted`], naming the attachment);
//! - on stdin one JSON object followed by a newline, then end of file:
//!   `{"id","kind","target","text","fields","cost_usd","attachments":[{"name","media_type","path","sha256"}]}`
//!   where `path` is the absolute path of the copy;
//! - its own session and process group. On timeout the whole group gets SIGKILL. When the command itself
//!   exits, whatever it left running in its group is killed too: a run is over when its
//!   command is, and nothing of it may outlive the working directory or the report. What left
//!   the group (`setsid`) is killed as well: by the run's own cgroup where the host delegates
//!   one (`cgroup`), and else by the daemon as child subreaper (`reaper`).
//!
//! With `run_as`, the daemon must be root; the user's groups are resolved before the fork and
//! the child calls `setgroups`, `setgid`, `setuid` (in that order) just before `exec`. Because
//! the attachment paths are absolute, `work_root` and its ancestors must be searchable (`x`)
//! by that user (e.g. `work_root` mode 0711: the run directories themselves stay 0700, so
//! nothing is listable or readable through it); [`run`] checks this from the mode bits and
//! refuses to start otherwise (ACLs are not consulted).
//!
//! Writing stdin relies on SIGPIPE being ignored, which the Rust runtime does for every
//! binary: a command that never reads stdin makes the write fail with EPIPE, which is ignored.
//! (The command itself starts with SIGPIPE at its default.) How the process is started and
//! waited for — `posix_spawn`, or a fork where `run_as` or a cgroup need one — is `child`'s.

mod cgroup;
mod child;
mod output;
mod reaper;
mod workdir;

use output::{describe_exit, drain, FirstLine, StderrTail};
use workdir::WorkDir;

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{Gid, Pid, Uid, User};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;

use child::RunChild;
use tokio::time::Instant;

use consentd_store::stored;

/// At most this many characters of the first stdout line become the result.
const RESULT_MAX_CHARS: usize = 200;
/// Bytes of stdout kept while looking for the first line: 200 chars of up to 4 bytes each,
/// plus a `\r`, fit with room to spare; everything past this or past the first `\n` is
/// read and dropped.
const STDOUT_KEEP: usize = 1024;
/// Stderr is kept privately for the owner's diagnosis; only its tail is worth keeping.
const STDERR_KEEP: usize = 64 * 1024;
/// After the command has exited (or its group was killed), how long the pipes may still be
/// drained. Only a process that escaped the group (setsid) can hold them open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// An env_file is a handful of secrets; anything larger is a mistake.
const ENV_FILE_MAX: u64 = 1024 * 1024;
/// Longest file name Linux accepts in one path component.
const NAME_MAX: usize = 255;

/// One run of a category's command, as the caller prepared it.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub record_id: String,
    /// argv; `command[0]` is absolute; no shell ever.
    pub command: Vec<String>,
    /// OS user to run as; the daemon must then be root.
    pub run_as: Option<String>,
    /// `KEY=VALUE` lines; `#` comments and blank lines ignored.
    pub env_file: Option<PathBuf>,
    pub timeout: Duration,
    /// A private directory of the daemon under which each run gets a fresh directory.
    pub work_root: PathBuf,
    /// What goes on stdin.
    pub stdin: StdinAction,
    pub attachments: Vec<AttachmentSource>,
    /// The owner approved this run on its card (else a mandate covered it, with no card): what
    /// a changed attachment's message says it changed after.
    pub on_card: bool,
}

/// The action as the command sees it on stdin.
#[derive(Debug, Clone, Default)]
pub struct StdinAction {
    pub id: String,
    pub kind: String,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    pub cost_usd: Option<String>,
}

/// One attachment: `source` is the daemon's content-addressed copy, copied again into the
/// run's directory under `name` and checked on the way against `sha256` and `bytes`, the
/// record's (and so the card's) facts.
#[derive(Debug, Clone)]
pub struct AttachmentSource {
    pub name: String,
    pub media_type: String,
    /// Lower-case hex, all 64 digits.
    pub sha256: String,
    pub bytes: u64,
    pub source: PathBuf,
}

/// What happened to the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// Exit 0; the first stdout line, at most 200 chars, trailing `\r` stripped; `None` when
    /// stdout was empty or began with an empty line.
    Executed { result: Option<String> },
    /// Another exit (`"exit status 3"`) or a signal (`"killed by signal 9"`); the last 64 KiB
    /// of stderr.
    Failed { exit: String, stderr: String },
    /// The timeout passed and the process group was killed; the outcome is unknown.
    TimedOut { stderr: String },
    /// The command did not run.
    NotStarted { reason: String },
    /// A built-in action (`crate::actions`) was refused or failed: what the owner reads, and
    /// the journal's short word for it (no text of the answer, which may hold anything).
    ActionFailed { message: String, detail: String },
    /// A built-in action's request went out and how it ended is not known.
    Unknown { message: String, detail: String },
}

/// Why a run did not start. Each message names what to fix.
#[derive(Debug, thiserror::Error)]
enum NotStarted {
    #[error("the command is empty")]
    EmptyCommand,
    #[error("command[0] {0:?} is not an absolute path")]
    RelativeCommand(String),
    #[error("run_as {user:?} needs consentd to run as root, but it runs as uid {uid}")]
    NotRoot { user: String, uid: Uid },
    #[error("run_as user {0:?} is unknown")]
    UnknownUser(String),
    #[error("run_as user {user:?}: {detail}")]
    UserLookup { user: String, detail: String },
    #[error("env_file {path}: {detail}")]
    EnvFile { path: String, detail: String },
    #[error("env_file {path}:{line}: {detail}")]
    EnvLine {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("work_root {path}: {detail}")]
    WorkRoot { path: String, detail: String },
    #[error("attachment {name:?}: {detail}")]
    Attachment { name: String, detail: String },
    #[error("attachment {name:?} changed after {since}, so nothing ran: {problem}")]
    AttachmentChanged {
        name: String,
        /// `the card was shown`, or for a mandate's run `it was asked for`.
        since: &'static str,
        problem: stored::CopyProblem,
    },
    #[error("cannot start {command}: {error}")]
    Spawn { command: String, error: io::Error },
}

/// Runs `spec.command` once and reports what happened. Never panics on the command's
/// behaviour; every failure before the command started is [`RunOutcome::NotStarted`].
///
/// Dropping the returned future before it completes kills the command's process group and
/// removes the working directory.
pub async fn run(spec: &RunSpec) -> RunOutcome {
    let prepared = match prepare(spec).await {
        Ok(p) => p,
        Err(e) => {
            return RunOutcome::NotStarted {
                reason: e.to_string(),
            }
        }
    };
    let Prepared {
        work_dir,
        identity,
        env,
        payload,
    } = prepared;

    let cgroup = cgroup::RunCgroup::create();
    let (child, listed) = match child::spawn(spec, &work_dir.path, identity.as_ref(), &env, &cgroup)
    {
        Ok(c) => c,
        Err(e) => {
            if let Some(cgroup) = cgroup {
                let _ = tokio::task::spawn_blocking(move || cgroup.end()).await;
            }
            work_dir.remove().await;
            return RunOutcome::NotStarted {
                reason: e.to_string(),
            };
        }
    };

    let (end, stdout, stderr) = supervise(child, &payload, spec.timeout).await;
    // What left the process group dies with the run too (see `reaper` and `cgroup`), before the
    // directory goes, so nothing of the run can write into it after; both in one blocking task,
    // one hand-off to the pool and back per run instead of two.
    let _ = tokio::task::spawn_blocking(move || {
        let also = cgroup.map(cgroup::RunCgroup::end).unwrap_or_default();
        if let Some(listed) = listed {
            reaper::finish(listed, &also);
        }
        work_dir.remove_now();
    })
    .await;

    match end {
        End::Exited(status) if status.success() => RunOutcome::Executed {
            result: stdout.result(),
        },
        End::Exited(status) => RunOutcome::Failed {
            exit: describe_exit(status),
            stderr: stderr.finish(),
        },
        // A failed wait leaves the outcome as unknown as a timeout does; the group is killed
        // the same way.
        End::TimedOut | End::WaitFailed => RunOutcome::TimedOut {
            stderr: stderr.finish(),
        },
    }
}

/// Everything the run needs, made before the fork.
struct Prepared {
    work_dir: WorkDir,
    identity: Option<Identity>,
    env: Vec<(String, String)>,
    payload: Vec<u8>,
}

/// The `run_as` user, resolved before the fork: after it nothing may allocate or take locks,
/// and NSS lookups do both.
#[derive(Debug, Clone)]
struct Identity {
    name: String,
    uid: Uid,
    gid: Gid,
    groups: Vec<Gid>,
}

async fn prepare(spec: &RunSpec) -> Result<Prepared, NotStarted> {
    match spec.command.first() {
        None => return Err(NotStarted::EmptyCommand),
        Some(c) if !Path::new(c).is_absolute() => {
            return Err(NotStarted::RelativeCommand(c.clone()))
        }
        Some(_) => {}
    }
    let identity = match &spec.run_as {
        Some(user) => Some(resolve_user(user).await?),
        None => None,
    };
    let env = match &spec.env_file {
        Some(path) => read_env_file(path).await?,
        None => Vec::new(),
    };
    for a in &spec.attachments {
        check_attachment_name(&a.name).map_err(|detail| NotStarted::Attachment {
            name: a.name.clone(),
            detail: detail.to_owned(),
        })?;
    }
    for (i, a) in spec.attachments.iter().enumerate() {
        if spec.attachments[..i].iter().any(|b| b.name == a.name) {
            return Err(NotStarted::Attachment {
                name: a.name.clone(),
                detail: "two attachments have this name".to_owned(),
            });
        }
    }

    // The canonical root makes the attachment paths absolute and free of symlinks, and is
    // the path whose ancestors the run_as user must be able to traverse.
    let root = tokio::fs::canonicalize(&spec.work_root)
        .await
        .map_err(|e| NotStarted::WorkRoot {
            path: spec.work_root.display().to_string(),
            detail: e.to_string(),
        })?;
    if let Some(id) = &identity {
        check_searchable(&root, id).map_err(|detail| NotStarted::WorkRoot {
            path: root.display().to_string(),
            detail,
        })?;
    }
    let work_dir = WorkDir::create(&root, &spec.record_id, identity.as_ref()).map_err(|e| {
        NotStarted::WorkRoot {
            path: root.display().to_string(),
            detail: format!("cannot create a run directory: {e}"),
        }
    })?;

    // From here on a failure must remove the directory again.
    match fill_work_dir(spec, &work_dir.path, identity.as_ref()).await {
        Ok(payload) => Ok(Prepared {
            work_dir,
            identity,
            env,
            payload,
        }),
        Err(e) => {
            work_dir.remove().await;
            Err(e)
        }
    }
}

async fn resolve_user(user: &str) -> Result<Identity, NotStarted> {
    let euid = nix::unistd::geteuid();
    if !euid.is_root() {
        return Err(NotStarted::NotRoot {
            user: user.to_owned(),
            uid: euid,
        });
    }
    let name = user.to_owned();
    // getpwnam_r and getgrouplist may consult NSS (files, LDAP, …) and block.
    let looked_up = tokio::task::spawn_blocking(move || -> Result<Identity, NotStarted> {
        let lookup_err = |detail: String| NotStarted::UserLookup {
            user: name.clone(),
            detail,
        };
        let u = User::from_name(&name)
            .map_err(|e| lookup_err(e.to_string()))?
            .ok_or_else(|| NotStarted::UnknownUser(name.clone()))?;
        let cname = std::ffi::CString::new(u.name.as_str())
            .map_err(|_| lookup_err("the name holds a NUL byte".to_owned()))?;
        let groups = nix::unistd::getgrouplist(&cname, u.gid)
            .map_err(|e| lookup_err(format!("cannot list its groups: {e}")))?;
        Ok(Identity {
            name: u.name,
            uid: u.uid,
            gid: u.gid,
            groups,
        })
    })
    .await;
    match looked_up {
        Ok(r) => r,
        Err(e) => Err(NotStarted::UserLookup {
            user: user.to_owned(),
            detail: e.to_string(),
        }),
    }
}

/// Parses an env_file: `KEY=VALUE` per line, `KEY` matching `[A-Za-z_][A-Za-z0-9_]*`, the
/// value taken verbatim (no quotes removed, no trimming; a trailing `\r` is dropped). Lines
/// that are blank or whose first non-blank character is `#` are skipped. A key given twice
/// is an error rather than a silent override.
async fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, NotStarted> {
    let shown = path.display().to_string();
    let file_err = |detail: String| NotStarted::EnvFile {
        path: shown.clone(),
        detail,
    };
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| file_err(e.to_string()))?;
    if meta.len() > ENV_FILE_MAX {
        return Err(file_err(format!("larger than {ENV_FILE_MAX} bytes")));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| file_err(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| file_err("not UTF-8".to_owned()))?;
    parse_env(&text).map_err(|(line, detail)| NotStarted::EnvLine {
        path: shown.clone(),
        line,
        detail,
    })
}

fn parse_env(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    let mut first_line: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((n, "expected KEY=VALUE".to_owned()));
        };
        if !is_env_key(key) {
            return Err((
                n,
                format!("{key:?} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"),
            ));
        }
        if value.contains('\0') {
            return Err((n, "the value holds a NUL byte".to_owned()));
        }
        if let Some(first) = first_line.insert(key, n) {
            return Err((n, format!("{key} is set again (first on line {first})")));
        }
        vars.push((key.to_owned(), value.to_owned()));
    }
    Ok(vars)
}

fn is_env_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Attachment names come from the asking agent; they must name one entry inside the run
/// directory and nothing else.
fn check_attachment_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        return Err("not a usable file name");
    }
    if name.contains('/') || name.contains('\0') {
        return Err("a file name may not hold '/' or NUL");
    }
    if name.len() > NAME_MAX {
        return Err("the file name is longer than 255 bytes");
    }
    Ok(())
}

/// The run_as user must be able to reach `dir` by its absolute path, or it cannot open the
/// attachment paths it is given. Judged from the owner/group/other `x` bits.
fn check_searchable(dir: &Path, id: &Identity) -> Result<(), String> {
    if id.uid.is_root() {
        return Ok(());
    }
    for d in dir.ancestors() {
        let meta = std::fs::metadata(d).map_err(|e| format!("{}: {e}", d.display()))?;
        let bit = if meta.uid() == id.uid.as_raw() {
            0o100
        } else if meta.gid() == id.gid.as_raw()
            || id.groups.iter().any(|g| g.as_raw() == meta.gid())
        {
            0o010
        } else {
            0o001
        };
        if meta.mode() & bit == 0 {
            return Err(format!(
                "{} is not searchable by run_as user {:?}, so it could not open its attachments \
                 (give it x, e.g. mode 0711 on work_root)",
                d.display(),
                id.name
            ));
        }
    }
    Ok(())
}

/// Copies the attachments in and builds the stdin JSON with their final paths.
async fn fill_work_dir(
    spec: &RunSpec,
    dir: &Path,
    identity: Option<&Identity>,
) -> Result<Vec<u8>, NotStarted> {
    let mut listed = Vec::with_capacity(spec.attachments.len());
    let owner = identity.map(|id| (id.uid.as_raw(), id.gid.as_raw()));
    for a in &spec.attachments {
        let dest = dir.join(&a.name);
        let path = dest
            .to_str()
            .ok_or_else(|| NotStarted::Attachment {
                name: a.name.clone(),
                detail: format!("{} is not UTF-8", dest.display()),
            })?
            .to_owned();
        // Hashing 20 MiB is blocking work; the copy must not stall the consent loop's runtime.
        let source = a.clone();
        let since = if spec.on_card {
            "the card was shown"
        } else {
            "it was asked for"
        };
        tokio::task::spawn_blocking(move || copy_attachment(&source, &dest, owner, since))
            .await
            .map_err(|e| NotStarted::Attachment {
                name: a.name.clone(),
                detail: format!("the copy did not finish: {e}"),
            })??;
        listed.push(StdinAttachment {
            name: &a.name,
            media_type: &a.media_type,
            path,
            sha256: &a.sha256,
        });
    }
    let action = &spec.stdin;
    let payload = StdinPayload {
        id: &action.id,
        kind: &action.kind,
        target: action.target.as_deref(),
        text: action.text.as_deref(),
        fields: &action.fields,
        cost_usd: action.cost_usd.as_deref(),
        attachments: listed,
    };
    // Serializing plain strings and maps cannot fail.
    let mut bytes = serde_json::to_vec(&payload).unwrap_or_default();
    bytes.push(b'\n');
    Ok(bytes)
}

/// Copies one attachment from the store into the run's directory, checked against the record:
/// the command gets exactly the bytes whose SHA-256 the owner was shown, or does not start.
///
/// The copy is made exclusively (`create_new`, so a name planted in the directory — a symlink
/// to elsewhere — is never written through), mode 0600, handed to the `run_as` user by its
/// descriptor. It is not synced: the directory is private and lives only as long as the run.
fn copy_attachment(
    a: &AttachmentSource,
    dest: &Path,
    owner: Option<(u32, u32)>,
    since: &'static str,
) -> Result<(), NotStarted> {
    let failed = |problem: stored::CopyProblem| {
        let name = a.name.clone();
        // The file the error is about: the copy for a write, else the stored copy.
        let path = match &problem {
            _ if problem.is_change() => {
                return NotStarted::AttachmentChanged {
                    name,
                    since,
                    problem,
                }
            }
            stored::CopyProblem::Write(_) => dest,
            _ => a.source.as_path(),
        };
        let detail = format!("{problem} ({})", path.display());
        NotStarted::Attachment { name, detail }
    };
    let source = stored::open(&a.source).map_err(failed)?;
    let create_err = |e: io::Error| NotStarted::Attachment {
        name: a.name.clone(),
        detail: format!("cannot create {}: {e}", dest.display()),
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .map_err(create_err)?;
    // The umask can only take bits away; set the mode exactly anyway.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(create_err)?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid)).map_err(create_err)?;
    }
    let expected = stored::Expected {
        sha256: a.sha256.clone(),
        bytes: a.bytes,
    };
    stored::copy(source, &expected, &mut file).map_err(failed)
}

/// The stdin object; field order is the documented key order.
#[derive(Serialize)]
struct StdinPayload<'a> {
    id: &'a str,
    kind: &'a str,
    target: Option<&'a str>,
    text: Option<&'a str>,
    fields: &'a BTreeMap<String, String>,
    cost_usd: Option<&'a str>,
    attachments: Vec<StdinAttachment<'a>>,
}

#[derive(Serialize)]
struct StdinAttachment<'a> {
    name: &'a str,
    media_type: &'a str,
    path: String,
    sha256: &'a str,
}

/// Runs are held whole where the host allows it: a cgroup each where a cgroup v2 subtree is
/// delegated, and the daemon a child subreaper in any case (see `cgroup` and `reaper`). Called
/// once at the daemon's start, while it has one thread; says which holds.
pub(crate) fn contain_runs() {
    let cgroup = cgroup::take_delegated();
    let subreaper = reaper::become_subreaper();
    match (cgroup, subreaper) {
        (Ok(base), _) => tracing::info!(
            cgroup = %base.display(),
            "each run gets its own cgroup, killed whole at the run's end"
        ),
        (Err(why), true) => tracing::info!(
            "no delegated cgroup ({why}): each run is held by its process group, and what \
             leaves the group is adopted by the daemon and killed at the run's end"
        ),
        (Err(why), false) => tracing::warn!(
            "no delegated cgroup ({why}) and the daemon cannot be a subreaper: a process that \
             leaves its run's process group can outlive the run"
        ),
    }
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    WaitFailed,
}

/// Feeds stdin, drains stdout and stderr, and waits for the command, all at once, so no
/// pipe can fill up and stall the command; enforces the timeout on the process group.
async fn supervise(
    mut child: RunChild,
    payload: &[u8],
    timeout: Duration,
) -> (End, FirstLine, StderrTail) {
    let group = GroupGuard {
        pgid: child.id().map(|id| Pid::from_raw(id as i32)),
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut first = FirstLine::default();
    let mut tail = StderrTail::default();
    let now = Instant::now();
    // A timeout too large to add is as good as none (about a century).
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));

    let end = {
        let mut io = pin!(async {
            tokio::join!(
                feed_stdin(stdin, payload),
                drain(stdout, &mut first),
                drain(stderr, &mut tail),
            )
        });
        let mut io_done = false;
        let end = loop {
            tokio::select! {
                // An exit that is ready together with the deadline is still an exit.
                biased;
                status = child.wait() => break match status {
                    Ok(s) => End::Exited(s),
                    Err(_) => End::WaitFailed,
                },
                _ = &mut io, if !io_done => io_done = true,
                () = tokio::time::sleep_until(deadline) => break End::TimedOut,
            }
        };
        match end {
            End::TimedOut | End::WaitFailed => {
                // The leader is not reaped yet, so its pid still names our group.
                group.kill();
                // Belt and braces: should the group signal fail, the leader at least dies and
                // can be reaped, so the run still ends.
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            End::Exited(_) => {
                // Leftovers in the group die with the run. The group id stays reserved by
                // the kernel while any member lives, so this reaches only our processes
                // (or nobody).
                group.kill();
            }
        }
        group.disarm();
        if !io_done {
            let _ = tokio::time::timeout(DRAIN_GRACE, &mut io).await;
        }
        end
    };
    (end, first, tail)
}

async fn feed_stdin(stdin: Option<ChildStdin>, payload: &[u8]) {
    if let Some(mut stdin) = stdin {
        // A command that ignores stdin closes the pipe by exiting: EPIPE is expected, and any
        // other write error leaves the command reading a short object it must reject itself.
        let _ = stdin.write_all(payload).await;
        let _ = stdin.shutdown().await;
        // Dropping closes the pipe: end of file for the command.
    }
}

/// Kills the command's process group if the run is abandoned (its future dropped) before
/// the command was reaped.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (nothing left in the group) is the usual, harmless answer.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// Once the leader is reaped the group id may be reused after its last member is gone,
    /// so the guard must not signal it any more.
    fn disarm(mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::output::Keep;
    use super::*;
    use std::collections::BTreeSet;
    use std::fs;

    use nix::errno::Errno;
    use tempfile::TempDir;

    const WAIT: Duration = Duration::from_secs(60);

    /// A scratch place with a store, a work_root and room for scripts and outputs.
    struct Scratch {
        tmp: TempDir,
    }

    impl Scratch {
        fn new() -> Self {
            let tmp = TempDir::new().unwrap();
            fs::create_dir(tmp.path().join("work")).unwrap();
            fs::set_permissions(tmp.path().join("work"), fs::Permissions::from_mode(0o700))
                .unwrap();
            Scratch { tmp }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.tmp.path().join(name)
        }

        fn work_root(&self) -> PathBuf {
            self.path("work")
        }

        /// Writes a shell script; the executor itself never adds a shell, the tests choose
        /// /bin/sh as command[0].
        fn script(&self, body: &str) -> PathBuf {
            let path = self.path("script.sh");
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
            path
        }

        fn spec(&self, body: &str, args: &[&str]) -> RunSpec {
            let script = self.script(body);
            let mut command = vec!["/bin/sh".to_owned(), script.display().to_string()];
            command.extend(args.iter().map(|a| a.to_string()));
            RunSpec {
                record_id: "rec_01".to_owned(),
                command,
                run_as: None,
                env_file: None,
                timeout: WAIT,
                work_root: self.work_root(),
                stdin: StdinAction {
                    id: "rec_01".to_owned(),
                    kind: "publish_x".to_owned(),
                    ..StdinAction::default()
                },
                attachments: Vec::new(),
                on_card: true,
            }
        }

        fn work_root_is_empty(&self) -> bool {
            fs::read_dir(self.work_root()).unwrap().next().is_none()
        }

        /// An attachment as the store keeps it: its bytes under their SHA-256 in `store/`,
        /// with the record's facts.
        fn attachment(&self, name: &str, bytes: &[u8]) -> AttachmentSource {
            let store = self.path("store");
            if !store.exists() {
                fs::create_dir(&store).unwrap();
            }
            let sha256 = consentd_core::digest::Sha256Hash::of(bytes).to_hex();
            let source = store.join(&sha256);
            fs::write(&source, bytes).unwrap();
            AttachmentSource {
                name: name.to_owned(),
                media_type: "application/octet-stream".to_owned(),
                sha256,
                bytes: bytes.len() as u64,
                source,
            }
        }
    }

    fn executed(outcome: RunOutcome) -> Option<String> {
        match outcome {
            RunOutcome::Executed { result } => result,
            other => panic!("expected Executed, got {other:?}"),
        }
    }

    fn not_started(outcome: RunOutcome) -> String {
        match outcome {
            RunOutcome::NotStarted { reason } => reason,
            other => panic!("expected NotStarted, got {other:?}"),
        }
    }

    /// Gone, or a zombie nobody has reaped yet (a zombie runs nothing).
    fn is_dead(pid: i32) -> bool {
        match nix::sys::signal::kill(Pid::from_raw(pid), None) {
            Err(Errno::ESRCH) => true,
            _ => match fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => true,
                Ok(stat) => {
                    let state = stat.rsplit_once(')').map(|(_, r)| r.trim_start());
                    matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X'))
                }
            },
        }
    }

    /// SIGKILL is delivered asynchronously; give the kernel a moment to finish the exit.
    fn wait_dead(pid: i32) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if is_dead(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Keeps the current-thread runtime busy (so paused time cannot auto-advance) until the
    /// script has written `path`; bounded by real time in case the script never does.
    async fn until_exists(path: &Path) {
        let start = std::time::Instant::now();
        while !path.exists() && start.elapsed() < Duration::from_secs(20) {
            tokio::task::yield_now().await;
        }
        assert!(path.exists(), "the script never wrote {}", path.display());
    }

    fn read_pid(path: &Path) -> i32 {
        fs::read_to_string(path).unwrap().trim().parse().unwrap()
    }

    /// What a command sees of its start: printed by the command itself, one fact a line.
    const START_PROBE: &str = r#"exec 3>"$1"; echo "the first line"; exec 1>&3 3>&-
read -r _ pid_comm state ppid pgrp sid _ < /proc/$$/stat
[ "$pgrp" = "$$" ] && echo "own process group"
[ "$sid" = "$$" ] && echo "own session"
echo "cwd $(/bin/pwd)"
/usr/bin/env | /usr/bin/sort
/bin/ls /proc/self/fd | /usr/bin/tr '\n' ' '; echo
/bin/grep -E '^Sig(Blk|Ign)' /proc/self/status
read -r line; echo "stdin $line"
echo "on stderr" >&2"#;

    /// Both ways a command starts — `posix_spawn` (most runs) and std's fork (`run_as`, a
    /// cgroup) — give it the same start: its own session and group, the run's directory, the
    /// given environment only, stdin, stdout and stderr and no other descriptor, no signal
    /// blocked or ignored.
    #[tokio::test]
    async fn a_command_starts_the_same_spawned_or_forked() {
        assert!(child::spawn_supported(), "this machine has pidfds");
        let s = Scratch::new();
        let dir = s.work_root();
        let env = vec![("ONLY".to_owned(), "this one".to_owned())];
        let (spawned_out, forked_out) = (s.path("spawned.txt"), s.path("forked.txt"));
        // Started as `nohup` would start the daemon: SIGHUP ignored while both commands start.
        #[allow(unsafe_code)]
        // SAFETY: signal(2) with SIG_IGN for SIGHUP, which nothing in the test process sends
        // or handles; the disposition it had is put back below.
        let hangup = unsafe { nix::libc::signal(nix::libc::SIGHUP, nix::libc::SIG_IGN) };
        let spawned = s.spec(START_PROBE, &[&spawned_out.display().to_string()]);
        let spawned = child::spawn_in_session(&child::Program {
            argv: &spawned.command,
            env: &env,
            dir: &dir,
        })
        .unwrap();
        let forked = s.spec(START_PROBE, &[&forked_out.display().to_string()]);
        let forked = RunChild::forked(
            child::forked_command(&forked, &dir, None, &env, &None)
                .spawn()
                .unwrap(),
        );
        #[allow(unsafe_code)]
        // SAFETY: puts back the disposition read above.
        unsafe {
            nix::libc::signal(nix::libc::SIGHUP, hangup);
        }
        let mut seen = Vec::new();
        for (child, out) in [(spawned, spawned_out), (forked, forked_out)] {
            let (end, first, tail) = supervise(child, b"the action\n", WAIT).await;
            assert!(matches!(end, End::Exited(s) if s.success()), "{out:?}");
            assert_eq!(first.result().as_deref(), Some("the first line"));
            assert_eq!(tail.finish(), "on stderr\n");
            seen.push(fs::read_to_string(out).unwrap());
        }
        // Descriptors the test process itself lets children inherit (its harness's), which
        // either way of starting passes on; the daemon's own are all close-on-exec.
        let inherited: BTreeSet<i32> = fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| fd.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| {
                // fdinfo's `flags` (octal) carry O_CLOEXEC; a descriptor gone by now is skipped.
                let info =
                    fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
                let flags = info.lines().find_map(|l| l.strip_prefix("flags:"));
                flags
                    .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                    .is_some_and(|f| f & 0o2_000_000 == 0)
            })
            .collect();
        for seen in &seen {
            let lines: Vec<&str> = seen.lines().collect();
            for line in [
                "own process group",
                "own session",
                &format!("cwd {}", dir.display()),
                "ONLY=this one",
                "stdin the action",
            ] {
                assert!(lines.contains(&line), "{line:?} not in {lines:?}");
            }
            // Nothing else in the environment but what the shell itself sets.
            let env: Vec<&&str> = lines.iter().filter(|l| l.contains('=')).collect();
            assert!(
                env.iter()
                    .all(|l| l.starts_with("ONLY=") || l.starts_with("PWD=")),
                "{env:?}"
            );
            // 0, 1, 2, and 3 that ls opened to list them; nothing of the daemon's.
            let fds = lines.iter().find(|l| l.starts_with("0 1")).unwrap();
            for fd in fds.split_whitespace().map(|fd| fd.parse::<i32>().unwrap()) {
                assert!(fd <= 3 || inherited.contains(&fd), "fd {fd} leaked: {fds}");
            }
            // No standard signal blocked or ignored: SIGPIPE at its default above all, and SIGHUP,
            // which the test process ignored as `nohup` would. (Bits past 31 are glibc's own: a
            // forked command keeps them as the test process has them.)
            for mask in ["SigBlk", "SigIgn"] {
                let line = lines.iter().find(|l| l.starts_with(mask)).unwrap();
                let bits = u64::from_str_radix(line.rsplit('\t').next().unwrap(), 16).unwrap();
                assert_eq!(bits & 0x7fff_ffff, 0, "{line}");
            }
        }
        let without_ignored = |seen: &str| {
            let kept: Vec<&str> = seen.lines().filter(|l| !l.starts_with("SigIgn")).collect();
            kept.join("\n")
        };
        assert_eq!(
            without_ignored(&seen[0]),
            without_ignored(&seen[1]),
            "spawned and forked starts differ"
        );
    }

    /// A command that dies of a real-time signal (34..=64) was reaped and its end is known: the
    /// run failed, killed by that signal, as std's fork reports it. Not an unknown outcome (a
    /// failed wait), and nothing is signalled by its freed pid afterwards.
    #[tokio::test]
    async fn a_command_killed_by_a_realtime_signal_fails_naming_the_signal() {
        let s = Scratch::new();
        let spec = s.spec("kill -40 $$; sleep 30", &[]);
        let outcome = run(&spec).await;
        assert!(
            matches!(&outcome, RunOutcome::Failed { exit, .. } if exit == "killed by signal 40"),
            "{outcome:?}"
        );
    }

    /// Both starts report the same end for a command killed by a real-time signal.
    #[tokio::test]
    async fn a_realtime_signal_end_is_the_same_spawned_or_forked() {
        let s = Scratch::new();
        let dir = s.work_root();
        let spec = s.spec("kill -40 $$; sleep 30", &[]);
        let forked = RunChild::forked(
            child::forked_command(&spec, &dir, None, &[], &None)
                .spawn()
                .unwrap(),
        );
        let (end, _, _) = supervise(forked, b"", WAIT).await;
        assert!(
            matches!(end, End::Exited(st) if st.signal() == Some(40)),
            "forked"
        );
        let spawned = child::spawn_in_session(&child::Program {
            argv: &spec.command,
            env: &[],
            dir: &dir,
        })
        .unwrap();
        let (end, _, _) = supervise(spawned, b"", WAIT).await;
        assert!(
            matches!(end, End::Exited(st) if st.signal() == Some(40)),
            "spawned: {}",
            match end {
                End::Exited(st) => format!("exited {st}"),
                End::TimedOut => "timed out".into(),
                End::WaitFailed => "wait failed".into(),
            }
        );
    }

    /// A reaped command's pid is free and may be anyone's: once the wait has taken the status,
    /// the command must no longer be signalled by that pid (`id()` is `None`, as tokio's is).
    #[tokio::test]
    async fn a_reaped_command_is_no_longer_signalled_by_its_pid() {
        let s = Scratch::new();
        let dir = s.work_root();
        let spec = s.spec("kill -40 $$; sleep 30", &[]);
        let mut spawned = child::spawn_in_session(&child::Program {
            argv: &spec.command,
            env: &[],
            dir: &dir,
        })
        .unwrap();
        let pid = spawned.id().unwrap();
        let waited = spawned.wait().await;
        // Whatever the wait said, the process is gone from /proc: it was reaped.
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "not reaped");
        assert!(
            spawned.id().is_none(),
            "reaped (wait said {waited:?}) yet still signalled by pid {pid} on kill and drop"
        );
    }

    /// A spawned command starts with no signal ignored, glibc's own two (32, 33) included:
    /// its posix_spawn would hand those on ignored across the exec, to the command's whole tree.
    #[tokio::test]
    async fn a_spawned_command_starts_with_no_signal_ignored() {
        let s = Scratch::new();
        let dir = s.work_root();
        let out = s.path("ign.txt");
        let spec = s.spec(
            r#"/bin/grep -E '^SigIgn' /proc/self/status > "$1""#,
            &[&out.display().to_string()],
        );
        let spawned = child::spawn_in_session(&child::Program {
            argv: &spec.command,
            env: &[],
            dir: &dir,
        })
        .unwrap();
        let (end, _, _) = supervise(spawned, b"", WAIT).await;
        assert!(matches!(end, End::Exited(st) if st.success()));
        assert_eq!(
            fs::read_to_string(&out).unwrap(),
            "SigIgn:\t0000000000000000\n"
        );
    }

    #[tokio::test]
    async fn exit_zero_reports_the_first_line() {
        let s = Scratch::new();
        let spec = s.spec("echo 'posted: https://x.example/1'\necho second line", &[]);
        assert_eq!(
            executed(run(&spec).await).as_deref(),
            Some("posted: https://x.example/1")
        );
        let spec = s.spec("printf 'crlf line\\r\\nnext\\r\\n'", &[]);
        assert_eq!(executed(run(&spec).await).as_deref(), Some("crlf line"));
        // No trailing newline at all: the whole of stdout is the line.
        let spec = s.spec("printf 'no newline\\r'", &[]);
        assert_eq!(executed(run(&spec).await).as_deref(), Some("no newline"));
    }

    #[tokio::test]
    async fn a_long_first_line_is_cut_to_200_chars() {
        let s = Scratch::new();
        let ascii = "a".repeat(300);
        let spec = s.spec(&format!("echo {ascii}"), &[]);
        assert_eq!(executed(run(&spec).await), Some("a".repeat(200)));
        // Two-byte characters: the cut is on a character, never inside one.
        let wide = "é".repeat(300);
        let spec = s.spec(&format!("echo {wide}"), &[]);
        assert_eq!(executed(run(&spec).await), Some("é".repeat(200)));
    }

    #[tokio::test]
    async fn no_output_is_no_result() {
        let s = Scratch::new();
        let spec = s.spec("exit 0", &[]);
        assert_eq!(executed(run(&spec).await), None);
        let spec = s.spec("echo\necho second", &[]);
        assert_eq!(executed(run(&spec).await), None);
    }

    #[tokio::test]
    async fn exit_3_fails_with_stderr() {
        let s = Scratch::new();
        let spec = s.spec("echo out\necho 'rate limited' >&2\nexit 3", &[]);
        assert_eq!(
            run(&spec).await,
            RunOutcome::Failed {
                exit: "exit status 3".to_owned(),
                stderr: "rate limited\n".to_owned(),
            }
        );
    }

    #[tokio::test]
    async fn death_by_signal_fails_naming_the_signal() {
        let s = Scratch::new();
        let spec = s.spec("echo dying >&2\nkill -9 $$", &[]);
        assert_eq!(
            run(&spec).await,
            RunOutcome::Failed {
                exit: "killed by signal 9".to_owned(),
                stderr: "dying\n".to_owned(),
            }
        );
    }

    #[tokio::test]
    async fn a_mib_of_stderr_keeps_only_its_last_64_kib() {
        let s = Scratch::new();
        let lines = 100_000; // 12 bytes each: about 1.1 MiB
        let spec = s.spec(
            &format!(
                "/usr/bin/awk 'BEGIN {{ for (i = 0; i < {lines}; i++) printf \"line %06d\\n\", i }}' >&2\nexit 1"
            ),
            &[],
        );
        let all: String = (0..lines).map(|i| format!("line {i:06}\n")).collect();
        assert!(all.len() > 1024 * 1024);
        match run(&spec).await {
            RunOutcome::Failed { exit, stderr } => {
                assert_eq!(exit, "exit status 1");
                assert_eq!(stderr.len(), STDERR_KEEP);
                assert!(all.ends_with(&stderr), "stderr is not the tail");
            }
            other => panic!("expected Failed, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn ten_mib_of_stdout_does_not_stall_the_run() {
        let s = Scratch::new();
        // Both pipes far beyond their kernel buffers, stdout first: a reader that waited for
        // one pipe before the other would deadlock here.
        let spec = s.spec(
            "echo first\n\
             /usr/bin/head -c 10485760 /dev/zero | /usr/bin/tr '\\0' x\n\
             /usr/bin/head -c 1048576 /dev/zero | /usr/bin/tr '\\0' y >&2\n\
             exit 0",
            &[],
        );
        assert_eq!(executed(run(&spec).await).as_deref(), Some("first"));
        // And one 10 MiB line: cut, with everything past the kept part thrown away.
        let spec = s.spec(
            "/usr/bin/head -c 10485760 /dev/zero | /usr/bin/tr '\\0' x",
            &[],
        );
        assert_eq!(executed(run(&spec).await), Some("x".repeat(200)));
    }

    #[tokio::test]
    async fn the_environment_holds_only_the_env_file() {
        let s = Scratch::new();
        let env_file = s.path("cat.env");
        fs::write(
            &env_file,
            "# service secrets\n\n   \nAPI_TOKEN=s3cr3t\nEMPTY=\n  # indented comment\nWITH_EQ=a=b c\r\n",
        )
        .unwrap();
        let out = s.path("env.out");
        let mut spec = s.spec(
            "/usr/bin/env > \"$1\"\necho \"$PWD\"",
            &[out.to_str().unwrap()],
        );
        spec.env_file = Some(env_file.clone());
        let pwd = executed(run(&spec).await).unwrap();
        let got: BTreeSet<String> = fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        // dash exports PWD itself (equal to the run directory); nothing else may appear.
        let want: BTreeSet<String> = [
            "API_TOKEN=s3cr3t".to_owned(),
            "EMPTY=".to_owned(),
            "WITH_EQ=a=b c".to_owned(),
            format!("PWD={pwd}"),
        ]
        .into();
        assert_eq!(got, want);

        // Without any shell in between the environment is exactly the file's variables.
        let mut direct = spec.clone();
        direct.command = vec![
            "/usr/bin/awk".to_owned(),
            "BEGIN { for (k in ENVIRON) printf \"%s=%s;\", k, ENVIRON[k]; print \"\" }".to_owned(),
        ];
        let line = executed(run(&direct).await).unwrap();
        let got: BTreeSet<&str> = line.split(';').filter(|v| !v.is_empty()).collect();
        assert_eq!(got, ["API_TOKEN=s3cr3t", "EMPTY=", "WITH_EQ=a=b c"].into());

        // No env_file: nothing at all.
        direct.env_file = None;
        assert_eq!(executed(run(&direct).await), None);
    }

    #[tokio::test]
    async fn a_malformed_env_file_names_file_and_line() {
        let s = Scratch::new();
        let env_file = s.path("bad.env");
        let cases = [
            ("A=1\nnot a line\n", 2),
            ("A=1\n\n# c\n=x\n", 4),
            ("A=1\nB KEY=2\n", 2),
            ("1A=x\n", 1),
            ("A=1\nB=2\nA=3\n", 3),
        ];
        for (content, line) in cases {
            fs::write(&env_file, content).unwrap();
            let mut spec = s.spec("echo ran", &[]);
            spec.env_file = Some(env_file.clone());
            let reason = not_started(run(&spec).await);
            let at = format!("{}:{line}:", env_file.display());
            assert!(reason.contains(&at), "{content:?}: {reason}");
        }
        let mut spec = s.spec("echo ran", &[]);
        spec.env_file = Some(s.path("missing.env"));
        let reason = not_started(run(&spec).await);
        assert!(reason.contains("missing.env"), "{reason}");
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn stdin_carries_the_action_and_the_attachment_copies() {
        let s = Scratch::new();
        let photo: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
        let out = s.path("out");
        fs::create_dir(&out).unwrap();

        let mut spec = s.spec(
            "/bin/cat > \"$1/stdin.json\"\n\
             /bin/pwd > \"$1/pwd\"\n\
             for f in ./*; do /bin/cp -- \"$f\" \"$1/copy-${f#./}\"; done\n\
             echo done",
            &[out.to_str().unwrap()],
        );
        spec.stdin = StdinAction {
            id: "rec_01".to_owned(),
            kind: "publish_x".to_owned(),
            target: Some("@owner".to_owned()),
            text: None,
            fields: [("reply_to".to_owned(), "123".to_owned())].into(),
            cost_usd: Some("0.04".to_owned()),
        };
        spec.attachments = vec![
            AttachmentSource {
                media_type: "image/jpeg".to_owned(),
                ..s.attachment("photo one.jpg", &photo)
            },
            AttachmentSource {
                media_type: "text/plain".to_owned(),
                ..s.attachment("notes.txt", b"plain notes\n")
            },
        ];
        assert_eq!(executed(run(&spec).await).as_deref(), Some("done"));

        let raw = fs::read_to_string(out.join("stdin.json")).unwrap();
        assert!(raw.starts_with("{\"id\":") && raw.ends_with("}\n"), "{raw}");
        assert_eq!(raw.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "id",
                "kind",
                "target",
                "text",
                "fields",
                "cost_usd",
                "attachments"
            ]
            .into()
        );
        assert_eq!(v["id"], "rec_01");
        assert_eq!(v["kind"], "publish_x");
        assert_eq!(v["target"], "@owner");
        assert!(v["text"].is_null());
        assert_eq!(v["fields"], serde_json::json!({"reply_to": "123"}));
        assert_eq!(v["cost_usd"], "0.04");

        let pwd = fs::read_to_string(out.join("pwd")).unwrap();
        let pwd = Path::new(pwd.trim_end());
        let atts = v["attachments"].as_array().unwrap();
        assert_eq!(atts.len(), 2);
        for (att, (bytes, src)) in atts.iter().zip([
            (&photo[..], &spec.attachments[0]),
            (&b"plain notes\n"[..], &spec.attachments[1]),
        ]) {
            let keys: BTreeSet<&str> = att
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(keys, ["name", "media_type", "path", "sha256"].into());
            assert_eq!(att["name"], src.name.as_str());
            assert_eq!(att["media_type"], src.media_type.as_str());
            assert_eq!(att["sha256"], src.sha256.as_str());
            let path = Path::new(att["path"].as_str().unwrap());
            assert!(path.is_absolute());
            assert_eq!(path, pwd.join(&src.name));
            assert_eq!(
                fs::read(out.join(format!("copy-{}", src.name))).unwrap(),
                bytes
            );
        }
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn bad_attachments_do_not_start() {
        let s = Scratch::new();
        let att = |name: &str| s.attachment(name, b"x");
        for name in ["../escape", "a/b", "..", ".", ""] {
            let mut spec = s.spec("echo ran", &[]);
            spec.attachments = vec![att(name)];
            not_started(run(&spec).await);
        }
        let mut spec = s.spec("echo ran", &[]);
        spec.attachments = vec![att("same"), att("same")];
        not_started(run(&spec).await);
        // A missing source is found after the directory exists: it must be gone again.
        let mut spec = s.spec("echo ran", &[]);
        let gone = AttachmentSource {
            source: s.path("nope"),
            ..att("gone.txt")
        };
        spec.attachments = vec![att("ok.txt"), gone];
        let reason = not_started(run(&spec).await);
        assert!(reason.contains("gone.txt"), "{reason}");
        assert!(s.work_root_is_empty());
        assert!(!s.work_root().join("..").join("escape").exists());
    }

    /// What can happen to a stored copy between the card and the run.
    #[derive(Debug)]
    enum Tamper {
        /// Its bytes are now these.
        Bytes(Vec<u8>),
        /// A symlink to a file holding exactly the bytes the owner saw: followed, it would pass.
        Symlink,
        Missing,
    }

    #[tokio::test]
    async fn a_stored_copy_changed_since_the_card_never_runs() {
        let shown: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        let sha =
            |bytes: &[u8]| consentd_core::digest::Sha256Hash::of(bytes).to_hex()[..12].to_owned();
        let mut flipped = shown.clone();
        flipped[50_000] ^= 0x01;
        let mut grown = shown.clone();
        grown.push(0);
        let changed = |now: &[u8]| {
            format!(
                "expected sha256 {} (100000 bytes), found sha256 {} ({} bytes)",
                sha(&shown),
                sha(now),
                now.len()
            )
        };
        let cases = [
            (Tamper::Bytes(flipped.clone()), changed(&flipped)),
            (
                Tamper::Bytes(shown[..4096].to_vec()),
                changed(&shown[..4096]),
            ),
            (Tamper::Bytes(Vec::new()), changed(b"")),
            (Tamper::Bytes(grown.clone()), changed(&grown)),
            (
                Tamper::Symlink,
                "its stored copy was replaced by a symbolic link".to_owned(),
            ),
            (Tamper::Missing, "its stored copy is gone".to_owned()),
        ];
        for (tamper, detail) in cases {
            let s = Scratch::new();
            let marker = s.path("ran");
            let mut spec = s.spec(&format!("echo ran > {}\necho done", marker.display()), &[]);
            let photo = s.attachment("photo.jpg", &shown);
            match &tamper {
                Tamper::Bytes(now) => fs::write(&photo.source, now).unwrap(),
                Tamper::Symlink => {
                    let elsewhere = s.path("elsewhere");
                    fs::write(&elsewhere, &shown).unwrap();
                    fs::remove_file(&photo.source).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, &photo.source).unwrap();
                }
                Tamper::Missing => fs::remove_file(&photo.source).unwrap(),
            }
            // An intact attachment first: its copy is made, and must go with the directory.
            spec.attachments = vec![s.attachment("notes.txt", b"intact"), photo];
            assert_eq!(
                not_started(run(&spec).await),
                format!(
                    "attachment \"photo.jpg\" changed after the card was shown, so nothing ran: \
                     {detail}"
                ),
                "{tamper:?}"
            );
            assert!(!marker.exists(), "{tamper:?}: the command ran");
            assert!(
                s.work_root_is_empty(),
                "{tamper:?}: the run directory is left"
            );
        }
    }

    #[tokio::test]
    async fn a_mandates_run_names_no_card_it_never_had() {
        let s = Scratch::new();
        let mut spec = s.spec("echo ran", &[]);
        spec.on_card = false;
        let photo = s.attachment("photo.jpg", b"shown");
        fs::remove_file(&photo.source).unwrap();
        spec.attachments = vec![photo];
        assert_eq!(
            not_started(run(&spec).await),
            "attachment \"photo.jpg\" changed after it was asked for, so nothing ran: \
             its stored copy is gone"
        );
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn an_intact_copy_runs_with_exactly_its_bytes() {
        let s = Scratch::new();
        let shown: Vec<u8> = (0..=255u8).rev().cycle().take(3 * 65_536 + 5).collect();
        let out = s.path("out");
        fs::create_dir(&out).unwrap();
        let mut spec = s.spec(
            "/bin/cp photo.jpg \"$1/copy\"\n/usr/bin/stat -c %a photo.jpg",
            &[out.to_str().unwrap()],
        );
        spec.attachments = vec![s.attachment("photo.jpg", &shown)];
        assert_eq!(executed(run(&spec).await).as_deref(), Some("600"));
        assert_eq!(fs::read(out.join("copy")).unwrap(), shown);
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn the_work_dir_is_private_and_removed_after() {
        let s = Scratch::new();
        let spec = s.spec(
            "echo \"$(/usr/bin/stat -c '%a %u' .) $PWD\"\necho leftover > file",
            &[],
        );
        let line = executed(run(&spec).await).unwrap();
        let mut parts = line.splitn(3, ' ');
        assert_eq!(parts.next(), Some("700"));
        assert_eq!(
            parts.next(),
            Some(nix::unistd::geteuid().to_string().as_str())
        );
        let dir = PathBuf::from(parts.next().unwrap());
        assert_eq!(
            dir.parent().unwrap(),
            fs::canonicalize(s.work_root()).unwrap()
        );
        assert!(!dir.exists());
        assert!(s.work_root_is_empty());
        // Removed after a failure too, even with a subdirectory made read-only.
        let spec = s.spec("/bin/mkdir -p ro/x\n/bin/chmod 500 ro\nexit 2", &[]);
        assert!(matches!(run(&spec).await, RunOutcome::Failed { .. }));
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn a_command_that_ignores_stdin_still_runs() {
        let s = Scratch::new();
        let mut spec = s.spec("echo ran", &[]);
        // Far more than a pipe holds, so the writer is still writing when the command exits.
        spec.stdin.text = Some("t".repeat(4 * 1024 * 1024));
        assert_eq!(executed(run(&spec).await).as_deref(), Some("ran"));
    }

    /// Paused time: once the script has written its pids, the runtime goes idle and the
    /// clock jumps straight to the deadline, so an hour-long timeout costs no real time.
    #[tokio::test(start_paused = true)]
    async fn timeout_kills_the_whole_group() {
        let s = Scratch::new();
        let pids = s.path("pids");
        let mut spec = s.spec(
            "/bin/sleep 1000 &\n\
             echo \"$$ $!\" > \"$1.tmp\" && /bin/mv \"$1.tmp\" \"$1\"\n\
             echo 'still working' >&2\n\
             /bin/sleep 1000",
            &[pids.to_str().unwrap()],
        );
        spec.timeout = Duration::from_secs(3600);
        let started = Instant::now();
        let real = std::time::Instant::now();
        let (outcome, ()) = tokio::join!(run(&spec), until_exists(&pids));
        assert!(
            matches!(outcome, RunOutcome::TimedOut { .. }),
            "{outcome:?}"
        );
        assert!(started.elapsed() >= Duration::from_secs(3600));
        assert!(real.elapsed() < Duration::from_secs(60));
        let text = fs::read_to_string(&pids).unwrap();
        let (leader, grandchild) = text.trim().split_once(' ').unwrap();
        assert!(wait_dead(leader.parse().unwrap()), "the command survived");
        assert!(
            wait_dead(grandchild.parse().unwrap()),
            "the grandchild survived"
        );
        assert!(s.work_root_is_empty());
    }

    /// Paused time again: the caller gives up after 10 (virtual) seconds and drops the run.
    #[tokio::test(start_paused = true)]
    async fn dropping_the_run_kills_the_group_and_removes_the_dir() {
        let s = Scratch::new();
        let pid = s.path("pid");
        let spec = s.spec(
            "/bin/sleep 1000 &\n\
             echo $! > \"$1.tmp\" && /bin/mv \"$1.tmp\" \"$1\"\n\
             /bin/sleep 1000",
            &[pid.to_str().unwrap()],
        );
        let gave_up = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(run(&spec), until_exists(&pid))
        })
        .await;
        assert!(gave_up.is_err());
        assert!(wait_dead(read_pid(&pid)));
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn leftovers_die_when_the_command_exits() {
        let s = Scratch::new();
        let pid = s.path("pid");
        // The background sleep keeps stdout open: without the group kill the run would also
        // sit out the drain grace.
        let spec = s.spec(
            "/bin/sleep 1000 &\necho $! > \"$1\"\necho done",
            &[pid.to_str().unwrap()],
        );
        let real = std::time::Instant::now();
        assert_eq!(executed(run(&spec).await).as_deref(), Some("done"));
        assert!(real.elapsed() < DRAIN_GRACE);
        assert!(wait_dead(read_pid(&pid)), "a leftover outlived the run");
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn a_missing_command_does_not_start() {
        let s = Scratch::new();
        let mut spec = s.spec("", &[]);
        spec.command = vec!["/nonexistent/publish-x".to_owned()];
        let reason = not_started(run(&spec).await);
        assert!(reason.contains("/nonexistent/publish-x"), "{reason}");
        assert!(s.work_root_is_empty());

        spec.command = vec!["publish-x".to_owned()];
        assert!(not_started(run(&spec).await).contains("absolute"));
        spec.command = Vec::new();
        not_started(run(&spec).await);
    }

    #[tokio::test]
    async fn run_as_nobody_gets_exactly_nobodys_ids() {
        if !nix::unistd::geteuid().is_root() {
            println!("skipped run_as_nobody_gets_exactly_nobodys_ids: not running as root");
            return;
        }
        let nobody = User::from_name("nobody").unwrap().expect("no user nobody");
        let groups = nix::unistd::getgrouplist(c"nobody", nobody.gid).unwrap();
        // Give this (root) test process supplementary groups of its own, so a child that
        // kept its parent's list instead of nobody's would show them. Harmless to the other
        // tests: they run as root either way.
        nix::unistd::setgroups(&[Gid::from_raw(0), Gid::from_raw(4242)]).unwrap();
        let s = Scratch::new();
        // nobody must reach the script and, by absolute path, the attachment copies.
        fs::set_permissions(s.tmp.path(), fs::Permissions::from_mode(0o711)).unwrap();
        fs::set_permissions(s.work_root(), fs::Permissions::from_mode(0o711)).unwrap();
        let a = s.attachment("a.txt", b"for nobody");
        fs::set_permissions(&a.source, fs::Permissions::from_mode(0o600)).unwrap();
        let mut spec = s.spec(
            "path=$(/bin/sed -n 's/.*\"path\":\"\\([^\"]*\\)\".*/\\1/p')\n\
             echo \"$(/usr/bin/id -u) $(/usr/bin/id -G) $(/usr/bin/stat -c %u .) $(/bin/cat \"$path\")\"",
            &[],
        );
        spec.run_as = Some("nobody".to_owned());
        spec.attachments = vec![a];
        let line = executed(run(&spec).await).unwrap();
        let words: Vec<&str> = line.split(' ').collect();
        let uid = nobody.uid.to_string();
        assert_eq!(words[0], uid, "{line}");
        let got: BTreeSet<u32> = words[1..words.len() - 3]
            .iter()
            .map(|g| g.parse().unwrap())
            .collect();
        let want: BTreeSet<u32> = groups.iter().map(|g| g.as_raw()).collect();
        assert_eq!(got, want, "{line}");
        assert!(!got.contains(&0));
        assert_eq!(words[words.len() - 3], uid, "the run dir belongs to nobody");
        assert_eq!(&words[words.len() - 2..], ["for", "nobody"]);
        assert!(s.work_root_is_empty());
    }

    #[tokio::test]
    async fn run_as_refusals() {
        let s = Scratch::new();
        let mut spec = s.spec("echo ran", &[]);
        spec.run_as = Some("no_such_user_consentd".to_owned());
        let reason = not_started(run(&spec).await);
        assert!(reason.contains("no_such_user_consentd"), "{reason}");
        if !nix::unistd::geteuid().is_root() {
            println!("skipped the rest of run_as_refusals: not running as root");
            return;
        }
        // work_root 0700 (and a 0700 temp dir above it): nobody could not open its
        // attachment paths, so the run does not start.
        spec.run_as = Some("nobody".to_owned());
        let reason = not_started(run(&spec).await);
        assert!(reason.contains("not searchable"), "{reason}");
        assert!(s.work_root_is_empty());
    }

    #[test]
    fn stderr_tail_starts_on_a_character() {
        let mut tail = StderrTail::default();
        tail.keep(&"é".repeat(STDERR_KEEP).into_bytes()); // 2 bytes each: twice the limit
        tail.keep(b"z");
        let text = tail.finish();
        assert!(text.len() <= STDERR_KEEP);
        assert!(text.ends_with("éz"));
        assert!(!text.starts_with('\u{FFFD}'));
    }
}
