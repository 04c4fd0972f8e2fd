//! Queuing the owner's messages inside a store transaction: every part of the loop sends through
//! these, so what is said is committed with what it says happened.

use consentd_core::styled::Styled;
use consentd_store::outbox::{self, Body, Sound, What};
use consentd_store::{Effects, StoreError};

pub(super) fn text_body(text: String) -> Body {
    Body::new(Styled::plain(text), Vec::new())
}

pub(super) fn queue(
    tx: &rusqlite::Connection,
    effects: &mut Effects,
    chat: i64,
    what: What,
    record_id: Option<&str>,
    body: Body,
    sound: Sound,
) -> Result<(), StoreError> {
    outbox::queue_in(tx, chat, what, record_id, &body, sound, effects.now)?;
    effects.queued = true;
    Ok(())
}

/// Queues a message to `chat` that sounds as `sound` says: `Gated` for a notice (with sound by
/// day), `Urgent` for one that sounds at once even at night, `Silent` for a reply.
pub(super) fn say(
    tx: &rusqlite::Connection,
    effects: &mut Effects,
    chat: i64,
    text: String,
    sound: Sound,
) -> Result<(), StoreError> {
    queue(
        tx,
        effects,
        chat,
        What::Message,
        None,
        text_body(text),
        sound,
    )
}

/// Queues the edit of a record's card in `chat` (silently: outcomes are not urgent). The edit
/// has no buttons: the card can no longer be answered.
pub(super) fn queue_card_edit(
    tx: &rusqlite::Connection,
    effects: &mut Effects,
    chat: i64,
    record_id: &str,
    text: Styled,
) -> Result<(), StoreError> {
    queue(
        tx,
        effects,
        chat,
        What::Edit,
        Some(record_id),
        Body::new(text, Vec::new()),
        Sound::Silent,
    )
}
