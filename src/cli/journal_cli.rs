//! `consentd journal …`: verify (with anchors and verification keys), head, and the sealing key's
//! `seal-init` and `rotate` (docs/OPERATOR.md, "The journal, and its anchor" and "Seals").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use super::{EXIT_ERROR, EXIT_USAGE};
use crate::journal::{self, KeyFile};
use crate::output::{errln, outln};

#[derive(Debug, Subcommand)]
pub(super) enum JournalCommand {
    /// Check the hash chain, and with --key every seal (and an anchor from the evening summary)
    Verify {
        /// The journal (decisions.jsonl)
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// N:HEX, with 12 to 64 hex digits of line N's hash (the longer, the stronger)
        #[arg(long, value_name = "N:HEX")]
        anchor: Option<String>,
        /// A verification key (64 hex digits) from `seal-init` or `rotate`; once per key kept
        #[arg(long, value_name = "K0")]
        key: Vec<String>,
    },
    /// Print the anchor N:H12 of the last line
    Head {
        /// The journal (decisions.jsonl)
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Start sealing the journal: make a verification key, print it once, keep only the first
    /// epoch's key (run while the daemon is stopped)
    SealInit {
        /// The daemon's config file
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Replace the verification key: a new one is printed once, the journal's next line is
    /// `seal_rotated` (run while the daemon is stopped)
    Rotate {
        /// The daemon's config file
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

pub(super) fn run(command: JournalCommand) -> ExitCode {
    match command {
        JournalCommand::Verify { file, anchor, key } => verify(&file, anchor.as_deref(), &key),
        JournalCommand::Head { file } => head(&file),
        JournalCommand::SealInit { config } => new_key(&config, false),
        JournalCommand::Rotate { config } => new_key(&config, true),
    }
}

fn verify(file: &Path, anchor: Option<&str>, keys: &[String]) -> ExitCode {
    let anchor = match anchor.map(str::parse::<journal::Anchor>).transpose() {
        Ok(anchor) => anchor,
        Err(error) => {
            errln!("consentd journal verify: --anchor: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut k0s = Vec::new();
    for key in keys {
        match journal::parse_key(key) {
            Some(k) => k0s.push(k),
            None => {
                errln!("consentd journal verify: --key: not 64 hex digits");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let now = crate::clock::from_env().now().timestamp_millis();
    match journal::verify_file_with_keys(file, anchor.as_ref(), &k0s, now) {
        Ok(Ok(verified)) => {
            outln!("{}", verified.summary());
            for line in verified.seals.lines() {
                outln!("{line}");
            }
            ExitCode::SUCCESS
        }
        Ok(Err(problem)) => {
            outln!("{problem}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd journal verify: {}: {error}", file.display());
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn head(file: &Path) -> ExitCode {
    match journal::head(file) {
        Ok(Ok(head)) => {
            outln!("{}", head.anchor());
            ExitCode::SUCCESS
        }
        Ok(Err(problem)) => {
            outln!("{problem}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd journal head: {}: {error}", file.display());
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn new_key(config: &Path, rotate: bool) -> ExitCode {
    let name = if rotate { "rotate" } else { "seal-init" };
    match make_key(config, rotate) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("consentd journal {name}: {error:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Makes a verification key and the first epoch's key file, and prints the verification key once.
/// The state directory's lock keeps this from racing a running daemon: the key file and the
/// journal's announcement of it are the daemon's to write, at its next start.
fn make_key(config_path: &Path, rotate: bool) -> anyhow::Result<()> {
    let config = crate::config::load(config_path)?;
    // A test build lets `CONSENTD_CRASH_AT` kill the command at each step of writing the key.
    #[cfg(feature = "test-hooks")]
    crate::store::set_crash_hook(crate::failpoint::hit);
    let dir = &config.paths.state_dir;
    let _lock = crate::store::lock_state_dir(dir).context(
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
    let key_id = journal::key_id(&k0);
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
        if rotate { journal::SEAL_ROTATED } else { journal::SEAL_STARTED },
        key_id,
        secs
    );
    // Written only once the key is shown: a kill before this leaves the old key (or none) in use
    // and the printed key unused, never a key in use that nobody saw.
    let file = KeyFile::create(dir, &k0, first, now, secs)
        .context("the key printed above was not put in use")?;
    match super::with_runtime(send_to_owner(&config, &k0_hex, &file.key_id)) {
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
    config: &crate::config::Config,
    k0_hex: &str,
    key_id: &str,
) -> anyhow::Result<Option<i64>> {
    let stored = crate::store::paired_owner(&config.paths.state_dir.join(crate::store::DB_FILE))?
        .map(
            |(telegram_id, language_code)| crate::store::consent::OwnerRow {
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
    let locales = crate::locale::Locales::new().context("the built-in locales do not load")?;
    let text = crate::card::owner::seal_key(&locales, owner.language, k0_hex, key_id);
    telegram
        .send_text(owner.id, &crate::styled::Styled::plain(text), &[], false)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some(owner.id))
}
