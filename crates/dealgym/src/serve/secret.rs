//! The server's secrets, in one place: how one is made (a table's seat and creator tokens, a
//! REST episode's token), how a request presents one (`x-seat-token`) and how one is compared
//! (in constant time, as the bearer token is). Ids are sequential and no secret; what a client
//! may do to a session another client made (drop it, read or play a table's seat) takes one of
//! these.

use axum::http::HeaderMap;

/// The header a request presents a session's token in.
pub(super) const HEADER: &str = "x-seat-token";

/// A fresh secret: 128 bits from the thread's cryptographically secure generator (not part of
/// any episode's seeded randomness), in hex.
pub(super) fn fresh() -> String {
    format!(
        "{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// The token a request presents in [`HEADER`], if any.
pub(super) fn presented(headers: &HeaderMap) -> Option<&str> {
    headers.get(HEADER).and_then(|v| v.to_str().ok())
}

/// Whether `given` is `expected`, in time that depends only on the lengths.
pub(super) fn same(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

/// Whether a caller presenting `given` holds one of `held`: refused when it presents none.
pub(super) fn holds<'a>(given: Option<&str>, held: impl IntoIterator<Item = &'a str>) -> bool {
    given.is_some_and(|given| {
        held.into_iter()
            .fold(false, |any, expected| any | same(given, expected))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same("secret", "secret"));
        assert!(!same("secret", "secreT"));
        assert!(!same("secret", "secret2"));
        assert!(!same("", "x"));
        assert!(same("", ""));
    }

    #[test]
    fn a_caller_holds_a_token_only_by_presenting_one_of_them() {
        assert!(holds(Some("b"), ["a", "b"]));
        assert!(!holds(Some("c"), ["a", "b"]));
        assert!(!holds(None, ["a"]));
        assert!(!holds(Some(""), []));
    }

    #[test]
    fn fresh_secrets_are_128_bits_of_hex_and_differ() {
        let (a, b) = (fresh(), fresh());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
