//! Who the emulated bot is.

use serde::{Deserialize, Serialize};

/// Who the emulated bot is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub token: String,
    pub bot_id: i64,
    pub bot_first_name: String,
    pub bot_username: String,
    /// Keep the bytes of uploaded files for [`Emulator::file_bytes`]. Off by default: tests
    /// upload many megabytes and never read them back.
    pub keep_file_bytes: bool,
}

impl Config {
    /// A bot whose id is the token's numeric prefix, as with real tokens (`123456:ABC…`), so code
    /// that reads the id from the token agrees with `getMe`.
    pub fn new(token: &str) -> Config {
        let bot_id = token
            .split(':')
            .next()
            .and_then(|prefix| prefix.parse::<i64>().ok())
            .filter(|id| *id > 0)
            .unwrap_or(1_000_001);
        Config {
            token: token.to_owned(),
            bot_id,
            bot_first_name: "Emulated Bot".to_owned(),
            bot_username: "emulated_bot".to_owned(),
            keep_file_bytes: false,
        }
    }
}
