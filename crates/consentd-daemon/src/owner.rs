//! The owner: who they are once known, the cell the consent loop (which pairs) and the intake
//! (which needs to know) share, and the language they read. Below both, so the intake never
//! depends on the consent loop.

use std::sync::{Arc, RwLock};

use consentd_core::config::Config;
use consentd_core::locale::Language;

/// The owner, once known: from the config, or paired. Public, as [`OwnerCell`], because public
/// fields of `daemon::Beside` and `intake::Intake` hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub id: i64,
    pub language: Language,
}

/// The owner as shared between the loop (which pairs) and the intake (which needs to know).
pub type OwnerCell = Arc<RwLock<Option<Owner>>>;

/// The language the owner reads: the config's, else their Telegram language, else English.
pub(crate) fn owner_language(config: &Config, telegram_code: Option<&str>) -> Language {
    config
        .owner
        .language
        .or_else(|| telegram_code.and_then(Language::from_code))
        .unwrap_or(Language::En)
}
