//! Runs ending together share the subreaper's passes: each run's escaped processes (a setsid'd
//! double fork, and the grandchild it starts) are gone when its run ends, however many runs end
//! at once, and a run still going keeps its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::json;

use crate::fixture::Daemon;

const FLOCK: &str = r#"
[categories.flock]
label = { en = "Flock" }
class = "external"
enabled = true
text = "required"
command = ["/bin/sh", "{dir}/flock.sh"]
"#;

/// `flock.sh` with the ask's text `TAG` on stdin: a double fork leaves `setsid sh`, which starts
/// a `sleep 1000` grandchild and becomes `sleep 1000`; their pids go to `esc-TAG.pid` and
/// `kid-TAG.pid`. The command then holds while `hold-TAG` or `hold-all` exists.
fn write_script(dir: &Path) {
    let d = dir.display();
    let inner = format!(
        "/bin/sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > {d}/kid-$TAG.tmp; \
         /bin/mv {d}/kid-$TAG.tmp {d}/kid-$TAG.pid; \
         echo $$ > {d}/esc-$TAG.tmp && /bin/mv {d}/esc-$TAG.tmp {d}/esc-$TAG.pid \
         && exec /bin/sleep 1000"
    );
    std::fs::write(
        dir.join("flock.sh"),
        format!(
            "TAG=$(/bin/cat | /bin/grep -o 'tg[a-z0-9]*' | /usr/bin/head -n 1)\nexport TAG\n\
             ( /usr/bin/setsid /bin/sh -c '{inner}' </dev/null >/dev/null 2>&1 & )\n\
             while [ ! -s {d}/esc-$TAG.pid ]; do /bin/sleep 0.01; done\n\
             while [ -f {d}/hold-$TAG ] || [ -f {d}/hold-all ]; do /bin/sleep 0.01; done\n\
             echo done\n"
        ),
    )
    .unwrap();
}

fn approve(daemon: &Daemon, tag: &str) -> String {
    let answer = daemon.request(&json!({"v":1,"op":"ask","kind":"flock","text":tag,"wait":false}));
    let id = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    daemon.press_yes(&daemon.card_of(&id));
    id
}

fn pid_in(path: PathBuf) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is gone (not even a zombie) right now, or within `grace`.
fn gone_within(pid: i32, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    loop {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

fn kill(pid: i32) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
}

const FLOCK_SIZE: usize = 8;

/// Eight runs released at once end together: each one's escaped process and grandchild are
/// gone as soon as its record says executed.
#[test]
fn runs_ending_together_each_leave_nothing() {
    for round in 0..3 {
        let daemon = Daemon::builder().config_tail(FLOCK).start();
        let dir = daemon.dir.path();
        write_script(dir);
        std::fs::write(dir.join("hold-all"), "").unwrap();
        let tags: Vec<String> = (0..FLOCK_SIZE).map(|i| format!("tgr{round}t{i}")).collect();
        let ids: Vec<String> = tags.iter().map(|t| approve(&daemon, t)).collect();
        let pids: Vec<(i32, i32)> = tags
            .iter()
            .map(|t| {
                (
                    pid_in(dir.join(format!("esc-{t}.pid"))),
                    pid_in(dir.join(format!("kid-{t}.pid"))),
                )
            })
            .collect();
        std::fs::remove_file(dir.join("hold-all")).unwrap();
        let mut outlived = Vec::new();
        for ((id, tag), (esc, kid)) in ids.iter().zip(&tags).zip(&pids) {
            daemon.wait_state(id, "executed");
            for pid in [*esc, *kid] {
                // The status answer comes after the run's end: a small grace for the test's
                // own polling only.
                if !gone_within(pid, Duration::from_millis(200)) {
                    outlived.push(format!("{tag}:{pid}"));
                    kill(pid);
                }
            }
        }
        assert!(
            outlived.is_empty(),
            "round {round}: escaped processes outlived their runs: {outlived:?}\n{}",
            daemon.log()
        );
    }
}

/// A run held going while eight others end together: none of their passes kills its process;
/// its own end then leaves nothing of anyone's.
#[test]
fn runs_ending_together_spare_a_run_still_going() {
    let daemon = Daemon::builder().config_tail(FLOCK).start();
    let dir = daemon.dir.path();
    write_script(dir);
    std::fs::write(dir.join("hold-tgkeep"), "").unwrap();
    let keep = approve(&daemon, "tgkeep");
    let keep_esc = pid_in(dir.join("esc-tgkeep.pid"));
    let keep_kid = pid_in(dir.join("kid-tgkeep.pid"));
    std::fs::write(dir.join("hold-all"), "").unwrap();
    let tags: Vec<String> = (0..FLOCK_SIZE).map(|i| format!("tgt{i}")).collect();
    let ids: Vec<String> = tags.iter().map(|t| approve(&daemon, t)).collect();
    let mut others = Vec::new();
    for t in &tags {
        others.push(pid_in(dir.join(format!("esc-{t}.pid"))));
        others.push(pid_in(dir.join(format!("kid-{t}.pid"))));
    }
    std::fs::remove_file(dir.join("hold-all")).unwrap();
    for id in &ids {
        daemon.wait_state(id, "executed");
    }
    let spared = alive(keep_esc) && alive(keep_kid);
    std::fs::remove_file(dir.join("hold-tgkeep")).unwrap();
    daemon.wait_state(&keep, "executed");
    let left: Vec<i32> = [keep_esc, keep_kid]
        .into_iter()
        .chain(others)
        .filter(|pid| !gone_within(*pid, Duration::from_millis(500)))
        .collect();
    for pid in &left {
        kill(*pid);
    }
    assert!(
        spared,
        "the others' ends killed a process of the run still going\n{}",
        daemon.log()
    );
    assert!(
        left.is_empty(),
        "outlived every run: {left:?}\n{}",
        daemon.log()
    );
}
