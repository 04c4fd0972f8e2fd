//! Attachments end to end: what runs, and what the owner is shown, are the bytes whose SHA-256 the
//! card shows — a stored copy changed behind the daemon's back is never run nor shown — and a file
//! whose bytes are not its declared media type never reaches a card.

use std::path::PathBuf;

use base64::Engine as _;
use consentd_core::digest::Sha256Hash;
use consentd_emulator::{ChatSpec, ContentKind, UserSpec};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::fixture::{consentd, noon_today, stdout, Daemon, OWNER};

/// A 1×1 PNG, complete.
pub(crate) const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\
\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\x0aIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\x0d\x0a\x2d\xb4\
\x00\x00\x00\x00IEND\xaeB\x60\x82";

/// The same PNG with one pixel byte changed: same name, same size, other bytes.
fn swapped() -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    let at = bytes.len() - 20;
    bytes[at] ^= 0xff;
    bytes
}

fn ask_with_cover(bytes: &[u8], media_type: &str) -> Value {
    json!({"v":1,"op":"ask","kind":"publish_x","target":"@mila_news","text":"With a cover",
        "cost_usd":"0.04","wait":false,
        "attachments":[{"name":"cover.png","media_type":media_type,
            "data_b64":base64::engine::general_purpose::STANDARD.encode(bytes)}]})
}

/// Where the daemon keeps an attachment's bytes: under their SHA-256 (src/store/mod.rs).
fn stored_copy(daemon: &Daemon, bytes: &[u8]) -> PathBuf {
    daemon
        .state_dir
        .join("attachments")
        .join(Sha256Hash::of(bytes).to_hex())
}

fn hex12(bytes: &[u8]) -> String {
    Sha256Hash::of(bytes).hex_prefix(12)
}

/// The events of record `id`, in order.
fn events_of(daemon: &Daemon, id: &str) -> Vec<Value> {
    daemon
        .journal_events()
        .into_iter()
        .filter(|e| e["id"] == id)
        .collect()
}

fn names(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["ev"].as_str().unwrap()).collect()
}

fn assert_journal_verifies(daemon: &Daemon) {
    let verify = consentd(&[
        "journal",
        "verify",
        daemon.settled_journal().to_str().unwrap(),
    ]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
}

#[test]
fn a_swapped_attachment_is_not_run() {
    let mut daemon = Daemon::start();
    let cover = daemon.dir.path().join("cover.png");
    std::fs::write(&cover, PNG).unwrap();
    // The real client, waiting for the outcome as a session would.
    let client = daemon.cli_spawn(&[
        "ask",
        "--kind",
        "publish_x",
        "--target",
        "@mila_news",
        "--text",
        "With a cover",
        "--cost-usd",
        "0.04",
        "--attach",
        cover.to_str().unwrap(),
        "--json",
    ]);
    daemon.wait_for("the card", |bot| {
        bot.messages(OWNER).iter().any(|m| !m.buttons().is_empty())
    });
    let listed = daemon.request(&json!({"v":1,"op":"list"}));
    let id = listed["records"][0]["id"].as_str().unwrap().to_owned();
    let card = daemon.card_of(&id);
    let text = card.text.clone().unwrap();
    assert!(
        text.contains(&hex12(PNG)),
        "the card shows the hash:\n{text}"
    );
    let photo = daemon
        .owner_chat()
        .into_iter()
        .find(|m| m.kind == ContentKind::Document)
        .expect("the cover went as a document, its bytes exact, before the card");
    assert!(photo.message_id < card.message_id);

    // After the owner saw it, the stored copy changes: same name, same size, other bytes.
    let stored = stored_copy(&daemon, PNG);
    assert_eq!(std::fs::read(&stored).unwrap(), PNG, "the store's layout");
    std::fs::write(&stored, swapped()).unwrap();
    daemon.press_yes(&card);

    let reason = format!(
        "the command could not start: attachment \"cover.png\" changed after the card was \
         shown, so nothing ran: expected sha256 {} ({} bytes), found sha256 {} ({} bytes)",
        hex12(PNG),
        PNG.len(),
        hex12(&swapped()),
        PNG.len()
    );
    let output = client.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(output.status.code(), Some(6), "failed exits 6: {answer}");
    assert_eq!(answer["status"], "failed", "{answer}");
    assert_eq!(answer["message"], reason.as_str(), "{answer}");
    assert!(answer.get("result").is_none_or(Value::is_null), "{answer}");
    let status = daemon.request(&json!({"v":1,"op":"status","id":id}));
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["message"], reason.as_str(), "{status}");

    assert_eq!(daemon.runs(), 0, "the action script never ran");
    assert!(daemon.runs_by_record().is_empty(), "nothing read the stdin");
    daemon.wait_for("the card's edit to say what happened", |bot| {
        bot.message(OWNER, card.message_id).is_some_and(|m| {
            m.buttons().is_empty()
                && m.text.as_deref().is_some_and(|t| {
                    t.contains("Outcome: failed. Decided by Mila.")
                        && t.contains(
                            "Reason: the command could not start: attachment \"cover.png\" \
                             changed after the card was shown, so nothing ran",
                        )
                })
        })
    });

    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let events = events_of(&daemon, &id);
    assert_eq!(
        names(&events),
        ["asked", "card_shown", "granted", "used", "failed"]
    );
    assert_eq!(events[4]["detail"], "not_started", "{}", events[4]);
    assert_journal_verifies(&daemon);
}

#[test]
fn a_stored_copy_changed_before_its_card_is_sent_is_never_shown() {
    // A night limit of 0 holds the card until the owner turns quiet hours off: the copy changes
    // while it waits, and the sender finds out when it reads it to upload.
    let mut daemon = Daemon::builder()
        .gate("quiet_hours = \"23:00-08:00\"\nnight_card_limit = 0")
        .start();
    daemon.set_clock(noon_today() + chrono::Duration::minutes(11 * 60 + 30));
    let answer = daemon.request(&ask_with_cover(PNG, "image/png"));
    assert_eq!(answer["status"], "pending", "{answer}");
    let id = answer["id"].as_str().unwrap().to_owned();
    std::fs::write(stored_copy(&daemon, PNG), swapped()).unwrap();
    let before = daemon.bot.messages(OWNER).len();
    daemon.bot.push_text(
        &UserSpec::new(OWNER, "Mila"),
        ChatSpec::private(OWNER),
        "/quiet off",
    );
    daemon.wait_for("the reply to /quiet off", |bot| {
        bot.messages(OWNER).iter().skip(before).any(|m| {
            m.text
                .as_deref()
                .is_some_and(|t| t.contains("Quiet hours are off."))
        })
    });

    let status = daemon.wait_state(&id, "expired");
    assert_eq!(
        status["message"],
        format!(
            "the card could not be delivered to the owner: attachment \"cover.png\" changed after \
             it was asked for, so its card was not sent: expected sha256 {} ({} bytes), found \
             sha256 {} ({} bytes)",
            hex12(PNG),
            PNG.len(),
            hex12(&swapped()),
            PNG.len()
        )
        .as_str(),
        "{status}"
    );
    let chat = daemon.owner_chat();
    assert!(
        chat.iter().all(|m| m.kind == ContentKind::Text),
        "no photo or document was uploaded: {chat:?}"
    );
    assert!(
        chat.iter()
            .all(|m| !m.text.as_deref().unwrap_or_default().contains(&id)),
        "no card was drawn: {chat:?}"
    );
    assert_eq!(daemon.runs(), 0);

    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let events = events_of(&daemon, &id);
    assert_eq!(names(&events), ["asked", "expired"]);
    assert_eq!(events[1]["detail"], "undeliverable", "{}", events[1]);
    assert_journal_verifies(&daemon);
}

#[test]
fn an_elf_as_image_png_is_refused() {
    let mut daemon = Daemon::start();
    // A real executable, named like a photo.
    let elf = std::fs::read("/bin/true").unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    let answer = daemon.request(&ask_with_cover(&elf, "image/png"));
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_eq!(answer["reason"], "bad_request", "{answer}");
    assert_eq!(
        answer["message"],
        "attachments[0] is declared image/png, but its bytes are not PNG (they look like \
         application/x-executable)",
        "{answer}"
    );
    // Refused before anything was kept or shown.
    assert!(
        !stored_copy(&daemon, &elf).exists(),
        "the bytes were stored"
    );
    // The same ask with the true PNG passes, so the refusal was the bytes'.
    let good = daemon.request(&ask_with_cover(PNG, "image/png"));
    assert_eq!(good["status"], "pending", "{good}");
    let good_id = good["id"].as_str().unwrap().to_owned();
    daemon.card_of(&good_id);
    let photos = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.kind != ContentKind::Text)
        .count();
    assert_eq!(photos, 1, "only the true PNG reached the chat");

    assert!(daemon.stop_with(Signal::SIGTERM).success());
    let id = answer["id"].as_str().unwrap();
    let events = events_of(&daemon, id);
    assert_eq!(names(&events), ["denied"]);
    assert_eq!(events[0]["reason"], "bad_request", "{}", events[0]);
    assert_journal_verifies(&daemon);
}

/// The receipt of an ask a mandate answered shows what ran "as a card shows it", and a
/// card's attachment is sent as a photo or document just before it (docs/CONTRACT-NOTES.md,
/// "Mandates" and "Telegram and the consent loop"). Under a mandate no card
/// was ever drawn, so the receipt is the only time the owner can see the image posted as them:
/// it must come with it, not only with its name and hash.
#[test]
fn the_receipt_of_a_covered_ask_comes_with_its_attachment() {
    let daemon = Daemon::start();
    crate::mandates::grant(&daemon, &["@mila_news"], 1, "1.00", 5);
    let answer = daemon.request(&ask_with_cover(PNG, "image/png"));
    assert_eq!(answer["status"], "running", "{answer}");
    let id = answer["id"].as_str().unwrap().to_owned();
    daemon.wait_state(&id, "executed");
    let receipt = crate::mandates::receipt_of(&daemon, &id);
    assert!(
        receipt.text.as_deref().unwrap().contains(&hex12(PNG)),
        "the receipt lists the attachment"
    );
    let shown = daemon
        .owner_chat()
        .into_iter()
        .filter(|m| m.kind != ContentKind::Text)
        .count();
    assert_eq!(
        shown, 1,
        "the image that ran under the mandate was never shown to the owner"
    );
}

/// `consentd ask --attach PATH` and `--text-file PATH` on a file that is no regular file: a
/// FIFO (nobody writes to it) and /dev/zero (endless). Like `consentd mcp`'s attachments
/// (docs/CONTRACT-NOTES.md, "Files named by path"), each must be refused at once as a usage
/// error (exit 2) naming the path, not waited on forever nor read until memory runs out. The
/// child gets a 1 GiB address-space limit so the /dev/zero cases cannot take the machine's memory.
#[test]
fn ask_refuses_a_fifo_or_an_endless_file_as_an_attachment_or_text_file() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cover.png");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let fifo = fifo.to_str().unwrap().to_owned();
    let socket = dir.path().join("no-daemon.sock");
    let cases: [(&str, Vec<&str>, &str); 4] = [
        (
            "--attach a FIFO",
            vec!["--text", "hi", "--attach", &fifo],
            &fifo,
        ),
        ("--text-file a FIFO", vec!["--text-file", &fifo], &fifo),
        (
            "--attach /dev/zero",
            vec!["--text", "hi", "--attach", "/dev/zero"],
            "/dev/zero",
        ),
        (
            "--text-file /dev/zero",
            vec!["--text-file", "/dev/zero"],
            "/dev/zero",
        ),
    ];
    for (name, flags, path) in cases {
        // The limit through the shell's ulimit (KiB), then the binary in its place.
        let mut command = Command::new("/bin/sh");
        command
            .args([
                "-c",
                "ulimit -v 1048576 && exec \"$0\" \"$@\"",
                crate::fixture::BIN,
            ])
            .args(["ask", "--kind", "publish_x", "--target", "@mila_news"])
            .args(&flags)
            .env("CONSENTD_SOCKET", &socket);
        let output = crate::fixture::output_within_ten_seconds(command, name);
        let stderr = crate::fixture::stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(path),
            "{name}: does not name {path}: {stderr}"
        );
        assert!(
            !stderr.contains("out of memory") && !stderr.contains("memory allocation"),
            "{name}: read until memory ran out instead of refused: {stderr}"
        );
    }
}
