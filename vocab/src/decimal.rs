//! The value of a JSON number's text, as a decimal of any size: what JSON Schema's
//! numeric keywords compare. The generator reads it from schema literals (to refuse what
//! the checks cannot decide), the runtime from instances (to decide them).

use std::cmp::Ordering;

/// A JSON number's text read as `±0.d₁d₂… × 10^point` with `d₁ ≠ 0` and no trailing zero
/// digit, or zero. It borrows the text: the digits are the significant span of the
/// mantissa, read past its `.`, so reading costs no allocation.
///
/// Exponents are held as `i128`, saturated at 10^30: no text is long enough for a
/// difference beyond that to change an order.
#[derive(Clone, Copy, Debug)]
pub struct Decimal<'t> {
    negative: bool,
    /// The significant span of the mantissa (first to last nonzero digit; may hold `.`).
    span: &'t [u8],
    count: usize,
    point: i128,
}

const EXPONENT_LIMIT: i128 = 1_000_000_000_000_000_000_000_000_000_000;

/// The most significant digits a `multipleOf` divisor may have: the runtime decides a
/// multiple with `u128` modular arithmetic on the divisor's digits. The generator refuses
/// a longer divisor.
pub const DIVISOR_DIGITS: usize = 38;

/// The length of the JSON number that `bytes` starts with, as JSON's grammar writes one:
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; `None` when they start with
/// none. The longest such number is taken, so `1.` and `1e` are the number `1` followed by
/// a byte that is not part of it, which the caller refuses as it refuses any stray byte.
/// The generator's schema reader and the runtime's decoder both read numbers by it, so
/// the two cannot differ on what a number is.
pub fn json_number_len(bytes: &[u8]) -> Option<usize> {
    let digits = |from: usize| from + bytes.get(from..).unwrap_or_default().iter().take_while(|b| b.is_ascii_digit()).count();
    let mut at = usize::from(bytes.first() == Some(&b'-'));
    at = match bytes.get(at) {
        Some(b'0') => at + 1,
        Some(b'1'..=b'9') => digits(at),
        _ => return None,
    };
    if bytes.get(at) == Some(&b'.') && digits(at + 1) > at + 1 {
        at = digits(at + 1);
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
        let end = digits(at + 1 + sign);
        if end > at + 1 + sign {
            at = end;
        }
    }
    Some(at)
}

impl<'t> Decimal<'t> {
    pub const ZERO: Decimal<'static> = Decimal { negative: false, span: &[], count: 0, point: 0 };

    /// Reads a JSON number's text (`-?digits(.digits)?([eE][+-]?digits)?`); `None` for
    /// anything else.
    pub fn parse(text: &'t str) -> Option<Decimal<'t>> {
        let bytes = text.as_bytes();
        let (negative, rest) = match bytes.first() {
            Some(b'-') => (true, &bytes[1..]),
            _ => (false, bytes),
        };
        let mantissa_end = rest.iter().position(|b| matches!(b, b'e' | b'E')).unwrap_or(rest.len());
        let (mantissa, exponent) = rest.split_at(mantissa_end);
        let exponent = match exponent {
            [] => 0,
            [_, tail @ ..] => {
                let (sign, digits) = match tail.first() {
                    Some(b'-') => (-1, &tail[1..]),
                    Some(b'+') => (1, &tail[1..]),
                    _ => (1, tail),
                };
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                sign * digits.iter().fold(0i128, |e, d| (e * 10 + i128::from(d - b'0')).min(EXPONENT_LIMIT))
            }
        };
        let whole = mantissa.iter().position(|b| *b == b'.').unwrap_or(mantissa.len());
        let fraction = mantissa.get(whole + 1..).unwrap_or(&[]);
        let dotted = whole < mantissa.len();
        if whole == 0 || (dotted && fraction.is_empty()) || !mantissa[..whole].iter().chain(fraction).all(u8::is_ascii_digit) {
            return None;
        }
        let significant = |b: &u8| b.is_ascii_digit() && *b != b'0';
        let Some(first) = mantissa.iter().position(significant) else {
            return Some(Decimal::ZERO);
        };
        let last = mantissa.iter().rposition(significant).unwrap_or(first);
        let span = &mantissa[first..=last];
        let count = span.iter().filter(|b| b.is_ascii_digit()).count();
        // The first significant digit is the `whole - first`-th digit left of the point; right
        // of it (`first > whole`), the `.` between them is no digit.
        let left = whole as i128 - first as i128 + i128::from(first > whole);
        let point = (left + exponent).clamp(-EXPONENT_LIMIT, EXPONENT_LIMIT);
        Some(Decimal { negative, span, count, point })
    }

    pub fn is_zero(&self) -> bool {
        self.count == 0
    }

    pub fn is_negative(&self) -> bool {
        self.negative && !self.is_zero()
    }

    pub fn is_positive(&self) -> bool {
        !self.negative && !self.is_zero()
    }

    /// Whether it has no fractional part.
    pub fn is_integer(&self) -> bool {
        self.point >= self.count as i128
    }

    /// How many significant digits it has (no leading or trailing zeros).
    pub fn significant_digits(&self) -> usize {
        self.count
    }

    /// The significant digits, most significant first, as values 1–9 and 0.
    pub fn digits(&self) -> impl Iterator<Item = u8> + Clone + 't {
        self.span.iter().filter(|b| b.is_ascii_digit()).map(|b| b - b'0')
    }

    /// The power of ten of the last significant digit: the value is the digits, read as
    /// an integer, times 10^this.
    pub fn unit_exponent(&self) -> i128 {
        self.point - self.count as i128
    }

    fn magnitude_cmp(&self, other: &Decimal<'_>) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // No trailing zeros: a digit string that is a prefix of the other is smaller.
            (false, false) => self.point.cmp(&other.point).then_with(|| self.digits().cmp(other.digits())),
        }
    }
}

impl Ord for Decimal<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.is_negative(), other.is_negative()) {
            (false, false) => self.magnitude_cmp(other),
            (true, true) => other.magnitude_cmp(self),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Decimal<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Decimal<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_are_measured_by_the_grammar() {
        for (text, len) in [
            ("0", Some(1)),
            ("-0", Some(2)),
            ("12.50e+3,", Some(8)),
            ("1E5]", Some(3)),
            ("01", Some(1)),
            ("1.", Some(1)),
            ("1e", Some(1)),
            ("1e+", Some(1)),
            ("-", None),
            ("+1", None),
            (".5", None),
            ("", None),
        ] {
            assert_eq!(json_number_len(text.as_bytes()), len, "{text:?}");
        }
    }

    fn d(text: &str) -> Decimal<'_> {
        Decimal::parse(text).expect(text)
    }

    #[test]
    fn equal_values_are_equal_whatever_the_spelling() {
        for (a, b) in [("0.0100", "1e-2"), ("-0.0", "0"), ("1.0", "1"), ("1e3", "1000"), ("12.5", "125e-1"), ("0.000", "0e9")] {
            assert_eq!(d(a), d(b), "{a} = {b}");
        }
        assert_ne!(d("18446744073709551617"), d("18446744073709551616"));
        assert_ne!(d("0.09999999999999999"), d("0.1"));
    }

    #[test]
    fn values_are_ordered_exactly() {
        let ascending = [
            "-1e400",
            "-1",
            "-0.5",
            "0",
            "1e-300",
            "0.09999999999999999",
            "0.1",
            "0.1000000000000000055511151231257827",
            "1",
            "1.5",
            "1.51",
            "15",
            "18446744073709551616",
            "18446744073709551617",
            "1e400",
        ];
        for pair in ascending.windows(2) {
            assert!(d(pair[0]) < d(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert!(d("1e9999999999999999999999999999999999999") > d("1e999999999"));
    }

    #[test]
    fn integers_digits_and_exponents() {
        assert!(d("1.5e400").is_integer() && d("18446744073709551617").is_integer() && d("-3.0").is_integer());
        assert!(!d("1.5e-400").is_integer() && !d("0.5").is_integer());
        assert_eq!(d("0.00750").digits().collect::<Vec<_>>(), [7, 5]);
        assert_eq!(d("0.00750").unit_exponent(), -4);
        assert_eq!(d("1200").unit_exponent(), 2);
        assert_eq!(d("102.030").significant_digits(), 5);
        assert!(d("0.5").is_positive() && !d("0").is_positive() && d("-2").is_negative() && !d("-0").is_negative());
    }

    #[test]
    fn only_json_numbers_are_read() {
        for bad in ["", "-", "1.", ".5", "1e", "1e+", "0x1", "1,5", "+1", "1.2.3", "e5"] {
            assert!(Decimal::parse(bad).is_none(), "{bad:?}");
        }
    }
}
