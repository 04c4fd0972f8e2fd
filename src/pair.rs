//! `consentd pair`: a one-time code for `/start CODE`, its `t.me` link and a QR code of it.
//!
//! The running daemon owns the journal and the store's thread; this command only writes the
//! code's hash into the `pairing` table through its own short SQLite connection (SQLite takes
//! care of the concurrency), so the daemon recognises the code when the owner sends it.

use std::path::Path;

use anyhow::Context as _;
use chrono::Utc;
use rusqlite::{params, Connection, OptionalExtension};

use crate::config;
use crate::pairing;
use crate::store::db::timestamp;
use crate::telegram::Telegram;

/// What `pair` prints: the code, the link and the QR code (as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pairing {
    pub code: String,
    pub link: String,
    pub qr: String,
    pub expires_at: chrono::DateTime<Utc>,
}

/// Makes and stores a pairing code for the daemon whose config is at `config_path`.
pub(crate) async fn pair(config_path: &Path) -> anyhow::Result<Pairing> {
    let config = config::load(config_path)?;
    if let Some(owner) = config.owner.telegram_id {
        anyhow::bail!(
            "the config names the owner (owner.telegram_id = {owner}); there is nothing to pair"
        );
    }
    let db_path = config.paths.state_dir.join(crate::store::DB_FILE);
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

fn store_code(
    db_path: &Path,
    code_hash: &str,
    expires_at: chrono::DateTime<Utc>,
    now: chrono::DateTime<Utc>,
) -> anyhow::Result<()> {
    let mut conn =
        Connection::open(db_path).with_context(|| format!("cannot open {}", db_path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // The checks and the write in one IMMEDIATE transaction: the daemon may pair meanwhile.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let conn = &tx;
    let owner: Option<i64> = conn
        .query_row("SELECT telegram_id FROM owner WHERE id = 1", [], |row| {
            row.get(0)
        })
        .optional()
        .context("the database has no pairing tables: is the daemon older than this command?")?;
    if let Some(owner) = owner {
        anyhow::bail!("consentd is already paired with Telegram user {owner}");
    }
    let locked: Option<String> = conn
        .query_row(
            "SELECT locked_until FROM pairing WHERE id = 1 AND locked_until > ?1",
            [timestamp(now)],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(until) = locked {
        anyhow::bail!("pairing is locked after too many wrong codes until {until}");
    }
    conn.execute(
        "INSERT INTO pairing (id, code_hash, expires_at, used) VALUES (1, ?1, ?2, 0)
         ON CONFLICT (id) DO UPDATE SET code_hash = excluded.code_hash,
             expires_at = excluded.expires_at, used = 0",
        params![code_hash, timestamp(expires_at)],
    )?;
    tx.commit()?;
    Ok(())
}
