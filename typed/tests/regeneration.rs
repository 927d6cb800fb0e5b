//! The Rust this crate compiled is the checked-in `typed/generated/` Rust, byte for byte,
//! with regeneration on or off (as `tests/regeneration.rs` holds the runtime's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, by its path relative to `dir`.
fn rust_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let entries = std::fs::read_dir(dir.join(&relative)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(&relative).display()));
        for entry in entries {
            let entry = entry.expect("directory entry");
            let name = relative.join(entry.file_name());
            let path = entry.path();
            if path.is_dir() {
                pending.push(name);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.insert(name, std::fs::read(&path).expect("read"));
            }
        }
    }
    files
}

#[test]
fn compiled_rust_is_the_checked_in_rust() {
    let checked_in = rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("generated"));
    let compiled = rust_files(&Path::new(env!("OUT_DIR")).join("generated"));
    // The index, the typed tables and one module per schema file at least.
    assert!(checked_in.len() >= 4, "typed/generated/ holds {} Rust files", checked_in.len());
    assert_eq!(compiled.keys().collect::<Vec<_>>(), checked_in.keys().collect::<Vec<_>>(), "the same files");
    let build = if cfg!(feature = "regenerate") { "a fresh generation" } else { "the copy build.rs made" };
    for (path, bytes) in &checked_in {
        assert!(compiled[path] == *bytes, "OUT_DIR/generated/{} ({build}) differs from typed/generated/{0}", path.display());
    }
}

#[test]
fn every_schema_has_its_whole_module() {
    use checkfu_wire_typed::schemas;
    // MCP is compiled by no runtime path; its typed module is here.
    assert!(schemas::mcp_2025_06_18::checks::DEFINITIONS.len() >= 100);
    assert!(schemas::acp_v1::checks::DEFINITIONS.len() >= 178);
    assert!(!checkfu_wire_typed::tables::VECTORS.is_empty());
}
