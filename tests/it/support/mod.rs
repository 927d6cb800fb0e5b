//! Shared by several test binaries; each uses only part of it.
#![allow(dead_code)]

pub mod compile;
pub mod graphs;
pub mod instances;
pub mod oracle;
pub mod project;
