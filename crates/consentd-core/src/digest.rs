//! The digest of an action (docs/PROTOCOL.md, "Digests"): SHA-256 over the RFC 8785 canonical
//! JSON of its envelope.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct AttachmentFacts {
    pub name: String,
    pub media_type: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The envelope whose canonical JSON is hashed. Absent target, text and cost are `null`;
/// `fields` and `attachments` are always present, possibly empty. `cost_usd` is the amount with
/// exactly two decimals, so "0.4" and "0.40" are the same action. `origin` is a member only
/// when the ask carries one: an ask without it has the digest it always had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Envelope<'a> {
    pub(crate) v: u64,
    pub(crate) kind: &'a str,
    pub(crate) target: Option<&'a str>,
    pub(crate) text: Option<&'a str>,
    pub(crate) fields: &'a BTreeMap<String, String>,
    pub(crate) cost_usd: Option<&'a str>,
    pub(crate) attachments: &'a [AttachmentFacts],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) origin: Option<&'a str>,
}

impl Envelope<'_> {
    /// The RFC 8785 canonical JSON of the envelope.
    pub(crate) fn canonical_json(&self) -> String {
        // Serializing strings, integers and maps of strings cannot fail.
        serde_jcs::to_string(self).unwrap_or_default()
    }

    pub(crate) fn digest(&self) -> Sha256Hash {
        Sha256Hash::of(self.canonical_json().as_bytes())
    }
}

/// The canonical JSON and the hex digest of an envelope written out as JSON, as the test
/// vectors and docs/PROTOCOL.md write it: the route from the written form through [`Envelope`].
#[cfg(test)]
pub(crate) fn of_json(envelope: &serde_json::Value) -> (String, String) {
    let text = |key: &str| envelope[key].as_str();
    let fields: BTreeMap<String, String> =
        serde_json::from_value(envelope["fields"].clone()).expect("fields: strings");
    let attachments: Vec<AttachmentFacts> = envelope["attachments"]
        .as_array()
        .expect("attachments: an array")
        .iter()
        .map(|a| AttachmentFacts {
            name: a["name"].as_str().unwrap_or_default().to_owned(),
            media_type: a["media_type"].as_str().unwrap_or_default().to_owned(),
            bytes: a["bytes"].as_u64().unwrap_or_default(),
            sha256: a["sha256"].as_str().unwrap_or_default().to_owned(),
        })
        .collect();
    let ours = Envelope {
        v: 1,
        kind: text("kind").expect("a kind"),
        target: text("target"),
        text: text("text"),
        fields: &fields,
        cost_usd: text("cost_usd"),
        attachments: &attachments,
        origin: text("origin"),
    };
    (ours.canonical_json(), ours.digest().to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors made by fixtures/digest/make_vectors.py, a route independent of this code.
    #[test]
    fn the_fixed_vectors_match_an_independent_implementation() {
        let text = include_str!("../../../fixtures/digest/vectors.json");
        let vectors: Vec<serde_json::Value> = serde_json::from_str(text).unwrap();
        assert!(vectors.len() >= 7);
        for vector in vectors {
            let name = vector["name"].as_str().unwrap();
            let (canonical, digest) = of_json(&vector["envelope"]);
            assert_eq!(canonical, vector["canonical"].as_str().unwrap(), "{name}");
            assert_eq!(digest, vector["sha256"].as_str().unwrap(), "{name}");
        }
    }

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
            origin: None,
        };
        assert_eq!(
            envelope.canonical_json(),
            r#"{"attachments":[],"cost_usd":"0.40","fields":{"a":"1","b":"2"},"kind":"k","target":null,"text":"line\n\"quoted\" é","v":1}"#
        );
        // An origin is one more member, in its sorted place; its absence changes nothing.
        let with_origin = Envelope {
            origin: Some("Claude Code · ~/src/blog"),
            ..envelope.clone()
        };
        assert_eq!(
            with_origin.canonical_json(),
            r#"{"attachments":[],"cost_usd":"0.40","fields":{"a":"1","b":"2"},"kind":"k","origin":"Claude Code · ~/src/blog","target":null,"text":"line\n\"quoted\" é","v":1}"#
        );
        assert_ne!(with_origin.digest(), envelope.digest());
    }
}

/// Properties over whole requests: parsed, checked by the refusal gate, then hashed.
#[cfg(test)]
mod properties {
    use base64::Engine as _;
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use crate::config;
    use crate::protocol::{parse_request, Request};
    use crate::refusal::check_ask;

    const CONFIG: &str = r#"
[paths]
state_dir = "/var/lib/consentd"
[categories.publish_x]
label = { en = "Post" }
class = "external"
enabled = true
target = "required"
text = "required"
fields = ["reply_to", "tags"]
attachments = 2
cost = "request"
command = ["/bin/true"]
[categories.publish_y]
label = { en = "Post elsewhere" }
class = "external"
enabled = true
target = "required"
text = "required"
fields = ["reply_to", "tags"]
attachments = 2
cost = "request"
command = ["/bin/true"]
"#;

    fn digest_of(frame: &str) -> String {
        let config = config::parse(CONFIG, "test").unwrap();
        let Ok(Request::Ask(ask)) = parse_request(frame.as_bytes()) else {
            panic!("not an ask: {frame}")
        };
        check_ask(&ask, &config.categories, true, &config.limits)
            .unwrap_or_else(|refusal| panic!("{refusal:?}: {frame}"))
            .digest()
            .to_hex()
    }

    /// Writes an object with its keys in the given order and the given whitespace between tokens.
    fn write(value: &Value, order_seed: u64, space: &str) -> String {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                // A deterministic shuffle from the seed.
                let mut state = order_seed | 1;
                for i in (1..keys.len()).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    keys.swap(i, (state % (i as u64 + 1)) as usize);
                }
                let members: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        format!(
                            "{}{space}:{space}{}",
                            json!(k),
                            write(&map[*k], order_seed >> 1, space)
                        )
                    })
                    .collect();
                format!(
                    "{{{space}{}{space}}}",
                    members.join(&format!("{space},{space}"))
                )
            }
            Value::Array(items) => {
                let items: Vec<String> =
                    items.iter().map(|v| write(v, order_seed, space)).collect();
                format!("[{space}{}{space}]", items.join(&format!(",{space}")))
            }
            other => other.to_string(),
        }
    }

    /// An ask whose `a.png` is a PNG signature followed by `bytes` (the gate checks the magic
    /// bytes of a declared image type).
    fn ask(text: &str, target: &str, reply_to: &str, cost: &str, bytes: &[u8]) -> Value {
        let png = [b"\x89PNG\r\n\x1a\n".as_slice(), bytes].concat();
        let mut fields = Map::new();
        fields.insert("reply_to".into(), json!(reply_to));
        fields.insert("tags".into(), json!("news"));
        json!({
            "v": 1, "op": "ask", "kind": "publish_x", "target": target, "text": text,
            "fields": fields, "cost_usd": cost, "idempotency_key": "k", "wait": true,
            "attachments": [
                {"name": "a.png", "media_type": "image/png",
                 "data_b64": base64::engine::general_purpose::STANDARD.encode(png)},
                {"name": "b.txt", "media_type": "text/plain", "data_b64": "aGk="}
            ]
        })
    }

    /// Words with one space between them: the gate refuses a text that starts or ends with a
    /// space or is only spaces.
    fn visible_text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9.,!?а-яё世界]{1,10}( [a-zA-Z0-9 .,!?а-яё世界]{0,9}[a-zA-Z0-9.,!?а-яё世界]){0,3}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn key_order_and_whitespace_never_change_the_digest(
            text in visible_text(),
            // At least one byte: an empty attachment is refused before any digest.
            bytes in proptest::collection::vec(any::<u8>(), 1..64),
            seed in any::<u64>(),
            space in prop::sample::select(vec!["", " ", "\t", "  \t "]),
        ) {
            let value = ask(&text, "@mila", "https://e.org/1", "0.04", &bytes);
            let plain = digest_of(&value.to_string());
            let reshaped = digest_of(&write(&value, seed, space));
            prop_assert_eq!(plain, reshaped);
        }

        #[test]
        fn every_change_that_matters_changes_the_digest(
            text in visible_text(),
            bytes in proptest::collection::vec(any::<u8>(), 1..64),
            flip_at in any::<prop::sample::Index>(),
            flip_bit in 0u8..8,
        ) {
            let base = ask(&text, "@mila", "https://e.org/1", "0.04", &bytes);
            let original = digest_of(&base.to_string());
            let mut flipped = bytes.clone();
            let at = flip_at.index(flipped.len());
            flipped[at] ^= 1 << flip_bit;
            let mut changes: Vec<(&str, Value)> = vec![
                ("text", ask(&format!("{text}!"), "@mila", "https://e.org/1", "0.04", &bytes)),
                ("target", ask(&text, "@mila2", "https://e.org/1", "0.04", &bytes)),
                ("field", ask(&text, "@mila", "https://e.org/2", "0.04", &bytes)),
                ("cost", ask(&text, "@mila", "https://e.org/1", "0.05", &bytes)),
                ("attachment byte", ask(&text, "@mila", "https://e.org/1", "0.04", &flipped)),
            ];
            let mut kind = base.clone();
            kind["kind"] = json!("publish_y");
            changes.push(("kind", kind));
            let mut renamed = base.clone();
            renamed["attachments"][0]["name"] = json!("c.png");
            changes.push(("attachment name", renamed));
            for (what, changed) in changes {
                prop_assert_ne!(&original, &digest_of(&changed.to_string()), "{}", what);
            }
            // What is not part of the action does not change it.
            let mut bookkeeping = base.clone();
            bookkeeping["idempotency_key"] = json!("another");
            bookkeeping["wait"] = json!(false);
            bookkeeping["urgent"] = json!(true);
            prop_assert_eq!(&original, &digest_of(&bookkeeping.to_string()));
            // "0.4" and "0.40" are the same money, so the same action.
            let a = digest_of(&ask(&text, "@m", "u", "0.4", &bytes).to_string());
            let b = digest_of(&ask(&text, "@m", "u", "0.40", &bytes).to_string());
            prop_assert_eq!(a, b);
        }
    }
}
