//! A validated action: exactly what the owner is shown and exactly what runs.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::digest::{AttachmentFacts, Envelope, Sha256Hash};

/// One attachment, decoded and hashed.
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    pub name: String,
    pub media_type: String,
    pub data: Vec<u8>,
    pub sha256: Sha256Hash,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .field("bytes", &self.data.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl Attachment {
    pub fn new(name: String, media_type: String, data: Vec<u8>) -> Self {
        let sha256 = Sha256Hash::of(&data);
        Self {
            name,
            media_type,
            data,
            sha256,
        }
    }

    pub(crate) fn facts(&self) -> AttachmentFacts {
        AttachmentFacts {
            name: self.name.clone(),
            media_type: self.media_type.clone(),
            bytes: self.data.len() as u64,
            sha256: self.sha256.to_hex(),
        }
    }
}

/// An action that passed the refusal gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub kind: String,
    pub target: Option<String>,
    pub text: Option<String>,
    pub fields: BTreeMap<String, String>,
    /// The cost in dollars: the ask's `cost_usd`, or the category's fixed cost.
    pub cost_usd: Option<Decimal>,
    pub attachments: Vec<Attachment>,
    /// The client's one line on where the ask comes from (`origin`), shown on the card.
    pub origin: Option<String>,
}

impl Action {
    /// The cost as the envelope carries it: exactly two decimals.
    pub fn cost_string(&self) -> Option<String> {
        self.cost_usd.map(format_usd)
    }

    pub fn attachment_facts(&self) -> Vec<AttachmentFacts> {
        self.attachments.iter().map(Attachment::facts).collect()
    }

    pub fn digest(&self) -> Sha256Hash {
        let cost = self.cost_string();
        let attachments = self.attachment_facts();
        Envelope {
            v: 1,
            kind: &self.kind,
            target: self.target.as_deref(),
            text: self.text.as_deref(),
            fields: &self.fields,
            cost_usd: cost.as_deref(),
            attachments: &attachments,
            origin: self.origin.as_deref(),
        }
        .digest()
    }
}

/// Dollars with exactly two decimals ("0.40", "10.00").
pub fn format_usd(amount: Decimal) -> String {
    format!("{:.2}", amount.round_dp(2))
}
