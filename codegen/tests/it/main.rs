//! The generator's integration tests, one binary (`cargo test -p checkfu-wire-codegen --test
//! it`): each module was a test binary of its own.

mod common;

mod catalog_holes;
mod catalog_mutations;
mod catalog_schema;
mod failure_classes;
mod method_tables;
mod oneshot_lane;
mod reader_differential;
mod requirements;
mod revisions;
mod runtime_checks;
mod schema_compiler;
mod schema_positions;
