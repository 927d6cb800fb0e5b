//! The Rust this crate compiled is the checked-in `typed/generated/` Rust, byte for byte,
//! with regeneration on or off (as the unit test in `src/regeneration/` holds the runtime's).

#[path = "../../src/regeneration/rust_files.rs"]
mod rust_files;

use std::path::Path;

#[test]
fn compiled_rust_is_the_checked_in_rust() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    rust_files::assert_compiled_is_checked_in(&root.join("generated"), Path::new(env!("OUT_DIR")), "typed/generated/");
}

#[test]
fn every_schema_has_its_whole_module() {
    use checkfu_wire_typed::schemas;
    // MCP is compiled by no runtime path; its typed module is here.
    assert!(schemas::mcp_2025_06_18::checks::DEFINITIONS.len() >= 100);
    assert!(schemas::acp_v1::checks::DEFINITIONS.len() >= 178);
    assert!(!checkfu_wire_typed::tables::VECTORS.is_empty());
}
