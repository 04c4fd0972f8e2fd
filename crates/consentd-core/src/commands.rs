//! The owner's chat commands (docs/OPERATOR.md, "In the chat"), parsed as a pure function of the
//! message text. What a
//! command does is the consent loop's business; here each one is read, and a bad argument is told
//! apart from an unknown command so the owner gets that command's one-line usage. A setting's
//! command with nothing after it asks what the setting is now.

use chrono::NaiveTime;

use crate::config;
use crate::locale::Language;

/// The commands, as the bot menu lists them (without `/start`, which only pairs).
pub(crate) const MENU: [&str; 10] = [
    "pending",
    "mandates",
    "rules",
    "categories",
    "quiet",
    "nightcards",
    "summary",
    "lang",
    "anchor",
    "help",
];

/// One parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// `/start CODE` (pairing).
    Start(String),
    Pending,
    Mandates,
    /// `/rules`: the saved exact rules, each with Remove.
    Rules,
    Categories,
    /// `/quiet 23:00-08:00` or `/quiet off` (`None`).
    Quiet(Option<(NaiveTime, NaiveTime)>),
    /// `/quiet` alone: the quiet hours now.
    QuietNow,
    /// `/nightcards N`.
    NightCards(u32),
    /// `/nightcards` alone: tonight's limit now.
    NightCardsNow,
    /// `/summary HH:MM`.
    Summary(NaiveTime),
    Lang(Language),
    Anchor,
    Help,
    /// A known command with a bad argument: the owner gets its usage line.
    Usage(UsageLine),
    /// Not a command (or one this bot does not know): the owner gets one line pointing to
    /// `/help`.
    Unknown,
}

/// Which command's usage to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageLine {
    Quiet,
    /// With the config's night limit, the most `/nightcards` may set.
    NightCards {
        max: u32,
    },
    Summary,
    Lang,
    /// A command that takes no argument was given one.
    NoArgument,
}

/// Reads a message from the owner. `max_night_cards` is the config's `night_card_limit`: the
/// owner may lower it in the chat, never raise it.
pub fn parse(text: &str, max_night_cards: u32) -> ChatCommand {
    let mut words = text.split_whitespace();
    let Some(first) = words.next() else {
        return ChatCommand::Unknown;
    };
    // "/quiet@consent_bot" is how Telegram writes a command addressed to one bot in a menu.
    let name = first.split('@').next().unwrap_or(first);
    let argument: Vec<&str> = words.collect();
    let one = match argument.as_slice() {
        [one] => Some(*one),
        _ => None,
    };
    let no_argument = |command: ChatCommand| {
        if argument.is_empty() {
            command
        } else {
            ChatCommand::Usage(UsageLine::NoArgument)
        }
    };
    match name {
        "/start" => ChatCommand::Start(one.unwrap_or("").to_owned()),
        "/pending" => no_argument(ChatCommand::Pending),
        "/mandates" => no_argument(ChatCommand::Mandates),
        "/rules" => no_argument(ChatCommand::Rules),
        "/categories" => no_argument(ChatCommand::Categories),
        "/anchor" => no_argument(ChatCommand::Anchor),
        "/help" => no_argument(ChatCommand::Help),
        "/quiet" if argument.is_empty() => ChatCommand::QuietNow,
        "/nightcards" if argument.is_empty() => ChatCommand::NightCardsNow,
        "/quiet" => match one.map(config::parse_quiet_hours) {
            Some(Ok(quiet)) => ChatCommand::Quiet(quiet),
            _ => ChatCommand::Usage(UsageLine::Quiet),
        },
        "/nightcards" => match one.and_then(|n| n.parse::<u32>().ok()) {
            // Canonical digits only: "+1" and "01" are not numbers the owner typed as such.
            Some(n) if n <= max_night_cards && one == Some(n.to_string().as_str()) => {
                ChatCommand::NightCards(n)
            }
            _ => ChatCommand::Usage(UsageLine::NightCards {
                max: max_night_cards,
            }),
        },
        "/summary" => match one.and_then(config::parse_hhmm) {
            Some(at) => ChatCommand::Summary(at),
            None => ChatCommand::Usage(UsageLine::Summary),
        },
        "/lang" => match one.and_then(Language::from_code) {
            Some(lang) if one.is_some_and(|code| code.len() == 2) => ChatCommand::Lang(lang),
            _ => ChatCommand::Usage(UsageLine::Lang),
        },
        _ => ChatCommand::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hm(h: u32, m: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, m, 0).unwrap()
    }

    #[test]
    fn each_command_with_good_and_bad_arguments() {
        let night = |max| ChatCommand::Usage(UsageLine::NightCards { max });
        let cases: Vec<(&str, ChatCommand)> = vec![
            ("/pending", ChatCommand::Pending),
            ("/pending now", ChatCommand::Usage(UsageLine::NoArgument)),
            ("/mandates", ChatCommand::Mandates),
            ("/mandates@consent_bot", ChatCommand::Mandates),
            ("/rules", ChatCommand::Rules),
            ("/rules all", ChatCommand::Usage(UsageLine::NoArgument)),
            ("/categories", ChatCommand::Categories),
            ("/anchor", ChatCommand::Anchor),
            ("/anchor 5", ChatCommand::Usage(UsageLine::NoArgument)),
            ("/help", ChatCommand::Help),
            (
                "/quiet 23:00-08:00",
                ChatCommand::Quiet(Some((hm(23, 0), hm(8, 0)))),
            ),
            (
                "/quiet 13:00-14:30",
                ChatCommand::Quiet(Some((hm(13, 0), hm(14, 30)))),
            ),
            ("/quiet off", ChatCommand::Quiet(None)),
            ("/quiet", ChatCommand::QuietNow),
            ("/quiet@consent_bot", ChatCommand::QuietNow),
            ("/quiet off later", ChatCommand::Usage(UsageLine::Quiet)),
            ("/quiet 23:00", ChatCommand::Usage(UsageLine::Quiet)),
            ("/quiet 25:00-08:00", ChatCommand::Usage(UsageLine::Quiet)),
            ("/quiet 08:00-08:00", ChatCommand::Usage(UsageLine::Quiet)),
            ("/quiet 23:00 - 08:00", ChatCommand::Usage(UsageLine::Quiet)),
            ("/nightcards 0", ChatCommand::NightCards(0)),
            ("/nightcards 2", ChatCommand::NightCards(2)),
            ("/nightcards 3", night(2)),
            ("/nightcards -1", night(2)),
            ("/nightcards 01", night(2)),
            ("/nightcards two", night(2)),
            ("/nightcards", ChatCommand::NightCardsNow),
            ("/nightcards 1 2", night(2)),
            ("/summary 21:00", ChatCommand::Summary(hm(21, 0))),
            ("/summary 07:30", ChatCommand::Summary(hm(7, 30))),
            ("/summary 7:30", ChatCommand::Usage(UsageLine::Summary)),
            ("/summary 24:00", ChatCommand::Usage(UsageLine::Summary)),
            ("/summary", ChatCommand::Usage(UsageLine::Summary)),
            ("/lang ru", ChatCommand::Lang(Language::Ru)),
            ("/lang pt", ChatCommand::Lang(Language::Pt)),
            ("/lang en", ChatCommand::Lang(Language::En)),
            ("/lang de", ChatCommand::Usage(UsageLine::Lang)),
            ("/lang pt-BR", ChatCommand::Usage(UsageLine::Lang)),
            ("/lang", ChatCommand::Usage(UsageLine::Lang)),
            ("/start ABC123", ChatCommand::Start("ABC123".into())),
            ("/start", ChatCommand::Start(String::new())),
            ("/stop", ChatCommand::Unknown),
            ("hello", ChatCommand::Unknown),
            ("yes", ChatCommand::Unknown),
            ("", ChatCommand::Unknown),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text, 2), expected, "{text:?}");
        }
    }
}
