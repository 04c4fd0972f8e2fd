//! `consentd journal seal-init` and `rotate`: a new sealing key for the journal, printed once and
//! sent to the owner's chat (docs/OPERATOR.md, "Seals").

use std::path::Path;

use anyhow::Context as _;

use consentd_client::output::outln;
use consentd_store::journal::{self, KeyFile};

/// Makes a verification key and the first epoch's key file, and prints the verification key once.
/// The state directory's lock keeps this from racing a running daemon: the key file and the
/// journal's announcement of it are the daemon's to write, at its next start.
pub fn make_key(config_path: &Path, rotate: bool) -> anyhow::Result<()> {
    let config = crate::config::load(config_path)?;
    // A test build lets `CONSENTD_CRASH_AT` kill the command at each step of writing the key.
    #[cfg(feature = "test-hooks")]
    consentd_store::set_crash_hook(crate::failpoint::hit);
    let dir = &config.paths.state_dir;
    let _lock = consentd_store::lock_state_dir(dir).context(
        "the state directory is locked: stop `consentd serve` first (it holds the lock while it runs)",
    )?;
    let old = KeyFile::load(dir)?;
    let first = match (&old, rotate) {
        (Some(old), false) => anyhow::bail!(
            "the journal already has a sealing key (id {}); `consentd journal rotate` replaces it",
            old.key_id
        ),
        (None, true) => {
            anyhow::bail!(
                "the journal has no sealing key yet; `consentd journal seal-init` makes one"
            )
        }
        // A new family's epochs continue after the old one's, so a verifier sees them in order.
        (Some(old), true) => old.key().epoch + 1,
        (None, false) => 1,
    };
    let k0 = journal::new_k0()?;
    let now = crate::clock::from_env().now().timestamp_millis();
    let secs = config.journal.seal_epoch.as_secs() as i64;
    let key_id = consentd_core::journal::key_id(&k0);
    let k0_hex = hex::encode(k0);
    let qr = qrcode::QrCode::new(k0_hex.as_bytes())
        .context("cannot make a QR code of the key")?
        .render::<qrcode::render::unicode::Dense1x2>()
        .quiet_zone(true)
        .build();
    outln!("{qr}");
    outln!("verification key: {k0_hex}");
    outln!("key id: {key_id}");
    outln!(
        "Keep this key OFF this machine (a password manager, paper, another computer): it is shown once \
         and is not stored anywhere. With it, `consentd journal verify FILE --key KEY` checks every seal; \
         whoever has it can forge every seal, so keep it as you would a password."
    );
    outln!(
        "Sealing starts at the daemon's next start: its first line is `{}` with key id {}, and each key lives {}s.",
        if rotate { consentd_core::journal::SEAL_ROTATED } else { consentd_core::journal::SEAL_STARTED },
        key_id,
        secs
    );
    // Written only once the key is shown: a kill before this leaves the old key (or none) in use
    // and the printed key unused, never a key in use that nobody saw.
    let file = KeyFile::create(dir, &k0, first, now, secs)
        .context("the key printed above was not put in use")?;
    let sent = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .and_then(|runtime| runtime.block_on(send_to_owner(&config, &k0_hex, &file.key_id)));
    match sent {
        Ok(Some(id)) => outln!("Also sent to the owner's chat (Telegram id {id})."),
        Ok(None) => {
            outln!("No owner is paired yet, so it was not sent to a chat: keep the printed key.")
        }
        Err(error) => {
            outln!("It could not be sent to the owner's chat ({error:#}): keep the printed key.")
        }
    }
    Ok(())
}

/// Sends the new verification key to the owner's chat, straight from this process: not through
/// the outbox, so the key is never written to the database (a row wiped after sending would
/// still linger in the WAL and free pages). Returns the owner's id, or `None` with nobody paired.
async fn send_to_owner(
    config: &consentd_core::config::Config,
    k0_hex: &str,
    key_id: &str,
) -> anyhow::Result<Option<i64>> {
    let stored =
        consentd_store::paired_owner(&config.paths.state_dir.join(consentd_store::DB_FILE))?.map(
            |(telegram_id, language_code)| consentd_store::owner::OwnerRow {
                telegram_id,
                language_code,
            },
        );
    let Some(owner) = crate::consent::load_owner(config, stored) else {
        return Ok(None);
    };
    let token =
        crate::preflight::bot_token(&config.telegram).map_err(|p| anyhow::anyhow!("{p}"))?;
    let telegram = crate::telegram::Telegram::new(&token, &config.telegram.api_url)
        .map_err(anyhow::Error::msg)?;
    let locales =
        consentd_core::locale::Locales::new().context("the built-in locales do not load")?;
    let text = consentd_core::card::owner::seal_key(&locales, owner.language, k0_hex, key_id);
    telegram
        .send_text(
            owner.id,
            &consentd_core::styled::Styled::plain(text),
            &[],
            false,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some(owner.id))
}
