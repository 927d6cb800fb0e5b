//! Exact number semantics for the generated checks: JSON Schema compares numbers by the
//! value their text denotes, so `1.0` equals `1`, `18446744073709551617` is above
//! `18446744073709551616`, and `0.09999999999999999` is below `0.1`.
//!
//! A tree holds each number as a [`JsonNumber`]: an integer that fits a `u64` or an `i64`,
//! read as one, or otherwise, with the `exact-numbers` feature (on by default), the number's
//! text, borrowed from the input or the arena; a comparison reads that text as a decimal of
//! any size. Without the feature, such a number is the `f64` nearest its text
//! (`float_roundtrip`), and the comparison is exact on what it holds: the shortest decimal
//! text of that `f64`.
//!
//! Integers that fit an `i128` on both sides take a fast path; everything else goes
//! through [`Decimal`], the text read as a decimal of any size.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

pub use checkfu_wire_vocab::decimal::{Decimal, DIVISOR_DIGITS};
use serde_json::Number;

/// A number of a [`super::Json`] tree. It owns nothing, so a tree in an arena (which runs
/// no destructors) leaks nothing, and reading one from the wire allocates nothing: a
/// `serde_json::Number` with `arbitrary_precision` is a `String`, which cost the decoder
/// an allocation per number and was never freed from the arena.
///
/// The representation is canonical, as serde_json's own reading is: a number written as
/// a plain integer is `UInt` when it fits a `u64` (`-0` is not plain), else `Int` when it
/// fits an `i64`, else `Text`. Equality is by value all the same ([`equal`]).
#[derive(Clone, Copy, Debug)]
pub enum JsonNumber<'a> {
    UInt(u64),
    Int(i64),
    /// Any other number's JSON text (`exact-numbers` only).
    Text(&'a str),
    /// Any other number's nearest `f64`, finite: without `exact-numbers`, and for a number
    /// a deserializer hands over as an `f64` (`visit_f64`).
    Float(f64),
}

impl<'a> JsonNumber<'a> {
    /// A number from its JSON text, which must be a valid JSON number. `None` only without
    /// `exact-numbers`, for a number beyond an `f64`'s reach (serde_json then refuses it
    /// too: "number out of range"); with it, every number is held.
    pub fn from_text(text: &'a str) -> Option<JsonNumber<'a>> {
        let plain = text.strip_prefix('-').unwrap_or(text);
        if plain.bytes().all(|b| b.is_ascii_digit()) && text != "-0" {
            if let Ok(n) = text.parse::<u64>() {
                return Some(JsonNumber::UInt(n));
            }
            if let Ok(n) = text.parse::<i64>() {
                return Some(JsonNumber::Int(n));
            }
        }
        #[cfg(feature = "exact-numbers")]
        {
            Some(JsonNumber::Text(text))
        }
        #[cfg(not(feature = "exact-numbers"))]
        {
            // Rust's `f64` parsing rounds correctly, as serde_json's `float_roundtrip` does.
            text.parse::<f64>().ok().filter(|f| f.is_finite()).map(JsonNumber::Float)
        }
    }

    /// The number a `serde_json::Number` holds, borrowing its text.
    pub fn of(n: &'a Number) -> JsonNumber<'a> {
        if let Some(u) = n.as_u64() {
            return JsonNumber::UInt(u);
        }
        if let Some(i) = n.as_i64() {
            return JsonNumber::Int(i);
        }
        #[cfg(feature = "exact-numbers")]
        {
            JsonNumber::Text(n.as_str())
        }
        #[cfg(not(feature = "exact-numbers"))]
        {
            JsonNumber::Float(n.as_f64().unwrap_or_default())
        }
    }

    /// The same number, its text (if any) copied into `arena`.
    pub fn in_arena(self, arena: &bumpalo::Bump) -> JsonNumber<'_> {
        match self {
            JsonNumber::UInt(n) => JsonNumber::UInt(n),
            JsonNumber::Int(n) => JsonNumber::Int(n),
            JsonNumber::Text(t) => JsonNumber::Text(arena.alloc_str(t)),
            JsonNumber::Float(f) => JsonNumber::Float(f),
        }
    }

    /// The nearest `f64`, or `None` beyond an `f64`'s reach (as `Number::as_f64`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            JsonNumber::UInt(n) => Some(n as f64),
            JsonNumber::Int(n) => Some(n as f64),
            JsonNumber::Text(t) => t.parse().ok().filter(|f: &f64| f.is_finite()),
            JsonNumber::Float(f) => Some(f),
        }
    }
}

impl JsonNumber<'_> {
    /// The length of the text [`fmt::Display`] writes, without writing it for integers and
    /// texts (the safety profile measures every number of a schema).
    pub fn written_len(&self) -> usize {
        match *self {
            JsonNumber::UInt(n) => itoa::Buffer::new().format(n).len(),
            JsonNumber::Int(n) => itoa::Buffer::new().format(n).len(),
            JsonNumber::Text(t) => match as_serde_json_writes(t) {
                (mantissa, Some((sign, exponent))) => mantissa.len() + 1 + sign.len() + exponent.len(),
                (mantissa, None) => mantissa.len(),
            },
            JsonNumber::Float(_) => self.to_string().len(),
        }
    }
}

/// Writes the number as serde_json writes the same `Number`: integers in full; a text with
/// its exponent as serde_json keeps it (`e`, with its sign: `1E2` is `1e+2`); a float in its
/// shortest form.
impl fmt::Display for JsonNumber<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            JsonNumber::UInt(n) => write!(f, "{n}"),
            JsonNumber::Int(n) => write!(f, "{n}"),
            JsonNumber::Text(t) => match as_serde_json_writes(t) {
                (mantissa, Some((sign, exponent))) => write!(f, "{mantissa}e{sign}{exponent}"),
                (mantissa, None) => f.write_str(mantissa),
            },
            JsonNumber::Float(x) => match Number::from_f64(x) {
                Some(n) => write!(f, "{n}"),
                None => f.write_str("null"),
            },
        }
    }
}

/// A number's text in the parts serde_json writes it in: the mantissa, and the exponent's
/// sign and digits (`1E2` is written `1e+2`: a lower-case `e`, and a sign always).
fn as_serde_json_writes(text: &str) -> (&str, Option<(&str, &str)>) {
    let Some(at) = text.find(['e', 'E']) else { return (text, None) };
    let exponent = &text[at + 1..];
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ("-", digits),
        None => ("+", exponent.strip_prefix('+').unwrap_or(exponent)),
    };
    (&text[..at], Some((sign, digits)))
}

/// By value, as JSON Schema compares numbers.
impl PartialEq for JsonNumber<'_> {
    fn eq(&self, other: &Self) -> bool {
        equal(self, other)
    }
}

/// A number literal from a schema, as the generated code spells it: an integer that fits
/// an `i128`, or the literal's decimal text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    Int(i128),
    Dec(&'static str),
}

/// The text of a number as the JSON text wrote it (with `exact-numbers`), or the shortest
/// text of the value it holds.
fn text<'n>(n: &JsonNumber<'n>) -> Cow<'n, str> {
    match *n {
        JsonNumber::Text(t) => Cow::Borrowed(t),
        other => Cow::Owned(other.to_string()),
    }
}

/// The number as an `i128`, when it is an integer written without fraction or exponent
/// that fits a `u64` or an `i64` (the fast path).
fn small(n: &JsonNumber<'_>) -> Option<i128> {
    match *n {
        JsonNumber::UInt(u) => Some(i128::from(u)),
        JsonNumber::Int(i) => Some(i128::from(i)),
        JsonNumber::Text(_) | JsonNumber::Float(_) => None,
    }
}

fn decimal(text: &str) -> Decimal<'_> {
    // A `Number`'s text, or a literal the generator wrote, is always a JSON number.
    Decimal::parse(text).unwrap_or(Decimal::ZERO)
}

/// `n` compared with a schema literal, exactly.
pub fn compare_number(n: &JsonNumber<'_>, bound: Num) -> Ordering {
    match (small(n), bound) {
        (Some(x), Num::Int(y)) => x.cmp(&y),
        (_, Num::Int(y)) => decimal(&text(n)).cmp(&decimal(&y.to_string())),
        (_, Num::Dec(literal)) => decimal(&text(n)).cmp(&decimal(literal)),
    }
}

/// Equality by value.
pub fn equal(a: &JsonNumber<'_>, b: &JsonNumber<'_>) -> bool {
    match (small(a), small(b)) {
        (Some(x), Some(y)) => x == y,
        _ => decimal(&text(a)) == decimal(&text(b)),
    }
}

/// JSON Schema's integer: a number with no fractional part, whatever its size or spelling
/// (`1.0`, `1e3` and `18446744073709551617` are integers).
pub fn is_integer(n: &JsonNumber<'_>) -> bool {
    small(n).is_some() || decimal(&text(n)).is_integer()
}

/// `multipleOf`: whether `n / divisor` is an integer, decided on the decimal values (so
/// `0.0075` is a multiple of `0.0001`, which `f64` division denies, and `1e308` one of
/// `0.5`). `divisor` is the schema's text; it is positive with at most [`DIVISOR_DIGITS`]
/// significant digits (the generator checks both).
pub fn multiple_of(n: &JsonNumber<'_>, divisor: &str) -> bool {
    if let (Some(x), Ok(d)) = (small(n), divisor.parse::<i128>()) {
        return d != 0 && x % d == 0;
    }
    let (Some(d), text) = (Decimal::parse(divisor), text(n)) else { return false };
    let x = decimal(&text);
    if !d.is_positive() || d.significant_digits() > DIVISOR_DIGITS {
        return false;
    }
    if x.is_zero() {
        return true;
    }
    // x = X·10^ex and d = D·10^ed with X and D integers that end in a nonzero digit.
    // x/d = (X/D)·10^(ex-ed). When ex < ed it is an integer only if D·10^(ed-ex) divides
    // X, impossible since 10 does not divide X. Otherwise D must divide X·10^(ex-ed).
    let (ex, ed) = (x.unit_exponent(), d.unit_exponent());
    if ex < ed {
        return false;
    }
    let m = d.digits().fold(0u128, |m, digit| m * 10 + u128::from(digit));
    let remainder = x.digits().fold(0u128, |r, digit| (mul_mod(r, 10, m) + u128::from(digit)) % m);
    mul_mod(remainder, pow_mod(10, (ex - ed) as u128, m), m) == 0
}

/// `a · b mod m` without overflow (`a`, `b` < `m`).
fn mul_mod(a: u128, b: u128, m: u128) -> u128 {
    if let Some(product) = a.checked_mul(b) {
        return product % m;
    }
    // Double and add: every intermediate stays below 2m, which fits in u128 for m < 2^127.
    let (mut result, mut a, mut b) = (0u128, a % m, b);
    while b > 0 {
        if b & 1 == 1 {
            result = (result + a) % m;
        }
        a = (a << 1) % m;
        b >>= 1;
    }
    result
}

/// `base^exponent mod m`, by squaring.
fn pow_mod(base: u128, mut exponent: u128, m: u128) -> u128 {
    let (mut result, mut base) = (1 % m, base % m);
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = mul_mod(result, base, m);
        }
        base = mul_mod(base, base, m);
        exponent >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> JsonNumber<'_> {
        JsonNumber::from_text(text).expect("number")
    }

    /// `text` through serde_json and back: the text a round trip writes.
    fn reencoded(text: &str) -> String {
        serde_json::from_str::<Number>(text).expect("number").to_string()
    }

    #[test]
    fn numbers_are_read_canonically_and_written_as_serde_json_writes_them() {
        for (text, expected) in [
            ("0", "UInt(0)"),
            ("18446744073709551615", "UInt(18446744073709551615)"),
            ("-1", "Int(-1)"),
            ("-9223372036854775808", "Int(-9223372036854775808)"),
        ] {
            assert_eq!(format!("{:?}", n(text)), expected, "{text}");
        }
        for text in ["0", "-7", "18446744073709551615", "-9223372036854775808", "1.5", "-0", "1E2", "1e-7", "2.50E+3", "-4e300"] {
            let number = serde_json::from_str::<Number>(text).expect("number");
            assert_eq!(JsonNumber::of(&number), n(text), "{text}");
            assert_eq!(n(text).written_len(), n(text).to_string().len(), "{text}");
            #[cfg(feature = "exact-numbers")]
            assert_eq!(n(text).to_string(), reencoded(text), "{text}");
        }
    }

    #[test]
    fn integers_of_any_size_compare_exactly() {
        assert_eq!(compare_number(&n("9007199254740993"), Num::Int(9007199254740992)), Ordering::Greater);
        assert!(!equal(&n("9007199254740993"), &n("9007199254740992")));
        assert!(equal(&n("1.0"), &n("1")));
        assert!(equal(&n("1e3"), &n("1000")));
        assert!(equal(&n("-0"), &n("0.0")));
        assert_eq!(compare_number(&n("18446744073709551615"), Num::Int(-1)), Ordering::Greater);
        assert_eq!(compare_number(&n("-2.5"), Num::Int(-2)), Ordering::Less);
        assert_eq!(compare_number(&n("3"), Num::Dec("2.5")), Ordering::Greater);
        assert_eq!(compare_number(&n("1e300"), Num::Int(i128::MAX)), Ordering::Greater);
        assert_eq!(compare_number(&n("-1e300"), Num::Int(i128::MIN)), Ordering::Less);
        assert_eq!(compare_number(&n("9007199254740991.0"), Num::Int(9007199254740991)), Ordering::Equal);
    }

    #[cfg(feature = "exact-numbers")]
    #[test]
    fn texts_beyond_u64_and_f64_keep_their_value() {
        // The cases: each was decided on a rounded value before.
        assert_eq!(compare_number(&n("18446744073709551617"), Num::Dec("18446744073709551616")), Ordering::Greater);
        assert!(!equal(&n("18446744073709551616"), &n("18446744073709551617")));
        assert!(multiple_of(&n("18446744073709551618"), "3"));
        assert!(!multiple_of(&n("18446744073709551617"), "3"));
        assert!(is_integer(&n("18446744073709551617")));
        assert!(is_integer(&n("1.5e400")));
        assert!(!is_integer(&n("1.5e-400")));
        assert_eq!(compare_number(&n("1e400"), Num::Dec("1.7976931348623157e308")), Ordering::Greater);
        assert_eq!(compare_number(&n("0.1000000000000000055511151231257827"), Num::Dec("0.1")), Ordering::Greater);
        // A round trip keeps the text's value (serde_json writes an exponent with its sign).
        for text in ["18446744073709551617", "0.44999999999999996", "123456789012345678901234567890.5", "1e400", "-2.50E-7"] {
            let again = reencoded(text);
            assert_eq!(decimal(&again), decimal(text), "{text} came back as {again}");
            assert!(equal(&n(&again), &n(text)), "{text}");
        }
    }

    #[test]
    fn floats_are_read_as_the_value_of_their_text() {
        // Seventeen significant digits: distinct from their shorter neighbours.
        assert_eq!(compare_number(&n("0.09999999999999999"), Num::Dec("0.1")), Ordering::Less);
        assert!(!equal(&n("0.09999999999999999"), &n("0.1")));
        for text in ["0.44999999999999996", "0.09999999999999999", "9007199254740991.0", "1.7976931348623157e308", "5e-324"] {
            let again = reencoded(text);
            assert!(equal(&n(&again), &n(text)), "{text}");
        }
    }

    #[test]
    fn multiples_are_decided_on_decimal_values() {
        assert!(multiple_of(&n("0.0075"), "0.0001"));
        assert!(!multiple_of(&n("0.00751"), "0.0001"));
        assert!(multiple_of(&n("4.5"), "1.5"));
        assert!(!multiple_of(&n("35"), "1.5"));
        assert!(multiple_of(&n("9007199254740993"), "1"));
        assert!(!multiple_of(&n("9007199254740993"), "2"));
        assert!(multiple_of(&n("1e20"), "10"));
        assert!(multiple_of(&n("0"), "0.7"));
        // Beyond i128 after scaling: decided exactly, not through an infinite float quotient.
        assert!(multiple_of(&n("1e308"), "0.5"));
        assert!(!multiple_of(&n("1e300"), "0.3"));
        assert!(multiple_of(&n("3e300"), "0.3"));
        assert!(!multiple_of(&n("1e60"), "7e-1"));
        assert!(multiple_of(&n("7e60"), "7e-1"));
        assert!(multiple_of(&n("-21"), "7"));
    }
}
