//! The error every pass over one schema document reports: a JSON Pointer into the input
//! and what is wrong there.
//!
//! It has a file of its own so that the passes (the dialect's reading, normalization, the
//! loop check) all depend on it and none on another for it: it once lived in
//! `normalize.rs`, which `dialect.rs` then imported while `normalize.rs` imported
//! `dialect.rs`.

/// A schema node that could not be read, normalized or compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeError {
    /// JSON Pointer into the input document.
    pub pointer: String,
    pub message: String,
}
