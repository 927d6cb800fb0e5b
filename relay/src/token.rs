//! The unguessable strings of a session: the prompt's nonce, the lease key, the `tool`
//! script's file token, and the reply token the replay model mints for every call.
//!
//! Each is a prefix and 16 hex digits of a SipHash whose keys std draws from the OS once per
//! process (`RandomState`), over the time, the pid and a counter: a harness that has seen
//! every earlier string of the run still cannot compute the next one.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// The prefix of the prompt's nonce.
pub const NONCE_PREFIX: &str = "cf-";
/// The prefix of a reply token: the model's own answer, which no request carries.
pub const REPLY_PREFIX: &str = "cfr-";
/// The prefix of the `tool` script's file token.
pub const FILE_TOKEN_PREFIX: &str = "cft-";
/// The prefix of the token a scripted steer carries, looked for in later requests.
pub const STEER_PREFIX: &str = "cfs-";
/// The prefix of a session's lease key.
pub const KEY_PREFIX: &str = "cfk-";
/// The hex digits after the prefix.
pub const HEX: usize = 16;

/// What the `tool` script's token file holds.
pub fn file_text(token: &str) -> String {
    format!("The token is {token}.\n")
}

/// A fresh string: `prefix` and 16 lowercase hex digits.
pub fn mint(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    hasher.write_u128(now);
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{prefix}{:016x}", hasher.finish())
}

/// The first `prefix` followed by 16 lowercase hex digits in `text`.
pub fn find<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let mut from = 0;
    while let Some(at) = text[from..].find(prefix) {
        let start = from + at;
        let digits = start + prefix.len();
        let candidate = text.get(digits..digits + HEX);
        if candidate.is_some_and(|h| h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))) {
            return text.get(start..digits + HEX);
        }
        from = digits;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_strings_are_distinct_and_found_only_in_their_format() {
        let (a, b) = (mint(REPLY_PREFIX), mint(REPLY_PREFIX));
        assert_ne!(a, b);
        assert_eq!(find(&format!("x cfr-12 {a}."), REPLY_PREFIX), Some(a.as_str()));
        assert_eq!(find("cf-0123456789ABCDEF", NONCE_PREFIX), None);
        assert_eq!(find("x cf-0123 cf-0123456789abcdef.", NONCE_PREFIX), Some("cf-0123456789abcdef"));
    }
}
