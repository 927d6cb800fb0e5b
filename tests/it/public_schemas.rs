//! Public schemas nobody here wrote, through the schema compiler as a new user would put
//! them: the SchemaStore schemas that check-jsonschema vendors (github-workflows, gitlab-ci,
//! azure-pipelines, compose-spec, renovate, …), turbo's and tauri's, and biome's when
//! fetched with `--large`. Each either generates, or is refused for the construct listed in
//! `REFUSED`; every generated module is built in one crate, and its checks and types are
//! compared with the `jsonschema` crate on every definition's generated instances and on
//! the real documents check-jsonschema's own tests check (accept/reject agree; an accepted
//! value re-encodes to equal JSON).
//!
//! The schemas are never committed: `tests/public-schemas/fetch.sh DIR` fetches them,
//! pinned by sha256, and `CHECKFU_PUBLIC_SCHEMAS=DIR` points the test at them; `.ci/run`
//! does both. Without the variable when the tests are built, the test is listed as ignored.

use crate::support;

use std::path::{Path, PathBuf};

use checkfu_wire_codegen::rust::{format_file, schemas};
use checkfu_wire_codegen::schema::normalize::normalize;
use serde_json::Value;
use support::compile::{build, verdicts, Module};
use support::oracle::{bounded_cases, compare, judged, Tally};

/// Schemas the compiler must refuse, with words its diagnostic must hold: drone-ci's six
/// `$ref`s into a Kubernetes schema on the web (the compiler never fetches).
const REFUSED: &[(&str, &str)] = &[("drone-ci.json", "remote")];

/// Mutations per generated instance (the repository's own differential tests of ACP and
/// MCP allow 400), and calls of the instance generator per definition filled in fully
/// (`support::instances::FULL_WORK`): renovate's 132 definitions that hold the whole
/// configuration again (`"$ref": "#"`) made instances of megabytes, each copied once per
/// mutation, and the test took all 24 GB of this machine at the default bounds.
const BUDGET: usize = 100;
const WORK: usize = 2_000;

fn dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CHECKFU_PUBLIC_SCHEMAS").expect("CHECKFU_PUBLIC_SCHEMAS was set when the tests were built, and is not now"),
    )
}

fn read(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.map(|e| e.expect("a directory entry").path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    files.sort();
    files
}

/// A schema that generated: what its cases are made from once the crate is built.
struct Compiled {
    file: String,
    module: String,
    schema: Value,
    root_name: String,
    named: Vec<(String, String)>,
    documents: Vec<Value>,
}

#[test]
#[cfg_attr(
    not(checkfu_public_schemas),
    ignore = "CHECKFU_PUBLIC_SCHEMAS is not set: fetch with tests/public-schemas/fetch.sh DIR (see .ci/run)"
)]
fn public_schemas_compile_or_are_refused_and_agree_with_jsonschema() {
    let root = dir();
    let files = json_files(&root.join("schemas"));
    assert!(files.len() >= 28, "{} holds {} schemas; fetch.sh puts 28 there", root.display(), files.len());
    let mut modules = Vec::new();
    let mut compiled = Vec::new();
    let mut refused = Vec::new();
    for path in &files {
        let file = path.file_name().and_then(|f| f.to_str()).expect("a UTF-8 file name").to_string();
        let schema = read(path);
        let expected_refusal = REFUSED.iter().find(|(f, _)| *f == file).map(|(_, words)| *words);
        let generated = match (schemas::generate(&file, &schema), expected_refusal) {
            (Ok(generated), None) => generated,
            (Err(diagnostics), Some(words)) => {
                let messages: Vec<String> = diagnostics.iter().map(|d| d.message.clone()).collect();
                assert!(messages.iter().any(|m| m.contains(words)), "{file} is refused, but for no `{words}`:\n{}", messages.join("\n"));
                refused.push(format!("{file} ({} diagnostics)", messages.len()));
                continue;
            }
            (Ok(_), Some(words)) => panic!("{file} generated, but the compiler should refuse it (`{words}`)"),
            (Err(diagnostics), None) => {
                panic!("{file} must generate:\n{}", diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n"))
            }
        };
        let source = format_file("// generated for a test", generated.tokens).expect("formats");
        let (module, root_name) = schemas::names(&file);
        let named = normalize(&root_name, &schema).origins.iter().map(|(n, o)| (n.clone(), o.clone())).collect();
        let documents = json_files(&root.join("instances").join(file.trim_end_matches(".json"))).iter().map(|p| read(p)).collect();
        modules.push(Module { name: module.clone(), source });
        compiled.push(Compiled { file, module, schema, root_name, named, documents });
    }
    assert_eq!(refused.len(), REFUSED.len(), "every schema listed as refused is among those fetched");
    let binary = build("public_schemas", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    drop(modules);
    // One schema's cases at a time: all of them at once would not fit in memory.
    let mut total = Tally::default();
    let mut failures = Vec::new();
    for schema in &compiled {
        let documents = schema.documents.len();
        let mut cases = judged(&schema.schema, &schema.root_name, schema.documents.clone());
        let valid_documents = cases.iter().filter(|c| c.expected).count();
        cases.extend(bounded_cases(&schema.schema, &schema.named, BUDGET, WORK));
        let module_of_case = vec![schema.module.clone(); cases.len()];
        let verdicts = verdicts(&binary, &module_of_case, &cases);
        let (tally, disagreements) = compare(&cases, &verdicts);
        eprintln!(
            "{}: {} definitions, {documents} real documents ({valid_documents} valid), {} accepted, {} rejected, {} disagreeing",
            schema.file,
            schema.named.len(),
            tally.accepted,
            tally.rejected,
            disagreements.len()
        );
        failures.extend(disagreements.into_iter().take(5).map(|d| format!("{}: {d}", schema.file)));
        total.accepted += tally.accepted;
        total.rejected += tally.rejected;
    }
    eprintln!(
        "public schemas: {} built, refused: {}; {} accepted, {} rejected",
        compiled.len(),
        refused.join(", "),
        total.accepted,
        total.rejected
    );
    assert!(failures.is_empty(), "disagreements:\n{}", failures.join("\n"));
    assert!(total.accepted > 1000 && total.rejected > 1000, "{total:?}");
}
