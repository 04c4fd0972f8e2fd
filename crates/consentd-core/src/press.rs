//! The signed button press: the press key, the callback data carried by every card button (`1.<kid>.<a>.<subject>.<tag>`), and the pure verdict on a press.
//!
//! Callback data is visible to the client and can be forged by a modified one, so it carries only
//! ids and a MAC; nothing in it is trusted beyond what the MAC covers. A press also counts only on
//! the message its button was drawn on, showing the text Telegram returned when it was sent: a
//! valid button copied under another message, or a message edited since (by whoever holds the bot
//! token), answers nothing. The verdict needs the facts about the subject (its digest, whether it
//! is open, its window) and the message from the caller, who reads them from the store; this
//! module touches no store, no file and no network (the key's file is the daemon's,
//! `consentd::press`).

use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::deadline::{Late, Now, Window};

/// Telegram refuses callback data longer than this (`BUTTON_DATA_INVALID`).
pub const MAX_CALLBACK_LEN: usize = 64;
/// The only callback format version this build writes and accepts.
pub(crate) const CALLBACK_VERSION: u8 = 1;
/// Bytes of HMAC-SHA-256 kept in the tag: 128 bits, over RFC 2104's floor of 80 bits and half the
/// hash output.
pub(crate) const TAG_LEN: usize = 16;
/// Characters of a 16-byte tag in base64url without padding.
const TAG_CHARS: usize = 22;
/// Bytes of key material.
pub const KEY_LEN: usize = 32;
/// Separates the MAC of a press from any other use of the same key.
const MAC_DOMAIN: &str = "consentd/press/v1";
/// Prefix hashed with the key to name it; a different string from the MAC domain so the key id is
/// never a MAC of anything.
const KEY_ID_DOMAIN: &[u8] = b"consentd key id";

type HmacSha256 = Hmac<Sha256>;

/// What a button does. One letter of it travels in the callback data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PressAction {
    Yes,
    No,
    /// "No, and say why…": a No (or, on a mandate card, a Decline) whose final answer to a
    /// waiting session is held for the owner's reply to the card, up to
    /// `limits.decline_reason_wait`; the reply is the answer's `message`. A plain No answers
    /// at once.
    NoSayWhy,
    Resume,
    Grant,
    Decline,
    Stop,
    CategoryOn,
    CategoryOff,
    /// Opens the mandate card a suggestion offers (`crate::suggest`); its subject is the
    /// suggestion's id. It opens nothing by itself: the card still needs the owner's Grant.
    Suggest,
    /// "Always here" on a hook's gate card: a Yes that also saves an exact rule for the call
    /// (`crate::exact`). Offered only where the subject says so ([`SubjectFacts::offers_always`]).
    Always,
    /// Removes a saved exact rule (`/rules`); its subject is the rule's id.
    Remove,
    /// "Raise today" on the receipt of the action that used up its mandate's day
    /// (`crate::raise`); its subject is that action's record.
    Raise,
}

impl PressAction {
    pub(crate) const ALL: [PressAction; 13] = [
        PressAction::Yes,
        PressAction::No,
        PressAction::NoSayWhy,
        PressAction::Resume,
        PressAction::Grant,
        PressAction::Decline,
        PressAction::Stop,
        PressAction::CategoryOn,
        PressAction::CategoryOff,
        PressAction::Suggest,
        PressAction::Always,
        PressAction::Remove,
        PressAction::Raise,
    ];

    /// The letter written in the callback data.
    pub fn letter(self) -> char {
        match self {
            PressAction::Yes => 'y',
            PressAction::No => 'n',
            PressAction::NoSayWhy => 'w',
            PressAction::Resume => 'r',
            PressAction::Grant => 'g',
            PressAction::Decline => 'd',
            PressAction::Stop => 's',
            PressAction::CategoryOn => 'o',
            PressAction::CategoryOff => 'f',
            PressAction::Suggest => 'm',
            PressAction::Always => 'a',
            PressAction::Remove => 'x',
            PressAction::Raise => 'l',
        }
    }

    pub(crate) fn from_letter(letter: char) -> Option<PressAction> {
        PressAction::ALL.into_iter().find(|a| a.letter() == letter)
    }

    /// The name used in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            PressAction::Yes => "yes",
            PressAction::No => "no",
            PressAction::NoSayWhy => "no_say_why",
            PressAction::Resume => "resume",
            PressAction::Grant => "grant",
            PressAction::Decline => "decline",
            PressAction::Stop => "stop",
            PressAction::CategoryOn => "category_on",
            PressAction::CategoryOff => "category_off",
            PressAction::Suggest => "suggest",
            PressAction::Always => "always",
            PressAction::Remove => "remove",
            PressAction::Raise => "raise",
        }
    }

    /// Actions that only take something back (a no, a Stop, a switch turned off). They still
    /// count on a message that was changed since it was drawn, or that Telegram no longer shows
    /// the bot: refusing them would let whoever changed it keep the owner from stopping what
    /// they want stopped, and they can make nothing run.
    pub(crate) fn only_restricts(self) -> bool {
        matches!(
            self,
            PressAction::No
                | PressAction::NoSayWhy
                | PressAction::Decline
                | PressAction::Stop
                | PressAction::CategoryOff
                | PressAction::Remove
        )
    }

    /// Actions that answer a card name a record; the others may name a record or a kind.
    fn needs_record_id(self) -> bool {
        matches!(
            self,
            PressAction::Yes
                | PressAction::No
                | PressAction::NoSayWhy
                | PressAction::Grant
                | PressAction::Decline
                | PressAction::Always
                | PressAction::Raise
        )
    }
}

impl fmt::Display for PressAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A suggestion's id: "m_" and 20 lowercase hex digits (also of a kind name's shape, which is
/// what callback data allows for a subject that is not a record).
pub fn is_suggestion_id(s: &str) -> bool {
    s.len() == 22
        && s.starts_with("m_")
        && s.bytes()
            .skip(2)
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A record id: "r_" and 20 lowercase hex digits.
pub fn is_record_id(s: &str) -> bool {
    s.len() == 22
        && s.starts_with("r_")
        && s.bytes()
            .skip(2)
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A kind name: `[a-z][a-z0-9_]{0,31}`. Every record id is also of this shape; the action and the
/// caller's lookup tell which one is meant, and the MAC covers both, so the overlap gives a forger
/// nothing.
pub fn is_kind_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

/// Why a press did not count. The presser is told only "not accepted"; the code goes to the
/// journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PressRejection {
    #[error("callback data is malformed")]
    Malformed,
    #[error("callback data has an unknown version")]
    WrongVersion,
    #[error("callback data was signed by another key")]
    StaleKey,
    #[error("callback tag does not verify")]
    BadTag,
    #[error("the presser is not the owner")]
    NotOwner,
    #[error("the press did not come from the owner's private chat")]
    NotPrivateChat,
    #[error("the subject of the press is unknown")]
    UnknownSubject,
    #[error("no button with this data was drawn on the message it came from")]
    WrongMessage,
    #[error("the message's text is not the text it was drawn with")]
    CardAltered,
    #[error("the subject of the press is no longer open")]
    NotOpen,
    #[error("the press came after the subject's ttl")]
    Expired,
    #[error("the wall clock dates the press before its card was shown")]
    BeforeShown,
    #[error("the subject of the press does not offer this button")]
    NotOffered,
}

impl PressRejection {
    /// Whether the button was made by a build that signs buttons otherwise, or under a key this
    /// one no longer holds: drawn before an upgrade or a key rotation. Nothing in it can be
    /// checked, so it can only be refused; the owner is told why (see
    /// [`PressContext::is_owner_in_own_chat`]), everyone else only "not accepted".
    pub fn is_from_before_upgrade(self) -> bool {
        matches!(
            self,
            PressRejection::WrongVersion | PressRejection::StaleKey
        )
    }

    /// The code written in the journal's `press_rejected` entry.
    pub fn as_str(self) -> &'static str {
        match self {
            PressRejection::Malformed => "malformed",
            PressRejection::WrongVersion => "wrong_version",
            PressRejection::StaleKey => "stale_key",
            PressRejection::BadTag => "bad_tag",
            PressRejection::NotOwner => "not_owner",
            PressRejection::NotPrivateChat => "not_private_chat",
            PressRejection::UnknownSubject => "unknown_subject",
            PressRejection::WrongMessage => "wrong_message",
            PressRejection::CardAltered => "card_altered",
            PressRejection::NotOpen => "not_open",
            PressRejection::Expired => "expired",
            PressRejection::BeforeShown => "before_shown",
            PressRejection::NotOffered => "not_offered",
        }
    }
}

/// The key that signs callback data. Kept apart from the bot token: whoever holds the token can
/// read and send the bot's messages, but still cannot make a button that counts.
pub struct PressKey {
    bytes: [u8; KEY_LEN],
    /// Computed once: it is written into every button.
    id: String,
}

impl PressKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<PressKey, getrandom::Error> {
        let mut bytes = [0u8; KEY_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(PressKey::from_bytes(bytes))
    }

    /// The key's bytes, for the one place that writes them: the key file in the state
    /// directory (`consentd::press::load_or_create_key`). Nothing else may show them.
    pub fn secret_bytes(&self) -> &[u8; KEY_LEN] {
        &self.bytes
    }

    /// A key from known bytes (the key file, or a fixed key in tests).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> PressKey {
        let mut h = Sha256::new();
        h.update(KEY_ID_DOMAIN);
        h.update(bytes);
        let id = hex::encode(&h.finalize()[..2]);
        PressKey { bytes, id }
    }

    /// Four lowercase hex digits naming the key, so a press signed before the key changed is told
    /// apart (`StaleKey`) from a forgery (`BadTag`). 16 bits is enough to tell keys apart, and
    /// reveals nothing usable about the key.
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The callback data for a button: `1.<kid>.<a>.<subject>.<tag>`.
    ///
    /// `subject` must be a record id or a kind name (see [`is_record_id`], [`is_kind_name`]); with
    /// anything else the data would be refused as `Malformed` on the way back (and could exceed
    /// Telegram's 64 bytes).
    pub fn sign(&self, action: PressAction, subject: &str, digest: &str, owner_id: i64) -> String {
        debug_assert!(
            is_kind_name(subject)
                && (!action.needs_record_id() || is_record_id(subject))
                && (action != PressAction::Suggest || is_suggestion_id(subject))
                && (action != PressAction::Remove || crate::exact::is_rule_id(subject)),
            "subject {subject:?} is not valid for {action}"
        );
        let tag = self.tag(action, subject, digest, owner_id);
        format!(
            "{CALLBACK_VERSION}.{}.{}.{subject}.{}",
            self.id,
            action.letter(),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// HMAC-SHA-256 over the press, truncated to 16 bytes.
    ///
    /// Every part is preceded by its length as 4 bytes big-endian. That makes the encoding of the
    /// tuple injective whatever bytes the parts hold, so two different presses never feed the MAC
    /// the same message — without relying on the callback grammar (which may grow) to keep some
    /// separator out of the parts. The owner id goes in as 8 bytes big-endian.
    fn tag(
        &self,
        action: PressAction,
        subject: &str,
        digest: &str,
        owner_id: i64,
    ) -> [u8; TAG_LEN] {
        // HMAC takes a key of any length, so this cannot fail.
        let mut mac = HmacSha256::new_from_slice(&self.bytes).expect("HMAC accepts any key length");
        let letter = [action.letter() as u8];
        let owner = owner_id.to_be_bytes();
        let parts: [&[u8]; 5] = [
            MAC_DOMAIN.as_bytes(),
            &letter,
            subject.as_bytes(),
            digest.as_bytes(),
            &owner,
        ];
        for part in parts {
            let len = u32::try_from(part.len()).expect("MAC parts are short");
            mac.update(&len.to_be_bytes());
            mac.update(part);
        }
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }
}

impl fmt::Debug for PressKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The id only: the key must not reach a log through a stray `{:?}`.
        f.debug_struct("PressKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PressKey {
    fn eq(&self, other: &PressKey) -> bool {
        self.bytes.ct_eq(&other.bytes).into()
    }
}

impl Eq for PressKey {}

/// Callback data that has the right shape. Nothing in it is trusted until [`verify`] has checked
/// the tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    pub version: u8,
    pub key_id: String,
    pub action: PressAction,
    pub subject: String,
    tag: [u8; TAG_LEN],
}

/// Checks the shape of callback data: at most 64 ASCII bytes, exactly five dot-separated parts, a
/// decimal version, a 4-hex key id, a known action letter, a subject of the right form, and a tag
/// of 22 base64url characters that decodes to exactly 16 bytes. A tag of any other length is
/// `Malformed` here and never reaches a comparison, so a shorter prefix of a good tag cannot pass.
pub fn parse_callback(data: &str) -> Result<Callback, PressRejection> {
    use PressRejection::Malformed;
    if data.is_empty() || data.len() > MAX_CALLBACK_LEN || !data.is_ascii() {
        return Err(Malformed);
    }
    let parts: Vec<&str> = data.split('.').collect();
    let [version, key_id, action, subject, tag] = parts[..] else {
        return Err(Malformed);
    };

    // Canonical decimal only ("1", not "01" or "+1"), so one version has one spelling.
    let canonical = !version.is_empty()
        && version.bytes().all(|b| b.is_ascii_digit())
        && (version == "0" || !version.starts_with('0'));
    let version: u8 = match version.parse() {
        Ok(v) if canonical => v,
        _ => return Err(Malformed),
    };

    if key_id.len() != 4
        || !key_id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(Malformed);
    }

    let mut letters = action.chars();
    let action = match (letters.next(), letters.next()) {
        (Some(c), None) => PressAction::from_letter(c).ok_or(Malformed)?,
        _ => return Err(Malformed),
    };

    if !is_kind_name(subject) || (action.needs_record_id() && !is_record_id(subject)) {
        return Err(Malformed);
    }
    // A suggestion's button names a suggestion and nothing else.
    if action == PressAction::Suggest && !is_suggestion_id(subject) {
        return Err(Malformed);
    }
    // A Remove names a saved rule and nothing else.
    if action == PressAction::Remove && !crate::exact::is_rule_id(subject) {
        return Err(Malformed);
    }

    // The engine refuses padding and non-zero trailing bits, so each tag has one spelling.
    if tag.len() != TAG_CHARS {
        return Err(Malformed);
    }
    let decoded = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Malformed)?;
    let tag: [u8; TAG_LEN] = decoded.try_into().map_err(|_| Malformed)?;

    Ok(Callback {
        version,
        key_id: key_id.to_string(),
        action,
        subject: subject.to_string(),
        tag,
    })
}

/// What is known about the press and its subject; the caller fills it from the update and the
/// store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressContext<'a> {
    /// The Telegram user who pressed.
    pub presser_id: i64,
    /// The chat the card was pressed in.
    pub chat_id: i64,
    pub chat_is_private: bool,
    /// The paired owner; `None` before pairing, when no press counts.
    pub owner_id: Option<i64>,
    /// The subject named by the callback data as the store knows it; `None` if it does not.
    pub subject: Option<SubjectFacts<'a>>,
    /// The message the press came from, as the store knows it.
    pub message: MessageFacts,
    /// The daemon's own clocks.
    pub now: Now,
}

impl PressContext<'_> {
    /// Whether the press came from the paired owner in their own private chat (there the chat's
    /// id is the owner's id): the only presser ever told more than "not accepted".
    pub fn is_owner_in_own_chat(&self) -> bool {
        self.owner_id == Some(self.presser_id)
            && self.chat_is_private
            && self.chat_id == self.presser_id
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectFacts<'a> {
    /// The digest the card was drawn for (64 hex); a press counts only for this digest.
    pub digest: &'a str,
    /// Still waiting for an answer.
    pub open: bool,
    /// When its card was shown and until when it may be answered; `None` for subjects that do
    /// not expire (category switches, a Stop, a Resume).
    pub window: Option<Window>,
    /// Whether its card offers Always here: a hook's gate card of an approval-only category
    /// that is not destructive. Read only for an Always press.
    pub offers_always: bool,
}

/// The message a button was pressed under, as the daemon drew it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFacts {
    /// No button with this data was drawn on that message (or the press named no message).
    NotDrawn,
    /// It was, and this is how the message's text now compares with the text Telegram returned
    /// when it was sent.
    Drawn(AsDrawn),
}

/// What the pressed message shows (its text, entities and keyboard) against what it showed when
/// it was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsDrawn {
    Same,
    Changed,
    /// Telegram did not show the bot the message (it is too old, or inaccessible).
    Unreadable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept {
        action: PressAction,
        subject: String,
    },
    Reject(PressRejection),
}

impl Verdict {
    pub fn is_accept(&self) -> bool {
        matches!(self, Verdict::Accept { .. })
    }
}

/// Decides whether a press counts. The checks run in a fixed order and the first that fails names
/// the rejection: shape, version, key id, subject known, tag, presser, chat, the message it was
/// drawn on, that message's text, whether the subject offers the button (Always here only),
/// open, the window (before the card was shown; past its ttl on either clock).
///
/// The tag is checked before the presser so that a forged press is journaled as a forgery
/// whoever sent it; the presser and chat checks still apply to genuine data, because a card's
/// button can be replayed by anyone who sees the data (a forwarded card, a modified client). The
/// message checks come next: genuine data under another message, or under a message whose text
/// was changed since it was drawn, says the owner may have been shown something else.
pub fn verify(data: &str, key: &PressKey, ctx: &PressContext) -> Verdict {
    match check(data, key, ctx) {
        Ok(cb) => Verdict::Accept {
            action: cb.action,
            subject: cb.subject,
        },
        Err(r) => Verdict::Reject(r),
    }
}

fn check(data: &str, key: &PressKey, ctx: &PressContext) -> Result<Callback, PressRejection> {
    let cb = parse_callback(data)?;
    if cb.version != CALLBACK_VERSION {
        return Err(PressRejection::WrongVersion);
    }
    if cb.key_id != key.id {
        return Err(PressRejection::StaleKey);
    }
    let facts = ctx.subject.as_ref().ok_or(PressRejection::UnknownSubject)?;
    // The MAC binds the owner's id; with no owner there is nothing a press could be for.
    let owner = ctx.owner_id.ok_or(PressRejection::NotOwner)?;
    let expected = key.tag(cb.action, &cb.subject, facts.digest, owner);
    // Both sides are exactly 16 bytes here (parse refused any other length); compared in
    // constant time so the tag cannot be learnt byte by byte.
    if !bool::from(expected.ct_eq(&cb.tag)) {
        return Err(PressRejection::BadTag);
    }
    if ctx.presser_id != owner {
        return Err(PressRejection::NotOwner);
    }
    // In a private chat the chat id is the other user's id, so this pins the owner's own chat.
    if !ctx.chat_is_private || ctx.chat_id != owner {
        return Err(PressRejection::NotPrivateChat);
    }
    match ctx.message {
        MessageFacts::NotDrawn => return Err(PressRejection::WrongMessage),
        // A message changed since it was drawn, or one Telegram no longer shows, may have been
        // made to say something else: only a press that takes something back counts on it.
        MessageFacts::Drawn(AsDrawn::Changed | AsDrawn::Unreadable)
            if !cb.action.only_restricts() =>
        {
            return Err(PressRejection::CardAltered)
        }
        MessageFacts::Drawn(_) => {}
    }
    // Never signed where it is not offered, so a valid tag cannot exist; checked all the same,
    // as the one thing an Always press asks beyond a Yes.
    if cb.action == PressAction::Always && !facts.offers_always {
        return Err(PressRejection::NotOffered);
    }
    if !facts.open {
        return Err(PressRejection::NotOpen);
    }
    if let Some(window) = &facts.window {
        match window.judge(&ctx.now) {
            Ok(()) => {}
            Err(Late::BeforeShown) => return Err(PressRejection::BeforeShown),
            Err(Late::PastWall | Late::PastMonotonic) => return Err(PressRejection::Expired),
        }
    }
    Ok(cb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Monotonic;
    use chrono::{DateTime, TimeDelta, Utc};
    use proptest::prelude::*;

    const OWNER: i64 = 123_456_789;
    const STRANGER: i64 = 987_654_321;
    const GROUP: i64 = -1_001_234_567_890;
    const REC: &str = "r_0123456789abcdef0123";
    const REC2: &str = "r_fedcba9876543210fedc";
    const RULE: &str = "u_0123456789abcdef0123";
    const DIGEST: &str = "aa11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";
    const DIGEST2: &str = "bb11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";

    fn key() -> PressKey {
        PressKey::from_bytes([7u8; KEY_LEN])
    }

    fn other_key() -> PressKey {
        PressKey::from_bytes([9u8; KEY_LEN])
    }

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn expiry() -> DateTime<Utc> {
        t0() + TimeDelta::minutes(30)
    }

    /// The card was shown a minute before t0, at 1,000 s of the machine's boot.
    fn shown_at() -> DateTime<Utc> {
        t0() - TimeDelta::minutes(1)
    }

    fn window() -> Window {
        Window {
            shown_at: shown_at(),
            expires_at: expiry(),
            shown_monotonic: Some(Monotonic {
                boot: "boot".to_owned(),
                since_boot: std::time::Duration::from_secs(1_000),
            }),
        }
    }

    /// Both clocks at `wall`, the monotonic one in step with it.
    fn at(wall: DateTime<Utc>) -> Now {
        at_both(wall, (wall - shown_at()).num_seconds())
    }

    /// The wall clock at `wall`, the monotonic clock `elapsed` seconds after the card was shown.
    fn at_both(wall: DateTime<Utc>, elapsed: i64) -> Now {
        Now {
            wall,
            monotonic: Monotonic {
                boot: "boot".to_owned(),
                since_boot: std::time::Duration::from_secs(1_000u64.saturating_add_signed(elapsed)),
            },
        }
    }

    /// The owner pressing in their private chat, on the message the card was drawn on, on an
    /// open, unexpired card with DIGEST.
    fn good_ctx() -> PressContext<'static> {
        PressContext {
            presser_id: OWNER,
            chat_id: OWNER,
            chat_is_private: true,
            owner_id: Some(OWNER),
            subject: Some(SubjectFacts {
                digest: DIGEST,
                open: true,
                window: Some(window()),
                offers_always: true,
            }),
            message: MessageFacts::Drawn(AsDrawn::Same),
            now: at(t0()),
        }
    }

    fn yes() -> String {
        key().sign(PressAction::Yes, REC, DIGEST, OWNER)
    }

    /// Only the paired owner in their own private chat is told more than "not accepted".
    #[test]
    fn only_the_owner_in_their_own_chat_is_told_why() {
        // (case, presser, chat, private chat, paired owner, told why)
        type Case = (&'static str, i64, i64, bool, Option<i64>, bool);
        let cases: [Case; 6] = [
            (
                "the owner in their chat",
                OWNER,
                OWNER,
                true,
                Some(OWNER),
                true,
            ),
            (
                "a stranger in their own chat",
                STRANGER,
                STRANGER,
                true,
                Some(OWNER),
                false,
            ),
            (
                "a stranger naming the owner's chat",
                STRANGER,
                OWNER,
                true,
                Some(OWNER),
                false,
            ),
            (
                "the owner in a group",
                OWNER,
                GROUP,
                false,
                Some(OWNER),
                false,
            ),
            (
                "the owner in another's private chat",
                OWNER,
                STRANGER,
                true,
                Some(OWNER),
                false,
            ),
            ("no owner paired", OWNER, OWNER, true, None, false),
        ];
        for (case, presser, chat, private, owner, told) in cases {
            let ctx = PressContext {
                presser_id: presser,
                chat_id: chat,
                chat_is_private: private,
                owner_id: owner,
                ..good_ctx()
            };
            assert_eq!(ctx.is_owner_in_own_chat(), told, "{case}");
        }
    }

    /// Only a button this build cannot read at all counts as drawn before an upgrade.
    #[test]
    fn from_before_an_upgrade_is_another_format_or_another_key() {
        let mut from_before: Vec<&str> = [
            PressRejection::Malformed,
            PressRejection::WrongVersion,
            PressRejection::StaleKey,
            PressRejection::BadTag,
            PressRejection::NotOwner,
            PressRejection::NotPrivateChat,
            PressRejection::UnknownSubject,
            PressRejection::WrongMessage,
            PressRejection::CardAltered,
            PressRejection::NotOpen,
            PressRejection::Expired,
            PressRejection::BeforeShown,
            PressRejection::NotOffered,
        ]
        .into_iter()
        .filter(|r| r.is_from_before_upgrade())
        .map(PressRejection::as_str)
        .collect();
        from_before.sort_unstable();
        assert_eq!(from_before, ["stale_key", "wrong_version"]);
    }

    /// Replaces the tag part of `data` with `tag` bytes of any length.
    fn with_tag(data: &str, tag: &[u8]) -> String {
        let (head, _) = data.rsplit_once('.').unwrap();
        format!("{head}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    fn tag_of(data: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD
            .decode(data.rsplit_once('.').unwrap().1)
            .unwrap()
    }

    fn relabel(data: &str, from: char, to: char) -> String {
        let mut parts: Vec<String> = data.split('.').map(str::to_string).collect();
        assert_eq!(parts[2], from.to_string());
        parts[2] = to.to_string();
        parts.join(".")
    }

    fn reject(r: PressRejection) -> Verdict {
        Verdict::Reject(r)
    }

    #[test]
    fn good_press_is_accepted() {
        assert_eq!(
            verify(&yes(), &key(), &good_ctx()),
            Verdict::Accept {
                action: PressAction::Yes,
                subject: REC.to_string()
            }
        );
    }

    #[test]
    fn every_action_round_trips() {
        for action in PressAction::ALL {
            let subject = match action {
                _ if action.needs_record_id() => REC,
                PressAction::Suggest => "m_0123456789abcdef0123",
                PressAction::Remove => RULE,
                _ => "shell_exec",
            };
            let data = key().sign(action, subject, DIGEST, OWNER);
            let cb = parse_callback(&data).unwrap();
            assert_eq!(cb.version, 1);
            assert_eq!(cb.key_id, key().id());
            assert_eq!(cb.action, action, "{action}");
            assert_eq!(cb.subject, subject);
            assert_eq!(
                verify(&data, &key(), &good_ctx()),
                Verdict::Accept {
                    action,
                    subject: subject.to_string()
                },
                "{action}"
            );
        }
    }

    #[test]
    fn format_is_as_documented() {
        let data = yes();
        let parts: Vec<&str> = data.split('.').collect();
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0], "1");
        assert_eq!(parts[1], key().id());
        assert_eq!(parts[2], "y");
        assert_eq!(parts[3], REC);
        assert_eq!(parts[4].len(), 22);
        assert!(data.is_ascii());
    }

    #[test]
    fn key_id_is_first_four_hex_of_domain_hash() {
        let mut h = Sha256::new();
        h.update(b"consentd key id");
        h.update([7u8; KEY_LEN]);
        assert_eq!(key().id(), hex::encode(h.finalize())[..4]);
        assert_ne!(key().id(), other_key().id());
    }

    #[test]
    fn worst_case_fits_64_bytes() {
        let longest_kind = format!("a{}", "_".repeat(31));
        assert!(is_kind_name(&longest_kind));
        for action in PressAction::ALL {
            let subject = match action {
                _ if action.needs_record_id() => REC,
                PressAction::Suggest => "m_0123456789abcdef0123",
                PressAction::Remove => RULE,
                _ => longest_kind.as_str(),
            };
            let data = key().sign(action, subject, DIGEST, i64::MIN);
            assert!(data.len() <= MAX_CALLBACK_LEN, "{action}: {}", data.len());
            assert!(parse_callback(&data).is_ok(), "{action}");
        }
        let longest = key().sign(PressAction::CategoryOff, &longest_kind, DIGEST, OWNER);
        assert_eq!(longest.len(), 64);
    }

    #[test]
    fn mac_input_is_length_prefixed() {
        // Moving a byte between subject and digest changes the tag.
        let k = key();
        assert_ne!(
            k.tag(PressAction::Stop, "ab", "c", OWNER),
            k.tag(PressAction::Stop, "a", "bc", OWNER)
        );
    }

    #[test]
    fn forged_presses_are_rejected() {
        let good = yes();
        let no = key().sign(PressAction::No, REC, DIGEST, OWNER);
        let tag = tag_of(&good);
        let rec2 = key().sign(PressAction::Yes, REC2, DIGEST, OWNER);
        let other_record_tag = with_tag(&good, &tag_of(&rec2));
        let longest_kind = format!("a{}", "_".repeat(31));
        let full64 = key().sign(PressAction::CategoryOn, &longest_kind, DIGEST, OWNER);
        let too_long = full64.replacen(&longest_kind, &format!("{longest_kind}a"), 1);
        assert_eq!(too_long.len(), 65);

        let ctx = good_ctx();
        let with = |f: &dyn Fn(&mut PressContext<'static>)| {
            let mut c = good_ctx();
            f(&mut c);
            c
        };
        let facts = |open: bool, window: Option<Window>| {
            Some(SubjectFacts {
                digest: DIGEST,
                open,
                window,
                offers_always: true,
            })
        };

        let mut tag15 = tag.clone();
        tag15.pop();
        let mut tag17 = tag.clone();
        tag17.push(0);

        let cases: Vec<(&str, String, PressContext, Verdict)> = vec![
            (
                "another user's press with valid data",
                good.clone(),
                with(&|c| c.presser_id = STRANGER),
                reject(PressRejection::NotOwner),
            ),
            (
                "another user's press in their own private chat",
                good.clone(),
                with(&|c| {
                    c.presser_id = STRANGER;
                    c.chat_id = STRANGER
                }),
                reject(PressRejection::NotOwner),
            ),
            (
                "the owner's press from a group chat",
                good.clone(),
                with(&|c| {
                    c.chat_id = GROUP;
                    c.chat_is_private = false
                }),
                reject(PressRejection::NotPrivateChat),
            ),
            (
                "the owner's press in a non-private chat with the owner's id",
                good.clone(),
                with(&|c| c.chat_is_private = false),
                reject(PressRejection::NotPrivateChat),
            ),
            (
                "the owner's press in someone else's private chat",
                good.clone(),
                with(&|c| c.chat_id = STRANGER),
                reject(PressRejection::NotPrivateChat),
            ),
            (
                "15-byte tag (a prefix of the good one)",
                with_tag(&good, &tag15),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "17-byte tag (the good one and a byte more)",
                with_tag(&good, &tag17),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "empty tag",
                with_tag(&good, &[]),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "tag with padding",
                format!("{}==", &good[..good.len() - 2]),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "a tag for another record",
                other_record_tag,
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "a tag for another digest",
                key().sign(PressAction::Yes, REC, DIGEST2, OWNER),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "a tag for another owner",
                key().sign(PressAction::Yes, REC, DIGEST, STRANGER),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "a tag for another owner, pressed by that user",
                key().sign(PressAction::Yes, REC, DIGEST, STRANGER),
                with(&|c| {
                    c.presser_id = STRANGER;
                    c.chat_id = STRANGER
                }),
                reject(PressRejection::BadTag),
            ),
            (
                "yes relabelled no",
                relabel(&good, 'y', 'n'),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "no relabelled yes",
                relabel(&no, 'n', 'y'),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "yes relabelled grant",
                relabel(&good, 'y', 'g'),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "a stale key id (signed by another key)",
                other_key().sign(PressAction::Yes, REC, DIGEST, OWNER),
                ctx.clone(),
                reject(PressRejection::StaleKey),
            ),
            (
                "another key's tag under the current key id",
                with_tag(
                    &good,
                    &tag_of(&other_key().sign(PressAction::Yes, REC, DIGEST, OWNER)),
                ),
                ctx.clone(),
                reject(PressRejection::BadTag),
            ),
            (
                "wrong version",
                format!("2{}", &good[1..]),
                ctx.clone(),
                reject(PressRejection::WrongVersion),
            ),
            (
                "version 0",
                format!("0{}", &good[1..]),
                ctx.clone(),
                reject(PressRejection::WrongVersion),
            ),
            (
                "version with a leading zero",
                format!("01{}", &good[1..]),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "garbage",
                "hello world".to_string(),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "empty",
                String::new(),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "six parts",
                format!("{good}.x"),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "four parts",
                good.rsplit_once('.').unwrap().0.to_string(),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "unknown action letter",
                relabel(&good, 'y', 'x'),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "uppercase key id",
                good.replacen(&key().id(), &key().id().to_uppercase(), 1),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "uppercase record id",
                good.replacen(REC, &REC.to_uppercase(), 1),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "yes on a kind name instead of a record",
                key()
                    .sign(PressAction::CategoryOn, "shell_exec", DIGEST, OWNER)
                    .replacen(".o.", ".y.", 1),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "non-ASCII",
                good.replacen('y', "ÿ", 1),
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "64 bytes, well formed",
                full64.clone(),
                ctx.clone(),
                Verdict::Accept {
                    action: PressAction::CategoryOn,
                    subject: longest_kind.clone(),
                },
            ),
            (
                "65-byte data",
                too_long,
                ctx.clone(),
                reject(PressRejection::Malformed),
            ),
            (
                "unknown subject",
                good.clone(),
                with(&|c| c.subject = None),
                reject(PressRejection::UnknownSubject),
            ),
            (
                "no owner paired yet",
                good.clone(),
                with(&|c| c.owner_id = None),
                reject(PressRejection::NotOwner),
            ),
            (
                "a press on a closed subject",
                good.clone(),
                with(&|c| c.subject = facts(false, Some(window()))),
                reject(PressRejection::NotOpen),
            ),
            (
                "a press exactly at expires_at",
                good.clone(),
                with(&|c| c.now = at(expiry())),
                reject(PressRejection::Expired),
            ),
            (
                "a press one second after expires_at",
                good.clone(),
                with(&|c| c.now = at(expiry() + TimeDelta::seconds(1))),
                reject(PressRejection::Expired),
            ),
            (
                "a press one second before expires_at",
                good.clone(),
                with(&|c| c.now = at(expiry() - TimeDelta::seconds(1))),
                Verdict::Accept {
                    action: PressAction::Yes,
                    subject: REC.to_string(),
                },
            ),
            (
                "the wall clock stepped back 2 h, a press 31 min after the card was shown",
                good.clone(),
                with(&|c| {
                    c.now = at_both(
                        shown_at() + TimeDelta::minutes(31) - TimeDelta::hours(2),
                        31 * 60,
                    )
                }),
                reject(PressRejection::BeforeShown),
            ),
            (
                "the wall clock stepped back 10 min, a press 31 min after the card was shown",
                good.clone(),
                with(&|c| c.now = at_both(shown_at() + TimeDelta::minutes(21), 31 * 60)),
                reject(PressRejection::Expired),
            ),
            (
                "the wall clock a second before the card was shown",
                good.clone(),
                with(&|c| c.now = at_both(shown_at() - TimeDelta::seconds(1), 5)),
                reject(PressRejection::BeforeShown),
            ),
            (
                "the good data under another message",
                good.clone(),
                with(&|c| c.message = MessageFacts::NotDrawn),
                reject(PressRejection::WrongMessage),
            ),
            (
                "the good data under its card, edited since it was drawn",
                good.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Changed)),
                reject(PressRejection::CardAltered),
            ),
            (
                "a yes under a card Telegram no longer shows the bot",
                good.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Unreadable)),
                reject(PressRejection::CardAltered),
            ),
            (
                "a no under a card Telegram no longer shows the bot",
                no.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Unreadable)),
                Verdict::Accept {
                    action: PressAction::No,
                    subject: REC.to_string(),
                },
            ),
            (
                "a no under a card edited since it was drawn",
                no.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Changed)),
                Verdict::Accept {
                    action: PressAction::No,
                    subject: REC.to_string(),
                },
            ),
            (
                "a subject without a ttl",
                good.clone(),
                with(&|c| {
                    c.subject = facts(true, None);
                    c.now = at(expiry() + TimeDelta::days(365))
                }),
                Verdict::Accept {
                    action: PressAction::Yes,
                    subject: REC.to_string(),
                },
            ),
            (
                "the good press",
                good.clone(),
                ctx.clone(),
                Verdict::Accept {
                    action: PressAction::Yes,
                    subject: REC.to_string(),
                },
            ),
        ];

        for (label, data, ctx, want) in &cases {
            assert_eq!(&verify(data, &key(), ctx), want, "case: {label} ({data:?})");
        }
    }

    /// Always here is a Yes that also saves a rule: everything that rejects a Yes rejects it,
    /// and a card that does not offer it (a destructive category's, one not from a hook) too.
    #[test]
    fn an_always_press_counts_only_as_a_yes_would_and_only_where_offered() {
        let always = key().sign(PressAction::Always, REC, DIGEST, OWNER);
        let tag = tag_of(&always);
        let with = |f: &dyn Fn(&mut PressContext<'static>)| {
            let mut c = good_ctx();
            f(&mut c);
            c
        };
        let accept = Verdict::Accept {
            action: PressAction::Always,
            subject: REC.to_owned(),
        };
        let cases: Vec<(&str, String, PressContext, Verdict)> = vec![
            ("the owner's press", always.clone(), good_ctx(), accept),
            (
                "a forged tag",
                with_tag(&always, &[0u8; TAG_LEN]),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "a truncated tag",
                with_tag(&always, &tag[..TAG_LEN - 1]),
                good_ctx(),
                reject(PressRejection::Malformed),
            ),
            (
                "a Yes relabelled as Always",
                relabel(&yes(), 'y', 'a'),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "another user",
                always.clone(),
                with(&|c| c.presser_id = STRANGER),
                reject(PressRejection::NotOwner),
            ),
            (
                "another chat",
                always.clone(),
                with(&|c| {
                    c.chat_id = GROUP;
                    c.chat_is_private = false;
                }),
                reject(PressRejection::NotPrivateChat),
            ),
            (
                "replayed: the card is answered",
                always.clone(),
                with(&|c| c.subject.as_mut().unwrap().open = false),
                reject(PressRejection::NotOpen),
            ),
            (
                "a card that does not offer it",
                always.clone(),
                with(&|c| c.subject.as_mut().unwrap().offers_always = false),
                reject(PressRejection::NotOffered),
            ),
            (
                "after the ttl",
                always.clone(),
                with(&|c| c.now = at(expiry() + TimeDelta::seconds(1))),
                reject(PressRejection::Expired),
            ),
            (
                "under a message it was not drawn on",
                always.clone(),
                with(&|c| c.message = MessageFacts::NotDrawn),
                reject(PressRejection::WrongMessage),
            ),
            (
                "on a message changed since it was drawn",
                always.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Changed)),
                reject(PressRejection::CardAltered),
            ),
            (
                "signed for another digest",
                key().sign(PressAction::Always, REC, DIGEST2, OWNER),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
        ];
        for (label, data, ctx, want) in &cases {
            assert_eq!(&verify(data, &key(), ctx), want, "case: {label}");
        }
        // A Yes never asks whether Always is offered.
        let no_always = with(&|c| c.subject.as_mut().unwrap().offers_always = false);
        assert!(verify(&yes(), &key(), &no_always).is_accept());
    }

    /// "No, and say why…" is judged as a No, in the same order: only the owner's press in their
    /// chat, on an open card within its window, with a tag signed for this action, this
    /// record and its digest, counts; being a No, it still counts on a changed message.
    #[test]
    fn a_no_and_say_why_press_counts_only_as_a_no_would() {
        let why = key().sign(PressAction::NoSayWhy, REC, DIGEST, OWNER);
        let tag = tag_of(&why);
        let with = |f: &dyn Fn(&mut PressContext<'static>)| {
            let mut c = good_ctx();
            f(&mut c);
            c
        };
        let accept = Verdict::Accept {
            action: PressAction::NoSayWhy,
            subject: REC.to_owned(),
        };
        let no = key().sign(PressAction::No, REC, DIGEST, OWNER);
        let other_record = key().sign(PressAction::NoSayWhy, REC2, DIGEST, OWNER);
        let (head, _) = why.rsplit_once('.').unwrap();
        let cases: Vec<(&str, String, PressContext, Verdict)> = vec![
            ("the owner's press", why.clone(), good_ctx(), accept.clone()),
            (
                "on a message changed since it was drawn",
                why.clone(),
                with(&|c| c.message = MessageFacts::Drawn(AsDrawn::Changed)),
                accept,
            ),
            (
                "a forged tag",
                with_tag(&why, &[0u8; TAG_LEN]),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "a short tag",
                with_tag(&why, &tag[..TAG_LEN - 1]),
                good_ctx(),
                reject(PressRejection::Malformed),
            ),
            (
                "another record's tag",
                format!("{head}.{}", other_record.rsplit_once('.').unwrap().1),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "a No relabelled as No and say why",
                relabel(&no, 'n', 'w'),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "signed for another digest",
                key().sign(PressAction::NoSayWhy, REC, DIGEST2, OWNER),
                good_ctx(),
                reject(PressRejection::BadTag),
            ),
            (
                "another user",
                why.clone(),
                with(&|c| c.presser_id = STRANGER),
                reject(PressRejection::NotOwner),
            ),
            (
                "another chat",
                why.clone(),
                with(&|c| {
                    c.chat_id = GROUP;
                    c.chat_is_private = false;
                }),
                reject(PressRejection::NotPrivateChat),
            ),
            (
                "under a message it was not drawn on",
                why.clone(),
                with(&|c| c.message = MessageFacts::NotDrawn),
                reject(PressRejection::WrongMessage),
            ),
            (
                "stale: the card is answered",
                why.clone(),
                with(&|c| c.subject.as_mut().unwrap().open = false),
                reject(PressRejection::NotOpen),
            ),
            (
                "after the ttl",
                why.clone(),
                with(&|c| c.now = at(expiry() + TimeDelta::seconds(1))),
                reject(PressRejection::Expired),
            ),
            (
                "signed by an old key",
                other_key().sign(PressAction::NoSayWhy, REC, DIGEST, OWNER),
                good_ctx(),
                reject(PressRejection::StaleKey),
            ),
        ];
        for (label, data, ctx, want) in &cases {
            assert_eq!(&verify(data, &key(), ctx), want, "case: {label}");
        }
        assert!(why.len() <= MAX_CALLBACK_LEN, "{why}");
    }

    /// A Remove names a rule, and only takes something back: it counts on a changed message.
    #[test]
    fn a_remove_press_names_a_rule() {
        let remove = key().sign(PressAction::Remove, RULE, DIGEST, OWNER);
        let changed = PressContext {
            message: MessageFacts::Drawn(AsDrawn::Changed),
            ..good_ctx()
        };
        let (head, tag) = remove.rsplit_once('.').unwrap();
        let (head, _) = head.rsplit_once('.').unwrap();
        let cases: Vec<(&str, String, PressContext, Verdict)> = vec![
            (
                "the owner's press",
                remove.clone(),
                good_ctx(),
                Verdict::Accept {
                    action: PressAction::Remove,
                    subject: RULE.to_owned(),
                },
            ),
            (
                "on a changed message",
                remove.clone(),
                changed,
                Verdict::Accept {
                    action: PressAction::Remove,
                    subject: RULE.to_owned(),
                },
            ),
            (
                "naming a record",
                format!("{head}.{REC}.{tag}"),
                good_ctx(),
                reject(PressRejection::Malformed),
            ),
            (
                "naming a kind",
                format!("{head}.shell_exec.{tag}"),
                good_ctx(),
                reject(PressRejection::Malformed),
            ),
            (
                "another user",
                remove.clone(),
                PressContext {
                    presser_id: STRANGER,
                    ..good_ctx()
                },
                reject(PressRejection::NotOwner),
            ),
        ];
        for (label, data, ctx, want) in &cases {
            assert_eq!(&verify(data, &key(), ctx), want, "case: {label}");
        }
    }

    #[test]
    fn every_flipped_tag_bit_is_a_bad_tag() {
        let good = yes();
        let tag = tag_of(&good);
        assert_eq!(tag.len(), TAG_LEN);
        for bit in 0..TAG_LEN * 8 {
            let mut t = tag.clone();
            t[bit / 8] ^= 1 << (bit % 8);
            let data = with_tag(&good, &t);
            assert_eq!(
                verify(&data, &key(), &good_ctx()),
                reject(PressRejection::BadTag),
                "bit {bit} flipped"
            );
        }
    }

    #[test]
    fn checks_run_in_the_documented_order() {
        // A stranger in a group sending a forged tag under another message for a closed subject
        // whose card was shown after the press: the tag fails first.
        let forged = with_tag(&yes(), &[0u8; TAG_LEN]);
        let ctx = PressContext {
            presser_id: STRANGER,
            chat_id: GROUP,
            chat_is_private: false,
            owner_id: Some(OWNER),
            subject: Some(SubjectFacts {
                digest: DIGEST,
                open: false,
                window: Some(window()),
                offers_always: true,
            }),
            message: MessageFacts::NotDrawn,
            now: at_both(shown_at() - TimeDelta::hours(1), 3_600),
        };
        assert_eq!(
            verify(&forged, &key(), &ctx),
            reject(PressRejection::BadTag)
        );
        // Genuine data, same context: the presser fails next, then the chat, the message, its
        // text, open, then the window.
        let mut ctx = ctx;
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::NotOwner)
        );
        ctx.presser_id = OWNER;
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::NotPrivateChat)
        );
        ctx.chat_id = OWNER;
        ctx.chat_is_private = true;
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::WrongMessage)
        );
        ctx.message = MessageFacts::Drawn(AsDrawn::Changed);
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::CardAltered)
        );
        ctx.message = MessageFacts::Drawn(AsDrawn::Same);
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::NotOpen)
        );
        ctx.subject = Some(SubjectFacts {
            digest: DIGEST,
            open: true,
            window: Some(window()),
            offers_always: true,
        });
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::BeforeShown)
        );
        ctx.now = at_both(expiry(), 3_600);
        assert_eq!(
            verify(&yes(), &key(), &ctx),
            reject(PressRejection::Expired)
        );
        // A stale key beats an unknown subject; an unknown subject beats a bad tag.
        let stale = other_key().sign(PressAction::Yes, REC, DIGEST, OWNER);
        ctx.subject = None;
        assert_eq!(
            verify(&stale, &key(), &ctx),
            reject(PressRejection::StaleKey)
        );
        assert_eq!(
            verify(&forged, &key(), &ctx),
            reject(PressRejection::UnknownSubject)
        );
    }

    #[test]
    fn rejection_codes_and_display() {
        let all = [
            (PressRejection::Malformed, "malformed"),
            (PressRejection::WrongVersion, "wrong_version"),
            (PressRejection::StaleKey, "stale_key"),
            (PressRejection::BadTag, "bad_tag"),
            (PressRejection::NotOwner, "not_owner"),
            (PressRejection::NotPrivateChat, "not_private_chat"),
            (PressRejection::UnknownSubject, "unknown_subject"),
            (PressRejection::WrongMessage, "wrong_message"),
            (PressRejection::CardAltered, "card_altered"),
            (PressRejection::NotOpen, "not_open"),
            (PressRejection::Expired, "expired"),
            (PressRejection::BeforeShown, "before_shown"),
            (PressRejection::NotOffered, "not_offered"),
        ];
        for (r, code) in all {
            assert_eq!(r.as_str(), code);
            assert!(!r.to_string().is_empty());
        }
    }

    #[test]
    fn action_letters_are_distinct_and_round_trip() {
        let letters: std::collections::HashSet<char> =
            PressAction::ALL.iter().map(|a| a.letter()).collect();
        assert_eq!(letters.len(), PressAction::ALL.len());
        for a in PressAction::ALL {
            assert_eq!(PressAction::from_letter(a.letter()), Some(a));
        }
        assert_eq!(PressAction::from_letter('z'), None);
    }

    #[test]
    fn subject_forms() {
        assert!(is_record_id(REC));
        assert!(!is_record_id("r_0123456789abcdef012"));
        assert!(!is_record_id("r_0123456789abcdef01234"));
        assert!(!is_record_id("r_0123456789abcdef012g"));
        assert!(!is_record_id("x_0123456789abcdef0123"));
        assert!(is_kind_name("a"));
        assert!(is_kind_name("shell_exec2"));
        assert!(!is_kind_name(""));
        assert!(!is_kind_name("2shell"));
        assert!(!is_kind_name("_shell"));
        assert!(!is_kind_name("Shell"));
        assert!(!is_kind_name("shell.exec"));
        assert!(!is_kind_name(&"a".repeat(33)));
    }

    #[test]
    fn debug_hides_the_key() {
        let k = key();
        let shown = format!("{k:?} {k:#?}");
        assert!(shown.contains(&k.id()));
        assert!(!shown.contains(&hex::encode(k.bytes)));
        assert!(!shown.contains(&URL_SAFE_NO_PAD.encode(k.bytes)));
        assert!(!shown.contains("7, 7"), "{shown}");
        let g = PressKey::generate().unwrap();
        let shown = format!("{g:?}");
        assert!(!shown.contains(&hex::encode(g.bytes)));
        assert!(!shown.contains(&format!("{:?}", g.bytes)));
    }

    // ---- properties ----

    proptest! {
        #[test]
        fn random_strings_never_accept(data in ".{0,80}") {
            prop_assert!(!verify(&data, &key(), &good_ctx()).is_accept());
        }

        #[test]
        fn well_shaped_random_data_never_accepts(
            action in "[ynwrgdsof]",
            hexid in "[0-9a-f]{20}",
            tag in "[A-Za-z0-9_-]{22}",
        ) {
            let data = format!("1.{}.{action}.r_{hexid}.{tag}", key().id());
            prop_assert!(!verify(&data, &key(), &good_ctx()).is_accept());
        }

        #[test]
        fn one_changed_byte_never_accepts(pos in 0usize..64, byte in 0x20u8..0x7f) {
            let good = yes();
            let pos = pos % good.len();
            prop_assume!(good.as_bytes()[pos] != byte);
            let mut bytes = good.into_bytes();
            bytes[pos] = byte;
            let data = String::from_utf8(bytes).unwrap();
            prop_assert!(!verify(&data, &key(), &good_ctx()).is_accept(), "{}", data);
        }
    }
}
