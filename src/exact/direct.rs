//! A reader of JSON text straight into a [`Json`] tree, for the decoder's common case.
//!
//! Building the tree through serde's visitors ([`super::Tree`]) cost the decoder about
//! 1.75 times the instructions of skipping the same text with `IgnoredAny`: every value
//! goes through `deserialize_any`, every key through `next_key_seed`. This reader walks
//! the bytes itself. It is exact by refusing rather than guessing: it answers `None` for
//! anything it is not sure serde_json reads the same way (a syntax error, a duplicate
//! key, a lone surrogate, the raw-value token, deep nesting), and the caller then reads
//! the text through serde_json as before, which gives the tree or the error. Whenever it
//! answers `Some`, the tree is the one [`Json::parse`] builds (tested below).

use super::numbers::JsonNumber;
use super::tree::{is_json_number, within_range, NUMBER_TOKEN, RAW_VALUE_TOKEN};
use super::Json;
use bumpalo::collections::{String as ArenaString, Vec as ArenaVec};
use bumpalo::Bump;

/// Containers nested deeper than this are left to serde_json, whose recursion limit
/// (128) decides them. ACP messages nest a handful of levels.
const MAX_DEPTH: usize = 64;

/// Room reserved for the members or items of a container, as [`super::Tree`] reserves it.
const INITIAL_CAPACITY: usize = 8;

/// Objects with more members are left to serde_json's path (see `object`). ACP objects
/// have about a dozen at most.
const MAX_MEMBERS: usize = 32;

/// The tree of `text`, or `None` when serde_json must decide (see the module).
pub(crate) fn direct_tree<'a>(text: &'a str, arena: &'a Bump) -> Option<Json<'a>> {
    let mut reader = Reader { text, pos: 0, arena };
    let value = reader.value(0)?;
    reader.whitespace();
    (reader.pos == reader.text.len()).then_some(value)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    arena: &'a Bump,
}

impl<'a> Reader<'a> {
    /// The text's bytes, taken from `text` itself (rather than kept beside it) so the
    /// compiler sees they are the same memory: see [`quoted`].
    #[inline(always)]
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    #[inline]
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed. Whitespace bytes are all at or
    /// below a space, so one comparison passes any other byte: messages on the wire are
    /// mostly compact, and the loop's tests before every token cost about 4% of a turn.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let byte = *self.bytes().get(self.pos)?;
        if byte > b' ' {
            return Some(byte);
        }
        self.whitespace();
        self.bytes().get(self.pos).copied()
    }

    /// Consumes `byte` if it comes next.
    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        match self.peek()? {
            b'"' => {
                self.pos += 1;
                self.string().map(Json::String)
            }
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true", Json::Bool(true)),
            b'f' => self.literal(b"false", Json::Bool(false)),
            b'n' => self.literal(b"null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], value: Json<'a>) -> Option<Json<'a>> {
        let end = self.pos + word.len();
        (self.bytes().get(self.pos..end)? == word).then(|| {
            self.pos = end;
            value
        })
    }

    fn object(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        if self.eat(b'}') {
            return Some(Json::Object(&[]));
        }
        let mut members = room(self.arena);
        // A bit per key seen, chosen by its length and end bytes: the members are searched
        // for a repeat only when the bit was set already. Searching every time cost a loop
        // of varying length per key, and its branches were mispredicted.
        let mut seen = 0u64;
        loop {
            if !self.eat(b'"') {
                return None;
            }
            let key = self.string()?;
            // serde_json reads an object with these first keys as a raw value or a number; a repeated
            // key is an envelope error in some places and "last value wins" in others.
            // Past `MAX_MEMBERS` the search for a repeat would grow quadratic: serde_json's
            // path indexes the keys of such an object instead.
            let bit = 1u64 << (key_hash(key) % 64);
            if key == RAW_VALUE_TOKEN
                || key == NUMBER_TOKEN
                || members.len() == MAX_MEMBERS
                || (seen & bit != 0 && members.iter().any(|(k, _)| *k == key))
            {
                return None;
            }
            seen |= bit;
            if !self.eat(b':') {
                return None;
            }
            // A string, the most common member value, is read here rather than through
            // the recursive `value`, whose calls' register saves cost about 4% of a turn.
            let value = if self.eat(b'"') { Json::String(self.string()?) } else { self.value(depth)? };
            members.push((key, value));
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(Json::Object(members.into_bump_slice()));
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        if self.eat(b']') {
            return Some(Json::Array(&[]));
        }
        let mut items = room(self.arena);
        loop {
            items.push(self.value(depth)?);
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(Json::Array(items.into_bump_slice()));
                }
                _ => return None,
            }
        }
    }

    /// A number, borrowing its text. A plain non-negative integer of at most 19 digits
    /// (always a `u64`) is read here; any other valid number goes through
    /// [`JsonNumber::from_text`], as the serde path does. An invalid one, or one beyond an
    /// `f64`'s reach, is left to serde_json, which gives the error.
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.pos;
        let end = start
            + self.bytes()[start..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(self.bytes().len() - start);
        self.pos = end;
        let digits = &self.bytes()[start..end];
        // A leading zero is only valid alone.
        if digits.len() <= 19 && digits.iter().all(u8::is_ascii_digit) && (digits[0] != b'0' || digits.len() == 1) {
            let n = digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            return Some(Json::Number(JsonNumber::UInt(n)));
        }
        if !is_json_number(digits) {
            return None;
        }
        JsonNumber::from_text(&self.text[start..end]).filter(within_range).map(Json::Number)
    }

    /// A string whose opening quote was consumed: borrowed when it has no escapes.
    /// Always inlined: most strings are short keys, whose cost was mostly the call.
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let end = special(self.bytes(), start);
        match self.bytes().get(end)? {
            b'"' => {
                // Sliced before `pos` is stored, so the compiler still knows the quote it
                // read at `end` (see `quoted`).
                let text = quoted(self.text, start, end);
                self.pos = end + 1;
                text
            }
            b'\\' => self.escaped(start, end),
            _ => None, // a control character: serde_json rejects it
        }
    }

    /// The rest of a string from its first backslash (at `at`), unescaped into the arena.
    #[cold]
    #[inline(never)]
    fn escaped(&mut self, start: usize, mut at: usize) -> Option<&'a str> {
        let mut out = ArenaString::with_capacity_in(at - start + 16, self.arena);
        out.push_str(quoted(self.text, start, at)?);
        loop {
            let escape = *self.bytes().get(at + 1)?;
            at += 2;
            out.push(match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let unit = self.hex4(at)?;
                    at += 4;
                    if (0xD800..0xDC00).contains(&unit) {
                        // Only a high surrogate followed by an escaped low one is a char;
                        // anything else is serde_json's to judge.
                        if self.bytes().get(at..at + 2)? != b"\\u" {
                            return None;
                        }
                        let low = self.hex4(at + 2)?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return None;
                        }
                        at += 6;
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    } else {
                        // A lone low surrogate has no char: `None`.
                        char::from_u32(unit)?
                    }
                }
                _ => return None,
            });
            let next = special(self.bytes(), at);
            out.push_str(quoted(self.text, at, next)?);
            match self.bytes().get(next)? {
                b'"' => {
                    self.pos = next + 1;
                    return Some(out.into_bump_str());
                }
                b'\\' => at = next,
                _ => return None,
            }
        }
    }

    /// Four hex digits at `at`, as serde_json reads a `\u` escape.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes().get(at..at + 4)?;
        digits.iter().try_fold(0u32, |n, d| Some(n * 16 + char::from(*d).to_digit(16)?))
    }
}

/// `text[start..end]`, the run of a string between `start` and the quote or backslash at
/// `end`. Written with the checked splits rather than the indexing operator: the operator's
/// char-boundary checks were an out-of-line `get` per string, 7% of a turn's instructions,
/// while these inline, and the check at `end` folds away against the ASCII byte the
/// caller just matched there. Both ends are always char boundaries (the text is valid
/// UTF-8, `start` follows an ASCII byte and `end` holds one), so `None` never happens;
/// it would only leave the text to serde_json.
#[inline(always)]
fn quoted(text: &str, start: usize, end: usize) -> Option<&str> {
    let (head, _) = text.split_at_checked(end)?;
    Some(head.split_at_checked(start)?.1)
}

/// An empty container's list with room for [`INITIAL_CAPACITY`] entries. Its own small
/// function, so the compiler sees the constant where bumpalo's allocation is generated and
/// inlines its fast path (a pointer bump), whichever way it inlines the reader around it:
/// called out of the recursive `value`, bumpalo's general allocation was compiled once for
/// any capacity and cost twice the instructions.
#[inline(never)]
fn room<'a, T>(arena: &'a Bump) -> ArenaVec<'a, T> {
    ArenaVec::with_capacity_in(INITIAL_CAPACITY, arena)
}

/// A cheap summary of a key for the repeat filter in `Reader::object`: equal keys have
/// equal summaries, which is all the filter needs.
#[inline(always)]
fn key_hash(key: &str) -> u32 {
    let bytes = key.as_bytes();
    let (first, last) = (bytes.first().copied().unwrap_or(0), bytes.last().copied().unwrap_or(0));
    (bytes.len() as u32).wrapping_mul(7) ^ u32::from(first) ^ (u32::from(last) << 2)
}

/// The index of the first byte at or after `i` that ends a string's plain run: a quote,
/// a backslash or a control character (or the end). Eight bytes at a time: for each
/// test, a byte that matches borrows in the subtraction and sets its high bit, and
/// borrows only ever run from a matching byte upwards, so the lowest flagged byte is the
/// first match.
#[inline(always)]
fn special(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    while let Some(chunk) = bytes.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let found = (quote.wrapping_sub(ONES) & !quote) | (backslash.wrapping_sub(ONES) & !backslash) | (x.wrapping_sub(ONES * 0x20) & !x);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(b) = bytes.get(i) {
        if matches!(b, b'"' | b'\\' | 0..=0x1f) {
            break;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the direct reader answers is what serde_json's path builds; what it
    /// refuses, serde_json decides (here: either way).
    fn agrees(text: &str) -> bool {
        let arena = Bump::new();
        let direct = direct_tree(text, &arena);
        let serde = Json::parse(text, &arena).ok();
        if let Some(tree) = &direct {
            assert_eq!(Some(tree), serde.as_ref(), "{text:?}");
        }
        direct.is_some()
    }

    #[test]
    fn trees_are_the_ones_serde_json_builds() {
        let long = "x".repeat(37);
        for text in [
            "null",
            " true ",
            "false",
            "0",
            "7",
            "18446744073709551615",
            "1234567890123456789",
            "-0",
            "-7",
            "1.5",
            "1e2",
            "-1.0e-300",
            "18446744073709551616",
            "123456789012345678901",
            "\"\"",
            "\"plain\"",
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u20AC\ud83d\ude00 end""#,
            r#""é 😀 ok""#,
            "[]",
            "{}",
            r#"{"a": [1, {"b": null}], "c": "d", "e": {"f": [true, false, []]}}"#,
            r#"{"axb": 1, "ayb": 2, "": 3, "b": 4}"#,
            &format!(r#"{{"{long}\n": "{long}\u0041{long}", "k": "{long}"}}"#),
        ] {
            assert!(agrees(text), "read directly: {text}");
        }
    }

    #[test]
    fn anything_unsure_is_left_to_serde_json() {
        let deep = format!("{}1{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        let members = |n: usize| format!("{{{}}}", (0..n).map(|i| format!("\"k{i}\":{i}")).collect::<Vec<_>>().join(","));
        assert!(agrees(&members(MAX_MEMBERS)), "as many members as searched");
        let wide = members(MAX_MEMBERS + 1);
        for text in [
            "",
            "nul",
            "nulls",
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "01",
            "-",
            "1.",
            "1e",
            "--1",
            "+1",
            "1e400",
            r#"{"$serde_json::private::Number":"1"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"axb":1,"ayb":2,"axb":3}"#,
            r#"{"":1,"":2}"#,
            r#"{"$serde_json::private::RawValue":"1"}"#,
            r#""\ud800""#,
            r#""\ud800\u0041""#,
            r#""\udc00""#,
            r#""\x""#,
            r#""\u12""#,
            "\"a\u{1}b\"",
            "\"unterminated",
            "[1] [2]",
            "{\"a\":1}x",
            &deep,
            &wide,
        ] {
            assert!(!agrees(text), "refused: {text:?}");
        }
    }

    /// The scan finds the first special byte wherever it sits in a word, after any
    /// mix of ASCII and multi-byte characters.
    #[test]
    fn the_scan_stops_at_the_first_special_byte() {
        for prefix in ["", "a", "abcdefg", "abcdefgh", "é", "ééééé", "\u{7f}\u{80}\u{ff}xyz"] {
            for special_byte in ['"', '\\', '\u{0}', '\u{1f}'] {
                let text = format!("{prefix}{special_byte}\"tail\\");
                assert_eq!(special(text.as_bytes(), 0), prefix.len(), "{prefix:?} {special_byte:?}");
            }
            assert_eq!(special(prefix.as_bytes(), 0), prefix.len());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Text from JSON's own alphabet (brackets, quotes, escapes, digits, literals' letters,
        /// whitespace, a multi-byte character, a control byte): wherever the reader answers,
        /// it answers what serde_json builds.
        #[test]
        fn json_alphabet_soup_agrees_with_serde_json(text in "[\\[\\]{}\":, \\\\/u0-9a-fA-F.eE+\\-tnlrsé\\x01\\n]{0,40}") {
            agrees(&text);
        }

        /// Well-formed documents, from nested arrays and objects of every scalar, with
        /// whitespace between every token.
        #[test]
        fn well_formed_documents_are_read_as_serde_json_reads_them(
            items in proptest::collection::vec(("[a-c\\\\\"é\\u{1F600}]{0,4}", -1_000_000_000_000i64..1_000_000_000_000, proptest::prelude::any::<f64>(), proptest::prelude::any::<bool>()), 0..6),
            spacing in "[ \\t\\n\\r]{0,2}",
        ) {
            let mut text = String::from("{");
            for (i, (key, n, f, b)) in items.iter().enumerate() {
                let float = if f.is_finite() { serde_json::to_string(f).unwrap_or_default() } else { String::from("0.5") };
                let key = serde_json::to_string(&format!("{key}{i}")).unwrap_or_default();
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&format!("{spacing}{key}{spacing}:{spacing}[{n},{spacing}{float},{b},null,{{}},[]]{spacing}"));
            }
            text.push('}');
            proptest::prop_assert!(agrees(&text), "a well-formed document is read directly: {}", text);
        }
    }
}
