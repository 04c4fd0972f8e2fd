//! The owner's messages as values: every part of the loop draws what it says here and hands it
//! to the store with the write it tells of, so what is said is committed with what happened.

use consentd_core::styled::Styled;
use consentd_store::outbox::{Body, Outgoing, Sound};

pub(super) fn text_body(text: String) -> Body {
    Body::new(Styled::plain(text), Vec::new())
}

/// A message to `chat` that sounds as `sound` says: `Gated` for a notice (with sound by day),
/// `Urgent` for one that sounds at once even at night, `Silent` for a reply.
pub(super) fn say(chat: i64, text: String, sound: Sound) -> Outgoing {
    Outgoing::message(chat, text_body(text), sound)
}
