//! The JSON-Schema-Test-Suite (drafts 04, 06, 07, 2019-09 and 2020-12, required tests, and
//! 2020-12's optional tests on patterns and big numbers) through the schema compiler: for each test group, either generation fails with a
//! diagnostic naming the construct, or the generated code builds and its decoder agrees
//! with the suite's `valid` flag on every test (and an accepted value re-encodes to equal
//! JSON). A group without `$schema` is read in its directory's draft.
//!
//! The suite is not committed. Point `JSTS_DIR` at a checkout (or at the `json` folder of
//! the Python `jsonschema` source distribution, which carries it); `.ci/run` does. Without
//! the variable when the tests are built, the runner reports the test as ignored.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use checkfu_wire_codegen::rust::{format_file, schemas};
use checkfu_wire_codegen::schema::dialect::Dialect;
use serde_json::Value;
use support::compile::{build, verdicts, Module};
use support::oracle::{compare, Case};

fn suite_dir(draft: &str) -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os("JSTS_DIR")?);
    Some(root.join("tests").join(draft))
}

/// The construct a diagnostic names: its keyword in backticks, or its first words.
fn construct(message: &str) -> String {
    let after = message.split_once(": ").map_or(message, |(_, m)| m);
    if let Some(rest) = after.strip_prefix("unsupported keyword `") {
        return rest.split('`').next().unwrap_or(rest).to_string();
    }
    if after.contains("remote references") {
        return "$ref (remote)".into();
    }
    if after.contains("points at nothing") {
        return "$ref (unresolvable)".into();
    }
    if after.contains("anchor") {
        return "$ref (anchor)".into();
    }
    after.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
}

/// Runs the suite's directory `draft` with `dialect` as the default (the tests calling it are
/// ignored, with the reason, unless `JSTS_DIR` was set when they were built).
fn run(draft: &str, dialect: Dialect) {
    let dir = suite_dir(draft).expect("JSTS_DIR was set when the tests were built, and is not now");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).expect("suite directory").filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    assert!(!files.is_empty(), "no suite files in {}", dir.display());
    run_files(draft, &files, dialect);
}

/// Runs the suite `files`, under the name `label`.
fn run_files(label: &str, files: &[PathBuf], dialect: Dialect) {
    let mut modules = Vec::new();
    let mut cases = Vec::new();
    let mut case_modules = Vec::new();
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups = 0;
    for path in files {
        let groups_of_file: Vec<Value> = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("suite JSON");
        for group in groups_of_file {
            groups += 1;
            let file = format!("g{groups}.json");
            let (module, root) = schemas::names(&file);
            match schemas::generate_in(&file, &group["schema"], &BTreeMap::new(), dialect) {
                Ok(generated) => {
                    modules.push(Module {
                        name: module.clone(),
                        source: format_file("// generated for a test", generated.tokens).expect("formats"),
                    });
                    for test in group["tests"].as_array().into_iter().flatten() {
                        cases.push(Case {
                            def: root.clone(),
                            instance: test["data"].clone(),
                            expected: test["valid"].as_bool().unwrap_or(false),
                        });
                        case_modules.push(module.clone());
                    }
                }
                Err(diagnostics) => {
                    assert!(!diagnostics.is_empty());
                    let mut named: Vec<String> = diagnostics.iter().map(|d| construct(&d.message)).collect();
                    named.sort();
                    named.dedup();
                    for construct in named {
                        *refused.entry(construct).or_default() += 1;
                    }
                }
            }
        }
    }
    let binary = build(&format!("json_schema_suite_{}", label.replace(['-', '/'], "_")), &modules)
        .unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let verdicts = verdicts(&binary, &case_modules, &cases);
    let (tally, disagreements) = compare(&cases, &verdicts);
    println!(
        "JSON-Schema-Test-Suite {label}: {groups} groups, {} compiled, {} refused with a diagnostic",
        modules.len(),
        groups - modules.len()
    );
    println!("diagnostics by construct (groups): {refused:?}");
    println!(
        "tests: {} agreeing ({} valid, {} invalid), {} disagreeing",
        tally.accepted + tally.rejected,
        tally.accepted,
        tally.rejected,
        disagreements.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft2020_12() {
    run("draft2020-12", Dialect::Draft2020);
}

#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft2019_09() {
    run("draft2019-09", Dialect::Draft2019);
}

#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft7() {
    run("draft7", Dialect::Draft7);
}

#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft6() {
    run("draft6", Dialect::Draft6);
}

#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft4() {
    run("draft4", Dialect::Draft4);
}

/// The optional tests on what the compiler claims beyond the required ones: patterns with
/// ECMA-262's meaning (translated exactly, or refused naming the construct), code points
/// beyond the BMP in patterns, numbers beyond `u64` and `f64` (exact numbers), and references
/// into unknown keywords and data (read as schemas, as JSON Pointer finds them). The other
/// optional files are about formats, anchors, embedded `$id`s, `$dynamicRef` and cross-draft
/// documents.
#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft2020_12_optional_patterns_numbers_and_references() {
    let dir = suite_dir("draft2020-12/optional").expect("JSTS_DIR was set when the tests were built, and is not now");
    let files: Vec<PathBuf> = ["ecmascript-regex", "non-bmp-regex", "bignum", "float-overflow", "refOfUnknownKeyword"]
        .iter()
        .map(|f| dir.join(format!("{f}.json")))
        .collect();
    run_files("draft2020-12/optional", &files, Dialect::Draft2020);
}
