//! The `consentd` command line. Parses arguments, runs a subcommand, maps its result to the exit
//! code docs/PROTOCOL.md ("The command line") names.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use base64::Engine as _;
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};

use crate::client::{self, OnInterrupt};
use crate::config::{self, ConfigError};
use crate::output::{errln, outln};
use crate::preflight;
use session::{ask, kinds, list, status, withdraw};

mod journal_cli;
mod session;

/// Exit code: could not talk to the daemon, or an internal error.
const EXIT_ERROR: u8 = 1;
/// Exit code: a usage error.
const EXIT_USAGE: u8 = 2;

/// The exit codes of a record's final states, shared by `ask` and `status` (docs/PROTOCOL.md).
macro_rules! final_exit_codes {
    () => {
        "  3  refused before any card (the reason code is printed)\n\
         \x20 4  declined by the owner\n\
         \x20 5  expired: the owner did not answer in time\n\
         \x20 6  the action ran and failed\n\
         \x20 7  outcome unknown: it may or may not have run; it is never run again\n"
    };
}

const ASK_EXIT_CODES: &str = concat!(
    "Exit codes:\n",
    "  0  executed (the result, if any, is on stdout), or approved for an approval-only kind\n",
    "  1  could not talk to consentd, or an internal error\n",
    "  2  usage error\n",
    final_exit_codes!(),
    "  8  pending (with --no-wait, or Ctrl-C with --keep-open; the record's id is on stdout)\n",
    "  9  withdrawn (Ctrl-C while waiting withdraws the ask unless --keep-open)"
);

const WITHDRAW_EXIT_CODES: &str = "Exit codes:
  9  withdrawn: the card says the agent took it back; nothing runs
  1  could not talk to consentd, or no such record of yours
  2  usage error
  3  refused: the owner already answered it, or it is running or over (not_withdrawable)";

const MANDATE_EXIT_CODES: &str = "Exit codes:
  0  granted: the mandate is open (its id is on stdout)
  1  could not talk to consentd, or an internal error
  2  usage error
  3  refused before any card (the reason code is printed; mandate_terms for the terms)
  4  declined by the owner
  5  expired: the owner did not answer in time
  8  pending (only with --no-wait; the request's id is on stdout)";

const STATUS_EXIT_CODES: &str = concat!(
    "Exit codes, as ask's for the record's state:\n",
    "  0  executed, approved (an approval-only kind), or a granted mandate\n",
    "  1  could not talk to consentd, or no such record of yours\n",
    "  2  usage error\n",
    final_exit_codes!(),
    "  8  still open: pending, card shown, granted but not yet run, or running\n",
    "  9  withdrawn by the agent"
);

const CHECK_CONFIG_AFTER: &str = "\
Besides the file's own rules it checks what `serve` checks on this machine, as whoever runs it:
the bot token (telegram.token_file, else $CONSENTD_BOT_TOKEN in this environment), that run_as
has root, and for each category that is on its command, run_as user and env_file. For a category
that is off these are notes. Run it as the daemon's user, with the daemon's environment, to check
what the daemon will find.

Exit codes: 0 ok (notes may follow), 1 a problem (each printed as KEY: MESSAGE), 2 usage error";

#[derive(Debug, Parser)]
#[command(
    name = "consentd",
    version,
    about = "The owner's consent, between an AI agent and the outside world"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the daemon
    Serve {
        /// The config file (TOML); `check-config` checks it first
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Ask for one action and wait for its outcome
    #[command(after_help = ASK_EXIT_CODES)]
    Ask(AskArgs),
    /// Ask for a standing permission and wait for the owner's answer
    #[command(after_help = MANDATE_EXIT_CODES)]
    Mandate(MandateArgs),
    /// Show one of your records; exits with ask's code for its state
    #[command(after_help = STATUS_EXIT_CODES)]
    Status {
        /// The record's id (r_…), as ask printed it
        id: String,
        /// Wait until the record reaches a final state
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// List your records, newest first
    List {
        /// Start after this point: the cursor the previous page printed
        #[arg(long, value_name = "C")]
        cursor: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// List the kinds of action you may ask for, and what each takes
    Kinds {
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Take back one of your asks the owner has not answered yet
    #[command(after_help = WITHDRAW_EXIT_CODES)]
    Withdraw {
        /// The record's id (r_…), as ask printed it
        id: String,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Serve MCP on stdin and stdout: the agent's tools for asking the owner (one line in
    /// an MCP client's config; see docs/AGENT-AUTHOR.md)
    Mcp(crate::mcp::McpArgs),
    /// Check, read or seal the decisions journal
    #[command(subcommand)]
    Journal(journal_cli::JournalCommand),
    /// Print a one-time pairing code, its t.me link and a QR code
    Pair {
        /// The running daemon's config file
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Validate a config file and its categories, and that this machine can serve it
    #[command(after_help = CHECK_CONFIG_AFTER)]
    CheckConfig {
        /// The config file (TOML)
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Check only the file's own rules, not this machine: for a config written for another
        #[arg(long)]
        file_only: bool,
    },
    /// Check a whole setup: config, token and webhook, owner, journal, modes, the socket, and
    /// the agents' hooks and MCP entries; one line each, OK or what to do
    #[command(after_help = crate::doctor::DOCTOR_AFTER)]
    Doctor(crate::doctor::DoctorArgs),
    /// An agent's permission hook: route, gate, pass or block its tool calls by a rules file
    #[command(subcommand)]
    Hook(crate::hook::HookCommand),
    /// Try consentd with no bot: the daemon against a local Telegram emulator, with the
    /// owner's chat as a web page on 127.0.0.1
    #[cfg(feature = "sandbox")]
    Sandbox {
        /// The page's port (default 8340, or any free port when that is taken; 0 for any)
        #[arg(long, value_name = "P")]
        port: Option<u16>,
        /// Keep the state here (default: a fresh temp dir, removed at the end)
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct CommonArgs {
    /// Print the daemon's final response object as the last line on stdout
    #[arg(long)]
    json: bool,
    /// The daemon's socket (default: $CONSENTD_SOCKET, else /run/consentd/consent.sock)
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct AskArgs {
    /// The kind of action: a category of the owner's config (a refusal lists them)
    #[arg(long, value_name = "K")]
    kind: String,
    /// Where it goes (an account, an address), if the category takes one
    #[arg(long, value_name = "T")]
    target: Option<String>,
    /// Read the text from a file (UTF-8, byte for byte: a final newline is refused)
    #[arg(long, value_name = "F", conflicts_with = "text")]
    text_file: Option<PathBuf>,
    /// The text the owner approves, exactly as it will be used
    #[arg(long, value_name = "S")]
    text: Option<String>,
    /// An extra field the card shows, NAME=VALUE (repeat for more)
    #[arg(long = "field", value_name = "NAME=VALUE")]
    fields: Vec<String>,
    /// What it costs in US dollars, at most 2 decimals (0.04), if the category asks for it
    #[arg(long, value_name = "D")]
    cost_usd: Option<String>,
    /// A file to attach (repeat, up to the category's number)
    #[arg(long = "attach", value_name = "PATH")]
    attachments: Vec<PathBuf>,
    /// Your name for this action: asked again with it, the same action joins its record
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    /// Show the card with sound even in the owner's quiet hours
    #[arg(long)]
    urgent: bool,
    /// A short line the card shows saying who asks (for example "nightly build · ~/src/blog")
    #[arg(long, value_name = "S")]
    origin: Option<String>,
    /// Give up after this many seconds if the owner has not answered (at most the owner's
    /// card time)
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<u64>,
    /// On Ctrl-C while waiting, leave the ask open for the owner instead of withdrawing it
    #[arg(long)]
    keep_open: bool,
    /// Return at once with the record's id (exit 8 while it is pending)
    #[arg(long)]
    no_wait: bool,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct MandateArgs {
    /// The kind of action it covers: a category of the owner's config
    #[arg(long, value_name = "K")]
    kind: String,
    /// A target the mandate covers, named exactly (repeat for more). Required for a kind with a
    /// target; left out for a kind with none, whose mandate then covers it for any use
    #[arg(long = "target", value_name = "T")]
    targets: Vec<String>,
    /// How many days it lasts (at most 7)
    #[arg(long, value_name = "N")]
    days: u64,
    /// The most it may spend a day, in US dollars (at most 10.00). Required for a kind that
    /// costs money; left out (or 0.00) for a kind that never does
    #[arg(long, value_name = "D")]
    usd_per_day: Option<String>,
    /// The most actions it may run a day
    #[arg(long, value_name = "N")]
    actions_per_day: u64,
    /// Why, in a line the owner reads on the card
    #[arg(long, value_name = "S")]
    reason: Option<String>,
    /// Return at once with the request's id (exit 8 while it is pending)
    #[arg(long)]
    no_wait: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl MandateArgs {
    fn request(&self) -> Value {
        let mut request = json!({
            "v": 1,
            "op": "mandate",
            "kind": self.kind,
            "targets": self.targets,
            "days": self.days,
            "actions_per_day": self.actions_per_day,
            "wait": !self.no_wait,
        });
        if let Some(usd) = &self.usd_per_day {
            request["usd_per_day"] = json!(usd);
        }
        if let Some(reason) = &self.reason {
            request["reason"] = json!(reason);
        }
        request
    }
}

/// Runs the command line and returns the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            init_logging("info");
            report(crate::daemon::serve(&config).map(|()| 0))
        }
        #[cfg(feature = "sandbox")]
        Command::Sandbox { port, state_dir } => {
            // The sandbox's terminal is for its own lines; the daemon's log shows only trouble.
            init_logging("warn");
            report(crate::sandbox::run(port, state_dir).map(|()| 0))
        }
        Command::CheckConfig { file, file_only } => check_config(&file, file_only),
        Command::Hook(hook) => crate::hook::main(hook),
        Command::Doctor(args) => crate::doctor::main(args),
        Command::Pair { config } => report(with_runtime(async move {
            let pairing = crate::pair::pair(&config).await?;
            outln!("{}", pairing.qr);
            outln!("code: {}", pairing.code);
            outln!("link: {}", pairing.link);
            outln!(
                "Send /start {} to the bot from your own Telegram account (or open the link) before {} UTC. The code works once.",
                pairing.code,
                pairing.expires_at.format("%H:%M")
            );
            Ok(0)
        })),
        Command::Journal(command) => journal_cli::run(command),
        Command::Kinds { common } => report(with_runtime(kinds(common))),
        Command::Withdraw { id, common } => {
            let request = json!({"v": 1, "op": "withdraw", "id": id});
            report(with_runtime(withdraw(common, request)))
        }
        Command::Mcp(args) => report(with_runtime(async move {
            crate::mcp::serve(args.into_options()).await?;
            Ok(0)
        })),
        Command::Ask(args) => match ask_request(&args) {
            Ok(request) => {
                let on_interrupt = if args.keep_open {
                    OnInterrupt::KeepOpen
                } else {
                    OnInterrupt::Withdraw
                };
                report(with_runtime(ask(args.common, request, on_interrupt)))
            }
            Err(error) => {
                errln!("consentd ask: {error:#}");
                ExitCode::from(EXIT_USAGE)
            }
        },
        Command::Mandate(args) => {
            let request = args.request();
            report(with_runtime(ask(
                args.common,
                request,
                OnInterrupt::KeepOpen,
            )))
        }
        Command::Status { id, wait, common } => {
            let request = json!({"v": 1, "op": "status", "id": id, "wait": wait});
            report(with_runtime(status(common, request)))
        }
        Command::List { cursor, common } => {
            let request = json!({"v": 1, "op": "list", "cursor": cursor});
            report(with_runtime(list(common, request)))
        }
    }
}

fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONSENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

fn report(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            errln!("consentd: {error:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn with_runtime<T>(
    future: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(future)
}

fn check_config(file: &Path, file_only: bool) -> ExitCode {
    let (loaded, notes) = if file_only {
        (config::load(file), Vec::new())
    } else {
        preflight::load_on_machine(file, true)
    };
    // Whom the machine was checked as: another user (the daemon's) may find other answers.
    let checked = if file_only {
        "the file alone: the token, commands, run_as users and env_files were not checked"
            .to_owned()
    } else {
        format!(
            "the token, commands, run_as users and env_files as {} finds them, with this \
             environment; the daemon's user may find otherwise",
            preflight::whoami()
        )
    };
    match loaded {
        Ok(config) => {
            outln!("{}", config.summary());
            for note in &notes {
                outln!("note: {note}");
            }
            outln!("checked: {checked}");
            ExitCode::SUCCESS
        }
        Err(ConfigError::Invalid { problems, .. }) => {
            for problem in &problems {
                outln!("{problem}");
            }
            for note in &notes {
                outln!("note: {note}");
            }
            outln!("checked: {checked}");
            errln!(
                "{}: {} problem{}",
                file.display(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            );
            ExitCode::from(EXIT_ERROR)
        }
        Err(error) => {
            errln!("consentd: {error}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Builds the ask's request object from the arguments, reading the text and attachment files.
fn ask_request(args: &AskArgs) -> anyhow::Result<Value> {
    let mut request = Map::new();
    request.insert("v".into(), json!(1));
    request.insert("op".into(), json!("ask"));
    request.insert("kind".into(), json!(args.kind));
    if let Some(target) = &args.target {
        request.insert("target".into(), json!(target));
    }
    let text = match (&args.text, &args.text_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(path)) => {
            let bytes = crate::client::read_named_file(path)
                .with_context(|| format!("--text-file {}", path.display()))?;
            Some(String::from_utf8(bytes).map_err(|error| {
                anyhow::anyhow!(
                    "--text-file {}: not UTF-8 (invalid byte at offset {})",
                    path.display(),
                    error.utf8_error().valid_up_to()
                )
            })?)
        }
        (None, None) => None,
    };
    if let Some(text) = text {
        request.insert("text".into(), json!(text));
    }
    let mut fields = Map::new();
    for field in &args.fields {
        let Some((name, value)) = field.split_once('=') else {
            anyhow::bail!("--field {field:?}: expected NAME=VALUE");
        };
        if fields.insert(name.to_owned(), json!(value)).is_some() {
            anyhow::bail!("--field {name}: given twice");
        }
    }
    if !fields.is_empty() {
        request.insert("fields".into(), Value::Object(fields));
    }
    if let Some(cost) = &args.cost_usd {
        request.insert("cost_usd".into(), json!(cost));
    }
    if let Some(origin) = &args.origin {
        request.insert("origin".into(), json!(origin));
    }
    if let Some(ttl) = args.ttl {
        request.insert("ttl".into(), json!(ttl));
    }
    let mut attachments = Vec::new();
    for path in &args.attachments {
        let data = crate::client::read_named_file(path)
            .with_context(|| format!("--attach {}", path.display()))?;
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .with_context(|| format!("--attach {}: the file name is not UTF-8", path.display()))?;
        attachments.push(json!({
            "name": name,
            "media_type": client::guess_media_type(path),
            "data_b64": base64::engine::general_purpose::STANDARD.encode(data),
        }));
    }
    if !attachments.is_empty() {
        request.insert("attachments".into(), Value::Array(attachments));
    }
    if let Some(key) = &args.idempotency_key {
        request.insert("idempotency_key".into(), json!(key));
    }
    request.insert("urgent".into(), json!(args.urgent));
    request.insert("wait".into(), json!(!args.no_wait));
    Ok(Value::Object(request))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    /// Every subcommand, nested ones included, with its path (`journal verify`).
    fn subcommands(command: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            let name = format!("{path} {}", sub.get_name()).trim().to_owned();
            out.push((name.clone(), sub.clone()));
            subcommands(sub, &name, out);
        }
    }

    #[test]
    fn every_subcommand_and_every_argument_is_described() {
        let mut all = Vec::new();
        subcommands(&Cli::command(), "", &mut all);
        assert!(all.len() >= 11, "{}", all.len());
        for (name, command) in &all {
            assert!(command.get_about().is_some(), "{name} has no description");
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                assert!(!help.trim().is_empty(), "{name} {id} has no description");
            }
        }
    }

    #[test]
    fn ask_mandate_and_status_list_their_exit_codes() {
        for (text, codes) in [
            (ASK_EXIT_CODES, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9][..]),
            (STATUS_EXIT_CODES, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9][..]),
            (MANDATE_EXIT_CODES, &[0, 1, 2, 3, 4, 5, 8][..]),
            (WITHDRAW_EXIT_CODES, &[9, 1, 2, 3][..]),
        ] {
            let listed: Vec<u8> = text
                .lines()
                .skip(1)
                .map(|line| {
                    line.trim_start()
                        .split(' ')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap()
                })
                .collect();
            assert_eq!(listed, codes, "{text}");
        }
    }
}
