//! JSON Schema's syntax that the generator and the safety profile both read: RFC 6901 JSON
//! Pointers (parsing, escaping, the `$ref` fragment form) and the tables of keywords that
//! hold subschemas.
//!
//! Both used to write these out for themselves, and the copies disagreed: the generator
//! read `~2` as the two characters it is, the safety profile refused it, as RFC 6901 §3
//! does (`~` is followed by `0` or `1`, nothing else). One module now says it for both, and
//! it imports nothing else of this crate (nor anything but `std`), so either can depend on
//! it without taking the rest of the vocabulary's meaning along.

use std::borrow::Cow;
use std::fmt;

/// Why a text is not a JSON Pointer (or a `$ref` fragment holding one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointerError {
    /// Neither empty nor starting with `/`.
    NoLeadingSlash,
    /// A `%` not followed by two hex digits (fragment form only).
    BadPercentEncoding,
    /// The percent-decoded bytes are not UTF-8 (fragment form only).
    NotUtf8,
    /// A `~` not followed by `0` or `1`.
    BadEscape,
}

impl fmt::Display for PointerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PointerError::NoLeadingSlash => "a JSON Pointer is empty or starts with '/'",
            PointerError::BadPercentEncoding => "a '%' is not followed by two hex digits",
            PointerError::NotUtf8 => "the percent-decoded pointer is not UTF-8",
            PointerError::BadEscape => "a '~' is not followed by '0' or '1'",
        })
    }
}

impl std::error::Error for PointerError {}

/// Appends `token` to `out` as one reference token: `~` as `~0`, `/` as `~1`.
pub fn push_escaped(out: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            other => out.push(other),
        }
    }
}

/// `token` as a reference token; borrowed when it holds neither `~` nor `/`.
pub fn escape(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        let mut out = String::with_capacity(token.len() + 2);
        push_escaped(&mut out, token);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(token)
    }
}

/// The pointer of `tokens` (unescaped keys or indices, in order from the root).
pub fn join<'t>(tokens: impl IntoIterator<Item = &'t str>) -> String {
    let mut out = String::new();
    for token in tokens {
        out.push('/');
        push_escaped(&mut out, token);
    }
    out
}

/// One reference token as written, unescaped in one pass: `~01` is `~1`, not `/`. Any other
/// `~` is refused.
pub fn unescape(token: &str) -> Result<Cow<'_, str>, PointerError> {
    if !token.contains('~') {
        return Ok(Cow::Borrowed(token));
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return Err(PointerError::BadEscape),
            }
        } else {
            out.push(c);
        }
    }
    Ok(Cow::Owned(out))
}

/// The reference tokens of `pointer`, unescaped: `""` is the whole document (no token),
/// `"/"` is the member named by the empty string.
pub fn parse(pointer: &str) -> Result<Vec<Cow<'_, str>>, PointerError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer.strip_prefix('/').ok_or(PointerError::NoLeadingSlash)?;
    rest.split('/').map(unescape).collect()
}

/// The reference tokens of `pointer` as written (still escaped), after checking that each
/// escape is one RFC 6901 has. For walking a pointer while copying its text.
pub fn raw_tokens(pointer: &str) -> Result<Vec<&str>, PointerError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer.strip_prefix('/').ok_or(PointerError::NoLeadingSlash)?;
    rest.split('/').map(|token| unescape(token).map(|_| token)).collect()
}

/// The pointer in a URI fragment (`#` already taken off), percent-decoded (RFC 6901 §6),
/// still in escaped form; checked to be a JSON Pointer. A fragment that does not start with
/// `/` after decoding (an anchor, `#foo`) is [`PointerError::NoLeadingSlash`].
pub fn fragment_pointer(fragment: &str) -> Result<String, PointerError> {
    let decoded = percent_decode(fragment)?;
    raw_tokens(&decoded)?;
    Ok(decoded.into_owned())
}

/// [`fragment_pointer`]'s reference tokens, unescaped.
pub fn fragment_tokens(fragment: &str) -> Result<Vec<String>, PointerError> {
    let decoded = percent_decode(fragment)?;
    Ok(parse(&decoded)?.into_iter().map(Cow::into_owned).collect())
}

/// `text` with each `%XX` replaced by the byte it stands for; the result must be UTF-8.
fn percent_decode(text: &str) -> Result<Cow<'_, str>, PointerError> {
    if !text.contains('%') {
        return Ok(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).and_then(|b| hex_value(*b));
            let lo = bytes.get(i + 2).and_then(|b| hex_value(*b));
            match (hi, lo) {
                (Some(hi), Some(lo)) => out.push(hi * 16 + lo),
                _ => return Err(PointerError::BadPercentEncoding),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map(Cow::Owned).map_err(|_| PointerError::NotUtf8)
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// An array index as RFC 6901 writes it: `0`, or decimal digits without a sign or a
/// leading zero (`-`, the position past the end, names no item).
pub fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.is_empty() && !token.starts_with('0') && token.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        token.parse().ok()
    } else {
        None
    }
}

/// How a keyword holds its subschemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// One schema.
    One,
    /// `items`: one schema, or (array `items` before 2020-12) a list of them.
    OneOrList,
    /// An object whose values are schemas.
    Map,
    /// An array of schemas.
    List,
    /// Legacy `dependencies`: each value a schema or an array of property names.
    Dependencies,
}

/// What a keyword that holds subschemas does with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subschemas {
    pub holds: Holds,
    /// Its subschemas apply to the instance itself, not to a member or an item of it
    /// (`allOf`, `not`, `if`, `dependentSchemas`, …). A reference loop through only such
    /// keywords makes no progress; the safety profile counts them as combinator branches.
    pub in_place: bool,
    /// Its subschemas decide validity. `contentSchema` holds a schema that is an annotation
    /// only (2020-12 Validation §8.5): it is walked for references, never applied.
    pub validates: bool,
}

const fn holds(holds: Holds, in_place: bool) -> Subschemas {
    Subschemas { holds, in_place, validates: true }
}

/// Writes the keyword table once and both its readers from it: the list, in order (what
/// the generator's loop check walks), and a `match` on the keyword (what the safety
/// profile asks of every keyword of every schema it lints, where a search of the list cost
/// a comparison per entry).
macro_rules! subschema_keywords {
    ($($keyword:literal => $subschemas:expr,)*) => {
        /// Every keyword of drafts 04 to 2020-12 whose value holds subschemas. The legacy
        /// ones (`definitions`, `dependencies`, `additionalItems`) are here too: a reader
        /// that translates them to 2020-12 never meets them afterwards, and one that does
        /// not (the safety profile) must still walk them.
        pub const SUBSCHEMA_KEYWORDS: &[(&str, Subschemas)] = &[$(($keyword, $subschemas)),*];

        /// What `keyword` does with subschemas; `None` when its value is not a schema
        /// position.
        pub fn subschemas(keyword: &str) -> Option<Subschemas> {
            match keyword {
                $($keyword => Some($subschemas),)*
                _ => None,
            }
        }
    };
}

subschema_keywords! {
    // Those applied to the instance itself first: the generator's loop check reports hops
    // in this order.
    "allOf" => holds(Holds::List, true),
    "anyOf" => holds(Holds::List, true),
    "oneOf" => holds(Holds::List, true),
    "not" => holds(Holds::One, true),
    "if" => holds(Holds::One, true),
    "then" => holds(Holds::One, true),
    "else" => holds(Holds::One, true),
    "dependentSchemas" => holds(Holds::Map, true),
    "dependencies" => holds(Holds::Dependencies, true),
    "properties" => holds(Holds::Map, false),
    "patternProperties" => holds(Holds::Map, false),
    "$defs" => holds(Holds::Map, false),
    "definitions" => holds(Holds::Map, false),
    "items" => holds(Holds::OneOrList, false),
    "prefixItems" => holds(Holds::List, false),
    "additionalItems" => holds(Holds::One, false),
    "additionalProperties" => holds(Holds::One, false),
    "unevaluatedProperties" => holds(Holds::One, false),
    "unevaluatedItems" => holds(Holds::One, false),
    "contains" => holds(Holds::One, false),
    "propertyNames" => holds(Holds::One, false),
    "contentSchema" => Subschemas { holds: Holds::One, in_place: false, validates: false },
}

/// [`subschemas`] of a keyword whose subschemas decide validity: what a compiler of checks
/// walks.
pub fn applicator(keyword: &str) -> Option<Subschemas> {
    subschemas(keyword).filter(|s| s.validates)
}

/// Keywords that are annotations only: they never change what validates.
pub const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "$schema",
    "$id",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "discriminator",
    "$vocabulary",
    "$anchor",
    "$dynamicAnchor",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_tilde_before_slash_and_joins() {
        assert_eq!(escape("a/b~c"), "a~1b~0c");
        assert!(matches!(escape("plain"), Cow::Borrowed("plain")));
        assert_eq!(join(["$defs", "a/b", "m~n"]), "/$defs/a~1b/m~0n");
        assert_eq!(join([]), "");
    }

    #[test]
    fn parses_in_one_pass() {
        assert_eq!(parse("").unwrap(), Vec::<Cow<str>>::new());
        assert_eq!(parse("/").unwrap(), vec![""]);
        assert_eq!(parse("/$defs/a~1b/c~0d").unwrap(), vec!["$defs", "a/b", "c~d"]);
        // "~01" is "~1" literally, not "/".
        assert_eq!(parse("/~01").unwrap(), vec!["~1"]);
        assert_eq!(parse("a/b"), Err(PointerError::NoLeadingSlash));
    }

    /// RFC 6901 §3: `escaped = "~" ( "0" / "1" )`. Anything else after `~` is refused, in
    /// every form a pointer is read in.
    #[test]
    fn refuses_every_other_escape() {
        for pointer in ["/a~2", "/a~", "/~x/b", "/ok/~~0", "/a~2b"] {
            assert_eq!(parse(pointer), Err(PointerError::BadEscape), "{pointer}");
            assert_eq!(raw_tokens(pointer), Err(PointerError::BadEscape), "{pointer}");
            assert_eq!(fragment_pointer(pointer), Err(PointerError::BadEscape), "{pointer}");
        }
        // Percent-encoded, the `~2` is still refused once decoded.
        assert_eq!(fragment_tokens("/a%7E2"), Err(PointerError::BadEscape));
    }

    #[test]
    fn fragments_are_percent_decoded_first() {
        assert_eq!(fragment_tokens("/a%25b%22").unwrap(), vec!["a%b\""]);
        assert_eq!(fragment_pointer("/a%7E1b").unwrap(), "/a~1b");
        assert_eq!(fragment_tokens("/a%2"), Err(PointerError::BadPercentEncoding));
        assert_eq!(fragment_tokens("/a%zz"), Err(PointerError::BadPercentEncoding));
        assert_eq!(fragment_tokens("/%ff"), Err(PointerError::NotUtf8));
        assert_eq!(fragment_pointer("anchor"), Err(PointerError::NoLeadingSlash));
    }

    #[test]
    fn array_indices_are_canonical() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("12"), Some(12));
        for token in ["01", "-", "+1", "", "1a", "-1"] {
            assert_eq!(array_index(token), None, "{token}");
        }
    }

    #[test]
    fn the_table_names_each_keyword_once() {
        for (i, (keyword, _)) in SUBSCHEMA_KEYWORDS.iter().enumerate() {
            assert!(!SUBSCHEMA_KEYWORDS[..i].iter().any(|(k, _)| k == keyword), "{keyword} twice");
            // A keyword that holds validating subschemas is not an annotation.
            assert_eq!(ANNOTATIONS.contains(keyword), applicator(keyword).is_none(), "{keyword}");
        }
    }
}
