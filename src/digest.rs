//! The digest of an action (SPEC §6): SHA-256 over the RFC 8785 canonical JSON of its envelope.
//!
//! A yes is for exactly one digest, so everything the owner sees and everything that runs must be
//! inside it: kind, target, text, fields, cost and each attachment's name, type, size and hash.

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;

/// A SHA-256 value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Hash(pub [u8; 32]);

impl Sha256Hash {
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first `n` hex digits, as cards and anchors show them.
    pub fn hex_prefix(&self, n: usize) -> String {
        let mut hex = self.to_hex();
        hex.truncate(n);
        hex
    }
}

impl std::fmt::Debug for Sha256Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sha256Hash({})", self.to_hex())
    }
}

impl std::fmt::Display for Sha256Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// What the envelope says of one attachment: its facts, not its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachmentFacts {
    pub name: String,
    pub media_type: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The envelope whose canonical JSON is hashed. Absent target, text and cost are `null`;
/// `fields` and `attachments` are always present, possibly empty. `cost_usd` is the amount with
/// exactly two decimals, so "0.4" and "0.40" are the same action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Envelope<'a> {
    pub v: u64,
    pub kind: &'a str,
    pub target: Option<&'a str>,
    pub text: Option<&'a str>,
    pub fields: &'a BTreeMap<String, String>,
    pub cost_usd: Option<&'a str>,
    pub attachments: &'a [AttachmentFacts],
}

impl Envelope<'_> {
    /// The RFC 8785 canonical JSON of the envelope.
    pub fn canonical_json(&self) -> String {
        // Serializing strings, integers and maps of strings cannot fail.
        serde_jcs::to_string(self).unwrap_or_default()
    }

    pub fn digest(&self) -> Sha256Hash {
        Sha256Hash::of(self.canonical_json().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input_is_the_known_value() {
        assert_eq!(
            Sha256Hash::of(b"").to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn canonical_json_sorts_keys_and_has_no_whitespace() {
        let fields = BTreeMap::from([
            ("b".to_owned(), "2".to_owned()),
            ("a".to_owned(), "1".to_owned()),
        ]);
        let envelope = Envelope {
            v: 1,
            kind: "k",
            target: None,
            text: Some("line\n\"quoted\" é"),
            fields: &fields,
            cost_usd: Some("0.40"),
            attachments: &[],
        };
        assert_eq!(
            envelope.canonical_json(),
            r#"{"attachments":[],"cost_usd":"0.40","fields":{"a":"1","b":"2"},"kind":"k","target":null,"text":"line\n\"quoted\" é","v":1}"#
        );
    }
}
