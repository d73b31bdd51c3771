//! Stable content digests: what a record keeps to tell, on replay, whether the scenario and the
//! prompt templates are the ones the episode was played with.
//!
//! The hash is FNV-1a 64 (<http://www.isthe.com/chongo/tech/comp/fnv/>): fixed constants, no
//! seed, the same value on every platform and every Rust release (std's `DefaultHasher` promises
//! none of that). It is a fingerprint against accidental change, not a cryptographic hash. This
//! module is a leaf: it knows nothing of scenarios, prompts or records.

use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 64-bit content digest, written as 16 lowercase hex digits (a JSON string, so that readers
/// whose numbers are doubles keep every bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub u64);

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.len() != 16 {
            return Err(serde::de::Error::custom(format!(
                "a digest is 16 hex digits, got `{text}`"
            )));
        }
        u64::from_str_radix(&text, 16)
            .map(Digest)
            .map_err(|_| serde::de::Error::custom(format!("`{text}` is not a hex digest")))
    }
}

/// Its schema says what [`Serialize`] writes: a string of 16 lowercase hex digits.
impl JsonSchema for Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Digest".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[0-9a-f]{16}$",
            "description": "A 64-bit FNV-1a content digest, written as 16 lowercase hex digits.",
        })
    }
}

/// FNV-1a 64 over a stream of bytes. It is an [`std::io::Write`], so a value can be serialized
/// straight into it without building the text first.
#[derive(Debug, Clone)]
pub struct Fnv1a64 {
    state: u64,
}

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64 {
            state: OFFSET_BASIS,
        }
    }
}

impl Fnv1a64 {
    pub fn new() -> Self {
        Fnv1a64::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.state ^= u64::from(*b);
            self.state = self.state.wrapping_mul(PRIME);
        }
    }

    /// Add one field of a sequence: its length (8 bytes, little-endian), then its bytes, so that
    /// `("ab", "c")` and `("a", "bc")` digest differently.
    pub fn field(&mut self, bytes: &[u8]) {
        self.update(&(bytes.len() as u64).to_le_bytes());
        self.update(bytes);
    }

    pub fn finish(&self) -> Digest {
        Digest(self.state)
    }
}

impl std::io::Write for Fnv1a64 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The digest of some bytes.
pub fn digest_bytes(bytes: &[u8]) -> Digest {
    let mut h = Fnv1a64::new();
    h.update(bytes);
    h.finish()
}

/// The digest of a value's compact JSON (serde_json, fields in declaration order), streamed.
pub fn digest_json<T: Serialize + ?Sized>(value: &T) -> Digest {
    let mut h = Fnv1a64::new();
    serde_json::to_writer(&mut h, value).expect("serializing to a hasher cannot fail");
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        assert_eq!(digest_bytes(b"").0, 0xcbf2_9ce4_8422_2325);
        assert_eq!(digest_bytes(b"a").0, 0xaf63_dc4c_8601_ec8c);
        assert_eq!(digest_bytes(b"foobar").0, 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_digest_is_written_as_16_hex_digits_and_read_back() {
        let d = Digest(0xaf63_dc4c_8601_ec8c);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, "\"af63dc4c8601ec8c\"");
        assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), d);
        assert_eq!(
            serde_json::to_string(&Digest(1)).unwrap(),
            "\"0000000000000001\""
        );
        assert!(serde_json::from_str::<Digest>("\"xyz\"").is_err());
        assert!(serde_json::from_str::<Digest>("12").is_err());
    }

    #[test]
    fn fields_are_length_prefixed() {
        let mut a = Fnv1a64::new();
        a.field(b"ab");
        a.field(b"c");
        let mut b = Fnv1a64::new();
        b.field(b"a");
        b.field(b"bc");
        assert_ne!(a.finish(), b.finish());
    }
}
