//! The Rust the library compiled is the checked-in `generated/` Rust, byte for byte, with
//! regeneration on or off.
//!
//! `src/` includes its tables from `OUT_DIR/generated/`. With the `regenerate` feature
//! build.rs writes a fresh generation there; without it, a copy of the checked-in files.
//! This test compares what is in `OUT_DIR` for the build it belongs to with `generated/`:
//! CI runs it both ways (with the workspace's features, which regenerate, and again with
//! `--no-default-features`), so both builds compiled the same bytes. It is a unit test
//! because only this crate's own targets see its build script's `OUT_DIR`.

mod rust_files;

use std::path::Path;

#[test]
fn compiled_rust_is_the_checked_in_rust() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    rust_files::assert_compiled_is_checked_in(&root.join("generated"), Path::new(env!("OUT_DIR")), "generated/");
}
