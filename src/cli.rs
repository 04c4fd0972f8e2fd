//! The `consentd` command line's parser: the subcommands, their arguments and their help. What
//! each subcommand runs is in `cmd`, one file for each; the exit codes are docs/PROTOCOL.md's
//! ("The command line").

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use consentd_client::session;

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
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
    /// Join stdin and stdout to one connection to a socket: an SSH key's forced command on the
    /// daemon's host, for an agent on another machine (see docs/REMOTE.md)
    Bridge {
        /// The socket to join, usually a labelled one ([[listen]] socket)
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
    },
    /// Serve MCP on stdin and stdout: the agent's tools for asking the owner (one line in
    /// an MCP client's config; see docs/AGENT-AUTHOR.md)
    Mcp(consentd_client::mcp::McpArgs),
    /// Check, read or seal the decisions journal
    #[command(subcommand)]
    Journal(JournalCommand),
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
    #[command(after_help = DOCTOR_AFTER)]
    Doctor(DoctorArgs),
    /// An agent's permission hook: route, gate, pass or block its tool calls by a rules file
    #[command(subcommand)]
    Hook(consentd_client::hook::HookCommand),
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
pub(crate) struct CommonArgs {
    /// Print the daemon's final response object as the last line on stdout
    #[arg(long)]
    pub(crate) json: bool,
    /// The daemon's socket (default: $CONSENTD_SOCKET, else /run/consentd/consent.sock)
    #[arg(long, value_name = "PATH")]
    pub(crate) socket: Option<PathBuf>,
}

impl From<CommonArgs> for session::Common {
    fn from(args: CommonArgs) -> Self {
        session::Common {
            json: args.json,
            socket: args.socket,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The kind of action: a category of the owner's config (a refusal lists them)
    #[arg(long, value_name = "K")]
    pub(crate) kind: String,
    /// Where it goes (an account, an address), if the category takes one
    #[arg(long, value_name = "T")]
    pub(crate) target: Option<String>,
    /// Read the text from a file (UTF-8, byte for byte: a final newline is refused)
    #[arg(long, value_name = "F", conflicts_with = "text")]
    pub(crate) text_file: Option<PathBuf>,
    /// The text the owner approves, exactly as it will be used
    #[arg(long, value_name = "S")]
    pub(crate) text: Option<String>,
    /// An extra field the card shows, NAME=VALUE (repeat for more)
    #[arg(long = "field", value_name = "NAME=VALUE")]
    pub(crate) fields: Vec<String>,
    /// What it costs in US dollars, at most 2 decimals (0.04), if the category asks for it
    #[arg(long, value_name = "D")]
    pub(crate) cost_usd: Option<String>,
    /// A file to attach (repeat, up to the category's number)
    #[arg(long = "attach", value_name = "PATH")]
    pub(crate) attachments: Vec<PathBuf>,
    /// Your name for this action: asked again with it, the same action joins its record
    #[arg(long, value_name = "KEY")]
    pub(crate) idempotency_key: Option<String>,
    /// Show the card with sound even in the owner's quiet hours
    #[arg(long)]
    pub(crate) urgent: bool,
    /// A short line the card shows saying who asks (for example "nightly build · ~/src/blog")
    #[arg(long, value_name = "S")]
    pub(crate) origin: Option<String>,
    /// Give up after this many seconds if the owner has not answered (at most the owner's
    /// card time)
    #[arg(long, value_name = "SECONDS")]
    pub(crate) ttl: Option<u64>,
    /// On Ctrl-C while waiting, leave the ask open for the owner instead of withdrawing it
    #[arg(long)]
    pub(crate) keep_open: bool,
    /// Return at once with the record's id (exit 8 while it is pending)
    #[arg(long)]
    pub(crate) no_wait: bool,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MandateArgs {
    /// The kind of action it covers: a category of the owner's config
    #[arg(long, value_name = "K")]
    pub(crate) kind: String,
    /// A target the mandate covers, named exactly (repeat for more). Required for a kind with a
    /// target; left out for a kind with none, whose mandate then covers it for any use
    #[arg(long = "target", value_name = "T")]
    pub(crate) targets: Vec<String>,
    /// How many days it lasts (at most 7)
    #[arg(long, value_name = "N")]
    pub(crate) days: u64,
    /// The most it may spend a day, in US dollars (at most 10.00). Required for a kind that
    /// costs money; left out (or 0.00) for a kind that never does
    #[arg(long, value_name = "D")]
    pub(crate) usd_per_day: Option<String>,
    /// The most actions it may run a day
    #[arg(long, value_name = "N")]
    pub(crate) actions_per_day: u64,
    /// Why, in a line the owner reads on the card
    #[arg(long, value_name = "S")]
    pub(crate) reason: Option<String>,
    /// Return at once with the request's id (exit 8 while it is pending)
    #[arg(long)]
    pub(crate) no_wait: bool,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum JournalCommand {
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

pub(crate) const DOCTOR_AFTER: &str = "\
Checks, one line each: the config (all that check-config checks), the bot token (getMe) and
that no webhook is set, the owner paired and the last message that reached them, the journal
(from the last anchor the owner was sent; its seals with --key), the owners and modes of the
state, the socket (a `kinds` request, as the calling user), and Claude Code's and Codex's hooks
and MCP entries (installed or not; an installed one must run consentd and fail closed).
Run it as the agent's user to check the socket and the agents' settings, and as the daemon's
user to check the token, the database and the modes.

Exit codes: 0 everything is OK, 1 something is not (each line says what to do), 2 usage error";

#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// The daemon's config file (default: /etc/consentd/config.toml)
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// A verification key of the journal's seals (64 hex digits), to check them; once per key
    #[arg(long, value_name = "K0")]
    pub(crate) key: Vec<String>,
    /// Print one JSON object, {"ok": …, "checks": [{"name", "ok", "detail", "fix"}]}, for scripts
    #[arg(long)]
    pub(crate) json: bool,
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
