//! One JSON value read from one line of a JSON-lines file, and, when it cannot be read, the
//! path of the field that is wrong: the one rule by which every line reader (records,
//! scenarios) names a bad line's place, so a user reads `file:line: field …` the same way
//! whatever the file holds. The caller adds the file and the line number.

use serde::de::DeserializeOwned;

/// Where in a line a value could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineFault {
    /// The field's path (`game.items[0].count`), `(line)` for the line as a whole, or
    /// `(a key named "")` for an unknown key with an empty name at the top level.
    pub field: String,
    pub message: String,
}

/// Read `bytes` (one line) as a `T`; nothing but whitespace may follow the value.
pub(crate) fn from_line<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, LineFault> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = match e.path().to_string().as_str() {
            "." => "(line)".to_string(),
            "" => "(a key named \"\")".to_string(),
            other => other.to_string(),
        };
        LineFault {
            field,
            message: e.into_inner().to_string(),
        }
    })?;
    de.end().map_err(|e| LineFault {
        field: "(line)".into(),
        message: e.to_string(),
    })?;
    Ok(value)
}

/// The bytes `value` takes written as one JSON line (its newline not counted), counted without
/// holding them: what a record writer would write for it, so a size a limit is checked against
/// is the size on disk, JSON escapes included (a control character is six bytes there).
pub fn encoded_len(value: &impl serde::Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value serde cannot encode counts what was written.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    #[test]
    fn a_bad_line_names_the_field_the_whole_line_or_an_empty_key() {
        let bad = from_line::<Outer>(br#"{"inner": {"count": -1}}"#).unwrap_err();
        assert_eq!(bad.field, "inner.count");
        assert_eq!(from_line::<Outer>(b"\"text\"").unwrap_err().field, "(line)");
        assert_eq!(
            from_line::<Outer>(br#"{"inner": {"count": 1}} trailing"#)
                .unwrap_err()
                .field,
            "(line)"
        );
        assert_eq!(
            from_line::<Outer>(br#"{"": 1}"#).unwrap_err().field,
            "(a key named \"\")"
        );
        assert!(from_line::<Outer>(br#"{"inner": {"count": 1}}  "#).is_ok());
    }
}
