//! `consentd bridge`: this process's stdin and stdout joined to one connection to a socket,
//! for an SSH key's forced command on the daemon's host (docs/REMOTE.md). The key may do nothing
//! else (`restrict`: no forwarding of any kind, no terminal), so an agent on another machine
//! reaches exactly one labelled socket, and the daemon sees the key's login user as the peer.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Copies stdin to the socket (then half-closes it, as a client that sent its request line
/// does) and the socket to stdout, until the daemon closes the connection.
pub fn run(socket: &Path) -> std::io::Result<()> {
    let stream = UnixStream::connect(socket)?;
    let mut to_daemon = stream.try_clone()?;
    // The request goes on in its own thread: the answer may start before stdin ends.
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_daemon);
        let _ = to_daemon.shutdown(std::net::Shutdown::Write);
    });
    let mut from_daemon = stream;
    let mut stdout = std::io::stdout().lock();
    let mut chunk = [0u8; 8192];
    loop {
        let read = match from_daemon.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        // Each answer line is passed on as it comes: an interim line is news to the client.
        stdout.write_all(&chunk[..read])?;
        stdout.flush()?;
    }
}
