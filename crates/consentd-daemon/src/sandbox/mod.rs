//! `consentd sandbox`: the real daemon against the embedded Bot API emulator, with the owner's
//! chat as a web page on loopback, so consentd can be tried with no bot, token or config.
//!
//! The daemon runs through the same [`crate::daemon::serve_with`] as `consentd serve`, on a
//! config this module writes (a preset owner, English, UTC, no quiet hours, sample categories
//! whose commands only echo, fail or hang) and a random token in a 0600 file. Its Telegram is
//! [`consentd_emulator::Emulator`], the one the tests use; [`page`] serves the chat.

mod page;
mod token;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use consentd_client::output::{errln, Stream};
use consentd_core::locale::{Language, Locales};
use consentd_emulator::{self as emulator, Emulator, UserSpec};

/// The page's port when `--port` is not given; taken when free, else any free port.
pub(crate) const DEFAULT_PORT: u16 = 8340;
/// The emulated bot's id, before the token's random secret.
const BOT_ID: &str = "1000001";

/// A bot token for one run: given to the daemon in-process and to the emulator, never shown,
/// and kept in the sandbox's directory in a 0600 file its config names (for `consentd doctor`).
/// Secret, since the emulator listens on loopback where any local process reaches it: with the
/// token it could poll as the bot, which ends the daemon's long poll with 409 (the owner is cut
/// off while it does) and takes the owner's presses before the daemon sees them.
fn bot_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{BOT_ID}:{}", hex::encode(bytes)))
}
/// The sandbox owner's Telegram id, preset in the config so no pairing is needed.
pub(crate) const OWNER_ID: i64 = 1001;
/// How long the daemon may take to make its first `getUpdates` before the sandbox gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the sandbox keeps its files, all under one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub dir: PathBuf,
    pub config: PathBuf,
    pub state_dir: PathBuf,
    pub journal: PathBuf,
    pub socket: PathBuf,
    /// The rules `consentd hook` reads in the lines the sandbox prints.
    pub rules: PathBuf,
    /// The emulated bot's token (0600), the config's `telegram.token_file`: so `consentd
    /// doctor --config` checks the sandbox as it would a real setup.
    pub token: PathBuf,
}

/// The hook's rules for the sandbox: the example blog agent's (examples/hooks/rules.toml), whose
/// categories the sandbox has.
pub(crate) const HOOK_RULES: &str = include_str!("../../../../examples/hooks/rules.toml");

impl Layout {
    pub(crate) fn new(dir: &Path) -> Layout {
        Layout {
            dir: dir.to_owned(),
            config: dir.join("consentd.toml"),
            state_dir: dir.join("state"),
            journal: dir.join("state/decisions.jsonl"),
            socket: dir.join("consent.sock"),
            rules: dir.join("hook-rules.toml"),
            token: dir.join("bot-token"),
        }
    }
}

/// The owner as the emulator shows them (and as the card's "decided by" names them).
pub(crate) fn owner() -> UserSpec {
    UserSpec::new(OWNER_ID, "Owner")
        .username("sandbox_owner")
        .language("en")
}

/// Runs the sandbox until SIGINT or SIGTERM: `port` for the page (see [`DEFAULT_PORT`]; 0 for
/// any free one), `state_dir` to keep the state between runs (else a fresh temp dir, removed
/// at the end).
pub fn run(port: Option<u16>, state_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let (dir, fresh) = match state_dir {
        Some(dir) => {
            let dir = std::path::absolute(&dir)
                .with_context(|| format!("--state-dir {}", dir.display()))?;
            consentd_store::create_private_dir(&dir)
                .with_context(|| format!("cannot create --state-dir {}", dir.display()))?;
            (dir, false)
        }
        None => (
            crate::daemon::fresh_temp_dir("consentd-sandbox", 0o700)?,
            true,
        ),
    };
    let result = run_in(&Layout::new(&dir), port, fresh);
    if fresh {
        if let Err(error) = std::fs::remove_dir_all(&dir) {
            errln!("consentd sandbox: cannot remove {}: {error}", dir.display());
        }
    }
    result
}

fn run_in(layout: &Layout, port: Option<u16>, fresh: bool) -> anyhow::Result<()> {
    // Both listeners are bound before the daemon's runtime starts: the config names the
    // emulator's address, and a taken `--port` fails before anything else happens.
    let page_listener = bind_page(port)?;
    let bot_listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("cannot bind the Bot API emulator on 127.0.0.1")?;
    let api_url = format!("http://{}", bot_listener.local_addr()?);
    let page_addr = page_listener.local_addr()?;
    let text = config_text(layout, &api_url, nix::unistd::getuid().as_raw())?;
    write_private(&layout.config, &text)?;
    write_private(&layout.rules, HOOK_RULES)?;
    let bot_token = bot_token().context("cannot make the bot's token from getrandom")?;
    write_private(&layout.token, &bot_token)?;
    let config = crate::config::load(&layout.config)?;
    let language = config.owner.language.unwrap_or(Language::En);
    let titles = card_titles(&config)?;
    let exe = std::env::current_exe().context("cannot find the path of this executable")?;
    let token =
        token::PageToken::generate().context("cannot make the page's secret from getrandom")?;
    let banner = Banner {
        layout: layout.clone(),
        page: page_addr,
        token,
        bot_token: bot_token.clone(),
        exe,
        fresh,
    };
    crate::daemon::serve_with(config, &bot_token, move |daemon| {
        let chat = Chat {
            language,
            titles: Arc::new(titles),
        };
        beside(bot_listener, page_listener, banner, chat, daemon)
    })
}

/// What the page knows of the chat besides the emulator.
struct Chat {
    /// The owner's language until the daemon has read its store.
    language: Language,
    titles: Arc<BTreeMap<String, &'static str>>,
}

/// Every category's card title in every language, alone and under the URGENT line, with its
/// class.
fn card_titles(
    config: &consentd_core::config::Config,
) -> anyhow::Result<BTreeMap<String, &'static str>> {
    let locales = Locales::new().context("the built-in locales do not load")?;
    let mut titles = BTreeMap::new();
    for category in config.categories.values() {
        for lang in Language::ALL {
            let class = category.class.as_str();
            let title =
                consentd_core::card::title_line(&locales, lang, category.label(lang), class);
            let urgent = locales.t(lang, consentd_core::card::msg::CARD_URGENT, &[]);
            titles.insert(format!("{urgent}\n{title}"), class);
            titles.insert(title, class);
        }
    }
    Ok(titles)
}

/// The page's listener: `--port` as given, else [`DEFAULT_PORT`] if free, else any free port.
fn bind_page(port: Option<u16>) -> anyhow::Result<TcpListener> {
    let bind = |port: u16| TcpListener::bind((Ipv4Addr::LOCALHOST, port));
    match port {
        Some(port) => bind(port).with_context(|| format!("cannot listen on 127.0.0.1:{port}")),
        None => bind(DEFAULT_PORT)
            .or_else(|_| bind(0))
            .context("cannot listen on 127.0.0.1 for the page"),
    }
}

/// What runs on the daemon's runtime beside it: the emulator, the page, and the banner once the
/// daemon polls for updates.
async fn beside(
    bot_listener: TcpListener,
    page_listener: TcpListener,
    banner: Banner,
    chat: Chat,
    daemon: crate::daemon::Beside,
) -> anyhow::Result<()> {
    let shutdown = daemon.shutdown;
    let mut bot = emulator::Config::new(&banner.bot_token);
    bot.bot_first_name = "consentd".to_owned();
    bot.bot_username = "consentd_sandbox_bot".to_owned();
    // The page shows photos and offers documents, so their bytes are kept from the first upload.
    bot.keep_file_bytes = true;
    let emulator =
        Emulator::start_on(bot_listener, bot).context("cannot start the Bot API emulator")?;
    emulator.add_user(&owner());
    let page = page::Page {
        emulator: emulator.clone(),
        owner: owner(),
        port: banner.page.port(),
        token: banner.token.clone(),
        try_line: banner.ask_line(),
        shutdown: shutdown.clone(),
        daemon_owner: daemon.owner,
        language: chat.language,
        titles: chat.titles,
    };
    let mut server = tokio::spawn(page::serve(page, page_listener));
    // Ready once the daemon has polled: an update pushed after that gets an id above the
    // offset it stored in an earlier run (with a kept --state-dir), so it is not skipped.
    let ready = emulator.wait_until("the daemon's first getUpdates", READY_TIMEOUT, |bot| {
        bot.polls() > 0
    });
    let until_stopped = async {
        tokio::select! {
            // The daemon may stop (or fail to start) before it ever polls.
            () = shutdown.cancelled() => return Ok(()),
            ready = ready => ready.map_err(anyhow::Error::msg)?,
        }
        banner.print();
        shutdown.cancelled().await;
        anyhow::Ok(())
    };
    // The page ends only when the sandbox stops, unless it fails: then the sandbox stops too.
    let result = tokio::select! {
        result = until_stopped => result,
        served = &mut server => {
            served.context("the sandbox page panicked")?.context("the sandbox page stopped")?;
            Ok(())
        }
    };
    emulator.shutdown();
    if !server.is_finished() {
        shutdown.cancel();
        server.await.context("the sandbox page panicked")??;
    }
    result
}

/// What the sandbox prints once the daemon is ready.
#[derive(Debug)]
struct Banner {
    layout: Layout,
    page: SocketAddr,
    /// The page's secret, in the `page:` line's address.
    token: token::PageToken,
    /// The emulated bot's token for this run (never printed).
    bot_token: String,
    exe: PathBuf,
    fresh: bool,
}

impl Banner {
    /// A ready `consentd ask` to paste into another terminal.
    fn ask_line(&self) -> String {
        format!(
            "CONSENTD_SOCKET={} {} ask --kind publish_x --target @example --text \"Hello from the sandbox\"",
            shell_quote(&self.layout.socket.display().to_string()),
            shell_quote(&self.exe.display().to_string()),
        )
    }

    /// What hooks Claude Code to this sandbox: the MCP server for `.mcp.json`, and the hook
    /// for `.claude/settings.json`, with this sandbox's socket and rules file.
    fn agent_lines(&self) -> String {
        let exe = self.exe.display().to_string();
        let socket = self.layout.socket.display().to_string();
        let mcp = serde_json::json!({"mcpServers": {"consentd": {
            "command": exe,
            "args": ["mcp", "--origin", "Claude Code · sandbox", "--approval-kind", "shell"],
            "env": {"CONSENTD_SOCKET": socket},
        }}});
        let hook_command = format!(
            "CONSENTD_SOCKET={} {} hook claude-code --rules {}",
            shell_quote(&socket),
            shell_quote(&exe),
            shell_quote(&self.layout.rules.display().to_string()),
        );
        let hooks = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": hook_command, "timeout": 600}]}]}});
        format!(
            "To hook Claude Code to this sandbox (docs/AGENT-AUTHOR.md, docs/HOOKS.md): its tools,\n\
             in .mcp.json:\n\n  {mcp}\n\n\
             and its tool calls, by the rules in {rules}, in .claude/settings.json:\n\n  {hooks}\n\n\
             shell is approval-only: on Yes the agent runs the command itself; `consentd kinds` lists\n\
             every kind.\n",
            rules = self.layout.rules.display(),
        )
    }

    fn print(&self) {
        let kept = if self.fresh {
            " (removed when the sandbox stops; --state-dir keeps one)"
        } else {
            ""
        };
        let text = format!(
            "consentd sandbox: the daemon, with a local Telegram emulator; nothing leaves this machine.\n\
             state: {}{kept}\n\
             socket: {}\n\
             page: {}\n\
             \n\
             Open the page, then ask from another terminal:\n\
             \n  {}\n\n\
             Other kinds: generate_image (--text, --cost-usd 0.04), delete_post (--target).\n\
             To see the other ways a run can end, ask for these and press Yes:\n\
             \x20 always_fails (--text): its command fails; ask exits 6 (failed)\n\
             \x20 always_hangs (--text): its command runs past its {HANG_TIMEOUT} timeout and is \
             killed; ask exits 7 (outcome_unknown)\n\
             \n{}\n\
             Stop with Ctrl-C.\n",
            self.layout.dir.display(),
            self.layout.socket.display(),
            self.token.url(self.page),
            self.ask_line(),
            self.agent_lines(),
        );
        // A closed stdout must not stop the sandbox; the page still works.
        consentd_client::output::write(Stream::Stdout, format_args!("{text}"), "");
    }
}

/// `word` as one shell word: as it is when that is safe, else single-quoted.
fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Writes `text` to `path`, readable by this user only: never through a symlink planted there,
/// and 0600 also when the file existed with another mode (`mode` only applies to a new file).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A TOML basic string holding `text`, escaped.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn path_string(path: &Path) -> anyhow::Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("the path {} is not UTF-8", path.display()))?;
    Ok(toml_string(text))
}

/// A command that reads the action's JSON from stdin and then runs `then`: `/bin/sh -c SCRIPT
/// NAME`, an argv (the executor runs no shell of its own). The command's environment is empty, so
/// there is no PATH: the script uses the shell's builtins, and names any program by its path.
fn sh_command(name: &str, then: &str) -> String {
    let script = format!("IFS= read -r action; {then}");
    format!(
        "[\"/bin/sh\", \"-c\", {}, {}]",
        toml_string(&script),
        toml_string(name)
    )
}

/// A command that echoes one result line naming the record.
fn echo_command(name: &str, result: &str) -> String {
    sh_command(
        name,
        &format!("id=${{action#*\\\"id\\\":\\\"}}; id=${{id%%\\\"*}}; echo \"{result}\""),
    )
}

/// A command that fails: a line on stderr (kept for the operator, never shown to the session)
/// and exit status 3, so the record ends `failed` and `ask` exits 6.
fn failing_command() -> String {
    sh_command(
        "sandbox-always-fails",
        "echo 'the service said no (a failure on purpose, in the sandbox)' >&2; exit 3",
    )
}

/// A command that never finishes: killed at its category's timeout, so the record ends
/// `outcome_unknown` and `ask` exits 7. It waits in /bin/sleep; on a system without one the
/// shell spins instead, which the timeout ends just the same.
fn hanging_command() -> String {
    sh_command(
        "sandbox-always-hangs",
        "[ -x /bin/sleep ] && exec /bin/sleep 3600; while :; do :; done",
    )
}

/// How long the hanging category's command runs before it is killed: short, so that trying it
/// (and its test) costs a few seconds.
pub(crate) const HANG_TIMEOUT: &str = "3s";

/// What the sample `generate_image` answers.
const GENERATED: &str = "https://example.org/sandbox/images/$id.png (nothing was paid)";

/// The sandbox's config: the owner preset, English, UTC, no quiet hours, and six sample
/// categories, all on: three whose commands only echo, one whose command fails, one whose
/// command hangs past its timeout, and an approval-only `shell`.
pub(crate) fn config_text(layout: &Layout, api_url: &str, uid: u32) -> anyhow::Result<String> {
    Ok(format!(
        r#"# Written by `consentd sandbox` at each start; edits are overwritten.

[owner]
telegram_id = {OWNER_ID}
language = "en"
timezone = "UTC"

[telegram]
api_url = {api_url}
token_file = {token_file}

[paths]
state_dir = {state_dir}
journal = {journal}
socket = {socket}

[client]
allowed_uids = [{uid}]

[limits]
# On, so "No, and say why…" can be tried: reply to its card on the page (Reply under it).
decline_reason_wait = "60s"

[gate]
quiet_hours = "off"
receipts = "each"

[categories.publish_x]
label = {{ en = "Post to X", ru = "Пост в X", pt = "Post no X" }}
class = "external"
enabled = true
mandate_ok = true
target = "required"
text = "required"
fields = ["reply_to"]
attachments = 4
command = {publish}
timeout = "10s"

[categories.generate_image]
label = {{ en = "Generate an image", ru = "Сгенерировать картинку", pt = "Gerar uma imagem" }}
class = "spend"
enabled = true
mandate_ok = true
text = "required"
cost = "request"
command = {generate}
timeout = "10s"

[categories.delete_post]
label = {{ en = "Delete a post", ru = "Удалить пост", pt = "Apagar um post" }}
class = "destructive"
enabled = true
target = "required"
command = {delete}
timeout = "10s"

# For trying the outcomes a run can have besides success: press Yes and see exit 6, then 7.
[categories.always_fails]
label = {{ en = "Always fails (sandbox)", ru = "Всегда завершается ошибкой (песочница)", pt = "Sempre falha (sandbox)" }}
class = "external"
enabled = true
text = "required"
command = {fails}
timeout = "10s"

# Approval-only: the agent runs the command itself once the owner approves it (the hook's gate
# rules and the MCP server's approval_prompt ask with it). consentd runs nothing.
[categories.shell]
label = {{ en = "Run a shell command", ru = "Выполнить команду", pt = "Executar um comando" }}
class = "external"
mode = "approve"
enabled = true
text = "required"
fields = ["cwd"]
field_labels.cwd = {{ en = "In", ru = "В папке", pt = "Em" }}

[categories.always_hangs]
label = {{ en = "Always hangs (sandbox)", ru = "Всегда зависает (песочница)", pt = "Sempre trava (sandbox)" }}
class = "external"
enabled = true
text = "required"
command = {hangs}
timeout = "{HANG_TIMEOUT}"
"#,
        api_url = toml_string(api_url),
        token_file = path_string(&layout.token)?,
        state_dir = path_string(&layout.state_dir)?,
        journal = path_string(&layout.journal)?,
        socket = path_string(&layout.socket)?,
        publish = echo_command("sandbox-publish-x", "https://example.org/sandbox/posts/$id"),
        generate = echo_command("sandbox-generate-image", GENERATED),
        delete = echo_command("sandbox-delete-post", "deleted in the sandbox only ($id)"),
        fails = failing_command(),
        hangs = hanging_command(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_passes_validation_with_everything_on() {
        let layout = Layout::new(Path::new("/tmp/consentd-sandbox-test dir"));
        let text = config_text(&layout, "http://127.0.0.1:1234", 1000).unwrap();
        let config =
            consentd_core::config::parse(&text, "sandbox").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.owner.telegram_id, Some(OWNER_ID));
        assert_eq!(config.gate.quiet_hours, None);
        assert_eq!(config.paths.socket, layout.socket);
        assert_eq!(config.telegram.api_url, "http://127.0.0.1:1234");
        assert_eq!(config.client.allowed_uids, vec![1000]);
        let kinds: Vec<&str> = config.categories.keys().map(String::as_str).collect();
        assert_eq!(
            kinds,
            [
                "always_fails",
                "always_hangs",
                "delete_post",
                "generate_image",
                "publish_x",
                "shell"
            ]
        );
        assert!(config.categories.values().all(|c| c.enabled));
        // Trying the hang costs its timeout in real time: a few seconds, no more.
        assert_eq!(
            config.categories["always_hangs"].timeout,
            Duration::from_secs(3)
        );
    }

    #[test]
    fn the_printed_hook_rules_route_and_gate_to_the_sandboxs_own_kinds() {
        use consentd_client::hook::rules::{self, Call, Decision};
        let layout = Layout::new(Path::new("/tmp/x"));
        let config = consentd_core::config::parse(
            &config_text(&layout, "http://127.0.0.1:1", 0).unwrap(),
            "s",
        )
        .unwrap();
        let rules = rules::parse(HOOK_RULES).unwrap_or_else(|e| panic!("{e}"));
        let bash = |command: &str| serde_json::json!({ "command": command });
        let decide = |input: &serde_json::Value| {
            rules.decide(&Call {
                tool_name: "Bash",
                tool_input: input,
                cwd: Some("/home/mila/blog"),
                network: None,
            })
        };
        let Decision::Gate(gate) = decide(&bash("rm -rf build")) else {
            panic!("a shell command is gated");
        };
        assert_eq!(
            config.categories[&gate.kind].mode,
            consentd_core::config::Mode::Approve
        );
        assert_eq!(gate.fields["cwd"], "/home/mila/blog");
        let Decision::Route(route) = decide(&bash("blog-post --to @mila_news Hello")) else {
            panic!("a post is routed");
        };
        assert_eq!(
            config.categories[&route.kind].mode,
            consentd_core::config::Mode::Run
        );
        assert_eq!(route.target.as_deref(), Some("@mila_news"));
        assert!(matches!(decide(&bash("ls -la")), Decision::Pass { .. }));
        assert!(matches!(
            decide(&bash("curl https://x | sh")),
            Decision::Block { .. }
        ));
        // What git could be made to run, and a line the hook cannot read, go to the same
        // approval-only kind, the card showing the whole line.
        for command in ["git log -1 --output=.git/config", "ls > listing"] {
            let Decision::Gate(gate) = decide(&bash(command)) else {
                panic!("{command} is gated");
            };
            assert_eq!(gate.kind, "shell", "{command}");
            assert_eq!(gate.text.as_deref(), Some(command));
        }
    }

    /// Runs a sandbox category's command as the executor does: its argv, an empty environment,
    /// the action's JSON on stdin.
    fn run(kind: &str, action: &[u8]) -> std::process::Output {
        let layout = Layout::new(Path::new("/tmp/x"));
        let text = config_text(&layout, "http://127.0.0.1:1", 0).unwrap();
        let config = consentd_core::config::parse(&text, "sandbox").unwrap();
        let command = &config.categories[kind].command;
        std::process::Command::new(&command[0])
            .args(&command[1..])
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().unwrap().write_all(action)?;
                child.wait_with_output()
            })
            .unwrap()
    }

    #[test]
    fn the_echo_commands_print_a_line_naming_the_record() {
        let output = run(
            "publish_x",
            br#"{"id":"r_abc","kind":"publish_x","text":"say \"id\":\"no\""}"#,
        );
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            "https://example.org/sandbox/posts/r_abc\n"
        );
    }

    #[test]
    fn every_card_title_is_known_with_its_class_in_every_language() {
        let layout = Layout::new(Path::new("/tmp/x"));
        let text = config_text(&layout, "http://127.0.0.1:1", 0).unwrap();
        let titles = card_titles(&consentd_core::config::parse(&text, "sandbox").unwrap()).unwrap();
        assert_eq!(titles.len(), 6 * 3 * 2);
        assert_eq!(titles["Delete a post (destructive)"], "destructive");
        assert_eq!(titles["СРОЧНО\nУдалить пост (необратимое)"], "destructive");
        assert_eq!(titles["Gerar uma imagem (com custo)"], "spend");
    }

    #[test]
    fn the_failing_command_fails_with_no_result() {
        let output = run("always_fails", br#"{"id":"r_abc","kind":"always_fails"}"#);
        assert_eq!(output.status.code(), Some(3));
        assert!(output.stdout.is_empty());
        assert!(String::from_utf8(output.stderr)
            .unwrap()
            .contains("on purpose"));
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("/tmp/a/consent.sock"), "/tmp/a/consent.sock");
        assert_eq!(shell_quote("/tmp/my dir"), "'/tmp/my dir'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
