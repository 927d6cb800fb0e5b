//! The generator's full pipeline in-process (load, validate, render every output), against a
//! baseline measured in the same run: reading the same input files and parsing the catalog
//! into its model, with no validation and no rendering.

use std::path::{Path, PathBuf};

use checkfu_wire_codegen::diagnostic::FileId;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    divan::main();
}

/// Baseline: the I/O and TOML/JSON parsing every generation must do at least.
#[divan::bench]
fn read_and_parse_inputs() -> usize {
    let root = root();
    let text = std::fs::read_to_string(root.join(checkfu_wire_codegen::CATALOG_FILE)).expect("catalog");
    let catalog = checkfu_wire_codegen::catalog::parse(&text, FileId(0)).expect("parses");
    let mut n = catalog.harnesses.len();
    for entry in std::fs::read_dir(root.join("schemas")).expect("schemas").flatten() {
        if entry.path().extension().is_none_or(|x| x != "json") {
            continue;
        }
        let bytes = std::fs::read(entry.path()).expect("schema");
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        n += value.as_object().map_or(0, |o| o.len());
    }
    for entry in std::fs::read_dir(root.join("templates")).expect("templates").flatten() {
        n += std::fs::read(entry.path()).expect("template").len();
    }
    n
}

/// Everything `checkfu-wire generate` does except writing.
#[divan::bench]
fn full_pipeline() -> usize {
    let outputs = checkfu_wire_codegen::generate(Path::new(&root())).expect("generates").outputs;
    outputs.iter().map(|o| o.contents.len()).sum()
}

/// The schema compiler alone, per input schema: normalize, generate checks and types, and
/// format the module file.
#[divan::bench(args = ["acp-v1.schema.json", "acp-v1-extension-vectors.schema.json", "checkfu-slots.schema.json", "goose-acp-extensions.schema.json", "khy-os-acp-message.schema.json"])]
fn schema_compiler(bencher: divan::Bencher, file: &str) {
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(root().join("schemas").join(file)).expect("schema")).expect("json");
    bencher.bench(|| {
        let module = checkfu_wire_codegen::rust::schemas::generate(file, &raw).expect("generates");
        checkfu_wire_codegen::rust::format_file("//", module.tokens).map(|text| text.len()).unwrap_or(0)
    });
}
