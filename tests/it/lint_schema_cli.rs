//! `checkfu-wire lint-schema` end to end: exit statuses and the JSON report.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .current_dir(crate::support::project::project_root())
        .args(args)
        .output()
        .expect("run");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn accepted_schemas_exit_zero() {
    let (code, _) = run(&["lint-schema", "schemas/checkfu-slots.schema.json", "safety/tests/corpus/accept/true.json"]);
    assert_eq!(code, 0);
}

#[test]
fn a_rejected_schema_exits_one_with_rule_and_pointer() {
    let (code, stdout) =
        run(&["lint-schema", "--format", "json", "schemas/checkfu-slots.schema.json", "safety/tests/corpus/reject/unique-items.json"]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    assert_eq!(report[0]["accepted"], true);
    assert_eq!(report[1]["accepted"], false);
    assert_eq!(report[1]["violations"][0]["rule"], "unique-items");
    assert_eq!(report[1]["violations"][0]["pointer"], "/properties/tags/uniqueItems");
}

#[test]
fn an_unreadable_file_exits_two() {
    let (code, _) = run(&["lint-schema", "does/not/exist.json"]);
    assert_eq!(code, 2);
}
