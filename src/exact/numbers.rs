//! Exact number semantics for the generated checks: JSON Schema compares numbers by the
//! value their text denotes, so `1.0` equals `1`, `18446744073709551617` is above
//! `18446744073709551616`, and `0.09999999999999999` is below `0.1`.
//!
//! With the `exact-numbers` feature (on by default) serde_json keeps every number's text
//! (`arbitrary_precision`), and a comparison reads that text as a decimal of any size.
//! Without it, a `serde_json::Number` holds an `i64`, a `u64` or the `f64` nearest the
//! text (`float_roundtrip`), and the comparison is exact on what it holds: the shortest
//! decimal text of that `f64`.
//!
//! Integers that fit an `i128` on both sides take a fast path; everything else goes
//! through [`Decimal`], the text read as a decimal of any size.

use std::borrow::Cow;
use std::cmp::Ordering;

pub use checkfu_wire_vocab::decimal::{Decimal, DIVISOR_DIGITS};
use serde_json::Number;

/// A number literal from a schema, as the generated code spells it: an integer that fits
/// an `i128`, or the literal's decimal text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    Int(i128),
    Dec(&'static str),
}

/// The text of a number as the JSON text wrote it (with `exact-numbers`), or the shortest
/// text of the value it holds.
fn text(n: &Number) -> Cow<'_, str> {
    #[cfg(feature = "exact-numbers")]
    {
        Cow::Borrowed(n.as_str())
    }
    #[cfg(not(feature = "exact-numbers"))]
    {
        Cow::Owned(n.to_string())
    }
}

/// The number as an `i128`, when it is an integer written without fraction or exponent
/// that fits one (the fast path).
fn small(n: &Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

fn decimal(text: &str) -> Decimal<'_> {
    // A `Number`'s text, or a literal the generator wrote, is always a JSON number.
    Decimal::parse(text).unwrap_or(Decimal::ZERO)
}

/// `n` compared with a schema literal, exactly.
pub fn compare_number(n: &Number, bound: Num) -> Ordering {
    match (small(n), bound) {
        (Some(x), Num::Int(y)) => x.cmp(&y),
        (_, Num::Int(y)) => decimal(&text(n)).cmp(&decimal(&y.to_string())),
        (_, Num::Dec(literal)) => decimal(&text(n)).cmp(&decimal(literal)),
    }
}

/// Equality by value.
pub fn equal(a: &Number, b: &Number) -> bool {
    match (small(a), small(b)) {
        (Some(x), Some(y)) => x == y,
        _ => decimal(&text(a)) == decimal(&text(b)),
    }
}

/// JSON Schema's integer: a number with no fractional part, whatever its size or spelling
/// (`1.0`, `1e3` and `18446744073709551617` are integers).
pub fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || decimal(&text(n)).is_integer()
}

/// `multipleOf`: whether `n / divisor` is an integer, decided on the decimal values (so
/// `0.0075` is a multiple of `0.0001`, which `f64` division denies, and `1e308` one of
/// `0.5`). `divisor` is the schema's text; it is positive with at most [`DIVISOR_DIGITS`]
/// significant digits (the generator checks both).
pub fn multiple_of(n: &Number, divisor: &str) -> bool {
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

    fn n(text: &str) -> Number {
        serde_json::from_str(text).expect("number")
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
            let again = n(text).to_string();
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
            let again: Number = serde_json::from_str(&n(text).to_string()).expect("number");
            assert!(equal(&again, &n(text)), "{text}");
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
