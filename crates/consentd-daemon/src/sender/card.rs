//! A record's card: whether it goes now, drawn as it is shown, its text's parts and attachments
//! before it (each remembered once sent, so a retry skips it), then opened (its ttl starts,
//! `card_shown` committed, its journal line staged in the commit) and sent, unless an earlier
//! attempt opened it already; the line reaches the journal file while the card leaves. The sender alone opens and sends a card, from its outbox row.

use chrono::{DateTime, Utc};

use super::{drawn_from, read_attachment, DrawnCard, Out, Pace, RowError};
use crate::telegram::SendError;
use consentd_core::deadline::Now;
use consentd_core::gate::{self, Delivery, NoticeClass};
use consentd_core::lookalike::KnownTargets;
use consentd_store::outbox::Row;
use consentd_store::writes::CardShowing;
use consentd_store::{Record, RecordState, SenderNote, Store, StoreError};

/// Whether the card of a pending record goes now (and how it sounds) or waits for the morning;
/// `None` when it was held.
async fn card_delivery(out: &Out<'_>, record: &Record, seq: i64) -> Result<Option<bool>, RowError> {
    let now = out.clock.now();
    let (settings, tz) = out.drawer.gate();
    let window = gate::quiet_window(settings.quiet_hours, now, tz);
    if record.state != RecordState::Pending {
        // A retry of a card already opened (and counted): quiet at night.
        return Ok(Some(window.is_some()));
    }
    // Tonight's count: the cards shown since tonight's quiet hours began.
    let tonight = match window {
        Some((start, _)) => out.store.cards_shown_since(start).await?,
        None => 0,
    };
    let class = NoticeClass::Card {
        urgent_ask: record.action().is_some_and(|action| action.urgent),
    };
    match gate::decide(class, &settings, tonight, now, tz) {
        Delivery::HoldUntil(until) => {
            // Still pending: its ttl starts when it is shown, after quiet hours.
            out.store.sent(SenderNote::Hold { seq, until }).await?;
            // The owner may have changed the hours or the limit since they were read here, and
            // the store released the held cards before this hold was written: then this card is
            // decided again now rather than held under rules that are gone.
            let (changed, _) = out.drawer.gate();
            if (changed.quiet_hours, changed.night_card_limit)
                != (settings.quiet_hours, settings.night_card_limit)
            {
                out.store.sent(SenderNote::Release { seq }).await?;
            }
            Ok(None)
        }
        Delivery::Silent => Ok(Some(true)),
        Delivery::Loud | Delivery::SummaryOnly => Ok(Some(false)),
    }
}

pub(super) async fn send_card(out: &Out<'_>, pace: &mut Pace, row: Row) -> Result<(), RowError> {
    let (store, seq) = (out.store, row.seq);
    let record_id = row.record_id.clone().unwrap_or_default();
    let lookup = record_id.clone();
    // Drawn against the targets known as the card is shown: now, for its parts and attachments.
    // They are read with the record, in one store call.
    let first = out.clock.now();
    let found = store
        // Pending, or opened already by an earlier attempt whose send failed: both still need
        // their card.
        .card_to_draw(&lookup, first)
        .await?;
    let Some((known, record)) = found else {
        let reason = format!("record {record_id} ended before its card was sent");
        store
            .sent(SenderNote::Dropped { seq, error: reason })
            .await?;
        return Ok(());
    };
    send_found_card(out, pace, row, (record, known, first)).await
}

/// Sends the card of `row`, `record` being pending or open, `known` the targets known for it
/// at `first` (or, once open, as of its `shown_at`).
async fn send_found_card(
    out: &Out<'_>,
    pace: &mut Pace,
    row: Row,
    (record, known, first): (Record, KnownTargets, DateTime<Utc>),
) -> Result<(), RowError> {
    let (store, seq) = (out.store, row.seq);
    let record_id = record.id.clone();
    // Past its own deadline (an ask's `ttl`, on either clock) before it could be shown: no
    // card; the sweep ends the record expired.
    if record
        .own_ttl()
        .is_some_and(|ttl| ttl.over(&Now::read(out.clock)))
    {
        let reason = format!("record {record_id} reached its ttl before its card was sent");
        store
            .sent(SenderNote::Dropped { seq, error: reason })
            .await?;
        return Ok(());
    }
    let Some(silent) = card_delivery(out, &record, seq).await? else {
        return Ok(());
    };
    if record.state == RecordState::Pending {
        // An open card's parts are those of its drawing below, against the same targets.
        let drawn = draw(out, &record, &known, first, first + out.drawer.ttl())?;
        send_before_card(out, pace, &row, &record, &drawn, silent).await?;
    }
    // Opened now, after the parts and attachments: the ttl runs from when the card is shown,
    // and the card must be open before it can be pressed. A retry keeps the first deadline.
    pace.take().await;
    let reading = Now::read(out.clock);
    let now = reading.wall;
    // Drawn again against the targets known at its `shown_at`, as its edits will be. A target
    // approved in the seconds since the first drawing can move the text into parts: those are
    // sent now, before the card (what was sent already is skipped).
    let Some((expires_at, known)) = open_card(out, &record, known, seq, reading).await? else {
        return Ok(());
    };
    let card = draw(out, &record, &known, now, expires_at)?;
    send_before_card(out, pace, &row, &record, &card, silent).await?;
    let _drawing = out.drawing.lock().await;
    let sent = out
        .telegram
        .send_text(row.chat_id, &card.text, &card.buttons, silent)
        .await?;
    // The owner has the card; its `card_shown` line may still be on its way to the journal file.
    crate::failpoint::hit("card_sent");
    let drawn = drawn_from(&sent, &card.buttons);
    let chat = row.chat_id;
    store
        .sent(SenderNote::Card {
            seq,
            record_id,
            chat,
            message_id: sent.message_id,
            drawn,
            now,
        })
        .await?;
    Ok(())
}

/// Opens a pending record's card as it is about to be sent: its ttl starts `now` and
/// `card_shown` is committed, its line staged in the commit, before the card leaves. A card already open (by an
/// earlier attempt whose send failed) keeps its deadline, and `known`, the targets read with the
/// record, are already those of its `shown_at`. Returns the card's deadline and the targets
/// known as of its `shown_at`; `None` when the record ended meanwhile, its row then dropped.
async fn open_card(
    out: &Out<'_>,
    record: &Record,
    known: KnownTargets,
    seq: i64,
    reading: Now,
) -> Result<Option<(DateTime<Utc>, KnownTargets)>, RowError> {
    let Now {
        wall: now,
        monotonic,
    } = reading;
    let (store, record_id) = (out.store, &record.id);
    let opened = match record.asked_part().and_then(|asked| asked.expires_at) {
        Some(expires_at) if record.state == RecordState::CardShown => (expires_at, known),
        _ => {
            // An ask's own ttl set a deadline when it was taken (kept in `expires_at` while it
            // is pending): the card is answerable until the earlier of the two, with what is
            // left of the ask's ttl by either clock (a wall clock stepped back while it waited
            // does not give it more).
            let usual = now + out.drawer.ttl();
            let expires_at = record.own_ttl().map_or(usual, |ttl| {
                let left = ttl.left(&Now {
                    wall: now,
                    monotonic: monotonic.clone(),
                });
                (now + left).min(usual)
            });
            let opening = record_id.clone();
            // The targets as of its `shown_at` (`now`) are read in the same store call as the
            // opening: one round trip less between the card's commit and its send.
            let opened = store
                .show_card(CardShowing {
                    record_id: opening,
                    expires_at,
                    now,
                    monotonic,
                })
                .await?;
            let Some(known) = opened else {
                let reason = format!("record {record_id} ended before its card was sent");
                store
                    .sent(SenderNote::Dropped { seq, error: reason })
                    .await?;
                return Ok(None);
            };
            (expires_at, known)
        }
    };
    Ok(Some(opened))
}

/// A record's card as of `now`, against `known`, the targets known for it then
/// (`Store::known_targets_for`). A card that cannot be one message is a permanent failure: it is
/// dropped as undeliverable and its record ends expired.
fn draw(
    out: &Out<'_>,
    record: &Record,
    known: &KnownTargets,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<DrawnCard, RowError> {
    out.drawer
        .draw(record, known, now, expires_at)
        .map_err(|error| {
            RowError::Send(SendError::Permanent(format!(
                "it would not fit one message with the look-alike warnings it has now: \
                 {error}"
            )))
        })
}

/// The text's parts and the attachments, each remembered once sent so a retry skips it.
async fn send_before_card(
    out: &Out<'_>,
    pace: &mut Pace,
    row: &Row,
    record: &Record,
    drawn: &DrawnCard,
    silent: bool,
) -> Result<(), RowError> {
    let store = out.store;
    let record_id = &record.id;
    for (index, part) in drawn.parts.iter().enumerate() {
        let role = format!("part{}", index + 1);
        if already_sent(store, record_id, &role).await? {
            continue;
        }
        pace.take().await;
        let sent = out
            .telegram
            .send_text(row.chat_id, part, &[], silent)
            .await?;
        remember(store, record_id, role, sent.message_id).await?;
    }
    let attachments = record
        .action()
        .map_or(&[][..], |action| &action.attachments);
    for (index, (attachment, caption)) in attachments.iter().zip(&drawn.captions).enumerate() {
        let role = format!("attachment{}", index + 1);
        if already_sent(store, record_id, &role).await? {
            continue;
        }
        let bytes = read_attachment(store, attachment).await?;
        pace.take().await;
        let message_id = out
            .telegram
            .send_file(row.chat_id, &attachment.name, bytes, caption, silent)
            .await?;
        remember(store, record_id, role, message_id).await?;
    }
    Ok(())
}

async fn already_sent(store: &Store, record_id: &str, role: &str) -> Result<bool, StoreError> {
    let (record_id, role) = (record_id.to_owned(), role.to_owned());
    Ok(store.record_message_id(&record_id, &role).await?.is_some())
}

async fn remember(
    store: &Store,
    record_id: &str,
    role: String,
    message_id: i64,
) -> Result<(), StoreError> {
    let record_id = record_id.to_owned();
    store
        .sent(SenderNote::RecordMessage {
            record_id,
            role,
            message_id,
        })
        .await
}
