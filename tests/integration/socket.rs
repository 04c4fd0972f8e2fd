//! The socket's intake: who may talk, frames, hostile input, idle clients, start and shutdown.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::json;

use crate::fixture::{current_uid, good_ask, Daemon};

fn reason(answer: &serde_json::Value) -> &str {
    answer["reason"].as_str().unwrap_or_default()
}

#[test]
fn a_peer_not_on_the_allow_list_is_refused() {
    let daemon = Daemon::builder()
        .allowed_uids(vec![current_uid().wrapping_add(1)])
        .start();
    let answer = daemon.request(&good_ask("hello"));
    assert_eq!(answer["status"], "refused");
    assert_eq!(reason(&answer), "peer_not_allowed");
}

#[test]
fn an_empty_allow_list_admits_any_peer() {
    let daemon = Daemon::builder().allowed_uids(vec![]).start();
    let answer = daemon.request(&good_ask("hello"));
    assert_eq!(answer["status"], "pending", "{answer}");
}

#[test]
fn a_frame_over_the_cap_is_refused_too_large() {
    let daemon = Daemon::start();
    // 2 MiB against the 1 MiB cap of the fixture's config.
    let text = "x".repeat(2 * 1024 * 1024);
    let answer = daemon.request(&good_ask(&text));
    assert_eq!(reason(&answer), "too_large", "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("1048576"),
        "{answer}"
    );
}

#[test]
fn hostile_frames_are_refused_bad_request_and_the_daemon_lives_on() {
    let mut daemon = Daemon::start();
    let nested = "[".repeat(100_000);
    let nested_objects = format!(
        "{{\"v\":1,\"op\":\"ask\",\"kind\":{}",
        "{\"a\":".repeat(100_000)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "invalid UTF-8",
            b"{\"v\":1,\"op\":\"ask\",\"kind\":\"\xff\xfe\"}\n".to_vec(),
        ),
        ("invalid JSON", b"{\"v\":1,\"op\":\n".to_vec()),
        ("not an object", b"\"ask\"\n".to_vec()),
        (
            "100,000 nested brackets",
            format!("{nested}\n").into_bytes(),
        ),
        (
            "100,000 nested objects",
            format!("{nested_objects}\n").into_bytes(),
        ),
        ("a NUL byte", b"{\"v\":1,\0}\n".to_vec()),
    ];
    for (name, frame) in cases {
        let answers = daemon.request_raw(&frame);
        assert_eq!(answers.len(), 1, "{name}: {answers:?}");
        assert_eq!(answers[0]["status"], "refused", "{name}");
        assert_eq!(reason(&answers[0]), "bad_request", "{name}: {}", answers[0]);
        assert!(daemon.is_running(), "{name} stopped the daemon");
    }
    let answer = daemon.request(&good_ask("still here"));
    assert_eq!(answer["status"], "pending", "{answer}");
}

#[test]
fn idle_connections_do_not_delay_a_well_behaved_client() {
    // One uid's idle connections, within its share (raised to the ceiling); another uid's are
    // `budgets::a_second_uid_is_served_while_the_first_holds_its_whole_connection_cap`.
    let daemon = Daemon::builder()
        .limit("max_connections_per_uid", "1024")
        .start();
    let idle: Vec<UnixStream> = (0..200)
        .map(|_| UnixStream::connect(&daemon.socket).unwrap())
        .collect();
    let started = std::time::Instant::now();
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    // Well under the daemon's 10 s read timeout: if idle clients held it up, this would fail.
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    stream.write_all(b"{\"v\":1,\"op\":\"list\"}\n").unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("answered while 200 clients sit idle");
    assert!(answer.contains("\"records\""), "{answer}");
    eprintln!(
        "answered in {:?} beside 200 idle connections",
        started.elapsed()
    );
    drop(idle);
}

#[test]
fn sigterm_and_sigint_stop_the_daemon_cleanly_and_remove_the_socket() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let mut daemon = Daemon::start();
        assert!(daemon.socket.exists());
        let status = daemon.stop_with(signal);
        assert!(status.success(), "{signal}: {status}: {}", daemon.log());
        assert!(!daemon.socket.exists(), "{signal} left the socket behind");
        assert!(
            daemon.log().contains("shutting down"),
            "{signal}: {}",
            daemon.log()
        );
    }
}

#[test]
fn files_are_created_with_their_modes() {
    let daemon = Daemon::start();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&daemon.socket), 0o660, "socket");
    assert_eq!(mode(&daemon.state_dir), 0o700, "state dir");
    assert_eq!(mode(&daemon.journal), 0o640, "journal");
    assert_eq!(
        mode(&daemon.state_dir.join("consentd.db")),
        0o600,
        "database"
    );
}

#[test]
fn a_stale_socket_is_replaced_but_a_live_one_is_not() {
    // Stale: a socket file nobody listens on.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    drop(UnixListener::bind(dir.path().join("run/consent.sock")).unwrap());
    let daemon = Daemon::builder()
        .try_start_in(dir)
        .expect("replaces a stale socket");
    assert_eq!(
        daemon.request(&json!({"v":1,"op":"list"}))["records"],
        json!([])
    );

    // Live: another process listens there.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    let live = UnixListener::bind(dir.path().join("run/consent.sock")).unwrap();
    let failure = Daemon::builder()
        .try_start_in(dir)
        .expect_err("must not take a live socket");
    assert!(
        failure.message.contains("another process is listening"),
        "{failure}"
    );
    drop(live);
}

#[test]
fn a_regular_file_at_the_socket_path_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    let path = dir.path().join("run/consent.sock");
    std::fs::write(&path, "precious").unwrap();
    let failure = Daemon::builder()
        .try_start_in(dir)
        .expect_err("must not delete a file");
    assert!(failure.message.contains("is not a socket"), "{failure}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), "precious");
}

#[test]
fn one_request_per_connection() {
    let daemon = Daemon::start();
    let answers = daemon.request_raw(
        b"{\"v\":1,\"op\":\"list\"}\n{\"v\":1,\"op\":\"ask\",\"kind\":\"publish_x\"}\n",
    );
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0].get("records").is_some());
}
