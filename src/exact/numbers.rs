//! Exact number semantics for the generated checks: JSON Schema compares numbers by
//! value, so `1.0` equals `1`, and an integer above 2^53 must not be rounded through
//! `f64` before it is compared with a bound or an `enum` value.
//!
//! A `serde_json::Number` holds an `i64`, a `u64` or an `f64`. Integers are compared as
//! `i128`; an integer against a float is compared through the float's floor or ceiling,
//! which is exact; only two floats are compared as floats.

use std::cmp::Ordering;

use serde_json::Number;

/// A number literal from a schema, as the generated code spells it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn of(n: &Number) -> Num {
        if let Some(i) = n.as_i64() {
            Num::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            Num::Int(i128::from(u))
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }
    }
}

/// The largest magnitude below which every integral `f64` converts to `i128` exactly.
const I128_SAFE: f64 = 1.0e38;

/// Orders `a` against `b` exactly (JSON has no NaN, so the order is total).
pub fn compare(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Int(x), Num::Float(f)) => compare(Num::Float(f), Num::Int(x)).reverse(),
        (Num::Float(f), Num::Int(y)) => {
            if f.abs() >= I128_SAFE {
                return if f > 0.0 { Ordering::Greater } else { Ordering::Less };
            }
            // Compare the floor, which converts exactly; if it equals `y`, `f` is above `y`
            // exactly when it has a fraction.
            let floor = f.floor();
            match (floor as i128).cmp(&y) {
                Ordering::Equal if f != floor => Ordering::Greater,
                other => other,
            }
        }
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// `n` compared with a schema literal.
pub fn compare_number(n: &Number, bound: Num) -> Ordering {
    compare(Num::of(n), bound)
}

/// Equality by value.
pub fn equal(a: &Number, b: &Number) -> bool {
    compare(Num::of(a), Num::of(b)) == Ordering::Equal
}

/// A finite decimal `digits × 10^exponent`, read from a number's shortest decimal text.
fn decimal(text: &str) -> Option<(i128, i32)> {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    Some((digits, exponent - i32::try_from(fraction.len()).ok()?))
}

/// `multipleOf`: whether `n / divisor` is an integer, computed on the decimal values the
/// JSON text denotes (so `0.0075` is a multiple of `0.0001`, which `f64` division denies).
pub fn multiple_of(n: &Number, divisor: &Number) -> bool {
    if let (Num::Int(x), Num::Int(d)) = (Num::of(n), Num::of(divisor)) {
        return d != 0 && x % d == 0;
    }
    match (decimal(&n.to_string()), decimal(&divisor.to_string())) {
        (Some((x, ex)), Some((d, ed))) if d != 0 => {
            if x == 0 {
                return true;
            }
            // x·10^ex / (d·10^ed) is an integer ⇔ x·10^(ex-ed) ≡ 0 (mod d), scaling
            // whichever side has the smaller exponent.
            let shift = ex - ed;
            let scale = |v: i128, by: i32| -> Option<i128> { 10i128.checked_pow(u32::try_from(by).ok()?)?.checked_mul(v) };
            if shift >= 0 {
                match scale(x, shift) {
                    Some(x) => x % d == 0,
                    // Too large for i128 (`1e308` against `0.5`): x·10^shift mod d by
                    // modular exponentiation, still exact.
                    None => {
                        let m = d.unsigned_abs();
                        let power = pow_mod(10, u32::try_from(shift).unwrap_or(u32::MAX), m);
                        mul_mod(x.unsigned_abs() % m, power, m) == 0
                    }
                }
            } else {
                match scale(d, -shift) {
                    Some(d) => x % d == 0,
                    None => false,
                }
            }
        }
        _ => false,
    }
}

/// `a · b mod m` without overflow (`a`, `b` < `m`).
fn mul_mod(a: u128, b: u128, m: u128) -> u128 {
    if let Some(product) = a.checked_mul(b) {
        return product % m;
    }
    // Double and add: every intermediate stays below 2m, which fits in u128 for m < 2^127.
    let (mut result, mut a, mut b) = (0u128, a, b);
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
fn pow_mod(base: u128, mut exponent: u32, m: u128) -> u128 {
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
    fn integers_beyond_2_53_compare_exactly() {
        assert_eq!(compare_number(&n("9007199254740993"), Num::Int(9007199254740992)), Ordering::Greater);
        assert!(!equal(&n("9007199254740993"), &n("9007199254740992")));
        assert!(equal(&n("1.0"), &n("1")));
        assert_eq!(compare_number(&n("18446744073709551615"), Num::Int(-1)), Ordering::Greater);
    }

    #[test]
    fn floats_against_integers_compare_exactly() {
        assert_eq!(compare_number(&n("2.5"), Num::Int(2)), Ordering::Greater);
        assert_eq!(compare_number(&n("2.5"), Num::Int(3)), Ordering::Less);
        assert_eq!(compare_number(&n("-2.5"), Num::Int(-2)), Ordering::Less);
        assert_eq!(compare_number(&n("3"), Num::Float(2.5)), Ordering::Greater);
        assert_eq!(compare_number(&n("1e300"), Num::Int(i128::MAX)), Ordering::Greater);
    }

    #[test]
    fn floats_are_read_as_the_nearest_f64_of_their_text() {
        // Seventeen significant digits: distinct from their shorter neighbours.
        assert_eq!(compare_number(&n("0.09999999999999999"), Num::Float(0.1)), Ordering::Less);
        assert!(!equal(&n("0.09999999999999999"), &n("0.1")));
        assert_eq!(compare_number(&n("9007199254740991.0"), Num::Int(9007199254740991)), Ordering::Equal);
        // A round trip keeps the value: what is written back is the text's number.
        for text in ["0.44999999999999996", "0.09999999999999999", "9007199254740991.0", "1.7976931348623157e308", "5e-324"] {
            let again: Number = serde_json::from_str(&n(text).to_string()).expect("number");
            assert_eq!(again.as_f64(), n(text).as_f64(), "{text}");
            assert!(equal(&again, &n(text)), "{text}");
        }
        assert_eq!(n("0.44999999999999996").to_string(), "0.44999999999999996");
    }

    #[test]
    fn multiples_are_decided_on_decimal_values() {
        assert!(multiple_of(&n("0.0075"), &n("0.0001")));
        assert!(!multiple_of(&n("0.00751"), &n("0.0001")));
        assert!(multiple_of(&n("4.5"), &n("1.5")));
        assert!(!multiple_of(&n("35"), &n("1.5")));
        assert!(multiple_of(&n("9007199254740993"), &n("1")));
        assert!(!multiple_of(&n("9007199254740993"), &n("2")));
        assert!(multiple_of(&n("1e20"), &n("10")));
        // Beyond i128 after scaling: decided exactly, not through an infinite float quotient.
        assert!(multiple_of(&n("1e308"), &n("0.5")));
        assert!(!multiple_of(&n("1e300"), &n("0.3")));
        assert!(multiple_of(&n("3e300"), &n("0.3")));
        assert!(!multiple_of(&n("1e60"), &n("7e-1")));
    }
}
