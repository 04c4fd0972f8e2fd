//! The daemon's side of `consentd doctor`: the config, the token and its webhook, the owner,
//! the journal, the owners and modes of the state, and the socket.
//!
//! The database is only ever opened read-only, and only tables are read: a running daemon
//! holds it, and a doctor that migrated or wrote it would change what it examines.

use std::path::Path;

use serde_json::{json, Value};

use super::Check;
use consentd_core::config::{Config, ConfigError};
use consentd_daemon::telegram::Telegram;
use consentd_store::inspect::Inspect;

/// What the owner's chat needs when the last message to them was dropped.
const REACH_FIX: &str = "the owner opens the chat with the bot and presses Start (a bot cannot \
    write first) and does not block it; the daemon's log names each message it gave up on";

/// The checks of the daemon's side, in the report's order.
pub(super) async fn checks(path: &Path, keys: &[consentd_core::journal::Key]) -> Vec<Check> {
    let (check, config) = config_check(path);
    let mut checks = vec![check];
    let Some(config) = config else {
        return checks;
    };
    checks.extend(token_checks(&config).await);
    let db = ReadOnly::open(&config.paths.state_dir);
    checks.push(owner_check(&config, &db));
    checks.push(journal_check(&config, &db, keys));
    checks.push(modes_check(&config));
    checks.push(socket_check(&config).await);
    checks
}

/// The config as `check-config` reads it (its owners and modes are the `modes` line), and the
/// config to go on with: the file's own, when only this machine failed it.
fn config_check(path: &Path) -> (Check, Option<Config>) {
    let (loaded, notes) = consentd_daemon::preflight::load_on_machine(path, false);
    let notes: String = notes.iter().map(|note| format!("; note: {note}")).collect();
    match loaded {
        Ok(config) => {
            let detail = format!("{}: {}{notes}", path.display(), config.summary());
            (Check::ok("config", detail), Some(config))
        }
        Err(ConfigError::Invalid { problems, .. }) => {
            let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
            let check = Check::fail(
                "config",
                format!("{}: {}{notes}", path.display(), listed.join("; ")),
                "fix each key named (docs/CONFIG.md); `consentd check-config FILE` lists them",
            );
            (check, consentd_daemon::config::load(path).ok())
        }
        Err(error) => (
            Check::fail(
                "config",
                error.to_string(),
                "give the daemon's config with --config FILE (default /etc/consentd/config.toml)",
            ),
            None,
        ),
    }
}

/// `getMe` with the token, and `getWebhookInfo`: a set webhook makes every `getUpdates` fail.
async fn token_checks(config: &Config) -> Vec<Check> {
    let token_fix = "put the bot's token from @BotFather in telegram.token_file (or \
        $CONSENTD_BOT_TOKEN in the daemon's environment)";
    let token = match consentd_daemon::preflight::bot_token(&config.telegram) {
        Ok(token) => token,
        Err(problem) => return vec![Check::fail("token", problem.to_string(), token_fix)],
    };
    let api = &config.telegram.api_url;
    let telegram = match Telegram::new(&token, api) {
        Ok(telegram) => telegram,
        Err(error) => return vec![Check::fail("token", error, "fix telegram.api_url")],
    };
    let token = match telegram.username().await {
        Ok(name) => Check::ok(
            "token",
            format!("getMe at {api} answers: the bot is @{name}"),
        ),
        Err(error) => {
            return vec![Check::fail(
                "token",
                format!("getMe at {api} failed: {error}"),
                format!(
                    "{token_fix}: a revoked or mistyped token answers 401 Unauthorized \
                     (@BotFather, /mybots, API Token shows the current one)"
                ),
            )]
        }
    };
    let webhook = match telegram.webhook_url().await {
        Ok(None) => Check::ok(
            "webhook",
            "none is set, so the daemon can poll with getUpdates",
        ),
        Ok(Some(url)) => Check::fail(
            "webhook",
            format!(
                "a webhook is set ({url}): Telegram refuses getUpdates while one is, so the \
                 daemon gets no message and no press"
            ),
            "remove it with the Bot API's deleteWebhook (curl \
             https://api.telegram.org/bot<TOKEN>/deleteWebhook); consentd never sets one, so \
             another program using this bot did: give consentd a bot of its own",
        ),
        Err(error) => Check::fail(
            "webhook",
            format!("getWebhookInfo at {api} failed: {error}"),
            "check the network to telegram.api_url, then run doctor again",
        ),
    };
    vec![token, webhook]
}

/// The daemon's database, read-only, if there is one yet; or why it cannot be read.
struct ReadOnly {
    path: std::path::PathBuf,
    inspect: Result<Option<Inspect>, String>,
}

impl ReadOnly {
    fn open(state_dir: &Path) -> ReadOnly {
        let path = state_dir.join(consentd_store::DB_FILE);
        let inspect = match path.try_exists() {
            Ok(false) => Ok(None),
            Err(error) => Err(error.to_string()),
            Ok(true) => Inspect::open_read_only(state_dir)
                .map(Some)
                .map_err(|error| error.to_string()),
        };
        ReadOnly { path, inspect }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// One read: `None` when there is no database yet.
    fn read<T>(
        &self,
        read: impl FnOnce(&Inspect) -> Result<Option<T>, consentd_store::StoreError>,
    ) -> Result<Option<T>, String> {
        match &self.inspect {
            Ok(None) => Ok(None),
            Ok(Some(inspect)) => read(inspect).map_err(|error| error.to_string()),
            Err(error) => Err(error.clone()),
        }
    }
}

/// The owner: paired in the config or the store, and what the outbox says reached them.
fn owner_check(config: &Config, db: &ReadOnly) -> Check {
    let shown = db.path().display();
    let stored = db.read(Inspect::paired_owner);
    let (owner, from) =
        match (config.owner.telegram_id, stored) {
            (Some(id), _) => (id, "owner.telegram_id in the config"),
            (None, Ok(Some(id))) => (id, "pairing"),
            (None, Ok(None)) => return Check::fail(
                "owner",
                "nobody is paired: the config has no owner.telegram_id and the store no pairing",
                "with the daemon running, `consentd pair --config FILE` prints a code: send it to \
                 the bot from the owner's own Telegram account (or set owner.telegram_id)",
            ),
            (None, Err(error)) => {
                return Check::fail(
                    "owner",
                    format!("cannot read the pairing from {shown}: {error}"),
                    "run doctor as the daemon's user, who can read its database",
                )
            }
        };
    let paired = format!("Telegram id {owner} (by {from})");
    let last = db.read(|inspect| inspect.last_message_to(owner));
    let reached = db.read(|inspect| inspect.last_sent_to(owner));
    match (last, reached) {
        (Ok(Some(last)), _) if last.state != "sent" => {
            let (at, error) = (last.queued_at, last.error);
            let how = match last.state.as_str() {
                "queued" => "has not got through yet (it is retried)",
                _ => "was not delivered",
            };
            Check::fail(
                "owner",
                format!(
                    "{paired}; the last message to them (queued at {at}) {how}: {}",
                    error.as_deref().unwrap_or("Telegram refused it")
                ),
                REACH_FIX,
            )
        }
        (Ok(_), Ok(Some(at))) => Check::ok(
            "owner",
            format!("{paired}; the last message that reached them was queued at {at}"),
        ),
        (Ok(_), Ok(_)) => Check::ok("owner", format!("{paired}; no message has been sent yet")),
        (Err(error), _) | (_, Err(error)) => Check::fail(
            "owner",
            format!("{paired}; cannot read the outbox in {shown}: {error}"),
            "run doctor as the daemon's user, who can read its database",
        ),
    }
}

/// The journal, verified as `journal verify` does: from the anchor the last evening summary
/// sent the owner (kept in the store), its seals with `--key`.
fn journal_check(config: &Config, db: &ReadOnly, keys: &[consentd_core::journal::Key]) -> Check {
    let file = &config.paths.journal;
    // Without the anchor, a journal rewritten whole with a fresh chain would verify: say so
    // rather than vouch for it.
    let anchor = match db.read(Inspect::last_summary_anchor) {
        Ok(stored) => stored.map(|text| text.parse::<consentd_core::journal::Anchor>()),
        Err(error) => {
            return Check::fail(
                "journal",
                format!(
                    "cannot read the last summary's anchor from {}: {error}",
                    db.path().display()
                ),
                "run doctor as the daemon's user, who can read its database",
            )
        }
    };
    let anchor =
        match anchor.transpose() {
            Ok(anchor) => anchor,
            Err(error) => return Check::fail(
                "journal",
                format!("the last summary's anchor in the database is not an anchor: {error}"),
                "the database was changed outside consentd: keep it and the journal as evidence",
            ),
        };
    let now = consentd_daemon::clock::from_env().now().timestamp_millis();
    match consentd_store::journal::verify_file_with_keys(file, anchor.as_ref(), keys, now) {
        Ok(Ok(verified)) => {
            let seals = verified.seals.lines().join("; ");
            Check::ok(
                "journal",
                format!("{}: {}; {seals}", file.display(), verified.summary()),
            )
        }
        Ok(Err(problem)) => Check::fail(
            "journal",
            format!("{} does not verify: {problem}", file.display()),
            "the journal was changed after it was written: keep the file as evidence and compare \
             it with a copy and the anchors the evening summaries sent (`consentd journal \
             verify FILE --anchor N:HEX`, docs/OPERATOR.md)",
        ),
        Err(error) => Check::fail(
            "journal",
            format!("cannot read {}: {error}", file.display()),
            "start the daemon once (it makes the journal), and run doctor as a user who may \
             read it",
        ),
    }
}

/// The owners and modes of the token file and the state, as `serve` checks them.
fn modes_check(config: &Config) -> Check {
    let problems = consentd_daemon::preflight::check_files(&config.telegram, &config.paths);
    if problems.is_empty() {
        return Check::ok(
            "modes",
            format!(
                "the token file, {} and what is in it are owned by {} (or root) and closed to \
                 others",
                config.paths.state_dir.display(),
                consentd_daemon::preflight::whoami()
            ),
        );
    }
    let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
    Check::fail(
        "modes",
        listed.join("; "),
        "as each problem says: the daemon's user owns its files, nobody else may write them \
         (chmod go-w), secrets are chmod 600; run doctor as the daemon's user",
    )
}

/// The socket, as the calling user reaches it: `$CONSENTD_SOCKET`, else the config's.
async fn socket_check(config: &Config) -> Check {
    let socket = match std::env::var_os("CONSENTD_SOCKET").filter(|path| !path.is_empty()) {
        Some(_) => consentd_client::client::socket_path(None),
        None => consentd_client::client::Socket {
            path: config.paths.socket.clone(),
            from: consentd_client::client::SocketFrom::Flag,
        },
    };
    let shown = socket.path.display().to_string();
    let answer =
        consentd_client::client::request(&socket, &json!({"v": 1, "op": "kinds"}), |_| {}).await;
    match answer {
        Ok(answer) => match answer.get("kinds").and_then(Value::as_array) {
            Some(kinds) => Check::ok(
                "socket",
                format!(
                    "{shown} answers `kinds` for this user: {} kinds",
                    kinds.len()
                ),
            ),
            None => Check::fail(
                "socket",
                format!(
                    "{shown} answered `kinds` with {}: {}",
                    answer["status"].as_str().unwrap_or("no status"),
                    answer["message"].as_str().unwrap_or("no message")
                ),
                "add this user's uid to client.allowed_uids (or run doctor as the agent's user)",
            ),
        },
        Err(error) => Check::fail(
            "socket",
            error
                .to_string()
                .replace("(from --socket)", "(from the config's paths.socket)"),
            "start the daemon (`consentd serve`), and run doctor as the agent's user, in the \
             socket's group",
        ),
    }
}
