//! The JSON-Schema-Test-Suite (draft 2020-12, required tests) through the schema
//! compiler: for each test group, either generation fails with a diagnostic naming the
//! construct, or the generated code builds and its decoder agrees with the suite's
//! `valid` flag on every test (and an accepted value re-encodes to equal JSON).
//!
//! The suite is not committed. Point `JSTS_DIR` at a checkout (or at the `json` folder of
//! the Python `jsonschema` source distribution, which carries it); `.ci/run` does. Without
//! the variable when the tests are built, the runner reports the test as ignored.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use checkfu_wire_codegen::rust::{format_file, schemas};
use serde_json::Value;
use support::compile::{build, verdicts, Module};
use support::oracle::{compare, Case};

fn suite_dir() -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os("JSTS_DIR")?);
    let nested = root.join("tests").join("draft2020-12");
    Some(if nested.is_dir() { nested } else { root })
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

/// Without `JSTS_DIR` when this was built (build.rs sets the cfg), the runner reports the
/// test as ignored, with the reason.
#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn json_schema_test_suite_draft2020_12() {
    let dir = suite_dir().expect("JSTS_DIR was set when the tests were built, and is not now");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).expect("suite directory").filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    assert!(!files.is_empty(), "no suite files in {}", dir.display());
    let mut modules = Vec::new();
    let mut cases = Vec::new();
    let mut case_modules = Vec::new();
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups = 0;
    for path in &files {
        let groups_of_file: Vec<Value> = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("suite JSON");
        for group in groups_of_file {
            groups += 1;
            let file = format!("g{groups}.json");
            let (module, root) = schemas::names(&file);
            match schemas::generate(&file, &group["schema"]) {
                Ok(generated) => {
                    modules.push(Module { name: module.clone(), source: format_file("// generated for a test", generated.tokens).expect("formats") });
                    for test in group["tests"].as_array().into_iter().flatten() {
                        cases.push(Case { def: root.clone(), instance: test["data"].clone(), expected: test["valid"].as_bool().unwrap_or(false) });
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
                    let _ = path;
                }
            }
        }
    }
    let binary = build("json_schema_suite", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let verdicts = verdicts(&binary, &case_modules, &cases);
    let (tally, disagreements) = compare(&cases, &verdicts);
    println!("JSON-Schema-Test-Suite draft 2020-12: {groups} groups, {} compiled, {} refused with a diagnostic", modules.len(), groups - modules.len());
    println!("diagnostics by construct (groups): {refused:?}");
    println!("tests: {} agreeing ({} valid, {} invalid), {} disagreeing", tally.accepted + tally.rejected, tally.accepted, tally.rejected, disagreements.len());
    assert!(disagreements.is_empty(), "{} disagreement(s):\n{}", disagreements.len(), disagreements.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
}

/// CI sets `CHECKFU_REQUIRE_JSTS`: there the suite must run, not be ignored; and wherever it
/// cannot run, the runner lists it as ignored.
#[test]
fn the_suite_test_is_ignored_exactly_where_it_cannot_run() {
    if std::env::var_os("CHECKFU_REQUIRE_JSTS").is_some() {
        assert!(cfg!(checkfu_jsts), "CHECKFU_REQUIRE_JSTS is set but JSTS_DIR was not when the tests were built");
    }
    let listed = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--list", "--ignored"])
        .output()
        .expect("list");
    let ignored = String::from_utf8_lossy(&listed.stdout).lines().any(|l| l == "json_schema_test_suite_draft2020_12: test");
    assert_eq!(ignored, !cfg!(checkfu_jsts));
}
