//! Labelled sockets (`[[listen]]`) through a real daemon: what the owner reads names the origin
//! of the socket an ask came through (and only then), a bad listener is refused naming its key,
//! and a process in a user namespace is the host uid it is, not the root it looks like inside.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{
    answer_lines, consentd, current_uid, good_ask, stdout, today_at, Daemon, DaemonBuilder, OWNER,
};
use crate::mandates::{ask_to, mandate_request, receipt_of};

/// A labelled socket for the test's own uid, beside the fixture's main socket.
pub(crate) fn with_devbox(builder: DaemonBuilder) -> DaemonBuilder {
    builder.config_tail(&format!(
        "\n[[listen]]\nsocket = \"{{dir}}/run/devbox.sock\"\norigin = \"devbox\"\n\
         allowed_uids = [{}]\n",
        current_uid()
    ))
}

/// The labelled socket's path.
pub(crate) fn devbox_socket(daemon: &Daemon) -> PathBuf {
    daemon.dir.path().join("run/devbox.sock")
}

/// One request on the socket at `path`; its final answer.
pub(crate) fn request_at(path: &Path, request: &Value) -> Value {
    let mut stream = UnixStream::connect(path).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut frame = serde_json::to_vec(request).unwrap();
    frame.push(b'\n');
    std::io::Write::write_all(&mut stream, &frame).unwrap();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    answer_lines(&mut stream).pop().expect("an answer")
}

/// Waits until `status` of `id`, asked on the socket at `path`, says `state`.
pub(crate) fn wait_state_at(path: &Path, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = request_at(path, &json!({"v":1,"op":"status","id":id}));
        if answer["status"] == state {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "{id} never became {state}: {answer}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn id_of(answer: &Value) -> String {
    answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {answer}"))
        .to_owned()
}

/// The answer to the press made after the first `before` answers.
fn toast_after(daemon: &Daemon, before: usize) -> String {
    daemon.wait_for("a press's answer", |bot| {
        bot.callback_answers().len() > before
    });
    daemon.bot.callback_answers()[before]
        .text
        .clone()
        .unwrap_or_default()
}

/// The owner presses button `index` of `card`, and once `answered` says it took effect, presses
/// it again while the card's edit is slow (its buttons still there): the stale button's answer.
fn stale_toast(
    daemon: &Daemon,
    card: &consentd_emulator::ChatMessage,
    index: usize,
    answered: impl Fn(),
) -> String {
    let data = card.buttons()[index].callback_data.clone().unwrap();
    let press = || {
        daemon.bot.push_press(
            &consentd_emulator::UserSpec::new(OWNER, "Mila"),
            consentd_emulator::ChatSpec::private(OWNER),
            card.message_id,
            &data,
        );
    };
    daemon.bot.script(
        "editMessageText",
        consentd_emulator::Scripted::Delay(Duration::from_secs(3)),
    );
    let before = daemon.bot.callback_answers().len();
    press();
    toast_after(daemon, before);
    answered();
    press();
    toast_after(daemon, before + 1)
}

#[test]
fn the_owner_reads_a_labelled_sockets_origin_wherever_its_ask_shows_and_never_the_main_ones() {
    let mut daemon = with_devbox(Daemon::builder()).start();
    let devbox = devbox_socket(&daemon);
    daemon.set_clock(today_at(20, 0));
    // One ask on each socket, the labelled one carrying its client's own origin too.
    let on_main = id_of(&daemon.request(&good_ask("from the main socket")));
    let mut ask = good_ask("from the devbox");
    ask["origin"] = json!("Claude Code · ~/src/blog");
    let on_devbox = id_of(&request_at(&devbox, &ask));
    let main_card = daemon.card_of(&on_main).text.unwrap();
    let devbox_card = daemon.card_of(&on_devbox).text.unwrap();
    // A Yes and a No, each pressed twice: the second press is a stale button's.
    let devbox_toast = stale_toast(&daemon, &daemon.card_of(&on_devbox), 0, || {
        wait_state_at(&devbox, &on_devbox, "executed");
    });
    let main_toast = stale_toast(&daemon, &daemon.card_of(&on_main), 1, || {
        daemon.wait_state(&on_main, "declined");
    });
    // A mandate asked through the labelled socket covers the uid's asks through any socket;
    // each receipt says where its own ask came from.
    let mandate = id_of(&request_at(
        &devbox,
        &mandate_request(&["@mila_news"], 1, "5.00", 5),
    ));
    let mandate_card = daemon.card_of(&mandate);
    let mandate_text = mandate_card.text.clone().unwrap();
    daemon.press_yes(&mandate_card);
    wait_state_at(&devbox, &mandate, "granted");
    let covered_devbox = id_of(&request_at(
        &devbox,
        &ask_to("@mila_news", "covered a", "0.10"),
    ));
    let covered_main = id_of(&daemon.request(&ask_to("@mila_news", "covered b", "0.10")));
    let devbox_receipt = receipt_of(&daemon, &covered_devbox).text.unwrap();
    let main_receipt = receipt_of(&daemon, &covered_main).text.unwrap();
    // The evening summary, at the next start after its time.
    assert!(daemon.stop_with(Signal::SIGTERM).success());
    daemon.set_clock(today_at(21, 1));
    let daemon = daemon.restart();
    daemon.wait_for_event("summary_sent");
    let summary = daemon
        .owner_chat()
        .into_iter()
        .find_map(|m| m.text.filter(|t| t.starts_with("Summary of")))
        .expect("the summary reached the owner");
    let asked = |id: &str| {
        daemon
            .journal_events()
            .into_iter()
            .find(|e| e["ev"] == "asked" && e["id"] == id)
            .unwrap_or_else(|| panic!("no asked line for {id}"))
    };

    // (where, what the owner reads of the labelled socket's ask, of the main socket's)
    let shown = [
        ("the card", &devbox_card, &main_card),
        ("the receipt", &devbox_receipt, &main_receipt),
        ("the mandate's card", &mandate_text, &main_card),
        ("the stale button's answer", &devbox_toast, &main_toast),
    ];
    for (surface, devbox_text, main_text) in shown {
        assert!(devbox_text.contains("devbox"), "{surface}: {devbox_text}");
        assert!(!main_text.contains("devbox"), "{surface}: {main_text}");
    }
    assert!(
        devbox_card.contains("From: devbox · Claude Code · ~/src/blog"),
        "the socket's label first, then the client's own: {devbox_card}"
    );
    assert!(!main_card.contains("From:"), "{main_card}");
    assert!(devbox_receipt.contains("From: devbox"), "{devbox_receipt}");
    assert!(
        summary.contains("Asked through labelled sockets: devbox 2."),
        "{summary}"
    );
    assert_eq!(asked(&on_devbox)["origin"], "devbox");
    assert_eq!(asked(&covered_devbox)["origin"], "devbox");
    assert_eq!(asked(&on_main).get("origin"), None);
    assert_eq!(asked(&covered_main).get("origin"), None);
    // Each socket's records are its own: the main socket's peer cannot read the other's.
    let other = daemon.request(&json!({"v":1,"op":"status","id":on_devbox}));
    assert_eq!(other["status"], "refused", "{other}");
    let listed = request_at(&devbox, &json!({"v":1,"op":"list"}));
    let ids: Vec<&str> = listed["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&on_devbox.as_str()), "{listed}");
    assert!(!ids.contains(&on_main.as_str()), "{listed}");
}

#[test]
fn a_config_with_a_bad_listener_is_refused_with_its_key_named() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[paths]\nstate_dir = \"/var/lib/consentd\"\nsocket = \"/run/c/main.sock\"\n\
                [[listen]]\nsocket = \"/run/c/devbox.sock\"\norigin = \"devbox\"\n";
    // (the second listener, the key named, words of the message)
    let cases = [
        (
            "socket = \"/run/c/devbox.sock\"\norigin = \"laptop\"",
            "listen[1].socket",
            "listen[0] listens on the same path",
        ),
        (
            "socket = \"/run/c/main.sock\"\norigin = \"laptop\"",
            "listen[1].socket",
            "main socket's path",
        ),
        (
            "socket = \"/run/c/l.sock\"\norigin = \"lap\u{200B}top\"",
            "listen[1].origin",
            "U+200B ZERO WIDTH SPACE",
        ),
        (
            "socket = \"/run/c/l.sock\"\norigin = \"d\u{0435}vbox\"",
            "listen[1].origin",
            "looks like listen[0]'s origin \"devbox\"",
        ),
    ];
    for (listener, key, words) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, format!("{base}[[listen]]\n{listener}\n")).unwrap();
        let output = consentd(&["check-config", "--file-only", path.to_str().unwrap()]);
        let said = format!("{}{}", stdout(&output), crate::fixture::stderr(&output));
        assert_ne!(output.status.code(), Some(0), "{listener}: {said}");
        assert!(
            said.lines()
                .any(|line| line.contains(key) && line.contains(words)),
            "{listener}: no line names {key} with {words:?}:\n{said}"
        );
    }
}

/// A process in a user namespace of its own is root there, but the socket's peer credentials
/// are translated into the daemon's namespace: the ask is the caller's host uid. The caller is
/// `nobody` (the test runs as root, whose own namespace would map root to root).
#[test]
fn an_ask_from_a_user_namespace_is_attributed_to_the_host_uid_not_root() {
    use crate::shares::OTHER_UID;
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    assert_eq!(
        current_uid(),
        0,
        "this test switches uid, so it runs as root"
    );
    let daemon = Daemon::builder()
        .config_tail(&format!(
            "\n[[listen]]\nsocket = \"{{dir}}/run/devbox.sock\"\norigin = \"devbox\"\n\
             allowed_uids = [{OTHER_UID}]\n"
        ))
        .start();
    let devbox = devbox_socket(&daemon);
    for dir in [daemon.dir.path(), devbox.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    std::fs::set_permissions(&devbox, std::fs::Permissions::from_mode(0o666)).unwrap();
    let in_namespace = |args: &[&str]| {
        std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "--"])
            .args(args)
            .current_dir("/")
            .uid(OTHER_UID)
            .gid(OTHER_UID)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("unshare runs")
    };
    let inside = in_namespace(&["id", "-u"]);
    assert_eq!(
        stdout(&inside).trim(),
        "0",
        "unshare --user --map-root-user must make the caller root inside: {}",
        crate::fixture::stderr(&inside)
    );
    let output = in_namespace(&[
        crate::fixture::BIN,
        "ask",
        "--socket",
        devbox.to_str().unwrap(),
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        "from a container",
        "--field",
        "reply_to=https://example.org/1",
        "--cost-usd",
        "0.04",
        "--no-wait",
        "--json",
    ]);
    let answer: Value = stdout(&output)
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no answer line: {}", crate::fixture::stderr(&output)));
    let id = id_of(&answer);
    let asked = daemon
        .journal_events()
        .into_iter()
        .find(|e| e["ev"] == "asked" && e["id"] == id.as_str())
        .unwrap();
    assert_eq!(asked["uid"], OTHER_UID, "the host uid, not root: {asked}");
    assert_eq!(asked["origin"], "devbox", "{asked}");
    // The card shows it from the labelled socket.
    let card = daemon.card_of(&id).text.unwrap();
    assert!(card.contains("From: devbox"), "{card}");
}

/// On the main socket, a request's own origin that could read as a labelled socket's on a card
/// is refused; a client's ordinary origin is not. Each case on its own.
#[test]
fn a_request_origin_that_could_pass_for_a_labelled_socket_is_refused() {
    let daemon = with_devbox(Daemon::builder()).start();
    for origin in [
        "devbox",
        "DEVBOX",
        "d\u{0435}vbox",
        "devbox · CI",
        "devbox2",
    ] {
        let mut ask = good_ask(&format!("pretending to be {origin}"));
        ask["origin"] = json!(origin);
        let answer = daemon.request(&ask);
        assert_eq!(answer["status"], "refused", "{origin}: {answer}");
        assert_eq!(answer["reason"], "bad_request", "{origin}: {answer}");
    }
    let mut ask = good_ask("an honest origin");
    ask["origin"] = json!("Claude Code · ~/src/blog");
    assert_eq!(daemon.request(&ask)["status"], "pending");
}

/// Refusals counted under one window answer with that window's record id, but only to the same
/// peer: the same uid through another socket never learns another socket's record id.
#[test]
fn a_refusal_window_answers_its_record_id_only_to_its_own_socket() {
    let daemon = with_devbox(Daemon::builder().refusal_budget(1, "1h")).start();
    let devbox = devbox_socket(&daemon);
    let mut unknown = good_ask("no such kind");
    unknown["kind"] = json!("no_such_kind");
    let first = daemon.request(&unknown);
    assert_eq!(first["reason"], "unknown_kind", "{first}");
    let window = first["id"]
        .as_str()
        .expect("the first refusal is recorded")
        .to_owned();
    let again = daemon.request(&unknown);
    assert_eq!(
        again["id"],
        window.as_str(),
        "the same peer is answered its window's id: {again}"
    );
    let elsewhere = request_at(&devbox, &unknown);
    assert_eq!(elsewhere["reason"], "unknown_kind", "{elsewhere}");
    assert_ne!(
        elsewhere["id"],
        window.as_str(),
        "another socket's peer was given the main socket's record id: {elsewhere}"
    );
}

/// A labelled socket's directory is the operator's to make, with the group of whoever may reach
/// it: the daemon refuses to start rather than make one with a mode of its own choosing.
#[test]
fn a_labelled_socket_whose_directory_is_missing_stops_the_start_with_what_to_do() {
    let failure = Daemon::builder()
        .config_tail("\n[[listen]]\nsocket = \"{dir}/nowhere/devbox.sock\"\norigin = \"devbox\"\n")
        .try_start()
        .expect_err("the daemon made the labelled socket's directory itself");
    let said = failure.to_string();
    assert!(
        said.contains("the directory of the labelled socket") && said.contains("does not exist"),
        "{said}"
    );
}
