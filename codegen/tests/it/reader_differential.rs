//! The schema reader against serde_json, the parser it stands in for: on every text, both
//! accept or both refuse, and when both accept their documents are equal, to the text of
//! each number and the order of each object's keys. Where the reader says a node is, the
//! text there is that node: serde_json reads the span back to the same value.
//!
//! The texts: every JSON file of the repository (each line of a `.jsonl` file is a text),
//! the JSON Schema Test Suite when `JSTS_DIR` names it, hand-written edge cases, and every
//! small edit (a character removed, doubled or inserted) of the short ones.

// Comparing two documents' serializations is the point: it holds each number's text and
// each object's key order, which `==` on the values does not.
#![allow(clippy::cmp_owned)]

use std::path::{Path, PathBuf};

use checkfu_wire_codegen::schema::reader::{read, Spans};
use serde_json::Value;

/// Whether the reader and serde_json agree on `text`: `Ok(accepted)` or what differs.
fn agree(text: &str) -> Result<bool, String> {
    match (read(text), serde_json::from_str::<Value>(text)) {
        (Ok((ours, spans)), Ok(theirs)) => {
            if ours != theirs || ours.to_string() != theirs.to_string() {
                return Err(format!("documents differ:\n  reader:     {ours}\n  serde_json: {theirs}"));
            }
            spans_hold(text, &ours, &spans, &mut String::new())?;
            Ok(true)
        }
        (Err(_), Err(_)) => Ok(false),
        (Ok((ours, _)), Err(e)) => Err(format!("the reader accepts ({ours}) what serde_json refuses ({e})")),
        (Err(e), Ok(_)) => Err(format!("the reader refuses ({e:?}) what serde_json accepts")),
    }
}

/// Every node's span reads back as the node, and every node is found at its own pointer.
fn spans_hold(text: &str, document: &Value, spans: &Spans, pointer: &mut String) -> Result<(), String> {
    let location = spans.locate(document, pointer);
    let here = &text[location.span.clone()];
    if !location.exact {
        // Only an object serde_json reads as a number or as raw JSON has no members.
        return if here.contains("$serde_json::private::") { Ok(()) } else { Err(format!("`{pointer}` not found exactly")) };
    }
    let node = document.pointer(pointer).ok_or_else(|| format!("`{pointer}` is not in the document"))?;
    let back: Value = serde_json::from_str(here).map_err(|e| format!("`{pointer}` spans {here:?}, not JSON: {e}"))?;
    if back.to_string() != node.to_string() {
        return Err(format!("`{pointer}` spans {here:?}, which is not {node}"));
    }
    let len = pointer.len();
    let children: Vec<String> = match node {
        Value::Array(items) => (0..items.len()).map(|i| i.to_string()).collect(),
        Value::Object(map) => map.keys().map(|k| checkfu_wire_vocab::schema_syntax::escape(k).into_owned()).collect(),
        _ => Vec::new(),
    };
    for child in children {
        pointer.push('/');
        pointer.push_str(&child);
        spans_hold(text, document, spans, pointer)?;
        pointer.truncate(len);
    }
    Ok(())
}

/// The files under `dir` whose names end in `.json` or `.jsonl`, skipping build output,
/// version control and other hidden directories.
fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                json_files(&path, out);
            }
        } else if name.ends_with(".json") || name.ends_with(".jsonl") {
            out.push(path);
        }
    }
}

/// Runs `agree` on every text of every file under `root`: (texts, accepted).
fn agree_on_files(root: &Path) -> (usize, usize) {
    let mut files = Vec::new();
    json_files(root, &mut files);
    let (mut texts, mut accepted) = (0, 0);
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let documents: Vec<&str> = if path.extension().is_some_and(|e| e == "jsonl") {
            text.lines().filter(|l| !l.trim().is_empty()).collect()
        } else {
            vec![&text]
        };
        for document in documents {
            texts += 1;
            match agree(document) {
                Ok(true) => accepted += 1,
                Ok(false) => {}
                Err(why) => panic!("{}: {why}", path.display()),
            }
        }
    }
    (texts, accepted)
}

#[test]
fn the_reader_reads_every_json_file_of_the_repository_as_serde_json_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (texts, accepted) = agree_on_files(&root);
    // The schemas alone are six files; the golden vectors, corpora and traffic add hundreds.
    assert!(texts > 300 && accepted > 300, "{texts} texts, {accepted} accepted");
    eprintln!("repository: {texts} texts, {accepted} accepted by both");
}

#[test]
fn the_reader_reads_the_json_schema_test_suite_as_serde_json_does() {
    let Some(dir) = std::env::var_os("JSTS_DIR") else {
        eprintln!("JSTS_DIR is not set: the suite's files are not compared");
        return;
    };
    let (texts, accepted) = agree_on_files(Path::new(&dir));
    assert!(texts > 100, "{texts} texts under {dir:?}");
    eprintln!("suite: {texts} texts, {accepted} accepted by both");
}

/// Texts both must accept: escapes, surrogate pairs, numbers whose text serde_json keeps
/// or rewrites, repeated keys, and serde_json's private keys.
const VALID: &[&str] = &[
    r#"["\ud83d\ude00", "\u00e9\/\b\f\n\r\t\"\\", "\u0000", "é", "\u007f"]"#,
    "[1E5, 1e-5, -0, -0.0, 0.1e+00, 12345678901234567890123, -9223372036854775809, 18446744073709551616, 1.0]",
    r#"{"": {"": []}, "a\u0000b": 1}"#,
    " \t\r\n{} \n",
    "[\"\u{7f}\u{2028}\"]",
    r#"{"a": 1, "a": {"b": 2}, "c": 3, "a": [4]}"#,
    r#"{"x": {"$serde_json::private::Number": "1e5"}}"#,
    r#"{"b": 1, "$serde_json::private::Number": "1"}"#,
    r#"{"$serde_json::private::Numbe\u0072": "2"}"#,
    r#"{"$serde_json::private::RawValue": "{\"a\": [1, 2.50]}"}"#,
    "true",
    "-12.5e-7",
    r#""only a string""#,
    r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"items": [{"type": "string"}, false]}}}"##,
];

/// Texts both must refuse: what JSON5 or JSON with comments allows, numbers JSON does not
/// have, bad escapes and lone surrogates, raw control characters, other whitespace, and
/// misuse of serde_json's private keys.
const INVALID: &[&str] = &[
    "",
    " ",
    "[1,]",
    r#"{"a": 1,}"#,
    "// c\n{}",
    "/* c */ {}",
    "{a: 1}",
    "{'a': 1}",
    "['a']",
    "[01]",
    "[-01]",
    "[1.]",
    "[.5]",
    "[+1]",
    "[0x10]",
    "[1e]",
    "[1e+]",
    "[-]",
    "[NaN]",
    "[Infinity]",
    "[-Infinity]",
    r#"["\ud800"]"#,
    r#"["\udc00"]"#,
    r#"["\ud800\u0041"]"#,
    r#"["\ud800\\"]"#,
    r#"["\x41"]"#,
    r#"["\u12"]"#,
    r#"["\u12G4"]"#,
    r#"["\'"]"#,
    "[\"a\tb\"]",
    "[\"a\nb\"]",
    "[\"\u{0}\"]",
    "[\"\u{1f}\"]",
    "\u{feff}{}",
    "\u{a0}{}",
    "{}\u{a0}",
    "[1]\u{2028}",
    "[\u{3000}1]",
    "[\u{b}1]",
    "[\u{c}1]",
    "[1 2]",
    r#"{"a" 1}"#,
    r#"{"a":}"#,
    r#"{"a"}"#,
    r#"{,}"#,
    "[,]",
    "[,1]",
    "[tru]",
    "[truee]",
    "[nul]",
    "[True]",
    "{}{}",
    "[",
    "]",
    r#"{"a":1"#,
    r#""abc"#,
    r#"["\"]"#,
    "[\"\\",
    r#"{"$serde_json::private::RawValue": "[1,"}"#,
    r#"{"$serde_json::private::RawValue": 5}"#,
    "1 2",
    "--1",
    "-",
    "1e5.0",
    "0.0.0",
];

#[test]
fn hand_written_edge_cases_are_accepted_and_refused_alike() {
    for text in VALID {
        assert_eq!(agree(text), Ok(true), "{text:?}");
    }
    for text in INVALID {
        assert_eq!(agree(text), Ok(false), "{text:?}");
    }
    // Both read these as serde_json's `arbitrary_precision` says (the root crate's
    // `exact-numbers` turns it on; the generator alone does not): a number past an `f64`'s
    // reach is held, and an object whose first key is the number token must hold one number.
    // Without it the number is out of range and the object is an object.
    let texts_kept =
        serde_json::from_str::<Value>("18446744073709551616.5").map(|n| n.to_string()).ok().as_deref() == Some("18446744073709551616.5");
    assert_eq!(agree("[1.5e400]"), Ok(texts_kept));
    for text in [
        r#"{"$serde_json::private::Number": 1}"#,
        r#"{"$serde_json::private::Number": "x"}"#,
        r#"{"$serde_json::private::Number": "1", "b": 2}"#,
    ] {
        assert_eq!(agree(text), Ok(!texts_kept), "{text:?}");
    }
}

#[test]
fn nesting_stops_where_serde_json_stops() {
    for (open, close) in [("[", "]"), (r#"{"a":"#, "}"), (r#"[{"a":"#, "}]")] {
        for depth in [126, 127, 128, 129] {
            let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            let accepted = agree(&text).unwrap_or_else(|why| panic!("{open} × {depth}: {why}"));
            // An array and an object are one level each; the pair is two.
            let levels = depth * if open.len() == 6 { 2 } else { 1 };
            assert_eq!(accepted, levels <= 127, "{open} × {depth}");
        }
    }
}

/// Characters whose insertion tends to move a text across JSON's edges.
const INSERTS: &[char] =
    &[',', '}', ']', '{', '[', '"', '\\', ':', '0', '1', '-', '+', '.', 'e', 'u', ' ', '\n', '\u{1}', '/', '\u{a0}', 't', 'n'];

#[test]
fn every_small_edit_of_the_edge_cases_is_accepted_and_refused_alike() {
    let (mut texts, mut accepted) = (0, 0);
    let seeds = VALID.iter().chain(INVALID).filter(|t| t.chars().count() <= 120);
    for seed in seeds {
        let chars: Vec<char> = seed.chars().collect();
        let mut edits = Vec::new();
        for at in 0..=chars.len() {
            if at < chars.len() {
                edits.push([&chars[..at], &chars[at + 1..]].concat());
                edits.push([&chars[..=at], &chars[at..]].concat());
            }
            for c in INSERTS {
                edits.push([&chars[..at], &[*c], &chars[at..]].concat());
            }
        }
        for edit in edits {
            let text: String = edit.into_iter().collect();
            texts += 1;
            match agree(&text) {
                Ok(true) => accepted += 1,
                Ok(false) => {}
                Err(why) => panic!("{text:?} (an edit of {seed:?}): {why}"),
            }
        }
    }
    assert!(accepted > 1000, "{accepted} of {texts} edits accepted: the edits do not reach valid texts");
    eprintln!("edits: {texts} texts, {accepted} accepted by both");
}
