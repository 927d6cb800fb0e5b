//! The safety profile reads the decoder's own tree: [`Json`] is a
//! [`checkfu_wire_safety::Node`], so an author's schema in `_meta` is linted
//! where it lies.
//!
//! Before, the schema was rebuilt as a `serde_json::Value` (a hashed map and an
//! owned string per member) only to be linted and dropped, which cost more
//! than the lint itself on a typical `session/new`.

use checkfu_wire_safety::{Node, Object, View};

use super::Json;

impl<'a> Node for Json<'a> {
    type Object<'n>
        = &'n [(&'a str, Json<'a>)]
    where
        Self: 'n;

    fn view(&self) -> View<'_, Self> {
        match self {
            Json::Null => View::Null,
            Json::Bool(b) => View::Bool(*b),
            Json::Number(number) => View::Number(number.written_len()),
            Json::String(text) => View::String(text),
            Json::Array(items) => View::Array(items),
            Json::Object(members) => View::Object(*members),
        }
    }
}

/// Members are a slice in document order. A parsed tree has unique keys (a
/// repeated key replaced the earlier value in place), which is what makes
/// the first match of `get` the member that `members` yields.
impl<'n, 'a> Object<'n, Json<'a>> for &'n [(&'a str, Json<'a>)] {
    type Members = SliceMembers<'n, 'a>;

    fn members(self) -> SliceMembers<'n, 'a> {
        SliceMembers(self.iter())
    }

    fn get(self, key: &str) -> Option<&'n Json<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, value)| value)
    }

    fn len(self) -> usize {
        <[_]>::len(self)
    }
}

/// The members of a [`Json::Object`], as the linter iterates them.
pub struct SliceMembers<'n, 'a>(std::slice::Iter<'n, (&'a str, Json<'a>)>);

impl<'n, 'a> Iterator for SliceMembers<'n, 'a> {
    type Item = (&'n str, &'n Json<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(key, value)| (*key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for SliceMembers<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(key, value)| (*key, value))
    }
}

impl ExactSizeIterator for SliceMembers<'_, '_> {}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use bumpalo::Bump;
    use checkfu_wire_safety::{lint, lint_value, Verdict};
    use serde_json::Value;

    use super::*;

    /// Both verdicts on `text`, or `None` when neither parser takes it (and
    /// a failure when only one does: the trees would not hold the same
    /// document).
    fn verdicts(text: &str) -> Option<(Verdict, Verdict)> {
        let arena = Bump::new();
        let value = serde_json::from_str::<Value>(text);
        let json = Json::parse(text, &arena);
        assert_eq!(value.is_ok(), json.is_ok(), "the parsers disagree on {text:.200}");
        let (value, json) = (value.ok()?, json.ok()?);
        let verdicts = (lint_value(&value), lint(&json));
        // serde_json drops a `Value` recursively; the inline cases nest far
        // less than a test thread's stack allows.
        drop(value);
        Some(verdicts)
    }

    fn assert_same(label: &str, text: &str) -> bool {
        let Some((from_value, from_json)) = verdicts(text) else { return false };
        assert_eq!(from_json, from_value, "{label}");
        true
    }

    #[test]
    fn the_tree_and_the_value_get_the_same_verdict_on_the_corpus() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("safety/tests/corpus");
        let mut linted = 0;
        let mut rejected = 0;
        for kind in ["accept", "reject"] {
            let dir = corpus.join(kind);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
                .map(|entry| entry.expect("directory entry").path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect();
            files.sort();
            for path in files {
                let bytes = std::fs::read(&path).expect("readable corpus file");
                // `Json::parse` takes text; a file that is not UTF-8 is
                // refused before either tree exists.
                let Ok(text) = std::str::from_utf8(&bytes) else { continue };
                if assert_same(&path.display().to_string(), text) {
                    linted += 1;
                    rejected += usize::from(kind == "reject");
                }
            }
        }
        // The corpus holds dozens of parsable files of both kinds; a count
        // this low means the directory moved, not that all is well.
        assert!(linted >= 40 && rejected >= 30, "linted {linted} corpus files, {rejected} of them rejects");
    }

    #[test]
    fn the_tree_and_the_value_get_the_same_verdict_inline() {
        let nested = |levels: usize| format!("{}{{}}{}", r##"{"not": "##.repeat(levels), "}".repeat(levels));
        // `d{i}` uses `d{i-1}` twice, so inlining doubles at every step.
        let doubling: String = (1..20)
            .map(|i| format!(r##", "d{i}": {{"allOf": [{{"$ref": "#/$defs/d{p}"}}, {{"$ref": "#/$defs/d{p}"}}]}}"##, p = i - 1))
            .collect();
        let cases = [
            ("booleans", "true".to_owned()),
            ("empty", "{}".to_owned()),
            ("root array", "[1, {}]".to_owned()),
            (
                "every kind of trouble",
                r##"{
                    "properties": {
                        "a": {"type": "array", "uniqueItems": true},
                        "b": {"type": "string", "pattern": "^(a+)+$"},
                        "c": {"$ref": "https://example.com/c.json"},
                        "d": {"$dynamicRef": "#meta", "$recursiveAnchor": true},
                        "e": {"pattern": 3, "$ref": 4},
                        "f~/g": {"$ref": "#/properties/f~0~1g"},
                        "h": {"$ref": "#/enum/0"},
                        "i": {"$ref": "#/$defs/missing"},
                        "j": {"$ref": "#/$defs/a~2"},
                        "k": {"$ref": "#anchor"},
                        "l": {"$ref": "other.json#/x"},
                        "m": {"$id": "inner", "items": {"$ref": "#"}}
                    },
                    "patternProperties": {"^a+$": {}, "^[a-z]{1,4}$": true},
                    "enum": [{"$ref": "#/properties/a"}],
                    "dependencies": {"a": ["b"], "b": {"not": 1}},
                    "items": [{"prefix": true}, false],
                    "allOf": {},
                    "uniqueItems": true
                }"##
                .to_owned(),
            ),
            (
                "a reference DAG and a cycle",
                r##"{"$defs": {"leaf": {"type": "string"}, "mid": {"allOf": [{"$ref": "#/$defs/leaf"}, {"$ref": "#/%24defs/leaf"}]},
                    "a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                    "anyOf": [{"$ref": "#/$defs/mid"}, {"$ref": "#/anyOf/0"}, {"$ref": "#"}]}"##
                    .to_owned(),
            ),
            ("an expansion bomb", format!(r##"{{"$defs": {{"d0": {{"type": "string"}}{doubling}}}}}"##)),
            (
                "repeated keys and escapes",
                r##"{"properties": {"a": {"uniqueItems": true}, "a": {"pattern": "x*"}, "\u0070attern": {}},
                    "pat\u0074ern": "(", "pattern": "[a-z]{1,3}", "$ref": "#/properties/\u0061"}"##
                    .to_owned(),
            ),
            ("numbers", r##"{"minimum": -0.0, "maximum": 1e2, "multipleOf": 18446744073709551615, "const": [1.5e300, -7]}"##.to_owned()),
            ("too deep", nested(40)),
            ("deep, under the parser's limit", nested(120)),
            ("oversize", format!(r##"{{"enum": ["{}"]}}"##, "x".repeat(40_000))),
            ("escapes count towards size", format!(r##"{{"enum": ["{}"]}}"##, "\\u0001".repeat(6_000))),
        ];
        for (label, text) in &cases {
            assert!(assert_same(label, text), "{label}: not JSON");
        }
    }
}
