//! Runs every schema of the official JSON-Schema-Test-Suite (draft 2020-12)
//! through the linter when `JSTS_DIR` names a checkout (or an extracted
//! `tests/draft2020-12` folder); the suite is never committed here. Without
//! the variable the test prints a note and checks nothing.
//!
//! `cargo run -p checkfu-wire-safety --example jsts_tally` prints the tally
//! that the README records.

#[path = "support/jsts.rs"]
mod support;

use std::path::PathBuf;

use checkfu_wire_safety::{lint_bytes, lint_value, Rule};
use serde_json::Value;

#[test]
fn official_suite_runs_without_panic() {
    let Some(root) = std::env::var_os("JSTS_DIR") else {
        println!("skipping: set JSTS_DIR to a JSON-Schema-Test-Suite checkout to run the suite");
        return;
    };
    let dir = support::draft_dir(&PathBuf::from(root));
    let schemas = support::load(&dir);
    assert!(
        schemas.len() > 300,
        "only {} schemas under {}",
        schemas.len(),
        dir.display()
    );
    for item in &schemas {
        let verdict = lint_value(&item.schema);
        let context = format!("{}: {}", item.file, item.description);
        assert_eq!(verdict.accepted, verdict.violations.is_empty(), "{context}");
        for violation in &verdict.violations {
            assert!(
                item.schema.pointer(&violation.pointer).is_some(),
                "{context}: {violation:?}"
            );
        }
        // The bytes path agrees with the value path on the same document.
        let bytes = serde_json::to_vec(&item.schema).expect("serializes");
        assert_eq!(lint_bytes(&bytes), verdict, "{context}");
        // Spot checks that tie verdicts to the suite's content.
        if item.schema.is_boolean() {
            assert!(verdict.accepted, "{context}");
        }
        if item.schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            assert!(verdict.rules().contains(&Rule::UniqueItems), "{context}");
        }
        if item.schema.get("$dynamicRef").is_some() {
            assert!(verdict.rules().contains(&Rule::DynamicRef), "{context}");
        }
    }
    let (required, optional) = support::tally(&schemas);
    println!("{}", support::render(&required, &optional));
}
