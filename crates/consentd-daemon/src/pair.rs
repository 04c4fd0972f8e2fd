//! `consentd pair`: a one-time code for `/start CODE`, its `t.me` link and a QR code of it.
//!
//! The running daemon owns the journal and the store's thread; this command only writes the
//! code's hash into the `pairing` table through its own short SQLite connection (SQLite takes
//! care of the concurrency; the SQL is the store's, `store::pairing`), so the daemon recognises
//! the code when the owner sends it.

use std::path::Path;

use anyhow::Context as _;
use chrono::Utc;

use crate::telegram::Telegram;
use consentd_core::pairing;
use consentd_store::pairing::store_code;

/// What `pair` prints: the code, the link and the QR code (as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub code: String,
    pub link: String,
    pub qr: String,
    pub expires_at: chrono::DateTime<Utc>,
}

/// Makes and stores a pairing code for the daemon whose config is at `config_path`.
pub async fn pair(config_path: &Path) -> anyhow::Result<Pairing> {
    let config = crate::config::load(config_path)?;
    if let Some(owner) = config.owner.telegram_id {
        anyhow::bail!(
            "the config names the owner (owner.telegram_id = {owner}); there is nothing to pair"
        );
    }
    let db_path = config.paths.state_dir.join(consentd_store::DB_FILE);
    anyhow::ensure!(
        db_path.exists(),
        "{} does not exist yet: start `consentd serve` once before pairing",
        db_path.display()
    );
    let token =
        crate::preflight::bot_token(&config.telegram).map_err(|p| anyhow::anyhow!("{p}"))?;
    let telegram = Telegram::new(&token, &config.telegram.api_url).map_err(anyhow::Error::msg)?;
    let username = telegram
        .username()
        .await
        .context("cannot ask Telegram for the bot's name (getMe)")?;
    let code = pairing::new_code().map_err(|error| anyhow::anyhow!("no randomness: {error}"))?;
    // The daemon's clock (a test may shift it), so the code's lifetime is the daemon's.
    let now = crate::clock::from_env().now();
    let expires_at = now + pairing::CODE_TTL;
    store_code(&db_path, &pairing::code_hash(&code), expires_at, now)?;
    let link = format!("https://t.me/{username}?start={code}");
    let qr = qrcode::QrCode::new(link.as_bytes())
        .context("cannot make a QR code of the link")?
        .render::<qrcode::render::unicode::Dense1x2>()
        .quiet_zone(true)
        .build();
    Ok(Pairing {
        code,
        link,
        qr,
        expires_at,
    })
}
