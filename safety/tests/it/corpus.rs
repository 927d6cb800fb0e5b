//! End-to-end runs over the corpus in `tests/corpus/`.
//!
//! A file under `reject/` is named after the one rule it must break:
//! `RULE-ID.json` or `RULE-ID--SHAPE.json`. The verdict must break exactly
//! that rule (possibly at several places). Every file under `accept/` must
//! be accepted. Both directories are also run through the CLI entry point.

use std::path::{Path, PathBuf};

use checkfu_wire_safety::{lint_bytes, run_cli, Rule};

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn expected_rule(path: &Path) -> Rule {
    let stem = path.file_stem().and_then(|s| s.to_str()).expect("UTF-8 file name");
    let id = stem.split("--").next().unwrap_or(stem);
    Rule::from_id(id).unwrap_or_else(|| panic!("{}: no rule with id {id:?}", path.display()))
}

#[test]
fn each_reject_file_breaks_exactly_its_rule() {
    let files = corpus("reject");
    assert!(files.len() >= 40, "the reject corpus has only {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).expect("readable corpus file");
        let verdict = lint_bytes(&bytes);
        let expected = expected_rule(path);
        if verdict.accepted || verdict.rules() != vec![expected] {
            failures.push(format!("{}: expected only {expected}, got {:#?}", path.display(), verdict.violations));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_rule_has_a_reject_file() {
    let covered: Vec<Rule> = corpus("reject").iter().map(|path| expected_rule(path)).collect();
    let missing: Vec<&str> = Rule::ALL.iter().filter(|rule| !covered.contains(rule)).map(|rule| rule.id()).collect();
    assert!(missing.is_empty(), "rules without a reject file: {missing:?}");
}

#[test]
fn each_accept_file_is_accepted() {
    let files = corpus("accept");
    assert!(files.len() >= 8, "the accept corpus has only {} files", files.len());
    for path in &files {
        let bytes = std::fs::read(path).expect("readable corpus file");
        let verdict = lint_bytes(&bytes);
        assert!(verdict.accepted, "{}: {:#?}", path.display(), verdict.violations);
        assert!(verdict.violations.is_empty());
    }
}

#[test]
fn cli_exit_codes_over_the_corpus() {
    let mut out = Vec::new();
    assert_eq!(run_cli(&corpus("accept"), false, &mut out), 0);
    let text = String::from_utf8(out).expect("UTF-8 report");
    assert!(text.ends_with(" rejected, 0 violation(s)\n"), "{text}");

    let mut out = Vec::new();
    assert_eq!(run_cli(&corpus("reject"), true, &mut out), 1);
    let report: serde_json::Value = serde_json::from_slice(&out).expect("JSON report");
    let entries = report.as_array().expect("an array of files");
    assert_eq!(entries.len(), corpus("reject").len());
    assert!(entries.iter().all(|entry| entry["accepted"] == false));
}
