//! Reading what the policy does not look into, exactly as `serde_json::Value` would read
//! it, so that a message the decoder accepts is one any consumer can parse: skipped
//! members ([`Skip`]), members kept as raw text ([`RawAt`]), `jsonrpc` ([`Version`]), `id`
//! ([`Id`]), and the nesting limit they are all held to.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::exact::{first_is_number, with_number_member, Decimal, JsonNumber};

/// serde_json's recursion limit, which every parse here runs under: the containers the
/// pass reads or skips are counted by serde_json itself, the members kept as raw text by
/// [`RawAt`]. ACP messages nest a handful of levels; a hostile line must not cost stack.
pub const MAX_DEPTH: usize = checkfu_wire_safety::SERDE_RECURSION_LIMIT;

/// The visitor methods of a value that only objects carry parts of: a scalar or an array
/// is skipped and reads as empty.
macro_rules! non_objects_read_as {
    ($empty:expr, $ty:ty) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$ty, A::Error> {
            while seq.next_element_seed(Skip)?.is_some() {}
            Ok($empty)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_str<E>(self, _: &str) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_unit<E>(self) -> Result<$ty, E> {
            Ok($empty)
        }
    };
}
pub(super) use non_objects_read_as;

/// How deep a message may nest: serde_json's recursion limit rejects a value whose
/// containers nest [`MAX_DEPTH`] deep, so any consumer parsing an accepted message with
/// serde_json's defaults can parse it.
const MAX_NESTING: usize = MAX_DEPTH - 1;

/// Skips a value the policy does not look into, checking it as `serde_json::Value` would:
/// strings are unescaped (so a lone surrogate is an error), numbers must fit an `f64`,
/// and containers go through serde_json's recursive path, so its recursion limit counts
/// them. serde's `IgnoredAny` checks none of that: its iterative path accepts what a
/// consumer parsing the message would then reject.
pub struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Keys are read with their escapes checked too, which `IgnoredAny` would not do.
        match first_is_number(&mut map)? {
            None => return Ok(()),
            // A number, as serde_json with `arbitrary_precision` hands it over.
            Some(true) => return with_number_member(&mut map, |_| ()),
            Some(false) => map.next_value_seed(Skip)?,
        }
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
    non_objects_read_as!((), ());
}

/// Reads `jsonrpc`: whether it is the string `"2.0"` (any other value is skipped).
pub struct Version;

impl<'de> DeserializeSeed<'de> for Version {
    type Value = bool;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Version {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == "2.0")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        Skip.visit_map(map).map(|()| false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Skip.visit_seq(seq).map(|()| false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// A request id as the key its response is matched by: its kind and its value, so `"a"`
/// and `"\u0061"` are one id. Held inline: ids are short.
pub type IdKey = smallvec::SmallVec<[u8; 22]>;

/// Reads `id`, which JSON-RPC allows to be a string, a number or null; anything else is an
/// envelope error.
pub struct Id;

impl<'de> DeserializeSeed<'de> for Id {
    type Value = IdKey;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<IdKey, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The key of a number id, as [`Id`] reads it: an integer's exact decimal digits, however
/// it is written (`1`, `1.0`, `1e0` and `10e-1` are one id; `18446744073709551617` and
/// `18446744073709551616` are two), and anything else refused. serde_json hands a
/// non-negative integer over as a `u64`, a negative one as an `i64`, any other number as
/// its text (`arbitrary_precision`) or an `f64`.
pub fn number_key<E: de::Error>(n: JsonNumber<'_>) -> Result<IdKey, E> {
    match n {
        _ if n.as_f64().is_none() => Err(E::custom("number out of range")),
        JsonNumber::UInt(u) => Id.visit_u64(u),
        JsonNumber::Int(i) => Id.visit_i64(i),
        JsonNumber::Float(f) => Id.visit_f64(f),
        JsonNumber::Text(text) => {
            let not_an_integer = || E::custom(format_args!("an `id` is a string, an integer or null, not {text}"));
            let value = Decimal::parse(text).filter(Decimal::is_integer).ok_or_else(not_an_integer)?;
            if value.is_zero() {
                return Id.visit_u64(0);
            }
            // Within an `f64`'s reach (checked above), an integer has at most 309 digits.
            let (kind, sign) = if value.is_negative() { (b'i', &b"-"[..]) } else { (b'u', &b""[..]) };
            let mut key = key(kind, sign);
            key.extend(value.digits().map(|d| b'0' + d));
            key.extend(std::iter::repeat_n(b'0', usize::try_from(value.unit_exponent()).unwrap_or(0)));
            Ok(key)
        }
    }
}

fn key(kind: u8, value: &[u8]) -> IdKey {
    // Written into an inline buffer whole when it fits (every id of real traffic):
    // pushing the kind and extending by the value cost a capacity check and a move each.
    let mut buf = [kind; 22];
    if let Some(rest) = buf.get_mut(1..=value.len()) {
        rest.copy_from_slice(value);
        return IdKey::from_buf_and_len(buf, value.len() + 1);
    }
    let mut key = IdKey::new();
    key.push(kind);
    key.extend_from_slice(value);
    key
}

impl<'de> Visitor<'de> for Id {
    type Value = IdKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an `id` that is a string, an integer or null")
    }
    fn visit_str<E>(self, v: &str) -> Result<IdKey, E> {
        Ok(key(b's', v.as_bytes()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<IdKey, E> {
        Ok(key(b'u', itoa::Buffer::new().format(v).as_bytes()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<IdKey, E> {
        // `-0` and `0` are one id: the kind says the sign.
        let kind = if v < 0 { b'i' } else { b'u' };
        Ok(key(kind, itoa::Buffer::new().format(v).as_bytes()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<IdKey, E> {
        // ACP's `RequestId` is a string, an integer or null. `1.0` is an integer, and the
        // same id as `1`; `1.5` is not an id.
        if v.fract() != 0.0 || !v.is_finite() {
            return Err(E::custom(format_args!("an `id` is a string, an integer or null, not {v}")));
        }
        // 2^64 and -2^63 are exact as `f64`s; `as` would saturate past them.
        if (0.0..18_446_744_073_709_551_616.0).contains(&v) {
            return self.visit_u64(v as u64);
        }
        if (-9_223_372_036_854_775_808.0..0.0).contains(&v) {
            return self.visit_i64(v as i64);
        }
        // An integral `f64` beyond those is written out digit for digit: the key a text of
        // the same value gets.
        let digits = format!("{v:.0}");
        Ok(key(if v < 0.0 { b'i' } else { b'u' }, digits.as_bytes()))
    }
    fn visit_unit<E>(self) -> Result<IdKey, E> {
        Ok(key(b'n', b""))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IdKey, A::Error> {
        match first_is_number(&mut map)? {
            Some(true) => with_number_member(&mut map, number_key)?,
            _ => Err(de::Error::invalid_type(de::Unexpected::Map, &self)),
        }
    }
}

/// Marks an error raised by this module that is bad JSON, not a bad envelope (serde
/// classes every error a visitor raises as data).
pub const NOT_JSON: &str = "not JSON: ";

/// Reads a member whose text the decoder keeps (`error`, `protocolVersion`). serde_json
/// reads a raw value on its iterative path, which counts no depth and checks no escapes
/// or number ranges, so the text is measured here against what is left of the limit below
/// the `level` containers around it (values shorter than twice that budget cannot reach
/// it, nor can values with fewer brackets; only the rest are scanned), and then checked
/// as [`Skip`] checks.
pub struct RawAt(pub usize);

impl<'de> DeserializeSeed<'de> for RawAt {
    type Value = &'de RawValue;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'de RawValue, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        let budget = MAX_NESTING.saturating_sub(self.0);
        if !nests_within(raw.get().as_bytes(), budget) {
            // Worded as serde_json words its own limit, so that the report is the same.
            let limit = checkfu_wire_safety::RECURSION_LIMIT_MESSAGE;
            return Err(de::Error::custom(format_args!("{limit}: nested deeper than {MAX_NESTING} levels")));
        }
        // A raw value is read on the same lax path as `IgnoredAny`; read its (small) text
        // again as `Skip` does, so that a `protocolVersion` of `1e400` or a lone surrogate
        // in an error's `data` is refused here, as `Value` would refuse it downstream.
        let mut text = serde_json::Deserializer::from_str(raw.get());
        Skip.deserialize(&mut text).map_err(|e| {
            // The error is reported at the message's position (serde_json adds it), not
            // at the position inside this member's text, and is marked as bad JSON.
            let message = e.to_string();
            let bare = message.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&message);
            de::Error::custom(format_args!("{NOT_JSON}{bare}"))
        })?;
        Ok(raw)
    }
}

/// Whether the containers of `json`, a valid JSON text, nest at most `budget` deep.
#[inline]
fn nests_within(json: &[u8], budget: usize) -> bool {
    // Every container takes two bytes: a value this short cannot nest that deep.
    json.len() / 2 <= budget || nests_within_long(json, budget)
}

#[cold]
fn nests_within_long(json: &[u8], budget: usize) -> bool {
    // Every level takes an opening bracket; only with that many is the text scanned.
    memchr::memchr2_iter(b'[', b'{', json).nth(budget).is_none() || checkfu_wire_safety::raw_depth(json) <= budget
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Number ids key by their exact integer value, however they are written.
    #[test]
    fn number_ids_key_by_their_exact_value() {
        let key = |text: &str| {
            // Without exact numbers a text beyond the `f64` range is no number at all.
            let n = JsonNumber::from_text(text).ok_or_else(|| String::from("out of range"))?;
            number_key::<serde_json::Error>(n).map(|k| String::from_utf8_lossy(&k).into_owned()).map_err(|e| e.to_string())
        };
        for (text, expected) in [
            ("7", "u7"),
            ("-0", "u0"),
            ("7.0", "u7"),
            ("70e-1", "u7"),
            ("-7e0", "i-7"),
            ("1.8446744073709551616e19", "u18446744073709551616"),
            ("1e20", "u100000000000000000000"),
        ] {
            assert_eq!(key(text).as_deref(), Ok(expected), "{text}");
        }
        assert!(key("1e400").is_err());
        // With exact numbers an id keys by the value its text writes; without them, by the
        // nearest `f64`, which is how a peer on serde_json's defaults reads the same id.
        #[cfg(feature = "exact-numbers")]
        {
            assert_eq!(key("18446744073709551617").as_deref(), Ok("u18446744073709551617"));
            assert_eq!(key("-9223372036854775809").as_deref(), Ok("i-9223372036854775809"));
            assert!(key("1.0000000000000000001").is_err());
        }
        #[cfg(not(feature = "exact-numbers"))]
        {
            assert_eq!(key("18446744073709551617").as_deref(), Ok("u18446744073709551616"));
            assert_eq!(key("-9223372036854775809").as_deref(), Ok("i-9223372036854775808"));
            assert_eq!(key("1.0000000000000000001").as_deref(), Ok("u1"));
        }
        // An `f64` (a deserializer's or without exact numbers) keys as the text of its value.
        assert_eq!(
            Id.visit_f64::<serde_json::Error>(18446744073709551616.0).map(|k| k.to_vec()).ok(),
            Some(b"u18446744073709551616".to_vec())
        );
        assert_eq!(Id.visit_f64::<serde_json::Error>(-0.0).map(|k| k.to_vec()).ok(), Some(b"u0".to_vec()));
    }

    /// The scan agrees with serde_json's own count, strings with brackets and escapes
    /// included, on both sides of the limit.
    #[test]
    fn nesting_is_measured_as_serde_json_counts_it() {
        for inner in ["1", r#""]]}}""#, r#""\\""#, r#""\"[[""#, r#"{"[":"\\["}"#] {
            for depth in 120..=130 {
                let text = format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
                let nested = if inner.starts_with('{') { depth + 1 } else { depth };
                assert_eq!(nests_within(text.as_bytes(), MAX_NESTING), nested <= MAX_NESTING, "{depth} {inner}");
                let parses = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                assert_eq!(parses, nested <= MAX_NESTING, "{depth} {inner}");
            }
        }
    }
}
