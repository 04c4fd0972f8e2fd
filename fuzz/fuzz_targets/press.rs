//! Fuzz target: callback data through the shape check and the verdict on a press.
//!
//! The data of a button is readable and forgeable by any client, so the one property that
//! matters is that nothing counts unless the key signed it: whatever data is accepted must be,
//! byte for byte, what the key signs for the accepted action and subject under the card's digest
//! and the owner. Along the way, data of the right shape must spell itself canonically (one
//! spelling per press), and a press signed for one digest must never count for another.

#![no_main]

use chrono::{DateTime, TimeDelta, Utc};
use consentd_core::clock::Monotonic;
use consentd_core::deadline::{Now, Window};
use consentd_core::press::{
    self, MessageFacts, PressAction, PressContext, PressKey, PressRejection, SubjectFacts, AsDrawn,
    Verdict, MAX_CALLBACK_LEN,
};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// The fixed key; the seeds in fuzz/corpus/press/ are signed with it.
const KEY_BYTES: [u8; 32] = [7; 32];
const OWNER: i64 = 123_456_789;
/// The card's digest; the seeds are signed for it.
const DIGEST: &str = "aa11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";
/// Another card's digest, for which no seed is signed.
const OTHER_DIGEST: &str = "bb11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";

fn key() -> &'static PressKey {
    static KEY: OnceLock<PressKey> = OnceLock::new();
    KEY.get_or_init(|| PressKey::from_bytes(KEY_BYTES))
}

fn monotonic(seconds: u64) -> Monotonic {
    Monotonic {
        boot: "fuzz".to_owned(),
        since_boot: std::time::Duration::from_secs(seconds),
    }
}

/// The owner pressing in their own private chat, on the card's own unaltered message, a minute
/// after the card was shown and well before its ttl ends.
fn context(digest: &str) -> PressContext<'_> {
    let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("a valid instant");
    let shown_at = now - TimeDelta::minutes(1);
    PressContext {
        presser_id: OWNER,
        chat_id: OWNER,
        chat_is_private: true,
        owner_id: Some(OWNER),
        subject: Some(SubjectFacts {
            digest,
            open: true,
            window: Some(Window {
                shown_at,
                expires_at: shown_at + TimeDelta::minutes(15),
                shown_monotonic: Some(monotonic(1_000)),
            }),
            offers_always: true,
        }),
        message: MessageFacts::Drawn(AsDrawn::Same),
        now: Now {
            wall: now,
            monotonic: monotonic(1_060),
        },
    }
}

fuzz_target!(|bytes: &[u8]| {
    // Telegram hands callback data over as a string.
    let Ok(data) = std::str::from_utf8(bytes) else {
        return;
    };
    let key = key();
    match press::parse_callback(data) {
        Ok(cb) => {
            assert!(data.is_ascii() && data.len() <= MAX_CALLBACK_LEN);
            // One spelling per press: the parsed parts rebuild the data up to its tag.
            let head = format!(
                "{}.{}.{}.{}.",
                cb.version,
                cb.key_id,
                cb.action.letter(),
                cb.subject
            );
            assert!(data.starts_with(&head), "{data:?} is not spelt as {head:?}");
            assert_eq!(data.len(), head.len() + 22);
        }
        Err(rejection) => {
            assert_eq!(rejection, PressRejection::Malformed);
            assert_eq!(
                press::verify(data, key, &context(DIGEST)),
                Verdict::Reject(PressRejection::Malformed)
            );
            return;
        }
    }
    match press::verify(data, key, &context(DIGEST)) {
        Verdict::Accept { action, subject } => {
            assert_eq!(
                data,
                key.sign(action, &subject, DIGEST, OWNER),
                "accepted data that the key did not sign"
            );
            assert!(
                !matches!(
                    action,
                    PressAction::Yes
                        | PressAction::No
                        | PressAction::NoSayWhy
                        | PressAction::Grant
                        | PressAction::Decline
                        | PressAction::Always
                        | PressAction::Raise
                ) || press::is_record_id(&subject)
            );
            // The MAC binds the digest: the same press never answers another card.
            assert_eq!(
                press::verify(data, key, &context(OTHER_DIGEST)),
                Verdict::Reject(PressRejection::BadTag)
            );
            // A genuine press counts only on the message it was drawn on, unaltered.
            let mut elsewhere = context(DIGEST);
            elsewhere.message = MessageFacts::NotDrawn;
            assert_eq!(
                press::verify(data, key, &elsewhere),
                Verdict::Reject(PressRejection::WrongMessage)
            );
            // On a message changed since it was drawn only a press that takes something back
            // counts (No, No and say why, Decline, Stop, Off, Remove): whoever changed it can
            // make nothing run.
            let mut altered = context(DIGEST);
            altered.message = MessageFacts::Drawn(AsDrawn::Changed);
            let takes_back = matches!(
                action,
                PressAction::No
                    | PressAction::NoSayWhy
                    | PressAction::Decline
                    | PressAction::Stop
                    | PressAction::CategoryOff
                    | PressAction::Remove
            );
            let on_altered = press::verify(data, key, &altered);
            if takes_back {
                assert_eq!(on_altered, Verdict::Accept { action, subject });
            } else {
                assert_eq!(on_altered, Verdict::Reject(PressRejection::CardAltered));
            }
        }
        Verdict::Reject(rejection) => {
            // With every fact of the press in order, only the data itself can be at fault.
            assert!(
                matches!(
                    rejection,
                    PressRejection::WrongVersion | PressRejection::StaleKey | PressRejection::BadTag
                ),
                "{data:?} rejected as {rejection:?}"
            );
        }
    }
});
