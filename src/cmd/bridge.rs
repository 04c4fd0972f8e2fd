//! `consentd bridge --socket PATH`: stdin and stdout joined to the socket; exits 0 when the
//! daemon closed the connection, 1 (with why on stderr) when the socket could not be reached.

use std::path::Path;
use std::process::ExitCode;

use consentd_client::errln;
use consentd_client::session::EXIT_ERROR;

pub(crate) fn bridge(socket: &Path) -> ExitCode {
    match consentd_client::bridge::run(socket) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("consentd bridge: {}: {error}", socket.display());
            ExitCode::from(EXIT_ERROR)
        }
    }
}
