//! The refusal's words: the stable reason codes (docs/PROTOCOL.md, "Refusals"), a refusal as a
//! value, and the fixed
//! sizes beyond which the gate refuses. A leaf: the request parser, the media check and the
//! look-alike rules name a refusal or a size without depending on the gate
//! ([`crate::refusal`]), which depends on them.

/// The longest target the card shows, in characters.
pub const MAX_TARGET_CHARS: usize = 256;
/// The longest field value the card shows, in characters.
pub(crate) const MAX_FIELD_CHARS: usize = 1024;
/// The longest `origin` (the client's line on where an ask comes from), in characters.
pub(crate) const MAX_ORIGIN_CHARS: usize = 120;
/// The longest idempotency key, in characters.
pub(crate) const MAX_IDEMPOTENCY_KEY_CHARS: usize = 128;
/// The longest attachment name, in bytes (a file name on most file systems).
pub(crate) const MAX_ATTACHMENT_NAME_BYTES: usize = 255;

/// The stable reason codes of a refusal (docs/PROTOCOL.md, "Refusals"). Their strings never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    BadRequest,
    UnknownKind,
    CategoryOff,
    FieldNotShown,
    InvisibleCharacter,
    NotNfc,
    TooLarge,
    DeclinedRecently,
    KindSilenced,
    TooManyPending,
    NoOwner,
    IdentityConflict,
    PeerNotAllowed,
    MandateTerms,
    /// A withdraw of a record that is no longer open (granted, running or ended).
    NotWithdrawable,
    /// The state directory's file system is under `limits.min_free_bytes` free: nothing is stored.
    DiskFull,
}

impl Reason {
    pub(crate) const ALL: [Reason; 16] = [
        Reason::BadRequest,
        Reason::UnknownKind,
        Reason::CategoryOff,
        Reason::FieldNotShown,
        Reason::InvisibleCharacter,
        Reason::NotNfc,
        Reason::TooLarge,
        Reason::DeclinedRecently,
        Reason::KindSilenced,
        Reason::TooManyPending,
        Reason::NoOwner,
        Reason::IdentityConflict,
        Reason::PeerNotAllowed,
        Reason::MandateTerms,
        Reason::NotWithdrawable,
        Reason::DiskFull,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "bad_request",
            Reason::UnknownKind => "unknown_kind",
            Reason::CategoryOff => "category_off",
            Reason::FieldNotShown => "field_not_shown",
            Reason::InvisibleCharacter => "invisible_character",
            Reason::NotNfc => "not_nfc",
            Reason::TooLarge => "too_large",
            Reason::DeclinedRecently => "declined_recently",
            Reason::KindSilenced => "kind_silenced",
            Reason::TooManyPending => "too_many_pending",
            Reason::NoOwner => "no_owner",
            Reason::IdentityConflict => "identity_conflict",
            Reason::PeerNotAllowed => "peer_not_allowed",
            Reason::MandateTerms => "mandate_terms",
            Reason::NotWithdrawable => "not_withdrawable",
            Reason::DiskFull => "disk_full",
        }
    }

    pub fn parse(code: &str) -> Option<Reason> {
        Reason::ALL
            .into_iter()
            .find(|reason| reason.as_str() == code)
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: a value, not an error. The message says what and where, in English.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}
