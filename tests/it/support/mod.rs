//! Shared by several test binaries; each uses only part of it.
#![allow(dead_code)]

pub mod compile;
pub mod graphs;
#[cfg(feature = "probe")]
pub mod image;
pub mod instances;
pub mod oracle;
pub mod project;
