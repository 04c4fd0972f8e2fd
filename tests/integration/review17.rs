//! Findings of the review of issues 17 and 19: each test fails on the code it was written
//! against and says what the bound or the contract is.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

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
    let frame = std::sync::Arc::new(zeros_frame(32 * MIB as usize));
    let senders: Vec<_> = (0..2)
        .map(|_| {
            let socket = daemon.socket.clone();
            let frame = frame.clone();
            std::thread::spawn(move || {
                let mut stream = UnixStream::connect(socket).unwrap();
                let _ = stream.write_all(&frame);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                String::from_utf8_lossy(&answer).into_owned()
            })
        })
        .collect();
    for sender in senders {
        let answer = sender.join().unwrap();
        assert!(answer.contains("bad_request"), "{answer}");
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
