//! `action = "telegram_post"`: the bot posts the action's text and attachments to the target
//! channel or group, and nothing else (docs/CONFIG.md, "Built-in actions").
//!
//! The text goes in the parts the card showed it in (`consentd_core::split::pieces`, the card's
//! own cut), without the card's `[i/N]` lines; a text that fits one message is one part. Then
//! each attachment, a JPEG or PNG as a photo and anything else as a document. Each message is
//! sent once: a refusal from Telegram ends the action `failed` with Telegram's words and how
//! many messages were posted before it; a request with no answer ends it `outcome_unknown`.

use consentd_core::split;

use super::Attachment;
use crate::executor::{RunOutcome, RunSpec};
use crate::telegram::{recipient, Posted, SendError, Telegram};

/// Media types Telegram shows as a photo; others go as documents, byte for byte.
const PHOTO_TYPES: &[&str] = &["image/jpeg", "image/png"];

/// Posts the record's text and attachments to its target, each message once.
pub(crate) async fn post(
    telegram: &Telegram,
    spec: &RunSpec,
    attachments: &[Attachment],
) -> RunOutcome {
    let target = spec.stdin.target.as_deref().unwrap_or_default();
    let Some(to) = recipient(target) else {
        return RunOutcome::ActionFailed {
            message: format!(
                "{target:?} is not a channel or group: use its @name or its numeric id (a \
                 negative number; a person's chat is never posted to)"
            ),
            detail: "telegram bad_target".to_owned(),
        };
    };
    let pieces = spec
        .stdin
        .text
        .as_deref()
        .map(split::pieces)
        .unwrap_or_default();
    let total = pieces.len() + attachments.len();
    let mut first: Option<Posted> = None;
    let mut sent = 0;
    for piece in pieces {
        match telegram.post_text(to.clone(), piece).await {
            Ok(posted) => {
                first.get_or_insert(posted);
                sent += 1;
            }
            Err(error) => return stopped(&error, sent, total, first.as_ref()),
        }
    }
    for attachment in attachments {
        let photo = PHOTO_TYPES.contains(&attachment.media_type.as_str());
        let bytes = attachment.bytes.clone();
        match telegram
            .post_file(to.clone(), &attachment.name, bytes, photo)
            .await
        {
            Ok(posted) => {
                first.get_or_insert(posted);
                sent += 1;
            }
            Err(error) => return stopped(&error, sent, total, first.as_ref()),
        }
    }
    let result = first.map(|posted| {
        posted.link().unwrap_or_else(|| {
            format!(
                "posted as message {} in chat {}",
                posted.message_id, posted.chat_id
            )
        })
    });
    RunOutcome::Executed { result }
}

/// How a post that stopped at a message ended: Telegram's refusal is `failed` (nothing more
/// went), a request without an answer is `outcome_unknown`.
fn stopped(error: &SendError, sent: usize, total: usize, first: Option<&Posted>) -> RunOutcome {
    let before = match (sent, first.and_then(Posted::link)) {
        (0, _) => String::new(),
        (n, Some(link)) => format!("; {n} of {total} messages were posted, the first at {link}"),
        (n, None) => format!("; {n} of {total} messages were posted"),
    };
    match error {
        // A server error may come after the message was posted: as unknown as no answer at all,
        // and never sent again (a mandate's next ask would otherwise post it twice).
        SendError::Transient(_) | SendError::Malformed(_) | SendError::ServerError(_) => {
            RunOutcome::Unknown {
                message: format!(
                    "message {} of {total} was sent and no clear answer came ({error}){before}: \
                     it may or may not have been posted",
                    sent + 1
                ),
                detail: "telegram no_answer".to_owned(),
            }
        }
        SendError::Permanent(words) => RunOutcome::ActionFailed {
            message: format!("Telegram refused the post: {words}{before}"),
            detail: "telegram refused".to_owned(),
        },
        other => RunOutcome::ActionFailed {
            message: format!("Telegram refused the post: {other}{before}"),
            detail: "telegram refused".to_owned(),
        },
    }
}
