//! `consentd pair`: a one-time pairing code, its t.me link and a QR code.

use std::path::Path;
use std::process::ExitCode;

use consentd_client::outln;

use super::{report, with_runtime};

pub(super) fn pair(config: &Path) -> ExitCode {
    report(with_runtime(async move {
        let pairing = consentd_daemon::pair::pair(config).await?;
        outln!("{}", pairing.qr);
        outln!("code: {}", pairing.code);
        outln!("link: {}", pairing.link);
        outln!(
            "Send /start {} to the bot from your own Telegram account (or open the link) before {} UTC. The code works once.",
            pairing.code,
            pairing.expires_at.format("%H:%M")
        );
        Ok(0)
    }))
}
