//! The reader of a schema file's text: one pass that gives both the document, as the
//! `serde_json::Value` that `serde_json::from_str` gives, and where in the text each of its
//! nodes is, so a diagnostic about a JSON Pointer can show `file:line:column`.
//!
//! Why a reader of our own. serde_json does not tell a visitor where it is, so positions
//! cannot come out of its parse; a second scanner over text serde_json already accepted
//! would read every file twice. The maintained span-keeping parsers read a larger
//! language: `jsonc-parser`'s scanner (as its source reads; it was not built here) with
//! comments, trailing commas and loose names turned off still skips any Unicode whitespace, takes raw control characters in strings, refuses
//! a surrogate pair written as two escapes and refuses `1e5` without a sign, and it has
//! no nesting limit. A schema it took and serde_json did not would compile here and
//! fail in every other tool.
//!
//! So the structure (brackets, commas, colons, whitespace, nesting depth) is read here,
//! and every leaf whose meaning is subtle is handed to serde_json itself: a number's text
//! to `Number::from_str` (the very call serde_json's own `Value` makes, which keeps the
//! text under `arbitrary_precision`), a string with an escape to `from_str::<String>`. A
//! string without escapes is its own text. The rules copied from serde_json are few and
//! stated where they are used: the four whitespace bytes, no control byte in a string,
//! 127 levels of nesting, the last of duplicate keys winning in the first one's place,
//! and the two private keys under which serde_json reads an object as a number or raw
//! JSON. `codegen/tests/it/reader_differential.rs` holds the reader to serde_json on every JSON
//! file of the repository, the JSON Schema Test Suite when it is present, hand-written
//! edge cases and a few thousand mutations of them.

use std::ops::Range;
use std::str::FromStr;

use checkfu_wire_vocab::decimal::{json_number_len, Decimal};
use checkfu_wire_vocab::schema_syntax;
use serde_json::{Map, Number, Value};

/// Where each node of one document is: a tree shaped like the document, each node with
/// the byte range of its text (from its first byte to its last, without the whitespace
/// around it) and, for an array or an object, its children in the document's order.
#[derive(Clone, Debug)]
pub struct Spans {
    root: Node,
}

#[derive(Clone, Debug)]
struct Node {
    start: usize,
    end: usize,
    /// An array's items, or an object's members in its map's order. Empty for a scalar and
    /// for an object serde_json reads as a number or raw JSON (it has no members).
    children: Vec<Node>,
}

/// Text that is not JSON: where the reader stopped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub offset: usize,
    pub message: String,
}

/// The node a pointer names, or its nearest enclosing node that the text has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The node's text.
    pub span: Range<usize>,
    /// The pointer of the node found: the whole pointer, or the longest prefix of it that
    /// names a node of the text.
    pub found: String,
    /// Whether `found` is the whole pointer.
    pub exact: bool,
}

/// serde_json's nesting limit: `from_str` refuses the 128th level of arrays and objects.
const DEPTH: u8 = 128;

/// Keys under which serde_json (with `arbitrary_precision` and `raw_value`) reads an object
/// whose first key this is as something else: a number, or the JSON inside a string.
const PRIVATE_KEYS: &[&str] = &["$serde_json::private::Number", "$serde_json::private::RawValue"];

/// Reads `text` as one JSON document, with the position of every node.
pub fn read(text: &str) -> Result<(Value, Spans), ReadError> {
    let mut reader = Reader { text, bytes: text.as_bytes(), at: 0, depth: DEPTH };
    reader.whitespace();
    let (value, root) = reader.value()?;
    reader.whitespace();
    if reader.at < reader.bytes.len() {
        return Err(reader.error("trailing characters"));
    }
    Ok((value, Spans { root }))
}

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    /// Levels of nesting left before serde_json's limit.
    depth: u8,
}

impl<'t> Reader<'t> {
    fn error(&self, message: impl Into<String>) -> ReadError {
        ReadError { offset: self.at, message: message.into() }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// JSON's whitespace, the only whitespace serde_json skips: no other Unicode space.
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), ReadError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected {what}")))
        }
    }

    fn value(&mut self) -> Result<(Value, Node), ReadError> {
        let start = self.at;
        let (value, children) = match self.peek() {
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(b'"') => (Value::String(self.string()?), Vec::new()),
            Some(b'-' | b'0'..=b'9') => (Value::Number(self.number()?), Vec::new()),
            Some(b't') => (self.literal("true", Value::Bool(true))?, Vec::new()),
            Some(b'f') => (self.literal("false", Value::Bool(false))?, Vec::new()),
            Some(b'n') => (self.literal("null", Value::Null)?, Vec::new()),
            Some(_) => return Err(self.error("expected value")),
            None => return Err(self.error("EOF while parsing a value")),
        };
        Ok((value, Node { start, end: self.at, children }))
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, ReadError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error(format!("expected `{word}`")))
        }
    }

    /// Enters an array or an object, as serde_json counts depth: on its opening bracket.
    fn enter(&mut self) -> Result<(), ReadError> {
        self.depth -= 1;
        if self.depth == 0 {
            return Err(self.error("recursion limit exceeded"));
        }
        self.at += 1;
        self.whitespace();
        Ok(())
    }

    fn leave(&mut self) {
        self.depth += 1;
        self.at += 1;
    }

    /// After an item or a member: whether a comma says another follows, or `close` ends
    /// the array or object. A comma before `close` is refused where the next item is read.
    fn another(&mut self, close: u8) -> Result<bool, ReadError> {
        self.whitespace();
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                self.whitespace();
                Ok(true)
            }
            Some(byte) if byte == close => Ok(false),
            _ => Err(self.error(format!("expected `,` or `{}`", close as char))),
        }
    }

    fn array(&mut self) -> Result<(Value, Vec<Node>), ReadError> {
        self.enter()?;
        let mut items = Vec::new();
        let mut nodes = Vec::new();
        if self.peek() != Some(b']') {
            loop {
                let (item, node) = self.value()?;
                items.push(item);
                nodes.push(node);
                if !self.another(b']')? {
                    break;
                }
            }
        }
        self.leave();
        Ok((Value::Array(items), nodes))
    }

    fn object(&mut self) -> Result<(Value, Vec<Node>), ReadError> {
        let start = self.at;
        self.enter()?;
        let mut members = Map::new();
        let mut nodes: Vec<Node> = Vec::new();
        let mut private = false;
        if self.peek() != Some(b'}') {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(self.error("key must be a string"));
                }
                let key = self.string()?;
                if nodes.is_empty() && PRIVATE_KEYS.contains(&key.as_str()) {
                    private = true;
                }
                self.whitespace();
                self.expect(b':', "`:`")?;
                self.whitespace();
                let (member, node) = self.value()?;
                // serde_json's `Value` inserts each member into its map: a repeated key
                // keeps the place of its first occurrence and takes the last value. The
                // place is looked for only then, so a map without repeats pays one lookup.
                if members.contains_key(&key) {
                    if let Some(place) = members.keys().position(|k| *k == key) {
                        nodes[place] = node;
                    }
                } else {
                    nodes.push(node);
                }
                members.insert(key, member);
                if !self.another(b'}')? {
                    break;
                }
            }
        }
        self.leave();
        if private {
            // What serde_json makes of such an object is its business: ask it, on the
            // object's text alone (the object is a leaf to serde_json, so its depth
            // cannot matter).
            let value = serde_json::from_str::<Value>(&self.text[start..self.at])
                .map_err(|e| ReadError { offset: start, message: e.to_string() })?;
            return Ok((value, Vec::new()));
        }
        Ok((Value::Object(members), nodes))
    }

    /// A string, from its opening quote; the reader is left after its closing one.
    fn string(&mut self) -> Result<String, ReadError> {
        let start = self.at;
        self.at += 1;
        let mut escaped = false;
        loop {
            match self.peek() {
                Some(b'"') => break,
                Some(b'\\') => {
                    // The byte after a backslash never ends the string; what the escape
                    // means, and whether it is one, is serde_json's to say below.
                    escaped = true;
                    self.at += 2;
                }
                // serde_json refuses U+0000 to U+001F unescaped in a string.
                Some(0x00..=0x1f) => return Err(self.error("control character in a string")),
                Some(_) => self.at += 1,
                None => return Err(self.error("EOF while parsing a string")),
            }
        }
        self.at += 1;
        if !escaped {
            return Ok(self.text[start + 1..self.at - 1].to_string());
        }
        match self.text.get(start..self.at) {
            Some(quoted) => serde_json::from_str::<String>(quoted).map_err(|e| ReadError { offset: start, message: e.to_string() }),
            // Not reached: both ends are at a quote, which is one byte. Said as an
            // error rather than assumed, since the text is input.
            None => Err(ReadError { offset: start, message: "a string off a character boundary".into() }),
        }
    }

    /// A number, as JSON's grammar writes one (`checkfu-wire-vocab`'s `json_number_len`,
    /// which the runtime's decoder reads numbers by too), whose value is what serde_json's
    /// `Value` makes of that text (it parses it with `Number::from_str`).
    fn number(&mut self) -> Result<Number, ReadError> {
        let start = self.at;
        let len = json_number_len(&self.bytes[start..]).ok_or_else(|| self.error("invalid number"))?;
        self.at += len;
        Number::from_str(&self.text[start..self.at]).map_err(|e| ReadError { offset: start, message: e.to_string() })
    }
}

impl Spans {
    /// The span of the node `pointer` names in `document` (the value [`read`] gave with
    /// these spans). A pointer the text does not have (one into a normalized document,
    /// where a draft's `definitions` became `$defs`, say) finds its nearest enclosing node
    /// that the text has; the root, when nothing else.
    pub fn locate(&self, document: &Value, pointer: &str) -> Location {
        let mut node = &self.root;
        let mut value = document;
        let mut found = String::new();
        // A text that is not a pointer names nothing of the document: the root, not exact.
        let tokens = schema_syntax::raw_tokens(pointer).ok();
        let mut exact = tokens.is_some();
        for raw in tokens.into_iter().flatten() {
            let token = schema_syntax::unescape(raw).unwrap_or_default();
            let step = match value {
                Value::Object(map) => map.iter().position(|(key, _)| *key == token).map(|i| (i, &map[token.as_ref()])),
                Value::Array(items) => schema_syntax::array_index(&token).and_then(|i| items.get(i).map(|item| (i, item))),
                _ => None,
            };
            let Some((child, next)) = step.and_then(|(i, next)| node.children.get(i).map(|child| (child, next))) else {
                exact = false;
                break;
            };
            node = child;
            value = next;
            found.push('/');
            found.push_str(raw);
        }
        Location { span: node.start..node.end, found, exact }
    }
}

impl Spans {
    /// The text of every number of `document` (the value [`read`] gave with these spans)
    /// whose value there is not the value its text writes.
    ///
    /// With serde_json's `arbitrary_precision` (the root crate's `exact-numbers` feature
    /// turns it on) a number keeps its text, and this is empty. Without it a number is an
    /// `i64`, a `u64` or the `f64` nearest its text, and the generator compiles a bound, a
    /// `const` or a `multipleOf` from that: `18446744073709551616` would become
    /// `18446744073709552000`. The generator does not force the feature on (it would then
    /// be on in every build that compiles the generator, the runtime's tests without
    /// `exact-numbers` among them), so it refuses such a literal instead of compiling a
    /// value the schema did not write.
    pub fn inexact_numbers(&self, document: &Value, text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        inexact(&self.root, document, text, &mut out);
        out
    }
}

fn inexact(node: &Node, value: &Value, text: &str, out: &mut Vec<Range<usize>>) {
    match value {
        Value::Array(items) => items.iter().zip(&node.children).for_each(|(item, child)| inexact(child, item, text, out)),
        Value::Object(members) => members.values().zip(&node.children).for_each(|(member, child)| inexact(child, member, text, out)),
        Value::Number(n) => {
            let written = &text[node.start..node.end];
            // An object serde_json reads as a number has no number's text to compare.
            if written.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
                let held = n.to_string();
                if Decimal::parse(written) != Decimal::parse(&held) {
                    out.push(node.start..node.end);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
