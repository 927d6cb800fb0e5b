//! The regex engine is behind the `patterns` feature, which a crate that only decodes
//! leaves off (no schema the runtime serves uses `pattern`). A schema that does use one,
//! compiled against a runtime without the feature, must fail its build and name the
//! feature, never compile a check that matches differently.

use crate::support;

use serde_json::json;
use support::compile::{build_against, generate};

#[test]
fn a_pattern_without_the_feature_fails_the_build_and_names_it() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}}
    });
    let generated = generate("pattern-guard.json", &schema).unwrap_or_else(|d| panic!("generates: {d:?}"));
    assert!(
        generated.module.source.contains("static STATIC_1: crate::exact::Pattern"),
        "the check holds its pattern in a static:\n{}",
        generated.module.source
    );
    let main = "fn main() { println!(\"{}\", TABLE.len()); }";
    let error = build_against("pattern_guard", &[generated.module], main, false, "default-features = false")
        .expect_err("a pattern check built without `patterns`");
    assert!(error.contains("turn on checkfu-wire's `patterns` feature"), "{error}");
}
