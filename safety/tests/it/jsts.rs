//! Runs every schema of the official JSON-Schema-Test-Suite (draft 2020-12)
//! through the linter when `JSTS_DIR` names a checkout (or an extracted
//! `tests/draft2020-12` folder); the suite is never committed here. Without
//! the variable when the tests are built, the runner reports the test as
//! ignored; where CI requires the suite (`CHECKFU_REQUIRE_JSTS`), it cannot be.
//!
//! `cargo run -p checkfu-wire-safety --example jsts_tally` prints the tally
//! that the README records.

use crate::support;

use std::path::PathBuf;

use checkfu_wire_safety::{lint_bytes, lint_value, Rule};
use serde_json::Value;

/// Without `JSTS_DIR` when this was built (the crate's build.rs sets the cfg), the runner
/// reports the test as ignored, with the reason.
#[test]
#[cfg_attr(not(checkfu_jsts), ignore = "JSTS_DIR is not set: point it at a JSON-Schema-Test-Suite checkout (see .ci/run)")]
fn official_suite_runs_without_panic() {
    let root = std::env::var_os("JSTS_DIR").expect("JSTS_DIR was set when the tests were built, and is not now");
    let dir = support::draft_dir(&PathBuf::from(root));
    let schemas = support::load(&dir);
    assert!(schemas.len() > 300, "only {} schemas under {}", schemas.len(), dir.display());
    for item in &schemas {
        let verdict = lint_value(&item.schema);
        let context = format!("{}: {}", item.file, item.description);
        assert_eq!(verdict.accepted, verdict.violations.is_empty(), "{context}");
        for violation in &verdict.violations {
            assert!(item.schema.pointer(&violation.pointer).is_some(), "{context}: {violation:?}");
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

/// CI sets `CHECKFU_REQUIRE_JSTS`: there the suite must run, not be ignored;
/// and wherever it cannot run, the runner lists it as ignored.
#[test]
fn the_suite_test_is_ignored_exactly_where_it_cannot_run() {
    if std::env::var_os("CHECKFU_REQUIRE_JSTS").is_some() && !cfg!(checkfu_jsts) {
        panic!("CHECKFU_REQUIRE_JSTS is set but JSTS_DIR was not when the tests were built");
    }
    let listed = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--list", "--ignored"])
        .output()
        .expect("list");
    let ignored = String::from_utf8_lossy(&listed.stdout).lines().any(|l| l == "jsts::official_suite_runs_without_panic: test");
    assert_eq!(ignored, !cfg!(checkfu_jsts));
}
