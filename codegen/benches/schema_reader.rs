//! What reading a schema file with positions costs: `schema::reader::read` (the document and
//! every node's span) against `serde_json::from_str` (the document alone, as schema files
//! were read before), on the largest files under `schemas/`, in the same run. Compare the
//! two rows of a file: the ratio is the price of line and column in diagnostics.

use std::path::PathBuf;

use checkfu_wire_codegen::schema::reader;
use serde_json::Value;

fn main() {
    divan::main();
}

const FILES: &[&str] = &["acp-v1.schema.json", "mcp-2025-06-18.schema.json", "acp-v1-extension-vectors.schema.json"];

fn text(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[divan::bench(args = FILES)]
fn serde_json_from_str(bencher: divan::Bencher, file: &str) {
    let text = text(file);
    bencher
        .counter(divan::counter::BytesCount::new(text.len()))
        .bench(|| serde_json::from_str::<Value>(divan::black_box(&text)).expect("JSON"));
}

#[divan::bench(args = FILES)]
fn reader_read(bencher: divan::Bencher, file: &str) {
    let text = text(file);
    bencher.counter(divan::counter::BytesCount::new(text.len())).bench(|| reader::read(divan::black_box(&text)).expect("JSON"));
}
