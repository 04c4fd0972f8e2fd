//! What the owner sees in the chat (docs/OPERATOR.md, "In the chat"): the card for an ask, the same
//! card edited once
//! the ask has ended, and the bot's notices and replies, each drawn as a pure function of its
//! inputs in the owner's language.
//!
//! Everything is plain text (the transport sends it with no parse mode), so a value of the action
//! needs no escaping and is shown exactly as asked: nothing is trimmed, quoted or shortened. (Only
//! an outcome's own result, reason and decider's name have caps, see [`FOOTER_ROOM`].) Every word
//! the bot itself says comes from the locale files.
//!
//! A card must stay one message: it carries the buttons, and it is later edited in place. The
//! action's text goes inside the card when it fits; otherwise it is sent before the card in
//! numbered parts (see [`crate::split`]) and the card names the part count and the text's hash.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};
use chrono_tz::Tz;

use crate::locale::{Language, Locales};
use crate::lookalike::{self, Warning};
use crate::shown::shown;
use crate::split::{self, MESSAGE_LIMIT};
use crate::styled::Styled;

mod action_card;
pub mod mandate;
pub use action_card::{shown_origin, ActionDerived, ActionShown, UNNUMBERED_RECORD};
pub mod owner;
pub mod rules;

#[cfg(test)]
mod lookalike_tests;

/// The message ids this module uses. The tests check that this list and the locale files hold
/// exactly the same ids, so no message is missing and none is left unused.
pub mod msg {
    pub(crate) const CLASS_EXTERNAL: &str = "class-external";
    pub(crate) const CLASS_SPEND: &str = "class-spend";
    pub(crate) const CLASS_DESTRUCTIVE: &str = "class-destructive";

    pub(crate) const STATE_PENDING: &str = "state-pending";
    pub(crate) const STATE_CARD_SHOWN: &str = "state-card_shown";
    pub(crate) const STATE_GRANTED: &str = "state-granted";
    pub(crate) const STATE_DECLINED: &str = "state-declined";
    pub(crate) const STATE_EXPIRED: &str = "state-expired";
    pub(crate) const STATE_REFUSED: &str = "state-refused";
    pub(crate) const STATE_RUNNING: &str = "state-running";
    pub(crate) const STATE_EXECUTED: &str = "state-executed";
    pub(crate) const STATE_FAILED: &str = "state-failed";
    pub(crate) const STATE_OUTCOME_UNKNOWN: &str = "state-outcome_unknown";
    pub(crate) const STATE_WITHDRAWN: &str = "state-withdrawn";
    pub(crate) const STATE_APPROVED: &str = "state-approved";

    pub const CARD_URGENT: &str = "card-urgent";
    pub(crate) const CARD_TITLE: &str = "card-title";
    pub(crate) const CARD_TARGET: &str = "card-target";
    pub(crate) const CARD_FIELD: &str = "card-field";
    pub(crate) const CARD_COST: &str = "card-cost";
    pub(crate) const CARD_ATTACHMENT: &str = "card-attachment";
    pub(crate) const CARD_RECORD: &str = "card-record";
    pub(crate) const CARD_ORIGIN: &str = "card-origin";
    pub(crate) const CARD_AGENT_RUNS: &str = "card-agent-runs";
    pub(crate) const CARD_HOOK: &str = "card-hook";
    pub(crate) const CARD_RULE_SAVED: &str = "card-rule-saved";
    pub(crate) const RULES_COUNT: &str = "rules-count";
    pub(crate) const RULE_ITEM: &str = "rule-item";
    pub(crate) const RULE_REMOVED: &str = "rule-removed";
    pub(crate) const STALE_RULE_REMOVED: &str = "stale-rule-removed";
    pub(crate) const STALE_FROM_BEFORE_UPGRADE: &str = "stale-from-before-upgrade";
    pub(crate) const CARD_DEADLINE: &str = "card-deadline";
    pub(crate) const CARD_TEXT: &str = "card-text";
    pub(crate) const CARD_TEXT_PARTS: &str = "card-text-parts";
    pub(crate) const CARD_OUTCOME: &str = "card-outcome";
    pub(crate) const CARD_OUTCOME_BY: &str = "card-outcome-by";
    pub(crate) const CARD_RESULT: &str = "card-result";
    pub(crate) const CARD_REASON: &str = "card-reason";
    pub(crate) const CARD_WARNING_SCRIPTS: &str = "card-warning-scripts";
    pub(crate) const CARD_WARNING_FIELD_SCRIPTS: &str = "card-warning-field-scripts";
    pub(crate) const CARD_WARNING_LOOKALIKE: &str = "card-warning-lookalike";
    pub(crate) const CARD_WARNING_END: &str = "card-warning-end";

    pub(crate) const SIZE_BYTES: &str = "size-bytes";
    pub(crate) const SIZE_KIB: &str = "size-kib";
    pub(crate) const SIZE_MIB: &str = "size-mib";
    pub(crate) const SIZE_GIB: &str = "size-gib";

    pub(crate) const WHEN_TODAY: &str = "when-today";
    pub(crate) const WHEN_DATE: &str = "when-date";

    pub(crate) const BUTTON_YES: &str = "button-yes";
    pub(crate) const BUTTON_NO: &str = "button-no";
    pub(crate) const BUTTON_NO_SAY_WHY: &str = "button-no-say-why";
    pub(crate) const BUTTON_DECLINE_SAY_WHY: &str = "button-decline-say-why";
    pub(crate) const BUTTON_RESUME: &str = "button-resume";
    pub(crate) const BUTTON_GRANT: &str = "button-grant";
    pub(crate) const BUTTON_DECLINE: &str = "button-decline";
    pub(crate) const BUTTON_STOP: &str = "button-stop";
    pub(crate) const BUTTON_ON: &str = "button-on";
    pub(crate) const BUTTON_OFF: &str = "button-off";
    pub(crate) const BUTTON_SUGGEST: &str = "button-suggest";
    pub(crate) const BUTTON_ALWAYS: &str = "button-always";
    pub(crate) const BUTTON_REMOVE: &str = "button-remove";

    pub(crate) const SILENCED: &str = "silenced";
    pub(crate) const RESUMED: &str = "resumed";
    pub(crate) const PRESS_REJECTED: &str = "press-rejected";
    pub(crate) const OUTCOME_UNKNOWN: &str = "outcome-unknown";
    pub(crate) const DISK_FULL: &str = "disk-full";
    pub(crate) const EXPIRED_AT_CLAIM: &str = "expired-at-claim";
    pub(crate) const ALTERED: &str = "altered";
    pub(crate) const REACHABLE_AGAIN: &str = "reachable-again";
    pub(crate) const NOT_OWNER: &str = "not-owner";
    pub(crate) const NOT_ACCEPTED: &str = "not-accepted";
    pub(crate) const PAIRED: &str = "paired";
    pub(crate) const PAIRING_WRONG_CODE: &str = "pairing-wrong-code";
    pub(crate) const PAIRING_LOCKED: &str = "pairing-locked";
    pub(crate) const HELP_TITLE: &str = "help-title";
    pub(crate) const COMMAND_PENDING: &str = "command-pending";
    pub(crate) const COMMAND_MANDATES: &str = "command-mandates";
    pub(crate) const COMMAND_RULES: &str = "command-rules";
    pub(crate) const COMMAND_CATEGORIES: &str = "command-categories";
    pub(crate) const COMMAND_QUIET: &str = "command-quiet";
    pub(crate) const COMMAND_NIGHTCARDS: &str = "command-nightcards";
    pub(crate) const COMMAND_SUMMARY: &str = "command-summary";
    pub(crate) const COMMAND_LANG: &str = "command-lang";
    pub(crate) const COMMAND_ANCHOR: &str = "command-anchor";
    pub(crate) const COMMAND_HELP: &str = "command-help";
    pub(crate) const COMMAND_START: &str = "command-start";
    pub(crate) const USAGE_QUIET: &str = "usage-quiet";
    pub(crate) const USAGE_NIGHTCARDS: &str = "usage-nightcards";
    pub(crate) const USAGE_SUMMARY: &str = "usage-summary";
    pub(crate) const USAGE_LANG: &str = "usage-lang";
    pub(crate) const USAGE_NO_ARGUMENT: &str = "usage-no-argument";
    pub(crate) const QUIET_SET: &str = "quiet-set";
    pub(crate) const QUIET_OFF: &str = "quiet-off";
    pub(crate) const NIGHTCARDS_SET: &str = "nightcards-set";
    pub(crate) const SUMMARY_SET: &str = "summary-set";
    pub(crate) const LANG_SET: &str = "lang-set";
    pub(crate) const ANCHOR: &str = "anchor";
    pub(crate) const ANCHOR_EMPTY: &str = "anchor-empty";
    pub(crate) const SEAL_KEY: &str = "seal-key";
    pub(crate) const CATEGORIES_TITLE: &str = "categories-title";
    pub(crate) const CATEGORY_ITEM: &str = "category-item";
    pub(crate) const CATEGORY_SWITCHED: &str = "category-switched";
    pub(crate) const SUMMARY_TITLE: &str = "summary-title";
    pub(crate) const SUMMARY_COUNTS: &str = "summary-counts";
    pub(crate) const SUMMARY_RUNS: &str = "summary-runs";
    pub(crate) const SUMMARY_RULES: &str = "summary-rules";
    pub(crate) const SUMMARY_ORIGINS: &str = "summary-origins";
    pub(crate) const STALE_ORIGIN: &str = "stale-origin";
    pub(crate) const SUMMARY_MANDATE: &str = "summary-mandate";
    pub(crate) const SUMMARY_MANDATE_ACTIONS: &str = "summary-mandate-actions";
    pub(crate) const SUMMARY_ANCHOR: &str = "summary-anchor";
    pub(crate) const PENDING_COUNT: &str = "pending-count";
    pub(crate) const PENDING_ITEM: &str = "pending-item";
    pub(crate) const PENDING_ITEM_WAITING: &str = "pending-item-waiting";

    pub(crate) const MANDATE_TITLE: &str = "mandate-title";
    pub(crate) const MANDATE_UNTIL: &str = "mandate-until";
    pub(crate) const MANDATE_LIMITS: &str = "mandate-limits";
    pub(crate) const MANDATE_LIMITS_ACTIONS: &str = "mandate-limits-actions";
    pub(crate) const MANDATE_ANY_USE: &str = "mandate-any-use";
    pub(crate) const MANDATE_REASON: &str = "mandate-reason";
    pub(crate) const MANDATE_EXPLAIN: &str = "mandate-explain";
    pub(crate) const MANDATE_USAGE: &str = "mandate-usage";
    pub(crate) const MANDATE_USAGE_ACTIONS: &str = "mandate-usage-actions";
    pub(crate) const RECEIPT_TITLE: &str = "receipt-title";
    pub(crate) const MANDATES_COUNT: &str = "mandates-count";
    pub(crate) const MANDATE_STOPPED: &str = "mandate-stopped";
    pub(crate) const MANDATE_ENDED: &str = "mandate-ended";
    pub(crate) const SUGGEST_TITLE: &str = "suggest-title";
    pub(crate) const SUGGEST_WOULD_COVER: &str = "suggest-would-cover";
    pub(crate) const SUGGEST_DAYS: &str = "suggest-days";
    pub(crate) const SUGGEST_EXPLAIN: &str = "suggest-explain";
    pub(crate) const SUGGEST_CARD: &str = "suggest-card";
    pub(crate) const STALE_SUGGESTION: &str = "stale-suggestion";
    pub(crate) const SUGGEST_BASED_ON: &str = "suggest-based-on";
    pub(crate) const SUGGEST_BASED_ON_MONEY: &str = "suggest-based-on-money";
    pub(crate) const BUTTON_RAISE: &str = "button-raise";
    pub(crate) const RECEIPT_RAISE: &str = "receipt-raise";
    pub(crate) const MANDATE_RAISED_TODAY: &str = "mandate-raised-today";
    pub(crate) const RAISE_DONE: &str = "raise-done";
    pub(crate) const STALE_RAISE: &str = "stale-raise";

    // The owner's chat: a No's reason, what a setting is now, a stray text, stale buttons.
    pub(crate) const CARD_REPLY_INVITE: &str = "card-reply-invite";
    pub(crate) const DECLINE_REASON_SENT: &str = "decline-reason-sent";
    pub(crate) const DECLINE_REASON_LATE: &str = "decline-reason-late";
    pub(crate) const DECLINE_REASON_ALREADY: &str = "decline-reason-already";
    pub(crate) const DECLINE_REASON_NOT_ASKED: &str = "decline-reason-not-asked";
    pub(crate) const DECLINE_REASON_HIDDEN: &str = "decline-reason-hidden";
    pub(crate) const DECLINE_REASON_NOT_NFC: &str = "decline-reason-not-nfc";
    pub(crate) const TEXT_NOT_AN_ANSWER: &str = "text-not-an-answer";
    pub(crate) const HELP_POINTER: &str = "help-pointer";
    pub(crate) const QUIET_CURRENT: &str = "quiet-current";
    pub(crate) const QUIET_CURRENT_OFF: &str = "quiet-current-off";
    pub(crate) const NIGHTCARDS_CURRENT: &str = "nightcards-current";
    pub(crate) const STALE_CARD_ANSWERED: &str = "stale-card-answered";
    pub(crate) const STALE_CARD_WITHDRAWN: &str = "stale-card-withdrawn";
    pub(crate) const STALE_CARD_EXPIRED: &str = "stale-card-expired";
    pub(crate) const STALE_MANDATE_STOPPED: &str = "stale-mandate-stopped";
    pub(crate) const STALE_MANDATE_ENDED: &str = "stale-mandate-ended";
    pub(crate) const STALE_RESUMED: &str = "stale-resumed";
    pub(crate) const STALE_SILENCED_AGAIN: &str = "stale-silenced-again";
    pub(crate) const STALE_CATEGORY: &str = "stale-category";
    pub(crate) const CATEGORY_CANNOT_RUN: &str = "category-cannot-run";
    pub(crate) const SILENCED_SESSION: &str = "silenced-session";

    #[cfg(test)]
    pub(crate) const ALL: &[&str] = &[
        RESUMED,
        CLASS_EXTERNAL,
        CLASS_SPEND,
        CLASS_DESTRUCTIVE,
        STATE_PENDING,
        STATE_CARD_SHOWN,
        STATE_GRANTED,
        STATE_DECLINED,
        STATE_EXPIRED,
        STATE_REFUSED,
        STATE_RUNNING,
        STATE_EXECUTED,
        STATE_FAILED,
        STATE_OUTCOME_UNKNOWN,
        STATE_WITHDRAWN,
        STATE_APPROVED,
        CARD_URGENT,
        CARD_TITLE,
        CARD_TARGET,
        CARD_FIELD,
        CARD_COST,
        CARD_ATTACHMENT,
        CARD_RECORD,
        CARD_ORIGIN,
        CARD_AGENT_RUNS,
        CARD_HOOK,
        CARD_RULE_SAVED,
        RULES_COUNT,
        RULE_ITEM,
        RULE_REMOVED,
        STALE_RULE_REMOVED,
        STALE_FROM_BEFORE_UPGRADE,
        BUTTON_ALWAYS,
        BUTTON_REMOVE,
        COMMAND_RULES,
        SUMMARY_RULES,
        SUMMARY_ORIGINS,
        STALE_ORIGIN,
        CARD_DEADLINE,
        CARD_TEXT,
        CARD_TEXT_PARTS,
        CARD_OUTCOME,
        CARD_OUTCOME_BY,
        CARD_RESULT,
        CARD_REASON,
        CARD_WARNING_SCRIPTS,
        CARD_WARNING_FIELD_SCRIPTS,
        CARD_WARNING_LOOKALIKE,
        CARD_WARNING_END,
        SIZE_BYTES,
        SIZE_KIB,
        SIZE_MIB,
        SIZE_GIB,
        WHEN_TODAY,
        WHEN_DATE,
        BUTTON_YES,
        BUTTON_NO,
        BUTTON_NO_SAY_WHY,
        BUTTON_DECLINE_SAY_WHY,
        BUTTON_RESUME,
        BUTTON_GRANT,
        BUTTON_DECLINE,
        BUTTON_STOP,
        BUTTON_ON,
        BUTTON_OFF,
        BUTTON_SUGGEST,
        SUGGEST_TITLE,
        SUGGEST_WOULD_COVER,
        SUGGEST_DAYS,
        SUGGEST_EXPLAIN,
        SUGGEST_CARD,
        STALE_SUGGESTION,
        SUGGEST_BASED_ON,
        SUGGEST_BASED_ON_MONEY,
        BUTTON_RAISE,
        RECEIPT_RAISE,
        MANDATE_RAISED_TODAY,
        RAISE_DONE,
        STALE_RAISE,
        SILENCED,
        PRESS_REJECTED,
        OUTCOME_UNKNOWN,
        DISK_FULL,
        EXPIRED_AT_CLAIM,
        ALTERED,
        REACHABLE_AGAIN,
        NOT_OWNER,
        NOT_ACCEPTED,
        PAIRED,
        PAIRING_WRONG_CODE,
        PAIRING_LOCKED,
        HELP_TITLE,
        COMMAND_PENDING,
        COMMAND_MANDATES,
        COMMAND_CATEGORIES,
        COMMAND_QUIET,
        COMMAND_NIGHTCARDS,
        COMMAND_SUMMARY,
        COMMAND_LANG,
        COMMAND_ANCHOR,
        COMMAND_HELP,
        COMMAND_START,
        USAGE_QUIET,
        USAGE_NIGHTCARDS,
        USAGE_SUMMARY,
        USAGE_LANG,
        USAGE_NO_ARGUMENT,
        QUIET_SET,
        QUIET_OFF,
        NIGHTCARDS_SET,
        SUMMARY_SET,
        LANG_SET,
        ANCHOR,
        ANCHOR_EMPTY,
        SEAL_KEY,
        CATEGORIES_TITLE,
        CATEGORY_ITEM,
        CATEGORY_SWITCHED,
        SUMMARY_TITLE,
        SUMMARY_COUNTS,
        SUMMARY_RUNS,
        SUMMARY_MANDATE,
        SUMMARY_MANDATE_ACTIONS,
        SUMMARY_ANCHOR,
        PENDING_COUNT,
        PENDING_ITEM,
        PENDING_ITEM_WAITING,
        MANDATE_TITLE,
        MANDATE_UNTIL,
        MANDATE_LIMITS,
        MANDATE_LIMITS_ACTIONS,
        MANDATE_ANY_USE,
        MANDATE_REASON,
        MANDATE_EXPLAIN,
        MANDATE_USAGE,
        MANDATE_USAGE_ACTIONS,
        RECEIPT_TITLE,
        MANDATES_COUNT,
        MANDATE_STOPPED,
        MANDATE_ENDED,
        CARD_REPLY_INVITE,
        DECLINE_REASON_SENT,
        DECLINE_REASON_LATE,
        DECLINE_REASON_ALREADY,
        DECLINE_REASON_NOT_ASKED,
        DECLINE_REASON_HIDDEN,
        DECLINE_REASON_NOT_NFC,
        TEXT_NOT_AN_ANSWER,
        HELP_POINTER,
        QUIET_CURRENT,
        QUIET_CURRENT_OFF,
        NIGHTCARDS_CURRENT,
        STALE_CARD_ANSWERED,
        STALE_CARD_WITHDRAWN,
        STALE_CARD_EXPIRED,
        STALE_MANDATE_STOPPED,
        STALE_MANDATE_ENDED,
        STALE_RESUMED,
        STALE_SILENCED_AGAIN,
        STALE_CATEGORY,
        CATEGORY_CANNOT_RUN,
        SILENCED_SESSION,
    ];
}

/// Reason codes for [`press_rejected_notice`], as the press verdict names them; the tests check
/// that the locale files word each one. Any other string is shown as it is.
#[cfg(test)]
pub(crate) mod reject {
    /// The press came from someone other than the owner.
    pub(crate) const NOT_OWNER: &str = "not_owner";
    /// The press came from a chat other than the owner's private chat.
    pub(crate) const WRONG_CHAT: &str = "wrong_chat";
    /// The callback data's tag did not verify.
    pub(crate) const BAD_SIGNATURE: &str = "bad_signature";
    /// The record was no longer open.
    pub(crate) const NOT_OPEN: &str = "not_open";
    /// The record was past its ttl.
    pub(crate) const EXPIRED: &str = "expired";
    /// The card's message no longer shows the text it was drawn with.
    pub(crate) const CARD_ALTERED: &str = "card_altered";
}

/// How many hex digits of a SHA-256 the chat shows.
pub(crate) const SHA_PREFIX: usize = 12;

/// The most the answerCallbackQuery text may hold.
pub(crate) const CALLBACK_TEXT_LIMIT: usize = 200;

/// Room kept free in every card for the lines that change: the urgent marker and the deadline on
/// the card, the outcome lines on its edit. Reserving it once means the choice between the text
/// inside the card and the text in parts is the same for the card and for every later edit of
/// it, and the edit always fits the message it replaces.
const FOOTER_ROOM: usize = 1024;

/// Caps on the outcome's own values (not the action's: those are never shortened), so the outcome
/// lines stay within [`FOOTER_ROOM`]. The result is the command's first line (≤ 200 characters
/// by docs/PROTOCOL.md) and a Telegram name is at most 129, so they are cut only when a caller
/// breaks those bounds.
const NAME_ROOM: usize = 128;
const RESULT_ROOM: usize = 400;
const REASON_ROOM: usize = 256;

/// One attachment as the card lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentView<'a> {
    pub(crate) name: &'a str,
    pub(crate) media_type: &'a str,
    pub(crate) bytes: u64,
    pub(crate) sha256_hex: &'a str,
}

impl<'a> From<&'a crate::digest::AttachmentFacts> for AttachmentView<'a> {
    fn from(facts: &'a crate::digest::AttachmentFacts) -> Self {
        AttachmentView {
            name: &facts.name,
            media_type: &facts.media_type,
            bytes: facts.bytes,
            sha256_hex: &facts.sha256,
        }
    }
}

/// Everything a card shows about an ask.
#[derive(Debug, Clone)]
pub struct CardView<'a> {
    /// "r_" and 20 hex digits.
    pub record_id: &'a str,
    /// Not drawn: the label names the kind for the owner.
    pub kind: &'a str,
    /// The category's label in the owner's language.
    pub label: &'a str,
    /// "external" | "spend" | "destructive".
    pub class: &'a str,
    pub target: Option<&'a str>,
    /// The target's look-alike warnings ([`crate::lookalike`]), each a line under it.
    pub target_warnings: &'a [Warning],
    pub fields: &'a BTreeMap<String, String>,
    /// What the card calls each field (the category's `field_labels` in the owner's language);
    /// a field not in it is shown under its own name.
    pub field_labels: &'a BTreeMap<String, String>,
    /// Each field value's look-alike warnings (`lookalike::value_warnings`), in the order of
    /// `fields`, each a line under its field (empty: none drawn).
    pub field_warnings: &'a [Vec<Warning>],
    /// Dollars with two decimals, as "0.40".
    pub cost_usd: Option<&'a str>,
    pub attachments: &'a [AttachmentView<'a>],
    pub text: Option<&'a str>,
    /// The SHA-256 of `text`; present whenever `text` is.
    pub text_sha256_hex: Option<&'a str>,
    pub expires_at: DateTime<Utc>,
    /// The owner's zone.
    pub tz: Tz,
    pub urgent: bool,
    /// The client's one line on where the ask comes from, set apart as a value on its own line.
    pub origin: Option<&'a str>,
    /// An approval-only category: the card says the agent runs it itself and consentd nothing.
    pub agent_runs: bool,
    /// The agent's call, when an agent's hook asked (`crate::exact`): shown on the card, and
    /// with `always` set it also carries Always here.
    pub hook: Option<HookView<'a>>,
}

/// The agent's call as a hook's gate card shows it.
#[derive(Debug, Clone, Copy)]
pub struct HookView<'a> {
    pub call: &'a crate::exact::HookCall,
    /// Whether the card offers Always here (`exact::offers_always`).
    pub always: bool,
}

/// No field labels: every field is shown under its own name.
pub static NO_FIELD_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// What a button does when pressed: the press action the transport signs into its data.
pub(crate) use crate::press::PressAction as ButtonAction;

/// One inline button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub action: ButtonAction,
    /// The keyboard row it sits on, from 0; rows follow each other in the order of the buttons.
    pub row: u8,
}

/// A card ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Whole part messages ("[i/N]\n…", the piece quoted), sent in order before the card; empty
    /// when the text is inside the card.
    pub parts: Vec<Styled>,
    pub card: Styled,
    /// A first row with Yes, then No, then Always here where the card offers it; a second row
    /// with "No, and say why…".
    pub buttons: Vec<Button>,
}

/// How an ask ended, for the card's edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// A record state: granted, declined, expired, refused, running, executed, failed or
    /// outcome_unknown.
    pub state: &'a str,
    /// The owner's display name, when a press decided it.
    pub decided_by: Option<String>,
    pub result: Option<&'a str>,
    pub reason: Option<&'a str>,
    /// On a declined card: until when (the owner's local time, as [`local_time`] writes it) a
    /// reply to the card reaches the session as the reason for the No.
    pub reply_by: Option<String>,
}

/// A card that cannot be one message even with its text moved to parts: the target and fields
/// alone are too long. The intake should refuse such an ask (`too_large`) before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the card needs {code_points} code points and {utf16_units} UTF-16 units without its text; \
     at most {room} fit beside the lines it must keep room for"
)]
pub struct CardError {
    pub(crate) code_points: usize,
    pub(crate) utf16_units: usize,
    pub(crate) room: usize,
}

/// The card for `view`, as of `now`. Never fails; a card too long to send comes back as it is
/// (see [`try_render_card`] to check first).
pub fn render_card(
    view: &CardView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Rendered {
    draw_card(view, CardBody::new(view, locales, lang), locales, lang, now)
}

/// The card for `view`, or why it cannot be one message.
///
/// A target without a look-alike warning yet is measured with the widest one it could get, and
/// so is each one-word field value ([`lookalike::widest_value_looks_like`]): the known targets
/// are read when the card is shown, after this check, and a warning is never cut.
pub fn try_render_card(
    view: &CardView,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Result<Rendered, CardError> {
    let body = checked_body(view, locales, lang)?;
    Ok(draw_card(view, body, locales, lang, now))
}

/// What the intake asks of a card before its ask is stored, without drawing it: an error when
/// it cannot be one message (as [`try_render_card`]).
pub fn check_card(view: &CardView, locales: &Locales, lang: Language) -> Result<(), CardError> {
    checked_body(view, locales, lang).map(|_| ())
}

/// `view`'s body once it is known to fit one message, measured with the widest look-alike
/// lines it could still get.
fn checked_body(view: &CardView, locales: &Locales, lang: Language) -> Result<CardBody, CardError> {
    let (target_warnings, field_warnings) = with_room_for_look_alikes(view);
    let measured = CardView {
        target_warnings: &target_warnings,
        field_warnings: &field_warnings,
        ..view.clone()
    };
    let widest = CardBody::new(&measured, locales, lang);
    fits_beside_footer(&widest.without_footer().text)?;
    let body = CardBody::new(view, locales, lang);
    fits_beside_footer(&body.without_footer().text)?;
    Ok(body)
}

/// `view`'s warnings with the widest look-alike line added where one could still come: under
/// the target, and under each one-word field value, that have none yet.
fn with_room_for_look_alikes(view: &CardView) -> (Vec<Warning>, Vec<Vec<Warning>>) {
    let looks_like = |w: &Warning| matches!(w, Warning::LooksLike { .. });
    let mut target = view.target_warnings.to_vec();
    if view.target.is_some() && !target.iter().any(looks_like) {
        target.push(lookalike::widest_looks_like());
    }
    let fields = view
        .fields
        .values()
        .enumerate()
        .map(|(index, value)| {
            let mut warnings = view.field_warnings.get(index).cloned().unwrap_or_default();
            if lookalike::is_identifier_like(value) && !warnings.iter().any(looks_like) {
                warnings.extend(lookalike::widest_value_looks_like(value));
            }
            warnings
        })
        .collect();
    (target, fields)
}

/// Whether a card's fixed lines leave the room its changing lines need in one message.
fn fits_beside_footer(fixed: &str) -> Result<(), CardError> {
    let room = MESSAGE_LIMIT - FOOTER_ROOM;
    if split::fits_in_card(fixed, room) {
        return Ok(());
    }
    let (code_points, utf16_units) = split::measure(fixed);
    Err(CardError {
        code_points,
        utf16_units,
        room,
    })
}

fn draw_card(
    view: &CardView,
    body: CardBody,
    locales: &Locales,
    lang: Language,
    now: DateTime<Utc>,
) -> Rendered {
    let when = local_time(locales, lang, view.expires_at, view.tz, now);
    let footer = [Styled::plain(locales.t(
        lang,
        msg::CARD_DEADLINE,
        &[("when", (&when).into())],
    ))];
    let mut card = Styled::default();
    if view.urgent {
        card.push_str(&locales.t(lang, msg::CARD_URGENT, &[]));
        card.push_str("\n");
    }
    card.push(&body.assemble(&footer));
    let parts = match body.text {
        TextPlace::Parts { messages, .. } => messages,
        _ => Vec::new(),
    };
    let mut buttons = vec![
        button(locales, lang, ButtonAction::Yes),
        button(locales, lang, ButtonAction::No),
    ];
    if view.hook.is_some_and(|hook| hook.always) {
        buttons.push(button(locales, lang, ButtonAction::Always));
    }
    buttons.push(say_why_button(locales, lang, false));
    Rendered {
        parts,
        card,
        buttons,
    }
}

/// The card's text once the ask has ended: the same content (with the text, or its part summary,
/// exactly as on the card), and the outcome and who decided in place of the deadline. It has no
/// buttons. The urgent marker goes too: it asked for attention that is no longer needed.
pub fn render_outcome(
    view: &CardView,
    locales: &Locales,
    lang: Language,
    outcome: &Outcome,
) -> Styled {
    let body = CardBody::new(view, locales, lang);
    body.assemble(&outcome_footer(outcome, locales, lang))
}

/// The outcome line, then the result and the reason where there are any. The result (a
/// command's output) and the reason are shown as values, with anything hidden in them written
/// out (see [`crate::shown`]).
fn outcome_footer(outcome: &Outcome, locales: &Locales, lang: Language) -> Vec<Styled> {
    let mut footer = vec![outcome_line(outcome, locales, lang)];
    if let Some(result) = outcome.result {
        let result = shown(result);
        footer.push(locales.styled(
            lang,
            msg::CARD_RESULT,
            &[],
            &[("result", &clamp(&result, RESULT_ROOM))],
        ));
    }
    if let Some(reason) = outcome.reason {
        let reason = shown(reason);
        footer.push(locales.styled(
            lang,
            msg::CARD_REASON,
            &[],
            &[("reason", &clamp(&reason, REASON_ROOM))],
        ));
    }
    footer.extend(reply_invite(outcome, locales, lang));
    footer
}

/// The line that invites the owner to reply to a declined card with what to do instead.
fn reply_invite(outcome: &Outcome, locales: &Locales, lang: Language) -> Option<Styled> {
    let when = outcome.reply_by.as_deref()?;
    Some(Styled::plain(locales.t(
        lang,
        msg::CARD_REPLY_INVITE,
        &[("when", when.into())],
    )))
}

/// "Outcome: done", with who decided when a press did.
fn outcome_line(outcome: &Outcome, locales: &Locales, lang: Language) -> Styled {
    let state = match state_message(outcome.state) {
        Some(id) => locales.t(lang, id, &[]),
        None => outcome.state.to_owned(),
    };
    match &outcome.decided_by {
        Some(name) => {
            let name = shown(name);
            locales.styled(
                lang,
                msg::CARD_OUTCOME_BY,
                &[("state", (&state).into())],
                &[("name", &clamp(&name, NAME_ROOM))],
            )
        }
        None => Styled::plain(locales.t(lang, msg::CARD_OUTCOME, &[("state", (&state).into())])),
    }
}

/// Where the action's text goes on a card.
enum TextPlace {
    None,
    /// "Text:" and the text, verbatim and quoted, as the card's last lines.
    Inline(Styled),
    /// The line saying how many parts above hold it, and the part messages themselves.
    Parts {
        summary: String,
        messages: Vec<Styled>,
    },
}

/// A card's content, without the lines that change between the card and its edits.
struct CardBody {
    /// Label and class, target, fields, cost, attachments, record id.
    lines: Vec<Styled>,
    text: TextPlace,
}

/// A part message: exactly `[i/N]`, a line feed and the piece, the piece quoted.
fn part_message(index: usize, count: usize, piece: &str) -> Styled {
    let mut message = Styled::plain(split::part_header(index, count));
    message.push(&Styled::quote(piece));
    debug_assert_eq!(message.text, split::part_message(index, count, piece));
    message
}

impl CardBody {
    fn new(view: &CardView, locales: &Locales, lang: Language) -> CardBody {
        let lines = content_lines(view, locales, lang);
        let text = match view.text {
            None => TextPlace::None,
            Some(text) => {
                let mut inline = Styled::plain(locales.t(lang, msg::CARD_TEXT, &[]));
                inline.push_str("\n");
                inline.push(&Styled::quote(text));
                let candidate = CardBody {
                    lines: lines.clone(),
                    text: TextPlace::Inline(inline),
                };
                // The same room test for the card and every edit: only the content decides.
                if split::fits_in_card(
                    &candidate.without_footer().text,
                    MESSAGE_LIMIT - FOOTER_ROOM,
                ) {
                    candidate.text
                } else {
                    let sha = view.text_sha256_hex.unwrap_or_default();
                    debug_assert!(view.text_sha256_hex.is_some(), "a text comes with its hash");
                    let pieces = split::pieces(text);
                    let n = pieces.len();
                    let summary = locales.t(
                        lang,
                        msg::CARD_TEXT_PARTS,
                        &[("parts", n.into()), ("sha", sha_prefix(sha).into())],
                    );
                    let messages = pieces
                        .iter()
                        .enumerate()
                        .map(|(i, piece)| part_message(i + 1, n, piece))
                        .collect();
                    TextPlace::Parts { summary, messages }
                }
            }
        };
        CardBody { lines, text }
    }

    fn without_footer(&self) -> Styled {
        self.assemble(&[])
    }

    /// The numbered part messages, when the text does not fit inside.
    fn part_messages(&self) -> Vec<Styled> {
        match &self.text {
            TextPlace::Parts { messages, .. } => messages.clone(),
            _ => Vec::new(),
        }
    }

    /// The content, then `footer` (deadline or outcome lines), then the text. The text comes
    /// last, after a blank line and quoted, so that nothing in it, however it is worded, can sit
    /// between or below the card's own lines and pass for one of them.
    fn assemble(&self, footer: &[Styled]) -> Styled {
        let mut lines: Vec<&Styled> = self.lines.iter().collect();
        lines.extend(footer);
        let summary;
        if let TextPlace::Parts { summary: text, .. } = &self.text {
            summary = Styled::plain(text.as_str());
            lines.push(&summary);
        }
        let mut card = Styled::join(lines, "\n");
        if let TextPlace::Inline(block) = &self.text {
            card.push_str("\n\n");
            card.push(block);
        }
        card
    }
}

/// The card's fixed lines. Every value the agent chose (the target, each field's value, each
/// attachment's name and media type) is set apart as a value; the words around it are ours,
/// a field's label among them (the config's, else the field's name).
fn content_lines(view: &CardView, locales: &Locales, lang: Language) -> Vec<Styled> {
    let mut lines = vec![Styled::plain(title_line(
        locales, lang, view.label, view.class,
    ))];
    if view.agent_runs {
        lines.push(Styled::plain(locales.t(lang, msg::CARD_AGENT_RUNS, &[])));
    }
    // The client chose it: a value, apart from the card's own words, like the target.
    if let Some(origin) = view.origin {
        lines.push(locales.styled(lang, msg::CARD_ORIGIN, &[], &[("origin", origin)]));
    }
    // The hook chose them: values, like the origin. Shown so that an Always saves what the
    // owner saw.
    if let Some(hook) = view.hook {
        lines.push(locales.styled(
            lang,
            msg::CARD_HOOK,
            &[],
            &[
                ("agent", hook.call.agent.as_str()),
                ("tool", hook.call.tool.as_str()),
                ("cwd", hook.call.cwd.as_str()),
            ],
        ));
    }
    if let Some(target) = view.target {
        lines.push(locales.styled(lang, msg::CARD_TARGET, &[], &[("target", target)]));
        lines.extend(warning_lines(view.target_warnings, locales, lang));
    }
    for (index, (name, value)) in view.fields.iter().enumerate() {
        let label = view.field_labels.get(name).unwrap_or(name);
        lines.push(locales.styled(
            lang,
            msg::CARD_FIELD,
            &[("name", label.as_str().into())],
            &[("value", value)],
        ));
        let warnings = view
            .field_warnings
            .get(index)
            .map_or(&[][..], Vec::as_slice);
        lines.extend(
            warnings
                .iter()
                .map(|warning| field_warning_line(warning, locales, lang)),
        );
    }
    if let Some(cost) = view.cost_usd {
        lines.push(Styled::plain(locales.t(
            lang,
            msg::CARD_COST,
            &[("usd", usd_digits(lang, cost).as_str().into())],
        )));
    }
    for attachment in view.attachments {
        let size = human_size(locales, lang, attachment.bytes);
        lines.push(locales.styled(
            lang,
            msg::CARD_ATTACHMENT,
            &[
                ("size", (&size).into()),
                ("sha", sha_prefix(attachment.sha256_hex).into()),
            ],
            &[
                ("name", attachment.name),
                ("media_type", attachment.media_type),
            ],
        ));
    }
    lines.push(Styled::plain(locales.t(
        lang,
        msg::CARD_RECORD,
        &[("id", view.record_id.into())],
    )));
    lines
}

/// A card's title line: the category's label and its class in `lang` ("Post to X (external)").
pub fn title_line(locales: &Locales, lang: Language, label: &str, class: &str) -> String {
    let class = match class_message(class) {
        Some(id) => locales.t(lang, id, &[]),
        None => class.to_owned(),
    };
    locales.t(
        lang,
        msg::CARD_TITLE,
        &[("label", label.into()), ("class", (&class).into())],
    )
}

/// A look-alike warning as its line under the target (docs/OPERATOR.md, "A ⚠ line under the target
/// or a field"): the scripts and every non-ASCII
/// code point, or the known target it looks like and where the two first differ. Script and
/// code point names are Unicode's own, in every language. The target it looks like (a string an
/// agent once chose) is set apart as a value.
pub fn warning_line(warning: &Warning, locales: &Locales, lang: Language) -> Styled {
    line_of(warning, msg::CARD_WARNING_SCRIPTS, locales, lang)
}

/// A look-alike warning as its line under a field's value: as under a target, the mixed-script
/// line saying "value" for "target".
pub fn field_warning_line(warning: &Warning, locales: &Locales, lang: Language) -> Styled {
    line_of(warning, msg::CARD_WARNING_FIELD_SCRIPTS, locales, lang)
}

fn line_of(warning: &Warning, scripts_id: &str, locales: &Locales, lang: Language) -> Styled {
    match warning {
        Warning::MixedScripts {
            scripts,
            code_points,
        } => {
            let scripts: Vec<&str> = scripts.iter().map(|script| script.full_name()).collect();
            let chars: Vec<String> = code_points
                .iter()
                .copied()
                .map(lookalike::describe)
                .collect();
            Styled::plain(locales.t(
                lang,
                scripts_id,
                &[
                    ("scripts", scripts.join(", ").as_str().into()),
                    ("chars", chars.join(", ").as_str().into()),
                ],
            ))
        }
        Warning::LooksLike { known, difference } => {
            let side = |c: Option<char>| match c {
                Some(c) => lookalike::describe(c),
                None => locales.t(lang, msg::CARD_WARNING_END, &[]),
            };
            locales.styled(
                lang,
                msg::CARD_WARNING_LOOKALIKE,
                &[
                    ("position", difference.position.into()),
                    ("ours", side(difference.ours).as_str().into()),
                    ("theirs", side(difference.theirs).as_str().into()),
                ],
                &[("known", known.as_str())],
            )
        }
    }
}

fn warning_lines<'a>(
    warnings: &'a [Warning],
    locales: &'a Locales,
    lang: Language,
) -> impl Iterator<Item = Styled> + 'a {
    warnings
        .iter()
        .map(move |warning| warning_line(warning, locales, lang))
}

fn class_message(class: &str) -> Option<&'static str> {
    match class {
        "external" => Some(msg::CLASS_EXTERNAL),
        "spend" => Some(msg::CLASS_SPEND),
        "destructive" => Some(msg::CLASS_DESTRUCTIVE),
        _ => None,
    }
}

fn state_message(state: &str) -> Option<&'static str> {
    Some(match state {
        "pending" => msg::STATE_PENDING,
        "card_shown" => msg::STATE_CARD_SHOWN,
        "granted" => msg::STATE_GRANTED,
        "declined" => msg::STATE_DECLINED,
        "expired" => msg::STATE_EXPIRED,
        "refused" => msg::STATE_REFUSED,
        "running" => msg::STATE_RUNNING,
        "executed" => msg::STATE_EXECUTED,
        "failed" => msg::STATE_FAILED,
        "outcome_unknown" => msg::STATE_OUTCOME_UNKNOWN,
        "withdrawn" => msg::STATE_WITHDRAWN,
        "approved" => msg::STATE_APPROVED,
        _ => return None,
    })
}

/// The first [`SHA_PREFIX`] hex digits of a hash (all of it if shorter).
fn sha_prefix(hex: &str) -> &str {
    hex.get(..SHA_PREFIX).unwrap_or(hex)
}

/// `s`, or its head and "…" when it does not fit `room` (cut between grapheme clusters).
fn clamp(s: &str, room: usize) -> Cow<'_, str> {
    if split::fits_in_card(s, room) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}…", split::chunks(s, room - 1)[0]))
    }
}

/// The caption of an attachment sent before its card: `name · media type · size · SHA-256 <12
/// hex>`, the name and type (the agent's) set apart as values.
pub fn attachment_caption(locales: &Locales, lang: Language, a: &AttachmentView) -> Styled {
    let mut caption = Styled::value(a.name);
    caption.push_str(" · ");
    caption.push(&Styled::value(a.media_type));
    caption.push_str(&format!(
        " · {} · SHA-256 {}",
        human_size(locales, lang, a.bytes),
        sha_prefix(a.sha256_hex)
    ));
    caption
}

/// A button with its label in `lang`.
pub(crate) fn button(locales: &Locales, lang: Language, action: ButtonAction) -> Button {
    let id = match action {
        ButtonAction::Yes => msg::BUTTON_YES,
        ButtonAction::No => msg::BUTTON_NO,
        ButtonAction::NoSayWhy => return say_why_button(locales, lang, false),
        ButtonAction::Resume => msg::BUTTON_RESUME,
        ButtonAction::Grant => msg::BUTTON_GRANT,
        ButtonAction::Decline => msg::BUTTON_DECLINE,
        ButtonAction::Stop => msg::BUTTON_STOP,
        ButtonAction::CategoryOn => msg::BUTTON_ON,
        ButtonAction::CategoryOff => msg::BUTTON_OFF,
        ButtonAction::Suggest => msg::BUTTON_SUGGEST,
        ButtonAction::Always => msg::BUTTON_ALWAYS,
        ButtonAction::Remove => msg::BUTTON_REMOVE,
        ButtonAction::Raise => msg::BUTTON_RAISE,
    };
    Button {
        label: locales.t(lang, id, &[]),
        action,
        row: 0,
    }
}

/// "No, and say why…" (on a mandate card "Decline, and say why…"), on a row of its own under
/// the card's answers: a No that waits for the owner's reply with the reason.
pub(crate) fn say_why_button(locales: &Locales, lang: Language, mandate: bool) -> Button {
    let id = if mandate {
        msg::BUTTON_DECLINE_SAY_WHY
    } else {
        msg::BUTTON_NO_SAY_WHY
    };
    Button {
        label: locales.t(lang, id, &[]),
        action: ButtonAction::NoSayWhy,
        row: 1,
    }
}

/// `at` as the owner reads it: "14:35" in their zone, with the date when that is not the day
/// `now` is in their zone. Seconds are dropped, never rounded up, so the time shown is never
/// later than the real one.
pub fn local_time(
    locales: &Locales,
    lang: Language,
    at: DateTime<Utc>,
    tz: Tz,
    now: DateTime<Utc>,
) -> String {
    let local = at.with_timezone(&tz);
    let hm = local.format("%H:%M").to_string();
    if local.date_naive() == now.with_timezone(&tz).date_naive() {
        locales.t(lang, msg::WHEN_TODAY, &[("hm", (&hm).into())])
    } else {
        locales.t(
            lang,
            msg::WHEN_DATE,
            &[
                ("hm", (&hm).into()),
                ("day", local.day().into()),
                ("month", local.month().into()),
            ],
        )
    }
}

/// A byte count as the owner reads it: "512 bytes" below 1 KiB, else one decimal in KiB, MiB or
/// GiB (rounded half up, moving to the next unit when rounding reaches 1024).
pub(crate) fn human_size(locales: &Locales, lang: Language, bytes: u64) -> String {
    const KIB: u128 = 1024;
    if u128::from(bytes) < KIB {
        return locales.t(lang, msg::SIZE_BYTES, &[("n", bytes.into())]);
    }
    let units = [msg::SIZE_KIB, msg::SIZE_MIB, msg::SIZE_GIB];
    let tenths_of = |unit: u128| (u128::from(bytes) * 10 + unit / 2) / unit;
    let (mut index, mut unit) = (0, KIB);
    while index + 1 < units.len() && tenths_of(unit) >= KIB * 10 {
        index += 1;
        unit *= KIB;
    }
    let tenths = tenths_of(unit);
    let whole = i64::try_from(tenths / 10).unwrap_or(i64::MAX);
    let tenth = (tenths % 10) as i64;
    locales.t(
        lang,
        units[index],
        &[("whole", whole.into()), ("tenth", tenth.into())],
    )
}

/// An amount of dollars as `lang` writes its digits: two decimals, the decimal mark and the
/// thousands grouping of the language ("1,234.50", "1\u{a0}234,50", "1.234,50"). The currency
/// sign and where it goes are the locale file's own (its `-usd` term), so this is only the
/// number. Exact: the decimal's own digits are regrouped, never converted.
pub(crate) fn usd(lang: Language, amount: rust_decimal::Decimal) -> String {
    usd_digits(lang, &crate::action::format_usd(amount))
}

/// [`usd`] for an amount already written with a point and two decimals ("0.40"), as a record
/// keeps it. Anything else is shown as it is.
pub(crate) fn usd_digits(lang: Language, amount: &str) -> String {
    // CLDR's symbols for en, ru and pt: ru groups with a no-break space, so a number is never
    // broken across lines.
    let (group, decimal) = match lang {
        Language::En => (",", "."),
        Language::Ru => ("\u{a0}", ","),
        Language::Pt => (".", ","),
    };
    let (whole, cents) = amount.split_once('.').unwrap_or((amount, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return amount.to_owned();
    }
    let mut out = String::with_capacity(amount.len() + whole.len() / 3 * group.len());
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push_str(group);
        }
        out.push(digit);
    }
    if !cents.is_empty() {
        out.push_str(decimal);
        out.push_str(cents);
    }
    out
}

/// The notice that cards of a kind are silenced after `count` no's in a row, until `until`,
/// for one session only (`session`: its uid's user name, and its origin when it has one), with
/// a Resume button that lifts that session's silence.
pub fn silenced_notice(
    locales: &Locales,
    lang: Language,
    (label, session): (&str, &str),
    count: u32,
    until: DateTime<Utc>,
    tz: Tz,
    now: DateTime<Utc>,
) -> (String, Vec<Button>) {
    let until = local_time(locales, lang, until, tz, now);
    let text = locales.t(
        lang,
        msg::SILENCED,
        &[
            ("label", label.into()),
            ("count", count.into()),
            ("until", (&until).into()),
        ],
    );
    let only = locales.t(lang, msg::SILENCED_SESSION, &[("session", session.into())]);
    (
        format!("{text}\n{only}"),
        vec![button(locales, lang, ButtonAction::Resume)],
    )
}

/// The reply to the owner's Resume: the silenced kind may send cards again.
pub fn resumed_notice(locales: &Locales, lang: Language, label: &str) -> String {
    locales.t(lang, msg::RESUMED, &[("label", label.into())])
}

/// The urgent notice of a rejected press: `who` pressed (as the transport describes them: a
/// stranger's chosen name, shown as a value with anything hidden in it written out) and `why`
/// (a press rejection's code, e.g. `not_owner`) it was not accepted.
pub fn press_rejected_notice(locales: &Locales, lang: Language, who: &str, why: &str) -> Styled {
    locales.styled(
        lang,
        msg::PRESS_REJECTED,
        &[("why", why.into())],
        &[("who", &shown(who))],
    )
}

/// The urgent notice that a message with the owner's buttons was changed after it was sent, and
/// that a press on it counted only because it took something back.
pub fn altered_notice(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::ALTERED, &[])
}

/// The notice that Telegram answers the bot again after refusing it for `minutes` whole
/// minutes, `cause` saying why ([`crate::waiting::Cut::as_str`]): asks made meanwhile
/// waited, and the owner learns why their cards came late.
pub fn reachable_again_notice(
    locales: &Locales,
    lang: Language,
    minutes: i64,
    cause: &str,
) -> String {
    locales.t(
        lang,
        msg::REACHABLE_AGAIN,
        &[("minutes", minutes.into()), ("cause", cause.into())],
    )
}

/// The notice that a yes could not be run in time: the daemon stopped between the owner's yes
/// and the claim, and by the claim the card's time was up, so nothing ran.
pub fn expired_at_claim_notice(
    locales: &Locales,
    lang: Language,
    record_id: &str,
    label: &str,
) -> String {
    record_notice(locales, lang, msg::EXPIRED_AT_CLAIM, record_id, label)
}

/// A notice about one record, named by its id and its category's label.
fn record_notice(
    locales: &Locales,
    lang: Language,
    id: &str,
    record_id: &str,
    label: &str,
) -> String {
    locales.t(
        lang,
        id,
        &[("id", record_id.into()), ("label", label.into())],
    )
}

/// The urgent notice, after a restart, that an action may or may not have run.
pub fn outcome_unknown_notice(
    locales: &Locales,
    lang: Language,
    record_id: &str,
    label: &str,
) -> String {
    record_notice(locales, lang, msg::OUTCOME_UNKNOWN, record_id, label)
}

/// The urgent notice that asks are refused `disk_full`: the state directory, the MiB free and
/// the MiB kept free.
pub fn disk_full_notice(
    locales: &Locales,
    lang: Language,
    state_dir: &str,
    free_mib: u64,
    floor_mib: u64,
) -> String {
    let args = [
        ("dir", state_dir.into()),
        ("free_mib", free_mib.into()),
        ("floor_mib", floor_mib.into()),
    ];
    locales.t(lang, msg::DISK_FULL, &args)
}

/// The one line anyone but the owner gets.
pub fn not_owner_line(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::NOT_OWNER, &[])
}

/// The callback answer for a press that was not accepted (at most `CALLBACK_TEXT_LIMIT`
/// characters, as Telegram requires).
pub fn not_accepted(locales: &Locales, lang: Language) -> String {
    clamp(
        &locales.t(lang, msg::NOT_ACCEPTED, &[]),
        CALLBACK_TEXT_LIMIT,
    )
    .into_owned()
}

/// The reply to a `/start CODE` that paired the chat.
pub fn paired(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::PAIRED, &[])
}

/// The reply to a `/start CODE` with a wrong code.
pub fn pairing_wrong_code(locales: &Locales, lang: Language) -> String {
    locales.t(lang, msg::PAIRING_WRONG_CODE, &[])
}

/// The reply while pairing is locked after too many wrong codes.
pub fn pairing_locked(
    locales: &Locales,
    lang: Language,
    until: DateTime<Utc>,
    tz: Tz,
    now: DateTime<Utc>,
) -> String {
    let until = local_time(locales, lang, until, tz, now);
    locales.t(lang, msg::PAIRING_LOCKED, &[("until", (&until).into())])
}

/// The `/help` reply: the commands that exist, with what each does.
pub fn help_text(locales: &Locales, lang: Language) -> String {
    let mut lines = vec![locales.t(lang, msg::HELP_TITLE, &[])];
    for (name, description) in command_menu(locales, lang) {
        lines.push(format!("/{name} — {description}"));
    }
    lines.push(locales.t(lang, msg::COMMAND_START, &[]));
    lines.join("\n")
}

/// Each command of the bot's menu (`setMyCommands`) with its description in `lang`.
pub fn command_menu(locales: &Locales, lang: Language) -> Vec<(&'static str, String)> {
    crate::commands::MENU
        .into_iter()
        .map(|name| {
            let id = match name {
                "pending" => msg::COMMAND_PENDING,
                "mandates" => msg::COMMAND_MANDATES,
                "rules" => msg::COMMAND_RULES,
                "categories" => msg::COMMAND_CATEGORIES,
                "quiet" => msg::COMMAND_QUIET,
                "nightcards" => msg::COMMAND_NIGHTCARDS,
                "summary" => msg::COMMAND_SUMMARY,
                "lang" => msg::COMMAND_LANG,
                "anchor" => msg::COMMAND_ANCHOR,
                _ => msg::COMMAND_HELP,
            };
            (name, locales.t(lang, id, &[]))
        })
        .collect()
}

/// The `/pending` reply: a count line, then one line per open ask `(record id, label, expires
/// at)`. Returned as one or more messages, cut between lines: a hundred asks with long labels
/// do not fit one message.
pub fn pending_list(
    locales: &Locales,
    lang: Language,
    items: &[(&str, &str, Option<DateTime<Utc>>)],
    tz: Tz,
    now: DateTime<Utc>,
) -> Vec<String> {
    let mut lines = vec![locales.t(lang, msg::PENDING_COUNT, &[("count", items.len().into())])];
    for (id, label, expires_at) in items {
        let line = match expires_at {
            Some(expires_at) => {
                let until = local_time(locales, lang, *expires_at, tz, now);
                locales.t(
                    lang,
                    msg::PENDING_ITEM,
                    &[
                        ("id", (*id).into()),
                        ("label", (*label).into()),
                        ("until", (&until).into()),
                    ],
                )
            }
            // Not shown yet: held for the end of quiet hours, or about to be sent.
            None => locales.t(
                lang,
                msg::PENDING_ITEM_WAITING,
                &[("id", (*id).into()), ("label", (*label).into())],
            ),
        };
        lines.push(line);
    }
    let all = lines.join("\n");
    split::chunks(&all, MESSAGE_LIMIT)
        .into_iter()
        // A cut falls before a line feed, which would open the next message, where it shows
        // nothing (these messages have no header line to keep it).
        .map(|chunk| chunk.strip_prefix('\n').unwrap_or(chunk))
        .filter(|chunk| !chunk.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::collections::BTreeSet;

    const RECORD: &str = "r_0123456789abcdef0123";
    const SHA_A: &str = "3f2a9c0d1e4b5a6978877665544332211000ffeeddccbbaa9988776655443322";
    const SHA_B: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
    const SHA_TEXT: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    pub(super) fn locales() -> Locales {
        Locales::new().expect("the locale files load")
    }

    /// 14:20 in Moscow (UTC+3).
    pub(super) fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 3, 11, 20, 0).unwrap()
    }

    fn fields() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("lang".to_owned(), "en".to_owned()),
            (
                "reply_to".to_owned(),
                "https://x.com/mila_news/status/1".to_owned(),
            ),
        ])
    }

    fn attachments() -> [AttachmentView<'static>; 2] {
        [
            AttachmentView {
                name: "cover.png",
                media_type: "image/png",
                bytes: 1536,
                sha256_hex: SHA_A,
            },
            AttachmentView {
                name: "notes.pdf",
                media_type: "application/pdf",
                bytes: 2 * 1024 * 1024 + 300 * 1024,
                sha256_hex: SHA_B,
            },
        ]
    }

    fn view<'a>(
        fields: &'a BTreeMap<String, String>,
        attachments: &'a [AttachmentView<'a>],
        text: &'a str,
        label: &'a str,
    ) -> CardView<'a> {
        CardView {
            record_id: RECORD,
            kind: "publish_x",
            label,
            class: "external",
            target: Some("@mila_news"),
            target_warnings: &[],
            fields,
            field_labels: &NO_FIELD_LABELS,
            field_warnings: &[],
            cost_usd: Some("0.40"),
            attachments,
            text: Some(text),
            text_sha256_hex: Some(SHA_TEXT),
            expires_at: Utc.with_ymd_and_hms(2026, 3, 3, 11, 35, 0).unwrap(),
            tz: chrono_tz::Europe::Moscow,
            urgent: true,
            agent_runs: false,
            hook: None,
            origin: None,
        }
    }

    pub(super) fn label(lang: Language) -> &'static str {
        match lang {
            Language::En => "Post to X",
            Language::Ru => "Пост в X",
            Language::Pt => "Post no X",
        }
    }

    /// The card and its buttons as the owner sees them, a line for each row of buttons.
    pub(super) fn show(rendered: &Rendered) -> String {
        let rows: Vec<String> = rendered
            .buttons
            .chunk_by(|a, b| a.row == b.row)
            .map(|row| {
                let labels: Vec<String> = row.iter().map(|b| format!("[{}]", b.label)).collect();
                labels.join(" ")
            })
            .collect();
        format!("{}\n----\n{}", rendered.card.marked(), rows.join("\n"))
    }

    /// A long text of mixed scripts with line and word breaks.
    fn long_text(chars: usize) -> String {
        let line = "Привет, мир! Hello, world! Olá, mundo! 漢字 👨\u{200D}👩\u{200D}👧 🇧🇷\n";
        let text: String = line.repeat(chars / line.chars().count() + 1);
        text.chars().take(chars).collect()
    }

    /// A snapshot in src/snapshots named without the crate's module path, so the files keep
    /// their names whichever crate this module is built in.
    pub(super) fn snapshot(name: String, value: String) {
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_snapshot!(name, value));
    }

    pub(super) fn assert_clean(s: &str) {
        assert!(
            !s.contains(['\u{2068}', '\u{2069}']),
            "isolation marks in {s:?}"
        );
        // Ids with a dash cannot be ordinary words ("help" and "paired" can).
        for id in msg::ALL.iter().filter(|id| id.contains('-')) {
            assert!(!s.contains(id), "message id {id} shown in {s:?}");
        }
    }

    #[test]
    fn message_ids_match_the_locale_files() {
        let resource = fluent_syntax::parser::parse(Language::En.source()).unwrap();
        let in_file: BTreeSet<&str> = resource
            .body
            .iter()
            .filter_map(|entry| match entry {
                fluent_syntax::ast::Entry::Message(m) => Some(m.id.name),
                _ => None,
            })
            .collect();
        let used: BTreeSet<&str> = msg::ALL.iter().copied().collect();
        assert_eq!(used.len(), msg::ALL.len(), "an id is listed twice");
        assert_eq!(used, in_file);
        let locales = locales();
        for lang in Language::ALL {
            for id in msg::ALL {
                assert!(locales.has(lang, id), "{lang} lacks {id}");
            }
        }
    }

    #[test]
    fn snapshot_full_card() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        for lang in Language::ALL {
            let v = view(
                &fields,
                &attachments,
                "Hello from the agent.\nSecond line.",
                label(lang),
            );
            let rendered = render_card(&v, &locales, lang, now());
            assert!(rendered.parts.is_empty());
            assert!(split::message_fits(&rendered.card.text));
            assert_clean(&rendered.card.text);
            snapshot(format!("card_full_{lang}"), show(&rendered));
        }
    }

    #[test]
    fn snapshot_card_with_long_text() {
        let locales = locales();
        let text = long_text(9000);
        let fields = BTreeMap::new();
        for lang in Language::ALL {
            let mut v = view(&fields, &[], &text, label(lang));
            v.urgent = false;
            v.cost_usd = None;
            let rendered = render_card(&v, &locales, lang, now());
            let n = rendered.parts.len();
            assert_eq!(n, 3);
            let mut joined = String::new();
            for (i, part) in rendered.parts.iter().enumerate() {
                let header = format!("[{}/{n}]\n", i + 1);
                joined.push_str(part.text.strip_prefix(&header).expect("part header"));
                assert!(split::message_fits(&part.text));
            }
            assert_eq!(joined, text, "dropping each header gives the text back");
            assert!(split::message_fits(&rendered.card.text));
            assert!(rendered.card.text.contains("9f86d081884c"));
            assert!(
                !rendered.card.text.contains(SHA_TEXT),
                "only the hash prefix is shown"
            );
            assert_clean(&rendered.card.text);
            snapshot(
                format!("card_long_text_{lang}"),
                format!("parts: {n}\n{}", show(&rendered)),
            );
        }
    }

    #[test]
    fn snapshot_outcomes() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        for lang in Language::ALL {
            let v = view(&fields, &attachments, "Hello from the agent.", label(lang));
            let executed = Outcome {
                state: "executed",
                decided_by: Some("Mila Petrova".to_owned()),
                result: Some("https://x.com/mila_news/status/2"),
                reason: None,
                reply_by: None,
            };
            let expired = Outcome {
                state: "expired",
                decided_by: None,
                result: None,
                reason: None,
                reply_by: None,
            };
            for (name, outcome) in [("executed", executed), ("expired", expired)] {
                let text = render_outcome(&v, &locales, lang, &outcome);
                assert!(split::message_fits(&text.text));
                assert_clean(&text.text);
                snapshot(format!("card_outcome_{name}_{lang}"), text.marked());
            }
        }
    }

    /// A declined card invites a reply with the reason; its fields go by their labels, each
    /// value still set apart (a field without a label keeps its name).
    #[test]
    fn snapshot_declined_card_with_field_labels() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        for lang in Language::ALL {
            let labels = BTreeMap::from([(
                "reply_to".to_owned(),
                match lang {
                    Language::En => "Reply to",
                    Language::Ru => "В ответ на",
                    Language::Pt => "Em resposta a",
                }
                .to_owned(),
            )]);
            let v = CardView {
                field_labels: &labels,
                ..view(&fields, &attachments, "Hello from the agent.", label(lang))
            };
            let card = render_card(&v, &locales, lang, now()).card;
            assert!(!card.text.contains("reply_to:"), "{}", card.text);
            assert!(card.text.contains("lang: "), "{}", card.text);
            let declined = Outcome {
                state: "declined",
                decided_by: Some("Mila Petrova".to_owned()),
                result: None,
                reason: None,
                reply_by: Some(local_time(
                    &locales,
                    lang,
                    now() + chrono::Duration::seconds(60),
                    chrono_tz::Europe::Moscow,
                    now(),
                )),
            };
            let text = render_outcome(&v, &locales, lang, &declined);
            assert!(text.text.contains("14:21"), "{}", text.text);
            assert!(split::message_fits(&text.text));
            assert_clean(&text.text);
            snapshot(format!("card_declined_{lang}"), text.marked());
        }
    }

    #[test]
    fn snapshot_silenced_notice() {
        let locales = locales();
        let until = Utc.with_ymd_and_hms(2026, 3, 4, 11, 20, 0).unwrap();
        for lang in Language::ALL {
            let (text, buttons) = silenced_notice(
                &locales,
                lang,
                (label(lang), "mila (uid 1000) · devbox"),
                3,
                until,
                chrono_tz::Europe::Moscow,
                now(),
            );
            assert_eq!(buttons.len(), 1);
            assert_eq!(buttons[0].action, ButtonAction::Resume);
            assert_clean(&text);
            snapshot(
                format!("card_silenced_{lang}"),
                format!("{text}\n----\n[{}]", buttons[0].label),
            );
        }
    }

    #[test]
    fn buttons_are_yes_then_no_then_no_and_say_why_on_its_own_row_in_every_language() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        let expected = [
            (Language::En, "Yes", "No", "No, and say why…"),
            (Language::Ru, "Да", "Нет", "Нет, и объяснить…"),
            (Language::Pt, "Sim", "Não", "Não, e dizer por quê…"),
        ];
        let make = |label: &str, action, row| Button {
            label: label.to_owned(),
            action,
            row,
        };
        for (lang, yes, no, why) in expected {
            let v = view(&fields, &attachments, "hi", label(lang));
            let buttons = render_card(&v, &locales, lang, now()).buttons;
            assert_eq!(
                buttons,
                vec![
                    make(yes, ButtonAction::Yes, 0),
                    make(no, ButtonAction::No, 0),
                    make(why, ButtonAction::NoSayWhy, 1),
                ]
            );
        }
        for action in [
            ButtonAction::Grant,
            ButtonAction::Decline,
            ButtonAction::Stop,
            ButtonAction::Resume,
        ] {
            for lang in Language::ALL {
                let b = button(&locales, lang, action);
                assert!(!b.label.is_empty());
                assert_clean(&b.label);
            }
        }
        for lang in Language::ALL {
            let b = say_why_button(&locales, lang, true);
            assert_eq!((b.action, b.row), (ButtonAction::NoSayWhy, 1));
            assert_ne!(b.label, say_why_button(&locales, lang, false).label);
            assert_clean(&b.label);
        }
    }

    #[test]
    fn the_deadline_shows_the_date_when_it_is_another_local_day() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        // 23:50 in Moscow; the card expires at 00:05 on the next local day.
        let now = Utc.with_ymd_and_hms(2026, 3, 3, 20, 50, 0).unwrap();
        let expected = [
            (Language::En, "Answer by 00:05 on 4 March"),
            (Language::Ru, "Ответьте до 4 марта, 00:05"),
            (Language::Pt, "Responda até 4 de março, às 00:05"),
        ];
        for (lang, line) in expected {
            let mut v = view(&fields, &attachments, "hi", label(lang));
            v.expires_at = Utc.with_ymd_and_hms(2026, 3, 3, 21, 5, 0).unwrap();
            let card = render_card(&v, &locales, lang, now).card.text;
            assert!(card.contains(line), "{card}");
        }
        // The same instant is still "today" in UTC.
        let when = local_time(
            &locales,
            Language::En,
            Utc.with_ymd_and_hms(2026, 3, 3, 21, 5, 59).unwrap(),
            Tz::UTC,
            now,
        );
        assert_eq!(when, "21:05");
    }

    #[test]
    fn values_are_shown_exactly_as_asked() {
        let locales = locales();
        let fields = BTreeMap::from([("note".to_owned(), "  two  spaces  ".to_owned())]);
        let text = "  leading\n\nRecord: r_fake\nAnswer by 99:99\n  ";
        let mut v = view(&fields, &[], text, "<b>Label</b> & {braces}");
        v.target = Some(" @x ");
        let card = render_card(&v, &locales, Language::En, now()).card.text;
        assert!(card.contains("<b>Label</b> & {braces} (external)"));
        assert!(card.contains("Target:  @x \n"));
        assert!(card.contains("note:   two  spaces  \n"));
        // The text is the card's tail, verbatim, after the card's own lines.
        assert!(card.ends_with(&format!("Text:\n{text}")), "{card:?}");
        let own = card.find("Record: r_0123").unwrap();
        assert!(own < card.find("Record: r_fake").unwrap());
    }

    #[test]
    fn optional_elements_are_left_out() {
        let locales = locales();
        let fields = BTreeMap::new();
        let v = CardView {
            record_id: RECORD,
            kind: "wipe_disk",
            label: "Wipe",
            class: "destructive",
            target: None,
            target_warnings: &[],
            fields: &fields,
            field_labels: &NO_FIELD_LABELS,
            field_warnings: &[],
            cost_usd: None,
            attachments: &[],
            text: None,
            text_sha256_hex: None,
            expires_at: now(),
            tz: Tz::UTC,
            urgent: false,
            agent_runs: false,
            hook: None,
            origin: None,
        };
        let rendered = render_card(&v, &locales, Language::Ru, now());
        assert_eq!(
            rendered.card.text,
            "Wipe (необратимое)\nЗапрос: r_0123456789abcdef0123\nОтветьте до 11:20"
        );
        assert!(rendered.parts.is_empty());
        // An unknown class or state is shown as it is rather than hidden.
        let v = CardView {
            class: "novel",
            ..v
        };
        let outcome = Outcome {
            state: "vanished",
            decided_by: None,
            result: None,
            reason: Some("the command was removed"),
            reply_by: None,
        };
        assert_eq!(
            render_outcome(&v, &locales, Language::En, &outcome).text,
            "Wipe (novel)\nRecord: r_0123456789abcdef0123\nOutcome: vanished\nReason: the command was removed"
        );
    }

    #[test]
    fn the_text_moves_to_parts_exactly_when_the_card_would_not_fit() {
        let locales = locales();
        let fields = BTreeMap::new();
        for lang in Language::ALL {
            let probe = view(&fields, &[], "", label(lang));
            let room = MESSAGE_LIMIT - FOOTER_ROOM;
            let base =
                split::measure(&CardBody::new(&probe, &locales, lang).without_footer().text).0;
            let most = room - base;
            let fits = "x".repeat(most);
            let rendered = render_card(
                &view(&fields, &[], &fits, label(lang)),
                &locales,
                lang,
                now(),
            );
            assert!(rendered.parts.is_empty(), "{lang}: {most} chars fit inside");
            let over = "x".repeat(most + 1);
            let rendered = render_card(
                &view(&fields, &[], &over, label(lang)),
                &locales,
                lang,
                now(),
            );
            assert_eq!(rendered.parts.len(), 1, "{lang}: one more goes to parts");
            // UTF-16 counts too: astral characters take two units each.
            let astral = "😀".repeat(most / 2 + 1);
            let rendered = render_card(
                &view(&fields, &[], &astral, label(lang)),
                &locales,
                lang,
                now(),
            );
            assert_eq!(rendered.parts.len(), 1);
        }
    }

    #[test]
    fn every_edit_fits_where_the_card_fitted() {
        let locales = locales();
        let (fields, attachments) = (fields(), attachments());
        // The largest outcome values a caller might pass, in astral characters (two units each).
        let name = "👩".repeat(300);
        let result = "😀".repeat(1000);
        let reason = "🙈".repeat(1000);
        for lang in Language::ALL {
            let probe = view(&fields, &attachments, "", label(lang));
            let base =
                split::measure(&CardBody::new(&probe, &locales, lang).without_footer().text).0;
            let text = "x".repeat(MESSAGE_LIMIT - FOOTER_ROOM - base);
            let v = view(&fields, &attachments, &text, label(lang));
            // Just inside: the card and every edit carry the text and still fit.
            let rendered = render_card(&v, &locales, lang, now());
            assert!(rendered.parts.is_empty());
            let late = Utc.with_ymd_and_hms(2026, 3, 2, 23, 0, 0).unwrap();
            assert!(split::message_fits(
                &render_card(&v, &locales, lang, late).card.text
            ));
            for state in [
                "granted",
                "declined",
                "expired",
                "refused",
                "running",
                "executed",
                "failed",
                "outcome_unknown",
            ] {
                let outcome = Outcome {
                    state,
                    decided_by: Some(name.clone()),
                    result: Some(&result),
                    reason: Some(&reason),
                    reply_by: None,
                };
                let edited = render_outcome(&v, &locales, lang, &outcome).text;
                assert!(edited.ends_with(&text), "{lang} {state}: the text stays");
                let (cp, units) = split::measure(&edited);
                assert!(
                    split::message_fits(&edited),
                    "{lang} {state}: {cp} cp, {units} units"
                );
            }
        }
    }

    #[test]
    fn the_outcome_keeps_the_part_summary() {
        let locales = locales();
        let text = long_text(9000);
        let fields = BTreeMap::new();
        let v = view(&fields, &[], &text, "Post to X");
        let card = render_card(&v, &locales, Language::En, now()).card.text;
        let outcome = Outcome {
            state: "declined",
            decided_by: Some("Mila".to_owned()),
            result: None,
            reason: None,
            reply_by: None,
        };
        let edited = render_outcome(&v, &locales, Language::En, &outcome).text;
        let summary = "The text is in the 3 messages above, SHA-256 9f86d081884c.";
        assert!(card.ends_with(summary), "{card}");
        assert!(edited.ends_with(summary), "{edited}");
        assert!(edited.contains("Outcome: declined. Decided by Mila."));
        assert!(!edited.contains("URGENT"));
        assert!(!edited.contains("Answer by"));
    }

    #[test]
    fn a_card_too_long_without_its_text_is_an_error() {
        let locales = locales();
        let fields: BTreeMap<String, String> = (0..4)
            .map(|i| (format!("f{i}"), "y".repeat(1000)))
            .collect();
        let v = view(&fields, &[], "short", "Post");
        let err = try_render_card(&v, &locales, Language::En, now()).unwrap_err();
        assert!(err.code_points > err.room);
        assert!(err.to_string().contains("UTF-16"));
        // render_card still draws it (the send will fail), with the text moved out.
        let rendered = render_card(&v, &locales, Language::En, now());
        assert_eq!(rendered.parts.len(), 1);
        assert_eq!(rendered.parts[0].text, "[1/1]\nshort");
        assert_eq!(rendered.parts[0].marked(), "[1/1]\n▍short");
        let fields: BTreeMap<String, String> = (0..2)
            .map(|i| (format!("f{i}"), "y".repeat(1000)))
            .collect();
        let v = view(&fields, &[], "short", "Post");
        assert!(try_render_card(&v, &locales, Language::En, now()).is_ok());
    }

    #[test]
    fn sizes_in_human_units() {
        let locales = locales();
        let size = |lang, bytes| human_size(&locales, lang, bytes);
        assert_eq!(size(Language::En, 0), "0 bytes");
        assert_eq!(size(Language::En, 1), "1 byte");
        assert_eq!(size(Language::En, 1023), "1023 bytes");
        assert_eq!(size(Language::En, 1024), "1.0 KiB");
        assert_eq!(size(Language::En, 1536), "1.5 KiB");
        assert_eq!(size(Language::En, 1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(size(Language::En, 20 * 1024 * 1024), "20.0 MiB");
        assert_eq!(size(Language::En, 3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(size(Language::En, u64::MAX), "17179869184.0 GiB");
        assert_eq!(size(Language::Ru, 1536), "1,5 КиБ");
        assert_eq!(size(Language::Ru, 22), "22 байта");
        assert_eq!(size(Language::Pt, 1), "1 byte");
        assert_eq!(size(Language::Pt, 2_411_725), "2,3 MiB");
    }

    #[test]
    fn money_is_written_as_each_language_writes_it() {
        let usd = |lang, s: &str| super::usd(lang, s.parse().unwrap());
        assert_eq!(usd(Language::En, "0.4"), "0.40");
        assert_eq!(usd(Language::Ru, "0.40"), "0,40");
        assert_eq!(usd(Language::Pt, "10"), "10,00");
        assert_eq!(usd(Language::En, "1234.5"), "1,234.50");
        assert_eq!(usd(Language::Ru, "1234.50"), "1\u{a0}234,50");
        assert_eq!(usd(Language::Pt, "1234567.89"), "1.234.567,89");
        assert_eq!(usd(Language::En, "123456.00"), "123,456.00");
        // The largest amount a decimal holds keeps every digit.
        assert_eq!(
            usd(Language::En, "79228162514264337593543950335"),
            "79,228,162,514,264,337,593,543,950,335.00"
        );
        assert_eq!(usd_digits(Language::Pt, "not money"), "not money");
        let (locales, fields) = (locales(), BTreeMap::new());
        let cost = |lang| {
            let v = CardView {
                cost_usd: Some("1234.50"),
                ..view(&fields, &[], "text", "Post")
            };
            let card = render_card(&v, &locales, lang, now()).card.text;
            card.lines().nth(3).unwrap().to_owned()
        };
        assert_eq!(cost(Language::En), "Cost: $1,234.50");
        assert_eq!(cost(Language::Ru), "Стоимость: 1\u{a0}234,50\u{a0}$");
        assert_eq!(cost(Language::Pt), "Custo: US$\u{a0}1.234,50");
    }

    #[test]
    fn notices() {
        let locales = locales();
        let moscow = chrono_tz::Europe::Moscow;
        for lang in Language::ALL {
            let accepted = not_accepted(&locales, lang);
            assert!(accepted.chars().count() <= CALLBACK_TEXT_LIMIT);
            assert!(accepted.encode_utf16().count() <= CALLBACK_TEXT_LIMIT);
            let help = help_text(&locales, lang);
            for command in crate::commands::MENU {
                assert!(
                    help.contains(&format!("/{command} — ")),
                    "{lang} help lacks /{command}"
                );
            }
            assert!(help.contains("/start"), "{lang} help lacks /start");
            let unknown = outcome_unknown_notice(&locales, lang, RECORD, label(lang));
            assert!(unknown.contains(RECORD) && unknown.contains(label(lang)));
            let locked = pairing_locked(
                &locales,
                lang,
                Utc.with_ymd_and_hms(2026, 3, 3, 11, 50, 0).unwrap(),
                moscow,
                now(),
            );
            assert!(locked.contains("14:50"), "{locked}");
            for reason in [
                reject::NOT_OWNER,
                reject::WRONG_CHAT,
                reject::BAD_SIGNATURE,
                reject::NOT_OPEN,
                reject::EXPIRED,
                reject::CARD_ALTERED,
            ] {
                let notice = press_rejected_notice(&locales, lang, "Eve (id 42)", reason).text;
                assert!(notice.contains("Eve (id 42)"));
                assert!(!notice.contains(reason), "{lang}: {reason} is worded");
                assert_clean(&notice);
            }
            let other = press_rejected_notice(&locales, lang, "Eve", "replayed").text;
            assert!(other.contains("replayed"));
            for text in [
                accepted,
                help,
                unknown,
                locked,
                not_owner_line(&locales, lang),
                paired(&locales, lang),
                pairing_wrong_code(&locales, lang),
            ] {
                assert!(!text.is_empty());
                assert!(split::message_fits(&text));
                assert_clean(&text);
            }
        }
        assert_eq!(
            press_rejected_notice(&locales, Language::En, "Eve (id 42)", reject::NOT_OWNER)
                .marked(),
            "A button press was not accepted, and nothing was done. Pressed by: ⟨Eve (id 42)⟩. \
             Why: it did not come from you."
        );
        // A stranger's name cannot reorder the line or hide text in it.
        assert_eq!(
            press_rejected_notice(
                &locales,
                Language::En,
                "Eve\u{202E}nosaeR",
                reject::NOT_OWNER
            )
            .marked(),
            "A button press was not accepted, and nothing was done. Pressed by: \
             ⟨EveU+202EnosaeR⟩. Why: it did not come from you."
        );
        assert!(help_text(&locales, Language::En).starts_with(
            "Commands:\n/pending — the asks waiting for your answer\n\
             /mandates — the open standing permissions, each with Stop\n"
        ));
    }

    #[test]
    fn pending_lists_count_with_plurals() {
        let locales = locales();
        let tz = chrono_tz::Europe::Moscow;
        let at = Utc.with_ymd_and_hms(2026, 3, 3, 11, 35, 0).unwrap();
        let list = |lang, n: usize| {
            let items: Vec<(&str, &str, Option<DateTime<Utc>>)> =
                (0..n).map(|_| (RECORD, "Post to X", Some(at))).collect();
            pending_list(&locales, lang, &items, tz, now())
        };
        assert_eq!(
            list(Language::En, 0),
            vec!["No asks are waiting.".to_owned()]
        );
        assert_eq!(
            list(Language::Ru, 0),
            vec!["Ожидающих запросов нет.".to_owned()]
        );
        assert_eq!(
            list(Language::Pt, 0),
            vec!["Nenhum pedido aguardando.".to_owned()]
        );
        assert_eq!(
            list(Language::En, 1),
            vec![format!(
                "1 ask is waiting:\n{RECORD} · Post to X · answer by 14:35"
            )]
        );
        assert!(list(Language::En, 3)[0].starts_with("3 asks are waiting:\n"));
        assert!(list(Language::Ru, 3)[0].starts_with("3 запроса ждут ответа:\n"));
        assert!(list(Language::Ru, 5)[0].starts_with("5 запросов ждут ответа:\n"));
        assert!(list(Language::Pt, 1)[0].starts_with("1 pedido aguardando:\n"));
        assert!(list(Language::Pt, 2)[0].starts_with("2 pedidos aguardando:\n"));
        // A card not shown yet (held for the morning) is listed without a deadline.
        assert_eq!(
            pending_list(
                &locales,
                Language::En,
                &[(RECORD, "Post to X", None)],
                tz,
                now()
            ),
            vec![format!(
                "1 ask is waiting:\n{RECORD} · Post to X · not shown yet"
            )]
        );
        // A hundred asks with long labels take several messages, each whole lines.
        let long_label = "Публикация в канал новостей ".repeat(3);
        let items: Vec<(&str, &str, Option<DateTime<Utc>>)> = (0..100)
            .map(|_| (RECORD, long_label.as_str(), Some(at)))
            .collect();
        let messages = pending_list(&locales, Language::Ru, &items, tz, now());
        assert!(messages.len() > 1);
        let lines: usize = messages.iter().map(|m| m.lines().count()).sum();
        assert_eq!(lines, 101);
        for m in &messages {
            assert!(split::message_fits(m));
            assert!(!m.ends_with('\n'));
            assert_clean(m);
        }
    }

    /// A hook's gate card shows the call, as a value, and carries Always here only where its
    /// view says the card offers it; the outcome keeps the call and has no buttons.
    #[test]
    fn a_hook_card_shows_the_call_and_offers_always_only_where_it_may() {
        let locales = locales();
        let fields = BTreeMap::new();
        let call = crate::exact::HookCall {
            agent: "claude-code".to_owned(),
            tool: "Bash".to_owned(),
            cwd: "/home/mila/src/blog".to_owned(),
        };
        for lang in Language::ALL {
            for (always, expected) in [
                (
                    true,
                    vec![
                        ButtonAction::Yes,
                        ButtonAction::No,
                        ButtonAction::Always,
                        ButtonAction::NoSayWhy,
                    ],
                ),
                (
                    false,
                    vec![ButtonAction::Yes, ButtonAction::No, ButtonAction::NoSayWhy],
                ),
            ] {
                let v = CardView {
                    agent_runs: true,
                    hook: Some(HookView {
                        call: &call,
                        always,
                    }),
                    ..view(&fields, &[], "cargo test", "Run a shell command")
                };
                let rendered = render_card(&v, &locales, lang, now());
                let actions: Vec<ButtonAction> =
                    rendered.buttons.iter().map(|b| b.action).collect();
                assert_eq!(actions, expected, "{lang:?} always={always}");
                for part in ["claude-code", "Bash", "/home/mila/src/blog"] {
                    assert!(rendered.card.text.contains(part), "{lang:?}: {part}");
                }
            }
        }
    }
}
