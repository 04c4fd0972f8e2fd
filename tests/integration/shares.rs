//! Sessions that share one daemon, each under its own real uid: one cannot starve, silence or
//! crowd out another. The test process is root (uid 0); the other session is a `consentd`
//! child that runs as `nobody` (65534).

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::budgets::open_socket_to_others;
use super::fixture::{current_uid, good_ask, Daemon, BIN};

/// The other session's uid.
pub(super) const OTHER_UID: u32 = 65534;

/// A daemon both uids may ask, its socket open to the other one.
pub(super) fn shared_daemon(builder: super::fixture::DaemonBuilder) -> Daemon {
    assert_eq!(
        current_uid(),
        0,
        "this test switches uid, so it runs as root"
    );
    let daemon = builder.allowed_uids(vec![0, OTHER_UID]).start();
    open_socket_to_others(&daemon);
    daemon
}

/// `consentd args…` run as the other uid against `daemon`.
pub(super) fn as_other(daemon: &Daemon, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CONSENTD_SOCKET", &daemon.socket)
        .current_dir("/")
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The other uid's ask for `publish_x` with `text`, not waiting: its final JSON line.
pub(super) fn other_asks(daemon: &Daemon, text: &str) -> Value {
    let output = as_other(
        daemon,
        &[
            "ask",
            "--kind",
            "publish_x",
            "--target",
            "@mila_news",
            "--text",
            text,
            "--field",
            "reply_to=https://example.org/1",
            "--cost-usd",
            "0.04",
            "--no-wait",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "no answer for the other uid: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    serde_json::from_str(last).unwrap()
}

/// Uid 0 at its share of the open asks is refused and told its share; uid 65534 still has room.
#[test]
fn a_uid_at_its_pending_share_leaves_room_for_another() {
    let daemon = shared_daemon(
        Daemon::builder()
            .max_pending(20)
            .limit("max_pending_per_uid", "2"),
    );
    for n in 0..2 {
        let answer = daemon.request(&good_ask(&format!("mine {n}")));
        assert_eq!(answer["status"], "pending", "{answer}");
    }
    let over = daemon.request(&good_ask("mine 2"));
    assert_eq!(over["reason"], "too_many_pending", "{over}");
    let message = over["message"].as_str().unwrap();
    assert!(
        message.contains("uid 0 already has 2 asks") && message.contains("its share is 2"),
        "{over}"
    );
    for n in 0..2 {
        let answer = other_asks(&daemon, &format!("theirs {n}"));
        assert_eq!(answer["status"], "pending", "{answer}");
    }
}
