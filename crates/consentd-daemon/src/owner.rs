//! The owner's state: who they are once known, their category switches and the gate's settings
//! as they last set them — one value the consent loop (which changes it) and the intake (which
//! reads it) share, and the language they read. A category's Off is set here just before the
//! store keeps it, an On once kept (`consent::owner_text`). Below
//! both, so the intake never depends on the consent loop.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use consentd_core::config::{Config, Gate};
use consentd_core::locale::Language;

/// The owner, once known: from the config, or paired. Public because the sandbox's page, in the
/// same crate's public surface, reads it through [`OwnerState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub id: i64,
    pub language: Language,
}

/// What the owner has made of the daemon, in memory, as the store last kept it. Each part has
/// its own lock, held only for a read or a write, never across an await.
#[derive(Debug, Default)]
pub struct OwnerState {
    owner: RwLock<Option<Owner>>,
    switches: RwLock<BTreeMap<String, bool>>,
    gate: RwLock<Gate>,
}

/// The owner's state as the intake, the consent loop and the sandbox's page share it.
pub type SharedOwner = Arc<OwnerState>;

impl OwnerState {
    /// The owner, once known.
    pub fn owner(&self) -> Option<Owner> {
        *self.owner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The owner from now on (at start, and when someone pairs).
    pub(crate) fn set_owner(&self, owner: Option<Owner>) {
        *self.owner.write().unwrap_or_else(|p| p.into_inner()) = owner;
    }

    /// The language the owner chose (`/lang`), once they are known.
    pub(crate) fn set_language(&self, language: Language) {
        if let Some(owner) = self
            .owner
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            owner.language = language;
        }
    }

    /// The language the owner reads: theirs once known, else the config's (else English).
    pub(crate) fn language(&self, config: &Config) -> Language {
        self.owner()
            .map_or_else(|| owner_language(config, None), |owner| owner.language)
    }

    /// Whether `kind` is on, by the one rule (`consentd_core::config::category_enabled`).
    pub(crate) fn category_enabled(&self, config: &Config, kind: &str) -> bool {
        let switches = self.switches.read().unwrap_or_else(|p| p.into_inner());
        consentd_core::config::category_enabled(
            config.categories.get(kind),
            switches.get(kind).copied(),
        )
    }

    /// The owner's switches, replaced whole (at start, from the store).
    pub(crate) fn set_switches(&self, switches: BTreeMap<String, bool>) {
        *self.switches.write().unwrap_or_else(|p| p.into_inner()) = switches;
    }

    /// One switch flipped by the owner: Off before the store keeps it, On after
    /// (`consent::owner_text`, `switch_category`).
    pub(crate) fn set_switch(&self, kind: String, on: bool) {
        self.switches
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kind, on);
    }

    /// The gate's settings as the owner last set them.
    pub(crate) fn gate(&self) -> Gate {
        self.gate.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the gate's settings (at start, and by an owner's command).
    pub(crate) fn change_gate(&self, change: impl FnOnce(&mut Gate)) {
        change(&mut self.gate.write().unwrap_or_else(|p| p.into_inner()));
    }
}

/// The language the owner reads: the config's, else their Telegram language, else English.
pub(crate) fn owner_language(config: &Config, telegram_code: Option<&str>) -> Language {
    config
        .owner
        .language
        .or_else(|| telegram_code.and_then(Language::from_code))
        .unwrap_or(Language::En)
}
