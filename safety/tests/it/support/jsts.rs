//! Reading the official JSON-Schema-Test-Suite (draft 2020-12) from a folder
//! named by `JSTS_DIR`, and tallying the linter's verdicts on its schemas.
//! Shared by `tests/jsts.rs` and `examples/jsts_tally.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use checkfu_wire_safety::{lint_value, Verdict};
use serde_json::Value;

/// One schema from the suite, with where it came from.
pub struct SuiteSchema {
    /// Path of the test file, relative to the draft folder.
    pub file: String,
    /// The test group's description.
    pub description: String,
    /// The schema under test.
    pub schema: Value,
}

/// The draft folder under `root`: `root` itself if it holds the test files,
/// else `root/tests/draft2020-12`.
pub fn draft_dir(root: &Path) -> PathBuf {
    let nested = root.join("tests").join("draft2020-12");
    if nested.is_dir() {
        nested
    } else {
        root.to_path_buf()
    }
}

/// Every schema of every `*.json` file below `dir`, in path order.
pub fn load(dir: &Path) -> Vec<SuiteSchema> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut schemas = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let groups: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = path.strip_prefix(dir).unwrap_or(&path).display().to_string();
        for group in groups {
            schemas.push(SuiteSchema {
                file: file.clone(),
                description: group["description"].as_str().unwrap_or("").to_owned(),
                schema: group["schema"].clone(),
            });
        }
    }
    schemas
}

/// Counts for one part of the suite.
#[derive(Default)]
pub struct Tally {
    pub schemas: usize,
    pub accepted: usize,
    /// Schemas breaking each rule (a schema breaking two rules counts twice).
    pub by_rule: BTreeMap<&'static str, usize>,
}

impl Tally {
    pub fn add(&mut self, verdict: &Verdict) {
        self.schemas += 1;
        if verdict.accepted {
            self.accepted += 1;
        }
        for rule in verdict.rules() {
            *self.by_rule.entry(rule.id()).or_default() += 1;
        }
    }

    pub fn rejected(&self) -> usize {
        self.schemas - self.accepted
    }
}

/// Lints every schema, tallying the required part and `optional/` apart.
pub fn tally(schemas: &[SuiteSchema]) -> (Tally, Tally) {
    let mut required = Tally::default();
    let mut optional = Tally::default();
    for item in schemas {
        let verdict = lint_value(&item.schema);
        if item.file.starts_with("optional") {
            optional.add(&verdict);
        } else {
            required.add(&verdict);
        }
    }
    (required, optional)
}

/// A Markdown table of both tallies.
pub fn render(required: &Tally, optional: &Tally) -> String {
    let mut rules: Vec<&str> = required.by_rule.keys().chain(optional.by_rule.keys()).copied().collect();
    rules.sort_unstable();
    rules.dedup();
    let mut out = String::new();
    out.push_str("| | required (`tests/draft2020-12/*.json`) | optional (`optional/**`) |\n");
    out.push_str("| --- | ---: | ---: |\n");
    out.push_str(&format!("| schemas | {} | {} |\n", required.schemas, optional.schemas));
    out.push_str(&format!("| accepted | {} | {} |\n", required.accepted, optional.accepted));
    out.push_str(&format!("| rejected | {} | {} |\n", required.rejected(), optional.rejected()));
    for rule in rules {
        let count = |tally: &Tally| tally.by_rule.get(rule).copied().unwrap_or(0);
        out.push_str(&format!("| … breaking `{rule}` | {} | {} |\n", count(required), count(optional)));
    }
    out
}
