//! Hostile peers the budgets must hold: frames that parse into many small values, a command's
//! child that joins the daemon's process group, one uid holding the byte budget. Each test says
//! the bound or the contract it holds the daemon to.

use std::io::Write;
use std::os::unix::net::UnixStream;

use super::budgets::{open_socket_to_others, send_at_once};
use super::fixture::Daemon;
use super::load::memory_kib;

const MIB: u64 = 1024 * 1024;
/// The default of `max_request_bytes_in_flight`, in KiB.
const IN_FLIGHT_KIB: u64 = 64 * 1024;

/// A request line of `bytes` (newline included) whose extra member is an array of zeros: two
/// bytes of the line per JSON value.
fn zeros_frame(bytes: usize) -> Vec<u8> {
    let head = br#"{"v":1,"op":"list","x":[0"#;
    let tail = b"]}\n";
    let mut frame = Vec::with_capacity(bytes);
    frame.extend_from_slice(head);
    while frame.len() + 2 + tail.len() <= bytes {
        frame.extend_from_slice(b",0");
    }
    frame.extend_from_slice(tail);
    frame
}

/// The byte budget counts the bytes of a line, but the line is parsed into a `serde_json::Value`
/// tree before anything looks at its keys: each two-byte `0,` becomes a 32-byte value (and the
/// array's vector doubles as it grows). Two such frames fit the default budget side by side, so
/// the memory the budget was to bound is some sixteen times the budget, not the budget.
#[test]
fn memory_stays_bounded_when_a_frame_parses_into_many_small_values() {
    let daemon = Daemon::builder().max_request_bytes(32 * MIB).start();
    let (idle_peak, _) = memory_kib(daemon.pid());
    for answer in send_at_once(&daemon.socket, zeros_frame(32 * MIB as usize), 2) {
        // Too many values (`bad_request`), or past the uid's share of the bytes (`too_large`).
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(
            answer["reason"] == "bad_request" || message.contains("its share"),
            "{answer}"
        );
    }
    let (peak, _) = memory_kib(daemon.pid());
    // The bound the budget's own test holds the daemon to under 64 frames of 32 MiB.
    let bound = idle_peak + 4 * IN_FLIGHT_KIB;
    eprintln!("2 frames of 32 MiB of zeros: VmHWM {idle_peak} -> {peak} KiB (bound {bound} KiB)");
    assert!(
        peak <= bound,
        "peak {peak} KiB over {bound} KiB under two 32 MiB frames of small JSON values"
    );
}

/// A category whose command forks a child that moves itself into the daemon's own process
/// group (the command runs in the daemon's session, so `setpgid` allows it), writes its pid and
/// becomes `sleep 1000`; the command exits at once.
const JOIN_GROUP: &str = r#"
[categories.joingroup]
label = { en = "Join group" }
class = "external"
enabled = true
text = "required"
command = ["/usr/bin/perl", "{dir}/join.pl"]
"#;

fn write_join_script(dir: &std::path::Path) {
    let d = dir.display();
    std::fs::write(
        dir.join("join.pl"),
        format!(
            r#"local $/; my $input = <STDIN>;
open(my $stat, "<", "/proc/" . getppid() . "/stat") or die "stat: $!";
my $line = <$stat>; $line =~ s/^.*\) //s; my @f = split / /, $line; my $pgid = $f[2];
my $pid = fork();
if ($pid == 0) {{
    # Refused (EPERM) once the command has a session of its own; it goes on either way.
    setpgrp(0, $pgid);
    open(my $out, ">", "{d}/joined.tmp") or die; print $out $$; close $out;
    rename("{d}/joined.tmp", "{d}/joined.pid");
    exec("/bin/sleep", "1000");
}}
while (!-s "{d}/joined.pid") {{ select(undef, undef, undef, 0.01); }}
print "done\n";
"#
        ),
    )
    .unwrap();
}

/// The subreaper spares an adopted process in the daemon's own process group, taking it for one
/// the daemon started itself. A command runs in the daemon's session (`process_group(0)`, not
/// `setsid`), so it may move a child into that group: the child outlives its run, where no
/// cgroup holds the run (the test host has none, like most hosts without `Delegate=yes`).
#[test]
fn a_child_that_joins_the_daemons_process_group_is_gone_when_its_run_ends() {
    let daemon = Daemon::builder().config_tail(JOIN_GROUP).start();
    let dir = daemon.dir.path();
    write_join_script(dir);
    let answer = daemon.request(
        &serde_json::json!({"v":1,"op":"ask","kind":"joingroup","text":"go","wait":false}),
    );
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    daemon.wait_state(&id, "executed");
    let pid: i32 = {
        let path = dir.join("joined.pid");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(pid) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no joined.pid\n{}",
                daemon.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while proc_dir.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let survived = proc_dir.exists();
    if survived {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        !survived,
        "the process {pid} that joined the daemon's process group outlived its run\n{}",
        daemon.log()
    );
}

/// The byte budget is shared by all uids with no share per uid: one uid whose two unfinished
/// 32 MiB lines hold the whole default budget (each for up to the 10 s read timeout, and again
/// on a new connection) leaves another uid's one-line `list` refused `too_large`.
#[test]
fn a_uid_holding_the_whole_byte_budget_does_not_lock_out_another_uid() {
    use std::os::unix::process::CommandExt;
    const OTHER_UID: u32 = 65534;
    assert_eq!(super::fixture::current_uid(), 0, "this test switches uid");
    let daemon = Daemon::builder()
        .max_request_bytes(32 * MIB)
        .allowed_uids(vec![0, OTHER_UID])
        .start();
    open_socket_to_others(&daemon);
    // Two lines one byte short of the cap, never ended: the budget (64 MiB) is all theirs.
    let chunk = vec![b' '; (32 * MIB - 1) as usize];
    let holders: Vec<UnixStream> = (0..2)
        .map(|_| {
            let mut stream = UnixStream::connect(&daemon.socket).unwrap();
            // The second is past the uid's share and refused part way: its write may fail.
            let _ = stream.write_all(&chunk);
            stream
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let output = std::process::Command::new(super::fixture::BIN)
        .args(["list", "--json"])
        .env("CONSENTD_SOCKET", &daemon.socket)
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    drop(holders);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && !stdout.contains("too_large"),
        "another uid was refused while one uid held the byte budget: {stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
